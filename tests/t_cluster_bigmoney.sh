#!/bin/bash
# t_cluster_bigmoney (issue 36, "across hosts"): money in Redis is exact to
# the nano-dollar beyond 2^53 nano-dollars (about $9 million, where a Lua
# double stops holding every integer). A real redis-server, two kilovolt
# hosts, a key with a $50,000,000 budget and a price that makes each
# request cost 9,007,199,254,740,993 nUSD (2^53 + 1):
#  - four requests over both hosts are served; Redis's S, u:a, u:b and
#    kvctl cluster equal the ledgers to the nano-dollar; the budget lowered
#    to $40,000,000 refuses a fifth;
#  - a budget of $100,000,000.000000001 set on a reaches Redis and host b
#    exactly and serves the fifth; a reset clears S, the zero points are
#    exact, and the spend after it is counted exactly;
#  - at the int64 edge: a budget of 2^63 - 1 nUSD is held exactly, one
#    nano-dollar more is refused by kvctl; a spend that would carry S past
#    2^63 - 1 is refused by the script (KV0777), which writes nothing for
#    the key, and once S fits again the key syncs exactly.
# JSON is read with python3: jq 1.6 reads numbers as doubles.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli python3 curl sha256sum; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C

KEY=sk-kvtest-bigmoney-90071
X=9007199254740993		# one request's cost, nUSD: 2^53 + 1
MAXI=9223372036854775807	# 2^63 - 1
kv_redis_start --appendonly yes
kv_start_mock

host_start() {
	kv_host_config "$1" <<EOF
[price kv-big*]
input = 0
output = 9007199254.740993
[key big]
key = $KEY
budget = 50000000
[cluster]
lease_min = 10000000
lease_max = 10000000
lease_share = 50
EOF
	kv_start_host "$1" "$(eval echo "\$PORT_$1")"
}
hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
# kf HOST FIELD: FIELD (a dotted path) of key big in HOST's kvctl keys --json
kf() {
	hctl "$1" keys --json | python3 -c 'import json, sys
v = [k for k in json.load(sys.stdin)["keys"] if k.get("label") == "big"][0]
for p in sys.argv[1].split("."): v = v.get(p, 0) if isinstance(v, dict) else 0
print(v)' "$2"
}
RK=kv:$(printf %s "$KEY" | sha256sum | cut -d' ' -f1):0
rf() { rcli hget "$RK" "$1"; }
ledgers() { echo $(($(kf a spent_nusd) + $(kf b spent_nusd))); }
# in_redis: Redis's settled spend equals the two ledgers' (settled, synced)
in_redis() { [ "$(kf a reserved_nusd)$(kf b reserved_nusd)" = 00 ] && [ "$(rf S)" = "$(ledgers)" ]; }
synced() { [ "$(kf "$1" cluster.lease_expires_ms)" != 0 ]; }

# req OUT HOST: one request, retried on 503 (the lease growing) as SDKs do
req() {
	local try code
	for ((try = 0; try < 20; try++)); do
		code=$(curl -sS -m 30 -o "$T/$1.body" -w '%{http_code}' \
			-H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
			-H 'x-mock-tokens: 1000' \
			-d '{"model":"kv-big-1","max_tokens":1000,"messages":[{"role":"user","content":"big"}]}' \
			"http://127.0.0.1:$(eval echo "\$PORT_$2")/v1/chat/completions")
		[ "$code" = 503 ] || break
		sleep 0.3
	done
	echo "$code"
}

host_start a
host_start b
check "host a leased for the key" kv_wait_for 10 synced a
check "host b leased for the key" kv_wait_for 10 synced b
check_eq "Redis holds the \$50,000,000 budget exactly" "$(rf budget)" 50000000000000000

# ---- four requests over both hosts ----------------------------------------------
# Each host holds at most lease_max ($10,000,000) unused: with three spent
# the fourth still fits beside the other host's lease.
codes=""
for h in a b a b; do codes="$codes $(req r $h)"; done
check_eq "four requests of 2^53 + 1 nUSD served over both hosts" "$codes" " 200 200 200 200"
check "Redis's spend equals the ledgers' within 5 s" kv_wait_for 5 in_redis
check_eq "host a's ledger: 2 x (2^53 + 1)" "$(kf a spent_nusd)" 18014398509481986
check_eq "host b's ledger: 2 x (2^53 + 1)" "$(kf b spent_nusd)" 18014398509481986
check_eq "Redis S: 4 x (2^53 + 1), to the nano-dollar" "$(rf S)" 36028797018963972
check_eq "Redis u:a" "$(rf u:a)" 18014398509481986
check_eq "Redis u:b" "$(rf u:b)" 18014398509481986
check "Redis C covers the spend and stays within the budget" \
	test "$(rf C)" -ge 36028797018963972 -a "$(rf C)" -le 50000000000000000
