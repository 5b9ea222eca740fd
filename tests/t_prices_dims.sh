#!/bin/bash
# t_prices_dims: every price dimension the catalogue names is reserved at
# its dearest applicable rate and charged from the response's usage, or
# the request is refused (issue 33). Each row sends its request to the mock,
# which bills it in nano-dollars by the providers' published rules
# (tests/mock_bill.c, "nusd=" on its bill line), and asserts the ledger:
# the reservation held while the response is pending and the charge are
# never below the bill, the charge never over the budget; a refused request
# reaches nobody. The figures of each row are printed ("row N: ...").
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

cp "${top_srcdir:-..}/data/prices-2026-07-24.json" "$T/prices.json"
kv_start_mock
# the catalogue and the bundled kilovolt.ini's sections of these families
kv_write_config <<EOF
[budget]
prices = prices.json
[price o3-20*]
input = 2.00
output = 8.00
web_search = 10
cached_input = 0.50
priority_input = 3.50
priority_output = 14.00
flex_input = 1.00
flex_output = 4.00
max_output = 100000
context_window = 200000
[price claude-haiku-4-5*]
input = 1.00
output = 5.00
web_search = 10
web_fetch = 0
code_execution = 0.05
cached_input = 0.10
cache_write = 1.25
cache_write_1h = 2.00
max_output = 64000
[price my-local-model*]
input = 0.01
output = 0.01
[upstream openai-eu]
url = http://127.0.0.1:$MOCK_PORT
models = gpt-5.6
region = eu
[key probe]
key = sk-probe
budget = 0.000001
[key row1]
key = sk-row1
budget = 0.10
[key row1b]
key = sk-row1b
budget = 1.00
[key row2]
key = sk-row2
budget = 1.00
[key row2r]
key = sk-row2r
budget = 1.00
[key row5]
key = sk-row5
budget = 0.01
[key row5b]
key = sk-row5b
budget = 1.00
[key row6]
key = sk-row6
budget = 0.01
[key row6b]
key = sk-row6b
budget = 2.00
[key row7]
key = sk-row7
budget = 1.00
[key row3]
key = sk-row3
budget = 0.10
[key row4o]
key = sk-row4o
budget = 5.00
[key row4h]
key = sk-row4h
budget = 5.00
EOF
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t.out" 2>&1
check_eq "kilovoltd -t accepts the catalogue with the bundled globs" "$?" 0

# ---- a price field kilovolt does not understand, on a model it serves, fails
# closed: -t exits 2 naming it, unless [budget] prices_ignore names it
cp "$T/prices.json" "$T/good.json"
jq '."gpt-5.6".output_cost_per_token_turbo = 1e-05' "$T/good.json" >"$T/turbo.json"
cp "$T/turbo.json" "$T/prices.json"
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t2.out" 2>&1
check_eq "kilovoltd -t on a catalogue with an unknown price field on gpt-5.6 exits 2" "$?" 2
check "... naming the field and the model" grep -q \
	'kilovolt.ini:[0-9]*: prices: output_cost_per_token_turbo on gpt-5.6: a price field kilovolt does not understand' "$T/t2.out"
sed 's/^prices = prices.json$/prices = prices.json\nprices_ignore = output_cost_per_token_turbo/' \
	"$T/kilovolt.ini" >"$T/ignore.ini"
"$KV_DAEMON_BIN" -t -c "$T/ignore.ini" >"$T/t3.out" 2>&1
check_eq "... and 0 once prices_ignore names it" "$?" 0
cp "$T/good.json" "$T/prices.json"
kv_start

A=(-H 'anthropic-version: 2023-06-01')
bill() { tail -n 1 "$MOCK_LOG.bills" | sed "s/.* $1=\([^ ]*\).*/\1/"; }

