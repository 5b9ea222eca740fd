#!/bin/bash
# t_prices: [budget] prices = FILE.json (LiteLLM's catalogue, the shipped
# copy data/prices-2026-07-24.json) prices the models it lists, exactly by
# the file; a [price] section of the same name overrides the file's entry
# field by field (what it sets wins, the rest is the file's); a
# truncated file is a start-up error "FILE: line:col: what" (kilovoltd -t
# exits 2); kvctl prices shows each model's rule and prices, --check lists a
# planted difference and refuses a truncated copy; SIGHUP with a changed file
# charges the next request the new price and the stream in flight the old
# one, and a truncated file on SIGHUP is refused (KV0115) with the prices
# kept. Money is read from the ledger (kvctl keys --json) and compared
# with the mock's bill ($MOCK_LOG.bills).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

cp "${top_srcdir:-..}/data/prices-2026-07-24.json" "$T/prices.json"
head -c 5000 "$T/prices.json" >"$T/trunc.json"

# a truncated catalogue: kilovoltd -t names the file, line and column, exits 2
kv_write_config <<EOF
[budget]
prices = trunc.json
EOF
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t.out" 2>&1
check_eq "kilovoltd -t on a truncated catalogue exits 2" "$?" 2
check "the error says FILE: line:col" grep -q 'trunc.json: [0-9]*:[0-9]*: ' "$T/t.out"

# a section that sets no input, under a name the catalogue lacks, has
# nothing to take it from: a start-up error at its line
kv_write_config <<EOF
[budget]
prices = prices.json
[price no-such-model]
web_search = 10
EOF
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t.out" 2>&1
check_eq "kilovoltd -t on a [price] section of neither input nor a catalogue entry exits 2" "$?" 2
check "... saying the section needs input, the catalogue having no entry of its name" \
	grep -q 'kilovolt.ini:[0-9]*: \[price no-such-model\]: input is required (the catalogue .*prices.json has no entry no-such-model to take it from)' "$T/t.out"

# the shipped copy, relative to the ini's directory; gpt-4o-mini overridden
# in its prices, gpt-4.1-nano in its output price only
kv_start_mock
kv_write_config <<EOF
[budget]
prices = prices.json
[upstream openai]
paths = /v1/chat/completions /v1/responses /v1/batches
[price gpt-4o-mini]
input = 7
output = 11
[price gpt-4.1-nano]
output = 3
EOF
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t.out" 2>/dev/null
check_eq "kilovoltd -t accepts the shipped copy" "$?" 0
check "... and says how many models each provider gave (2,355 of 89 providers, most first)" \
	grep -q 'prices: 2355 models of 89 providers (fireworks_ai 279, bedrock 199, azure 161, openai 147, bedrock_converse 140, ' "$T/t.out"
for pc in 'anthropic 24' 'vertex_ai-anthropic_models 37' 'gemini 40' 'mistral 51' 'groq 11' 'deepseek 12' 'xai 36' 'openrouter 82'; do
	check "... $pc of them" grep -q "prices: 2355 models of .*[(,] $pc[,)]" "$T/t.out"
done
check "... and where the prices come from: the file, the entries under an override, the sections alone, the globs, the default" \
	grep -q 'prices: 2355 models priced: 2353 from .*prices.json, 2 from its entry with a \[price\] override, 0 from \[price\] sections alone; 2 \[price\] globs; any other model: \[price default\]$' "$T/t.out"
check "... and names the entries it did not keep, for prices it would not charge (per image, per second ...)" \
	grep -q 'prices: 62 entries (amazon.nova-2-multimodal-embeddings-v1:0 and others) not kept, pricing what kilovolt would not charge: .*input_cost_per_image (33)' "$T/t.out"
check "... and names the fields it does not understand" \
	grep -q 'fields not understood (ignored):.*output_cost_per_second' "$T/t.out"

# kvctl prices: the rule and price of each model, no daemon needed
kv_ctl prices claude-opus-4-6 gpt-4o-mini gpt-4o-audio-preview >"$T/pr.out"
check_eq "kvctl prices of three priced models exits 0" "$?" 0
check "claude-opus-4-6 is a file entry at \$5.00 in" grep -q '^claude-opus-4-6: file' "$T/pr.out"
check_eq "... its input per 1M in JSON is 5,000,000,000 nUSD" \
	"$(kv_ctl prices --json claude-opus-4-6 | jq '.prices[0].prices.input_per_1m_nusd')" 5000000000
