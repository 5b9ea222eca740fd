#!/bin/bash
# t_bedrock_route: the request side of Bedrock up to admission (issue 35),
# with the C mock playing Bedrock's runtime and, on a port of its own, its
# control plane. A Bedrock path goes to the bedrock upstream, other paths
# where they went; an ARN's %2F passes inside the model id of a Bedrock path
# only, the path reaches Bedrock byte for byte and the request is priced as
# the inference profile the ARN names; a request the client signed with
# SigV4 (header or presigned query) gets 401 and nothing reaches the mock;
# errors on Bedrock paths come in Bedrock's shape; the control plane's
# reads go to control_url, relayed free ($0 in the ledger); what reaches
# either is signed, and the client's kilovolt key never does.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"

kv_start_mock
kv__mock runtime || { fail "start the Bedrock runtime mock"; kv_finish; }
RT_PORT=$KV__PORT RT_LOG=$T/runtime.log
kv__mock control || { fail "start the Bedrock control-plane mock"; kv_finish; }
CTL_PORT=$KV__PORT CTL_LOG=$T/control.log

K=kvk-bedrock-route-1
kv_write_config <<EOF
[server]
request_log = $T/requests.log

[upstream br]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$RT_PORT
control_url = http://127.0.0.1:$CTL_PORT

[key dev]
key = $K

[price us.anthropic.claude-sonnet-4*]
input = 3.00
output = 15.00
EOF
# Whatever signs the bedrock upstream's requests finds credentials here,
# never on the network.
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true
kv_start

rid() { grep -i '^x-kilovolt-request-id:' "$1" | tr -d '\r' | cut -d' ' -f2; }
logged() {	# logged HEADERS FIELD: FIELD of the request log's line for that response
	kv_wait_for 5 grep -q "$(rid "$1")" "$T/requests.log"
	grep "\"request_id\":\"$(rid "$1")\"" "$T/requests.log" | jq -r ".$2"
}
rt_count() { wc -l <"$RT_LOG"; }
BODY='{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'

# ---- routing by path, the ARN priced as its profile ------------------------
ARN='arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-20250514-v1%3A0'
code=$(post "$K" "/model/$ARN/invoke" "$BODY" -D "$T/arn.h")
check_eq "InvokeModel with an encoded ARN: 200" "$code" 200
check "the runtime mock got the path byte for byte" grep -qF "POST /model/$ARN/invoke " "$RT_LOG"
check_eq "... and the other mock nothing for it" "$(grep -c /model/ "$MOCK_LOG")" 0
check_eq "priced as the inference profile the ARN names" "$(logged "$T/arn.h" model)" \
	us.anthropic.claude-sonnet-4-20250514-v1:0
check_eq "routed to the bedrock upstream" "$(logged "$T/arn.h" upstream)" br
in=$(jq .usage.input_tokens "$T/out") out=$(jq .usage.output_tokens "$T/out")
kv_wait_for 10 settled "$K"
check_eq "charged at the profile's price: $in x \$3 + $out x \$15 per 1M" "$(spent "$K")" \
	"$((in * 3000 + out * 15000))"
code=$(post "$K" /model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke "$BODY" -H "x-api-key: $K")
check_eq "the key in x-api-key too: 200" "$code" 200
signed_no_key() {	# the runtime's line for that path: signed, no x-api-key
	local l
	l=$(awk -v t="$1" '$2 == t' "$RT_LOG")
	[[ ${l,,} == *headers=*x-amz-date* ]] && [[ ${l,,} != *x-api-key* ]]
}
check "... the runtime got it signed, with no x-api-key" \
	signed_no_key /model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke
check_eq "the kilovolt key never reached the runtime" "$(grep -c "auth=$(id_of "$K")" "$RT_LOG")" 0
code=$(post "$K" /v1/messages '{"model":"claude-sonnet-4","max_tokens":8,"messages":[]}' -H 'anthropic-version: 2023-06-01')
check_eq "/v1/messages still goes to the anthropic upstream: 200" "$code" 200
check "... the base mock served it" grep -q '^POST /v1/messages ' "$MOCK_LOG"

# ---- %2F inside the model id of a Bedrock path only ------------------------
n0=$(rt_count) m0=$(wc -l <"$MOCK_LOG")
for p in "/v1/chat%2Fcompletions" "/model/$ARN/invoke/x" "/v1/model/$ARN/invoke" "/model/a/b%2Fc/invoke"; do
	code=$(post "$K" "$p" "$BODY")
	check_eq "%2F outside a Bedrock model id ($p): 400" "$code" 400
