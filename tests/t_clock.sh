#!/bin/bash
# Clock steps (issue 22): the daemon runs under libfaketime, whose offset
# the test changes while it runs (FAKETIME_TIMESTAMP_FILE, re-read on every
# clock read; the monotonic clock left real). A key with rpm 10 that used
# one request is still served after the wall clock steps back an hour (it
# used to get 429 retry-after 61 for the whole hour), a step forward frees
# nothing (the remaining count stays what it was), and a restart after the
# step (the ledger's words written by the older clock) costs at most one
# window, never the hour. rpm 10 refills a request every 6 s, so the exact
# counts below hold however slowly a loaded machine runs the steps.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
FT=
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
    /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
	[ -f "$f" ] && { FT=$f; break; }
done
[ -n "$FT" ] || skip "libfaketime not installed (Debian package faketime)"

KEY=sk-kvtest-clock-1
BODY='{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"tick"}]}'

# The daemon, wrapped: same PID (exec), the clock offset read from $T/ft.
echo "+0" >"$T/ft"
REAL_BIN=$KV_DAEMON_BIN
KV_DAEMON_BIN=$T/kilovoltd-faketime
cat >"$KV_DAEMON_BIN" <<EOF
#!/bin/sh
export LD_PRELOAD=$FT FAKETIME_TIMESTAMP_FILE=$T/ft FAKETIME_NO_CACHE=1
export FAKETIME_DONT_FAKE_MONOTONIC=1
export ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0
exec "$REAL_BIN" "\$@"
EOF
chmod +x "$KV_DAEMON_BIN"

kv_start_mock
kv_write_config <<EOF
[key clock]
key = $KEY
rpm = 10
tpm = 0
EOF
kv_start

# ask: one request; prints "STATUS REMAINING" (remaining requests of rpm).
ask() {
	kv_curl /v1/chat/completions -D "$T/h" -o /dev/null -w '%{http_code}' \
		-H "Authorization: Bearer $KEY" -d "$BODY" >"$T/code" 2>/dev/null
	printf '%s %s\n' "$(cat "$T/code")" \
		"$(tr -d '\r' <"$T/h" | sed -n 's/^x-ratelimit-remaining-requests: //p')"
}

read -r st rem < <(ask)
check_eq "the first request is served" "$st" 200
check_eq "... and leaves 9 of rpm 10" "$rem" 9

# The wall clock steps back an hour.
echo "-3600" >"$T/ft"
check "the daemon's wall clock went back an hour" \
	bash -c "[ \$(( \$(date +%s) - \$(LD_PRELOAD=$FT FAKETIME_TIMESTAMP_FILE=$T/ft FAKETIME_NO_CACHE=1 date +%s) )) -ge 3500 ]"
codes=
for i in 1 2 3; do
	read -r st rem < <(ask)
	codes="$codes $st"
done
check_eq "after the step back, 3 requests are served (not 429 for the hour)" "$codes" " 200 200 200"
check_eq "... and the limit still counts them (6 left)" "$rem" 6

# Forward two hours (an hour past the real time): nothing is freed.
echo "+3600" >"$T/ft"
read -r st rem < <(ask)
check_eq "after a step forward the request is served" "$st" 200
check_eq "... and the bucket was not refilled by the step (5 left)" "$rem" 5

# The limit still bites: the rest of the burst, then 429.
n=0
for ((i = 0; i < 120; i++)); do
	read -r st rem < <(ask)
	[ "$st" = 200 ] || break
	n=$((n + 1))
done
# (5 left, plus what refills at 10/min while the loop runs)
check_eq "the limit still bites after the steps: 429 after $n more" "$st" 429
ra=$(tr -d '\r' <"$T/h" | sed -n 's/^retry-after: //p')
check "... with a retry-after within the window ($ra s)" test "${ra:-999}" -le 60

# A restart after the clock went back: the ledger's words are the older
# clock's, two windows and more ahead of the new one. At most one window
# lost, never the hour: the key is served at once (a full bucket again).
kv_stop
echo "-3600" >"$T/ft"
kv_start
read -r st rem < <(ask)
check_eq "restarted an hour back, the exhausted key is served (no hour-long 429)" "$st" 200
check "... from a fresh bucket ($rem left)" test "${rem:-0}" -ge 9

kv_stop
kv_finish
