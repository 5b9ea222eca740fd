#!/bin/bash
# t_vertex: kilovolt in front of Vertex AI's Claude models (played by
# tests/sdk/vertex_standin.mjs, whose token endpoint verifies kilovoltd's
# signed JWT assertion with jose against the service account's public key),
# with the real clients pointed at kilovolt and a kilovolt key as their
# Google access token: Anthropic's Vertex SDK (create, its stream, the stream
# helper, countTokens) and Claude Code in Vertex mode (CLAUDE_CODE_USE_VERTEX,
# ANTHROPIC_VERTEX_BASE_URL ending in /v1, CLAUDE_CODE_SKIP_VERTEX_AUTH and
# ANTHROPIC_AUTH_TOKEN). kilovoltd gets its access token with the service
# account key file named by GOOGLE_APPLICATION_CREDENTIALS. For each
# client: the key's spend in the ledger equals the usage the client reports,
# priced exactly at the shipped catalogue's vertex_ai/ prices, nothing left
# reserved. Then: no kilovolt key reaches the stand-in, every model call
# carries the vended access token and the upstream's own project and
# location; x-goog-api-key is a kilovolt key on Vertex paths; countTokens is
# free; an unknown key, an exhausted budget and a path kilovolt does not
# meter are refused with nothing sent on.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v openssl >/dev/null || skip "openssl not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
. "$top_srcdir/tests/vertex_lib.sh"

MODEL=claude-sonnet-4-5@20250929
KS=kv-vertex-sdk-$$
KC=kv-vertex-claude-code-$$
KX=kv-vertex-misc-$$
KP=kv-vertex-poor-$$
KG=kv-vertex-genai-$$
GMODEL=gemini-2.5-flash
# vertex_ai/claude-sonnet-4-5@20250929 in the shipped catalogue, nUSD per
# token: input 3000, output 15000, cache read 300, cache write 3750.
P_IN=3000 P_OUT=15000 P_CR=300 P_CW=3750
# gemini-2.5-flash (the catalogue's vertex_ai-language-models entry): input
# 300, output and thinking 2500.
G_IN=300 G_OUT=2500

vx_keypair sa
vx_start_standin
vx_sa_file sa "$VX_URL/token"
cp "$top_srcdir/data/prices-2026-07-24.json" "$T/prices.json"
{
	printf '[budget]\nprices = prices.json\nunknown_models = deny\n'
	vx_upstream
	printf '[key vertex-sdk]\nkey = %s\n[key claude-code]\nkey = %s\n[key misc]\nkey = %s\n' "$KS" "$KC" "$KX"
	printf '[key poor]\nkey = %s\nbudget = 0.000001\n' "$KP"
	printf '[key genai]\nkey = %s\n' "$KG"
} >"$T/vertex.ini"
kv_write_config <"$T/vertex.ini"
GOOGLE_APPLICATION_CREDENTIALS=$T/sa-sa.json kv_start

check "the master got its access token with the service account's signed assertion" \
	grep -q "Google access token from service account file, expiring in" "$KV_LOG"
check_eq "... which the stand-in verified (jose, RS256, the account's public key)" \
	"$(jq -r 'select(.vended) | "\(.auth) \(.vended.via)"' "$VX_LOG" | sort -u)" \
	"assertion:$VX_EMAIL token endpoint"
TOKEN=$(jq -r 'select(.vended) | .vended.token' "$VX_LOG" | tail -n 1)
check_eq "kvctl prices: $MODEL at the catalogue's vertex_ai/ input, output, cache read and write" \
	"$(kv_ctl prices --json "vertex_ai/$MODEL" | jq -c '.prices[0].prices |
		[.input_per_1m_nusd, .output_per_1m_nusd, .cached_input_per_1m_nusd, .cache_write_per_1m_nusd]')" \
	"[3000000000,15000000000,300000000,3750000000]"

