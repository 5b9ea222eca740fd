#!/bin/bash
# t_memflood: a slow-header flood cannot make the kernel choose (issue 22).
# kilovoltd runs in a real memory cgroup of 48 MiB (v1 or v2, made by the
# test), memory_limit at auto, and 4,000 connections each send 13 KB of a
# request head that never ends. The guard counts each connection's bytes
# from accept: past the connections' share the slowest unfinished heads
# are dropped, past the limit new connections get a 503 and are closed at
# once. Meanwhile real clients are served; the kernel killed nothing; the
# dropped heads are logged once an episode; a head not whole within
# header_timeout is dropped. Skipped without a writable memory cgroup and
# under ASan.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	skip "ASan build: a 24 MiB cgroup cannot hold its shadow memory"
fi

LIMIT=$((48 * 1024 * 1024))
kv_memcg "$LIMIT"
command -v python3 >/dev/null || skip "python3 not installed"
N=${KV_MEMFLOOD_CONNS:-4000}
HEAD=13000
want_fds=$((2 * N + 1000))
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge "$want_fds" ]; then ulimit -n "$want_fds"; else ulimit -n "$hard"; fi

kv_start_mock
kv_write_config <<EOT
[server]
client_timeout = 120
header_timeout = 30
max_connections = 8192
EOT
kv_start_in_cg
check "the daemon runs in the test's cgroup" grep -qx "$KV_PID" "$CG/cgroup.procs"

python3 "$top_srcdir/tests/slow_heads.py" "$KV_PORT" "$N" "$HEAD" 40 "$T/flood.out" \
	</dev/null >"$T/flood.err" 2>&1 &
FLOOD=$!
kv_track $FLOOD
sleep 8	# the flood is in
kv_real_clients "$T/real.codes"	# while the flood holds its heads
wait "$FLOOD"
real_ok=$(grep -cx 200 "$T/real.codes")
echo "# flood: $(cat "$T/flood.out"); real clients: $real_ok of 60 got 200 ($(sort "$T/real.codes" | uniq -c | tr '\n' ' '));" \
	"cgroup peak $(cat "$CG/memory.max_usage_in_bytes" "$CG/memory.peak" 2>/dev/null | head -n 1) of $LIMIT bytes"
check "the flood connected ($(cat "$T/flood.out"))" grep -q "opened=[1-9]" "$T/flood.out"
check "... and heads were dropped or refused" \
	bash -c "! grep -q 'refused=0 closed=0 ' '$T/flood.out'"
check_eq "the kernel killed nothing in the cgroup" "$(oom_kills)" 0
check "the master is alive" kv_alive "$KV_PID"
check "real clients were served during the flood ($real_ok of 60)" test "$real_ok" -ge 54
check "... the rest, if any, got 503" bash -c "! grep -vx '200\|503' '$T/real.codes'"
n653=$(grep -c 'KV0653' "$T/kilovoltd.log")
check "dropping heads was logged, once an episode ($n653)" test "$n653" -ge 1 -a "$n653" -le 40
check_eq "the mock got only the real clients' requests" \
	"$(grep -c '^POST /v1/chat/completions' "$MOCK_LOG")" "$real_ok"

# header_timeout: a head that is not whole within it is dropped, though the
# connection is not idle (client_timeout is 120 s).
sed -i 's/^header_timeout = .*/header_timeout = 2/' "$T/kilovolt.ini"
kill -HUP "$KV_PID"
sleep 2
"$top_builddir/tests/rawclient" -t 20 -d 200 "$KV_PORT" <(printf 'GET /v1/models HTTP/1.1\r\nHost: gw\r\nX-Slow: %s' \
	"$(head -c 100 /dev/zero | tr '\0' s)") >/dev/null 2>"$T/slow.err"
ms=$(sed -n 's/.* ms=\([0-9]*\) .*/\1/p' "$T/slow.err")
check "a slow head is dropped at header_timeout (2 s), not client_timeout: after ${ms:-?} ms" \
	test "${ms:-0}" -ge 1500 -a "${ms:-99999}" -le 8000

kv_stop
cg_remove
kv_finish
