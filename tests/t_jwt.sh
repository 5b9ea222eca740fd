#!/bin/bash
# t_jwt: kilovolt's JWT verifier (common/jwt.c, common/jwks.c, through
# tests/jwt_check under a config's [auth jwt]) on tokens it did not make:
#  - minted by the jose library (pinned in tests/sdk/package.json) with a
#    key of each algorithm, and every bad case: a wrong key, alg none, HS256
#    keyed with the RSA public key, expired, nbf ahead, wrong aud and iss, a
#    key rotated out of the JWKS, a missing kid (refused with three keys,
#    taken with one), changed claims;
#  - issued by oidc-provider (a certified OpenID provider, pinned) by the
#    client_credentials grant, one per algorithm, with the JWKS its
#    discovery document names;
# the master's fetch of the provider's JWKS (jwks_url) into LEDGER.jwks, kept
# across a restart with the provider down; and kilovoltd -t / -T on
# [auth jwt] with those key sets.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

kv_sdk_setup || skip "jose and oidc-provider are not available (node/npm missing or npm unreachable)"
CHECK_BIN=$top_builddir/tests/jwt_check

# jwt_config NAME ISSUER JWKS [EXTRA]: $T/NAME.ini with an [auth jwt].
jwt_config() {
	printf '[upstream o]\nurl = http://127.0.0.1:9\npaths = /v1/\n\n[auth jwt]\n%s\n%s\n%s\n%s' \
	    "issuer = $2" "audience = kilovolt" "jwks_file = $3" "${4:-}" >"$T/$1.ini"
}

# verdicts CONFIG CASES: each case's token through jwt_check, its verdict
# beside the expected one ("NAME EXPECTED GOT" lines in $T/verdicts).
verdicts() {
	cut -f3 "$2" | "$CHECK_BIN" "$1" >"$T/got" 2>"$T/check.err" ||
		{ fail "jwt_check $1 runs (exit $?: $(cat "$T/check.err"))"; return; }
	awk -F'\t' '{ print ($1 == "ok" ? "ok:" $2 ":" $3 : "refused:" $2) }' "$T/got" |
		paste <(cut -f1,2 "$2") - >"$T/verdicts"
	while IFS=$'\t' read -r name want got; do
		check_eq "$name: $want" "$got" "$want"
	done <"$T/verdicts"
	[ "$(wc -l <"$T/got")" = "$(wc -l <"$2")" ] || fail "jwt_check answers every token of $2"
}

# ---- tokens minted by jose -------------------------------------------------
if ! timeout 120 node "$KV_SDK/jwt_mint.mjs" "$T" >"$T/mint.out" 2>"$T/mint.err"; then
	fail "jwt_mint.mjs mints the tokens: $(tail -n 3 "$T/mint.err")"
	kv_finish
fi
ISS=https://idp.example/realms/acme
jwt_config jose "$ISS" jwks.json
jwt_config one "$ISS" jwks_one.json
grep -v '^one_key' "$T/mint.out" >"$T/jose.cases"
grep '^one_key' "$T/mint.out" >"$T/one.cases"
check "jose minted 19 cases and one for a set of one key" \
    test "$(wc -l <"$T/jose.cases") $(wc -l <"$T/one.cases")" = "19 1"
verdicts "$T/jose.ini" "$T/jose.cases"
verdicts "$T/one.ini" "$T/one.cases"
# the kid-less token is refused by the set of three
grep '^one_key' "$T/mint.out" | sed 's/\tok:[^\t]*\t/\trefused:unknown kid\t/' >"$T/three.cases"
verdicts "$T/jose.ini" "$T/three.cases"
# only RS256 accepted: the EdDSA token is refused for its algorithm
jwt_config rs_only "$ISS" jwks.json "algorithms = RS256"
grep -P '^good_(RS256|EdDSA)\t' "$T/mint.out" |
	sed 's/^\(good_EdDSA\t\)[^\t]*/\1refused:algorithm not accepted/' >"$T/rs_only.cases"
verdicts "$T/rs_only.ini" "$T/rs_only.cases"