check_eq "gpt-4o-mini is the file's entry under the ini section's input and output (7 USD in, the file's 0.075 cached)" \
	"$(kv_ctl prices --json gpt-4o-mini | jq -c '.prices[0] | [.rule, .prices.input_per_1m_nusd, .prices.cached_input_per_1m_nusd, .override]')" \
	'["override",7000000000,75000000,["input_per_1m_nusd","output_per_1m_nusd"]]'
# [price gpt-4.1-nano] sets output only: everything else is the file's entry
# (input 0.10, cached 0.025, priority 0.20 / 0.80, batch 0.05 / 0.20 per 1M;
# max_input_tokens 1,047,576, max_output_tokens 32,768)
check_eq "gpt-4.1-nano: the section's output, every other figure the file's" \
	"$(kv_ctl prices --json gpt-4.1-nano | jq -c '.prices[0] | [.rule, .override, .prices, .limits]')" \
	'["override",["output_per_1m_nusd"],{"input_per_1m_nusd":100000000,"output_per_1m_nusd":3000000000,"cached_input_per_1m_nusd":25000000,"priority_input_per_1m_nusd":200000000,"priority_output_per_1m_nusd":800000000,"priority_cached_per_1m_nusd":50000000,"batch_input_per_1m_nusd":50000000,"batch_output_per_1m_nusd":200000000},{"max_input_tokens":1047576,"max_output_tokens":32768,"context_window_tokens":1047576}]'
check "... and kvctl prices says so: the file's entry with the section's override" \
	grep -q '^gpt-4.1-nano: override (.*prices.json entry + \[price gpt-4.1-nano\] override: output)$' <(kv_ctl prices gpt-4.1-nano)
# a glob is no override: lib.sh's [price gpt-4o-mini*] prices a model the
# file lacks by its own three figures, none of the file's gpt-4o-mini
check_eq "a model only a glob matches: the glob's figures alone" \
	"$(kv_ctl prices --json gpt-4o-mini-unlisted | jq -c '.prices[0] | [.rule, .section, .override, .prices, .limits]')" \
	'["glob","gpt-4o-mini*",null,{"input_per_1m_nusd":150000000,"output_per_1m_nusd":600000000,"cached_input_per_1m_nusd":75000000},{}]'
check_eq "... while the file's own gpt-4o-mini-2024-07-18 stays the file's" \
	"$(kv_ctl prices --json gpt-4o-mini-2024-07-18 | jq -r '.prices[0].rule')" file
check_eq "gpt-4o-audio-preview shows its audio input price (40 USD)" \
	"$(kv_ctl prices --json gpt-4o-audio-preview | jq '.prices[0].prices.audio_input_per_1m_nusd')" 40000000000
check_eq "a model only lib.sh's [price default] prices: rule default" \
	"$(kv_ctl prices --json no-such-model | jq -r '.prices[0].rule')" default
# 2,355 file entries, gpt-4o-mini and gpt-4.1-nano among them under their sections, plus
# lib.sh's gpt-4o-mini*, claude-sonnet-4* and default
check_eq "kvctl prices lists every entry and section" \
	"$(kv_ctl prices --json | jq -c '[(.prices | length), ([.prices[] | select(.rule == "glob")] | length)]')" \
	'[2358,2]'

# issue 35: a model name resolves to its provider's price (kvctl prices
# --provider KIND [--region R]), each figure exactly as the JSON has it
# (USD per token x 10^15 = nano-USD per 1M tokens)
pr() {	# pr [--provider K [--region R]] MODEL: [entry, provider, input, output, cached]
	kv_ctl prices --json "$@" | jq -c '.prices[0] | [(.section // .model), .provider, .prices.input_per_1m_nusd, .prices.output_per_1m_nusd, .prices.cached_input_per_1m_nusd]'
}
check_eq "a Bedrock id: Bedrock's price (bedrock_converse: 3e-06 / 1.5e-05 / 3e-07)" \
	"$(pr --provider bedrock anthropic.claude-sonnet-4-20250514-v1:0)" \
	'["anthropic.claude-sonnet-4-20250514-v1:0","bedrock_converse",3000000000,15000000000,300000000]'
