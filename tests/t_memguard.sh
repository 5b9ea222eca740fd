#!/bin/bash
# t_memguard: the OOM killer never chooses. kilovoltd runs in a real memory
# cgroup (v1 or v2, made by the test) of 16 MiB, memory_limit left at auto
# (the cgroup's), and is offered more paced TLS streams than fit at once
# (the mock over TLS, the gateway verifying its chain). Every transfer
# either completes whole with 200 or is refused with 503 and Retry-After
# before anything reaches the provider; some of each; no stream is cut;
# the kernel killed nothing (oom_kill 0) and no worker died; refusals are
# logged once per episode, not once each; the ledger holds no reservation
# and charged exactly the streams that ran. Skipped without a writable
# memory cgroup, and under ASan (its shadow memory does not fit 16 MiB).
# 16 MiB, not the 30 of a container: on kilovolt's own TLS record layer
# 1,200 paced TLS streams fit in 24 MiB (cgroup peak 16.2 MiB), so this is
# what it takes to offer more than fit.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	skip "ASan build: a 16 MiB cgroup cannot hold its shadow memory"
fi

LIMIT=$((16 * 1024 * 1024))
N=${KV_MEMGUARD_STREAMS:-1200}
kv_memcg "$LIMIT"

# Enough descriptors: the clients, two per stream in the gateway, the mock.
want_fds=$((3 * N + 1000))
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge "$want_fds" ]; then ulimit -n "$want_fds"; else ulimit -n "$hard"; fi

kv_start_mock_tls server
kv_write_config <<EOF
[server]
client_timeout = 120
upstream_timeout = 120

[upstream openai]
url = https://localhost:$MOCK_TLS_PORT
ca_file = $KV_CERTS/ca.pem
EOF

kv_start_in_cg
check "the daemon runs in the test's cgroup" grep -qx "$KV_PID" "$CG/cgroup.procs"
guards() { [ "$(grep -c "memory guard: .* of $((LIMIT >> 10)) kB (the cgroup's limit)" "$T/kilovoltd.log")" -ge 2 ]; }
check "each worker took the cgroup's limit ($((LIMIT >> 10)) kB)" kv_wait_for 10 guards

ctl() { "$KV_CTL_BIN" -l "$T/ledger" "$@"; }
TOKENS=200
CLIENTS=()

# N streams at once in batches of 50 per curl; each transfer writes
# "code size exit retry-after".
per=50
for ((j = 0; j * per < N; j++)); do
	for ((i = 0; i < per && j * per + i < N; i++)); do
		echo "url = \"$KV_URL/v1/chat/completions\""
		echo 'output = "/dev/null"'
	done >"$T/s.cfg.$j"
	curl -sS -Z --parallel-max $per --parallel-immediate -m 120 -K "$T/s.cfg.$j" \
		-w '%{http_code} %{size_download} %{exitcode} %header{retry-after}\n' \
		-H 'Authorization: Bearer sk-guard' -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $TOKENS" -H 'x-mock-delay-ms: 50' \
		-d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Go."}]}' \
		>"$T/s.res.$j" 2>"$T/s.err.$j" &
	kv_track $!
	CLIENTS+=($!)
done
for p in "${CLIENTS[@]}"; do wait "$p"; done
res=$(cat "$T"/s.res.*)
ok=$(echo "$res" | awk '$1 == 200 && $3 == 0' | wc -l)
refused=$(echo "$res" | awk '$1 == 503 && $3 == 0 && $4 == 1' | wc -l)
echo "# $N offered in $((LIMIT >> 20)) MiB: $ok completed, $refused refused (cgroup peak" \
	"$(cat "$CG/memory.max_usage_in_bytes" "$CG/memory.peak" 2>/dev/null | head -n 1) bytes, limit hits" \
	"$(cat "$CG/memory.failcnt" 2>/dev/null || awk '$1 == "max" { print $2 }' "$CG/memory.events")," \
	"page cache: $(awk '$1 == "total_cache" || $1 == "file" { print $2 }' "$CG/memory.stat") bytes)"
check_eq "$N transfers ended" "$(echo "$res" | grep -c .)" "$N"
check_eq "each one completed (200) or was refused (503, Retry-After: 1)" $((ok + refused)) "$N"
check "more streams than fit: some were refused ($refused)" test "$refused" -ge 1
check "... and many completed ($ok)" test "$ok" -ge 100
check_eq "every completed stream the same length" \
	"$(echo "$res" | awk '$1 == 200 { print $2 }' | sort -u | wc -l)" 1
check_eq "no stream was cut (the mock saw no abort)" "$(kv_mock_stat aborted_streams "$MOCK_TLS_PORT" https)" 0
check_eq "the kernel killed nothing in the cgroup" "$(oom_kills)" 0
check "the master is alive" kv_alive "$KV_PID"
n650=$(grep -c 'KV0650' "$T/kilovoltd.log")
check "refusing was logged once per episode ($n650 times for $refused refusals)" \
	test "$n650" -ge 1 -a "$n650" -le $((refused / 10 + 2))
# The provider saw only the streams that ran; the ledger charged just them.
check_eq "the mock received only the admitted requests" \
	"$(grep -c '^POST /v1/chat/completions' "$MOCK_TLS_LOG")" "$ok"
kv_wait_for 10 bash -c "[ \"\$($KV_CTL_BIN -l $T/ledger show $(id_of sk-guard) --json | jq .reserved_nusd)\" = 0 ]"
check_eq "no reservation is left" "$(ctl show "$(id_of sk-guard)" --json | jq .reserved_nusd)" 0
check_eq "the ledger counts the output tokens of the streams that ran" \
	"$(ctl show "$(id_of sk-guard)" --json | jq .output_tokens)" $((ok * TOKENS))

kv_stop
cg_remove
kv_finish