# ---- tokens issued by an OpenID provider -----------------------------------
if timeout 120 node "$KV_SDK/jwt_oidc.mjs" "$T" >"$T/oidc.out" 2>"$T/oidc.err"; then
	OP_ISS=$(sed -n 's/^issuer\t//p' "$T/oidc.out")
	grep '^oidc_' "$T/oidc.out" >"$T/oidc.cases"
	check "oidc-provider issued a token per algorithm" test "$(wc -l <"$T/oidc.cases")" = 3
	jwt_config oidc "$OP_ISS" oidc_jwks.json
	verdicts "$T/oidc.ini" "$T/oidc.cases"
	# the provider's tokens under jose's keys: none of its kids is there
	sed 's/\tok:[^\t]*\t/\trefused:unknown kid\t/' "$T/oidc.cases" >"$T/cross.cases"
	jwt_config cross "$OP_ISS" jwks.json
	verdicts "$T/cross.ini" "$T/cross.cases"
else
	fail "oidc-provider issues tokens: $(grep -v WARNING "$T/oidc.err" | tail -n 5)"
fi

# ---- the master fetches the provider's JWKS and keeps it -------------------
mkdir -p "$T/op"
node "$KV_SDK/jwt_oidc.mjs" "$T/op" serve >"$T/op.out" 2>"$T/op.err" &
OP_PID=$!
kv_track "$OP_PID"
if kv_wait_for 60 grep -qs '^ready' "$T/op.out"; then
	OP_ISS=$(sed -n 's/^issuer\t//p' "$T/op.out")
	OP_JWKS=$(sed -n 's/^jwks_uri\t//p' "$T/op.out")
	grep '^oidc_' "$T/op.out" >"$T/op.cases"
	kv_write_config <<EOF
[auth jwt]
issuer = $OP_ISS
audience = kilovolt
jwks_url = $OP_JWKS
EOF
	kv_start
	check "the master keeps the provider's JWKS beside the ledger (ledger.jwks)" \
	    kv_wait_for 30 test -s "$T/ledger.jwks"
	check "... and says so" kv_wait_for 10 grep -q "jwks: 3 keys from $OP_JWKS" "$KV_LOG"
	jwt_config kept "$OP_ISS" ledger.jwks
	verdicts "$T/kept.ini" "$T/op.cases"
	kv_stop
	kv_kill "$OP_PID" 5
	wait "$OP_PID" 2>/dev/null
	# a restart while the provider is down: the kept set, and a warning
	kv_start
	check "a restart with the provider down reads the kept set" \
	    kv_wait_for 10 grep -q "jwks: 3 keys in the cache $T/ledger.jwks" "$KV_LOG"
	check "... warns of the failed fetch (KV0960)" kv_wait_for 30 grep -q "KV0960" "$KV_LOG"
	check "... and keeps the set" test -s "$T/ledger.jwks"
	verdicts "$T/kept.ini" "$T/op.cases"
	kv_stop
else
	fail "oidc-provider serves its JWKS: $(grep -v WARNING "$T/op.err" | tail -n 5)"
fi

# ---- kilovoltd -t and -T ---------------------------------------------------
for c in jose oidc; do
	check "kilovoltd -t: [auth jwt] with the $c key set" \
	    eval "'$KV_DAEMON_BIN' -t -c '$T/$c.ini' >/dev/null"
done
"$KV_DAEMON_BIN" -T -c "$T/jose.ini" >"$T/dump.ini" 2>/dev/null
sed -n '/^\[auth jwt\]/,$p' "$T/dump.ini" >"$T/dump.auth"
printf '%s\n' "[auth jwt]" "issuer = $ISS" "audience = kilovolt" "; jwks_url: not set" \
    "jwks_file = $T/jwks.json" "algorithms = RS256 ES256 EdDSA" "clock_skew = 1m" \
    "user_claim = sub" "team_claim = groups" "; model_budget: not set" \
    "; header: not set (the token is the Authorization: Bearer credential)" >"$T/want.auth"
check "-T shows [auth jwt] with its defaults" diff "$T/want.auth" "$T/dump.auth"
check "-T's output reads back" eval "'$KV_DAEMON_BIN' -t -c '$T/dump.ini' >/dev/null"
printf '{"keys":[{"kty":"OKP","crv":"Ed25519","x":"%s","d":"%s"}]}' \
    "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" \
    >"$T/private.json"
jwt_config private "$ISS" private.json
check "kilovoltd -t refuses a JWKS that holds a private key" \
    eval "! '$KV_DAEMON_BIN' -t -c '$T/private.ini' 2>'$T/private.err'"
check "... and says why" grep -q "a private key member" "$T/private.err"
jwt_config hmac "$ISS" jwks.json "algorithms = RS256 HS256"
check "kilovoltd -t refuses HS256 in algorithms" \
    eval "! '$KV_DAEMON_BIN' -t -c '$T/hmac.ini' 2>/dev/null"

kv_finish
