#!/bin/bash
# t_signals: kilovoltd's processes under signals, with streams in flight.
#  - kill -9 of a worker: the master logs it, respawns a worker, the other
#    worker's streams complete intact and the dead one's reservations are
#    released;
#  - SIGHUP under 50 slow streams: none is cut, short requests keep being
#    answered during the reload, the new config ([key], [price]) takes
#    effect and the old generation exits once drained;
#  - SIGHUP with a broken config: the log says why, the old config serves;
#  - kill -9 of the master: the workers leave (no orphans) and a new start
#    on the same ledger keeps the spend;
#  - a crash-looping worker is respawned with a growing back-off;
#  - SIGTERM with streams in flight: they complete, new connections are
#    refused once the stop began, the master exits 0.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# kvctl by the ledger's path: the config may be broken on purpose.
ctl() { "$KV_CTL_BIN" -l "$T/ledger" "$@"; }
status_json() { ctl status --json; }
active() { status_json | jq -r .active_streams; }
active_is() { [ "$(active)" = "$1" ]; }
# The live workers as "pid generation state active_streams" lines.
workers() { status_json | jq -r '.workers[] | "\(.pid) \(.generation) \(.state) \(.active_streams)"'; }
key_json() { ctl show "$(id_of "$1")" --json; }
key_field() { key_json "$1" | jq -r ".$2"; }
log_since() { tail -c +$(($1 + 1)) "$KV_LOG"; }
log_size() { stat -c %s "$KV_LOG"; }
log_has() { log_since "$1" | grep -Eq "$2"; }
gone() { local p; for p in "$@"; do kv_alive "$p" && return 1; done; return 0; }

CHAT_STREAM='{"model":"gpt-4o-mini","stream":true,"max_tokens":1000,"messages":[{"role":"user","content":"Count slowly."}]}'

# stream OUT KEY TOKENS DELAY_MS: one streamed chat completion in the
# background; its body goes to OUT, curl's exit status to OUT.rc, its pid
# is appended to STREAM_PIDS.
STREAM_PIDS=()
stream() {
	(curl -sS -N -m 90 -o "$1" -H "Authorization: Bearer $2" \
		-H "x-mock-tokens: $3" -H "x-mock-delay-ms: $4" -H 'x-mock-token-bytes: 8' \
		-H 'Content-Type: application/json' -d "$CHAT_STREAM" \
		"$KV_URL/v1/chat/completions" 2>"$1.err"
	 echo $? >"$1.rc") &
	STREAM_PIDS+=($!)
}

wait_streams() {
	local p
	for p in "${STREAM_PIDS[@]}"; do wait "$p"; done
	STREAM_PIDS=()
}

# intact FILE TOKENS: curl succeeded and the body is the whole stream: the
# role chunk, tok1..tokN in order, the finish chunk, [DONE] last, no usage.
intact() {
	local f=$1 n=$2
	[ "$(cat "$f.rc" 2>/dev/null)" = 0 ] || return 1
	[ "$(grep -c '^data: ' "$f")" = $((n + 3)) ] || return 1
	[ "$(grep '^data: ' "$f" | tail -n 1)" = 'data: [DONE]' ] || return 1
	grep -q '"usage"' "$f" && return 1
	[ "$(grep -o 'tok[0-9]*' "$f" | tr '\n' ' ')" = "$(seq -f 'tok%g' -s ' ' 1 "$n") " ]
}

# count_intact PREFIX N TOKENS: how many of PREFIX.1..N are intact.
count_intact() {
	local i ok=0
	for ((i = 1; i <= $2; i++)); do intact "$1.$i" "$3" && ok=$((ok + 1)); done
	echo "$ok"
}

short_request() {	# KEY [MODEL]: one JSON chat completion; prints the status code
	curl -sS -m 20 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
		-H 'Content-Type: application/json' -H 'x-mock-tokens: 7' \
		-d "{\"model\":\"${2:-gpt-4o-mini}\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
		"$KV_URL/v1/chat/completions" 2>/dev/null
}

kv_start_mock
kv_write_config <<EOF
[server]
shutdown_timeout = 30
EOF
cp "$T/kilovolt.ini" "$T/v1.ini"
kv_start

# ---- kill -9 of a worker during streams ------------------------------------
# Streams go out in batches until both workers hold some (the kernel picks
# the worker per connection), at most 40 streams.
KEY=sk-signals-kill
n=0
spread=no
for batch in 1 2 3 4; do
	for ((i = 0; i < 10; i++)); do
		n=$((n + 1))
		stream "$T/kill.$n" "$KEY" 50 100
	done
	kv_wait_for 30 active_is "$n" || break
	if [ "$(workers | awk '$4 > 0' | wc -l)" = 2 ]; then spread=yes; break; fi
done
check_eq "all $n kill-test streams in flight" "$(active)" "$n"
check_eq "the streams are spread over both workers" "$spread" yes
check "reservations are held while the streams run" \
	test "$(key_field "$KEY" reserved_nusd)" -gt 0
