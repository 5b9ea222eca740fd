# ws_lib.sh: what the WebSocket tests through kilovolt share (sourced after
# tests/lib.sh by t_ws_codex.sh, t_ws_realtime.sh and t_ws_hostile.sh):
#
#	ws_setup [INI]   the SDKs, the WebSocket stand-in and kilovoltd in front of
#	                 it (the catalogue's prices, /v1/responses and /v1/realtime
#	                 relayed, the stand-in's key swapped in), INI overlaid (on
#	                 stdin); sets KV_WS (ws://127.0.0.1:KV_PORT)
#	ws_prices MODEL  P_IN P_OUT P_CR P_AIN P_AOUT: MODEL's prices per 1M
#	                 tokens in nano-dollars, from kvctl prices --json
#	turns FROM [JQ]  the stand-in's turn lines after line FROM
#	ws_lines         the stand-in log's line count
#	cost_responses, cost_realtime   the nano-dollars of usage lines on stdin
#	ws_settled KEY   KEY's account holds no reservation

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"

ws_setup() {
	kv_start_ws_standin "$@"
	# kilovoltd's credential for the stand-in; kvctl reads the config too
	export KV_TEST_OPENAI_KEY=$WSS_KEY
	{
		cat <<EOF
[budget]
prices = $top_srcdir/data/prices-2026-07-24.json
unknown_keys = deny

[upstream openai]
paths = /v1/responses /v1/realtime /v1/models
api_key = env:KV_TEST_OPENAI_KEY
EOF
		cat
	} >"$T/ws-overlay.ini"
	KV_UPSTREAM_URL=$WSS_URL kv_write_config <"$T/ws-overlay.ini"
	${WS_START:-kv_start}	# kv_start_in_cg after kv_memcg
	KV_WS=ws://127.0.0.1:$KV_PORT
}

ws_prices() {
	local p
	p=$(kv_ctl prices --json "$1" | jq -r '.prices[0].prices |
		"\(.input_per_1m_nusd) \(.output_per_1m_nusd) \(.cached_input_per_1m_nusd // .input_per_1m_nusd) \(.audio_input_per_1m_nusd // .input_per_1m_nusd) \(.audio_output_per_1m_nusd // .output_per_1m_nusd)"')
	read -r P_IN P_OUT P_CR P_AIN P_AOUT <<<"$p"
	[ -n "$P_AOUT" ] && [ "$P_IN" != null ]
}

ws_lines() { wc -l <"$WSS_LOG"; }
turns() { tail -n +$(($1 + 1)) "$WSS_LOG" | jq -c "select(.kind == \"turn\" ${2:-})"; }

# A turn is a request: each is charged on its own, rounded up to the
# nano-dollar. Responses: cached input at the cached price, the rest of
# the input at the input price, output (reasoning included) at the output
# price.
cost_responses() {
	jq -s --argjson i "$P_IN" --argjson o "$P_OUT" --argjson r "$P_CR" '
		map(.input_tokens_details.cached_tokens as $c |
			((.input_tokens - $c) * $i + $c * $r + .output_tokens * $o + 999999) / 1000000 | floor) | add // 0'
}

# Realtime: cached input (text and audio) at the cached price, the rest of
# the text and audio input at their prices, text and audio output at theirs.
cost_realtime() {
	jq -s --argjson i "$P_IN" --argjson o "$P_OUT" --argjson r "$P_CR" --argjson ai "$P_AIN" --argjson ao "$P_AOUT" '
		map(.input_token_details as $d | ($d.cached_tokens_details // {text_tokens: 0, audio_tokens: 0}) as $c |
			(($d.text_tokens - $c.text_tokens) * $i + ($d.audio_tokens - $c.audio_tokens) * $ai +
			 $d.cached_tokens * $r + .output_token_details.text_tokens * $o +
			 .output_token_details.audio_tokens * $ao + 999999) / 1000000 | floor) | add // 0'
}

ws_settled() { [ "$(reserved "$1")" = 0 ]; }
