#!/bin/bash
# t_azure: kilovolt in front of Azure OpenAI (issue 38), played by
# tests/sdk/azure_standin.mjs, with openai's AzureOpenAI client unchanged
# (its endpoint kilovolt's listener, a deployment, an api-version) and a
# kilovolt key as its credential, in Azure's api-key header and as a
# bearer token: chat, a streamed chat with include_usage, embeddings,
# Responses. For each: the key's spend in the ledger is the usage the
# client reports priced exactly at the catalogue's azure/ entry of the
# deployment's model, nothing left reserved; the stand-in got the
# upstream's api-key, never the kilovolt key. An answer naming a dearer
# model than its deployment's is charged at that model. Then: a /openai/v1/ path
# with the deployment in the body, priced at OpenAI's entry where the
# catalogue has no azure/ one; an unknown deployment refused 404 and an
# over-budget request 402, in Azure's error shape, nothing sent; api-key
# refused on a path of another upstream. Entra ID: the master's token,
# fetched, sent as a bearer token, refreshed, and a bad secret logged.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"

AZKEY=az-standin-resource-key-$$
KA=kv-azure-api-key-$$
KB=kv-azure-bearer-$$
KV1=kv-azure-v1-$$
KP=kv-azure-poor-$$
KD=kv-azure-dearer-$$
KM=kv-azure-misc-$$
TENANT=kv-tenant.onmicrosoft.com
CLIENT_ID=0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0
CLIENT_SECRET=kv-entra-secret-$$

# az_standin NAME [ARGS]: a stand-in on a free port; sets AZ_URL and AZ_LOG.
az_standin() {
	local name=$1
	shift
	AZ_LOG=$T/$name.jsonl
	: >"$AZ_LOG"
	node "$KV_SDK/azure_standin.mjs" --port-file "$T/$name.port" --log "$AZ_LOG" --api-key "$AZKEY" \
		--deployment chat4o=gpt-4o --deployment emb=text-embedding-3-small \
		--deployment latest=chatgpt-4o-latest --deployment old4o=gpt-4o-2024-05-13 --tenant "$TENANT" --client-id "$CLIENT_ID" \
		--client-secret "$CLIENT_SECRET" "$@" </dev/null >>"$T/$name.out" 2>>"$T/$name.err" &
	kv_track $!
	kv_wait_for 20 test -s "$T/$name.port" || { cat "$T/$name.err"; fail "start the Azure stand-in"; kv_finish; }
	AZ_URL=http://127.0.0.1:$(cat "$T/$name.port")
}
az_standin azure

kv_write_config <<EOF
[budget]
prices = $top_srcdir/data/prices-2026-07-24.json

[upstream azure]
provider = azure
url = $AZ_URL
api_key = env:KV_TEST_AZURE_KEY
deployments = chat4o:gpt-4o emb:text-embedding-3-small latest:chatgpt-4o-latest old4o:gpt-4o

[key api-key]
key = $KA

[key bearer]
key = $KB

[key v1]
key = $KV1

[key dearer]
key = $KD

[key poor]
key = $KP
budget = 0.00001

[key misc]
key = $KM
EOF
export KV_TEST_AZURE_KEY=$AZKEY
kv_start

