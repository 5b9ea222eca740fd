#!/bin/bash
# t_cluster: three kilovolt hosts (three daemons, their own ports and
# ledgers) share one budget through leases from a real redis-server started
# here (private port and unix socket, a password, AOF with fsync always).
#  - 300 concurrent requests round-robin over the hosts, on a key whose
#    budget fits exactly M: spend never above the budget, at least M minus
#    hosts x the largest lease (in requests) admitted, the exact figures in
#    Redis, in kvctl cluster and in the ledgers, the mock saw only the 200s;
#  - a key's rpm holds across hosts: 10 on host a leave about 10 of 20 for
#    host b; and concurrent load on two hosts admits at most L plus the
#    refill of the time it ran (docs/cluster.md), the rest 429 + retry-after;
#  - kvctl budget on one host reaches the others within a second or so;
#  - kvctl reset (and the admin API's) on one host resets the key's spend on
#    every host and in Redis; with the master down it refuses (KV0850);
#  - kill -9 of a host mid-load: the others keep serving, its lease expires
#    and stays counted, and after it comes back the figures are exact;
#  - Redis stopped mid-load: the closed host refuses past its lease with 503
#    and retry-after (the mock sees none of those), the open host admits
#    against the last known budget; Redis back: reconciled, no double count.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v redis-server >/dev/null || skip "redis-server not installed"
command -v redis-cli >/dev/null || skip "redis-cli not installed"
command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C
KV_TIMEOUT=${KV_TIMEOUT:-400}

RPW=kv-test-redis-Pa55-$$
export KV_TEST_REDIS_PW=$RPW
export KV_TEST_ADMIN=kv-test-admin-$$-token
RPORT=$(kv_free_port)
RSOCK=$T/redis.sock
KEY=sk-kvtest-cluster-shared-30103
KEYRL=sk-kvtest-cluster-rpm-47712
KEYRL2=sk-kvtest-cluster-rpm2-81344
KEYRL3=sk-kvtest-cluster-tpm-55120
TPM_L=1200	# tpm of the key under concurrent load on two hosts
RL_L=24		# rpm of the key under concurrent load on two hosts
M=20		# max_tokens; the mock streams exactly that many
N=100		# requests the budget fits
LEASE_MAX=10	# requests in the largest lease one host holds

rcli() { redis-cli -s "$RSOCK" -a "$RPW" --no-auth-warning "$@"; }

redis_start() {
	redis-server --port "$RPORT" --bind 127.0.0.1 --unixsocket "$RSOCK" \
		--unixsocketperm 700 --requirepass "$RPW" --dir "$T" \
		--appendonly yes --appendfsync always --save '' \
		--logfile "$T/redis.log" </dev/null &
	REDIS_PID=$!
	kv_track "$REDIS_PID"
	kv_wait_for 10 sh -c "redis-cli -s '$RSOCK' -a '$RPW' --no-auth-warning ping 2>/dev/null | grep -q PONG"
}

redis_stop() {
	kv_kill "$REDIS_PID" 10
	wait "$REDIS_PID" 2>/dev/null
}

