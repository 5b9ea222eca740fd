#!/bin/bash
# t_sdk: the official Node SDKs (openai, @anthropic-ai/sdk; tests/sdk/*.mjs)
# against the mock THROUGH kilovoltd: chat completions (JSON, stream without
# usage -- the usage chunk kilovolt asks for never reaches the client -- and
# stream with include_usage), embeddings, the Responses API (JSON and
# stream), models, Anthropic messages (JSON and stream, x-api-key and
# Bearer). Then the ledger must hold exactly the tokens and the cost the
# mock reported for every request, recomputed here from the mock's request
# log (its counts are deterministic: input = request body bytes / 4 as the
# mock received them, output = x-mock-tokens, 5 by default; see
# mock_upstream.c).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"

OAI_KEY=sk-sdk-openai-$$
ANT_KEY=sk-sdk-anthropic-$$

# sdk NAME SCRIPT KEY: run one SDK script through the gateway (see
# kv_node_checks).
sdk() { KV_EXPECT_GATEWAY=1 kv_node_checks "$1" "$T/$1.out" node "$KV_SDK/$2" "$KV_URL" "$3"; }

kv_start_mock
kv_write_config </dev/null
kv_start

sdk openai openai_test.mjs "$OAI_KEY"
sdk anthropic anthropic_test.mjs "$ANT_KEY"

# ---- what reached the mock -------------------------------------------------
OAI=$(id_of "$OAI_KEY")
ANT=$(id_of "$ANT_KEY")
grep " auth=$OAI " "$MOCK_LOG" >"$T/oai.log"
grep " auth=$ANT " "$MOCK_LOG" >"$T/ant.log"
field() { sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p"; }
streams_without_usage=$(grep -c '^POST /v1/chat/completions .*include_usage=1' "$T/oai.log")
check "kilovolt asked the upstream for usage on the chat streams (include_usage=1 twice)" \
	test "$streams_without_usage" = 2
check_eq "the chat stream without usage: the SDK saw no usage chunk" \
	"$(grep -c '^ok - chat stream: no chunk carries usage' "$T/openai.out")" 1

# expected LOGFILE: "requests input output cost_nusd" the mock reported,
# priced as kilovolt's config prices them (USD per 1M tokens = nusd per
# token x 1000): gpt-4o-mini* 0.15/0.60, claude-sonnet-4* 3.00/15.00, else
# [price default] 1.00/3.00. Embeddings have no output. /v1/models has no
# usage: the ledger settles it as a bare release (shm/ledger.h), so the key's
# request count leaves it out; "requests" counts the other requests.
expected() {
	awk '
	{
		path = $2; sub(/\?.*/, "", path)
		bytes = $0; sub(/.* body_bytes=/, "", bytes); sub(/ .*/, "", bytes)
		model = $0; sub(/.* model=/, "", model); sub(/ .*/, "", model)
		if (path == "/v1/models") next
		n++
		in_ = int(bytes / 4)
		out = path == "/v1/embeddings" ? 0 : 5
		if (model ~ /^gpt-4o-mini/) { pi = 150; po = 600 }
		else if (model ~ /^claude-sonnet-4/) { pi = 3000; po = 15000 }
		else { pi = 1000; po = 3000 }
		tin += in_; tout += out; cost += in_ * pi + out * po
	}
	END { printf "%d %d %d %d\n", n, tin, tout, cost }' "$1"
}
ledger() {
	kv_ctl keys --json | jq -r --arg id "$1" \
		'.keys[] | select(.id == $id) | "\(.requests) \(.input_tokens) \(.output_tokens) \(.spent_nusd)"'
}
read -r o_n o_in o_out o_cost < <(expected "$T/oai.log")
read -r a_n a_in a_out a_cost < <(expected "$T/ant.log")
echo "# mock: openai $o_n requests, $o_in in, $o_out out, $o_cost nusd; anthropic $a_n requests, $a_in in, $a_out out, $a_cost nusd"
check_eq "the openai SDK's requests reached the mock (chat x3, embeddings, responses x2, models)" \
	"$o_n $(grep -c '^GET /v1/models' "$T/oai.log")" "6 1"
check_eq "the anthropic SDK's requests reached the mock (create x2, stream x2)" "$a_n" 4

# The ledger settles after the response ends; give the last one a moment.
settled() { [ "$(kv_ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0 ]; }
kv_wait_for 10 settled
read -r l_n l_in l_out l_cost < <(ledger "$OAI")
check_eq "openai key: the ledger's input tokens are the mock's" "$l_in" "$o_in"
check_eq "openai key: the ledger's output tokens are the mock's" "$l_out" "$o_out"
check_eq "openai key: the ledger's spend is the mock's usage at the configured prices" \
	"$l_cost" "$o_cost"
check_eq "openai key: one request counted per priced request" "$l_n" "$o_n"
read -r l_n l_in l_out l_cost < <(ledger "$ANT")
check_eq "anthropic key: the ledger's input tokens are the mock's" "$l_in" "$a_in"
check_eq "anthropic key: the ledger's output tokens are the mock's" "$l_out" "$a_out"
check_eq "anthropic key: the ledger's spend is the mock's usage at the configured prices" \
	"$l_cost" "$a_cost"
check_eq "anthropic key: one request counted per priced request" "$l_n" "$a_n"
check_eq "no estimated charge (every response carried its usage)" \
	"$(kv_ctl status --json | jq .estimated_requests_total)" 0

kv_finish