lines() { wc -l <"$AZ_LOG"; }
after() { tail -n +$(($1 + 1)) "$AZ_LOG"; }
settled_all() { [ "$(kv_ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0 ]; }
# per_1m NAME FIELD: the catalogue's price of NAME, nano-dollars per 1M tokens.
per_1m() { kv_ctl prices --json "$1" | jq -r ".prices[0].prices.$2_per_1m_nusd"; }
declare -A P_IN P_OUT
for m in azure/gpt-4o azure/text-embedding-3-small chatgpt-4o-latest azure/gpt-4o-2024-05-13; do
	P_IN[$m]=$(per_1m "$m" input)
	P_OUT[$m]=$(per_1m "$m" output)
done
check "the catalogue prices azure/gpt-4o (\$${P_IN[azure/gpt-4o]} per 1M input nUSD)" \
	test "${P_IN[azure/gpt-4o]:-0}" -gt 0
# cost_of: the nano-dollars of the "usage {deployment, prompt, completion}"
# lines on stdin, each at its deployment's model's price.
cost_of() {
	jq -s --argjson pi "{\"chat4o\":${P_IN[azure/gpt-4o]},\"emb\":${P_IN[azure/text-embedding-3-small]},\"latest\":${P_IN[chatgpt-4o-latest]},\"old\":${P_IN[azure/gpt-4o-2024-05-13]}}" \
		--argjson po "{\"chat4o\":${P_OUT[azure/gpt-4o]},\"emb\":0,\"latest\":${P_OUT[chatgpt-4o-latest]},\"old\":${P_OUT[azure/gpt-4o-2024-05-13]}}" \
		'map((.prompt * $pi[.deployment] + .completion * $po[.deployment]) / 1000000) | add // 0'
}
reported() { sed -n 's/^usage //p' "$1"; }

# ---- the AzureOpenAI client, with the key in api-key and as a bearer token -----

for mode in api-key bearer; do
	key=$KA
	[ $mode = bearer ] && key=$KB
	from=$(lines)
	kv_node_checks "azure-$mode" "$T/$mode.out" node "$KV_SDK/azure_test.mjs" "$KV_URL" "$key" $mode chat4o emb
	kv_wait_for 30 settled_all
	check_eq "azure-$mode: the stand-in served each call the client reported" \
		"$(after "$from" | jq -c 'select(.status == 200) | .usage' | jq -s -c 'map([.prompt, .completion])')" \
		"$(reported "$T/$mode.out" | jq -s -c 'map([.prompt, .completion])')"
	check_eq "azure-$mode: the ledger's spend is the reported usage at the catalogue's azure/ prices" \
		"$(spent "$key")" "$(reported "$T/$mode.out" | cost_of)"
	check_eq "azure-$mode: nothing left reserved" "$(reserved "$key")" 0
	check_eq "azure-$mode: every request reached Azure with the resource's api-key, no kilovolt key" \
		"$(after "$from" | jq -r '"\(.headers["api-key"]) \(.headers.authorization)"' | sort -u)" "$AZKEY null"
	check_eq "azure-$mode: paths as Azure's (the deployment's, and /openai/responses), api-version kept" \
		"$(after "$from" | jq -r '.target' | sed 's/?api-version=2024-10-21$//' | sort -u | tr '\n' ' ')" \
		"/openai/deployments/chat4o/chat/completions /openai/deployments/emb/embeddings /openai/responses "
done
check "the stream's usage came from the include_usage chunk (a usage line per call: 4)" \
	test "$(reported "$T/api-key.out" | wc -l)" = 4

# ---- the v1 path: the deployment in the body; OpenAI's price without azure/ ----

from=$(lines)
code=$(kv_curl /openai/v1/chat/completions -o "$T/v1.json" -w '%{http_code}' -H "api-key: $KV1" "${J[@]}" \
	-d '{"model":"latest","max_tokens":3,"messages":[{"role":"user","content":"v1 path"}]}')
check_eq "v1: /openai/v1/chat/completions with the deployment as model: 200" "$code" 200
kv_wait_for 30 settled "$KV1"
check_eq "v1: chatgpt-4o-latest (no azure/ entry) at OpenAI's catalogue price" "$(spent "$KV1")" \
	"$(jq -c '{deployment: "latest", prompt: .usage.prompt_tokens, completion: .usage.completion_tokens}' "$T/v1.json" | cost_of)"
check_eq "v1: the body went as sent (model = the deployment) to /openai/v1/" \
	"$(after "$from" | jq -r '"\(.target) \(.deployment) \(.model)"')" "/openai/v1/chat/completions latest chatgpt-4o-latest"

# ---- the answer's model, checked as on OpenAI: the dearer is charged ------------

code=$(kv_curl '/openai/deployments/old4o/chat/completions?api-version=2024-10-21' -o "$T/old.json" \
	-w '%{http_code}' -H "api-key: $KD" "${J[@]}" -d '{"max_tokens":3,"messages":[{"role":"user","content":"older"}]}')
check_eq "a deployment said to run gpt-4o answering as gpt-4o-2024-05-13: 200" "$code" 200
check_eq "... its answer names the model it ran" "$(jq -r .model "$T/old.json")" gpt-4o-2024-05-13
kv_wait_for 30 settled "$KD"
check "... which is dearer than gpt-4o" test "${P_IN[azure/gpt-4o-2024-05-13]}" -gt "${P_IN[azure/gpt-4o]}"
check_eq "... and charged at azure/gpt-4o-2024-05-13's price" "$(spent "$KD")" \
	"$(jq -c '{deployment: "old", prompt: .usage.prompt_tokens, completion: .usage.completion_tokens}' "$T/old.json" | cost_of)"

# ---- refusals: nothing sent ----------------------------------------------------

from=$(lines)
code=$(kv_curl '/openai/deployments/nope/chat/completions?api-version=2024-10-21' -o "$T/nope.json" \
	-w '%{http_code}' -H "api-key: $KM" "${J[@]}" -d '{"messages":[{"role":"user","content":"x"}]}')
check_eq "an unknown deployment: 404" "$code" 404
check "... in Azure's error shape ({error: {code, message}} naming the deployment)" \
	jq -e '.error.code and (.error.message | test("DeploymentNotFound.*nope"))' "$T/nope.json"
code=$(kv_curl '/openai/deployments/chat4o/chat/completions?api-version=2024-10-21' -o "$T/poor.json" \
	-w '%{http_code}' -H "api-key: $KP" "${J[@]}" -d '{"max_tokens":4000,"messages":[{"role":"user","content":"x"}]}')
check_eq "over budget: 402" "$code" 402
check "... in Azure's error shape" jq -e '.error.code and .error.message' "$T/poor.json"
code=$(kv_curl /v1/chat/completions -o "$T/nonaz.json" -w '%{http_code}' -H "api-key: $KM" "${J[@]}" \
	-d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}')
check_eq "api-key on a path of a non-azure upstream: 400" "$code" 400
check "... saying where api-key is taken" jq -e '.error.message | test("api-key")' "$T/nonaz.json"
check_eq "none of the refused requests reached the stand-in" "$(after "$from" | wc -l)" 0
check_eq "the refused keys were charged nothing" "$(spent "$KP")/$(reserved "$KP")" "0/0"

# ---- Entra ID: the master's token, refreshed; a revoked secret logged -----------

kv_stop
# tokens live 8 s: refreshed after 5 (cred_refresh.c's soonest); the
# third grant is refused, as Entra refuses a revoked secret
az_standin entra --token-ttl 8 --fail-after 2
tokens() { jq -r 'select(.client_id and .issued) | .token' "$AZ_LOG"; }
entra_config() {	# entra_config SECRET_ENV
	kv_write_config <<EOF
[budget]
prices = $top_srcdir/data/prices-2026-07-24.json

[upstream azure]
provider = azure
url = $AZ_URL
tenant = $TENANT
client_id = $CLIENT_ID
client_secret = env:$1
entra_url = $AZ_URL/$TENANT/oauth2/v2.0/token
deployments = chat4o:gpt-4o

[key entra]
key = $KM
EOF
}
export KV_TEST_ENTRA_SECRET=$CLIENT_SECRET KV_TEST_ENTRA_BAD=not-the-secret
entra_config KV_TEST_ENTRA_BAD
if timeout 60 "$KV_DAEMON_BIN" -c "$T/kilovolt.ini" >"$T/bad-secret.log" 2>&1; then
	fail "kilovoltd with a wrong client_secret refuses to start"
else
	pass "kilovoltd with a wrong client_secret refuses to start"
fi
check "... logging KV0486 with Entra's own reason (AADSTS7000215)" \
	grep -q 'KV0486.*AADSTS7000215' "$T/bad-secret.log"
check_eq "... and its grant reached Entra's stand-in, refused" \
	"$(jq -r 'select(.client_id) | "\(.client_id) \(.issued)"' "$AZ_LOG")" "$CLIENT_ID false"
: >"$AZ_LOG"
entra_config KV_TEST_ENTRA_SECRET
kv_start
entra_chat() {	# entra_chat OUT: a chat on the Entra upstream; its status
	kv_curl '/openai/deployments/chat4o/chat/completions?api-version=2024-10-21' -o "$1" \
		-w '%{http_code}' -H "api-key: $KM" "${J[@]}" \
		-d '{"max_tokens":3,"messages":[{"role":"user","content":"entra"}]}'
}
check_eq "Entra: a token was fetched at start" "$(tokens | wc -l)" 1
check_eq "Entra: a chat with a kilovolt key: 200" "$(entra_chat "$T/e1.json")" 200
check_eq "... sent upstream with the master's token as a bearer, no api-key" \
	"$(jq -r 'select(.deployment) | "\(.headers.authorization) \(.headers["api-key"])"' "$AZ_LOG" | tail -n 1)" \
	"Bearer $(tokens | head -n 1) null"
two_tokens() { [ "$(tokens | wc -l)" = 2 ]; }
check "Entra: the token was refreshed before it expired" kv_wait_for 30 two_tokens
check_eq "... and the next chat carries the new one: 200" "$(entra_chat "$T/e2.json")" 200
check_eq "... its bearer the second token" \
	"$(jq -r 'select(.deployment) | .headers.authorization' "$AZ_LOG" | tail -n 1)" "Bearer $(tokens | tail -n 1)"
check "Entra: a refused refresh (the secret revoked) is logged with KV0487 and Entra's reason" \
	kv_wait_for 30 grep -q 'KV0487.*AADSTS7000215' "$KV_LOG"
kv_wait_for 30 settled "$KM"
check_eq "Entra: the chats' spend is their usage at azure/gpt-4o's price" "$(spent "$KM")" \
	"$(jq -c '{deployment: "chat4o", prompt: .usage.prompt_tokens, completion: .usage.completion_tokens}' \
		"$T/e1.json" "$T/e2.json" | cost_of)"

kv_finish
