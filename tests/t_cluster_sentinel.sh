#!/bin/bash
# t_cluster_sentinel: [cluster] redis = redis+sentinel://... against a real
# master, its replica and a Sentinel (redis-server --sentinel) started here:
#  - the host asks the Sentinel for the master and leases from it;
#  - the master is killed: the Sentinel promotes the replica, the host
#    follows (it asks again at the drop) and serves from the new master;
#    the spend is there, counted once (S equals the ledger's).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v redis-server >/dev/null || skip "redis-server not installed"
command -v redis-cli >/dev/null || skip "redis-cli not installed"
command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
KV_TIMEOUT=${KV_TIMEOUT:-200}
KEY=sk-kvtest-cluster-sentinel-38211

MPORT=$(kv_free_port)
RPORT=$(kv_free_port)
SPORT=$(kv_free_port)
# node PORT [ARGS]: a redis-server on PORT, AOF with fsync always; PID_PORT.
node() {
	redis-server --port "$1" --bind 127.0.0.1 --dir "$T" --appendonly yes \
		--appendfilename "ao-$1.aof" --appenddirname "ad-$1" --appendfsync always \
		--save '' --logfile "$T/redis-$1.log" "${@:2}" </dev/null &
	kv_track "$!"
	eval "PID_$1=$!"
	kv_wait_for 10 sh -c "redis-cli -p $1 ping 2>/dev/null | grep -q PONG"
}
node "$MPORT"
node "$RPORT" --replicaof 127.0.0.1 "$MPORT"
printf '%s\n' "port $SPORT" "bind 127.0.0.1" "dir $T" \
	"sentinel monitor kvm 127.0.0.1 $MPORT 1" \
	"sentinel down-after-milliseconds kvm 1000" \
	"sentinel failover-timeout kvm 5000" >"$T/sentinel.conf"
redis-server "$T/sentinel.conf" --sentinel --logfile "$T/sentinel.log" </dev/null &
kv_track "$!"
kv_wait_for 10 sh -c "redis-cli -p $SPORT sentinel get-master-addr-by-name kvm 2>/dev/null |
	grep -q $MPORT" || { fail "the Sentinel monitors the master"; kv_finish; }
kv_wait_for 10 sh -c "redis-cli -p $MPORT info replication | grep -q connected_slaves:1"

printf '%s\n' "[key sentinel]" "key = $KEY" "budget = 1.00" "" "[cluster]" \
	"redis = redis+sentinel://127.0.0.1:$SPORT/kvm" "host_id = sentinel-$$" \
	"lease_ttl = 4" >"$T/cluster.ini"
kv_start_mock
kv_write_config <"$T/cluster.ini"

ask() {
	curl -sS -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" \
		-H 'Content-Type: application/json' -H 'x-mock-tokens: 5' \
		--data-binary '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"$KV_URL/v1/chat/completions"
}
served_within() {
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt $end ]; do
		[ "$(ask)" = 200 ] && return 0
		sleep 0.3
	done
	return 1
}
rkey() { echo "kv:$(printf %s "$KEY" | sha256sum | cut -d' ' -f1):0"; }
spent() { kv_ctl keys --json | jq -r '.keys[] | select(.label == "sentinel") | .spent_nusd'; }

kv_start
check "the Sentinel named the master" \
	kv_wait_for 20 grep -q "redis: connected to 127.0.0.1:$MPORT" "$KV_LOG"
check "a request is served through the master the Sentinel named" served_within 20
sleep 1.5
check_eq "the master holds the spend" "$(redis-cli -p "$MPORT" hget "$(rkey)" S)" "$(spent)"

# Failover: the master dies, the Sentinel promotes the replica.
kill -KILL "$(eval echo "\$PID_$MPORT")"
check "the Sentinel promoted the replica" kv_wait_for 30 sh -c \
	"redis-cli -p $SPORT sentinel get-master-addr-by-name kvm | grep -q $RPORT"
check "the host followed the failover" \
	kv_wait_for 30 grep -q "redis: connected again to 127.0.0.1:$RPORT" "$KV_LOG"
check "served again, from the new master" served_within 30
sleep 1.5
check_eq "the new master's spend equals the ledger's (counted once)" \
	"$(redis-cli -p "$RPORT" hget "$(rkey)" S)" "$(spent)"
kv_ctl cluster --json >"$T/cluster.json" 2>"$T/cluster.err"
check "kvctl cluster reads the new master through the Sentinel" grep -q "sentinel-$$" "$T/cluster.json"
echo "# after the failover: spend $(spent) nUSD; $(grep -c 'Sentinel .* names' "$KV_LOG")" \
	"master address(es) logged"
kv_stop

kv_finish