check_eq "a us. inference profile: its own (3.3e-06 / 1.65e-05 / 3.3e-07, 10% over the id)" \
	"$(pr --provider bedrock us.anthropic.claude-sonnet-4-5-20250929-v1:0)" \
	'["us.anthropic.claude-sonnet-4-5-20250929-v1:0","bedrock_converse",3300000000,16500000000,330000000]'
check_eq "... and as a URL-decoded inference-profile ARN" \
	"$(pr --provider bedrock arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0)" \
	'["us.anthropic.claude-sonnet-4-5-20250929-v1:0","bedrock_converse",3300000000,16500000000,330000000]'
check_eq "a region's own entry first (bedrock/eu-central-1/...: 2.48e-06 / 8.38e-06)" \
	"$(pr --provider bedrock --region eu-central-1 anthropic.claude-instant-v1)" \
	'["bedrock/eu-central-1/anthropic.claude-instant-v1","bedrock",2480000000,8380000000,null]'
check_eq "Vertex: vertex_ai/ + the model (3e-06 / 1.5e-05 / 3e-07)" \
	"$(pr --provider vertex claude-sonnet-4-5@20250929)" \
	'["vertex_ai/claude-sonnet-4-5@20250929","vertex_ai-anthropic_models",3000000000,15000000000,300000000]'
check_eq "Azure: azure/ + the model (2.5e-06 / 1e-05 / 1.25e-06)" \
	"$(pr --provider azure gpt-4o)" '["azure/gpt-4o","azure",2500000000,10000000000,1250000000]'
check_eq "the Anthropic API's name: the Anthropic price, with no provider named" \
	"$(pr claude-sonnet-4-5)" '["claude-sonnet-4-5","anthropic",3000000000,15000000000,300000000]'
check_eq "... and with --provider anthropic" \
	"$(pr --provider anthropic claude-sonnet-4-5)" '["claude-sonnet-4-5","anthropic",3000000000,15000000000,300000000]'
check_eq "a Bedrock id with no provider named: not the catalogue's (lib.sh's default)" \
	"$(kv_ctl prices --json us.anthropic.claude-sonnet-4-5-20250929-v1:0 | jq -r '.prices[0].rule')" default
check "... and kvctl prices says which provider's entry it is" \
	grep -qx '  the catalogue prices it for provider = bedrock (bedrock_converse): kvctl prices --provider bedrock us.anthropic.claude-sonnet-4-5-20250929-v1:0' \
	<(kv_ctl prices us.anthropic.claude-sonnet-4-5-20250929-v1:0)
check "kvctl prices MODEL says the entry's provider" \
	grep -qx '  provider  *bedrock_converse' <(kv_ctl prices --provider bedrock anthropic.claude-sonnet-4-20250514-v1:0)
check "... and the table a PROVIDER column" \
	grep -q '^us.anthropic.claude-sonnet-4-5-20250929-v1:0  *file .* bedrock_converse$' <(kv_ctl prices)
kv_ctl prices --provider nosuch gpt-4o >/dev/null 2>"$T/prov.err"
check_eq "kvctl prices --provider of an unknown kind is a usage error" "$?" 2
check "... naming the kinds" grep -q "openai, anthropic, bedrock, gemini, vertex or azure is needed after '--provider'" "$T/prov.err"

# kvctl prices --check: a truncated file is refused with FILE: line:col ...
kv_ctl prices --check "$T/trunc.json" >/dev/null 2>"$T/chk.err"
check_eq "kvctl prices --check of a truncated file exits 1" "$?" 1
check "... saying FILE: line:col" grep -q "trunc.json: [0-9]*:[0-9]*: " "$T/chk.err"
# ... and a planted difference in a refreshed copy is listed
# (and one under the operator's [price gpt-4o-mini]: the running price holds,
# the catalogue's move under it is shown as an override)
jq '."claude-sonnet-4-5".input_cost_per_token = 0.000004 | ."gpt-4o-mini".input_cost_per_token = 2e-07' \
	"$T/prices.json" >"$T/newer.json"
