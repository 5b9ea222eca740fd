#!/bin/bash
# t_gemini: kilovolt in front of the Gemini API (played by tests/mock_gemini.c
# in the mock), provider = gemini with the operator's api_key. @google/genai
# (Gemini API mode, httpOptions.baseUrl at kilovolt, a kilovolt key as its
# API key): generateContent, generateContentStream, countTokens (free),
# embedContent; the key's spend equals the usageMetadata the SDK reports
# priced at the catalogue's gemini/ prices, thoughts as output, nothing left
# reserved. Then curl: audio inlineData (the mock's promptTokensDetails
# name AUDIO apart) charged at the audio input price, its reservation the
# context window at that price (402 on a key the text price would admit);
# the JSON-array stream (no alt=sse) charged by its last
# element; ?key= never reaches the upstream nor the log; the upstream gets
# the operator's key in x-goog-api-key; a request over budget gets 402 in
# Google's error shape and never reaches the mock; an unknown top-level
# member or a Google Search tool is refused 400; 200 concurrent thinking
# streams on one key never pass its budget.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"

MODEL=gemini-2.5-flash
EMBED=gemini-embedding-001
KG=kv-gemini-sdk-$$
KQ=kv-gemini-query-$$
KS=kv-gemini-small-$$
KF=kv-gemini-flood-$$
KC=kv-gemini-cut-$$
KA=kv-gemini-audio-$$
KR=kv-gemini-audio-reserve-$$
FLOOD_BUDGET=20000000	# $0.02 in nano-dollars

cp "$top_srcdir/data/prices-2026-07-24.json" "$T/prices.json"
kv_start_mock
kv_write_config <<EOF2
[budget]
prices = prices.json
unknown_models = deny

[upstream gemini]
provider = gemini
url = http://127.0.0.1:$MOCK_PORT
api_key = goog-provider-secret

[key sdk]
key = $KG

[key query]
key = $KQ

[key small]
key = $KS
budget = 0.000001

[key cut]
key = $KC

[key audio]
key = $KA

[key audioreserve]
key = $KR
budget = 0.5

[key flood]
key = $KF
budget = 0.02
EOF2
kv_start

# The catalogue's prices, nano-dollars per token (USD per 1M x 1,000).
price() { kv_ctl prices --json "gemini/$1" | jq -r ".prices[0].prices.$2 // 0" | awk '{print $1 / 1000000}'; }
P_IN=$(price $MODEL input_per_1m_nusd) P_OUT=$(price $MODEL output_per_1m_nusd)
P_CR=$(price $MODEL cached_input_per_1m_nusd) P_EMB=$(price $EMBED input_per_1m_nusd)
P_AU=$(price $MODEL audio_input_per_1m_nusd)
echo "# $MODEL: input $P_IN, output $P_OUT, cached $P_CR, audio $P_AU; $EMBED: $P_EMB nUSD/token"
check "kvctl prices: gemini/$MODEL has input and output prices" test "$P_IN" -gt 0 -a "$P_OUT" -gt 0
check "kvctl prices: gemini/$MODEL's audio input is dearer than its text input" test "$P_AU" -gt "$P_IN"
check "kvctl prices: gemini/$EMBED has an input price" test "$P_EMB" -gt 0

reported() { sed -n 's/^usage //p' "$1"; }
# cost of usage lines: generate calls at the chat prices, the last (embed) at its own
cost_gen() {
	jq -s --argjson i "$P_IN" --argjson o "$P_OUT" --argjson r "$P_CR" \
		'map((.prompt + .tool - .cached) * $i + .cached * $r + (.candidates + .thoughts) * $o) | add // 0'
}

