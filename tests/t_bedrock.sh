#!/bin/bash
# t_bedrock: kilovolt in front of Bedrock (played by tests/sdk/bedrock_standin.mjs,
# which checks every SigV4 signature with AWS's own signer), with the real
# clients pointed at kilovolt and a kilovolt key as their Bedrock API key
# (and curl on Bedrock's OpenAI-compatible chat completions):
# the AWS SDK's Bedrock runtime client (InvokeModel, its stream, Converse,
# its stream, an ARN model id), Anthropic's Bedrock SDK and Claude Code in
# Bedrock mode. kilovoltd signs upstream with AWS_ACCESS_KEY_ID /
# AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN from its environment. For each
# client: its answers, and the key's spend in the ledger equal to the usage
# the client reports priced exactly at the configured prices, cache reads
# and writes included, nothing left reserved. Then: no kilovolt key ever
# reaches the stand-in, every request it gets is kilovolt's signature (or,
# on an upstream with api_key, the Bedrock API key as a bearer token); a
# client's own SigV4 is refused 401 with nothing sent on; a %2F ARN model id
# is forwarded byte for byte; a stream cut, corrupted or throttled is
# charged as a cut; 200 concurrent streams on one key never pass its budget.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"

MODEL=us.anthropic.claude-sonnet-4-5-20250929-v1:0
ARN=arn:aws:bedrock:us-east-1:123456789012:inference-profile/$MODEL
ARN_ENC=arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F$MODEL
TOKEN=kvStandinSessionToken0123456789
KA=kv-bedrock-aws-sdk-$$
KS=kv-bedrock-anthropic-sdk-$$
KC=kv-bedrock-claude-code-$$
KX=kv-bedrock-misc-$$
KB=kv-bedrock-api-key-$$
KCUT=kv-bedrock-cuts-$$
KO=kv-bedrock-openai-compat-$$
KC2=kv-bedrock-claude-code-skip-auth-$$
KE=kv-bedrock-aws-sdk-env-$$
KEY_MODEL=us.anthropic.claude-3-5-haiku-20241022-v1:0
KF=kv-bedrock-flood-$$
FLOOD_BUDGET=3000000	# $0.003 in nano-dollars

# Every Anthropic model on Bedrock at one set of prices (USD per 1M tokens),
# whole nano-dollars per token: input 3000, output 15000, cache read 300,
# cache write 3750.
P_IN=3000 P_OUT=15000 P_CR=300 P_CW=3750
kv_start_standin --session-token "$TOKEN"
kv_write_config <<EOF
[upstream bedrock]
provider = bedrock
region = us-east-1
url = $STANDIN_URL
control_url = $STANDIN_URL
paths = /model/ /openai/v1/

# The same Bedrock with a Bedrock API key instead of SigV4, for one model.
[upstream bedrock-key]
provider = bedrock
region = us-east-1
url = $STANDIN_URL
control_url = $STANDIN_URL
api_key = env:KV_TEST_BEDROCK_API_KEY
models = $KEY_MODEL

[price us.anthropic.*]
input = 3.00
output = 15.00
cached_input = 0.30
cache_write = 3.75

[key aws-sdk]
key = $KA

[key bedrock-sdk]
key = $KS

[key claude-code]
key = $KC

[key misc]
key = $KX

[key api-key]
key = $KB

[key cuts]
key = $KCUT

[key openai-compat]
key = $KO

[key claude-code-skip-auth]
key = $KC2

[key aws-sdk-env]
key = $KE

[price openai.gpt-oss-*]
input = 0.15
output = 0.60

[key flood]
key = $KF
budget = 0.003
EOF
# A bedrock upstream takes only the keys of [key] sections (virtual keys).
# kilovoltd's AWS credentials: the stand-in's, from its environment only.
# The Bedrock API key's variable is exported: kvctl reads the config too.
export KV_TEST_BEDROCK_API_KEY=$STANDIN_API_KEY
AWS_ACCESS_KEY_ID=$STANDIN_AK AWS_SECRET_ACCESS_KEY=$STANDIN_SK AWS_SESSION_TOKEN=$TOKEN \
	AWS_EC2_METADATA_DISABLED=true kv_start

