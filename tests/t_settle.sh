#!/bin/bash
# t_settle: a charge is never less than what the provider can have billed
# (issue 20, the charging half). The mock bills by the providers' published
# rules and writes each bill to $MOCK_LOG.bills; every check compares the
# ledger (kvctl keys --json) with that bill and with the budget:
#  - a reasoning stream the client leaves after its first visible chunk:
#    the hidden tokens were billed before it, so the cut is charged the
#    reservation's output (on_cut = charge_reserved, marked estimated), or
#    read on to the usage (on_cut = drain), within drain_max;
#  - Anthropic web_search: usage.server_tool_use.web_search_requests at
#    $10 per 1,000 (JSON and stream); web_fetch_requests at its own fee;
#  - OpenAI Responses web_search_call items at the model's web_search fee
#    (JSON and stream);
#  - a response model other than the body's (an Azure deployment): the
#    dearer of the two; an unpriced one at [price default], marked;
#  - an Anthropic 200 stream that ends in event: error after N deltas: a
#    cut, charged as one and marked estimated.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

estimated() { key_field "$1" estimated_requests; }
BILLS=

# Prices per token in nano-dollars (the sections are per 1M tokens), fees
# per call:
#   kv-reason: in 2000, out 8000 (o3), web search 10,000,000 ($10 / 1,000)
#   kv-claude: in 3000, out 15000, web search 10,000,000, web fetch 1,000,000
#   kv-gpt5:   in 1250, out 10000, web search 10,000,000
#   kv-mini:   in 150, out 600;  kv-big: in 30000, out 60000 (gpt-4)
#   default:   in 50000, out 90000
declare -A PIN=([kv-reason]=2000 [kv-claude]=3000 [kv-gpt5]=1250 [kv-mini]=150 [kv-big]=30000 [default]=50000)
declare -A POUT=([kv-reason]=8000 [kv-claude]=15000 [kv-gpt5]=10000 [kv-mini]=600 [kv-big]=60000 [default]=90000)
declare -A PWS=([kv-reason]=10000000 [kv-claude]=10000000 [kv-gpt5]=10000000 [kv-mini]=0 [kv-big]=0 [default]=25000000)
declare -A PWF=([kv-claude]=1000000)

write_config() {
	kv_write_config <<EOF
[server]
workers = 1
upstream_timeout = 20
[budget]
default = 5.00
unknown_models = ${1:-deny}
on_cut = ${2:-charge_reserved}
drain_max = ${3:-4m}
drain_timeout = ${4:-60}
[price kv-reason*]
input = 2
output = 8
web_search = 10
max_output = 100000
[price kv-claude*]
input = 3
output = 15
web_search = 10
web_fetch = 1
context_window = 2000
[price kv-gpt5*]
input = 1.25
output = 10
web_search = 10
context_window = 2000
[price kv-mini*]
input = 0.15
output = 0.60
[price kv-big*]
input = 30
output = 60
[price default]
input = 50
output = 90
web_search = 25
[key tight]
key = sk-settle-tight
budget = 0.25
EOF
}

# The mock's bill for its last response, in nano-dollars, at the prices of
# PRICE (a row of the tables above; default: the bill's own model).
bill_nusd() {
	local line m i o ws wf
	line=$(tail -n 1 "$MOCK_LOG.bills")
	m=${1:-$(sed 's/.*model=\([^ ]*\) .*/\1/' <<<"$line")}
	m=${m%%-[0-9]*}
	i=$(sed 's/.* input=\([0-9]*\).*/\1/' <<<"$line")
	o=$(sed 's/.* output=\([0-9]*\).*/\1/' <<<"$line")
	ws=$(sed 's/.* web_search=\([0-9]*\).*/\1/' <<<"$line")
	wf=$(sed 's/.* web_fetch=\([0-9]*\).*/\1/' <<<"$line")
	echo $(( i * PIN[$m] + o * POUT[$m] + ws * PWS[$m] + wf * ${PWF[$m]:-0} ))
}
bills_now() { wc -l <"$MOCK_LOG.bills"; }
bill_after() { [ "$(bills_now)" -gt "$1" ]; }