# ---- the SDK ----------------------------------------------------------------------
from=$(grep -vc '^BILLED' "$MOCK_LOG")
kv_node_checks genai "$T/genai.out" node "$KV_SDK/gemini_test.mjs" "$KV_URL" "$KG" "$MODEL" "$EMBED"
kv_wait_for 30 settled "$KG"
gen=$(reported "$T/genai.out" | head -n 2 | cost_gen)
emb=$(reported "$T/genai.out" | tail -n 1 | jq --argjson e "$P_EMB" '.prompt * $e')
check_eq "genai: the ledger's spend is the reported usage at the catalogue's prices" \
	"$(spent "$KG")" $((gen + emb))
check_eq "genai: nothing left reserved" "$(reserved "$KG")" 0
tail -n +$((from + 1)) "$MOCK_LOG" | grep -v '^BILLED' >"$T/genai.log"
check_eq "genai: every call reached the Gemini path it names (4 calls)" \
	"$(sed 's/ .*//; s/^POST //' "$T/genai.log" | wc -l)" 4
check "genai: the upstream got the operator's key (x-goog-api-key), never the kilovolt key" \
	eval "! grep -q -F -- '$KG' '$MOCK_LOG' && grep -q 'auth=$(id_of goog-provider-secret)' '$T/genai.log'"

# ---- the JSON-array stream, ?key= --------------------------------------------------
B='{"contents":[{"role":"user","parts":[{"text":"an array stream"}]}],"generationConfig":{"maxOutputTokens":20,"thinkingConfig":{"thinkingBudget":0}}}'
code=$(kv_curl "/v1beta/models/$MODEL:streamGenerateContent?key=$KQ" -o "$T/arr.body" -w '%{http_code}' \
	"${J[@]}" -H 'x-mock-tokens: 7' -H 'x-mock-reasoning: 3' -d "$B")
check_eq "a JSON-array stream with the key in ?key=: 200" "$code" 200
check "... its body is the array, relayed as sent" eval "jq -e 'type == \"array\" and length == 7' '$T/arr.body' >/dev/null"
kv_wait_for 30 settled "$KQ"
u=$(jq -c '.[-1].usageMetadata' "$T/arr.body")
check_eq "... charged by its last element's usage (thoughts as output)" "$(spent "$KQ")" \
	"$(jq --argjson i "$P_IN" --argjson o "$P_OUT" '.promptTokenCount * $i + (.candidatesTokenCount + .thoughtsTokenCount) * $o' <<<"$u")"
check "... ?key= never reached the upstream" eval "! grep -q -F -- 'key=' '$MOCK_LOG'"
check "... nor kilovolt's log" eval "! grep -q -F -- '$KQ' '$KV_LOG'"

# an SSE stream cut by nothing, with ?alt=sse and the key in the header
code=$(kv_curl "/v1beta/models/$MODEL:streamGenerateContent?alt=sse" -o "$T/sse.body" -w '%{http_code}' \
	"${J[@]}" -H "x-goog-api-key: $KQ" -H 'x-mock-tokens: 4' -d "$B")
check_eq "an alt=sse stream: 200" "$code" 200
check_eq "... four events" "$(grep -c '^data: ' "$T/sse.body")" 4
code=$(kv_curl "/v1/models/$MODEL:generateContent" -o "$T/v1.body" -w '%{http_code}' "${J[@]}" \
	-H "Authorization: Bearer $KQ" -d "$B")
check_eq "the /v1/ path with the key as a bearer token: 200" "$code" 200
check "... the upstream saw the operator's key in x-goog-api-key, no Authorization" \
	eval "tail -n 1 '$MOCK_LOG' | grep -q 'auth=$(id_of goog-provider-secret)' && ! tail -n 1 '$MOCK_LOG' | grep -qi 'authorization'"

