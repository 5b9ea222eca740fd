#!/bin/bash
# t_budget: budgets through the real daemon. 200 concurrent streams on a key
# whose budget fits exactly 50 of them (every refusal a 402 in the provider's
# shape, spend never past the budget); x-kilovolt-budget-remaining; a worker
# killed with reservations in flight has them released by the master; a
# daily period rolls spend on the next use; kvctl reset while requests flow
# loses no charge made after it.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
FILL=$top_builddir/tests/ledger_fill
[ -x "$FILL" ] || skip "$FILL not built"
export LC_ALL=C		# ${#body} counts bytes

KB=sk-kvtest-budget-fifty-31415926
KH=sk-kvtest-budget-header-27182818
KK=sk-kvtest-budget-kill-16180339
KP=sk-kvtest-budget-period-14142135
KQ=sk-kvtest-budget-period-control-1732
KR=sk-kvtest-budget-reset-22360679

# Prices in nano-dollars per 1M tokens (input, output). kv-budget makes a
# request's real cost equal its reservation (see below); kv-odd's prices do
# not divide, so rounding shows in the header.
PI_BUDGET=1000 PO_BUDGET=1000000000
PI_ODD=123456789 PO_ODD=987654321
M=20		# max_tokens of every request here, and what the mock streams

# ceil_cost IN OUT PI PO: nano-dollars, rounded up as common/money.c does.
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
# usd NUSD: NUSD as a config amount ("0.001000050").
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
# usd6 NUSD: as x-kilovolt-budget-remaining shows it (truncated, 6 decimals).
usd6() { printf '%d.%06d' $(($1 / 1000000000)) $(($1 % 1000000000 / 1000)); }

