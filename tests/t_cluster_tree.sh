#!/bin/bash
# t_cluster_tree (issue 36, "across hosts"): the budget tree's nodes are
# leased from Redis like keys, so N hosts together never pass a node's
# budget. A real redis-server and three kilovolt hosts on 127.0.0.1; an org
# with a team whose budget fits 30 requests, shared by three keys each with
# room of its own; every host takes 30 concurrent requests spread over the
# three keys (90 in all, 3 times what the team fits):
#  - the team's spend summed over the hosts never passes its budget, and
#    is exactly the admitted requests' cost; the keys sum exactly to the
#    team on every host, and the team to the org;
#  - every refusal (402, or a 503 after waiting for a lease) never reached
#    the provider: the mock saw exactly the admitted requests;
#  - once settled and synced, nothing stays reserved on any host, and Redis
#    counts each host's spend of the team (u:H) and the total (S) exactly
#    as the three ledgers do;
#  - a tag (x-kilovolt-tags) with a budget for 6 requests, 8 tagged
#    requests on each host at once: at most 6 served over the hosts.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli jq curl sha256sum; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C		# ${#BODY} counts bytes
KV_TIMEOUT=${KV_TIMEOUT:-300}

M=20
BODY='{"model":"kv-tc-1","max_tokens":'$M',"messages":[{"role":"user","content":"a tree over hosts"}]}'
R=$(((${#BODY} * 1000 + M * 1000000000 + 999999) / 1000000))
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
echo "# a request reserves and costs $R nUSD"
TEAM=$((30 * R)) ORG=$((1000 * R))
K1=sk-kvtest-cltree-one-111111 K2=sk-kvtest-cltree-two-222222 K3=sk-kvtest-cltree-three-3333
HOSTS="a b c"

kv_redis_start --appendonly yes --appendfsync always
kv_start_mock

for h in $HOSTS; do
	kv_host_config "$h" <<EOF
[price kv-tc*]
input = 0.000001
output = 1.00

[team acme]
budget = $(usd $ORG)

[team pay]
parent = acme
budget = $(usd $TEAM)

[tag proj]
budget = $(usd $((6 * R)))

[key k1]
key = $K1
team = pay
budget = 100

[key k2]
key = $K2
team = pay
budget = 100

[key k3]
key = $K3
team = pay
budget = 100

[cluster]
lease_min = 0.000000001
lease_max = $(usd $((4 * R)))
lease_share = 25
EOF
	kv_start_host "$h" "$(eval echo "\$PORT_$h")"
done

hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
# row HOST BY NODE FIELD: FIELD of NODE in HOST's kvctl report --by BY
row() {
	hctl "$1" report --by "$2" --json |
		jq -r --arg n "$3" "[.rows[] | select(.node == \$n) | .$4] | first // 0"
}
sum_hosts() {	# BY NODE FIELD: summed over the hosts
	local h s=0
	for h in $HOSTS; do s=$((s + $(row "$h" "$1" "$2" "$3"))); done
	echo $s
}
# The Redis hash of a node for its current period (the one with a budget).
nhex() { printf '\001node:%s' "$1" | sha256sum | cut -d' ' -f1; }
rnode() {
	local k
	for k in $(rcli --scan --pattern "kv:$(nhex "$1"):*"); do
		[ "${k##*:}" = rl ] || { echo "$k"; return; }
	done
}
synced() { [ -n "$(rnode team/pay)" ] && [ "$(rcli hget "$(rnode team/pay)" "e:$1")" != "" ]; }
for h in $HOSTS; do check "host $h leases team/pay from Redis" kv_wait_for 15 synced "$h"; done
check_eq "Redis holds team/pay's budget" "$(rcli hget "$(rnode team/pay)" budget)" $TEAM

# ---- 3 hosts x 30 concurrent requests on a team that fits 30 ------------------

mock0=$(kv_mock_stat requests)
selfcount=$(($(kv_mock_stat requests) - mock0))	# what one /mock/stats read adds
mock0=$(kv_mock_stat requests)
mkdir -p "$T/c"
one() {		# HOST I: request I on HOST, with key I mod 3
	local keys=("$K1" "$K2" "$K3") port
	port=$(eval echo "\$PORT_$1")
	curl -sS -m 120 -o "$T/c/$1.$2.body" -D "$T/c/$1.$2.head" -w '%{http_code}\n' \
		-H "Authorization: Bearer ${keys[$(($2 % 3))]}" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 20' --data-binary "$BODY" \
		"http://127.0.0.1:$port/v1/chat/completions" >"$T/c/$1.$2.code" 2>"$T/c/$1.$2.err"
}
export -f one
export T M BODY K1 K2 K3 PORT_a PORT_b PORT_c
for h in $HOSTS; do seq 1 30 | sed "s/^/$h /"; done | xargs -P 90 -L 1 bash -c 'one $0 $1'
count() { cat "$T"/c/*.code | grep -c "^$1\$"; }
n200=$(count 200) n402=$(count 402) n503=$(count 503)
for h in $HOSTS; do echo "# host $h: $(cat "$T"/c/$h.*.code | grep -c '^200$') x 200"; done
echo "# 90 requests: $n200 x 200, $n402 x 402, $n503 x 503"
check_eq "every request is admitted, or refused with 402 or 503" $((n200 + n402 + n503)) 90
check "some are refused with 402 (the load is 3 times the team)" test "$n402" -gt 0
check "the team's budget is used, not stranded by leases ($n200 >= 24)" test "$n200" -ge 24
bad=0
for f in "$T"/c/*.code; do
	[ "$(cat "$f")" = 402 ] || continue
	node=$(tr -d '\r' <"${f%.code}.head" | sed -n 's/^x-kilovolt-budget-node: //p')
	[ "$node" = team/pay ] || { bad=$((bad + 1)); echo "# ${f##*/}: refused by '$node'"; }
done
check_eq "every 402 names team/pay" "$bad" 0
check_eq "the provider saw only the admitted requests" \
	"$(($(kv_mock_stat requests) - mock0 - selfcount))" "$n200"

# ---- settled: the ledgers and Redis, exactly ----------------------------------

settled() {
	[ "$(sum_hosts team team/pay reserved_nusd)" = 0 ] &&
	[ "$(sum_hosts team team/acme reserved_nusd)" = 0 ]
}
check "nothing stays reserved at team/pay or team/acme on any host" kv_wait_for 30 settled
for h in $HOSTS; do hctl "$h" report --by team; done
tp=$(sum_hosts team team/pay spent_nusd)
check "team/pay's spend over the hosts within its budget ($tp <= $TEAM)" test "$tp" -le $TEAM
check_eq "team/pay's spend is the admitted requests' cost" "$tp" $((n200 * R))
check_eq "team/acme's spend over the hosts equals team/pay's" "$(sum_hosts team team/acme spent_nusd)" "$tp"
for h in $HOSTS; do
	ks=$(($(row "$h" key key/k1 spent_nusd) + $(row "$h" key key/k2 spent_nusd) +
	    $(row "$h" key key/k3 spent_nusd)))
	check_eq "host $h: the keys sum exactly to team/pay" "$ks" "$(row "$h" team team/pay spent_nusd)"
done
RP=$(rnode team/pay) RA=$(rnode team/acme)
in_redis() {
	local h
	for h in $HOSTS; do
		[ "$(rcli hget "$RP" "u:$h")" = "$(row "$h" team team/pay spent_nusd)" ] || return 1
		[ "$(rcli hget "$RA" "u:$h")" = "$(row "$h" team team/acme spent_nusd)" ] || return 1
	done
	[ "$(rcli hget "$RP" S)" = "$tp" ] && [ "$(rcli hget "$RA" S)" = "$tp" ]
}
check "Redis's u:H and S of team/pay and team/acme equal the ledgers exactly" kv_wait_for 15 in_redis
for h in $HOSTS; do echo "# $h: team/pay u=$(rcli hget "$RP" "u:$h") g=$(rcli hget "$RP" "g:$h")"; done
echo "# team/pay S=$(rcli hget "$RP" S) C=$(rcli hget "$RP" C) budget=$TEAM"
check "Redis's commitment of team/pay within its budget" test "$(rcli hget "$RP" C)" -le $TEAM

# ---- a tag across hosts ----------------------------------------------------------

mkdir -p "$T/g"
tagged() {	# HOST I
	local port
	port=$(eval echo "\$PORT_$1")
	curl -sS -m 120 -o /dev/null -D "$T/g/$1.$2.head" -w '%{http_code}\n' \
		-H "Authorization: Bearer $K1" -H 'Content-Type: application/json' \
		-H 'x-kilovolt-tags: proj' -H "x-mock-tokens: $M" --data-binary "$BODY" \
		"http://127.0.0.1:$port/v1/chat/completions" >"$T/g/$1.$2.code" 2>/dev/null
}
export -f tagged
check "kvctl budget team/pay 1 (room for the tag's test)" hctl a budget team/pay 1
# every host, not one: a host still on the old budget refuses naming
# team/pay, not the tag (the fresh suite saw host b's 8 so)
lifted() {
	local h
	for h in $HOSTS; do [ "$(row "$h" team team/pay budget_nusd)" = 1000000000 ] || return 1; done
}
check "... adopted by every host" kv_wait_for 15 lifted
for h in $HOSTS; do seq 1 8 | sed "s/^/$h /"; done | xargs -P 24 -L 1 bash -c 'tagged $0 $1'
g200=$(cat "$T"/g/*.code | grep -c '^200$') g402=$(cat "$T"/g/*.code | grep -c '^402$')
echo "# tag proj: $g200 x 200, $g402 x 402 of 24"
check "at most 6 tagged requests served over the hosts ($g200)" test "$g200" -le 6 -a "$g200" -ge 4
check_eq "the rest refused naming tag/proj" \
	"$(cat "$T"/g/*.head | tr -d '\r' | grep -c '^x-kilovolt-budget-node: tag/proj$')" "$g402"
tagsettled() { [ "$(sum_hosts tag tag/proj reserved_nusd)" = 0 ]; }
check "the tag settles" kv_wait_for 30 tagsettled
check_eq "the tag's spend over the hosts is its served requests'" \
	"$(sum_hosts tag tag/proj spent_nusd)" $((g200 * R))

# A budget changed on one host reaches the others through Redis, as a key's.
check "kvctl budget team/pay on host a" hctl a budget team/pay "$(usd $((TEAM + 5 * R)))"
raised() { [ "$(row c team team/pay budget_nusd)" = $((TEAM + 5 * R)) ]; }
check "host c adopts team/pay's new budget" kv_wait_for 15 raised

kv_finish