# ---- audio input: its tokens at the audio input price -----------------------------------
# The mock's promptTokensDetails name AUDIO apart (a quarter of the audio
# inlineData's base64 bytes), as Google's do; the rest is TEXT.
AU=$(head -c 3000 /dev/zero | base64 -w0)
AB='{"contents":[{"parts":[{"text":"what is said here?"},{"inlineData":{"mimeType":"audio/wav","data":"'$AU'"}}]}],"generationConfig":{"maxOutputTokens":20,"thinkingConfig":{"thinkingBudget":0}}}'
for q in "generateContent" "streamGenerateContent?alt=sse" "streamGenerateContent"; do
	n0=$(spent "$KA")
	code=$(kv_curl "/v1beta/models/$MODEL:$q" -o "$T/audio.body" -w '%{http_code}' "${J[@]}" \
		-H "x-goog-api-key: $KA" -H 'x-mock-tokens: 6' -d "$AB")
	check_eq "audio inlineData, :$q: 200" "$code" 200
	kv_wait_for 30 settled "$KA"
	u=$(sed -n 's/^data: //p' "$T/audio.body" | jq -cs 'if length > 0 then .[-1] else empty end')
	[ -n "$u" ] || u=$(jq -c 'if type == "array" then .[-1] else . end' "$T/audio.body")
	u=$(jq -c .usageMetadata <<<"$u")
	a=$(jq '[.promptTokensDetails[] | select(.modality == "AUDIO") | .tokenCount] | add // 0' <<<"$u")
	t=$(jq '[.promptTokensDetails[] | select(.modality != "AUDIO") | .tokenCount] | add // 0' <<<"$u")
	check "... the usage names $a AUDIO tokens beside $t TEXT ones" test "$a" -gt 0 -a "$t" -gt 0
	check_eq "... charged text x input + audio x audio input + output, to the nano-dollar" \
		$(( $(spent "$KA") - n0 )) \
		$(( t * P_IN + a * P_AU + $(jq .candidatesTokenCount <<<"$u") * P_OUT ))
	check_eq "... nothing left reserved" "$(reserved "$KA")" 0
done
# The reservation: audio the body does not size (its length is not its
# tokens) reserves the context window at the audio input price, the
# dearest input price; a key that the text price would admit is refused.
W=$(kv_ctl prices --json "gemini/$MODEL" | jq -r '.prices[0].limits.max_input_tokens // 0')
echo "# $MODEL context window: $W tokens; at the text price $((W * P_IN)), at the audio price $((W * P_AU)) nUSD"
check "the window at the text price fits \$0.50, at the audio price it does not" \
	test $((W * P_IN + 20 * P_OUT)) -lt 500000000 -a $((W * P_AU)) -gt 500000000
n0=$(grep -vc '^BILLED' "$MOCK_LOG")
code=$(kv_curl "/v1beta/models/$MODEL:generateContent" -o "$T/audio402.body" -w '%{http_code}' "${J[@]}" \
	-H "x-goog-api-key: $KR" -d "$AB")
check_eq "audio inlineData on a key of \$0.50: 402" "$code" 402
check_eq "... and the request never reached the mock" "$(grep -vc '^BILLED' "$MOCK_LOG")" "$n0"
code=$(kv_curl "/v1beta/models/$MODEL:generateContent" -o /dev/null -w '%{http_code}' "${J[@]}" \
	-H "x-goog-api-key: $KR" -d "$B")
check_eq "... while a text request on that key: 200" "$code" 200

# ---- a stream the client leaves: a cut ----------------------------------------------
# README "How cuts, cancels and timeouts are charged": the input the stream
# gave (its chunks' promptTokenCount) and the reservation's output
# (maxOutputTokens 20 + thinkingBudget 0), marked estimated.
CB='{"contents":[{"parts":[{"text":"cut me short"}]}],"generationConfig":{"maxOutputTokens":20,"thinkingConfig":{"thinkingBudget":0}}}'
curl -sS -m 2 -o "$T/cut.body" "$KV_URL/v1beta/models/$MODEL:streamGenerateContent?alt=sse" "${J[@]}" \
	-H "x-goog-api-key: $KC" -H 'x-mock-tokens: 20' -H 'x-mock-delay-ms: 500' -d "$CB" 2>/dev/null
