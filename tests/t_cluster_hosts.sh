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
#  - a copied ledger: host a's ledger file copied for a host c with its own
#    host_id; both lease, under different incarnations (a copy draws its
#    own), and together they never spend past the budget;
#  - one host_id, two live instances: the second is refused (KV0765, naming
#    both), leases nothing and serves no metered request, while the first
#    serves on; stopped, the first hands over and the second leases;
#  - a departed host: host d holds an unused grant and is kill -9'd; once
#    its lease has been expired for departed_after, host e's sync returns
#    that unused part to the pool (once, its reported spend kept), and e
#    serves what is left of the budget: never more;
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
# Again with the same NAME: the same config and ledger (a restart).
host_start() {
	local name=$1 id=${2:-} ledger=${3:-} budget=${4:-} port i
	if [ -f "$T/$name.ini" ]; then
		port=$(eval echo "\$PORT_$name")
		ledger=$(sed -n 's/^ledger = //p' "$T/$name.ini")
		echo "---- restart" >>"$T/kilovoltd-$name.log"
	else
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
departed_after = 5
EOF
	mv "$T/kilovolt.ini" "$T/$name.ini"
	eval "PORT_$name=$port"
	fi
	kv_start_host "$name" "$port" "$ledger"
	eval "PID_$name=$KV__PID"
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

# ---- a copied ledger -------------------------------------------------------------

# Host a stops; its ledger is copied for a new host c (a cloned volume),
# and both start. The copy draws an incarnation of its own (its inode and
# host_id differ from those recorded), a keeps its own.
inc_a=$(rcli hget "$(rkey "$K1")" i:a)
check "host a's incarnation is a random 64-bit id" sh -c "echo '$inc_a' | grep -Eq '^[0-9a-f]{16}\$'"
host_stop a
cp "$T/a.ledger" "$T/c.ledger"
host_start a
host_start c c "$T/c.ledger" $BUDGET
check "the copy drew its own incarnation" \
	kv_wait_for 10 grep -q "incarnation .* of host c (a new or copied ledger)" "$T/kilovoltd-c.log"
check_eq "restarted on its own ledger, a drew no new incarnation" \
	"$(grep -c 'of host a (a new or copied' "$T/kilovoltd-a.log")" 1
K3=sk-kvtest-copied-$$
before=$(kv_mock_stat requests)
mkdir -p "$T/c3"
pids=()
for ((i = 0; i < 10; i++)); do
	once "$T/c3/a.$i" "$PORT_a" "$K3" & pids+=($!)
	once "$T/c3/c.$i" "$PORT_c" "$K3" & pids+=($!)
done
wait "${pids[@]}"
na=$(cat "$T"/c3/a.*.code | grep -c '^200$')
nc=$(cat "$T"/c3/c.*.code | grep -c '^200$')
echo "# a copied ledger, budget for 10, 10 + 10 concurrent: $na + $nc served;" \
	"$(cat "$T"/c3/*.code | sort | uniq -c | tr '\n' ' ')"
check "both hosts of the copied ledger lease and serve ($na, $nc)" test "$na" -ge 1 -a "$nc" -ge 1
check "a copied ledger: at most the budget served ($((na + nc)) <= 10)" test $((na + nc)) -le 10
check_eq "a copied ledger: the mock served exactly the admitted requests" \
	"$(($(kv_mock_stat requests) - before - 1))" $((na + nc))
inc_c=$(rcli hget "$(rkey "$K3")" i:c)
check_eq "a keeps its incarnation across the restart" "$(rcli hget "$(rkey "$K3")" i:a)" "$inc_a"
check "the copy's incarnation differs from a's ($inc_c, $inc_a)" \
	test -n "$inc_c" -a "$inc_c" != "$inc_a"
settled_c() { [ "$(kfield a "$K3" .reserved_nusd)" = 0 ] && [ "$(kfield c "$K3" .reserved_nusd)" = 0 ]; }
check "a copied ledger: every request settled" kv_wait_for 20 settled_c
spent3=$(($(kfield a "$K3" .spent_nusd) + $(kfield c "$K3" .spent_nusd)))
check_eq "a copied ledger: the ledgers' spend is the admitted requests'" "$spent3" $(((na + nc) * R))
sleep 1.5
check_eq "a copied ledger: Redis's settled spend equals the ledgers'" \
	"$(rcli hget "$(rkey "$K3")" S)" "$spent3"
host_stop c

# ---- one host_id, two live instances ------------------------------------------

host_stop b
hb() { rcli get kv:hb:a; }
logged() { grep -c -- "$2" "$T/kilovoltd-$1.log"; }
# a copied config: a second instance under host_id a, its own ledger
host_start a2 a "$T/a2.ledger" $BUDGET
check "a second live instance of host_id a is refused (KV0765)" \
	kv_wait_for 10 grep -q KV0765 "$T/kilovoltd-a2.log"
line=$(grep KV0765 "$T/kilovoltd-a2.log" | head -n 1)
echo "# $line"
check "KV0765 names the holder (pid $PID_a) and the refused instance (pid $PID_a2)" \
	sh -c "echo '$line' | grep -q 'pid $PID_a).*pid $PID_a2)'"
check "Redis's host id a stays with the first instance" sh -c "redis-cli -s '$RSOCK' get kv:hb:a | grep -q 'pid $PID_a\$'"
K4=sk-kvtest-clash-$$
before=$(kv_mock_stat requests)
mkdir -p "$T/c4"
pids=()
for ((i = 0; i < 10; i++)); do
	once "$T/c4/a.$i" "$PORT_a" "$K4" & pids+=($!)
	once "$T/c4/a2.$i" "$PORT_a2" "$K4" & pids+=($!)
done
wait "${pids[@]}"
na=$(cat "$T"/c4/a.*.code | grep -c '^200$')
na2=$(cat "$T"/c4/a2.*.code | grep -c '^200$')
echo "# one host_id, two instances, budget for 10, 10 + 10 concurrent: $na + $na2 served;" \
	"the refused instance answered $(cat "$T"/c4/a2.*.code | sort | uniq -c | tr '\n' ' ')"
check_eq "the refused instance admits nothing" "$na2" 0
check "the refused instance answers 503 with retry-after" grep -q 'renewed' "$T/c4/a2.0.body"
check "the first instance serves on ($na of 10)" test "$na" -ge 8
check_eq "the mock saw only the first instance's requests" "$(($(kv_mock_stat requests) - before - 1))" "$na"
check "the refused instance wrote nothing for the key in Redis" \
	test "$(kfield a2 "$K4" '.cluster.lease_expires_ms // 0')" = 0
check "spend within the budget" kv_wait_for 10 sh -c \
	"[ \$(redis-cli -s '$RSOCK' hget '$(rkey "$K4")' S) -le $BUDGET ]"

# The first instance stops: it hands host_id a over (its final sync
# releases it), and the second leases at its next sync.
host_stop a
check "stopped, the first instance released host_id a; the second took it" \
	kv_wait_for 10 grep -q "host_id a is this instance's now" "$T/kilovoltd-a2.log"
check "Redis's host id a is the second instance's" sh -c "redis-cli -s '$RSOCK' get kv:hb:a | grep -q 'pid $PID_a2\$'"
mkdir -p "$T/c5"
once "$T/c5/a2" "$PORT_a2" "sk-kvtest-after-$$"
check_eq "the second instance serves" "$(cat "$T/c5/a2.code")" 200

# ---- a new incarnation, and a reset across incarnations ------------------------

# The host dies (kill -9) and comes back as a new incarnation: a fresh
# ledger (a container without its volume). It waits for the dead one's
# heartbeat to lapse, then leases; a reset then clears what the old
# incarnation spent, in Redis too.
K5=sk-kvtest-incarnations-$$
for i in 1 2 3 4; do once "$T/c5/old.$i" "$PORT_a2" "$K5"; done
check_eq "old incarnation: 4 requests served" "$(cat "$T"/c5/old.*.code | grep -c '^200$')" 4
sleep 1.5	# its spend reaches Redis
check_eq "old incarnation: its spend is in Redis" "$(rcli hget "$(rkey "$K5")" S)" $((4 * R))
kill -KILL "$PID_a2"
wait "$PID_a2" 2>/dev/null
host_start a3 a "$T/a3.ledger" $BUDGET
check "the new incarnation leases once the dead one's heartbeat lapsed" \
	kv_wait_for 10 grep -q "host_id a is this instance's now" "$T/kilovoltd-a3.log"
once "$T/c5/new.0" "$PORT_a3" "$K5"
check_eq "new incarnation: a first request is served" "$(cat "$T/c5/new.0.code")" 200
check "new incarnation: the old one's spend stays counted in Redis (R)" \
	test "$(rcli hget "$(rkey "$K5")" R)" -ge $((4 * R))
check "kvctl reset on the new incarnation" hctl a3 reset "$(id_of "$K5")"
zero() { [ "$(rcli hget "$(rkey "$K5")" S)" = 0 ]; }
check "after the reset: Redis's settled spend is 0 (within a sync or two)" kv_wait_for 5 zero
check_eq "after the reset: nothing of the old incarnation is committed (R)" \
	"$(rcli hget "$(rkey "$K5")" R)" 0
for ((i = 1; i <= 11; i++)); do once "$T/c5/after.$i" "$PORT_a3" "$K5"; done
codes=$(cat "$T"/c5/after.{1..11}.code | tr '\n' ' ')
echo "# after the reset, 11 requests one after another: $codes"
check_eq "after the reset: the whole budget is there (10 served)" \
	"$(cat "$T"/c5/after.*.code | grep -c '^200$')" 10
check_eq "after the reset: the 11th is refused for the budget" "$(cat "$T/c5/after.11.code")" 402
sleep 1.5
check_eq "after the reset: Redis's settled spend equals the ledger's" \
	"$(rcli hget "$(rkey "$K5")" S)" "$(kfield a3 "$K5" .spent_nusd)"

# The same host restarts on its own ledger after a crash: it is its own
# last run that holds host_id a, so it waits quietly, then takes over its
# leases where they were.
K6=sk-kvtest-restart-$$
for i in 1 2; do once "$T/c5/k6.$i" "$PORT_a3" "$K6"; done
kill -KILL "$PID_a3"
wait "$PID_a3" 2>/dev/null
n765=$(logged a3 KV0765)
host_start a3
check "restarted on its ledger: it waits for its own last run's heartbeat" \
	kv_wait_for 10 grep -q "still held by this ledger's last run" "$T/kilovoltd-a3.log"
ours() { [ "$(logged a3 "host_id a is this instance's now")" -ge 2 ]; }
check "restarted on its ledger: then it leases" kv_wait_for 10 ours
check_eq "restarted on its ledger: no clash logged" "$(logged a3 KV0765)" "$n765"
for i in 3 4; do once "$T/c5/k6.$i" "$PORT_a3" "$K6"; done
check_eq "restarted: its requests are served" "$(cat "$T"/c5/k6.*.code | grep -c '^200$')" 4
sleep 1.5
check_eq "restarted: Redis counts the spend of both runs once" \
	"$(rcli hget "$(rkey "$K6")" S)" $((4 * R))
check_eq "restarted: the ledger too" "$(kfield a3 "$K6" .spent_nusd)" $((4 * R))
check_eq "restarted: no incarnation retired" "$(rcli hget "$(rkey "$K6")" R)" ""
host_stop a3
check_eq "stopped: host_id a is free in Redis" "$(hb)" ""

# ---- a departed host's unused grant -------------------------------------------

# Host d serves 2 rounds of 3 concurrent requests (its lease grows past
# them) and dies with its spend reported and an unused grant. Host e gets
# only what d does not hold, until d's lease has been expired for
# departed_after (5 s); then e's sync returns d's unused grant, and e
# serves the rest of the budget.
K7=sk-kvtest-departed-$$
k7=$(rkey "$K7")
host_start d d "$T/d.ledger" $BUDGET
host_start e e "$T/e.ledger" $BUDGET
before=$(kv_mock_stat requests)
mkdir -p "$T/c7"
for r in 1 2; do
	pids=()
	for i in 1 2 3; do once "$T/c7/d.$r.$i" "$PORT_d" "$K7" & pids+=($!); done
	wait "${pids[@]}"
done
nd=$(cat "$T"/c7/d.*.code | grep -c '^200$')
check_eq "host d serves 6 requests" "$nd" 6
reported() { [ "$(rcli hget "$k7" u:d)" = $((6 * R)) ]; }
check "host d's spend is in Redis" kv_wait_for 10 reported
kill -KILL "$PID_d"
wait "$PID_d" 2>/dev/null
gd=$(rcli hget "$k7" g:d)
unused=$((gd - 6 * R))
echo "# host d died holding a grant of $gd nUSD, $unused unused"
check "host d died holding an unused grant ($unused > 0)" test "$unused" -gt 0
serve_e() {	# serve_e TAG: requests on e one after another until a refusal
	local i
	for ((i = 1; i <= 12; i++)); do
		once "$T/c7/e.$1.$i" "$PORT_e" "$K7"
		[ "$(cat "$T/c7/e.$1.$i.code")" = 200 ] || break
	done
	cat "$T"/c7/e."$1".*.code | grep -c '^200$'
}
n1=$(serve_e before)
echo "# host e, before d's grant is returned: $n1 served, then $(cat "$T"/c7/e.before.$((n1 + 1)).code)"
check "before the bound, e gets only what d does not hold ($n1 <= $((4 - unused / R)))" \
	test "$n1" -le $((4 - unused / R))
returned() { [ "$(rcli hget "$k7" g:d)" = "$(rcli hget "$k7" u:d)" ]; }
check "departed_after past d's lease, its unused grant is returned (g:d = u:d)" \
	kv_wait_for 30 returned
check_eq "d's reported spend stays counted" "$(rcli hget "$k7" u:d)" $((6 * R))
n2=$(serve_e after)
echo "# host e, after: $n2 more served, then $(cat "$T"/c7/e.after.$((n2 + 1)).code)"
check "after the bound, e serves d's returned grant ($n2 >= 1)" test "$n2" -ge 1
check_eq "the whole budget is served, never more (6 + $n1 + $n2)" $((6 + n1 + n2)) 10
check_eq "the mock saw exactly the admitted requests" \
	"$(($(kv_mock_stat requests) - before - 1))" $((6 + n1 + n2))
sleep 1.5
check_eq "Redis's settled spend is the budget's, no more" "$(rcli hget "$k7" S)" $((10 * R))
check "Redis's commitment stays within the budget ($(rcli hget "$k7" C))" \
	test "$(rcli hget "$k7" C)" -le $BUDGET
check_eq "returned once: g:d stays at its spend" "$(rcli hget "$k7" g:d)" $((6 * R))
host_stop e

kv_finish
