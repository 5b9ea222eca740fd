#!/bin/bash
# t_ws_realtime: @openai/agents-realtime's RealtimeSession (its WebSocket
# transport, the key as a bearer header) through kilovolt on the Realtime
# API: a text-and-audio session of five turns (tests/sdk/realtime_client.mjs)
# relayed to the stand-in (tests/sdk/ws_standin.mjs) with kilovolt's
# credential; every event reaches it, the client sees each response.done's
# usage as the stand-in sent it, and the ledger's spend is the sum of those
# usages priced from the catalogue (text, audio and cached input, text and
# audio output, each turn rounded up on its own); nothing stays reserved.
# Twice: the second session on a new socket of the same key. Then the
# server's automatic responses (server VAD): refused without an output
# bound, metered with one (tests/sdk/realtime_vad.mjs); and one the budget
# refuses: cancelled, yet what the provider bills for it charged
# (tests/sdk/realtime_vad_refused.mjs).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "$top_srcdir/tests/ws_lib.sh"

KR=sk-kv-realtime-$$ KV=sk-kv-vad-$$ KP=sk-kv-poor-$$
ws_setup <<EOF
[key realtime]
key = $KR
budget = 10.00

[key vad]
key = $KV
budget = 10.00

[key poor]
key = $KP
budget = 0.50
EOF
ws_prices gpt-realtime || { fail "kvctl prices gpt-realtime"; kv_finish; }

for run in 1 2; do
	from=$(ws_lines)
	before=$(spent "$KR")
	before=${before:-0}
	kv_node_checks "realtime $run" "$T/rt$run.out" node "$KV_SDK/realtime_client.mjs" "$KV_WS" "$KR" gpt-realtime
	check_eq "run $run: one upgrade reached the stand-in, with kilovolt's credential" \
		"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.path)\(.query) \(.status) \(.headers.authorization)"')" \
		"/v1/realtime?model=gpt-realtime 101 Bearer $WSS_KEY"
	check_eq "run $run: every client event reached the stand-in" \
		"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "event") | .type' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')" \
		"conversation.item.create=3 input_audio_buffer.append=2 input_audio_buffer.commit=2 response.create=5 session.update=2 "
	check_eq "run $run: the client saw each response.done's usage as the stand-in sent it" \
		"$(sed -n 's/^usage //p' "$T/rt$run.out" | jq -c . | tr '\n' ' ')" \
		"$(turns "$from" 'and .usage_sent' | jq -c .usage | tr '\n' ' ')"
	kv_wait_for 30 ws_settled "$KR"
	check_eq "run $run: the ledger charged the sum of the five turns' usage, priced, nothing left reserved" \
		"$(($(spent "$KR") - before)) $(reserved "$KR")" \
		"$(turns "$from" 'and .usage_sent' | jq -c .usage | cost_realtime) 0"
done
check "the five turns of each run cost something in audio" test \
	"$(turns 0 'and .usage_sent' | jq -s '[.[].usage.output_token_details.audio_tokens] | add')" -gt 0

# The server's own responses (turn detection): allowed only with an
# output bound in the session, each reserved when it starts and settled.
from=$(ws_lines)
kv_node_checks vad "$T/vad.out" node "$KV_SDK/realtime_vad.mjs" "$KV_WS" "$KV" gpt-realtime
check_eq "vad: the refused session.update never reached the stand-in, the bounded one did; no response.create" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "event") | .type' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')" \
	"input_audio_buffer.append=2 input_audio_buffer.commit=2 session.update=1 "
check_eq "vad: the stand-in's two responses were its own (VAD), their usage what the client saw" \
	"$(turns "$from" 'and .usage_sent' | jq -r .by | tr '\n' ' ')|$(turns "$from" 'and .usage_sent' | jq -c .usage | tr '\n' ' ')" \
	"vad vad |$(sed -n 's/^usage //p' "$T/vad.out" | jq -c . | tr '\n' ' ')"
kv_wait_for 30 ws_settled "$KV"
check_eq "vad: the ledger charged both, priced, nothing left reserved" "$(spent "$KV") $(reserved "$KV")" \
	"$(sed -n 's/^usage //p' "$T/vad.out" | cost_realtime) 0"

# One the budget refuses (its worst case, a context window of audio, is
# over $0.50): the client told in-band, the provider told to cancel, and
# what it bills for the cancelled response (its response.done's usage)
# charged all the same, past the budget, nothing left reserved.
from=$(ws_lines)
kv_node_checks refused "$T/refused.out" node "$KV_SDK/realtime_vad_refused.mjs" "$KV_WS" "$KP" gpt-realtime
check_eq "refused: the stand-in got the commit, then kilovolt's response.cancel; no response.create" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "event") | .type' | grep -v '^input_audio_buffer.append$' | tr '\n' ' ')" \
	"session.update input_audio_buffer.commit response.cancel "
kv_wait_for 30 ws_settled "$KP"
check_eq "refused: the ledger charged the cancelled response's usage, priced, nothing left reserved" \
	"$(spent "$KP") $(reserved "$KP")" "$(sed -n 's/^usage //p' "$T/refused.out" | cost_realtime) 0"
check "refused: that usage cost something" test "$(spent "$KP")" -gt 0

kv_finish
