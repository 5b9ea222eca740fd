#!/bin/bash
# t_teams_limits: a [team]'s rpm and tpm, and [auth jwt]'s user_rpm and
# model_budget (issue 36), through the real daemon and the mock. A team's
# rpm admits that many requests of all its keys together, then 429 naming
# the team (x-kilovolt-budget-node, the message); a team's tpm likewise; a
# request the key's own limit refuses gives back what the team took; a
# refused request never reaches the provider. With JWT (tokens minted by
# jose, as in t_jwt_admission): a user's rpm refuses with 429 naming
# user/NAME, and its model cap (model/user/NAME/GLOB) with 402 after
# exactly its budget.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#BODY} counts bytes

M=20
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"limits for a team"}]}'
R=$(ceil_cost ${#BODY} $M 1000 1000000000)
EST=$((${#BODY} + M))	# a request's tokens at admission: body bytes and max_tokens

KR1=sk-kvtest-lim-rpm-one-11111 KR2=sk-kvtest-lim-rpm-two-22222
KT1=sk-kvtest-lim-tpm-one-33333 KQ=sk-kvtest-lim-quick-444444

JWT=0
if kv_sdk_setup && timeout 120 node "$KV_SDK/jwt_mint.mjs" "$T" >"$T/mint.out" 2>"$T/mint.err"; then
	JWT=1
else
	echo "# jose unavailable: the [auth jwt] part is skipped"
fi
tok() { awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$T/mint.out"; }

AUTH=
[ "$JWT" = 1 ] && AUTH="[auth jwt]
issuer = https://idp.example/realms/acme
audience = kilovolt
jwks_file = $T/jwks.json
user_budget = 100
user_rpm = 4
model_budget = kv-cap*:$(usd $((3 * R)))"

kv_start_mock
kv_write_config <<EOF
[upstream openai]
api_key = sk-upstream-own-key-77777

[price kv-budget*]
input = 0.000001
output = 1.00

[price kv-cap*]
input = 0.000001
output = 1.00

[team acme]
budget = 100

[team payments]
parent = acme
rpm = 3

[team tokens]
parent = acme
tpm = $EST

[team quick]
rpm = 5

[key r1]
key = $KR1
team = payments

[key r2]
key = $KR2
team = payments

[key t1]
key = $KT1
team = tokens

[key q]
key = $KQ
team = quick
rpm = 1

$AUTH
EOF
"$KV_DAEMON_BIN" -T -c "$T/kilovolt.ini" >"$T/dump.ini" 2>&1
check "kilovoltd -T shows a team's rpm" grep -qx "rpm = 3" "$T/dump.ini"
check "kilovoltd -T shows a team's tpm" grep -qx "tpm = $EST" "$T/dump.ini"
kv_start

# call NAME CREDENTIAL [BODY]: the code; body and head in $T/NAME.*
call() {
	curl -sS -m 60 -o "$T/$1.body" -D "$T/$1.head" -w '%{http_code}' \
		-H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" --data-binary "${3:-$BODY}" "$KV_URL/v1/chat/completions"
}
node_of() { tr -d '\r' <"$T/$1.head" | sed -n 's/^x-kilovolt-budget-node: //p'; }
hdr() { tr -d '\r' <"$T/$1.head" | sed -n "s/^$2: //p"; }
row() {		# BY NODE FIELD
	kv_ctl report --by "$1" --json | jq -r --arg n "$2" ".rows[] | select(.node == \$n) | .$3"
}

# ---- a team's rpm: 3 requests of two keys, then 429 naming the team ------------------
mock0=$(grep -c '^POST /v1/' "$MOCK_LOG")
codes="$(call a1 "$KR1") $(call a2 "$KR2") $(call a3 "$KR1") $(call a4 "$KR2")"
check_eq "team payments' rpm 3 admits 3 requests of its two keys, then 429" "$codes" "200 200 200 429"
check_eq "... naming team/payments" "$(node_of a4)" "team/payments"
check "... in its message" grep -qF "Rate limit reached for team/payments on requests per minute (RPM): Limit 3" "$T/a4.body"
check "... with a retry-after" test -n "$(hdr a4 retry-after)"
check_eq "... the team's x-ratelimit-limit-requests" "$(hdr a4 x-ratelimit-limit-requests)" 3
check_eq "the provider saw the 3 admitted only" "$(($(grep -c '^POST /v1/' "$MOCK_LOG") - mock0))" 3
check_eq "... and nothing stays held at the team" "$(row team team/payments reserved_nusd)" 0
check_eq "the refused request is not charged" "$(row team team/acme spent_nusd)" $((3 * R))

# ---- a team's tpm: the first request takes the bucket, the next 429 --------------------
codes="$(call b1 "$KT1") $(call b2 "$KT1")"
check_eq "team tokens' tpm $EST admits one request of $EST tokens, then 429" "$codes" "200 429"
check_eq "... naming team/tokens" "$(node_of b2)" "team/tokens"
check "... on tokens per minute" grep -qF "Rate limit reached for team/tokens on tokens per minute (TPM): Limit $EST" "$T/b2.body"

# ---- the key's own rpm refuses after the team admitted: the team gets its request back ----
codes="$(call c1 "$KQ") $(call c2 "$KQ")"
check_eq "key q's own rpm 1: 200, then 429" "$codes" "200 429"
check_eq "... naming the key, not the team" "$(node_of c2)" ""
check "... in the key's words" grep -qF "Rate limit reached for key $(id_of "$KQ")" "$T/c2.body"
kv_ctl limits q --rpm 0 >/dev/null
codes="$(call c3 "$KQ") $(call c4 "$KQ") $(call c5 "$KQ") $(call c6 "$KQ") $(call c7 "$KQ")"
check_eq "team quick (rpm 5) had 4 left: the key's refusal gave its one back" "$codes" "200 200 200 200 429"
check_eq "... and the fifth names team/quick" "$(node_of c7)" "team/quick"

# ---- [auth jwt]: a user's rpm and its model cap ------------------------------------------
if [ "$JWT" = 1 ]; then
	# bo's group (ops) is no [team]: bo's own node is all that limits it
	BO=$(tok groups_string)
	CBODY=${BODY/kv-budget-1/kv-cap-1}
	codes=
	for i in 1 2 3 4; do codes="$codes $(call v$i "$BO" "$CBODY")"; done
	check_eq "model_budget kv-cap*:3R: user bo gets 3 kv-cap answers, then 402" "$codes" " 200 200 200 402"
	check_eq "... naming model/user/bo/kv-cap*" "$(node_of v4)" "model/user/bo/kv-cap*"
	check "... in its message" grep -qF "budget exceeded for model/user/bo/kv-cap*" "$T/v4.body"
	check_eq "another model of the same user is not capped" "$(call v5 "$BO")" 200
	check_eq "the cap spent exactly 3 requests" "$(row model 'model/user/bo/kv-cap*' spent_nusd)" $((3 * R))
	# 4 answered (the 402 took no request): user_rpm 4 refuses the next
	check_eq "user_rpm 4: user bo's fifth answer is a 429" "$(call u1 "$BO")" 429
	check_eq "... naming user/bo" "$(node_of u1)" "user/bo"
	check "... in its message" grep -qF "Rate limit reached for user/bo on requests per minute (RPM): Limit 4" "$T/u1.body"
	# ana's first group, payments, is a [team]: its rpm (3, spent above) refuses her
	check_eq "user ana@x.io in team payments: 429 from the team" "$(call u2 "$(tok good_EdDSA)")" 429
	check_eq "... naming team/payments" "$(node_of u2)" "team/payments"
fi

# ---- the status page's tree and /metrics per team, checked against the ledger -------------
usd_of() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
curl -sS -m 30 "http://127.0.0.1:$KV_STATUS_PORT/metrics" >"$T/metrics"
curl -sS -m 30 "http://127.0.0.1:$KV_STATUS_PORT/" >"$T/page.html"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1
	check "promtool check metrics accepts /metrics with the team series" test $? = 0
	cat "$T/promtool.out"
fi
metric() { sed -n "s/^$1{team=\"$2\"} //p" "$T/metrics"; }
attr() {	# NODE ATTR: the status page's data-ATTR of NODE's row
	grep -o "<tr data-node=\"$1\"[^>]*>" "$T/page.html" | sed -n "s/.* data-$2=\"\([0-9]*\)\".*/\1/p"
}
check_eq "/metrics: team payments spent its 3 requests exactly" \
	"$(metric kilovolt_team_spent_dollars payments)" "$(usd_of $((3 * R)))"
check_eq "/metrics: team payments' requests" "$(metric kilovolt_team_requests_total payments)" 3
check_eq "/metrics: team payments' rpm" "$(metric kilovolt_team_rate_limit_requests_per_minute payments)" 3
# a4, and ana's u2 when the JWT part ran
check_eq "/metrics: team payments' 429s" "$(metric kilovolt_team_rate_limited_total payments)" $((1 + JWT))
check_eq "/metrics: team acme's budget" "$(metric kilovolt_team_budget_dollars acme)" "100.000000000"
check_eq "/metrics: a team without a budget shows 0" "$(metric kilovolt_team_budget_dollars payments)" "0.000000000"
for t in acme payments tokens quick; do
	check_eq "/metrics: team $t's spend is the ledger's" "$(metric kilovolt_team_spent_dollars $t)" \
		"$(usd_of "$(row team team/$t spent_nusd)")"
	check_eq "/metrics: team $t's reserved is the ledger's" "$(metric kilovolt_team_reserved_dollars $t)" \
		"$(usd_of "$(row team team/$t reserved_nusd)")"
	check_eq "the status page: team $t's spend is the ledger's" "$(attr team/$t spent-nusd)" \
		"$(row team team/$t spent_nusd)"
	check_eq "the status page: team $t's requests are the ledger's" "$(attr team/$t requests)" \
		"$(row team team/$t requests)"
done
check_eq "the status page: team acme's budget" "$(attr team/acme budget-nusd)" 100000000000
check_eq "the status page: team payments spent exactly 3 requests" "$(attr team/payments spent-nusd)" $((3 * R))
check "the status page shows the teams each under its parent (acme, then payments)" \
	sh -c "grep -o 'data-node=\"team/[a-z]*\"' '$T/page.html' | head -2 | tr '\n' ' ' | grep -qx 'data-node=\"team/acme\" data-node=\"team/payments\" '"
if [ "$JWT" = 1 ]; then
	check_eq "the status page: user bo's spend is the ledger's" "$(attr user/bo spent-nusd)" \
		"$(row user user/bo spent_nusd)"
	check "... with its top model, the kv-cap* cap" grep -q 'kv-cap\* [$][0-9.]* of [$]' "$T/page.html"
fi

kv_finish
