#!/bin/bash
# t_bounds: the reservation is an upper bound of what the provider can bill
# (issue 20, input and admission). The mock bills by the providers'
# published rules (image tiles from the PNG header, Anthropic's hidden tool
# prompts, prompt arrays x n); each case asserts the ledger (kvctl --json)
# against the mock's own bill and the budget, and that a refused request
# reached no provider.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
KV_WORKERS=1

key_field() {
	kv_ctl keys --json | jq -r --arg id "$1" \
	    '[.keys[] | select(.id == $id) | .'"$2"'] | first // "none"'
}
lines() { grep -vc '^BILLED' "$MOCK_LOG" 2>/dev/null || echo 0; }

kv_start_mock
KS=sk-kvtest-bounds-small-0002	# $0.002
KA=sk-kvtest-bounds-anth-00015	# $0.0015
KC=sk-kvtest-bounds-cmpl-005	# $0.05
KV=sk-kvtest-bounds-virtual-1	# a configured key on the virtual-key upstream
kv_write_config <<EOF
[upstream anthropic]
api_key = sk-ant-provider-secret

[key small]
key = $KS
budget = 0.002

[key anth]
key = $KA
budget = 0.0015

[key cmpl]
key = $KC
budget = 0.05

[key virtual]
key = $KV
budget = 2.00

[price claude-opus-4*]
input = 3.00
output = 15.00
context_window = 200000
web_search = 10
EOF
kv_start

# post KEY PATH BODY [CURL ARGS]: status; the body in $T/out
post() {
	local k=$1 path=$2 body=$3
	shift 3
	kv_curl "$path" -o "$T/out" -w '%{http_code}' -H "Authorization: Bearer $k" \
	    -H 'Content-Type: application/json' --data-binary "$body" "$@"
}
# refused DESC STATUS KEY PATH BODY [CURL ARGS]: that status, nothing forwarded
refused() {
	local desc=$1 want=$2 n0 st
	shift 2
	n0=$(lines)
	st=$(post "$@")
	check_eq "$desc: $want" "$st" "$want"
	check_eq "... and the provider got nothing" "$(lines)" "$n0"
}

# ---- 1. inline images: the tile rule from the header, not the bytes ---------
PNG=iVBORw0KGgoAAAANSUhEUgAACAAAAAgACAYAAAAAAAAAAAAAAElFTkSuQmCC	# 2048 x 2048
PART='{"type":"image_url","image_url":{"url":"data:image/png;base64,'$PNG'"}}'
IMG='{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":['
IMG+="$PART,$PART,$PART,$PART,$PART"']}]}'
echo "# 5 inline 2048x2048 PNGs in ${#IMG} bytes; gpt-4o-mini bills 25,501 tokens each"
refused "5 inline PNGs on a \$0.002 key" 402 "$KS" /v1/chat/completions "$IMG"
check "... the refusal names what it may cost" grep -q 'may cost up to \$0.019' "$T/out"
check_eq "... nothing spent or reserved" \
	"$(key_field "$(id_of "$KS")" spent_nusd)/$(key_field "$(id_of "$KS")" reserved_nusd)" "0/0"
K1=sk-kvtest-bounds-images-1
st=$(post "$K1" /v1/chat/completions "$IMG")
check_eq "the same on a \$2 key: 200" "$st" 200
ptok=$(jq -r .usage.prompt_tokens "$T/out")
ctok=$(jq -r .usage.completion_tokens "$T/out")
bill=$((ptok * 150 + ctok * 600))
check "... the mock billed the tiles ($ptok input tokens >= 5 x 25501)" [ "$ptok" -ge 127505 ]
check "... the ledger charged the mock's bill" \
	kv_wait_for 10 eval '[ "$(key_field "$(id_of "$K1")" spent_nusd)" = "$bill" ]'

# ---- 2. Anthropic's hidden tool prompts ---------------------------------------
TOOLS='{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},{"type":"computer_20250124","name":"computer","display_width_px":1024,"display_height_px":768}],"messages":[{"role":"user","content":"hi"}]}'
echo "# bash/text_editor/computer tools in ${#TOOLS} bytes"
AH=(-H 'anthropic-version: 2023-06-01')
refused "hidden tool prompts on a \$0.0015 key" 402 "$KA" /v1/messages "$TOOLS" "${AH[@]}"
st=$(post "$KV" /v1/messages "$TOOLS" "${AH[@]}")
check_eq "the same on a \$2 configured key: 200" "$st" 200
ptok=$(jq -r .usage.input_tokens "$T/out")
ctok=$(jq -r .usage.output_tokens "$T/out")
bill=$((ptok * 3000 + ctok * 15000))
check "... the mock billed the hidden prompts ($ptok >= 2525)" [ "$ptok" -ge 2525 ]
check "... the ledger charged the mock's bill" \
	kv_wait_for 10 eval '[ "$(key_field "$(id_of "$KV")" spent_nusd)" = "$bill" ]'

