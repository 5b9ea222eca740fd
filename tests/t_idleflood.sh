#!/bin/bash
# t_idleflood: silent connections cannot lock real clients out (issue 34
# row 1). kilovoltd runs in a real memory cgroup of 48 MiB (v1 or v2, made
# by the test), memory_limit at auto, and 4,000 connections that send
# nothing are held open, each one closed reconnecting a second later.
# Past the connections' share of the limit the oldest silent connections
# are shed to make room; memory stays far from the refusal point, so no
# connection is refused at accept and real clients, each on a new
# connection, get 200. Every shed is counted (/metrics), in the request
# log (status 444) and in the once-a-minute log line (KV0655). Then, with
# memory_limit far below what the daemon uses, every connection is refused
# at accept: a client that sent a whole request reads the 503 intact and
# a clean close (the request is read away, not reset), counted and logged
# too. Skipped without a writable memory cgroup and under ASan.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq python3; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	skip "ASan build: a 48 MiB cgroup cannot hold its shadow memory"
fi

LIMIT=$((48 * 1024 * 1024))
kv_memcg "$LIMIT"
N=${KV_IDLEFLOOD_CONNS:-4000}
want_fds=$((2 * N + 1000))
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge "$want_fds" ]; then ulimit -n "$want_fds"; else ulimit -n "$hard"; fi

kv_start_mock
kv_write_config <<EOT
[server]
client_timeout = 120
header_timeout = 120
max_connections = 8192
request_log = $T/requests.log
EOT
kv_start_in_cg
check "the daemon runs in the test's cgroup" grep -qx "$KV_PID" "$CG/cgroup.procs"

metric() {
	curl -sS -m 10 "http://127.0.0.1:$KV_STATUS_PORT/metrics" | sed -n "s/^kilovolt_$1 //p"
}

python3 "$top_srcdir/tests/silent_conns.py" "$KV_PORT" "$N" 30 "$T/flood.out" \
	</dev/null >"$T/flood.err" 2>&1 &
FLOOD=$!
kv_track $FLOOD
sleep 8	# the flood is in
kv_real_clients "$T/real.codes"	# while the flood holds its sockets
idle_shed=$(metric idle_shed_total)
refused=$(metric accept_refusals_total)
wait "$FLOOD"
peak=$(cat "$CG/memory.max_usage_in_bytes" "$CG/memory.peak" 2>/dev/null | head -n 1)
real_ok=$(grep -cx 200 "$T/real.codes")
echo "# flood: $(cat "$T/flood.out"); real clients: $real_ok of 60 got 200" \
	"($(sort "$T/real.codes" | uniq -c | tr '\n' ' ')); shed $idle_shed, refused $refused;" \
	"cgroup peak ${peak:-?} of $LIMIT bytes"
check "the flood connected ($(cat "$T/flood.out"))" grep -q "opened=[1-9]" "$T/flood.out"
check_eq "the kernel killed nothing in the cgroup" "$(oom_kills)" 0
check_eq "real clients got 200 during the flood ($(sort "$T/real.codes" | uniq -c | tr '\n' ' '))" \
	"$real_ok" 60
check "... with memory far from the limit (peak ${peak:-?} of $LIMIT)" \
	test "${peak:-$LIMIT}" -lt $((LIMIT * 3 / 4))
check "silent connections were shed, counted in /metrics (${idle_shed:-none})" \
	test "${idle_shed:-0}" -gt 0
check_eq "... and none refused at accept" "${refused:-none}" 0
check "... each in the request log with status 444" \
	test "$(grep -c '"status":444' "$T/requests.log")" -ge "${idle_shed:-1}"
check "... and said with its cause (KV0655)" \
	grep -q 'KV0655.*[1-9][0-9]* that had sent nothing' "$T/kilovoltd.log"
check "the guard never refused a request for memory (no KV0650)" \
	bash -c "! grep -q KV0650 '$T/kilovoltd.log'"
check_eq "the mock got only the real clients' requests" \
	"$(grep -c '^POST /v1/chat/completions' "$MOCK_LOG")" "$real_ok"
kv_stop
cg_remove

# Memory at the refusal point: every connection is refused at accept. A
# client whose whole request came in before the accept (the workers are
# stopped while 20 send theirs) reads the 503, then our close, not a reset
# (the request is read away: closing with it unread made the kernel send
# one, which can destroy the answer).
sed -i 's/^\[server\]$/[server]\nmemory_limit = 1m/' "$T/kilovolt.ini"
kv_start
kids=$(pgrep -P "$KV_PID")
kill -STOP $kids
python3 "$top_srcdir/tests/early_requests.py" "$KV_PORT" 20 20000 3 >"$T/early.out" &
EARLY=$!
kv_track $EARLY
sleep 1.5	# their requests are in before any accept
kill -CONT $kids
wait $EARLY
check_eq "20 of 20 refused at accept read the 503 and a clean close ($(sort "$T/early.out" | uniq -c | tr '\n' ' '))" \
	"$(grep -c '^HTTP/1.1 503 .* eof ' "$T/early.out")" 20
curl -sS -m 10 -D "$T/h" -o "$T/b" "$KV_URL/v1/chat/completions" -H 'Authorization: Bearer sk-real' \
	-d '{"model":"gpt-4o-mini","messages":[]}' 2>"$T/curl.err"
check "... with Retry-After" grep -qi '^retry-after: 1' "$T/h"
check "... and the whole body" bash -c "jq -e '.error.message | test(\"memory limit\")' '$T/b' >/dev/null"
check "... counted in /metrics" test "$(metric accept_refusals_total)" -ge 20
check "... in the request log with status 503" \
	test "$(grep -c '"status":503' "$T/requests.log")" -ge 20
kv_stop
check "... and said with its cause at the latest on exit (KV0655)" \
	grep -q 'KV0655.*[1-9][0-9]* refused with 503 at accept' "$T/kilovoltd.log"
kv_finish
