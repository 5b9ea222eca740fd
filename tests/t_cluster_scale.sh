#!/bin/bash
# t_cluster_scale (issue 36, the scale test): 1,000 concurrent streaming
# requests from 200 JWT users (tokens minted by jose, tests/sdk/
# jwt_users.mjs) in 10 teams, across 3 kilovolt hosts sharing one real
# redis-server, under an org cap, a cap per team, a cap per user
# ([auth jwt] user_budget) and a per-model cap on the org, on budgets the
# load exceeds (the org fits 300 requests):
#  - every request is served whole (a complete stream) or refused with a
#    402 naming a node on its path (503s, a host waiting for a lease, are
#    retried as SDKs do); the provider saw exactly the served ones;
#  - once settled, nothing is reserved anywhere; summed over the hosts, no
#    node's spend passes its budget by a nano-dollar, each team's users sum
#    exactly to it, the teams to the org, the capped model's requests to
#    its cap node, and Redis's S of every node equals the ledgers;
#  - no request that fitted was refused: the model cap is the last node a
#    capped request holds (so no hold there is rolled back from above), and
#    its 402s came when its room was spent, or leased to the other hosts
#    (at most lease_max each, what a lease may strand) with less than one
#    request left. (The org is not checked so: a capped request holds the
#    org before the cap refuses it, so the org may refuse while holds that
#    will be rolled back are in flight.)
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli jq curl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
kv_sdk_setup || skip "jose is not available (node/npm missing or npm unreachable)"
export LC_ALL=C		# ${#BODY} counts bytes
KV_TIMEOUT=${KV_TIMEOUT:-600}