# ---- 3. legacy completions: prompt arrays multiply the output ------------------
CMPL='{"model":"llama-3","max_tokens":4000,"prompt":["a","b","c","d","e","f","g","h"]}'
refused "8 prompts x 4000 tokens on a \$0.05 key" 402 "$KC" /v1/completions "$CMPL"
check "... reserving all eight (\$0.096)" grep -q 'may cost up to \$0.096' "$T/out"
st=$(post "$KC" /v1/completions '{"model":"llama-3","max_tokens":4000,"prompt":["a","b"]}')
check_eq "2 prompts x 4000 on the same key: 200" "$st" 200
ctok=$(jq -r .usage.completion_tokens "$T/out")
check_eq "... the mock billed both prompts' output" "$ctok" 10
sleep 1
spent=$(key_field "$(id_of "$KC")" spent_nusd)
check "... the ledger charged it, within the budget ($spent)" \
	eval '[ "$spent" -ge "$((ctok * 3000))" ] && [ "$spent" -le 50000000 ]'

# ---- 4. type-strict switches --------------------------------------------------
for v in '"true"' 1 '"yes"'; do
	refused "background: $v" 400 "$K1" /v1/responses "{\"model\":\"gpt-4o-mini\",\"input\":\"q\",\"background\":$v}"
done
refused "store: \"false\"" 400 "$K1" /v1/responses '{"model":"gpt-4o-mini","input":"q","store":"false"}'
refused "stream: \"true\"" 400 "$K1" /v1/chat/completions '{"model":"gpt-4o-mini","messages":[],"stream":"true"}'

# ---- 5. every credential a provider reads ---------------------------------------
B='{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
THROW=sk-kvtest-bounds-throwaway
for h in api-key x-goog-api-key x-api-key; do
	refused "Authorization: throw-away next to a real key in $h" 400 "$THROW" \
	    /v1/chat/completions "$B" -H "$h: sk-kvtest-bounds-real-key"
done
refused "Authorization next to a different ?key=" 400 "$THROW" \
	"/v1/chat/completions?key=sk-kvtest-bounds-real-key" "$B"
st=$(post "$THROW" /v1/chat/completions "$B" -H "api-key: $THROW")
check_eq "the same key in Authorization and api-key: 200" "$st" 200

# ---- 6. virtual keys fail closed --------------------------------------------------
M='{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
refused "an invented key on the api_key upstream (unknown_keys = allow)" 401 \
	sk-kvtest-bounds-invented /v1/messages "$M" "${AH[@]}"
st=$(post "$KV" /v1/messages "$M" "${AH[@]}" -H "api-key: $KV" -H "x-goog-api-key: $KV")
check_eq "a configured key on it: 200" "$st" 200
line=$(grep -v '^BILLED' "$MOCK_LOG" | tail -n 1)
check_eq "... the provider saw the operator's key" "$(sed 's/.* auth=\([^ ]*\).*/\1/' <<<"$line")" \
	"$(id_of sk-ant-provider-secret)"
hdrs=",$(sed 's/.* headers=//' <<<"$line" | tr 'A-Z' 'a-z'),"
check "... and none of the client's credential headers" \
	eval '[[ $hdrs != *,api-key,* && $hdrs != *,x-goog-api-key,* ]]'
refused "?key= on the api_key upstream" 400 "$KV" "/v1/messages?key=$KV" "$M" "${AH[@]}"

# ---- 7. one stream_options ---------------------------------------------------------
S='{"model":"gpt-4o-mini","max_tokens":5,"stream":true,"stream_options":{"continuous_usage_stats":false},"messages":[{"role":"user","content":"hi"}]}'
st=$(post "$K1" /v1/chat/completions "$S")
check_eq "a stream with the client's stream_options: 200" "$st" 200
line=$(grep -v '^BILLED' "$MOCK_LOG" | tail -n 1)
check "... the provider got one stream_options member, usage merged into it" \
	grep -q 'include_usage=1 stream_options=1 .*so_keys=continuous_usage_stats,include_usage ' <<<"$line"
st=$(post "$K1" /v1/chat/completions \
	'{"model":"gpt-4o-mini","stream":true,"stream_options":null,"messages":[]}')
check_eq "stream_options null on a stream is absent (issue 33): 200" "$st" 200
line=$(grep -v '^BILLED' "$MOCK_LOG" | tail -n 1)
check "... the provider got one stream_options member, asking usage" \
	grep -q 'include_usage=1 stream_options=1 .*so_keys=include_usage ' <<<"$line"

# ---- 8. server-tool loops: a context window per internal turn, plus the fees ---------
WS='{"model":"claude-opus-4-1","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":25}],"messages":[{"role":"user","content":"q"}]}'
# 26 turns x 200,000 tokens x $3/M + 25 searches x $0.01 + 10 x $15/M
refused "web_search max_uses 25 on a \$2 key" 402 "$KV" /v1/messages "$WS" "${AH[@]}"
check "... reserving 26 context windows and 25 searches (\$15.85)" grep -q 'may cost up to \$15.85' "$T/out"
refused "web_search on a model without context_window" 400 "$KV" /v1/messages \
	"${WS/claude-opus-4-1/claude-sonnet-4-5}" "${AH[@]}"
check "... naming context_window" grep -q context_window "$T/out"
IR='{"model":"gpt-4o-mini","input":[{"type":"item_reference","id":"msg_1"}]}'
refused "a Responses item_reference on a model without context_window" 400 "$K1" /v1/responses "$IR"

kv_finish