kv_ctl prices --check "$T/newer.json" >"$T/chk.out"
check_eq "kvctl prices --check of a valid file exits 0" "$?" 0
check "... lists claude-sonnet-4-5's input going from \$3.00 to \$4.00" \
	grep -q '^claude-sonnet-4-5: changed; input \$3.00 -> \$4.00$' "$T/chk.out"
check "... and only that model among the running prices" \
	grep -q '^1 model priced differently with .*newer.json than with the running prices (.*prices.json and 4 \[price\] sections)$' "$T/chk.out"
check "... shows gpt-4o-mini's catalogue change under the ini override, its price holding" \
	grep -q '^gpt-4o-mini: overridden by \[price gpt-4o-mini\] (the figures it sets hold); in the file: changed; input \$0.15 -> \$0.20$' "$T/chk.out"
check "... counted as one override" grep -q '^1 \[price\] section overrides a catalogue entry' "$T/chk.out"
check_eq "... in JSON too" "$(kv_ctl prices --check "$T/newer.json" --json |
	jq -c '[[.differences[] | [.model, .after.prices.input_per_1m_nusd]], [.overridden[] | [.model, .section, .file_before.prices.input_per_1m_nusd, .file_after.prices.input_per_1m_nusd]]]')" \
	'[[["claude-sonnet-4-5",4000000000]],[["gpt-4o-mini","gpt-4o-mini",150000000,200000000]]]'
# under [price gpt-4.1-nano] (output only) the file's input moves the running
# price (a difference), its output is held by the section (an override)
jq '."gpt-4.1-nano".input_cost_per_token = 1.2e-07 | ."gpt-4.1-nano".output_cost_per_token = 5e-07' \
	"$T/prices.json" >"$T/nano.json"
kv_ctl prices --check "$T/nano.json" >"$T/chk.out"
check "kvctl prices --check: gpt-4.1-nano's input, which the file gives, changes" \
	grep -qx 'gpt-4.1-nano: changed; input \$0.10 -> \$0.12' "$T/chk.out"
check "... its output, which [price gpt-4.1-nano] sets, is an override that holds" \
	grep -qx 'gpt-4.1-nano: overridden by \[price gpt-4.1-nano\] (the figures it sets hold); in the file: changed; output \$0.40 -> \$0.50' "$T/chk.out"
check "... one model counted" grep -q '^1 model priced differently with .*nano.json' "$T/chk.out"
check "... and one override" grep -q '^1 \[price\] section overrides a catalogue entry .*nano.json changes' "$T/chk.out"
check_eq "... and nothing else (the file line, two, the closing two)" "$(wc -l <"$T/chk.out")" 5

kv_start

# unknown_models = deny: a model nothing prices is refused, exit 1
sed 's/^\[budget\]$/[budget]\nunknown_models = deny/' "$T/kilovolt.ini" >"$T/deny.ini"
"$KV_CTL_BIN" -c "$T/deny.ini" prices no-such-model >/dev/null
check_eq "kvctl prices of a refused model exits 1" "$?" 1
check_eq "... its rule is refused" \
	"$("$KV_CTL_BIN" -c "$T/deny.ini" prices --json no-such-model | jq -r '.prices[0].rule')" refused

# claude-opus-4-6 by the file: $5 / $25 per 1M = 5,000 / 25,000 nUSD a token
K=sk-prices-opus
check_eq "claude-opus-4-6 answered" \
	"$(post $K /v1/messages '{"model":"claude-opus-4-6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 40')" 200
check "claude-opus-4-6 settled" kv_wait_for 20 settled "$K"
i=$(bill_field input) o=$(bill_field output)
check_eq "claude-opus-4-6 charged exactly by the file ($i in, $o out)" "$(spent $K)" $(( i * 5000 + o * 25000 ))

# gpt-4o-mini: the [price gpt-4o-mini] section wins over the file's entry
K=sk-prices-mini
check_eq "gpt-4o-mini answered" \
	"$(post $K /v1/chat/completions '{"model":"gpt-4o-mini","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'x-mock-tokens: 40')" 200