done
check "... saying why" jq -e '.error.message | test("percent-encoded")' "$T/out"
code=$(post "$K" "/model/anthropic.x%2Fcheap/invoke" "$BODY" -D "$T/notarn.h")
check_eq "a '/' in a model id that is not an ARN: 400" "$code" 400
check "... in Bedrock's shape, saying why" jq -e '.message | test("not an ARN")' "$T/out"
long=$(printf 'a%.0s' $(seq 1 96))
check_eq "a model id of 96 bytes: 400" "$(post "$K" "/model/$long/converse" '{}')" 400
check_eq "a bad escape in the model id: 400" "$(post "$K" "/model/abc%zz/invoke" "$BODY")" 400
check_eq "none of them reached a mock" "$(rt_count) $(wc -l <"$MOCK_LOG")" "$n0 $m0"

# ---- the client's own SigV4: 401, nothing sent -----------------------------
code=$(kv_curl /model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke -o "$T/out" -w '%{http_code}' \
	"${J[@]}" -d "$BODY" -D "$T/sig.h" \
	-H 'Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abcd' \
	-H 'X-Amz-Date: 20260101T000000Z')
check_eq "a request signed with SigV4: 401" "$code" 401
check "... saying to use a kilovolt key as a Bedrock API key" \
	jq -e '.message | test("AWS_BEARER_TOKEN_BEDROCK")' "$T/out"
check "... in Bedrock's shape (x-amzn-ErrorType)" grep -qi '^x-amzn-ErrorType: UnrecognizedClientException' "$T/sig.h"
code=$(kv_curl "/inference-profiles?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=x&X-Amz-Signature=ab" \
	-o "$T/out" -w '%{http_code}' -H "Authorization: Bearer $K")
check_eq "a presigned URL (X-Amz-Signature in the query): 401" "$code" 401
check_eq "nothing reached a mock" "$(rt_count) $(wc -l <"$CTL_LOG") $(wc -l <"$MOCK_LOG")" "$n0 0 $m0"

# ---- Bedrock's error shape ----------------------------------------------------
code=$(post "$K" /model/amazon.nova-pro-v1:0/invoke '{"inputText":"hi"}' -D "$T/nova.h")
check_eq "InvokeModel of a model not Anthropic's: 404" "$code" 404
check "... {\"message\"} saying to use Converse" jq -e '(.message | test("use Converse")) and (keys == ["message"])' "$T/out"
check "... x-amzn-ErrorType: ResourceNotFoundException" grep -qi '^x-amzn-ErrorType: ResourceNotFoundException' "$T/nova.h"
code=$(post kvk-stranger /model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke "$BODY" -D "$T/unk.h")
check_eq "an unknown key on a bedrock upstream (virtual keys, fail closed): 401" "$code" 401
check "... in Bedrock's shape" jq -e '.message == "unknown API key"' "$T/out"
code=$(post "$K" /model/us.anthropic.claude-sonnet-4-20250514-v1:0/invoke '{"max_tokens":8,"messages":[],"model":"claude-haiku"}')
check_eq "a \"model\" in an InvokeModel body: 400" "$code" 400
check_eq "... and none of these reached the runtime" "$(rt_count)" "$n0"

# ---- the control plane: relayed to control_url, free -------------------------
before=$(spent "$K")
code=$(kv_curl "/inference-profiles?type=SYSTEM_DEFINED" -o "$T/out" -w '%{http_code}' \
	-D "$T/ctl.h" -H "Authorization: Bearer $K")
check_eq "GET /inference-profiles?type=SYSTEM_DEFINED (Claude Code's first call): 200" "$code" 200
check "... the control-plane mock answered it" grep -q '^GET /inference-profiles?type=SYSTEM_DEFINED ' "$CTL_LOG"
check "... the profiles came back" jq -e '.inferenceProfileSummaries[0].type == "SYSTEM_DEFINED"' "$T/out"
check "... signed as the runtime's requests are" grep -qi '^GET /inference-profiles.*headers=.*x-amz-date' "$CTL_LOG"
check_eq "... and the kilovolt key never reached it" "$(grep -c "auth=$(id_of "$K")" "$CTL_LOG")" 0
code=$(kv_curl "/foundation-models/anthropic.claude-sonnet-4-20250514-v1:0" -o /dev/null -w '%{http_code}' \
	-H "x-api-key: $K")
check_eq "GET /foundation-models/{id}: 200" "$code" 200
check_eq "the runtime got neither" "$(rt_count)" "$n0"
check_eq "... logged at \$0" "$(logged "$T/ctl.h" cost_nusd)" 0
kv_wait_for 10 settled "$K"
check_eq "the key's spend did not move" "$(spent "$K")" "$before"
code=$(kv_curl /inference-profiles -o "$T/out" -w '%{http_code}' -D "$T/post.h" -H "Authorization: Bearer $K" -d '{}')
check_eq "POST to the control plane: 404" "$code" 404
check "... in Bedrock's shape" grep -qi '^x-amzn-ErrorType: ResourceNotFoundException' "$T/post.h"

kv_finish