# The 50-request key: the gateway reserves body bytes as input tokens plus
# max_tokens as output (worker/admission.c estimate_nusd). The mock bills
# body/4 input tokens and exactly M output tokens, so with an input price of
# 1000 nUSD per 1M both round up to the same nano-dollars: the real cost is
# the reservation, and exactly 50 fit whatever the timing.
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"fifty of two hundred"}]}'
B=${#BODY}
R=$(ceil_cost "$B" "$M" $PI_BUDGET $PO_BUDGET)
A=$(ceil_cost $((B / 4)) "$M" $PI_BUDGET $PO_BUDGET)
BUDGET=$((50 * R))
echo "# body $B bytes, max_tokens $M: reservation $R nUSD, real cost $A nUSD, budget $BUDGET nUSD"

OVERLAY="[price kv-budget*]
input = 0.000001
output = 1.00

[price kv-odd*]
input = 0.123456789
output = 0.987654321

[key fifty]
key = $KB
budget = $(usd $BUDGET)"

kv_start_mock
kv_write_config <<<"$OVERLAY"
kv_start

# key_field ID FIELD: one field of that key in `kvctl keys --json`.
key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
key_field_is() { [ "$(key_field "$1" "$2")" = "$3" ]; }
jq_ok() { jq -e "$1" "$2" >/dev/null 2>&1; }

check_eq "the fifty key's budget is 50 reservations" "$(key_field "$(id_of "$KB")" budget_nusd)" $BUDGET
check_eq "a real request costs what it reserves (so exactly 50 fit)" "$A" "$R"

# ---- 200 concurrent streams, room for 50 --------------------------------------

mkdir -p "$T/c"
pids=()
for i in $(seq 1 200); do
	curl -sS -m 120 -o "$T/c/$i.body" -w '%{http_code}\n' -H "Authorization: Bearer $KB" \
		-H 'Content-Type: application/json' -H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 20' \
		--data-binary "$BODY" "$KV_URL/v1/chat/completions" >"$T/c/$i.code" 2>"$T/c/$i.err" &
	pids+=($!)
done
wait "${pids[@]}"
n200=$(cat "$T"/c/*.code | grep -c '^200$')
n402=$(cat "$T"/c/*.code | grep -c '^402$')
echo "# 200 concurrent: $n200 x 200, $n402 x 402, others: $(cat "$T"/c/*.code | grep -vx -e 200 -e 402 | sort | uniq -c | tr '\n' ' ')"
check "at least one of 200 concurrent streams succeeds ($n200)" test "$n200" -ge 1
check "at most 50 of 200 concurrent streams succeed ($n200)" test "$n200" -le 50
check_eq "exactly 50 of 200 concurrent streams succeed" "$n200" 50
check_eq "every other request is refused with 402" "$((n200 + n402))" 200
bad=0 short=0
for i in $(seq 1 200); do
	case $(cat "$T/c/$i.code") in
	402) jq_ok '(.error | keys | sort) == ["code","message","param","type"] and
		.error.type == "insufficient_quota" and .error.code == "budget_exceeded" and
		(.error.message | test("budget"))' "$T/c/$i.body" || bad=$((bad + 1)) ;;
	200) [ "$(grep -c '"content":"tok' "$T/c/$i.body")" = $M ] &&
		grep -q '^data: \[DONE\]' "$T/c/$i.body" || short=$((short + 1)) ;;
	esac
done
check_eq "every 402 has the OpenAI shape {error:{message,type:insufficient_quota,code:budget_exceeded}}" "$bad" 0
check_eq "every admitted stream is whole ($M tokens, [DONE])" "$short" 0

KB_ID=$(id_of "$KB")
check "the fifty key's reservations all settle" kv_wait_for 30 key_field_is "$KB_ID" reserved_nusd 0
spent=$(key_field "$KB_ID" spent_nusd)
echo "# overshoot: spent - budget = $((spent - BUDGET)) nUSD (target <= 0)"
check "spend never passes the budget ($spent <= $BUDGET)" test "$spent" -le $BUDGET
check_eq "spend is the admitted streams' cost" "$spent" $((n200 * A))
check_eq "the key counts its refusals" "$(key_field "$KB_ID" refusals)" "$n402"

MBODY='{"model":"claude-sonnet-4","max_tokens":'$M',"messages":[{"role":"user","content":"one more"}]}'
code=$(kv_curl /v1/messages -o "$T/msg.body" -w '%{http_code}' -H "x-api-key: $KB" \
	-H 'Content-Type: application/json' --data-binary "$MBODY")
check_eq "the spent key on /v1/messages: 402" "$code" 402
check "that 402 has the Anthropic shape {type:error,error:{type:budget_exceeded,message}}" \
	jq_ok '.type == "error" and (.error | keys | sort) == ["message","type"] and
		.error.type == "budget_exceeded" and (.error.message | length > 0)' "$T/msg.body"
check "the refusal names the key by id only" grep -qF "$KB_ID" "$T/msg.body"

# A key spent past a budget lowered under it: the 402 text writes money as
# kvctl does, "-$0.000005" (never "$-0.000005").
KN=sk-neg-$$-$RANDOM
NBODY='{"model":"kv-budget-1","max_tokens":'$M',"messages":[{"role":"user","content":"spend a little"}]}'
kv_curl /v1/chat/completions -o /dev/null -H "Authorization: Bearer $KN" \
	-H 'Content-Type: application/json' --data-binary "$NBODY"
kv_ctl budget "$(id_of "$KN")" 0.000001 >/dev/null
code=$(kv_curl /v1/chat/completions -o "$T/neg.body" -w '%{http_code}' -H "Authorization: Bearer $KN" \
	-H 'Content-Type: application/json' --data-binary "$NBODY")
check_eq "a key over its lowered budget: 402" "$code" 402
check "the 402 text: \"-\$N.NNNNNN remaining, ... up to \$N.NNNNNN\"" jq_ok \
	'.error.message | test("-\\$[0-9]+\\.[0-9]{6} remaining, this request may cost up to \\$[0-9]+\\.[0-9]{6}$")' "$T/neg.body"

# ---- x-kilovolt-budget-remaining ---------------------------------------------------

KH_ID=$(id_of "$KH")
HBODY='{"model":"kv-odd-1","max_tokens":'$M',"messages":[{"role":"user","content":"how much is left?"}]}'
HB=${#HBODY}
RH=$(ceil_cost "$HB" $M $PI_ODD $PO_ODD)
AH=$(ceil_cost $((HB / 4)) 5 $PI_ODD $PO_ODD)	# the mock's default 5 tokens
# remaining HEADERS-FILE: the header's value.
remaining() { tr -d '\r' <"$1" | sed -n 's/^x-kilovolt-budget-remaining: //Ip'; }
kv_curl /v1/chat/completions -o /dev/null -D "$T/h1" -H "Authorization: Bearer $KH" \
	-H 'Content-Type: application/json' --data-binary "$HBODY"
check_eq "remaining on a new key: the default budget (this request's own reservation not taken off)" \
	"$(remaining "$T/h1")" "$(usd6 2000000000)"
check "the remaining header has 6 decimals" grep -Eq '^[0-9]+\.[0-9]{6}$' <(remaining "$T/h1")
check "the first request settles at its real cost" kv_wait_for 20 key_field_is "$KH_ID" spent_nusd $AH
check "kvctl budget sets the key's budget" kv_ctl budget "$KH_ID" 1.25 >/dev/null
check_eq "kvctl shows the new budget" "$(key_field "$KH_ID" budget_nusd)" 1250000000
# Another request holds its reservation (its answer is 15 s late, so it
# still holds it on a loaded ASan run) while the second one asks.
kv_curl /v1/chat/completions -o /dev/null -H "Authorization: Bearer $KH" \
	-H 'Content-Type: application/json' -H 'x-mock-first-delay-ms: 15000' \
	--data-binary "$HBODY" &
slow=$!
check "a slow request holds its reservation" kv_wait_for 20 key_field_is "$KH_ID" reserved_nusd $RH
kv_curl /v1/chat/completions -o /dev/null -D "$T/h2" -H "Authorization: Bearer $KH" \
	-H 'Content-Type: application/json' --data-binary "$HBODY"
check_eq "remaining = budget - spent - the other request's reservation (issue 24)" \
	"$(remaining "$T/h2")" "$(usd6 $((1250000000 - AH - RH)))"
wait $slow
check "the slow request settles too" kv_wait_for 20 key_field_is "$KH_ID" spent_nusd $((3 * AH))
echo "# remaining: $(remaining "$T/h1") then $(remaining "$T/h2") (reservation $RH, cost $AH nUSD)"

# ---- a worker killed while it holds reservations ---------------------------------------

KK_ID=$(id_of "$KK")
kpids=()
for i in 1 2 3 4 5 6 7 8; do
	curl -sS -m 120 -o /dev/null -H "Authorization: Bearer $KK" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 1500' --data-binary "$BODY" \
		"$KV_URL/v1/chat/completions" 2>/dev/null &
	kpids+=($!)
done
check "8 slow streams hold 8 reservations" kv_wait_for 30 key_field_is "$KK_ID" reserved_nusd $((8 * R))
# Every worker holding a stream, by the pid in its ledger slot, and only
# when it is this daemon's child.
victims=
for pid in $(kv_ctl status --json | jq -r '.workers[] | select(.active_streams > 0) | .pid'); do
	[ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = "$KV_PID" ] && victims="$victims $pid"
done
check "the streams are on this daemon's workers ($victims)" test -n "$victims"
t0=$EPOCHREALTIME
KV_KILLS_WORKERS=1	# on purpose: kv_finish must not count it
for pid in $victims; do kill -KILL "$pid"; done
check "within 5 s of kill -9 the key's reservations are back to 0" \
	kv_wait_for 5 key_field_is "$KK_ID" reserved_nusd 0
echo "# reservations released within $(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t0 }") s of kill -9"
check "the master logged the release" grep -q "released [1-8] reservations" "$KV_LOG"
wait "${kpids[@]}"
# They had reached the provider: each is charged its input estimate (body
# bytes / 4 tokens at the input price) and its reserved output (the
# provider may have generated it all), not its whole reservation.
est=$(ceil_cost $(( ${#BODY} / 4 )) "$M" $PI_BUDGET $PO_BUDGET)
check_eq "the killed streams were charged their input estimate and reserved output" \
	"$(key_field "$KK_ID" spent_nusd)" $(( 8 * est ))
ok_again() {
	[ "$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KK" \
		-H 'Content-Type: application/json' --data-binary "$BODY" 2>/dev/null)" = 200 ]
}
check "respawned workers serve the key again" kv_wait_for 20 ok_again

# ---- kvctl reset while requests flow ------------------------------------------------------

KR_ID=$(id_of "$KR")
RBODY='{"model":"kv-budget-1","max_tokens":'$M',"messages":[{"role":"user","content":"reset me"}]}'
AR=$(ceil_cost $((${#RBODY} / 4)) $M $PI_BUDGET $PO_BUDGET)
# flow N: requests until $T/stop appears (at most 2000), one
# "START END STATUS" line each, times in microseconds.
flow() {
	local i s code
	for ((i = 0; i < 2000; i++)); do
		[ -e "$T/stop" ] && break
		s=${EPOCHREALTIME/./}
		code=$(curl -sS -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KR" \
			-H 'Content-Type: application/json' -H "x-mock-tokens: $M" \
			--data-binary "$RBODY" "$KV_URL/v1/chat/completions" 2>/dev/null)
		echo "$s ${EPOCHREALTIME/./} $code"
	done >"$T/flow.$1"
}
fstart=${EPOCHREALTIME/./}
fpids=()
for i in 1 2 3 4; do
	flow $i &
	fpids+=($!)
done
reqs_at_least() { [ "$(key_field "$KR_ID" requests)" -ge "$1" ] 2>/dev/null; }
check "requests flow on the reset key" kv_wait_for 60 reqs_at_least 20
# Some seconds of traffic before the reset, so the bound below has
# requests from well before it to leave out.
flowed_4s() { [ $((${EPOCHREALTIME/./} - fstart)) -ge 4000000 ]; }
kv_wait_for 10 flowed_4s
r0=${EPOCHREALTIME/./}
kv_ctl reset "$KR_ID" >"$T/reset.out"
rc=$?
r1=${EPOCHREALTIME/./}
check_eq "kvctl reset while requests flow: exit 0" $rc 0
n0=$(key_field "$KR_ID" requests)
check "requests go on after the reset" kv_wait_for 60 reqs_at_least $((n0 + 40))
touch "$T/stop"
wait "${fpids[@]}"
check "the reset key's reservations settle" kv_wait_for 20 key_field_is "$KR_ID" reserved_nusd 0
cat "$T"/flow.* >"$T/flow"
after=$(awk -v r1="$r1" '$1 > r1' "$T/flow" | wc -l)
# A request whose charge lands after the reset ended no earlier than its
# last byte was written; 2 s covers a busy machine between the two.
maybe=$(awk -v r0="$r0" '$2 >= r0 - 2000000' "$T/flow" | wc -l)
spent=$(key_field "$KR_ID" spent_nusd)
echo "# reset: $(wc -l <"$T/flow") requests, $after started after the reset, $maybe may have settled after it; spent $spent = $((spent / AR)) x $AR nUSD"
check_eq "every flowing request got 200" "$(awk '$3 != 200' "$T/flow" | wc -l)" 0
check "every request started after the reset is charged ($spent >= $after x $AR)" \
	test "$spent" -ge $((after * AR))
check "nothing from before the reset survives it ($spent <= $maybe x $AR)" \
	test "$spent" -le $((maybe * AR))
check_eq "spend is whole requests" $((spent % AR)) 0

# ---- periods: a daily key rolls on its next use ---------------------------------------------

kv_stop
kv_write_config <<<"$OVERLAY
[budget]
period = daily"
kv_start
KP_ID=$(id_of "$KP") KQ_ID=$(id_of "$KQ")
once() {
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
		-H 'Content-Type: application/json' -H "x-mock-tokens: $M" --data-binary "$RBODY"
}
check_eq "daily: first request on the period key" "$(once "$KP")" 200
check_eq "daily: first request on the control key" "$(once "$KQ")" 200
check "daily: the first charges settle" kv_wait_for 20 key_field_is "$KP_ID" spent_nusd $AR
check "daily: the control key's charge settles" kv_wait_for 20 key_field_is "$KQ_ID" spent_nusd $AR
check "ledger_fill moves the period key's period_start two days back" \
	"$FILL" "$T/ledger" 1024 period "$KP" $(($(date +%s) - 2 * 86400))
# The master rolls a stale period on its one-second tick (paused workers, so
# no charge is lost to the roll), not only when the key is next used.
check "daily: the master resets the stale period without a request" \
	kv_wait_for 10 key_field_is "$KP_ID" spent_nusd 0
check_eq "daily: ... and leaves the control key's spend alone" \
	"$(key_field "$KQ_ID" spent_nusd)" $AR
check_eq "daily: second request on the period key" "$(once "$KP")" 200
check_eq "daily: second request on the control key" "$(once "$KQ")" 200
check "daily: the control key keeps adding up within its period" \
	kv_wait_for 20 key_field_is "$KQ_ID" spent_nusd $((2 * AR))
check "daily: the new period holds only the new request" \
	kv_wait_for 20 key_field_is "$KP_ID" spent_nusd $AR
check_eq "daily: the period key still counts both requests" "$(key_field "$KP_ID" requests)" 2

kv_finish