read -r victim _ _ victim_streams < <(workers | sort -k4 -n | tail -n 1)
survivor=$(workers | awk -v v="$victim" '$1 != v { print $1 }')
off=$(log_size)
KV_KILLS_WORKERS=1	# on purpose: kv_finish must not count it
kill -KILL "$victim"
check "the master logs the killed worker" kv_wait_for 10 log_has "$off" \
	"KV0112: .*\\(pid $victim\\) killed by signal 9; released $victim_streams reservations"
respawned() {
	local pids
	pids=$(workers | awk '$3 == "running" { print $1 }' | sort | tr '\n' ' ')
	[ "$(echo "$pids" | wc -w)" = 2 ] && ! echo " $pids" | grep -q " $victim " &&
		echo " $pids" | grep -q " $survivor "
}
check "a new worker replaces pid $victim (kvctl status --json)" kv_wait_for 15 respawned
wait_streams
ok=$(count_intact "$T/kill" "$n" 50)
check_eq "the $((n - victim_streams)) streams of the other worker complete intact" \
	"$ok" $((n - victim_streams))
cut=0
for ((i = 1; i <= n; i++)); do
	grep -q 'data: \[DONE\]' "$T/kill.$i" || cut=$((cut + 1))
done
check_eq "exactly the killed worker's $victim_streams streams were cut" "$cut" "$victim_streams"
reserved_zero() { [ "$(key_field "$KEY" reserved_nusd)" = 0 ]; }
check "the dead worker's reservations are released (reserved 0 within 5 s)" \
	kv_wait_for 5 reserved_zero
check_eq "no stream is left active" "$(active)" 0

# ---- SIGHUP under 50 slow streams -----------------------------------------
code=$(short_request sk-signals-pre sigtest-model)
check_eq "a request for sigtest-model before the reload" "$code" 200
old_pids=$(workers | awk '{ print $1 }')
for ((i = 1; i <= 50; i++)); do
	stream "$T/hup.$i" sk-signals-hup 40 100
done
check "50 slow streams in flight" kv_wait_for 30 active_is 50

# Short requests on new connections, one after another, until told to stop.
: >"$T/loop.codes"
(for ((i = 0; i < 400; i++)); do
	[ -e "$T/loop.stop" ] && break
	echo "$(short_request sk-signals-loop)" >>"$T/loop.codes"
done) &
loop_pid=$!
loop_count() { [ "$(wc -l <"$T/loop.codes")" -ge "$1" ]; }
kv_wait_for 20 loop_count 3

# The new config: a named key and a price for sigtest-model.
kv_write_config <<EOF
[server]
shutdown_timeout = 30

[key bob]
key = sk-signals-bob
budget = 7.50

[price sigtest-model]
input = 7.00
output = 11.00
EOF
cp "$T/kilovolt.ini" "$T/v2.ini"
off=$(log_size)
codes_before=$(wc -l <"$T/loop.codes")
kill -HUP "$KV_PID"
check "the master logs the reload (generation 2)" kv_wait_for 15 log_has "$off" \
	'reloaded .*generation 2'
old_draining() {	# every generation-1 worker is draining or gone
	! workers | awk '$2 == 1 && $3 != "draining"' | grep -q .
}
check "the old workers drain (state "draining" in kvctl status --json)" kv_wait_for 15 old_draining
check "old workers still serve their streams after the reload" \
	test "$(workers | awk '$2 == 1 { s += $4 } END { print s + 0 }')" -gt 0
new_running() { [ "$(workers | awk '$2 == 2 && $3 == "running"' | wc -l)" = 2 ]; }
check "two generation-2 workers run" kv_wait_for 15 new_running
code=$(short_request sk-signals-post sigtest-model)
check_eq "a request for sigtest-model after the reload" "$code" 200
wait_streams
check_eq "none of the 50 streams was cut by the reload" "$(count_intact "$T/hup" 50 40)" 50
loop_count $((codes_before + 3))
check "short requests kept going after the reload" test $? = 0
touch "$T/loop.stop"
wait "$loop_pid"
total=$(wc -l <"$T/loop.codes")
good=$(grep -c '^200$' "$T/loop.codes")
check_eq "every short request during the reload was answered 200 ($total sent; codes:$(sort "$T/loop.codes" | uniq -c | tr -s ' \n' ' '))" \
	"$good" "$total"
# shellcheck disable=SC2086
check "the old generation exits once drained" kv_wait_for 15 gone $old_pids
clean=yes
for p in $old_pids; do
	log_since "$off" | grep -q "pid $p) exited with status 0" || clean="no (pid $p)"
done
check_eq "the log shows each old worker exiting with status 0" "$clean" yes
bob=$(ctl keys --json | jq -r --arg id "$(id_of sk-signals-bob)" \
	'.keys[] | select(.id == $id) | "\(.label) \(.budget_nusd)"')
check_eq "the new [key bob] is in the ledger after the reload" "$bob" "bob 7500000000"
# USD per 1M tokens = nano-USD per token x 1000.
price_ok() {	# KEY IN_NUSD OUT_NUSD: spent = tokens x prices, tokens > 0
	local j
	j=$(key_json "$1")
	[ "$(jq '.input_tokens > 0 and .output_tokens == 7' <<<"$j")" = true ] &&
		[ "$(jq ".input_tokens * $2 + .output_tokens * $3 == .spent_nusd" <<<"$j")" = true ]
}
check "before the reload sigtest-model is priced by [price default]" \
	price_ok sk-signals-pre 1000 3000
