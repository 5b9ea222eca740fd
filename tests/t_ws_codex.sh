#!/bin/bash
# t_ws_codex: Codex (@openai/codex, codex exec) through kilovolt on the
# Responses API's WebSocket mode, its default: a model provider whose
# base_url is kilovolt's /v1 with supports_websockets. It completes a task
# (a warm-up, a tool call it runs, an answer, chained by
# previous_response_id) over one socket without falling back to HTTP; the
# stand-in (tests/sdk/ws_standin.mjs) saw kilovolt's credential, not the
# client's, and the beta header relayed; the ledger's spend is the usage
# the stand-in sent for every turn (the warm-up's included), priced from
# the catalogue, each turn rounded up on its own; nothing stays reserved.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "$top_srcdir/tests/ws_lib.sh"

KC=sk-kv-codex-$$
ws_setup <<EOF
[key codex]
key = $KC
budget = 10.00
EOF
ws_prices gpt-5-codex || { fail "kvctl prices gpt-5-codex"; kv_finish; }

kv_codex_home "$T/codex-home" "$KV_URL/v1"
for run in 1 2; do
	from=$(ws_lines)
	before=$(spent "$KC")
	before=${before:-0}
	KV_CODEX_KEY=$KC kv_codex "$T/codex-home" "$T/codex$run.out" "Task $run. [[run=echo kv-ws-$run$((6 * 7))]]"
	check "run $run: codex exec exits 0" test $? = 0
	check "run $run: codex ran the command and answered" eval \
		"grep -q '\"type\":\"command_execution\".*kv-ws-${run}42.*\"exit_code\":0' '$T/codex$run.out' &&
		grep -q '\"type\":\"agent_message\",\"text\":\"w0 ' '$T/codex$run.out'"
	check "run $run: codex never reconnected" eval "! grep -q -i reconnecting '$T/codex$run.out' '$T/codex$run.out.err'"
	check_eq "run $run: one upgrade reached the stand-in, with kilovolt's credential and the beta header" \
		"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.path) \(.status) \(.headers.authorization) \(.headers["openai-beta"])"')" \
		"/v1/responses 101 Bearer $WSS_KEY responses_websockets=2026-02-06"
	check_eq "run $run: permessage-deflate, which codex offers, declined: none offered upstream, none taken" \
		"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.headers["sec-websocket-extensions"] // "none") \(.extensions // "")"')" \
		"none "
	check_eq "run $run: its turns came over the socket (warm-up, tool call, answer), none over HTTP" \
		"$(turns "$from" | jq -r '"\(.transport) \(.generate) \(.output | join(","))"' | tr '\n' ' ')|$(tail -n +$((from + 1)) "$WSS_LOG" | jq -c 'select(.kind == "http")')" \
		"ws false  ws true function_call ws true message |"
	check "run $run: the turns are chained by previous_response_id" test \
		"$(turns "$from" | jq -s '[range(1; length) as $i | .[$i].previous_response_id == .[$i - 1].response_id] | all')" = true
	check_eq "run $run: the usage codex reports is the stand-in's for its generating turns" \
		"$(jq -c 'select(.type == "turn.completed") | .usage | [.input_tokens, .cached_input_tokens, .output_tokens, .reasoning_output_tokens]' "$T/codex$run.out")" \
		"$(turns "$from" 'and .generate' | jq -s -c '[map(.usage.input_tokens), map(.usage.input_tokens_details.cached_tokens),
			map(.usage.output_tokens), map(.usage.output_tokens_details.reasoning_tokens)] | map(add)')"
	kv_wait_for 30 ws_settled "$KC"
	check_eq "run $run: the ledger charged the stand-in's usage of every turn, priced, nothing left reserved" \
		"$(($(spent "$KC") - before)) $(reserved "$KC")" \
		"$(turns "$from" 'and .usage_sent' | jq -c .usage | cost_responses) 0"
done
check "the stand-in sent usage for all six turns" test "$(turns 0 'and .usage_sent' | wc -l)" = 6

kv_finish
