#!/bin/bash
# t_meter: what is metered, free or refused, through the real daemon and the
# mock. Every check of a refusal also checks that the mock received nothing;
# every money check reads the ledger (kvctl --json).
#  - the metered and free lists; anything else under an upstream's paths is
#    a 404 naming free_paths; free_paths relays at $0 and counts as free;
#  - batches, stored objects and background responses are refused by
#    default; with virtual keys stored objects stay refused even when
#    listed, unless shared_stored_objects = yes;
#  - dot segments, //, %2F %2E %5C in the target are a 400.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
# requests the mock received, its own /mock/stats not counted
jqb() { jq -e "$1" "$T/body" >/dev/null; }
mock_reqs() { grep -vc '^GET /mock/stats' "$MOCK_LOG"; }
K=sk-kvtest-meter-0001
KID=$(id_of "$K")
AUTH="Authorization: Bearer $K"

kv_start_mock
kv_write_config <<EOF
[upstream openai]
free_paths = /v1/images /v1/batches
[upstream anthropic]
api_key = env:UPSTREAM_KEY
free_paths = /v1/messages/batches
[upstream catchall]
url = http://127.0.0.1:$MOCK_PORT
paths = /v1

; an api_key upstream admits only configured keys (issue 20)
[key meter]
key = $K
EOF
UPSTREAM_KEY=sk-ant-provider-0001 kv_start
export UPSTREAM_KEY=sk-ant-provider-0001

# req METHOD PATH [curl args]: status code and body into $T/body
req() {
	local m=$1 p=$2
	shift 2
	kv_curl "$p" -X "$m" -o "$T/body" -w '%{http_code}' -H "$AUTH" "$@"
}

# refused DESC WANT_STATUS METHOD PATH [curl args]: the gateway answers
# WANT_STATUS itself and the mock receives nothing.
refused() {
	local desc=$1 want=$2 before code
	shift 2
	before=$(mock_reqs)
	code=$(req "$@")
	check_eq "$desc: $want" "$code" "$want"
	check_eq "$desc: the mock received nothing" "$(mock_reqs)" "$before"
}

chat='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
J=(-H 'Content-Type: application/json')

# ---- the metered and free lists ---------------------------------------------
before=$(mock_reqs)
check_eq "chat completions are relayed" "$(req POST /v1/chat/completions "${J[@]}" -d "$chat")" 200
check "chat completions are charged" test "$(key_field "$KID" spent_nusd)" -gt 0
check_eq "GET /v1/models is free" "$(req GET /v1/models)" 200
check_eq "GET /v1/models/{id} is free" "$(req GET /v1/models/gpt-4o-mini)" 200
check_eq "count_tokens is free" "$(req POST /v1/messages/count_tokens "${J[@]}" \
	-d '{"model":"claude-sonnet-4","messages":[]}')" 200
check_eq "the four reached the mock once each" "$(mock_reqs)" $((before + 4))
check_eq "the key counts three free requests" "$(key_field "$KID" free_requests)" 3
check_eq "status counts them too" "$(kv_ctl status --json | jq .free_requests_total)" 3
check "metrics count them" bash -c "curl -sS http://127.0.0.1:$KV_STATUS_PORT/metrics |
	grep -q '^kilovolt_free_requests_total 3$'"

# ---- everything else under an upstream's paths -------------------------------
refused "/v1/audio/speech (not listed)" 404 POST /v1/audio/speech "${J[@]}" -d '{}'
check "the 404 names the setting" grep -q '\[upstream catchall\] free_paths' "$T/body"
check "the 404 is OpenAI's shape" jqb '.error.message'
refused "GET /v1/models/x/y" 404 GET /v1/models/x/y
refused "/v1/chat/completions/ (trailing slash)" 404 POST /v1/chat/completions/ "${J[@]}" -d "$chat"
spent0=$(key_field "$KID" spent_nusd)
before=$(mock_reqs)
check_eq "a listed free path is relayed" "$(req POST /v1/images/generations "${J[@]}" \
	-d '{"model":"dall-e-3","prompt":"x"}')" 200
