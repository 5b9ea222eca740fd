#!/bin/bash
# t_memory: kilovoltd's memory does not depend on response length. With 200
# concurrent streams in flight, the PSS of the whole process tree (master +
# workers, bench/pss.sh) for 4 MiB responses is within 2 MiB of that for
# 40 KiB responses. Also prints (does not assert) the PSS idle and with
# 1,000 concurrent slow streams. Under ASan the PSS comparison means
# nothing (shadow memory, quarantine) and is skipped; the streams still run
# and are checked for correctness. KV_MEM_DELAY sets the pause between
# events in ms (300: each measured stream lasts about 20 s).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
[ -r /proc/self/smaps_rollup ] || skip "no /proc/PID/smaps_rollup (Linux 4.14+)"

PSS=$top_srcdir/bench/pss.sh
MARGIN_KB=2048
N=200
BIG=1000	# the recorded-only run
asan=no
if grep -q -- '--enable-asan' "$top_builddir/config.log" 2>/dev/null ||
	ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	asan=yes
fi

# One curl process per 50 transfers (curl caps --parallel-max at 300): a
# client that falls behind leaves its stream's bytes in the gateway's relay
# buffers, which is what is measured, so the clients get several processes'
# share of a busy machine. Enough descriptors for every side: the clients,
# the gateway (two per stream) and the mock (one per stream).
want_fds=$((2 * BIG + 1000))
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge "$want_fds" ]; then
	ulimit -n "$want_fds"
else
	ulimit -n "$hard"
fi
echo "# ulimit -n $(ulimit -n), ASan build: $asan"

ctl() { "$KV_CTL_BIN" -l "$T/ledger" "$@"; }
active() { ctl status --json | jq -r .active_streams; }
active_is() { [ "$(active)" = "$1" ]; }

# streams NAME COUNT TOKENS TOKEN_BYTES DELAY_MS: COUNT streamed chat
# completions at once, in the background, key sk-mem-NAME. Each transfer
# writes "http_code size_download exitcode" to $T/NAME.res.*; the curl pids
# are in CLIENTS.
CLIENTS=()
streams() {
	local name=$1 count=$2 tokens=$3 tb=$4 delay=$5 per=50 j k
	for ((j = 0; j * per < count; j++)); do
		k=$((count - j * per < per ? count - j * per : per))
		for ((i = 0; i < k; i++)); do
			echo "url = \"$KV_URL/v1/chat/completions\""
			echo 'output = "/dev/null"'
		done >"$T/$name.cfg.$j"
		curl -sS -Z --parallel-max "$per" --parallel-immediate -m 300 \
			-K "$T/$name.cfg.$j" -w '%{http_code} %{size_download} %{exitcode}\n' \
			-H "Authorization: Bearer sk-mem-$name" -H 'Content-Type: application/json' \
			-H "x-mock-tokens: $tokens" -H "x-mock-token-bytes: $tb" \
			-H "x-mock-delay-ms: $delay" \
			-d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Write a lot."}]}' \
			>"$T/$name.res.$j" 2>"$T/$name.err.$j" &
		CLIENTS+=($!)
	done
}

wait_clients() {
	local p
	for p in "${CLIENTS[@]}"; do wait "$p"; done
	CLIENTS=()
}

# peak_pss COUNT: the tree's PSS (kB) while all COUNT streams are in flight:
# the median of 7 samples 0.3 s apart, so that a moment when a starved
# client left a few streams' bytes in the relay buffers does not decide
# alone; empty when a sample saw fewer streams.
peak_pss() {
	local want=$1 i kb all=()
	for ((i = 0; i < 7; i++)); do
		active_is "$want" || return 1
		kb=$("$PSS" "$KV_PID") || return 1
		all+=("$kb")
		sleep 0.3
	done
	active_is "$want" || return 1
	echo "# $want streams, PSS samples (kB): ${all[*]}" >&2
	printf '%s\n' "${all[@]}" | sort -n | sed -n 4p
}

# run_case NAME COUNT TOKENS TOKEN_BYTES DELAY_MS: run the streams, sample
# the peak PSS into PEAK, check that every stream completed whole.
run_case() {
	local name=$1 count=$2 tokens=$3 tb=$4 delay=$5 res
	PEAK=
	streams "$@"
	if [ "$name" != warm ]; then
		kv_wait_for 60 active_is "$count" && PEAK=$(peak_pss "$count")
		check "$name: all $count streams in flight together" test -n "$PEAK"
	fi
	wait_clients
	res=$(cat "$T/$name".res.*)
	check_eq "$name: $count transfers ended" "$(echo "$res" | grep -c .)" "$count"
	check_eq "$name: every stream 200 with curl exit 0" \
		"$(echo "$res" | awk '$1 == 200 && $3 == 0' | wc -l)" "$count"
	check_eq "$name: every stream the same length" \
		"$(echo "$res" | awk '{ print $2 }' | sort -u | wc -l)" 1
	check "$name: each stream carries at least $((tokens * tb)) bytes" \
		test "$(echo "$res" | awk '{ print $2 }' | sort -n | head -n 1)" -ge $((tokens * tb))
	check_eq "$name: the ledger counts every stream's output tokens" \
		"$(ctl show "$(id_of "sk-mem-$name")" --json | jq .output_tokens)" $((count * tokens))
	kv_wait_for 30 active_is 0
}

kv_start_mock
kv_write_config <<EOF
[server]
client_timeout = 120
upstream_timeout = 120
EOF
kv_start

# Warm up: a few streams of each size first, so one-time allocations (TLS
# and scanner tables, malloc arenas, the access log) are made before the
# measured runs.
run_case warm 20 16 65536 10
IDLE=$("$PSS" "$KV_PID")
echo "# PSS idle (after warm-up): $IDLE kB"

# The same number of events at the same pace; only the bytes per event differ.
run_case small "$N" 64 640 "${KV_MEM_DELAY:-300}"
SMALL=$PEAK
run_case large "$N" 64 65536 "${KV_MEM_DELAY:-300}"
LARGE=$PEAK
echo "# PSS with $N streams in flight: 40 KiB responses ${SMALL:-?} kB, 4 MiB responses ${LARGE:-?} kB"
if [ "$asan" = yes ]; then
	echo "# ASan build: the PSS comparison is skipped"
elif [ -n "$SMALL" ] && [ -n "$LARGE" ]; then
	check "PSS for 4 MiB responses is within $MARGIN_KB kB of that for 40 KiB ($LARGE vs $SMALL kB)" \
		test "$LARGE" -le $((SMALL + MARGIN_KB))
fi

if [ "$(ulimit -n)" -ge "$want_fds" ]; then
	run_case many "$BIG" 40 64 250
	echo "# PSS with $BIG slow streams in flight: ${PEAK:-?} kB (idle $IDLE kB)"
else
	echo "# ulimit -n $(ulimit -n) < $want_fds: the $BIG-stream run is skipped"
fi

kv_finish
