#!/bin/bash
# t_master_stall: no health-checked target can hold the master (issue 34,
# row 3). An https target (tests/hostile_tls) answers each health check with
# session tickets back to back for 8 s before any response head; with
# OpenSSL's auto-retry the check's SSL_read kept on reading them, and the
# master's loop (respawn, lease sync with a real redis-server) stood still
# until the flood ended. Now the read comes back after each ticket and the
# check's 5 s deadline holds. Checked: a worker killed with -9 mid-flood is
# replaced within a generous 3 s (0.5 s typical; the flood ran 8 s), the
# lease sync's last success (kvctl status's cluster.synced_ms, whole
# seconds) is never older than a generous 3 s while the floods run, and the
# target is marked down ("no response head in time").
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq openssl redis-server redis-cli; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
HOSTILE=$top_builddir/tests/hostile_tls
[ -x "$HOSTILE" ] || skip "tests/hostile_tls not built"
KV_KILLS_WORKERS=1

kv_start_mock
kv_certs
"$HOSTILE" -P "$T/hostile.port" -c "$KV_CERTS/server-chain.pem" -k "$KV_CERTS/server.key" \
	-m tickets -b -d 8 -L "$T/hostile.log" 2>>"$T/hostile.err" &
kv_track $!
kv_wait_for 10 test -s "$T/hostile.port" || { fail "start hostile_tls"; kv_finish; }
HPORT=$(cat "$T/hostile.port")

kv_redis_start

kv_write_config <<EOF
[upstream target]
url = https://localhost:$HPORT
ca_file = $KV_CERTS/ca.pem
free_paths = /hostile
health_check = /health
health_interval = 1

[cluster]
redis = unix:$RSOCK
host_id = stall
lease_ttl = 4
EOF
kv_start

status() { kv_ctl status --json; }
synced_ms() { status | jq -r '.cluster.synced_ms'; }
now_ms() { date +%s%3N; }
worker_pid() { status | jq -r '[.workers[] | select(.state == "running") | .pid][0] // empty'; }

kv_wait_for 20 sh -c "[ \"\$($KV_CTL_BIN -c '$T/kilovolt.ini' status --json | jq -r .cluster.synced_ms)\" -gt 0 ]" ||
	fail "the lease sync ran before the flood"
# the first check starts at once; be inside its flood
kv_wait_for 20 sh -c "ss -tn state established '( sport = :$HPORT )' | grep -q $HPORT" ||
	fail "a health check is connected to the hostile target"
sleep 1

# the oldest sync seen, sampled every 0.2 s for 10 s (two floods)
(
	worst=0
	for ((i = 0; i < 50; i++)); do
		age=$(($(now_ms) - $(synced_ms)))
		[ "$age" -gt "$worst" ] && worst=$age
		sleep 0.2
	done
	echo "$worst" >"$T/sync.worst"
) &
SAMPLER=$!

OLD=$(worker_pid)
T0=$(now_ms)
kill -9 "$OLD"
replaced() { local p; p=$(worker_pid); [ -n "$p" ] && [ "$p" != "$OLD" ]; }
kv_wait_for 30 replaced || fail "the killed worker was replaced"
RESPAWN_MS=$(($(now_ms) - T0))
check "the killed worker was replaced within 3 s mid-flood (${RESPAWN_MS} ms)" \
	[ "$RESPAWN_MS" -lt 3000 ]
wait "$SAMPLER"
SYNC_WORST=$(cat "$T/sync.worst")
check "the lease sync never stood still for 3 s (oldest seen ${SYNC_WORST} ms, whole seconds)" \
	[ "$SYNC_WORST" -lt 3000 ]
check "the target was marked down: no response head in time" \
	grep -q 'KV0720.*no response head in time' "$KV_LOG"
check "a check was cut off inside its flood" grep -q 'end=cut' "$T/hostile.log"
echo "# respawn ${RESPAWN_MS} ms, oldest sync ${SYNC_WORST} ms; $(tr '\n' ' ' <"$T/hostile.log")"

kv_finish