# Prices (nano-dollars per 1M tokens) that make a request's real cost equal
# its reservation, as in t_budget: body bytes and body/4 input tokens both
# round up to one nano-dollar, M output tokens cost M x 1000.
BODY='{"model":"kv-cl-1","max_tokens":'$M',"messages":[{"role":"user","content":"one budget, three hosts"}]}'
B=${#BODY}
R=$((($B * 1000 + M * 1000000000 + 999999) / 1000000))
A=$((($B / 4 * 1000 + M * 1000000000 + 999999) / 1000000))
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BUDGET=$((N * R))
echo "# reservation $R nUSD, real cost $A, budget $BUDGET ($N requests)"

# host_start NAME [on_redis_down] [redis URL]: a daemon with its own config
# $T/NAME.ini, ledger $T/NAME.ledger, log $T/kilovoltd-NAME.log.
# Sets PORT_NAME and PID_NAME.
host_start() {
	local name=$1 down=${2:-closed} url=${3:-unix:$RSOCK} port i
	port=$(eval echo "\${PORT_$name:-}")
	if [ -z "$port" ]; then
		port=$(kv_free_port)
		eval "SPORT_$name=$(kv_free_port)"
		KV_PORT=$port KV_STATUS_PORT=$(eval echo "\$SPORT_$name") kv_write_config <<EOF
[server]
ledger = $T/$name.ledger
shutdown_timeout = 3
admin_token = env:KV_TEST_ADMIN

[price kv-cl*]
input = 0.000001
output = 1.00

[key shared]
key = $KEY
budget = $(usd $BUDGET)

[key limited]
key = $KEYRL
rpm = 20

[key limited2]
key = $KEYRL2
rpm = $RL_L

[key limited3]
key = $KEYRL3
tpm = $TPM_L

[cluster]
redis = $url
password = env:KV_TEST_REDIS_PW
host_id = $name
lease_min = $(usd $((2 * R)))
lease_max = $(usd $((LEASE_MAX * R)))
lease_share = 40
lease_ttl = 4
on_redis_down = $down
EOF
		mv "$T/kilovolt.ini" "$T/$name.ini"
		eval "PORT_$name=$port"
	fi
	kv_start_host "$name" "$port"
	eval "PID_$name=$KV__PID"
}

hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
kfield() { hctl "$1" keys --json | jq -r ".keys[] | select(.label == \"shared\") | $2"; }
rkey() { echo "kv:$(printf %s "$KEY" | sha256sum | cut -d' ' -f1):0"; }
rfield() { rcli hget "$(rkey)" "$1"; }
# What a host has spent in this period (Redis counts it from the same zero,
# the last reset).
host_spent() { kfield "$1" .spent_nusd; }
spent_sum() { echo $(($(host_spent a) + $(host_spent b) + $(host_spent c))); }

# again H: how often H logged that it synced again after an outage.
again() { grep -c 'leases synced with Redis again' "$T/kilovoltd-$1.log"; }
synced_again() { [ "$(again "$1")" -gt "$2" ]; }

# synced H: the host has leased for the key (its lease fields are set).
synced() { [ "$(kfield "$1" '.cluster.lease_expires_ms // 0')" != 0 ]; }

# client OUT PORT: one request, retried (as SDKs do) on 503 up to 40 times.
client() {
	local out=$1 port=$2 try code
	for ((try = 0; try < 40; try++)); do
		code=$(curl -sS -m 60 -o "$out.body" -D "$out.head" -w '%{http_code}' \
			-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
			-H "x-mock-tokens: $M" -H 'x-mock-first-delay-ms: 50' \
			--data-binary "$BODY" "http://127.0.0.1:$port/v1/chat/completions" 2>>"$out.err")
		[ "$code" = 503 ] || break
		echo 503 >>"$out.503"
		sleep 0.2
	done
	echo "$code" >"$out.code"
}

count() { cat "$1"/*.code 2>/dev/null | grep -c "^$2\$"; }

# A TCP relay to Redis for host c: SIGSTOP on it partitions c from Redis
# (and leaves what c sent queued), SIGCONT heals the partition.
relay_start() {
	RELAY_PORT=$(kv_free_port)
	python3 -c '
import socket, sys, threading
lp, rp = int(sys.argv[1]), int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", lp)); ls.listen(64)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    for x in (a, b):
        try: x.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    c, _ = ls.accept()
    try: u = socket.create_connection(("127.0.0.1", rp))
    except OSError: c.close(); continue
    for a, b in ((c, u), (u, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
' "$RELAY_PORT" "$RPORT" </dev/null >"$T/relay.log" 2>&1 &
	RELAY_PID=$!
	kv_track "$RELAY_PID"
	kv_wait_for 5 sh -c "exec 3<>/dev/tcp/127.0.0.1/$RELAY_PORT" 2>/dev/null
}

kv_start_mock
redis_start
relay_start
host_start a
host_start b
host_start c closed "redis://127.0.0.1:$RELAY_PORT"	# c over TCP through the relay
for h in a b c; do
	check "host $h leased for the key within 5 s" kv_wait_for 5 synced $h
done
check_eq "Redis holds the key's budget" "$(rfield budget)" $BUDGET
check "committed in Redis (all leases) is within the budget" test "$(rfield C)" -le $BUDGET

# ---- 300 concurrent requests, round-robin, room for N ---------------------------

mkdir -p "$T/l"
pids=()
hosts=(a b c)
for i in $(seq 0 299); do
	h=${hosts[$((i % 3))]}
	client "$T/l/$i" "$(eval echo "\$PORT_$h")" &
	pids+=($!)
done
wait "${pids[@]}"
n200=$(count "$T/l" 200)
n402=$(count "$T/l" 402)
n503=$(cat "$T"/l/*.503 2>/dev/null | wc -l)
echo "# 300 concurrent: $n200 x 200, $n402 x 402 (503s retried: $n503), others:" \
	"$(cat "$T"/l/*.code | grep -vx -e 200 -e 402 | sort | uniq -c | tr '\n' ' ')"
check "at most $N of 300 admitted ($n200)" test "$n200" -le $N
check "at least N - 3 x largest lease admitted ($n200 >= $((N - 3 * LEASE_MAX)))" \
	test "$n200" -ge $((N - 3 * LEASE_MAX))
check_eq "every request ends 200 or 402" "$((n200 + n402))" 300
# (the mock counts the stats request that asks, too)
check_eq "the mock served exactly the admitted requests" "$(kv_mock_stat requests)" $((n200 + 1))
idle() { for h in a b c; do [ "$(kfield $h .reserved_nusd)" = 0 ] || return 1; done; }
check "every request settled (no reservation left on any host)" kv_wait_for 20 idle
sleep 1.5	# settled spend reaches Redis within a second
total=$(spent_sum)
check_eq "the three ledgers' spend is exactly the admitted requests" "$total" $((n200 * R))
check "spend is within the budget" test "$total" -le $BUDGET
for h in a b c; do
	check_eq "host $h holds no reservation" "$(kfield $h .reserved_nusd)" 0
done
check_eq "Redis's settled spend equals the ledgers'" "$(rfield S)" "$total"
check "Redis's committed spend is within the budget" test "$(rfield C)" -le $BUDGET
hctl a cluster --json >"$T/cluster.json"
check_eq "kvctl cluster: the key's spend" \
	"$(jq -r '.keys[] | select(.label == "shared") | .spent_nusd' "$T/cluster.json")" "$total"
check_eq "kvctl cluster: the three hosts' spend adds up" \
	"$(jq -r '[.keys[] | select(.label == "shared") | .hosts[].spent_nusd] | add' "$T/cluster.json")" "$total"
check_eq "kvctl cluster lists the three hosts" \
	"$(jq -r '[.hosts[].host] | sort | join(",")' "$T/cluster.json")" "a,b,c"
dollars() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
curl -sS -m 10 "http://127.0.0.1:$SPORT_a/metrics" >"$T/metrics.txt"
check "/metrics: the cluster-wide spend of the key" grep -qx \
	"kilovolt_key_cluster_spent_dollars{key=\"[0-9a-f]*\",label=\"shared\"} $(dollars "$total")" "$T/metrics.txt"
check "/metrics: this host's unused lease of the key" \
	grep -q '^kilovolt_key_lease_dollars{key="[0-9a-f]*",label="shared"} ' "$T/metrics.txt"
check "/metrics: lease syncs are counted" grep -q '^kilovolt_cluster_syncs_total [1-9]' "$T/metrics.txt"
check_eq "/status.json: the key's cluster-wide spend" "$(curl -sS -m 10 \
	"http://127.0.0.1:$SPORT_a/status.json" | jq -r '.keys[] | select(.label == "shared") |
	.cluster.cluster_spent_nusd')" "$total"
hctl a cluster >"$T/cluster.txt"
check "kvctl cluster's table names the key" grep -q "shared" "$T/cluster.txt"
# The status page as served (no JavaScript runs here): the cluster's state
# and, per key, the lease and the cluster-wide spend.
usd6() { printf '$%d.%06d' $(($1 / 1000000000)) $(($1 % 1000000000 / 1000)); }
curl -sS -m 10 "http://127.0.0.1:$SPORT_a/" >"$T/page.html"
check "status page: the cluster card says Redis is up" \
	grep -q 'id="cluster-state".*Redis up' "$T/page.html"
sed -n '/<table id="cluster">/,/<\/table>/p' "$T/page.html" | grep '>shared<' >"$T/page-row.html"
check "status page: the key has a row in the cluster leases table" test -s "$T/page-row.html"
check "status page: the row shows the cluster-wide spend ($(usd6 "$total"))" \
	grep -qF ">$(usd6 "$total")<" "$T/page-row.html"
check "status page: the row shows this host's lease expiry" grep -q '>in [0-9.]* s<' "$T/page-row.html"
check_eq "/status.json: Redis is up" "$(curl -sS -m 10 "http://127.0.0.1:$SPORT_a/status.json" |
	jq -r .cluster.redis_up)" true

# ---- a rate limit drains with the whole cluster's traffic ---------------------

# rl_try OUT KEY PORT: one request on KEY, retried as an SDK does (after
# a short pause rather than the whole retry-after) while the refusal is
# only for this host's lease (a 503 for the budget's, a 429 saying the
# rate lease is being renewed). Prints the final status.
rl_try() {
	local try code
	for ((try = 0; try < 20; try++)); do
		code=$(curl -sS -m 30 -o "$1.body" -D "$1.head" -w '%{http_code}' \
			-H "Authorization: Bearer $2" -H "x-mock-tokens: $M" \
			--data-binary "$BODY" "http://127.0.0.1:$3/v1/chat/completions")
		[ "$code" = 503 ] || { [ "$code" = 429 ] && grep -q 'being renewed' "$1.body"; } ||
			break
		echo "$code" >>"$1.lease"
		sleep 0.2
	done
	echo "$code"
}
# rl_burst PORT N OUT: N requests one after another on the limited key.
rl_burst() {
	local i
	for ((i = 0; i < $2; i++)); do
		rl_try "$3.$i" "$KEYRL" "$1"
	done >"$3"
}
rl_burst "$PORT_a" 10 "$T/rl-a"
check_eq "rpm 20: host a admits its 10" "$(grep -c '^200$' "$T/rl-a")" 10
sleep 1.5	# one sync tells b about a's requests
t0=$(date +%s)
rl_burst "$PORT_b" 20 "$T/rl-b"
rb=$(grep -c '^200$' "$T/rl-b")
# the bucket refills by one request every 3 s while b's burst runs
refill=$((($(date +%s) - t0 + 3) / 3 + 1))
echo "# rpm 20: after 10 on a, b admitted $rb of 20 ($(grep -c '^429$' "$T/rl-b") x 429), refill allowance $refill"
check "rpm 20: host b admits only what a left (10 + refill $refill, not 20: $rb)" \
	test "$rb" -le $((10 + refill))
check_eq "rpm 20: b refuses the rest with 429" "$(grep -c '^429$' "$T/rl-b")" $((20 - rb))

# ---- rpm under concurrent load on two hosts: at most L + refill ---------------

# rl_client PORT OUT N: N requests on the second limited key, one after
# another (lease refusals retried, rate-limit refusals not); each one's
# final status and headers kept.
rl_client() {
	local i
	for ((i = 0; i < $3; i++)); do
		rl_try "$2.$i" "$KEYRL2" "$1" >>"$2.codes"
		sleep 0.05
	done
}
mkdir -p "$T/q"
mock_before=$(kv_mock_stat requests)
t0=$(date +%s%N)
pids=()
for i in 1 2 3 4 5 6; do	# 6 clients per host, 12 requests each: 144 offered
	rl_client "$PORT_a" "$T/q/a$i" 12 &
	pids+=($!)
	rl_client "$PORT_b" "$T/q/b$i" 12 &
	pids+=($!)
done
wait "${pids[@]}"
t1=$(date +%s%N)
qa=$(cat "$T"/q/a*.codes | grep -c '^200$')
qb=$(cat "$T"/q/b*.codes | grep -c '^200$')
q429=$(cat "$T"/q/*.codes | grep -c '^429$')
qlease=$(cat "$T"/q/*.lease 2>/dev/null | wc -l)
qall=$(cat "$T"/q/*.codes | wc -l)
ms=$(((t1 - t0) / 1000000))
# The bound (docs/cluster.md): over a span of t, L + L x (t + 0.5 s sync
# + 0.5 s margin for the reply) / 60 s, rounded up.
qmax=$((RL_L + (RL_L * (ms + 1000) + 59999) / 60000))
echo "# rpm $RL_L, 2 hosts x 6 clients x 12: a $qa + b $qb = $((qa + qb)) x 200," \
	"$q429 x 429 of $qall in $ms ms (bound $qmax; lease refusals retried: $qlease)"
check "rpm $RL_L on 2 hosts: at most L + refill admitted ($((qa + qb)) <= $qmax)" \
	test $((qa + qb)) -le "$qmax"
check "rpm $RL_L on 2 hosts: most of L admitted ($((qa + qb)) >= $((RL_L / 2)))" \
	test $((qa + qb)) -ge $((RL_L / 2))
check "rpm $RL_L: both hosts admitted some ($qa, $qb)" test "$qa" -gt 0 -a "$qb" -gt 0
check_eq "rpm $RL_L: every other request is a 429" "$((qa + qb + q429))" 144
no_retry=0
for f in "$T"/q/*.head; do
	grep -q '^HTTP/1.1 429' "$f" || continue
	grep -qi '^retry-after: [1-9]' "$f" || no_retry=$((no_retry + 1))
done
check_eq "rpm $RL_L: every 429 carries retry-after" "$no_retry" 0
check_eq "rpm $RL_L: the mock saw only the admitted requests" \
	"$(kv_mock_stat requests)" $((mock_before + qa + qb + 1))
rl_used() { hctl "$1" keys --json | jq -r '.keys[] | select(.label == "limited2") |
	.cluster.rpm_used // 0'; }
sleep 1
rlkey="kv:$(printf %s "$KEYRL2" | sha256sum | cut -d' ' -f1):rl"
check_eq "Redis counts every admitted request as used" \
	"$(($(rcli hget "$rlkey" ru:a) + $(rcli hget "$rlkey" ru:b)))" $((qa + qb))
check_eq "host a's ledger counts its admitted requests" "$(rl_used a)" "$qa"
check_eq "kvctl cluster: each host's rate lease use adds up to the admitted" \
	"$(hctl a cluster --json | jq -r '[.keys[] | select(.label == "limited2") |
	.rate_hosts[].requests_used] | add')" $((qa + qb))
check "kvctl cluster's table shows the rate leases" sh -c \
	"'$KV_CTL_BIN' -c '$T/a.ini' cluster | grep -q 'rate a .*requests leased'"

# ---- tpm under concurrent load on two hosts -------------------------------------

# Each request reserves its body bytes + max_tokens and then counts what the
# mock reports (prompt 25 + completion $M): the bound is on counted tokens.
mkdir -p "$T/tq"
mock_before=$(kv_mock_stat requests)
t0=$(date +%s%N)
pids=()
for i in 1 2 3 4; do	# 4 clients per host, 10 requests each: 80 offered
	( for ((j = 0; j < 10; j++)); do
		rl_try "$T/tq/a$i.$j" "$KEYRL3" "$PORT_a"; sleep 0.05; done >"$T/tq/a$i.codes" ) &
	pids+=($!)
	( for ((j = 0; j < 10; j++)); do
		rl_try "$T/tq/b$i.$j" "$KEYRL3" "$PORT_b"; sleep 0.05; done >"$T/tq/b$i.codes" ) &
	pids+=($!)
done
wait "${pids[@]}"
t1=$(date +%s%N)
ta=$(cat "$T"/tq/a*.codes | grep -c '^200$')
tb=$(cat "$T"/tq/b*.codes | grep -c '^200$')
t429=$(cat "$T"/tq/*.codes | grep -c '^429$')
ms=$(((t1 - t0) / 1000000))
per=$((25 + M))
tmax=$((TPM_L + (TPM_L * (ms + 1000) + 59999) / 60000))
sleep 1	# the last use reaches Redis
rl3="kv:$(printf %s "$KEYRL3" | sha256sum | cut -d' ' -f1):rl"
tused=$(($(rcli hget "$rl3" tu:a) + $(rcli hget "$rl3" tu:b)))
echo "# tpm $TPM_L, 2 hosts x 4 clients x 10: a $ta + b $tb x 200 ($tused tokens)," \
	"$t429 x 429 in $ms ms (bound $tmax tokens)"
check_eq "tpm: Redis counts exactly the admitted requests' tokens" "$tused" $(((ta + tb) * per))
check "tpm $TPM_L on 2 hosts: counted tokens within L + refill ($tused <= $tmax)" \
	test "$tused" -le "$tmax"
check "tpm $TPM_L on 2 hosts: most of L used ($tused >= $((TPM_L / 2)))" \
	test "$tused" -ge $((TPM_L / 2))
check_eq "tpm: every other request is a 429" "$((ta + tb + t429))" 80
check_eq "tpm: the mock saw only the admitted requests" \
	"$(kv_mock_stat requests)" $((mock_before + ta + tb + 1))
check "tpm: a 200 carries the x-ratelimit token headers" \
	grep -qi '^x-ratelimit-remaining-tokens: [0-9]' $(grep -l '^HTTP/1.1 200' "$T"/tq/*.head | head -n 1)
check_eq "tpm: no tokens left reserved on a" "$(hctl a keys --json | jq -r '.keys[] |
	select(.label == "limited3") | .cluster.tpm_reserved')" 0

# ---- a budget raised on one host reaches the others --------------------------

NEWB=$((BUDGET + 1000 * R))
hctl a budget shared "$(usd $NEWB)" >/dev/null
budget_is() { [ "$(kfield "$1" .budget_nusd)" = "$2" ]; }
check "host b sees the raised budget within 2 s" kv_wait_for 2 budget_is b $NEWB
check "host c sees the raised budget within 2 s" kv_wait_for 2 budget_is c $NEWB
check_eq "Redis holds the raised budget" "$(rfield budget)" $NEWB
mkdir -p "$T/r"
client "$T/r/c" "$PORT_c"
check_eq "host c admits under the raised budget" "$(cat "$T/r/c.code")" 200

# ---- kvctl reset on one host resets the key on every host ---------------------

sleep 1.5	# c's request above reaches Redis first
check "before the reset, the key has spend in Redis" test "$(rfield S)" -gt 0
hctl a reset shared >"$T/reset.out" 2>&1
check_eq "kvctl reset in a cluster succeeds" "$?" 0
check "kvctl reset says it reset every host" grep -q 'on every host' "$T/reset.out"
zeroed() { for h in a b c; do [ "$(kfield $h .spent_nusd)" = 0 ] || return 1; done; }
check "every host's spend is 0 within 2 s" kv_wait_for 2 zeroed
check_eq "Redis's settled spend is 0 after the reset" "$(rfield S)" 0
check_eq "Redis counts one reset" "$(rfield Z)" 1
check "committed in Redis is only the unused leases (<= 3 x lease_max)" \
	test "$(rfield C)" -le $((3 * (LEASE_MAX + 2) * R))
hctl a cluster --json >"$T/cluster-reset.json"
check_eq "kvctl cluster: no host has spend after the reset" \
	"$(jq -r '[.keys[] | select(.label == "shared") | .hosts[].spent_nusd] | add' \
	"$T/cluster-reset.json")" 0
client "$T/r/b2" "$PORT_b"
check_eq "host b admits after the reset" "$(cat "$T/r/b2.code")" 200
sleep 1.5
check_eq "Redis counts the new request only" "$(rfield S)" "$R"
check_eq "the ledgers count the new request only" "$(spent_sum)" "$R"
# The admin API's reset does the same, asked on host c.
KID=$(kfield c .id)
code=$(curl -sS -m 10 -o "$T/admin-reset.json" -w '%{http_code}' -X POST \
	-H "Authorization: Bearer $KV_TEST_ADMIN" "http://127.0.0.1:$SPORT_c/keys/$KID/reset")
check_eq "admin API reset in a cluster: 202 (done by the master)" "$code" 202
check "after the admin reset every host's spend is 0 within 2 s" kv_wait_for 2 zeroed
sleep 1
check_eq "Redis's settled spend is 0 after the admin reset" "$(rfield S)" 0
check_eq "Redis counts two resets" "$(rfield Z)" 2

# ---- kill -9 of one host mid-load ----------------------------------------------

mock_before=$(kv_mock_stat requests)
mkdir -p "$T/k"
pids=()
for i in $(seq 0 59); do
	h=${hosts[$((i % 3))]}
	[ "$h" = b ] && [ "$i" -ge 30 ] && h=a	# b is gone by then
	( sleep "0.$((i % 10))"; client "$T/k/$i" "$(eval echo "\$PORT_$h")" ) &
	pids+=($!)
done
sleep 0.5
workers=$(ps -o pid= --ppid "$PID_b")
kill -KILL "$PID_b" $workers 2>/dev/null
wait "${pids[@]}" 2>/dev/null
ok_ac=0
for i in $(seq 0 59); do
	case $((i % 3)) in 1) [ "$i" -lt 30 ] && continue ;; esac
	[ "$(cat "$T/k/$i.code")" = 200 ] && ok_ac=$((ok_ac + 1))
done
check "hosts a and c served their share while b died ($ok_ac of 50)" test "$ok_ac" -ge 48
expired() { hctl a cluster --json | jq -e '.keys[] | select(.label == "shared") |
	.hosts[] | select(.host == "b") | .expired' >/dev/null; }
check "host b's lease expires in Redis" kv_wait_for 8 expired
check "b's lease stays counted: committed within the budget" test "$(rfield C)" -le $NEWB
check "b's unsettled lease stays counted in committed" \
	test "$(rfield C)" -ge $(($(rfield S) + $(rcli hget "$(rkey)" g:b) - $(rcli hget "$(rkey)" u:b)))
host_start b
check "host b synced again after its restart" kv_wait_for 5 synced b
sleep 1.5
total=$(spent_sum)
check_eq "after b's return, Redis's spend equals the three ledgers'" "$(rfield S)" "$total"
check "spend is within the budget" test "$total" -le $NEWB

# ---- host c cut off from Redis, then the partition heals ----------------------

c_before=$(again c)
kill -STOP "$RELAY_PID"
mkdir -p "$T/p"
sleep 1
for i in $(seq 1 12); do	# c (closed): its lease, then 503s; a and b serve on
	h=${hosts[$((i % 3))]}
	curl -sS -m 30 -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $KEY" \
		-H "x-mock-tokens: $M" --data-binary "$BODY" \
		"http://127.0.0.1:$(eval echo "\$PORT_$h")/v1/chat/completions" >"$T/p/$h.$i"
	sleep 0.5
done
pa=$(cat "$T"/p/[ab].* | grep -c '^200$')
echo "# partition: a and b $pa x 200 of 8; c: $(cat "$T"/p/c.* | sort | uniq -c | tr '\n' ' ')"
check_eq "while c is cut off, a and b serve" "$pa" 8
check_eq "c (closed) refuses with 503 once its lease expired" "$(cat "$T/p/c.11")" 503
kill -CONT "$RELAY_PID"
check "c syncs again after the partition heals" kv_wait_for 15 synced_again c "$c_before"
sleep 1.5
total=$(spent_sum)
check_eq "after the partition heals, Redis's spend equals the ledgers' (nothing double-counted)" \
	"$(rfield S)" "$total"
check "committed within the budget after the partition" test "$(rfield C)" -le $NEWB

# ---- Redis stopped mid-load: closed (a) and open (c) ---------------------------

# Host c goes open; its restart keeps its ledger and its place.
kill -TERM "$PID_c"; wait "$PID_c" 2>/dev/null
sed -i 's/^on_redis_down = closed/on_redis_down = open/' "$T/c.ini"
host_start c
check "host c (open) synced after its restart" kv_wait_for 5 synced c
sleep 1
again_a=$(again a) again_b=$(again b) again_c=$(again c)
cap_a=$(kfield a .cluster.lease_cap_nusd)
spent_a0=$(kfield a .spent_nusd)
redis_stop
mock_before=$(kv_mock_stat requests)
mkdir -p "$T/d"
# a: 2 x its lease's worth, one at a time, no retries: past the lease -> 503
na=$(((cap_a - spent_a0) / R + 5))
for i in $(seq 1 "$na"); do
	curl -sS -m 30 -o "$T/d/a$i.body" -D "$T/d/a$i.head" -w '%{http_code}\n' \
		-H "Authorization: Bearer $KEY" -H "x-mock-tokens: $M" \
		--data-binary "$BODY" "http://127.0.0.1:$PORT_a/v1/chat/completions" >"$T/d/a$i.code"
done
sleep 2.5	# past OPEN_AFTER_MS: c admits against the last known budget
curl -sS -m 10 "http://127.0.0.1:$SPORT_a/" >"$T/page-down.html"
check "status page: with Redis stopped the cluster card says Redis down" \
	grep -q 'id="cluster-state".*Redis down' "$T/page-down.html"
for i in $(seq 1 30); do
	curl -sS -m 30 -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $KEY" \
		-H "x-mock-tokens: $M" --data-binary "$BODY" \
		"http://127.0.0.1:$PORT_c/v1/chat/completions" >"$T/d/c$i.code"
done
a200=$(cat "$T"/d/a*.code | grep -c '^200$')
a503=$(cat "$T"/d/a*.code | grep -c '^503$')
c200=$(cat "$T"/d/c*.code | grep -c '^200$')
echo "# Redis down: a (closed) $a200 x 200, $a503 x 503 of $na; c (open) $c200 x 200 of 30"
check "closed: a refuses past its lease with 503" test "$a503" -ge 5
check "closed: a's spend stays within its lease" test "$(kfield a .spent_nusd)" -le "$cap_a"
check "closed: a 503 carries retry-after" grep -qi '^retry-after:' $(grep -l '^HTTP/1.1 503' "$T"/d/a*.head | head -n 1)
check_eq "the mock saw only the admitted requests" "$(kv_mock_stat requests)" $((mock_before + a200 + c200 + 1))
check_eq "open: c admits against the last known budget" "$c200" 30
check "c logged the outage" grep -q KV0758 "$T/kilovoltd-c.log"
redis_start
check "host a syncs again once Redis is back" kv_wait_for 10 synced_again a "$again_a"
check "host b syncs again once Redis is back" kv_wait_for 10 synced_again b "$again_b"
check "host c syncs again once Redis is back" kv_wait_for 10 synced_again c "$again_c"
sleep 1.5
total=$(spent_sum)
check_eq "after Redis's return, its spend equals the ledgers' (nothing double-counted)" \
	"$(rfield S)" "$total"
check "c's overdraft was reconciled and logged" grep -q KV0757 "$T/kilovoltd-c.log"
check "c counts the overdraft in its metrics" \
	test "$(hctl c status --json | jq -r '.counters.cluster_overdraft_nusd_total // .cluster_overdraft_nusd_total // 0')" -gt 0
check "committed covers the spend" test "$(rfield C)" -ge "$total"

# ---- a host with the wrong password leases nothing -----------------------------

KV_TEST_REDIS_PW=not-the-password host_start d
sleep 2
check "host d: Redis refused its AUTH, logged once" \
	test "$(grep -c KV0753 "$T/kilovoltd-d.log")" = 1
check_eq "host d refuses with 503: it has no lease" "$(curl -sS -m 30 -o /dev/null \
	-w '%{http_code}' -H "Authorization: Bearer $KEY" -H "x-mock-tokens: $M" \
	--data-binary "$BODY" "http://127.0.0.1:$PORT_d/v1/chat/completions")" 503
kill -TERM "$PID_d"; wait "$PID_d" 2>/dev/null

# ---- a host that stops returns its lease ---------------------------------------

kill -TERM "$PID_a"; wait "$PID_a" 2>/dev/null
check_eq "host a returned its lease when it stopped (granted = spent in Redis)" \
	"$(rcli hget "$(rkey)" g:a)" "$(rcli hget "$(rkey)" u:a)"

# ---- a reset with the master down is refused, not done halfway -----------------

spent_a=$(kfield a .spent_nusd)
s_before=$(rfield S)
hctl a reset shared >"$T/reset-down.out" 2>&1
check_eq "kvctl reset with host a's master down exits 2" "$?" 2
check "it says why (KV0850) and what to do" grep -q 'KV0850.*Nothing was reset' "$T/reset-down.out"
check_eq "host a's spend is unchanged" "$(kfield a .spent_nusd)" "$spent_a"
check_eq "Redis's spend is unchanged" "$(rfield S)" "$s_before"
# Withdrawn, not left for the next master: a comes back and resets nothing.
host_start a
check "host a synced again after its restart" kv_wait_for 5 synced a
sleep 1.5
check_eq "the withdrawn reset was not done when a came back" "$(kfield a .spent_nusd)" "$spent_a"
check_eq "Redis still counts two resets" "$(rfield Z)" 2

# ---- a host that was down during a reset follows it when it comes back --------

client "$T/r/c3" "$PORT_c"
sleep 1
spent_c=$(kfield c .spent_nusd)
check "host c has spend before it stops ($spent_c)" test "$spent_c" -gt 0
kill -TERM "$PID_c"; wait "$PID_c" 2>/dev/null
hctl b reset shared >/dev/null 2>&1
check_eq "a reset on b while c is down succeeds" "$?" 0
spent0() { [ "$(kfield "$1" .spent_nusd)" = 0 ]; }
check "a is at 0 within 2 s" kv_wait_for 2 spent0 a
check "b is at 0 within 2 s" kv_wait_for 2 spent0 b
host_start c
check "host c synced after its restart" kv_wait_for 5 synced c
sleep 1
check_eq "host c cleared what the reset cleared in Redis" "$(kfield c .spent_nusd)" 0
check_eq "Redis's spend equals the three ledgers' after c's return" "$(rfield S)" "$(spent_sum)"
check_eq "Redis counts three resets" "$(rfield Z)" 3

KV_KILLS_WORKERS=1	# b's workers were killed on purpose
kv_finish
