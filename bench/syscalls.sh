#!/bin/bash
# bench/syscalls.sh: system calls per small request, counted by strace -c,
# of kilovolt and HAProxy on scenario 1's load (issue 26). A count does not
# depend on how busy the shared machine is; throughput does.
#
# Method: bench/benchmock answers the small chat completion; the proxy
# (kilovolt with 2 workers and full accounting, or HAProxy with 2 threads
# and bench/haproxy.cfg.in) serves a warm-up, then strace -c -f attaches to
# every process (and, with -f, every thread) of it while bench/loadgen
# sends N requests over C keep-alive connections (C = 64 as in scenario 1;
# C = 1 sends them one at a time, so no event-loop turn carries two
# requests and the count is each request's own). Prints, per target, each
# system call's count over N, and the total.
#
# Run from the build directory. Environment: top_srcdir, top_builddir, N
# (20000), C (64), TARGETS ("kilovolt haproxy"), REQUEST_LOG (0; 1: kilovolt
# writes [server] request_log too, which bench/run.sh's kilovolt does not),
# KEEP=1 keeps the work dir.
set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
N=${N:-20000}
C=${C:-64}
TARGETS=${TARGETS:-kilovolt haproxy}
REQUEST_LOG=${REQUEST_LOG:-0}
KVD=$top_builddir/kilovoltd
BM=$top_builddir/bench/benchmock
LG=$top_builddir/bench/loadgen
MOCK=$top_builddir/tests/mock_upstream
W=$(mktemp -d "${TMPDIR:-/tmp}/kvsys.XXXXXX") || exit 1
BM_PID= PX_PID= ST_PID=

log() { echo "syscalls: $*" >&2; }
. "$top_srcdir/bench/lib.sh"
cleanup() { bench_stop "$ST_PID"; bench_stop "$PX_PID"; bench_stop "$BM_PID"; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

for f in "$KVD" "$BM" "$LG" "$MOCK"; do [ -x "$f" ] || { echo "$f is not built" >&2; exit 1; }; done
command -v strace >/dev/null || { echo "strace is needed" >&2; exit 1; }

bench_spawn bm BM_PID BM_PORT "$BM" || exit 1
BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":16}'
LOAD=(-m POST -u /v1/chat/completions -H 'Content-Type: application/json'
	-H 'Authorization: Bearer sk-bench-0123456789' -t 60 -b "$BODY")

start_kilovolt() {	# start_kilovolt PORT
	{ bench_kv_server "$1" 2 64 off
	[ "$REQUEST_LOG" = 1 ] && echo "request_log = $W/requests.log"
	bench_kv_budget
	cat <<EOF

[upstream openai]
url = http://127.0.0.1:$BM_PORT
paths = /v1/chat/completions

[price gpt-4o-mini*]
input = 0.15
output = 0.60
EOF
	} >"$W/kv.ini"
	rm -f "$W/ledger"
	"$KVD" -c "$W/kv.ini" </dev/null >"$W/kilovolt.log" 2>&1 &
	PX_PID=$!
}

start_haproxy() {	# start_haproxy PORT
	sed -e "s|@PORT@|$1|g" -e "s|@UPSTREAM_PORT@|$BM_PORT|g" -e "s|@UPSTREAM_TLS@||g" \
	    -e "s|@MAXCONN@|4096|g" "$top_srcdir/bench/haproxy.cfg.in" >"$W/haproxy.cfg"
	haproxy -db -f "$W/haproxy.cfg" </dev/null >"$W/haproxy.log" 2>&1 &
	PX_PID=$!
}

# The proxy's processes: itself and its children (kilovolt's workers).
tree_pids() { echo "$PX_PID" $(pgrep -P "$PX_PID"); }

count() {	# count TARGET: prints "syscall per-request" lines and the total
	local t=$1 port i args=()
	command -v "$t" >/dev/null || [ "$t" = kilovolt ] || { echo "$t: not installed" >&2; return 0; }
	port=$("$MOCK" --free-port)
	"start_$t" "$port"
	bench_wait_port "$port" "$PX_PID" || { cat "$W/$t.log" >&2; return 1; }
	"$LG" -p "$port" "${LOAD[@]}" -c "$C" -n 2000 -l warm >/dev/null 2>&1
	for p in $(tree_pids); do args+=(-p "$p"); done
	strace -c -f -o "$W/strace.$t" "${args[@]}" 2>"$W/strace.$t.err" &
	ST_PID=$!
	sleep 1	# attached to every thread
	"$LG" -p "$port" "${LOAD[@]}" -c "$C" -n "$N" -l "$t" >/dev/null 2>"$W/load.$t.err" ||
		echo "$t: loadgen reported errors: $(tail -n 1 "$W/load.$t.err")" >&2
	kill -INT "$ST_PID"; wait "$ST_PID" 2>/dev/null; ST_PID=
	bench_stop "$PX_PID"; PX_PID=
	echo "$t ($N requests, $C connections$([ "$t" = kilovolt ] && [ "$REQUEST_LOG" = 1 ] && echo ", request_log on")): $(tail -n 1 "$W/load.$t.err")"
	awk -v n="$N" '$NF ~ /^[a-z_0-9]+$/ && $1 ~ /^[0-9.]+$/ && $NF != "total" {
		printf "  %-16s %8.3f\n", $NF, $4 / n; tot += $4 }
		END { printf "  %-16s %8.3f\n", "total", tot / n }' "$W/strace.$t"
}

for t in $TARGETS; do count "$t" || exit 1; done
