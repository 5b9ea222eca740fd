#!/bin/bash
# t_ws_hostile: the `ws` package drives the awkward cases of the Responses
# API's WebSocket mode through kilovolt (tests/sdk/ws_hostile.mjs), each on
# its own key so its charge can be told: a wrong key (401, nothing reaches
# the stand-in); a Realtime client authenticated as browsers do, by its
# subprotocol (kilovolt's credential swapped in, the key not relayed); a response.create in fragments with a ping between them;
# a turn the provider answers with an error event (not charged, the socket
# stays open); a frame over 16 MiB (1009, never relayed); a masked frame
# from the provider, a provider that drops the connection mid-turn, a
# client that drops mid-turn (each charged as a cut: the input estimate,
# event bytes / 4, and the turn's max_output_tokens); a turn whose worst
# case is twice what the budget has left (an in-band error event, never
# relayed, the socket left open, the next affordable turn served). Every
# completed turn is charged its usage exactly; nothing stays reserved.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "$top_srcdir/tests/ws_lib.sh"

KH=sk-kv-hostile-$$ KE=sk-kv-error-$$ KB=sk-kv-budget-$$
KM=sk-kv-masked-$$ KX=sk-kv-cut-$$ KD=sk-kv-drop-$$
ws_setup <<EOF
[key hostile]
key = $KH
budget = 10.00

[key error]
key = $KE
budget = 10.00

[key budget]
key = $KB
budget = 0.50

[key masked]
key = $KM
budget = 10.00

[key cut]
key = $KX
budget = 10.00

[key drop]
key = $KD
budget = 10.00
EOF
MODEL=gpt-5-codex
ws_prices $MODEL || { fail "kvctl prices $MODEL"; kv_finish; }

# hostile NAME KEY CASE...: ws_hostile.mjs's CASEs through kilovolt with KEY.
hostile() {
	local name=$1 key=$2
	shift 2
	kv_node_checks "$name" "$T/$name.out" node "$KV_SDK/ws_hostile.mjs" "$KV_WS" "$key" $MODEL "$@"
}
# cut_cost FROM: the charge of the one turn after line FROM cut before its
# usage: its event's bytes / 4 as input, its max_output_tokens as output.
cut_cost() {
	tail -n +$(($1 + 1)) "$WSS_LOG" | jq -s --argjson i "$P_IN" --argjson o "$P_OUT" \
		'map(select(.kind == "event" and .type == "response.create")) |
		map(((.bytes / 4 | floor) * $i + .event.max_output_tokens * $o + 999999) / 1000000 | floor) | add'
}
# charged KEY FROM OUT: KEY's spend is the priced usage OUT printed, and the
# stand-in's turns after FROM that sent usage are those.
charged() {
	kv_wait_for 30 ws_settled "$1"
	check_eq "$3: the completed turns are the stand-in's" \
		"$(sed -n 's/^usage //p' "$T/$3.out" | jq -c . | tr '\n' ' ')" \
		"$(turns "$2" 'and .usage_sent' | jq -c .usage | tr '\n' ' ')"
	check_eq "$3: charged their usage exactly, nothing left reserved" "$(spent "$1") $(reserved "$1")" \
		"$(sed -n 's/^usage //p' "$T/$3.out" | cost_responses) 0"
}

from=$(ws_lines)
hostile auth not-a-key-$$ auth
check "auth: the refused upgrade never reached the stand-in" test "$(ws_lines)" = "$from"

from=$(ws_lines)
hostile subprotocol "$KH" subprotocol
check_eq "subprotocol: the stand-in got kilovolt's credential as a bearer header, the client's key nowhere" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "upgrade") | "\(.auth) \(.headers.authorization)"')|$(tail -n +$((from + 1)) "$WSS_LOG" | grep -c -- "$KH")" \
	"bearer Bearer $WSS_KEY|0"

from=$(ws_lines)
hostile fragmented "$KH" fragmented
check_eq "fragmented: the stand-in got the create whole, in one message" \
	"$(tail -n +$((from + 1)) "$WSS_LOG" | jq -r 'select(.kind == "event") | "\(.type) \(.event.input)"')" \
	"response.create fragmented turn [[out=7]]"
charged "$KH" "$from" fragmented

from=$(ws_lines)
hostile error "$KE" chained
charged "$KE" "$from" error

from=$(ws_lines)
hostile oversized "$KH" oversized:$((16 * 1024 * 1024 + 1024))
check "oversized: nothing of it reached the stand-in" test \
	-z "$(tail -n +$((from + 1)) "$WSS_LOG" | jq -c 'select(.kind == "event")')"
kv_wait_for 30 ws_settled "$KH"
check_eq "oversized: nothing charged, nothing reserved" "$(reserved "$KH")" 0

for c in masked:$KM cut:$KX drop:$KD; do
	name=${c%%:*} key=${c#*:}
	from=$(ws_lines)
	hostile "$name" "$key" "$name"
	kv_wait_for 30 ws_settled "$key"
	kv_wait_for 10 eval "test -n \"\$(turns $from)\""
	check_eq "$name: the stand-in's turn sent no usage" "$(turns "$from" | jq -r .usage_sent)" false
	check_eq "$name: charged as a cut (event bytes / 4 in, max_output_tokens out), nothing left reserved" \
		"$(spent "$key") $(reserved "$key")" "$(cut_cost "$from") 0"
done

# The budget: 0.50 left; a turn of gpt-5-codex may cost its context window
# of input and its max_output_tokens of output: with 66,000 that is twice
# 0.50, with 16 it fits.
worst=$(((272000 * P_IN + 66000 * P_OUT) / 1000000))
check "budget: the refused turn's worst case is about twice the budget" \
	test $((worst / 2)) -gt 490000000 -a $((worst / 2)) -lt 510000000
from=$(ws_lines)
hostile budget "$KB" budget:66000
check "budget: the refused turn never reached the stand-in" \
	eval "! tail -n +$((from + 1)) '$WSS_LOG' | grep -q refused-turn"
check_eq "budget: the refusal is OpenAI's error event shape" \
	"$(sed -n 's/^refusal //p' "$T/budget.out" | jq -r '"\(.type) \(.error.type) \(.error.message | length > 0)"')" \
	"error insufficient_quota true"
charged "$KB" "$from" budget

kv_finish
