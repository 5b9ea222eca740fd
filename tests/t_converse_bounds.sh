#!/bin/bash
# t_converse_bounds: a Bedrock request's reservation is the upper bound of
# Anthropic's rules (issue 35), through kilovolt. A Converse body with an
# image (a 1000 x 500 PNG header: 667 tokens by Anthropic's rule), a
# cachePoint (every input token at the cache-write price), maxTokens and a
# thinking budget is refused (402) on a key whose budget is one nano-dollar
# below that bound and admitted on one whose budget is the bound; the
# same for an InvokeModel body. Bodies with what kilovolt cannot price or
# bound are a 400 that names it, and reach no provider.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"
KV_WORKERS=1

MODEL=us.anthropic.claude-kv-bounds-v1:0	# in no catalogue: the section is all of its price
PNG=iVBORw0KGgoAAAANSUhEUgAAA+gAAAH0CAIAAAAAAAAA
CONVERSE='{"system":[{"text":"be brief"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"'$PNG'"}}},{"text":"what is it?"}]}],"inferenceConfig":{"maxTokens":2048},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}'
INVOKE='{"anthropic_version":"bedrock-2023-05-31","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"'$PNG'"}},{"type":"text","text":"what is it?"}]}]}'
# the bound: (body bytes + 667) at $2.50/M (the cache write), 2,048 at $10/M
bound() { echo $(((${#1} + 667) * 2500 + 2048 * 10000)); }
CB=$(bound "$CONVERSE") IB=$(bound "$INVOKE")
dollars() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }

kv_start_mock
{
	cat <<EOF
[upstream br]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$MOCK_PORT
control_url = http://127.0.0.1:$MOCK_PORT

[price $MODEL]
input = 2.00
output = 10.00
cache_write = 2.50
context_window = 200000
max_output = 64000
EOF
	for k in cv-low:$((CB - 1)) cv-ok:$CB iv-low:$((IB - 1)) iv-ok:$IB misc:1000000000; do
		printf '\n[key %s]\nkey = kvk-converse-%s\nbudget = %s\n' "${k%%:*}" "${k%%:*}" \
		    "$(dollars "${k#*:}")"
	done
} | kv_write_config
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true
kv_start

lines() { grep -vc '^BILLED' "$MOCK_LOG" 2>/dev/null || echo 0; }
# post KEY TAIL BODY: the status; kilovolt's answer in $T/out (a stream
# the mock serves from a file of AWS's codec)
post() {
	local f=converse

	case $2 in invoke*) f=invoke ;; esac
	kv_curl "/model/$MODEL/$2" -o "$T/out" -w '%{http_code}' -H "Authorization: Bearer kvk-converse-$1" \
	    -H 'Content-Type: application/json' \
	    -H "x-mock-eventstream: $top_srcdir/tests/data/bedrock_$f.bin" -d "$3"
}

n0=$(lines)
check_eq "converse, a nano-dollar short of the bound: 402" "$(post cv-low converse-stream "$CONVERSE")" 402
check "... saying the bound" grep -q "may cost up to" "$T/out"
check_eq "invoke, a nano-dollar short: 402" "$(post iv-low invoke-with-response-stream "$INVOKE")" 402
check_eq "nothing reached the provider" "$(lines)" "$n0"
check_eq "converse, the bound: admitted" "$(post cv-ok converse-stream "$CONVERSE")" 200
check_eq "invoke, the bound: admitted" "$(post iv-ok invoke-with-response-stream "$INVOKE")" 200

n0=$(lines)
refused() {	# refused DESC BODY TEXT [TAIL]
	check_eq "$1: 400" "$(post misc "${4:-converse}" "$2")" 400
	check "... naming it" grep -q "$3" "$T/out"
}
refused "guardrailConfig" '{"guardrailConfig":{"guardrailIdentifier":"g","guardrailVersion":"1"}}' \
    "guardrailConfig"
refused "latency-optimized" '{"performanceConfig":{"latency":"optimized"}}' "performanceConfig.latency"
refused "a member Converse does not define" '{"model":"x","messages":[]}' "Converse API does not define"
refused "a systemTool" '{"toolConfig":{"tools":[{"systemTool":{"name":"nova_grounding"}}]}}' "systemTool"
refused "maxTokens as a string" '{"inferenceConfig":{"maxTokens":"64"}}' "maxTokens must be an integer"
refused "a model in an InvokeModel body" '{"model":"claude-x","max_tokens":5,"messages":[]}' \
    "the path names the model" invoke
check_eq "none reached the provider" "$(lines)" "$n0"

kv_finish
