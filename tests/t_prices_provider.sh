#!/bin/bash
# t_prices_provider: a request is charged its upstream's provider's price
# (issue 35). The shipped catalogue prices Claude Sonnet 4.5 at $3 / $15
# per 1M on Anthropic's API and at $3.30 / $16.50 through Bedrock's us.
# inference profile; an upstream of provider = bedrock (here on the mock's
# chat completions path, routed by model) charges the Bedrock id the
# profile's price, the Anthropic upstream the Anthropic name the API's, and
# a Bedrock id on an upstream of no kind is no model of the catalogue's
# (refused under unknown_models = deny). Money is read from the ledger and
# compared with the tokens the mock billed. The upstream is named bedrock:
# an upstream of a provider kind does not make its name's catalogue
# entries priced by bare name (whose fields not understood, per image and
# the like, would fail the load), its kind prices them. A bedrock upstream
# spends the operator's AWS account, so only configured keys get in.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
# A bedrock upstream without api_key signs with AWS credentials, which the
# daemon must have to start (the mock checks no signature).
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true

cp "${top_srcdir:-..}/data/prices-2026-07-24.json" "$T/prices.json"
kv_start_mock
kv_write_config <<EOF
[budget]
prices = prices.json
unknown_models = deny
[upstream bedrock]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$MOCK_PORT
paths = /v1/chat/completions
models = us.anthropic.* anthropic.*
control_url = http://127.0.0.1:$MOCK_PORT
[key br]
key = sk-prov-br
EOF
kv_start

# charged KEY IN_NUSD OUT_NUSD: the key's spend is the mock's last bill at
# these per-token prices (nano-USD per token = USD per 1M tokens x 1,000)
charged() {
	local i o
	check "... settled" kv_wait_for 20 settled "$1"
	i=$(bill_field input) o=$(bill_field output)
	check_eq "... charged $i in x $2 + $o out x $3 nUSD" "$(spent "$1")" $((i * $2 + o * $3))
}

BR='{"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}'
check_eq "a Bedrock inference profile on the bedrock upstream: 200" \
	"$(post sk-prov-br /v1/chat/completions "$BR" -H 'x-mock-tokens: 20')" 200
charged sk-prov-br 3300 16500

AN='{"model":"claude-sonnet-4-5","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}'
check_eq "the Anthropic API's name on the Anthropic upstream: 200" \
	"$(post sk-prov-an /v1/messages "$AN" -H 'x-mock-tokens: 20')" 200
charged sk-prov-an 3000 15000

check_eq "a Bedrock id on the Messages path (an upstream of no kind): refused, 400" \
	"$(post sk-prov-no /v1/messages "$(jq -c '.model = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"' <<<"$BR")")" 400
check "... saying the model has no price" grep -qi 'price' "$T/out"

kv_finish
