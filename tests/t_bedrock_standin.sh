#!/bin/bash
# t_bedrock_standin: the Bedrock stand-in (tests/sdk/bedrock_standin.mjs)
# and the real clients directly against it, no kilovolt: this proves the
# stand-in speaks Bedrock's wire before kilovolt's tests rely on it. First
# its own checks (tests/sdk/standin_check.mjs: AWS's signer's signatures
# accepted, every tampering refused with Bedrock's error, the usage rules,
# the magic prompts, IMDSv2 and STS). Then the AWS SDK's Bedrock runtime
# client (bearer token and SigV4; a wrong secret refused), Anthropic's
# Bedrock SDK (API key and SigV4; a wrong key refused) and Claude Code in
# Bedrock mode; each client's usage must be what the stand-in logged for
# the requests it served, call by call.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
kv_start_standin

lines() { wc -l <"$STANDIN_LOG"; }
# served FROM [JQ-FILTER]: the usage the stand-in logged after line FROM for
# the model calls it served (status 200), one JSON line each.
served() {
	tail -n +$(($1 + 1)) "$STANDIN_LOG" |
		jq -c "select(.status == 200 and .usage != null ${2:-}) | .usage | {input, output, cacheRead, cacheWrite}"
}
# reported OUT: the usage lines a client script printed.
reported() { sed -n 's/^usage //p' "$1" | jq -c '{input, output, cacheRead, cacheWrite}'; }
# client NAME SCRIPT ARGS...: run a client script against the stand-in; its
# usage, call by call, must be what the stand-in logged.
client() {
	local name=$1 script=$2 from
	shift 2
	from=$(lines)
	kv_node_checks "$name" "$T/$name.out" node "$KV_SDK/$script" "$STANDIN_URL" "$@"
	check_eq "$name: the usage the client saw is the stand-in's, call by call" \
		"$(reported "$T/$name.out" | tr '\n' ' ')" "$(served "$from" | tr '\n' ' ')"
}

kv_node_checks standin "$T/check.out" node "$KV_SDK/standin_check.mjs" "$STANDIN_URL" \
	"$STANDIN_API_KEY" "$STANDIN_AK" "$STANDIN_SK"
check_eq "the log names the credentials IMDS and STS vended, and the requests signed with them" \
	"$(jq -r 'select(.vended) | .vended.via' "$STANDIN_LOG" | tr '\n' ' ')|$(jq -r 'select(.vended) | .vended.accessKeyId' "$STANDIN_LOG" |
		while read -r ak; do jq -r --arg a "sigv4:$ak" 'select(.auth == $a) | .status' "$STANDIN_LOG"; done | tr '\n' ' ')" \
	"imds sts |200 200 "

client aws-bearer aws_bedrock_test.mjs "$STANDIN_API_KEY"
client aws-env-token aws_bedrock_test.mjs "$STANDIN_API_KEY" --env-token
client aws-sigv4 aws_bedrock_test.mjs x --sigv4 "$STANDIN_AK" "$STANDIN_SK"
from=$(lines)
kv_node_checks aws-bad-secret "$T/aws-bad.out" node "$KV_SDK/aws_bedrock_test.mjs" "$STANDIN_URL" x \
	--sigv4 "$STANDIN_AK" "${STANDIN_SK}x" --refused
check_eq "aws-bad-secret: every call refused as InvalidSignatureException" \
	"$(tail -n +$((from + 1)) "$STANDIN_LOG" | jq -r .auth | sort -u)" "refused:InvalidSignatureException"

client bedrock-sdk-key anthropic_bedrock_test.mjs "$STANDIN_API_KEY"
client bedrock-sdk-sigv4 anthropic_bedrock_test.mjs x --sigv4 "$STANDIN_AK" "$STANDIN_SK"
kv_node_checks bedrock-sdk-bad-key "$T/bsdk-bad.out" node "$KV_SDK/anthropic_bedrock_test.mjs" \
	"$STANDIN_URL" "not-$STANDIN_API_KEY" --refused

# Claude Code: its probes (max_tokens 1 on /invoke) are not in the usage it
# reports; its answer streams from /invoke-with-response-stream.
from=$(lines)
kv_node_checks claude-code "$T/cc.out" node "$KV_SDK/claude_code_test.mjs" "$STANDIN_URL" \
	"$STANDIN_API_KEY" "$T/cc-home"
sum='[.[] | fromjson] | "\(map(.input) | add) \(map(.output) | add) \(map(.cacheRead) | add) \(map(.cacheWrite) | add)"'
check_eq "claude-code: the usage it reports is the stand-in's for its streamed answer" \
	"$(reported "$T/cc.out" | jq -Rs "split(\"\n\") | map(select(length > 0)) | $sum" -r)" \
	"$(served "$from" 'and .op == "invoke-with-response-stream"' | jq -Rs "split(\"\n\") | map(select(length > 0)) | $sum" -r)"
check "claude-code: it listed the system-defined inference profiles first" \
	test "$(tail -n +$((from + 1)) "$STANDIN_LOG" | head -n 1 | jq -r '"\(.method) \(.target) \(.status)"')" \
	= "GET /inference-profiles?type=SYSTEM_DEFINED 200"
check_eq "claude-code: it sent the API key as a bearer token, every request" \
	"$(tail -n +$((from + 1)) "$STANDIN_LOG" | jq -r '.headers.authorization' | sort -u)" "Bearer $STANDIN_API_KEY"

kv_finish