# row N KEY BUDGET_NUSD PATH BODY [curl args]: the request's reservation,
# read from the 402 the same request gets on the probe key (budget
# $0.000001): "may cost up to $X", X truncated to the micro-dollar, so the
# reservation is at least RES; then the request on KEY, its charge and the
# mock's bill. RES, SPENT, BILL are set.
row() {
	local n=$1 k=$2 budget=$3 path=$4 body=$5 up
	shift 5
	check_eq "row $n: the probe key is refused" "$(post sk-probe "$path" "$body" "$@")" 402
	up=$(sed -n 's/.*may cost up to \$\([0-9]*\.[0-9]*\).*/\1/p' "$T/out")
	RES=$(( 10#${up/./} * 1000 ))
	check_eq "row $n: answered" "$(post "$k" "$path" "$body" "$@")" 200
	check "row $n: settled" kv_wait_for 20 settled "$k"
	SPENT=$(spent "$k") BILL=$(bill nusd)
	echo "row $n: reserved $RES charged $SPENT billed $BILL nUSD (budget $budget)"
	check "row $n: the reservation ($RES) is not below the bill ($BILL)" [ "$RES" -ge "$BILL" ]
	check_eq "row $n: charged exactly the bill" "$SPENT" "$BILL"
	check "row $n: the charge is within the budget" [ "$SPENT" -le "$budget" ]
}

# refused N KEY CODE PATH BODY [curl args]: answered CODE, the provider got
# nothing, nothing is charged or held.
refused() {
	local n=$1 k=$2 code=$3 path=$4 body=$5 n0 s r
	shift 5
	n0=$(kv_mock_stat requests)
	check_eq "row $n: refused $code" "$(post "$k" "$path" "$body" "$@")" "$code"
	# (the mock counts the stats request itself)
	check_eq "row $n: nothing reached the provider" "$(kv_mock_stat requests)" "$((n0 + 1))"
	# (a body refused before its key is looked up makes no account)
	s=$(spent "$k") r=$(reserved "$k")
	check_eq "row $n: nothing charged" "${s:-0}" 0
	check_eq "row $n: nothing held" "${r:-0}" 0
	echo "row $n: refused $code: $(cat "$T/out")"
}

# ---- rows 1 and 2: multipliers of every token price ------------------------
# claude-opus-4-6's entry: provider_specific_entry {"fast": 6, "us": 1.1}
check_eq "kvctl prices: claude-opus-4-6's fast and US-only multipliers" \
	"$(kv_ctl prices --json claude-opus-4-6 | jq -c '.prices[0].multipliers')" \
	'{"fast_x1e9":6000000000,"us_inference_x1e9":1100000000}'
check "kilovoltd -t no longer lists them as not understood" \
	eval '! grep -q "not understood.*\(provider_specific_entry\|regional_processing\)" "$T/t.out"'
# row 1: fast mode (6x) on a $0.10 budget: 1,000 output tokens reserve $0.15
OPUS_FAST='{"model":"claude-opus-4-6","max_tokens":1000,"speed":"fast","messages":[{"role":"user","content":"hi"}]}'
refused 1 sk-row1 402 /v1/messages "$OPUS_FAST" "${A[@]}"
check "row 1: the 402 names the fast-mode reservation" grep -q 'may cost up to \$0.15' "$T/out"
row 1b sk-row1b 1000000000 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":2000,"speed":"fast","messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}" -H 'x-mock-tokens: 2000'
check_eq "row 1: the provider billed fast mode" "$(bill speed)" fast
# row 2: US-only inference (1.1x), and OpenAI regional processing (1.1x)
row 2 sk-row2 1000000000 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":1000,"inference_geo":"us","messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}" -H 'x-mock-tokens: 1000'
check_eq "row 2: the provider billed US-only inference" "$(bill geo)" us
row 2r sk-row2r 1000000000 /v1/chat/completions \
	'{"model":"gpt-5.6","max_completion_tokens":1000,"messages":[{"role":"user","content":"hi"}]}' \
	-H 'x-mock-tokens: 1000' -H 'x-mock-region: 1'
check_eq "row 2: the provider billed the regional uplift" "$(bill region)" 1
# a multiplier the price lacks is refused, naming the field
refused 1h sk-row1h 400 /v1/messages \
	'{"model":"claude-haiku-4-5","max_tokens":100,"speed":"fast","messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}"
check "row 1: the 400 names \"speed\": \"fast\"" grep -q 'speed\\": \\"fast\\": the price of model .claude-haiku-4-5. has no rate for it' "$T/out"
refused 1v sk-row1v 400 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":100,"speed":"turbo","messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}"
check "row 1: an unknown speed is refused by name" grep -q 'cannot price speed \\"turbo\\"' "$T/out"
refused 3p sk-row3p 400 /v1/chat/completions \
	'{"model":"gpt-4.1-nano-2025-04-14","max_tokens":100,"service_tier":"priority","messages":[{"role":"user","content":"hi"}]}'