check_eq "kvctl prices: $MODEL at the configured input, output, cache read and write" \
	"$(kv_ctl prices --json "$MODEL" | jq -c '.prices[0].prices |
		[.input_per_1m_nusd, .output_per_1m_nusd, .cached_input_per_1m_nusd, .cache_write_per_1m_nusd]')" \
	"[3000000000,15000000000,300000000,3750000000]"

lines() { wc -l <"$STANDIN_LOG"; }
after() { tail -n +$(($1 + 1)) "$STANDIN_LOG"; }
# cost_of: the nano-dollars of the usage lines ({input, output, cacheRead,
# cacheWrite}) on stdin, summed.
cost_of() {
	jq -s --argjson i $P_IN --argjson o $P_OUT --argjson r $P_CR --argjson w $P_CW \
		'map(.input * $i + .output * $o + .cacheRead * $r + .cacheWrite * $w) | add // 0'
}
reported() { sed -n 's/^usage //p' "$1"; }
settled_all() { [ "$(kv_ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0 ]; }

# ---- each client through kilovolt ----------------------------------------------

# through NAME KEY SCRIPT ARGS...: a client script at kilovolt with KEY as
# its Bedrock API key; then KEY's spend must be its reported usage priced.
through() {
	local name=$1 key=$2 script=$3 from
	shift 3
	from=$(lines)
	kv_node_checks "$name" "$T/$name.out" node "$KV_SDK/$script" "$KV_URL" "$key" "$@"
	kv_wait_for 30 settled_all
	check_eq "$name: the stand-in served each call it reported (${name} usage lines)" \
		"$(after "$from" | jq -c 'select(.status == 200 and .usage) | .usage' | jq -s -c 'map({input, output, cacheRead, cacheWrite})')" \
		"$(reported "$T/$name.out" | jq -s -c 'map({input, output, cacheRead, cacheWrite})')"
	check_eq "$name: the ledger's spend is the reported usage at the prices, cache included" \
		"$(spent "$key")" "$(reported "$T/$name.out" | cost_of)"
	check_eq "$name: nothing left reserved" "$(reserved "$key")" 0
}

through aws-sdk "$KA" aws_bedrock_test.mjs
through aws-sdk-env "$KE" aws_bedrock_test.mjs --env-token
through bedrock-sdk "$KS" anthropic_bedrock_test.mjs

# Claude Code: it lists the inference profiles (relayed to the control
# plane, free), probes models with max_tokens 1 (metered like any request,
# not in the usage it reports) and streams its answer.
from=$(lines)
kv_node_checks claude-code "$T/cc.out" node "$KV_SDK/claude_code_test.mjs" "$KV_URL" "$KC" "$T/cc-home"
kv_wait_for 30 settled_all
after "$from" >"$T/cc.log"
check "claude-code: its inference-profile list reached the stand-in, signed by kilovolt" \
	test "$(jq -r 'select(.target | startswith("/inference-profiles")) | "\(.status) \(.auth)"' "$T/cc.log" | sort -u)" \
	= "200 sigv4:$STANDIN_AK"
check_eq "claude-code: the usage it reports is the stand-in's for its streamed answer" \
	"$(reported "$T/cc.out" | cost_of)" \
	"$(jq -c 'select(.status == 200 and .op == "invoke-with-response-stream") | .usage' "$T/cc.log" | cost_of)"
check_eq "claude-code: the ledger's spend is every model call it made (probes included), priced" \
	"$(spent "$KC")" "$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/cc.log" | cost_of)"
check_eq "claude-code: nothing left reserved" "$(reserved "$KC")" 0

# Claude Code's other way to send a key: CLAUDE_CODE_SKIP_BEDROCK_AUTH=1 and
# ANTHROPIC_AUTH_TOKEN (its control-plane read then carries no key: 401).
from=$(lines)
kv_node_checks claude-code-skip-auth "$T/cc2.out" node "$KV_SDK/claude_code_test.mjs" "$KV_URL" "$KC2" \
	"$T/cc2-home" --skip-bedrock-auth
kv_wait_for 30 settled_all
after "$from" >"$T/cc2.log"
check_eq "claude-code-skip-auth: the usage it reports is the stand-in's" \
	"$(reported "$T/cc2.out" | cost_of)" "$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/cc2.log" | cost_of)"