USERS=200 TEAMS=10 N=1000 HOSTS="a b c"
M=20
BODY='{"model":"kv-sc-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"at scale"}]}'
CBODY=${BODY/kv-sc-1/kv-sx-1}	# the capped model: the same bytes, the same cost
R=$(((${#BODY} * 1000 + M * 1000000000 + 999999) / 1000000))
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
ORG=$((300 * R)) CAP=$((30 * R)) USER=$((3 * R))
team_budget() { echo $(((25 + 2 * $1) * R)); }	# t0 25 requests .. t9 43: 340 in all
echo "# a request costs $R nUSD; org $ORG, kv-sx* cap $CAP, user $USER"

if ! timeout 120 node "$KV_SDK/jwt_users.mjs" "$T" $USERS $TEAMS >"$T/users" 2>"$T/mint.err"; then
	fail "jwt_users.mjs mints the tokens: $(tail -n 3 "$T/mint.err")"
	kv_finish
fi
check_eq "jose minted a token for every user" "$(wc -l <"$T/users")" $USERS

kv_redis_start --appendonly yes
kv_start_mock

teams() {
	local t
	printf '[team org]\nbudget = %s\nmodel_budget = kv-sx*:%s\n\n' "$(usd $ORG)" "$(usd $CAP)"
	for ((t = 0; t < TEAMS; t++)); do
		printf '[team t%d]\nparent = org\nbudget = %s\n\n' $t "$(usd "$(team_budget $t)")"
	done
}
for h in $HOSTS; do
	kv_host_config "$h" <<EOF
[upstream openai]
api_key = sk-upstream-own-key-scale

[price kv-s*]
input = 0.000001
output = 1.00

$(teams)
[auth jwt]
issuer = https://idp.example/realms/acme
audience = kilovolt
jwks_file = $T/jwks.json
user_budget = $(usd $USER)

[cluster]
lease_min = 0.000000001
lease_max = $(usd $((10 * R)))
lease_share = 25
EOF
	kv_start_host "$h" "$(eval echo "\$PORT_$h")"
done

# ---- 1,000 concurrent streams -------------------------------------------------------

# Request i: user i mod 200 (so each user's 5 requests go to all 3 hosts),
# host i mod 3, the capped model for every fifth.
ports=($PORT_a $PORT_b $PORT_c)
mapfile -t tokens < <(cut -f3 "$T/users")
for ((i = 0; i < N; i++)); do
	b=$BODY
	[ $((i % 5)) = 0 ] && b=$CBODY
	printf '%s\t%s\t%s\n' "${ports[$((i % 3))]}" "${tokens[$((i % USERS))]}" "$b"
done >"$T/plan"
mock0=$(kv_mock_stat requests)
selfcount=$(($(kv_mock_stat requests) - mock0))	# what one /mock/stats read adds
mock0=$(kv_mock_stat requests)
timeout 400 node "$KV_SDK/stream_flood.mjs" "$T/plan" 300 >"$T/out" 2>"$T/flood.err" ||
	fail "stream_flood.mjs ran: $(tail -n 3 "$T/flood.err")"
check_eq "an answer for every request" "$(wc -l <"$T/out")" $N
n200=$(awk -F'\t' '$1 == 200 && $3 == 1' "$T/out" | wc -l)
n402=$(awk -F'\t' '$1 == 402' "$T/out" | wc -l)
echo "# $N streams: $n200 served whole, $n402 x 402; others:" \
	"$(awk -F'\t' '$1 != 200 && $1 != 402 { print $1, $2 }' "$T/out" | sort | uniq -c | tr '\n' ';')"
awk -F'\t' '$1 == 402 { print $2 }' "$T/out" | sed 's|^user/.*|user/*|' | sort | uniq -c |
	sed 's/^/# refused by /'
check_eq "every request is a whole stream or a 402" $((n200 + n402)) $N
check "some are refused (the load exceeds the budgets)" test "$n402" -gt 0
check_eq "the provider saw only the served requests" \
	"$(($(kv_mock_stat requests) - mock0 - selfcount))" "$n200"
bad=$(paste <(seq 0 $((N - 1))) "$T/out" | awk -F'\t' -v U=$USERS -v TM=$TEAMS '$2 == 402 {
	n = $3; u = "user/u" ($1 % U) "@x.io"; t = "team/t" (($1 % U) % TM)
	if (n != u && n != t && n != "team/org" && !(n == "model/team/org/kv-sx*" && $1 % 5 == 0)) print $1, n }')
check_eq "every 402 names a node on its request's path" "$bad" ""

# ---- settled: every node, summed over the hosts -------------------------------------

declare -A SP RS BU
# all BY: every node with a budget of kvctl report --by BY on every host
# (--by model also lists each model's totals: "model/NAME", no node),
# summed into SP, RS
all() {
	local h node sp rs bu
	for h in $HOSTS; do
		while read -r node sp rs bu; do
			SP[$node]=$((${SP[$node]:-0} + sp))
			RS[$node]=$((${RS[$node]:-0} + rs))
			BU[$node]=$bu
		done < <("$KV_CTL_BIN" -c "$T/$h.ini" report --by "$1" --json |
			jq -r '.rows[] | select(.node | test("^model/[^/]*$") | not) |
			"\(.node) \(.spent_nusd) \(.reserved_nusd) \(.budget_nusd)"')
	done
}
settled() {
	local h
	for h in $HOSTS; do
		"$KV_CTL_BIN" -c "$T/$h.ini" report --by team --json >"$T/r.json" &&
		[ "$(jq '[.rows[].reserved_nusd] | add' "$T/r.json")" = 0 ] &&
		"$KV_CTL_BIN" -c "$T/$h.ini" report --by user --json >"$T/r.json" &&
		[ "$(jq '[.rows[].reserved_nusd] | add // 0' "$T/r.json")" = 0 ] || return 1
	done
}
check "nothing stays reserved on any host" kv_wait_for 60 settled
all team
all user
all model
reserved=0 over=0
for n in "${!SP[@]}"; do
	reserved=$((reserved + ${RS[$n]}))
	[ "${SP[$n]}" -le "${BU[$n]}" ] || { over=$((over + 1)); echo "# $n: ${SP[$n]} > ${BU[$n]}"; }
done
check_eq "nodes seen over the hosts: the org, its cap, 10 teams, 200 users" "${#SP[@]}" $((2 + TEAMS + USERS))
check_eq "no node's spend passes its budget (summed over the hosts)" "$over" 0
check_eq "the org's spend is the served requests' cost" "${SP[team/org]}" $((n200 * R))
ts=0 bad=
for ((t = 0; t < TEAMS; t++)); do
	us=0
	for ((u = t; u < USERS; u += TEAMS)); do us=$((us + ${SP[user/u$u@x.io]})); done
	[ "$us" = "${SP[team/t$t]}" ] || bad="$bad t$t:$us!=${SP[team/t$t]}"
	[ "${BU[team/t$t]}" = "$(team_budget $t)" ] || bad="$bad t$t-budget"
	ts=$((ts + ${SP[team/t$t]}))
done
check_eq "each team's users sum exactly to the team" "$bad" ""
check_eq "the teams sum exactly to the org" "$ts" "${SP[team/org]}"
ncap=$(paste <(seq 0 $((N - 1))) "$T/out" | awk -F'\t' '$1 % 5 == 0 && $2 == 200 && $4 == 1' | wc -l)
check_eq "the kv-sx* cap node is the capped requests' cost" "${SP[model/team/org/kv-sx*]}" $((ncap * R))

nhex() { printf '\001node:%s' "$1" | sha256sum | cut -d' ' -f1; }
# S of NODE's hash in Redis (its period: none, so :0)
rS() { rcli hget "kv:$(nhex "$1"):0" S; }
in_redis() {
	local n
	for n in "${!SP[@]}"; do
		[ "$(rS "$n")" = "${SP[$n]}" ] || { echo "# $n: Redis S $(rS "$n"), ledgers ${SP[$n]}"; return 1; }
	done
}
check "Redis's S of every one of the 212 nodes equals the ledgers exactly" kv_wait_for 20 in_redis

# What leases may strand: each other host's unused lease, plus the request.
left=$((CAP - ${SP[model/team/org/kv-sx*]}))
echo "# the kv-sx* cap: $((left / R)) requests' worth left ($left nUSD)"
if cut -f2 "$T/out" | grep -qxF "model/team/org/kv-sx*"; then
	check "its 402s came with its room spent or leased ($left < $((2 * 10 * R + R)))" \
		test "$left" -lt $((2 * 10 * R + R))
fi
kv_finish
