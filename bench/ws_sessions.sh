#!/bin/bash
# bench/ws_sessions.sh BUILDDIR: what WebSocket sessions cost kilovolt
# (issue 37): the memory of 1,000 idle and of 100 active Responses
# sessions, inside a 30 MiB memory cgroup (the compose file's limit), and
# the latency a turn gains through kilovolt over the stand-in direct.
#
# The provider is tests/sdk/ws_standin.mjs (no log), the sessions
# tests/sdk/ws_sessions.mjs; kilovoltd (2 workers, the catalogue's prices,
# one key) runs in the cgroup. Idle: 1,000 sessions opened, one short turn
# each, then all idle while the PSS of kilovolt's processes is read (then
# one more turn each, all must complete). Active: 100
# sessions each streaming turns back to back (an output token every 20 ms),
# PSS sampled every 0.5 s, the peak kept. KiB a session = (PSS with them -
# PSS before) / sessions. Latency: WS_ROUNDS rounds (5) of WS_TURNS (1,000)
# one-token turns on each of two sockets, one direct and one through
# kilovolt, taking turns (so both see the machine's same load); the p50
# and p99 of each, and the rounds' medians of the differences.
# Checks: every session and turn completed, no OOM kill in the cgroup,
# nothing left reserved. Needs a writable memory cgroup (else exit 77).
#
# Environment: WS_IDLE (1000), WS_ACTIVE (100), WS_ACTIVE_S (20), WS_HOLD_S
# (10), WS_TURNS (1000), WS_ROUNDS (5), WS_MEMORY (31457280), KEEP=1; a
# count of 0 skips its phase (tests/t_ws_sessions.sh runs the idle one).
# Prints one line a measurement and ends "N passed, N failed"; exit 1 when a
# check failed.
set -u
B=$(cd "${1:?usage: ws_sessions.sh BUILDDIR}" && pwd)
top_builddir=$B
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
KV_TIMEOUT=${KV_TIMEOUT:-1800}
. "$top_srcdir/tests/lib.sh"
NIDLE=${WS_IDLE:-1000} NACTIVE=${WS_ACTIVE:-100} ACTIVE_S=${WS_ACTIVE_S:-20} HOLD_S=${WS_HOLD_S:-10}
NTURNS=${WS_TURNS:-1000} ROUNDS=${WS_ROUNDS:-5}

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available"
ulimit -n "$(ulimit -Hn)" 2>/dev/null
kv_memcg "${WS_MEMORY:-31457280}"
kv_start_ws_standin --log /dev/null
export KV_TEST_OPENAI_KEY=$WSS_KEY
KB=sk-kv-bench-ws-0123456789
KV_UPSTREAM_URL=$WSS_URL kv_write_config <<EOF
[budget]
prices = $top_srcdir/data/prices-2026-07-24.json
unknown_keys = deny

[upstream openai]
paths = /v1/responses /v1/realtime
api_key = env:KV_TEST_OPENAI_KEY

[key bench]
key = $KB
budget = 100000.00
EOF
kv_start_in_cg
KV_WS=ws://127.0.0.1:$KV_PORT
sessions() { node "$KV_SDK/ws_sessions.mjs" "$@"; }
cg_peak() {
	if [ -f "$CG/memory.max_usage_in_bytes" ]; then cat "$CG/memory.max_usage_in_bytes"; else cat "$CG/memory.peak"; fi
}

# measure NAME N MODE ARGS...: run ws_sessions.mjs MODE through kilovolt,
# sampling kilovolt's PSS every 0.5 s from its "ready" to its "wake" or
# its summary; the peak less the PSS before (2 s after the last phase), a
# session.
measure() {
	local name=$1 n=$2 before peak=0 kb rc out=$T/$1.out
	shift 2
	: >"$out"
	sleep 2
	before=$(kv_daemon_kb)
	sessions "$KV_WS" "$KB" gpt-5-codex "$@" >"$out" 2>"$out.err" &
	local pid=$!
	kv_wait_for 300 grep -q '^ready' "$out"
	while kv_alive "$pid" && ! grep -q -e '^wake' -e '^active ' "$out"; do
		kb=$(kv_daemon_kb)
		[ "$kb" -gt "$peak" ] && peak=$kb
		sleep 0.5
	done
	wait "$pid"
	rc=$?
	[ $rc = 0 ] || grep -m 3 -e Error -e "^    at " "$out.err" | sed "s/^/    /"
	check "$name: every session and turn completed ($(tail -n 1 "$out"))" test $rc = 0
	echo "$name: $n sessions, kilovolt PSS $before kB before, $peak kB peak: $(((peak - before) * 1024 / n)) bytes a session"
}

[ "$NIDLE" -gt 0 ] && measure idle "$NIDLE" idle "$NIDLE" "$HOLD_S"
[ "$NACTIVE" -gt 0 ] && measure active "$NACTIVE" active "$NACTIVE" "$ACTIVE_S"
check "no OOM kill in the ${WS_MEMORY:-31457280}-byte cgroup (peak $(cg_peak) bytes)" test "$(oom_kills)" = 0
kv_wait_for 30 eval '[ "$(reserved "$KB")" = 0 ]'
check_eq "nothing left reserved" "$(reserved "$KB")" 0

# latency: direct and through, turn by turn on two sockets
field() { sed -n "s/^$1 .* $2=\([0-9.]*\).*/\1/p" "$3"; }
for ((r = 1; r <= ROUNDS; r++)); do
	sessions "$KV_WS" "$KB" gpt-5-codex latency "$NTURNS" "$WSS_WS" "$WSS_KEY" >"$T/lat$r.out" ||
		fail "latency round $r"
	echo "round $r: $(tr '\n' ';' <"$T/lat$r.out")"
	for q in p50 p99; do
		echo "$(field through $q "$T/lat$r.out") - $(field direct $q "$T/lat$r.out")" | bc -l >>"$T/added-$q"
	done
done
[ "$ROUNDS" -gt 0 ] && for q in p50 p99; do
	echo "added at $q over direct, the rounds' median: $(sort -g "$T/added-$q" | awk '{ a[NR] = $1 } END { printf "%.3f ms\n", a[int((NR + 1) / 2)] }')"
done
kv_finish