# never_below KEY WHAT [PRICE [BUDGET]]: the ledger holds at least the
# mock's bill and no more than the budget ($5 unless BUDGET nUSD).
never_below() {
	local k=$1 what=$2 s b
	check "$what: settled" kv_wait_for 20 settled "$k"
	s=$(spent "$k")
	b=$(bill_nusd "${3:-}")
	check "$what: charged $s nUSD >= the provider's bill $b" test "$s" -ge "$b"
	check "$what: and within the budget" test $(( s + $(reserved "$k") )) -le "${4:-5000000000}"
}

kv_start_mock
write_config
kv_start

# ---- a reasoning stream cut after its first visible chunk -------------------
# o3's 20,000 hidden tokens are billed before the first visible byte.
reason_body='{"model":"kv-reason-1","max_completion_tokens":30000,"stream":true,"messages":[{"role":"user","content":"think hard"}]}'
# cut_after_first KEY [curl args]: read the stream to its first text and hang up
cut_after_first() {
	local k=$1 n0
	shift
	n0=$(bills_now)
	curl -sS -N -m 30 "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $k" "${J[@]}" \
		-d "$reason_body" -H 'x-mock-reasoning: 20000' -H 'x-mock-tokens: 20' \
		-H 'x-mock-delay-ms: 300' "$@" 2>/dev/null | grep -m 1 -q 'tok1 '
	check "the mock billed the cut stream" kv_wait_for 30 bill_after "$n0"
}
K=sk-settle-reason
ab0=$(kv_mock_stat aborted_streams)
cut_after_first $K
aborted_since() { [ "$(kv_mock_stat aborted_streams)" -gt "$1" ]; }
check "on_cut = charge_reserved: the upstream is closed at once" kv_wait_for 10 aborted_since "$ab0"
check "reasoning tokens billed before the first chunk (mock: $(bill_field reasoning))" \
	test "$(bill_field reasoning)" = 20000
never_below $K "reasoning stream cut after its first chunk"
check_eq "... charged the reservation's output: 30,000 tokens" \
	"$(( $(spent $K) >= 30000 * 8000 ))" 1
check_eq "... marked estimated" "$(estimated $K)" 1

# the same on a key whose $0.25 holds one reservation ($0.2401): the cut is
# charged within it, and the next request is refused without reaching the mock
K=sk-settle-tight
cut_after_first $K
never_below $K "a tight key's cut reasoning stream" "" 250000000
n0=$(bills_now)
got0=$(grep -c ' model=kv-reason-1 ' "$MOCK_LOG")
check_eq "... the next one is refused: 402" "$(post $K /v1/chat/completions "$reason_body")" 402
check_eq "... and the mock received nothing" "$(grep -c ' model=kv-reason-1 ' "$MOCK_LOG")" "$got0"
check_eq "... nor billed anything" "$(bills_now)" "$n0"

# ---- Anthropic web search ----------------------------------------------------
K=sk-settle-search
body='{"model":"kv-claude-1","max_tokens":100,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":25}],"messages":[{"role":"user","content":"search"}]}'
check_eq "Anthropic web_search, 25 searches: relayed" \
	"$(post $K /v1/messages "$body" -H 'x-mock-web-search: 25')" 200
never_below $K "Anthropic web_search (JSON)"
check_eq "... exactly the bill, the fee included (25 x \$0.01)" "$(spent $K)" "$(bill_nusd)"
check_eq "... not an estimate" "$(estimated $K)" 0

K=sk-settle-search-stream
body='{"model":"kv-claude-1","max_tokens":100,"stream":true,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":25}],"messages":[{"role":"user","content":"search"}]}'
check_eq "Anthropic web_search stream, 25 searches and 3 fetches: relayed" \
	"$(post $K /v1/messages "$body" -H 'x-mock-web-search: 25' -H 'x-mock-web-fetch: 3')" 200
never_below $K "Anthropic web_search (stream: the final message_delta's server_tool_use)"
check_eq "... exactly the bill" "$(spent $K)" "$(bill_nusd)"

# ---- OpenAI Responses web_search_call items ---------------------------------
K=sk-settle-resp
body='{"model":"kv-gpt5-1","max_output_tokens":100,"tools":[{"type":"web_search"}],"max_tool_calls":4,"input":"search"}'
check_eq "Responses with 3 web_search_call items: relayed" \
	"$(post $K /v1/responses "$body" -H 'x-mock-web-search: 3')" 200
