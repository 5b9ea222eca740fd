#!/bin/bash
# t_jwt_admission: identities from JWT on the request path (issue 36). Tokens
# minted by the jose library (tests/sdk/jwt_mint.mjs, as in t_jwt.sh) are a
# client's bearer credential: a good one is served and charged to its user
# node (user/ana@x.io) and the team its groups name, exactly, nothing left
# reserved; the user's budget refuses with a 402 naming user/ana@x.io; an
# expired, wrong-audience, alg-none or unknown-kid token gets 401 with its
# reason; none of the refused reaches the mock, and no token ever does (the
# upstream's own api_key goes instead); a key set rotated in jwks_file is
# picked up without a restart; an upstream without api_key refuses JWTs.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
kv_sdk_setup || skip "jose is not available (node/npm missing or npm unreachable)"
export LC_ALL=C		# ${#BODY} counts bytes

if ! timeout 120 node "$KV_SDK/jwt_mint.mjs" "$T" >"$T/mint.out" 2>"$T/mint.err"; then
	fail "jwt_mint.mjs mints the tokens: $(tail -n 3 "$T/mint.err")"
	kv_finish
fi
tok() { awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$T/mint.out"; }

M=20
# As in t_teams: at these prices a request's real cost is its reservation.
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"a token for a user"}]}'
R=$(ceil_cost ${#BODY} $M 1000 1000000000)
UPKEY=sk-upstream-own-key-77777

cp "$T/jwks_one.json" "$T/keys.json"	# d1 only: r1 comes with the rotation
kv_start_mock
kv_write_config <<EOF
[upstream openai]
api_key = $UPKEY

[price kv-budget*]
input = 0.000001
output = 1.00

[team acme]
budget = 100

[team payments]
parent = acme
budget = 50

[auth jwt]
issuer = https://idp.example/realms/acme
audience = kilovolt
jwks_file = $T/keys.json
user_budget = $(usd $((3 * R)))
EOF
kv_start

# call NAME TOKEN [PATH]: the code, body in $T/NAME.body, head in $T/NAME.head
call() {
	curl -sS -m 60 -o "$T/$1.body" -D "$T/$1.head" -w '%{http_code}' \
		-H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" --data-binary "$BODY" "$KV_URL${3:-/v1/chat/completions}"
}
# reached: the requests the mock logged since the last call
seen=0
reached() {
	local n
	n=$(grep -c '^POST /v1/' "$MOCK_LOG")
	echo $((n - seen)) >"$T/reached"
	seen=$n
}
check_reached() { reached; check_eq "$1" "$(cat "$T/reached")" "$2"; }

# ---- the key set, rotated without a restart ------------------------------------------
check_eq "an RS256 token before its key is in the set: 401" "$(call r1 "$(tok good_RS256)")" 401
check "... with the verifier's reason" grep -q "invalid token: unknown kid" "$T/r1.body"
check_eq "... in the provider's error shape" "$(jq -r .error.type "$T/r1.body")" "invalid_request_error"
check_eq "an EdDSA token of the set: 200" "$(call d1 "$(tok good_EdDSA)")" 200
check_reached "... reached the mock once" 1
cp "$T/jwks.json" "$T/keys.new" && mv "$T/keys.new" "$T/keys.json"
served_r1() { [ "$(call r1 "$(tok good_RS256)")" = 200 ]; }
check "the rotated set is read without a restart: the RS256 token is served" kv_wait_for 30 served_r1
check_reached "... reached the mock once" 1

# ---- refused tokens: 401 with the reason, nothing upstream --------------------------
for c in "expired:expired" "wrong_aud:wrong audience" "alg_none:algorithm not accepted" \
    "rotated_kid:unknown kid" "wrong_iss:wrong issuer"; do
	name=${c%%:*} why=${c#*:}
	check_eq "$name: 401" "$(call "$name" "$(tok "$name")")" 401
	check "... says '$why'" grep -qF "invalid token: $why" "$T/$name.body"
done
check_reached "no refused token reached the mock" 0

# ---- the user's budget: 3 requests, then a 402 naming user/ana@x.io ---------------------
check_eq "a third request within the user's budget: 200" "$(call e1 "$(tok good_ES256)")" 200
check_eq "a fourth: 402" "$(call over "$(tok good_RS256)")" 402
check_eq "... naming the user node" \
	"$(tr -d '\r' <"$T/over.head" | sed -n 's/^x-kilovolt-budget-node: //p')" "user/ana@x.io"
check "... in its message" grep -qF "budget exceeded for user/ana@x.io" "$T/over.body"
check_reached "the refused request reached no one (the third did)" 1

row() {		# BY NODE FIELD
	kv_ctl report --by "$1" --json | jq -r --arg n "$2" ".rows[] | select(.node == \$n) | .$3"
}
settled() { [ "$(row user user/ana@x.io reserved_nusd)" = 0 ] &&
	[ "$(row team team/payments reserved_nusd)" = 0 ] && [ "$(row team team/acme reserved_nusd)" = 0 ]; }
check "every reservation is released" kv_wait_for 30 settled
kv_ctl report --by user
kv_ctl report --by team
check_eq "the user is charged its three requests exactly" "$(row user user/ana@x.io spent_nusd)" $((3 * R))
check_eq "... its budget is user_budget" "$(row user user/ana@x.io budget_nusd)" $((3 * R))
check_eq "... and so is its team (payments, its first configured group)" \
	"$(row team team/payments spent_nusd)" $((3 * R))
check_eq "... and the org" "$(row team team/acme spent_nusd)" $((3 * R))
check_eq "... three requests counted" "$(row user user/ana@x.io requests)" 3

# ---- a user none of whose groups is a team: its own node only -------------------------
check_eq "bo (groups: ops, no such team): 200" "$(call bo "$(tok groups_string)")" 200
check_reached "... reached the mock once" 1
check "... charged to user/bo" kv_wait_for 30 test "$(row user user/bo spent_nusd)" = "$R"
check_eq "... and to no team" "$(row team team/acme spent_nusd)" $((3 * R))

# ---- the token is never forwarded ---------------------------------------------------
auth_of() { printf %s "$1" | sha256sum | cut -c1-12; }
up=$(auth_of "$UPKEY")
check_eq "every request the mock saw carried the upstream's own key" \
	"$(grep -c "auth=$up " "$MOCK_LOG") $(grep -c '^POST /v1/' "$MOCK_LOG")" "4 4"
for name in good_RS256 good_EdDSA good_ES256 groups_string; do
	check "the $name token never reached the mock" \
	    sh -c "! grep -q 'auth=$(auth_of "$(tok $name)") ' '$MOCK_LOG'"
done

# ---- an upstream that forwards the client's credential refuses JWT users ---------------
check_eq "/v1/messages (an upstream without api_key): 401" \
	"$(call anth "$(tok good_EdDSA)" /v1/messages)" 401
check "... saying it needs its own api_key" grep -q "needs its own api_key" "$T/anth.body"
check_eq "... and in Anthropic's error shape" "$(jq -r .type "$T/anth.body")" "error"
check_reached "... nothing reached the mock" 0
kv_finish