lines() { wc -l <"$VX_LOG"; }
after() { tail -n +$(($1 + 1)) "$VX_LOG"; }
cost_of() {
	jq -s --argjson i $P_IN --argjson o $P_OUT --argjson r $P_CR --argjson w $P_CW \
		'map(.input * $i + .output * $o + .cacheRead * $r + .cacheWrite * $w) | add // 0'
}
reported() { sed -n 's/^usage //p' "$1"; }
settled_all() { [ "$(kv_ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0 ]; }

# ---- Anthropic's Vertex SDK ------------------------------------------------------

from=$(lines)
kv_node_checks vertex-sdk "$T/sdk.out" node "$KV_SDK/vertex_sdk_test.mjs" "$KV_URL" "$KS"
kv_wait_for 30 settled_all
after "$from" >"$T/sdk.log"
check_eq "vertex-sdk: the stand-in served each call it reported" \
	"$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/sdk.log" | jq -s -c 'map({input, output, cacheRead, cacheWrite})')" \
	"$(reported "$T/sdk.out" | jq -s -c 'map({input, output, cacheRead, cacheWrite})')"
check_eq "vertex-sdk: the ledger's spend is the reported usage at the catalogue's prices" \
	"$(spent "$KS")" "$(reported "$T/sdk.out" | cost_of)"
check_eq "vertex-sdk: nothing left reserved" "$(reserved "$KS")" 0
check_eq "vertex-sdk: its calls went on as rawPredict, streamRawPredict and count-tokens" \
	"$(jq -r '.target | sub(".*/models/"; "")' "$T/sdk.log" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')" \
	"$MODEL:rawPredict=1 $MODEL:streamRawPredict=2 count-tokens:rawPredict=1 "
check_eq "vertex-sdk: each under the upstream's project and location, not the client's" \
	"$(jq -r '.target | capture("^/v1[a-z0-9]*/projects/(?<p>[^/]+)/locations/(?<l>[^/]+)/") | "\(.p) \(.l)"' "$T/sdk.log" | sort -u)" \
	"kv-project us-east5"

# ---- Claude Code in Vertex mode ---------------------------------------------------

from=$(lines)
kv_node_checks claude-code "$T/cc.out" node "$KV_SDK/claude_code_test.mjs" "$KV_URL" "$KC" "$T/cc-home" --vertex
kv_wait_for 30 settled_all
after "$from" >"$T/cc.log"
check_eq "claude-code: the usage it reports is the stand-in's for its answers" \
	"$(reported "$T/cc.out" | cost_of)" "$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/cc.log" | cost_of)"
check_eq "claude-code: the ledger's spend is every model call it made, priced" \
	"$(spent "$KC")" "$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/cc.log" | cost_of)"
check_eq "claude-code: nothing left reserved" "$(reserved "$KC")" 0

# ---- Gemini on Vertex: @google/genai in Vertex mode, the JSON-array stream, ?key= --

gcost() { jq -s --argjson i $G_IN --argjson o $G_OUT 'map(.prompt * $i + (.candidates + .thoughts) * $o) | add // 0'; }
from=$(lines)
kv_node_checks genai-vertex "$T/genai.out" node "$KV_SDK/gemini_test.mjs" "$KV_URL" "$KG" "$GMODEL" - \
	--vertex kv-client-project us-central1
kv_wait_for 30 settled_all
after "$from" >"$T/genai.log"
check_eq "genai-vertex: its calls went on as generateContent, streamGenerateContent (alt=sse) and countTokens" \
	"$(jq -r '.target | sub(".*/models/"; "")' "$T/genai.log" | sort | tr '\n' ' ')" \
	"$GMODEL:countTokens $GMODEL:generateContent $GMODEL:streamGenerateContent?alt=sse "
check_eq "genai-vertex: the stand-in served the usage the client reported" \
	"$(jq -c 'select(.status == 200 and .usage) | .usage' "$T/genai.log" | gcost)" \
	"$(reported "$T/genai.out" | gcost)"
check_eq "genai-vertex: the ledger's spend is the reported usage at the catalogue's prices" \
	"$(spent "$KG")" "$(reported "$T/genai.out" | gcost)"
check_eq "genai-vertex: nothing left reserved" "$(reserved "$KG")" 0
G=/v1/projects/any/locations/us-east5/publishers/google/models/$GMODEL
before=$(spent "$KG")
code=$(kv_curl "$G:streamGenerateContent?key=$KG" -o "$T/arr.body" -w '%{http_code}' -H 'Content-Type: application/json' \
	-d '{"contents":[{"role":"user","parts":[{"text":"array stream [[out=9]] [[think=4]]"}]}],"generationConfig":{"maxOutputTokens":50}}')
check_eq "the JSON-array stream with the key in ?key=: 200" "$code" 200
kv_wait_for 30 settled_all
check_eq "... charged the last chunk's usage, thoughts as output" "$(($(spent "$KG") - before))" \
	"$(jq -c '.[-1].usageMetadata | {prompt: .promptTokenCount, candidates: .candidatesTokenCount, thoughts: (.thoughtsTokenCount // 0)}' "$T/arr.body" | gcost)"
check_eq "... and ?key= went no further than kilovolt" \
	"$(jq -r 'select(.model == "'"$GMODEL"'") | .target' "$VX_LOG" | tail -n 1)" \
	"/v1/projects/kv-project/locations/us-east5/publishers/google/models/$GMODEL:streamGenerateContent"