check "after the reload sigtest-model is priced by the new [price sigtest-model]" \
	price_ok sk-signals-post 7000 11000

# ---- SIGHUP with a broken config --------------------------------------------
gen2_pids=$(workers | awk '{ print $1 }' | sort | tr '\n' ' ')
printf '\n[nonsense]\nfoo = 1\n' >>"$T/kilovolt.ini"
bad_line=$(grep -n '^\[nonsense\]' "$T/kilovolt.ini" | cut -d: -f1)
off=$(log_size)
kill -HUP "$KV_PID"
check "a broken config on SIGHUP: the log says which line and keeps the old config" \
	kv_wait_for 15 log_has "$off" "reload failed, keeping the running config: .*kilovolt.ini:$bad_line"
check_eq "the workers stay as they were" "$(workers | awk '{ print $1 }' | sort | tr '\n' ' ')" \
	"$gen2_pids"
check_eq "the running config still serves" "$(short_request sk-signals-after-bad)" 200
cp "$T/v2.ini" "$T/kilovolt.ini"

# ---- kill -9 of the master ----------------------------------------------------
wpids=$(workers | awk '{ print $1 }')
before=$(ctl keys --json | jq -c '[.keys[] | {id, spent_nusd, requests, input_tokens, output_tokens}] | sort_by(.id)')
kill -KILL "$KV_PID"
wait "$KV_PID" 2>/dev/null
KV_PID=
# shellcheck disable=SC2086
check "the workers leave when the master is killed (no orphans)" kv_wait_for 10 gone $wpids
# The restarted daemon runs one worker, for the crash-loop check below.
sed -i 's/^workers = .*/workers = 1/' "$T/kilovolt.ini"
kv_start
after=$(ctl keys --json | jq -c '[.keys[] | {id, spent_nusd, requests, input_tokens, output_tokens}] | sort_by(.id)')
check_eq "a new start on the same ledger keeps every key's spend" "$after" "$before"
check "no reservation survives the restart" \
	test "$(ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0
spent0=$(key_field sk-signals-post spent_nusd)
check_eq "the restarted daemon serves" "$(short_request sk-signals-post sigtest-model)" 200
check "and charges the same key on top of its old spend" \
	test "$(key_field sk-signals-post spent_nusd)" -gt "$spent0"

# ---- a crash-looping worker is backed off ------------------------------------
# Kill each new worker as soon as the ledger shows it: every death within
# the crash window (2 s) doubles the respawn delay, from 100 ms. The first
# kill may or may not count as a crash (that worker may be older than the
# window), so after eight kills the last delay is 3.2 s or 6.4 s.
seen=" "
gaps=()
killed_at=
new_worker() {
	local p
	for p in $(workers | awk '{ print $1 }'); do
		case $seen in *" $p "*) ;; *) NEW=$p; return 0 ;; esac
	done
	return 1
}
for round in 1 2 3 4 5 6 7 8; do
	kv_wait_for 20 new_worker || break
	[ -n "$killed_at" ] && gaps+=($(($(now_ms) - killed_at)))
	seen="$seen$NEW "
	kill -KILL "$NEW"
	killed_at=$(now_ms)
done
echo "# respawn gaps (ms) after each kill: ${gaps[*]}"
check_eq "eight workers killed in a row" "$round ${#gaps[@]}" "8 7"
check "the respawn delay grows: the last gap is at least 2.5 s" test "${gaps[6]:-0}" -ge 2500
check "the last gap is longer than the first" test "${gaps[6]:-0}" -gt "${gaps[0]:-0}"
serving() { [ "$(short_request sk-signals-crash)" = 200 ]; }
check "after the crash loop a worker is back and serves" kv_wait_for 30 serving

# ---- SIGTERM with streams in flight ------------------------------------------
for ((i = 1; i <= 10; i++)); do
	stream "$T/term.$i" sk-signals-term 50 100
done
check "10 streams in flight before SIGTERM" kv_wait_for 30 active_is 10
off=$(log_size)
kill -TERM "$KV_PID"
check "the master logs the stop" kv_wait_for 10 log_has "$off" 'stopping: draining'
refused() {
	curl -sS -m 5 -o /dev/null "$KV_URL/v1/models" 2>/dev/null
	[ $? = 7 ]
}
check "new connections are refused once the stop began" kv_wait_for 10 refused
check "while the old streams are still running" test "$(active)" -gt 0
wait_streams
check_eq "all 10 streams in flight at SIGTERM complete intact" \
	"$(count_intact "$T/term" 10 50)" 10
for ((i = 0; i < 300; i++)); do
	kv_alive "$KV_PID" || break
	sleep 0.1
done
wait "$KV_PID"
check_eq "the master exits 0 after the drain" "$?" 0
KV_PID=

kv_finish