check_eq "claude-code-skip-auth: the ledger's spend is its model calls, priced" \
	"$(spent "$KC2")" "$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/cc2.log" | cost_of)"

# ---- an upstream with a Bedrock API key ----------------------------------------

from=$(lines)
KV_BEDROCK_MODEL=$KEY_MODEL through api-key-upstream "$KB" aws_bedrock_test.mjs
check_eq "api-key-upstream: the stand-in got the upstream's Bedrock API key as a bearer token, no SigV4" \
	"$(after "$from" | jq -r '"\(.auth) \(.headers.authorization) \(.headers["x-amz-date"])"' | sort -u)" \
	"bearer Bearer $STANDIN_API_KEY null"
from=$(lines)
code=$(kv_curl "/model/$KEY_MODEL/invoke" -o "$T/xk.body" -w '%{http_code}' -H "x-api-key: $KB" \
	-H 'Content-Type: application/json' -d '{"anthropic_version":"bedrock-2023-05-31","max_tokens":9,"messages":[{"role":"user","content":"x-api-key"}]}')
check_eq "api-key-upstream: a client's x-api-key: 200" "$code" 200
check_eq "... the stand-in got the Bedrock API key as Bedrock takes it (Authorization: Bearer), not as x-api-key" \
	"$(after "$from" | jq -r '"\(.headers.authorization) \(.headers["x-api-key"])"')" "Bearer $STANDIN_API_KEY null"

# ---- what reached the stand-in -------------------------------------------------

for k in "$KA" "$KE" "$KS" "$KC" "$KC2" "$KB"; do
	check_eq "the kilovolt key ${k%-*} never reached the stand-in" "$(grep -c -F -- "$k" "$STANDIN_LOG")" 0
done
check_eq "every request for the SigV4 upstream carried kilovolt's SigV4 (with the session token)" \
	"$(jq -r --arg m "$KEY_MODEL" 'select((.model // "") | endswith($m) | not) | "\(.auth) \(.headers["x-amz-security-token"])"' "$STANDIN_LOG" | sort -u)" \
	"sigv4:$STANDIN_AK $TOKEN"

# ---- a client's own SigV4 is refused, nothing sent -------------------------------

from=$(lines)
kv_node_checks sigv4-client "$T/sig.out" node "$KV_SDK/aws_bedrock_test.mjs" "$KV_URL" x \
	--sigv4 "$STANDIN_AK" "$STANDIN_SK" --refused
check_eq "sigv4-client: every call refused with 401" \
	"$(sed -n 's/^refusal //p' "$T/sig.out" | jq -r .status | sort -u)" 401
check_eq "sigv4-client: nothing reached the stand-in" "$(lines)" "$from"
code=$(kv_curl "/model/$MODEL/invoke" -o "$T/sig.body" -w '%{http_code}' -H 'Content-Type: application/json' \
	-H "Authorization: AWS4-HMAC-SHA256 Credential=$STANDIN_AK/20261207/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=$(printf '%064d' 0)" \
	-H 'X-Amz-Date: 20261207T000000Z' -d '{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}')
check_eq "a SigV4 Authorization by curl: 401" "$code" 401
check_eq "... saying to use a kilovolt key as a Bedrock API key" \
	"$(jq -r '.message | test("AWS_BEARER_TOKEN_BEDROCK")' "$T/sig.body")" true
check_eq "... and nothing reached the stand-in" "$(lines)" "$from"

# ---- a %2F ARN model id, and x-api-key ------------------------------------------

body='{"anthropic_version":"bedrock-2023-05-31","max_tokens":20,"messages":[{"role":"user","content":"arn [[out=5]]"}]}'
from=$(lines)
code=$(kv_curl "/model/$ARN_ENC/invoke" -o "$T/arn.body" -w '%{http_code}' -H "x-api-key: $KX" \
	-H 'Content-Type: application/json' -d "$body")