check "gpt-4o-mini settled" kv_wait_for 20 settled "$K"
i=$(bill_field input) o=$(bill_field output)
check_eq "gpt-4o-mini charged by the ini override ($i in, $o out)" "$(spent $K)" $(( i * 7000 + o * 11000 ))

# gpt-4.1-nano: the section's output ($3 per 1M = 3,000 nUSD a token), the
# file's input (100) and cached input (25)
K=sk-prices-nano
check_eq "gpt-4.1-nano answered" \
	"$(post $K /v1/chat/completions '{"model":"gpt-4.1-nano","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'x-mock-tokens: 40' -H 'x-mock-cached: 3')" 200
check "gpt-4.1-nano settled" kv_wait_for 20 settled "$K"
i=$(bill_field input) c=$(bill_field cached) o=$(bill_field output)
check_eq "gpt-4.1-nano charged by the file's input and cached prices and the section's output ($i in of which $c cached, $o out)" \
	"$(spent $K)" $(( (i - c) * 100 + c * 25 + o * 3000 ))

# gpt-4o-audio-preview by the file: text at $2.50 / $10, audio at $40 / $80 per 1M
K=sk-prices-audio
check_eq "gpt-4o-audio-preview answered" \
	"$(post $K /v1/chat/completions '{"model":"gpt-4o-audio-preview","max_tokens":100,"messages":[{"role":"user","content":"say hello out loud, please"}]}' \
	-H 'x-mock-tokens: 40' -H 'x-mock-audio-in: 3' -H 'x-mock-audio-out: 25')" 200
check "gpt-4o-audio-preview settled" kv_wait_for 20 settled "$K"
i=$(bill_field input) o=$(bill_field output)
check_eq "gpt-4o-audio-preview charged text and audio tokens by the file ($i in of which 3 audio, $o out of which 25 audio)" \
	"$(spent $K)" $(( (i - 3) * 2500 + 3 * 40000 + (o - 25) * 10000 + 25 * 80000 ))

# gpt-5.2 by the file, at its standard and its priority tier (the response's
# service_tier says which the provider billed)
gpt52() {	# gpt52 KEY TIER IN_NUSD OUT_NUSD
	local k=$1 t=$2 pin=$3 pout=$4 i o
	check_eq "gpt-5.2 at service_tier $t answered" \
		"$(post $k /v1/chat/completions '{"model":"gpt-5.2","max_completion_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
		-H 'x-mock-tokens: 40' -H "x-mock-service-tier: $t")" 200
	check "gpt-5.2 at $t settled" kv_wait_for 20 settled "$k"
	i=$(bill_field input) o=$(bill_field output)
	check_eq "gpt-5.2 at $t charged exactly by the file ($i in, $o out at $pin / $pout nUSD)" \
		"$(spent $k)" $(( i * pin + o * pout ))
}
gpt52 sk-prices-gpt52 default 1750 14000
gpt52 sk-prices-gpt52-priority priority 3500 28000

# the flex tier, asked for as OpenAI takes it (the body's "service_tier": "flex";
# the mock answers it ran on flex, as OpenAI does), charged by the file's _flex
# fields, its own cache price included: per 1M tokens IN / CACHED / OUT nUSD
flex() {	# flex KEY PATH MODEL BODY_EXTRA IN CACHED OUT
	local k=$1 path=$2 m=$3 extra=$4 pin=$5 pc=$6 pout=$7 i c o body
	if [ "$path" = /v1/responses ]; then
		body='{"model":"'$m'","max_output_tokens":100,"input":"hi","service_tier":"flex"'$extra'}'
	else
		body='{"model":"'$m'","max_completion_tokens":100,"messages":[{"role":"user","content":"hi"}],"service_tier":"flex"'$extra'}'
	fi
	check_eq "$m at service_tier flex ($path) answered" \
		"$(post $k $path "$body" -H 'x-mock-tokens: 40' -H 'x-mock-cached: 3')" 200
	check "$m at flex settled" kv_wait_for 20 settled "$k"
	check_eq "... the provider billed it at flex" "$(tail -n 1 "$MOCK_LOG.bills" | sed 's/.* tier=//')" flex
	i=$(bill_field input) c=$(bill_field cached) o=$(bill_field output)
	check_eq "$m at flex charged exactly by its _flex fields ($i in of which $c cached, $o out)" \
		"$(spent $k)" $(( ((i - c) * pin + c * pc + o * pout + 999999) / 1000000 ))
}
# gpt-5: input 0.625, cached 0.0625 (62.5 nUSD a token: the sum is rounded up once), output 5
flex sk-prices-flex-gpt5 /v1/chat/completions gpt-5 '' 625000000 62500000 5000000000
# o4-mini over the Responses API, streamed: 0.55 / 0.1375 / 2.2
flex sk-prices-flex-o4 /v1/responses o4-mini ',"stream":true' 550000000 137500000 2200000000