# "null" is absent, as the providers read it
row 1n sk-row1n 2000000000 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":100,"speed":null,"inference_geo":null,"service_tier":null,"messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}"

# ---- rows 3 and 4: [price GLOB] sections compose over catalogue entries ----
# o3-2025-04-16's entry has no priority prices; [price o3-20*] has: it
# gives them (and the web search fee), the entry's own figures winning
check "kvctl prices: o3-2025-04-16 takes priority prices from [price o3-20*]" \
	grep -q '^o3-2025-04-16: file (.*prices.json + \[price o3-20\*\] for: priority input, priority output, flex input, flex output, web search)$' \
	<(kv_ctl prices o3-2025-04-16)
check_eq "... in JSON: the glob and the figures it gives" \
	"$(kv_ctl prices --json o3-2025-04-16 | jq -c '.prices[0] | [.rule, .glob, .from_glob, .prices.priority_input_per_1m_nusd, .fees.web_search_call_nusd]')" \
	'["file","o3-20*",["priority_input_per_1m_nusd","priority_output_per_1m_nusd","flex_input_per_1m_nusd","flex_output_per_1m_nusd","web_search_call_nusd"],3500000000,10000000]'
check "kvctl prices MODEL says how each figure is applied" \
	grep -q '^  fast mode  *6.00x every token price  *"speed": "fast" (usage.speed); refused without it$' \
	<(kv_ctl prices claude-opus-4-6)
check "kilovoltd -t names the bundled globs that match no catalogue entry" \
	grep -qx '.*kilovolt.ini: prices: warning: matching no catalogue entry (pricing only the models the catalogue lacks): \[price my-local-model\*\]' "$T/t.out"

# row 3: the pinned snapshot at service_tier priority: $3.50 / $14 per 1M
row 3 sk-row3 100000000 /v1/chat/completions \
	'{"model":"o3-2025-04-16","max_completion_tokens":1000,"service_tier":"priority","messages":[{"role":"user","content":"hi"}]}' \
	-H 'x-mock-tokens: 1000'
check_eq "row 3: the provider billed the priority tier" "$(bill tier)" priority

# row 4: two web searches on o3-2025-04-16 (Responses) and claude-haiku-4-5
row 4o sk-row4o 5000000000 /v1/responses \
	'{"model":"o3-2025-04-16","max_output_tokens":100,"input":"search twice","tools":[{"type":"web_search"}],"max_tool_calls":2}' \
	-H 'x-mock-tokens: 20' -H 'x-mock-web-search: 2'
check_eq "row 4: the two searches are billed" "$(bill web_search)" 2
row 4h sk-row4h 5000000000 /v1/messages \
	'{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"search twice"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2}]}' \
	"${A[@]}" -H 'x-mock-tokens: 20' -H 'x-mock-web-search: 2'

# ---- rows 5 and 6: audio ------------------------------------------------------
# gpt-4o-mini-audio-preview: text $0.15 / $0.60, audio $10 / $20 per 1M.
# row 5: a request that may answer in audio reserves its output at the
# audio price: 4,000 tokens are $0.08, above a $0.01 budget
AUDIO='{"model":"gpt-4o-mini-audio-preview","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"max_completion_tokens":4000,"messages":[{"role":"user","content":"say hello"}]}'
refused 5 sk-row5 402 /v1/chat/completions "$AUDIO"
row 5b sk-row5b 1000000000 /v1/chat/completions "$AUDIO" \
	-H 'x-mock-tokens: 4000' -H 'x-mock-audio-out: 3990'
check_eq "row 5: the provider billed 3,990 audio output tokens" "$(bill audio_out)" 3990
# row 6: an assistant message's audio.id makes the provider re-read that
# spoken answer as audio input: the context window (128,000 tokens) at the
# audio input price ($1.28), like an item_reference
RECALL='{"model":"gpt-4o-mini-audio-preview","max_completion_tokens":100,"messages":[{"role":"user","content":"say hello"},{"role":"assistant","audio":{"id":"audio_abc123"}},{"role":"user","content":"again, slower"}]}'
refused 6 sk-row6 402 /v1/chat/completions "$RECALL"
check "row 6: the 402 names the recall's reservation" grep -q 'may cost up to \$1.28' "$T/out"
row 6b sk-row6b 2000000000 /v1/chat/completions "$RECALL" \
	-H 'x-mock-tokens: 100' -H 'x-mock-audio-recall: 8000'