check_eq "it reached the mock once" "$(mock_reqs)" $((before + 1))
check_eq "it was charged nothing" "$(key_field "$KID" spent_nusd)" "$spent0"
check_eq "and counted free" "$(key_field "$KID" free_requests)" 4

# ---- batches, stored objects, background responses ---------------------------
check_eq "OpenAI batches listed in free_paths (pass-through keys) are relayed" \
	"$(req POST /v1/batches "${J[@]}" -d '{"input_file_id":"f","endpoint":"/v1/chat/completions"}')" 200
refused "Anthropic batches (virtual keys, listed)" 404 POST /v1/messages/batches "${J[@]}" -d '{"requests":[]}'
check "the refusal names shared_stored_objects" grep -q 'shared_stored_objects = yes' "$T/body"
check "and is Anthropic's shape" jqb '.type == "error" and .error.message'
refused "stored chat completions (GET list)" 404 GET /v1/chat/completions
check "the refusal says stored-object" grep -q 'stored-object' "$T/body"
refused "GET /v1/responses/{id}" 404 GET /v1/responses/resp_bg_100_4000
refused "DELETE /v1/responses/{id}" 404 DELETE /v1/responses/resp_bg_100_4000
spent0=$(key_field "$KID" spent_nusd)
refused "background responses" 400 POST /v1/responses "${J[@]}" \
	-d '{"model":"gpt-4o-mini","input":"hi","background":true}'
check "the refusal says why" grep -q 'background' "$T/body"
check_eq "a refusal is charged nothing" "$(key_field "$KID" spent_nusd)" "$spent0"
check_eq "a foreground response is relayed" "$(req POST /v1/responses "${J[@]}" \
	-d '{"model":"gpt-4o-mini","input":"hi","background":false}')" 200

# ---- targets a provider could read differently --------------------------------
for t in '/v1/chat/completions/.' '/v1/chat/completions/%2e' '/v1/chat/completions/%2E%2e' \
	'/v1/models/../../x' '/v1//chat/completions' '/v1/chat%2fcompletions' \
	'/v1/chat%5Ccompletions' '/v1/./chat/completions'; do
	refused "target $t" 400 POST "$t" --path-as-is "${J[@]}" -d "$chat"
done
check "the 400 says why" jqb '.error.message | test("segment|percent")'

# ---- virtual keys: stored objects only with shared_stored_objects = yes --------
kv_stop
kv_write_config <<EOF
[upstream openai]
api_key = env:UPSTREAM_KEY
free_paths = /v1/responses /v1/chat/completions

; an api_key upstream admits only configured keys (issue 20)
[key meter]
key = $K
EOF
kv_start
refused "virtual keys: a listed stored response" 404 GET /v1/responses/resp_1
refused "virtual keys: listed stored completions" 404 GET /v1/chat/completions
check_eq "virtual keys: chat completions are still metered" \
	"$(req POST /v1/chat/completions "${J[@]}" -d "$chat")" 200
kv_stop
kv_write_config <<EOF
[upstream openai]
api_key = env:UPSTREAM_KEY
free_paths = /v1/responses
shared_stored_objects = yes

; an api_key upstream admits only configured keys (issue 20)
[key meter]
key = $K
EOF
kv_start
spent0=$(key_field "$KID" spent_nusd)
before=$(mock_reqs)
check_eq "shared_stored_objects = yes: the stored response is relayed" \
	"$(req GET /v1/responses/resp_1)" 200
check_eq "it reached the mock once" "$(mock_reqs)" $((before + 1))
check_eq "and cost nothing" "$(key_field "$KID" spent_nusd)" "$spent0"
refused "shared_stored_objects = yes: an unlisted one" 404 GET /v1/chat/completions

kv_finish