# batch prices: shown, never charged. The Batch API (/v1/batches) and Anthropic's
# Message Batches (/v1/messages/batches) return their usage in a results file
# hours later, not on the request kilovolt relays, so kilovolt refuses them
check_eq "kvctl prices shows gpt-4o's batch prices (1.25 / 5 USD per 1M)" \
	"$(kv_ctl prices --json gpt-4o | jq -c '[.prices[0].prices.batch_input_per_1m_nusd, .prices[0].prices.batch_output_per_1m_nusd]')" \
	'[1250000000,5000000000]'
check "... in the human form too, with how each is applied" \
	grep -q '^  batch input  *\$1.25 / 1M tokens  *shown only: batches are refused$' <(kv_ctl prices gpt-4o)
n0=$(kv_mock_stat requests)
total() { kv_ctl keys --json | jq '[.keys[].spent_nusd] | add'; }
t0=$(total)
K=sk-prices-batch
check_eq "a batch (POST /v1/batches, routed to openai) is refused 404, not relayed" \
	"$(post $K /v1/batches '{"input_file_id":"file-1","endpoint":"/v1/chat/completions","completion_window":"24h"}')" 404
check "... saying batches are not metered" grep -q 'batches are not metered by kilovolt' "$T/out"
check_eq "... and the provider received nothing" "$(kv_mock_stat requests)" "$((n0 + 1))"
check_eq "... and nothing was charged to anyone" "$(total)" "$t0"

# ---- the older-family rule: a model newer than the only glob that matches it ----
# claude-sonnet-4-9 matches lib.sh's [price claude-sonnet-4*] only, whose family's
# newest exact entry (the file's) is claude-sonnet-4-6: not charged at $3 / $15 but
# by unknown_models, here lib.sh's [price default] ($1 / $3 per 1M), marked
kv_ctl prices claude-sonnet-4-9 >"$T/older.out"
check "kvctl prices shows claude-sonnet-4-9 is newer than [price claude-sonnet-4*], priced by default" \
	grep -q '^claude-sonnet-4-9: default (newer than the family \[price claude-sonnet-4\*\] was written for; \[price default\])' "$T/older.out"
check_eq "... and in JSON" \
	"$(kv_ctl prices --json claude-sonnet-4-9 | jq -r '.prices[0] | "\(.rule) \(.older_family)"')" "default claude-sonnet-4*"
check_eq "claude-sonnet-4-5 (exact, in the file) is not touched by the rule" \
	"$(kv_ctl prices --json claude-sonnet-4-5 | jq -r '.prices[0] | "\(.rule) \(.older_family)"')" "file null"
K=sk-prices-older
check_eq "claude-sonnet-4-9 answered under unknown_models = default" \
	"$(post $K /v1/messages '{"model":"claude-sonnet-4-9","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 13')" 200
check "... settled" kv_wait_for 20 settled "$K"
i=$(bill_field input) o=$(bill_field output)
check_eq "... charged at [price default], not the older family ($i in, $o out at \$1 / \$3)" \
	"$(spent $K)" $(( i * 1000 + o * 3000 ))
check "... logged KV0447 naming the glob" kv_wait_for 20 grep -q \
	"KV0447: model 'claude-sonnet-4-9' is newer than the family \[price claude-sonnet-4\*\]" "$KV_LOG"

