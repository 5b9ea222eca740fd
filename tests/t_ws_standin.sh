#!/bin/bash
# t_ws_standin: the OpenAI WebSocket stand-in (tests/sdk/ws_standin.mjs) and
# the real clients directly against it, no kilovolt: this proves the
# stand-in speaks what Codex and @openai/agents-realtime send and expect
# before kilovolt's WebSocket tests rely on it. Codex (codex exec, a
# Responses provider with supports_websockets) runs a command and answers
# over one socket, no HTTP; the usage it reports is the stand-in's. The
# Realtime client's five turns report the usage the stand-in logged. The
# `ws` package's awkward cases behave as OpenAI's server does.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
kv_start_ws_standin --max-payload 1048576

lines() { wc -l <"$WSS_LOG"; }
# turns FROM [JQ-COND]: the turns the stand-in logged after line FROM.
turns() { tail -n +$(($1 + 1)) "$WSS_LOG" | jq -c "select(.kind == \"turn\" ${2:-})"; }

# ---- Codex over the Responses WebSocket -----------------------------------------
kv_codex_home "$T/codex-home" "$WSS_URL/v1"
from=$(lines)
KV_CODEX_KEY=$WSS_KEY kv_codex "$T/codex-home" "$T/codex.out" 'Check the tree. [[run=echo kv-ws-$((6 * 7))]]'
check "codex exec exits 0" test $? = 0
check "codex ran the command the stand-in asked for" \
	grep -q '"type":"command_execution".*kv-ws-42.*"exit_code":0' "$T/codex.out"
check "codex answered" grep -q '"type":"agent_message","text":"w0 ' "$T/codex.out"
check_eq "codex opened one socket on /v1/responses with its key and the beta header" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.path) \(.status) \(.headers.authorization) \(.headers["openai-beta"])"')" \
	"/v1/responses 101 Bearer $WSS_KEY responses_websockets=2026-02-06"
check_eq "codex offered permessage-deflate and the stand-in took it, as OpenAI's server may" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.headers["sec-websocket-extensions"]) \(.extensions)"')" \
	"permessage-deflate; client_max_window_bits permessage-deflate"
check_eq "codex's turns: a warm-up (generate false), a tool call, an answer; all on the socket, none over HTTP" \
	"$(turns "$from" | jq -r '"\(.transport) \(.generate) \(.output | join(","))"' | tr '\n' ' ')" \
	"ws false  ws true function_call ws true message "
check "codex chained each turn to the previous one by previous_response_id" test \
	"$(turns "$from" | jq -s '[range(1; length) as $i | .[$i].previous_response_id == .[$i - 1].response_id] | all')" = true
check "codex sent no HTTP request" test -z "$(tail -n +$((from + 1)) "$WSS_LOG" | jq -c 'select(.kind == "http")')"
# Codex sums its generating turns' usage in turn.completed.
check_eq "the usage codex reports is the stand-in's for its generating turns" \
	"$(jq -c 'select(.type == "turn.completed") | .usage | [.input_tokens, .cached_input_tokens, .output_tokens, .reasoning_output_tokens]' "$T/codex.out")" \
	"$(turns "$from" 'and .generate' | jq -s -c '[map(.usage.input_tokens), map(.usage.input_tokens_details.cached_tokens),
		map(.usage.output_tokens), map(.usage.output_tokens_details.reasoning_tokens)] | map(add)')"

# ---- @openai/agents-realtime ---------------------------------------------------
from=$(lines)
kv_node_checks realtime "$T/rt.out" node "$KV_SDK/realtime_client.mjs" "$WSS_WS" "$WSS_KEY" gpt-realtime
check_eq "realtime: the usage of each response.done is what the stand-in logged" \
	"$(sed -n 's/^usage //p' "$T/rt.out" | jq -c . | tr '\n' ' ')" \
	"$(turns "$from" 'and .usage_sent' | jq -c .usage | tr '\n' ' ')"
check_eq "realtime: one socket with the key as a bearer header" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.path)\(.query) \(.status) \(.headers.authorization)"')" \
	"/v1/realtime?model=gpt-realtime 101 Bearer $WSS_KEY"

# ---- the awkward cases ------------------------------------------------------------
from=$(lines)
kv_node_checks hostile "$T/hostile.out" node "$KV_SDK/ws_hostile.mjs" "$WSS_WS" "$WSS_KEY" gpt-5-codex \
	auth fragmented chained oversized:1100000 masked cut drop subprotocol
check_eq "hostile: the browser form authenticated by its subprotocol" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade" and .path == "/v1/realtime") | "\(.auth) \(.protocol)"')" \
	"subprotocol realtime"
check "hostile: the oversized frame never became an event" test \
	-z "$(tail -n +$((from + 1)) "$WSS_LOG" | jq -c 'select(.kind == "event" and .bytes > 1000000)')"
kv_wait_for 10 eval 'test "$(turns '"$from"' "and .usage_sent == false" | wc -l)" = 3'
check_eq "hostile: the turns of the masked frame and the cut stopped there, the dropped client's was dropped, no usage sent" \
	"$(turns "$from" 'and .usage_sent == false' | jq -r .status | tr '\n' ' ')" "stopped stopped dropped "
check_eq "hostile: the turns completed are the usage the client printed" \
	"$(sed -n 's/^usage //p' "$T/hostile.out" | jq -c . | tr '\n' ' ')" \
	"$(turns "$from" 'and .usage_sent' | jq -c .usage | tr '\n' ' ')"

kv_finish