hctl a cluster --json >"$T/cluster.json"
check_eq "kvctl cluster: the same spend and budget" "$(python3 -c 'import json, sys
k = [k for k in json.load(open(sys.argv[1]))["keys"] if k.get("label") == "big"][0]
print(k["spent_nusd"], k["budget_nusd"], sum(h["spent_nusd"] for h in k["hosts"]))' "$T/cluster.json")" \
	"36028797018963972 50000000000000000 36028797018963972"
check_eq "the mock billed the four, 1000 output tokens each" \
	"$(grep -c ' output=1000 ' "$MOCK_LOG.bills")" 4
hctl a budget big 40000000 >/dev/null
budget_is() { [ "$(kf "$1" budget_nusd)" = "$2" ]; }
check "host b adopts the budget lowered to \$40,000,000" kv_wait_for 5 budget_is b 40000000000000000
check_eq "a fifth is refused on b: \$3.97 million left" "$(req r5 b)" 402
check_eq "... and on a" "$(req r5a a)" 402

# ---- a budget to the nano-dollar reaches Redis and the other host -------------------
hctl a budget big 100000000.000000001 >/dev/null
check "host b adopts \$100,000,000.000000001 exactly" kv_wait_for 5 budget_is b 100000000000000001
check_eq "Redis holds it exactly" "$(rf budget)" 100000000000000001
check_eq "the fifth request fits now" "$(req r7 b)" 200
check "Redis's spend equals the ledgers' again" kv_wait_for 5 in_redis
check_eq "Redis S: 5 x (2^53 + 1)" "$(rf S)" 45035996273704965

# ---- a reset: exact zero points, exact spend after ---------------------------------
hctl a reset big >"$T/reset.out" 2>&1
check_eq "kvctl reset succeeds" "$?" 0
zeroed() { [ "$(kf a spent_nusd)$(kf b spent_nusd)" = 00 ]; }
check "both hosts' spend is 0" kv_wait_for 5 zeroed
check_eq "Redis S is 0" "$(rf S)" 0
check_eq "Redis counts one reset" "$(rf Z)" 1
check_eq "host a's zero point: 2 x (2^53 + 1)" "$(rf z:a)" 18014398509481986
check_eq "host b's zero point: 3 x (2^53 + 1)" "$(rf z:b)" 27021597764222979
check_eq "a request after the reset is served" "$(req r8 a)" 200
check "Redis's spend equals the ledgers' after the reset" kv_wait_for 5 in_redis
check_eq "Redis S: 2^53 + 1" "$(rf S)" $X
check_eq "Redis u:a: 3 x (2^53 + 1)" "$(rf u:a)" 27021597764222979

# ---- the int64 edge ----------------------------------------------------------------
hctl a budget big 9223372036.854775808 >"$T/over.out" 2>&1
check "kvctl refuses a budget of 2^63 nUSD" test $? -ne 0
hctl a budget big 9223372036.854775807 >/dev/null
check "host b adopts the budget 2^63 - 1 nUSD exactly" kv_wait_for 5 budget_is b $MAXI
check_eq "Redis holds it exactly" "$(rf budget)" $MAXI
check_eq "a request under it is served" "$(req r9 a)" 200
check "... and synced exactly" kv_wait_for 5 in_redis
check_eq "Redis S: 2 x (2^53 + 1)" "$(rf S)" 18014398509481986
# S one request short of int64's end: the next spend would carry it past
EDGE=$((MAXI - X + 1))
rcli hset "$RK" S $EDGE >/dev/null
check_eq "a request while S is at the edge is served from a's lease" "$(req r10 a)" 200
check "the script refuses the key's sync (KV0777), once" kv_wait_for 5 \
	grep -q 'KV0777.*key big.*KVOVERFLOW' "$T/kilovoltd-a.log"
sleep 1.5	# several syncs of a
check_eq "... logged once" "$(grep -c KV0777 "$T/kilovoltd-a.log")" 1
check_eq "Redis S is not wrapped: unchanged" "$(rf S)" $EDGE
check_eq "Redis u:a is unchanged: nothing of the key was written" "$(rf u:a)" 36028797018963972
check_eq "host a's ledger counted the spend" "$(kf a spent_nusd)" 27021597764222979
rcli hset "$RK" S 18014398509481986 >/dev/null	# what S was before the poke
check "once S fits, a's sync applies and Redis equals the ledgers" kv_wait_for 5 in_redis
check_eq "Redis S: 3 x (2^53 + 1)" "$(rf S)" 27021597764222979
check_eq "Redis u:a: 5 x (2^53 + 1)" "$(rf u:a)" 45035996273704965
check "no lease script failure (KV0755)" eval "! grep -q KV0755 $T/kilovoltd-[ab].log"

kv_finish