check "a stream left after its first chunks got some of them" grep -q '^data: ' "$T/cut.body"
kv_wait_for 30 settled "$KC"
check_eq "... charged its input and the reservation's output" "$(spent "$KC")" \
	$(( ${#CB} / 4 * P_IN + 20 * P_OUT ))
check_eq "... marked estimated" "$(key_field "$KC" estimated_requests)" 1

# ---- refusals ------------------------------------------------------------------------
n0=$(grep -vc '^BILLED' "$MOCK_LOG")
code=$(kv_curl "/v1beta/models/$MODEL:generateContent" -o "$T/402.body" -w '%{http_code}' "${J[@]}" \
	-H "x-goog-api-key: $KS" -d '{"contents":[{"parts":[{"text":"too dear"}]}],"generationConfig":{"maxOutputTokens":1000}}')
check_eq "over budget: 402" "$code" 402
check_eq "... in Google's error shape" "$(jq -r '"\(.error.code) \(.error.status)"' "$T/402.body")" "402 RESOURCE_EXHAUSTED"
code=$(kv_curl "/v1beta/models/$MODEL:generateContent" -o "$T/400.body" -w '%{http_code}' "${J[@]}" \
	-H "x-goog-api-key: $KG" -d '{"contents":[],"notAMember":1}')
check_eq "an unknown top-level member: 400, Google's shape" "$code $(jq -r .error.status "$T/400.body")" "400 INVALID_ARGUMENT"
code=$(kv_curl "/v1beta/models/$MODEL:generateContent" -o /dev/null -w '%{http_code}' "${J[@]}" \
	-H "x-goog-api-key: $KG" -d '{"contents":[],"tools":[{"googleSearch":{}}]}')
check_eq "a Google Search tool (billed apart): 400" "$code" 400
code=$(kv_curl "/v1beta/models/$MODEL:generateContent?key=$KG&key=$KQ" -o /dev/null -w '%{http_code}' \
	"${J[@]}" -d '{"contents":[]}')
check_eq "two ?key= parameters: 400" "$code" 400
code=$(kv_curl "/v1beta/cachedContents" -o /dev/null -w '%{http_code}' -H "x-goog-api-key: $KG")
check_eq "a path of the API kilovolt does not relay: 404" "$code" 404
check_eq "none of these reached the mock" "$(grep -vc '^BILLED' "$MOCK_LOG")" "$n0"

# ---- 200 concurrent thinking streams on one key ---------------------------------------
FB='{"contents":[{"parts":[{"text":"flood"}]}],"generationConfig":{"maxOutputTokens":200,"thinkingConfig":{"thinkingBudget":800}}}'
: >"$T/flood.codes"
pids=()
for i in $(seq 200); do
	curl -sS -m 120 -o /dev/null -w '%{http_code}\n' "$KV_URL/v1beta/models/$MODEL:streamGenerateContent?alt=sse" \
		"${J[@]}" -H "x-goog-api-key: $KF" -H 'x-mock-tokens: 20' -H 'x-mock-reasoning: 500' \
		-H 'x-mock-delay-ms: 20' -d "$FB" >>"$T/flood.codes" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
kv_wait_for 60 settled "$KF"
ok=$(grep -c '^200$' "$T/flood.codes") refused=$(grep -c '^402$' "$T/flood.codes")
echo "# flood: $ok admitted, $refused refused, spent $(spent "$KF") of $FLOOD_BUDGET nUSD"
check_eq "flood: every stream a 200 or a 402" $((ok + refused)) 200
check "flood: some were refused (the budget bounds them)" test "$refused" -gt 0
check "flood: the spend never passed the budget" test "$(spent "$KF")" -le "$FLOOD_BUDGET"
check_eq "flood: nothing left reserved" "$(reserved "$KF")" 0

kv_finish
