#!/bin/bash
# t_frameworks: the Vercel AI SDK (ai, @ai-sdk/openai, @ai-sdk/anthropic)
# and LangChain JS (@langchain/openai, @langchain/anthropic), pinned in
# tests/sdk/package.json, through kilovolt with the README's base URLs:
# chat, streams (chat completions, Responses, Anthropic Messages) and
# embeddings. The ledger of each family's key must equal the usage the SDK
# itself reported (tokens in and out, and the cost those make), to the
# nano-dollar. LangChain's embeddings do not hand usage to the caller: that
# key is checked against the provider's figure in the mock's request log.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
[ -f "$KV_SDK/node_modules/ai/package.json" ] || skip "npm ci did not install the ai package"

kv_start_mock
kv_write_config </dev/null
kv_start
P=sk-fw-$$

cp "$top_srcdir/tests/sdk/frameworks_test.mjs" "$KV_SDK/" 2>/dev/null || true
kv_node_checks frameworks "$T/fw.out" node "$KV_SDK/frameworks_test.mjs" "$KV_URL" "$P"

# Prices of kv_write_config, nano-dollars per token (integers: no rounding).
price_in() { case $1 in gpt-4o-mini) echo 150 ;; claude-sonnet-4) echo 3000 ;; *) echo 1000 ;; esac; }
price_out() { case $1 in gpt-4o-mini) echo 600 ;; claude-sonnet-4) echo 15000 ;; *) echo 3000 ;; esac; }
for fam in ai-openai ai-anthropic lc-openai lc-anthropic; do
	in=0 out=0 cost=0 n=0
	while read -r _ f model i o; do
		[ "$f" = "$fam" ] || continue
		in=$((in + i)) out=$((out + o)) n=$((n + 1))
		cost=$((cost + i * $(price_in "$model") + o * $(price_out "$model")))
	done < <(grep '^usage ' "$T/fw.out")
	kv_ctl show "$(id_of "$P-$fam")" --json >"$T/$fam.json" 2>/dev/null
	got=$(jq -r '"\(.requests) \(.input_tokens) \(.output_tokens) \(.spent_nusd) \(.reserved_nusd)"' "$T/$fam.json" 2>/dev/null)
	check_eq "$fam: the ledger (requests, tokens in, out, spent, reserved) is the SDK's own usage" \
		"$got" "$n $in $out $cost 0"
done
# LangChain's Anthropic stream: its aggregated usage_metadata adds
# message_start's output_tokens (1, as Anthropic sends it) to the final
# cumulative count of message_delta, which is what Anthropic bills and what
# kilovolt charges: the ledger holds the SDK's figure less that 1.
read -r _ _ _ si so < <(grep '^usage lc-anthropic-stream ' "$T/fw.out")
got=$(kv_ctl show "$(id_of "$P-lc-anthropic-stream")" --json | jq -r '"\(.input_tokens) \(.output_tokens) \(.spent_nusd)"')
check_eq "lc-anthropic-stream: the ledger is the SDK's usage less message_start's output_tokens" \
	"$got" "${si:-?} $((${so:-1} - 1)) $((${si:-0} * 3000 + (${so:-1} - 1) * 15000))"
# LangChain embeddings: the mock's input count is body bytes / 4.
bytes=$(grep "auth=$(id_of "$P-lc-embed")" "$MOCK_LOG" | sed -n 's/.*body_bytes=\([0-9]*\).*/\1/p' | head -1)
got=$(kv_ctl show "$(id_of "$P-lc-embed")" --json | jq -r '"\(.input_tokens) \(.spent_nusd)"')
check_eq "lc-embed: the ledger is the provider's usage" "$got" "$((bytes / 4)) $((bytes / 4 * 1000))"
kv_finish