never_below $K "Responses web_search_call (JSON)"
check_eq "... exactly the bill" "$(spent $K)" "$(bill_nusd)"

K=sk-settle-resp-stream
body='{"model":"kv-gpt5-1","max_output_tokens":100,"stream":true,"tools":[{"type":"web_search"}],"max_tool_calls":4,"input":"search"}'
check_eq "Responses stream with 4 web_search_call items: relayed" \
	"$(post $K /v1/responses "$body" -H 'x-mock-web-search: 4')" 200
never_below $K "Responses web_search_call (stream)"
check_eq "... exactly the bill" "$(spent $K)" "$(bill_nusd)"

# ---- the response's model ---------------------------------------------------
K=sk-settle-azure
body='{"model":"kv-mini-1","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}'
check_eq "body kv-mini, response model kv-big (a deployment's own): relayed" \
	"$(post $K /v1/chat/completions "$body" -H 'x-mock-model: kv-big-0613')" 200
never_below $K "response model dearer than the body's" kv-big
check_eq "... charged at the response model's (dearer) price" "$(spent $K)" "$(bill_nusd kv-big)"

K=sk-settle-cheap
check_eq "body kv-big, response model kv-mini: relayed" \
	"$(post $K /v1/chat/completions "${body/kv-mini-1/kv-big-1}" -H 'x-mock-model: kv-mini-0613')" 200
never_below $K "response model cheaper than the body's" kv-big
check_eq "... charged at the body's (dearer) price" "$(spent $K)" "$(bill_nusd kv-big)"

# ---- an Anthropic stream that ends in event: error ----------------------------
K=sk-settle-error
body='{"model":"kv-claude-1","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"go"}]}'
check_eq "Anthropic 200 stream, event: error after 500 deltas: relayed" \
	"$(post $K /v1/messages "$body" -H 'x-mock-tokens: 1000' -H 'x-mock-error-after: 500')" 200
check "... the client saw the error event" grep -q '^event: error' "$T/out"
check_eq "... the mock billed 500 output tokens" "$(bill_field output)" 500
never_below $K "stream ending in event: error"
check_eq "... charged as a cut: marked estimated" "$(estimated $K)" 1
check "... the access log says estimated" grep -q "key=$(id_of $K) .* estimated" "$KV_LOG"

# ---- unknown_models = default: an unpriced response model ------------------
kv_stop
write_config default
kv_start
K=sk-settle-unpriced
body='{"model":"kv-mini-1","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}'
check_eq "response model azure-deployment-x (unpriced) for body kv-mini: relayed" \
	"$(post $K /v1/chat/completions "$body" -H 'x-mock-model: azure-deployment-x')" 200
never_below $K "unpriced response model" default
check_eq "... charged at [price default]" "$(spent $K)" "$(bill_nusd default)"
check "... and marked in the log" grep -q "KV0445.*azure-deployment-x" "$KV_LOG"

# ---- on_cut = drain ----------------------------------------------------------
kv_stop
write_config deny drain
kv_start
K=sk-settle-drain
ab0=$(kv_mock_stat aborted_streams)
cut_after_first $K
check_eq "on_cut = drain: the mock saw no abort (read to its end)" "$(kv_mock_stat aborted_streams)" "$ab0"
never_below $K "on_cut = drain: a reasoning stream cut after its first chunk"
check_eq "... read on to its usage: the exact bill" "$(spent $K)" "$(bill_nusd)"
check_eq "... not an estimate" "$(estimated $K)" 0

kv_stop
write_config deny drain 2k
kv_start
K=sk-settle-drain-max
cut_after_first $K
never_below $K "on_cut = drain past drain_max (2k)"
check_eq "... charged the reservation's output instead" "$(( $(spent $K) >= 30000 * 8000 ))" 1
check_eq "... marked estimated" "$(estimated $K)" 1

kv_stop
write_config deny drain 4m 1
kv_start
K=sk-settle-drain-time
cut_after_first $K
never_below $K "on_cut = drain past drain_timeout (1 s; the stream runs 6 s)"
check_eq "... charged the reservation's output instead" "$(( $(spent $K) >= 30000 * 8000 ))" 1
check_eq "... marked estimated" "$(estimated $K)" 1
check_eq "... the mock billed less than the whole answer (cut at the deadline)" \
	"$(( $(bill_field output) < 20020 ))" 1

kv_finish
