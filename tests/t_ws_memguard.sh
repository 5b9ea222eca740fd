#!/bin/bash
# t_ws_memguard: a WebSocket client's message, held whole until it is
# known, counts in the worker's memory guard as the connection's own
# memory. One worker in a memory cgroup of 32 MiB made by the test
# (memory_limit at auto: the cgroup's) holds at most 30% of it for its
# connections (about 9.6 MiB): a 12 MiB frame (under the 16 MiB cap)
# ends its session at its header (KV0564, once), nothing of it reaches the
# stand-in, nothing is charged or left reserved; a turn on a new socket is
# then served and charged as usual.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "$top_srcdir/tests/ws_lib.sh"

if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	skip "ASan build: a 32 MiB cgroup cannot hold its shadow memory"
fi
KH=sk-kv-memguard-$$
export KV_WORKERS=1
kv_memcg $((32 * 1024 * 1024))
WS_START=kv_start_in_cg ws_setup <<EOF
[key hostile]
key = $KH
budget = 10.00
EOF
MODEL=gpt-5-codex
ws_prices $MODEL || { fail "kvctl prices $MODEL"; kv_finish; }

from=$(ws_lines)
kv_node_checks big "$T/big.out" node "$KV_SDK/ws_hostile.mjs" "$KV_WS" "$KH" $MODEL oversized:$((12 * 1024 * 1024))
check "big: nothing of it reached the stand-in" test \
	-z "$(tail -n +$((from + 1)) "$WSS_LOG" | jq -c 'select(.kind == "event")')"
kv_wait_for 10 grep -q KV0564 "$KV_LOG"
check_eq "big: the refusal logged once, KV0564" "$(grep -c KV0564 "$KV_LOG")" 1
check_eq "big: nothing charged, nothing reserved" "$(spent "$KH") $(reserved "$KH")" "0 0"

kv_node_checks after "$T/after.out" node "$KV_SDK/ws_hostile.mjs" "$KV_WS" "$KH" $MODEL fragmented
kv_wait_for 30 ws_settled "$KH"
check_eq "after: the next session's turn charged its usage exactly, nothing left reserved" \
	"$(spent "$KH") $(reserved "$KH")" "$(sed -n 's/^usage //p' "$T/after.out" | cost_responses) 0"

kv_finish