check_eq "an encoded ARN model id (%3A, %2F) with x-api-key: 200" "$code" 200
check_eq "... forwarded byte for byte" "$(after "$from" | jq -r .target)" "/model/$ARN_ENC/invoke"
kv_wait_for 30 settled_all
check_eq "... and priced as the profile it names" "$(spent "$KX")" \
	"$(jq -c '.usage | {input: .input_tokens, output: .output_tokens, cacheRead: .cache_read_input_tokens, cacheWrite: .cache_creation_input_tokens}' "$T/arn.body" | cost_of)"

# ---- Bedrock's OpenAI-compatible chat completions ---------------------------------

from=$(lines)
code=$(post "$KO" /openai/v1/chat/completions \
	'{"model":"openai.gpt-oss-120b-1:0","max_tokens":30,"messages":[{"role":"user","content":"openai-compatible [[out=7]]"}]}')
check_eq "/openai/v1/chat/completions on the bedrock upstream: 200" "$code" 200
u1=$(jq -c '.usage | {input: .prompt_tokens, output: .completion_tokens, cacheRead: 0, cacheWrite: 0}' "$T/out")
code=$(post "$KO" /openai/v1/chat/completions \
	'{"model":"openai.gpt-oss-120b-1:0","max_tokens":30,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"streamed [[out=5]]"}]}')
check_eq "... streamed: 200" "$code" 200
u2=$(sed -n 's/^data: //p' "$T/out" | grep -v '^\[DONE\]' | jq -c 'select(.usage) | .usage | {input: .prompt_tokens, output: .completion_tokens, cacheRead: 0, cacheWrite: 0}')
check "... the stream's last chunk carried its usage" test -n "$u2"
check_eq "... both signed by kilovolt and served" "$(after "$from" | jq -r '"\(.auth) \(.status)"' | sort -u)" "sigv4:$STANDIN_AK 200"
kv_wait_for 30 settled_all
check_eq "... charged their usage at the price of openai.gpt-oss-* (0.15 / 0.60)" "$(spent "$KO")" \
	"$(printf '%s\n%s\n' "$u1" "$u2" | jq -s 'map(.input * 150 + .output * 600) | add')"

# ---- streams that break: cut, a bad CRC, a throttlingException --------------------

# Each is charged as a cut (README "How cuts, cancels and timeouts are
# charged"): the exact input and cache figures its message_start gave, plus
# the reservation's output (max_tokens, 50, more than the stand-in had sent),
# marked estimated.
est0=$(kv_ctl status --json | jq .estimated_requests_total)
from=$(lines)
for kind in cut malformed throttle; do
	kv_curl "/model/$MODEL/invoke-with-response-stream" -o "$T/$kind.bin" -H "Authorization: Bearer $KCUT" \
		-H 'Content-Type: application/json' \
		-d "{\"anthropic_version\":\"bedrock-2023-05-31\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"$kind [[$kind]]\"}]}" \
		2>/dev/null
	check "$kind: the client got the stream's first bytes" test -s "$T/$kind.bin"
done
kv_wait_for 30 settled_all
check_eq "the stand-in broke the three streams as asked" \
	"$(after "$from" | jq -r .outcome | tr '\n' ' ')" "cut malformed throttled "
check_eq "the three are charged as cuts: their exact input and cache, the reservation's output" \
	"$(spent "$KCUT")" "$(after "$from" | jq -c '.usage | .output = 50' | cost_of)"
check_eq "... nothing left reserved" "$(reserved "$KCUT")" 0
check_eq "... and counted as estimated" "$(kv_ctl status --json | jq .estimated_requests_total)" $((est0 + 3))