# ---- SIGHUP reloads the catalogue; the stream in flight keeps its price ----------
# claude-opus-4-6 at $6 / $30 in a refreshed file (6,000 / 30,000 nUSD a token)
bill_of() { grep " output=$1 " "$MOCK_LOG.bills" | tail -n 1 | sed "s/.* $2=\([0-9]*\).*/\1/"; }
OPUS='{"model":"claude-opus-4-6","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
KS=sk-prices-stream
kv_curl /v1/messages -o "$T/stream" -H "Authorization: Bearer $KS" "${J[@]}" \
	-H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 40' -H 'x-mock-delay-ms: 100' -d "$OPUS" &
STREAM=$!
kv_track $STREAM
check "the stream is admitted (reserved) before the reload" \
	kv_wait_for 20 eval '[ "$(reserved $KS 2>/dev/null)" -gt 0 ] 2>/dev/null'
jq '."claude-opus-4-6".input_cost_per_token = 6e-06 | ."claude-opus-4-6".output_cost_per_token = 3e-05' \
	"$T/prices.json" >"$T/prices.new" && mv "$T/prices.new" "$T/prices.json"
kill -HUP "$KV_PID"
check "the reload with the changed catalogue takes over" kv_wait_for 20 grep -q \
	"reloaded .*generation 2 serving" "$KV_LOG"
K=sk-prices-after
check_eq "claude-opus-4-6 after the reload answered" \
	"$(post $K /v1/messages '{"model":"claude-opus-4-6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 7')" 200
check "... settled" kv_wait_for 20 settled "$K"
i=$(bill_of 7 input)
check_eq "... charged the new price ($i in, 7 out at \$6 / \$30)" "$(spent $K)" $(( i * 6000 + 7 * 30000 ))
wait $STREAM
check "the stream in flight over the reload completed" grep -q 'message_stop' "$T/stream"
check "... settled" kv_wait_for 20 settled "$KS"
i=$(bill_of 40 input)
check_eq "... charged the price it was admitted with ($i in, 40 out at \$5 / \$25)" \
	"$(spent $KS)" $(( i * 5000 + 40 * 25000 ))

# a truncated catalogue on SIGHUP: refused with FILE: line:col, the prices stay
cp "$T/prices.json" "$T/good.json"
head -c 5000 "$T/good.json" >"$T/prices.json"
kill -HUP "$KV_PID"
check "the master refuses the reload, naming the file, line and column" kv_wait_for 20 grep -q \
	"KV0115: reload failed, keeping the running config: .*prices.json: [0-9]*:[0-9]*: " "$KV_LOG"
K=sk-prices-kept
check_eq "claude-opus-4-6 after the refused reload answered" \
	"$(post $K /v1/messages '{"model":"claude-opus-4-6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 9')" 200
check "... settled (kvctl keys reads the ledger, whatever the catalogue)" kv_wait_for 20 settled "$K"
i=$(bill_of 9 input)
check_eq "... still at the reloaded price ($i in, 9 out at \$6 / \$30)" "$(spent $K)" $(( i * 6000 + 9 * 30000 ))
cp "$T/good.json" "$T/prices.json"

# the older-family rule under unknown_models = deny: a 400 naming why, nothing sent
cp "$T/deny.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
check "the reload to unknown_models = deny takes over" kv_wait_for 20 grep -q \
	"reloaded .*generation 3 serving" "$KV_LOG"
"$KV_CTL_BIN" -c "$T/deny.ini" prices claude-sonnet-4-9 >"$T/older.out"
check_eq "kvctl prices of claude-sonnet-4-9 under deny exits 1" "$?" 1
check "... saying it is newer than [price claude-sonnet-4*]" \
	grep -q '^claude-sonnet-4-9: refused (newer than the family \[price claude-sonnet-4\*\] was written for; unknown_models = deny)' "$T/older.out"
n0=$(kv_mock_stat requests)
K=sk-prices-older-deny
check_eq "claude-sonnet-4-9 under unknown_models = deny is refused 400" \
	"$(post $K /v1/messages '{"model":"claude-sonnet-4-9","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'anthropic-version: 2023-06-01')" 400
check "... the answer says it is newer than the older family's glob" \
	grep -q "claude-sonnet-4-9' is newer than the family \[price claude-sonnet-4\*\]" "$T/out"
# (the mock counts the stats request itself)
check_eq "... and the provider received nothing" "$(kv_mock_stat requests)" "$((n0 + 1))"
check_eq "... and nothing was charged" "$(spent $K)" 0

kv_finish