code=$(kv_curl "$G:generateContent" -o "$T/g.body" -w '%{http_code}' -H "Authorization: Bearer not-a-key" \
	-H 'Content-Type: application/json' -d '{"contents":[]}')
check_eq "an unknown key on a Vertex Gemini path: 401, in Google's error shape" \
	"$code $(jq -r .error.status "$T/g.body")" "401 UNAUTHENTICATED"

# ---- what reached the stand-in ----------------------------------------------------

for k in "$KS" "$KC" "$KX" "$KP" "$KG"; do
	check_eq "the kilovolt key ${k%-*} never reached the stand-in" "$(grep -c -F -- "$k" "$VX_LOG")" 0
done
check_eq "every model call carried the access token the stand-in vended" \
	"$(jq -r 'select(.op or (.target | test("count-tokens"))) | .auth' "$VX_LOG" | sort -u)" "token:$TOKEN"
check_eq "and the upstream's project and location" \
	"$(jq -r 'select(.op) | .target | capture("^/v1[a-z0-9]*/projects/(?<p>[^/]+)/locations/(?<l>[^/]+)/") | "\(.p) \(.l)"' "$VX_LOG" | sort -u)" \
	"kv-project us-east5"

# ---- x-goog-api-key, refusals -----------------------------------------------------

body='{"anthropic_version":"vertex-2023-10-16","max_tokens":20,"messages":[{"role":"user","content":"goog [[out=5]]"}]}'
P=/v1/projects/any/locations/us-east5/publishers/anthropic/models/$MODEL
from=$(lines)
code=$(kv_curl "$P:rawPredict" -o "$T/x.body" -w '%{http_code}' -H "x-goog-api-key: $KX" \
	-H 'Content-Type: application/json' -d "$body")
check_eq "x-goog-api-key on a Vertex path: 200" "$code" 200
kv_wait_for 30 settled_all
check_eq "... charged its usage at the catalogue's prices" "$(spent "$KX")" \
	"$(jq -c '.usage | {input: .input_tokens, output: .output_tokens, cacheRead: .cache_read_input_tokens, cacheWrite: .cache_creation_input_tokens}' "$T/x.body" | cost_of)"
before=$(spent "$KX")
code=$(kv_curl "/v1/projects/any/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict" \
	-o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KX" -H 'Content-Type: application/json' \
	-d '{"model":"claude-sonnet-4-5@20250929","messages":[{"role":"user","content":"count"}]}')
check_eq "count-tokens:rawPredict: 200, relayed free" "$code:$(spent "$KX")" "200:$before"

from=$(lines)
code=$(kv_curl "$P:rawPredict" -o "$T/r.body" -w '%{http_code}' -H "Authorization: Bearer not-a-kilovolt-key" \
	-H 'Content-Type: application/json' -d "$body")
check_eq "an unknown key on a vertex upstream (virtual keys): 401" "$code" 401
code=$(kv_curl "$P:rawPredict" -o "$T/r.body" -w '%{http_code}' -H "Authorization: Bearer $KP" \
	-H 'Content-Type: application/json' -d "$body")
check_eq "a key whose budget cannot cover the reservation: 402" "$code" 402
code=$(kv_curl "$P:predict" -o "$T/r.body" -w '%{http_code}' -H "Authorization: Bearer $KX" \
	-H 'Content-Type: application/json' -d "$body")
check_eq "a Vertex method kilovolt does not meter (:predict): 404" "$code" 404
code=$(kv_curl "$P:rawPredict" -o "$T/r.body" -w '%{http_code}' -H "Authorization: Bearer $KX" \
	-H 'Content-Type: application/json' -d '{"model":"claude-x","anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[]}')
check_eq "a model named in the body as well as the path: 400" "$code" 400
check_eq "... in Anthropic's error shape" "$(jq -r .type "$T/r.body")" error
code=$(kv_curl /v1/chat/completions -o "$T/r.body" -w '%{http_code}' -H "x-goog-api-key: $KX" \
	-H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[]}')
check_eq "x-goog-api-key alone off Google's paths (an OpenAI upstream's): 400, naming why" \
	"$code $(jq -r '.error.message | test("x-goog-api-key is Google")' "$T/r.body")" "400 true"
check_eq "none of the refused requests reached the stand-in" "$(lines)" "$from"
check_eq "the poor key spent nothing, holds nothing" "$(spent "$KP") $(reserved "$KP")" "0 0"

kv_finish