# ConverseStream names its usage only in its last event (metadata): a broken
# one is charged an estimate, never less than the stand-in's usage priced.
before=$(spent "$KCUT")
from=$(lines)
for kind in cut malformed throttle; do
	kv_curl "/model/$MODEL/converse-stream" -o "$T/c-$kind.bin" -H "Authorization: Bearer $KCUT" \
		-H 'Content-Type: application/json' \
		-d "{\"inferenceConfig\":{\"maxTokens\":50},\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"$kind [[$kind]]\"}]}]}" \
		2>/dev/null
done
kv_wait_for 30 settled_all
check_eq "converse-stream: the stand-in broke the three streams as asked" \
	"$(after "$from" | jq -r .outcome | tr '\n' ' ')" "cut malformed throttled "
got=$(($(spent "$KCUT") - before))
billed=$(after "$from" | jq -c .usage | cost_of)
check "converse-stream: charged at least the stand-in's usage, priced ($got >= $billed)" test "$got" -ge "$billed"
check_eq "... nothing left reserved" "$(reserved "$KCUT")" 0
check_eq "... and counted as estimated" "$(kv_ctl status --json | jq .estimated_requests_total)" $((est0 + 6))

# ---- 200 concurrent streams on one key, wave after wave --------------------------

# Waves of 200 concurrent streams on a key with a $0.003 budget until a wave
# gets none in (at most 20 waves): each admitted stream costs about $0.0002,
# so the budget is spent by real charges, not only held by reservations.
# After every wave the spend is within the budget and is exactly the
# admitted streams' usage, priced; a refusal is a 402 that never reached the
# stand-in.
FLOOD_BODY='{"anthropic_version":"bedrock-2023-05-31","max_tokens":12,"messages":[{"role":"user","content":"flood [[slow=20]]"}]}'
: >"$T/flood.all"
over=0 wrong=0 short=0 leaked=0 unpriced=0 waves=0 n200=1
while [ "$n200" -gt 0 ] && [ $waves -lt 20 ]; do
	waves=$((waves + 1))
	from=$(lines)
	timeout 300 node "$KV_SDK/bedrock_flood.mjs" "$KV_URL" "$KF" 200 "$MODEL" "$FLOOD_BODY" \
		>"$T/flood.out" 2>"$T/flood.err"
	cat "$T/flood.out" >>"$T/flood.all"
	n200=$(jq -s 'map(select(.status == 200)) | length' "$T/flood.out")
	echo "# flood wave $waves: $(jq -r .status "$T/flood.out" | sort | uniq -c | tr '\n' ' ')"
	[ "$(wc -l <"$T/flood.out")" = 200 ] || wrong=$((wrong + 1))
	[ "$(jq -s 'map(select(.status != 200 and .status != 402)) | length' "$T/flood.out")" = 0 ] || wrong=$((wrong + 1))
	[ "$(jq -s 'map(select(.status == 200 and .complete != true)) | length' "$T/flood.out")" = 0 ] || short=$((short + 1))
	[ "$(after "$from" | wc -l)" = "$n200" ] || leaked=$((leaked + 1))
	kv_wait_for 30 settled_all || wrong=$((wrong + 1))
	fs=$(spent "$KF")
	[ "$fs" -le "$FLOOD_BUDGET" ] || over=$((over + 1))
	[ "$fs" = "$(jq -c 'select(.status == 200) | .usage' "$T/flood.all" | cost_of)" ] || unpriced=$((unpriced + 1))
done
admitted=$(jq -s 'map(select(.status == 200)) | length' "$T/flood.all")
echo "# flood: $waves waves, $admitted streams admitted, spent $fs of $FLOOD_BUDGET nUSD"
check "flood: the waves end with one that gets none in ($waves waves)" test "$n200" = 0
check "flood: the budget was spent by real charges (more than half of it: $fs)" test $((fs * 2)) -gt "$FLOOD_BUDGET"
check_eq "flood: every wave 200 outcomes, each a 200 or a 402, all settled" "$wrong" 0
check_eq "flood: every admitted stream whole" "$short" 0
check_eq "flood: no refused request reached the stand-in" "$leaked" 0
check_eq "flood: after every wave the spend is within the budget" "$over" 0
check_eq "flood: after every wave the spend is exactly the admitted streams' usage, priced" "$unpriced" 0

kv_finish
