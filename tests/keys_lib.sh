# keys_lib.sh: what the issued-key tests (t_keys_api, t_keys_names,
# t_keys_slots) share, sourced right after tests/lib.sh:
#
#	. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
#
# Skips without curl or jq. Sets ADMIN, a random admin token, exported as
# KV_TEST_ADMIN (the config's admin_token = env:KV_TEST_ADMIN), and auth,
# the curl arguments that present it. Once kv_start has run:
#	api METHOD PATH [CURL ARGS]    the status code; the body in $T/api
#	chat KEY [OUT]                 a small chat completion's status code
#	field ID FIELD                 FIELD of key ID in kvctl keys --json
#	ledger_keys                    the keys, for before/after comparisons
#	refused WHAT CODE METHOD PATH [CURL ARGS]
#	                               the admin API answers CODE with a JSON
#	                               error, and the ledger is as it was

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
ADMIN=admin-$RANDOM-$RANDOM-token
export KV_TEST_ADMIN=$ADMIN
auth=(-H "Authorization: Bearer $ADMIN")

api() {
	local m=$1 p=$2
	shift 2
	curl -sS -m 30 -o "$T/api" -w '%{http_code}' -X "$m" "$@" \
		"http://127.0.0.1:$KV_STATUS_PORT$p"
}
# chat KEY [OUT]: the body in OUT (default $T/body)
chat() {
	kv_curl /v1/chat/completions -o "${2:-$T/body}" -w '%{http_code}' \
		-H "Authorization: Bearer $1" -H 'content-type: application/json' \
		-d '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hello there"}]}'
}
field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
# Without what refills with time alone (a rate limit's remaining).
ledger_keys() {
	kv_ctl keys --json | jq -S 'del(.keys[].requests_remaining, .keys[].tokens_remaining)'
}
refused() {
	local what=$1 want=$2
	shift 2
	ledger_keys >"$T/before"
	check_eq "$what: $want" "$(api "$@")" "$want"
	check "... with a JSON error" jq -e '.error | type == "string" and length > 0' "$T/api"
	ledger_keys >"$T/after"
	check "... and nothing changed in the ledger" diff "$T/before" "$T/after"
}