check_eq "row 6: the provider billed the recall as audio input" "$(bill audio_in)" 8000

# ---- row 7: OpenAI cache writes (usage prompt_tokens_details.cache_write_tokens)
# gpt-5.6: input $5, cache writes $6.25 per 1M (on the eu upstream: x 1.1)
LONG=$(head -c 12000 /dev/zero | tr '\0' a)
row 7 sk-row7 1000000000 /v1/chat/completions \
	'{"model":"gpt-5.6","max_completion_tokens":100,"messages":[{"role":"user","content":"'"$LONG"'"}]}' \
	-H 'x-mock-tokens: 100' -H 'x-mock-cache-write: 2000' -H 'x-mock-region: 1'
check_eq "row 7: the provider billed 2,000 cache writes" "$(bill cache_write)" 2000
# Anthropic 1-hour cache writes under a cache_control (claude-haiku-4-5: $2 per 1M)
row 7h sk-row7h 2000000000 /v1/messages \
	'{"model":"claude-haiku-4-5","max_tokens":100,"system":[{"type":"text","text":"'"$LONG"'","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}" -H 'x-mock-tokens: 100' -H 'x-mock-cache-write: 2500' -H 'x-mock-cache-1h: 2500'

# ---- sub-inferences: Anthropic's advisor tool runs another model inside the
# request (usage.iterations); it, and any dated tool type kilovolt does not
# know, is refused before anything is reserved or sent
refused adv sk-adv 400 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":100,"tools":[{"type":"advisor_20260301","name":"advisor","model":"claude-opus-4-6"}],"messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}"
check "... the 400 names the tool" grep -q 'kilovolt cannot price what \\"advisor_20260301\\" makes the provider run' "$T/out"
refused srv sk-srv 400 /v1/messages \
	'{"model":"claude-opus-4-6","max_tokens":100,"tools":[{"type":"new_server_tool_20270101","name":"x"}],"messages":[{"role":"user","content":"hi"}]}' \
	"${A[@]}"

# ---- "stream_options": null is absent, as the providers read it, also in a
# spooled body (past 8 KiB): usage is merged into it, one member sent
st=$(post sk-so-null /v1/chat/completions \
	'{"model":"gpt-4o-mini","stream":true,"stream_options":null,"messages":[{"role":"user","content":"'"$LONG"'"}]}')
check_eq '"stream_options": null on a spooled stream: 200' "$st" 200
check "... the provider got one stream_options member, asking usage" \
	grep -q 'include_usage=1 stream_options=1 .*so_keys=include_usage ' <<<"$(tail -n 1 "$MOCK_LOG")"
check "... and its client no usage event" eval '! grep -q "\"usage\":{" "$T/out"'

# ---- a SIGHUP onto a catalogue with an unknown price field is refused --------
cp "$T/turbo.json" "$T/prices.json"
kill -HUP "$KV_PID"
check "a reload onto the unknown field is refused, the running prices kept" kv_wait_for 20 \
	grep -q 'KV0115: reload failed, keeping the running config: .*output_cost_per_token_turbo on gpt-5.6' "$KV_LOG"
cp "$T/good.json" "$T/prices.json"

# ---- a refresh that reprices or drops a served model logs a line per model --
jq '."claude-opus-4-6".input_cost_per_token = 6e-06 | del(."claude-opus-4-5")' \
	"$T/good.json" >"$T/prices.json"
kill -HUP "$KV_PID"
check "the reload onto the refreshed catalogue takes over" kv_wait_for 20 grep -q \
	"reloaded .*generation 2 serving" "$KV_LOG"
check "KV0136: claude-opus-4-6 repriced, old and new prices" grep -q \
	'KV0136: prices: model claude-opus-4-6 repriced by the reload: \$5.000000 / \$25.000000 per 1M -> \$6.000000 / \$25.000000 per 1M (0 other figures changed)' "$KV_LOG"
check "KV0135: claude-opus-4-5 dropped, now at [price default]" grep -q \
	'KV0135: prices: model claude-opus-4-5 dropped by the reload (was \$5.000000 / \$25.000000 per 1M): now priced by \[price default\] at \$1.000000 / \$3.000000 per 1M' "$KV_LOG"
check_eq "... one line per model, no other" "$(grep -c 'KV013[56]' "$KV_LOG")" 2

kv_finish
