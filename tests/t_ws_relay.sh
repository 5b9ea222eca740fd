#!/bin/bash
# t_ws_relay: kilovolt in front of the OpenAI WebSocket stand-in
# (tests/sdk/ws_standin.mjs): the upgrade relayed (the key swapped for the
# upstream's, OpenAI-Beta passed, permessage-deflate declined), frames both
# ways, each turn reserved before its response.create goes and settled to
# the nano-dollar by its response.completed; a turn over budget answered
# in-band with an error event, never reaching the upstream, the socket
# left open; the subprotocol key form; Realtime's response.done and its
# session.update bound.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
WSS_KEY=sk-upstream-ws
kv_start_ws_standin
KEY=sk-kv-ws-client
POOR=sk-kv-ws-poor
CUT=sk-kv-ws-cut
KV_UPSTREAM_URL=$WSS_URL kv_write_config <<EOF
[upstream openai]
api_key = $WSS_KEY
paths = /v1/responses /v1/realtime /v1/models

[key client]
key = $KEY
budget = 5.00

[key cut]
key = $CUT
budget = 5.00

[key poor]
key = $POOR
budget = 0.01

[price gpt-5-codex]
input = 1.25
output = 10.00
cached_input = 0.125
context_window = 4000
max_output = 1000

[price gpt-realtime]
input = 4.00
output = 16.00
cached_input = 0.40
audio_input = 32.00
audio_output = 64.00
context_window = 2000
max_output = 500
EOF
kv_start
KVWS=ws://127.0.0.1:$KV_PORT

spent() { kv_ctl keys --json | jq -r --arg k "$1" '.keys[] | select(.label == $k) | "\(.spent_nusd) \(.reserved_nusd)"'; }
lines() { wc -l <"$WSS_LOG"; }
turns() { tail -n +$(($1 + 1)) "$WSS_LOG" | jq -c "select(.kind == \"turn\" ${2:-})"; }
# The nano-dollars of the Responses usages on stdin at gpt-5-codex's
# prices ($ per 1M tokens is nano-dollars per token x 1000): uncached
# input x 1,250, cached x 125, output x 10,000.
cost_codex() {
	jq -s '[.[] | .usage | (.input_tokens - .input_tokens_details.cached_tokens) * 1250
		+ .input_tokens_details.cached_tokens * 125 + .output_tokens * 10000] | add // 0'
}

# ---- the ws package's cases through kilovolt -------------------------------------
from=$(lines)
kv_node_checks hostile "$T/hostile.out" node "$KV_SDK/ws_hostile.mjs" "$KVWS" "$KEY" gpt-5-codex \
	fragmented chained
check_eq "the upstream saw its own key and the beta header, and no extension offered" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.headers.authorization) \(.headers["openai-beta"]) \(.headers["sec-websocket-extensions"])"' | sort -u)" \
	"Bearer $WSS_KEY responses_websockets=2026-02-06 null"
kv_wait_for 10 eval 'test "$(spent client | cut -d" " -f2)" = 0'
check_eq "the ledger holds every completed turn's usage, to the nano-dollar, nothing reserved" \
	"$(spent client)" "$(turns "$from" 'and .usage_sent' | cost_codex) 0"

# ---- broken sockets: a masked server frame, the provider or the client gone ------
from=$(lines)
kv_node_checks broken "$T/broken.out" node "$KV_SDK/ws_hostile.mjs" "$KVWS" "$CUT" gpt-5-codex \
	masked cut drop
kv_wait_for 10 eval 'test "$(spent cut | cut -d" " -f2)" = 0'
check "the cut turns are charged (estimates), nothing stays reserved" \
	test "$(spent cut | cut -d" " -f1)" -gt 0
check "a masked server frame is a protocol error kilovolt logs" grep -q KV0562 "$KV_LOG"

# ---- a turn over budget: an in-band error, never sent, the socket open ------------
from=$(lines)
timeout 60 node "$KV_SDK/ws_budget.mjs" "$KVWS" "$POOR" >"$T/poor.out" 2>"$T/poor.err"
check "the 101 to the client carries no extension" grep -qx 'extensions \[\]' "$T/poor.out"
check "the first turn completes" grep -qx 'event response.completed' "$T/poor.out"
check_eq "the next two turns are refused in-band with error events" \
	"$(grep -c '^event error insufficient_quota$' "$T/poor.out")" 2
check "the socket stays open after the refusals" grep -qx 'open true' "$T/poor.out"
check_eq "the refused turns never reached the upstream" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "event") | .type' | tr '\n' ' ')" \
	"response.create "
kv_wait_for 10 eval 'test "$(spent poor | cut -d" " -f2)" = 0'
check_eq "the poor key is charged its one turn exactly" \
	"$(spent poor)" "$(turns "$from" 'and .usage_sent' | cost_codex) 0"

# ---- Realtime: @openai/agents-realtime's five turns, each response.done settled ----
before=$(spent client | cut -d" " -f1)
from=$(lines)
kv_node_checks realtime "$T/rt.out" node "$KV_SDK/realtime_client.mjs" "$KVWS" "$KEY" gpt-realtime
check_eq "realtime: the upstream saw the model in the URL and its own key" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.path)\(.query) \(.status) \(.headers.authorization)"')" \
	"/v1/realtime?model=gpt-realtime 101 Bearer $WSS_KEY"
# gpt-realtime's prices: text input 4,000 nano-dollars a token, audio
# input 32,000, cached 400, text output 16,000, audio output 64,000.
rt_cost=$(sed -n 's/^usage //p' "$T/rt.out" | jq -s '[.[] |
	(.input_token_details.audio_tokens - (.input_token_details.cached_tokens_details.audio_tokens // 0)) as $audio |
	(.input_tokens - .input_token_details.cached_tokens - $audio) * 4000 + $audio * 32000
	+ .input_token_details.cached_tokens * 400
	+ (.output_tokens - .output_token_details.audio_tokens) * 16000
	+ .output_token_details.audio_tokens * 64000] | add')
kv_wait_for 10 eval 'test "$(spent client | cut -d" " -f2)" = 0'
check_eq "realtime: the ledger grew by each response.done's usage, audio and cache priced apart" \
	"$(spent client)" "$((before + rt_cost)) 0"

kv_finish
