#!/bin/bash
# t_ratelimit: rate limits per key through the real daemon (GCRA words in
# the ledger, shm/ratelimit.c). 200 concurrent requests on a key with
# exactly M requests per minute: exactly M reach the mock, every other one
# is a 429 in the provider's shape with retry-after and the x-ratelimit-*
# headers, and a request after retry-after passes. The same for tokens per
# minute with max_tokens requests, whose reservations are settled to the
# real usage; a worker killed with tokens reserved has them released; the
# [budget] default, [key] overrides, kvctl limits and the admin API set
# limits; 402 says x-should-retry: false; kvctl, /status.json and /metrics
# show the limits; the official OpenAI SDK's own retry on 429 succeeds.
# Several sleeps on purpose (answers held 15 s, retry-after waits): 600 s.
: "${KV_TIMEOUT:=600}"
export KV_TIMEOUT
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes

KR=sk-kvtest-rate-rpm-1
KT=sk-kvtest-rate-tpm-2
KW=sk-kvtest-rate-kill-3
KD=sk-kvtest-rate-default-4
KF=sk-kvtest-rate-free-5
KA=sk-kvtest-rate-admin-6
KP=sk-kvtest-rate-poor-7
M=20		# the rpm key's limit: one request every 3 s, a burst of 20
BODY='{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"rate"}]}'
TBODY='{"model":"gpt-4o-mini","max_tokens":100,"messages":[{"role":"user","content":"tokens per minute"}]}'
TB=${#TBODY}
TRES=$((TB + 100))		# reserved: every body byte a token + max_tokens
TREAL=$((TB / 4 + 100))		# billed by the mock: body/4 in + 100 out
TPM=$((10 * TRES))		# exactly ten reservations fit
ADMIN=kv-rate-admin-token

kv_start_mock
KV_WORKERS=2 kv_write_config <<EOF
[server]
admin_token = $ADMIN

[budget]
rpm = 1000

[key rpm]
key = $KR
rpm = $M
tpm = 0

[key tpm]
key = $KT
rpm = 0
tpm = $TPM

[key kill]
key = $KW
rpm = 0
tpm = 1000

[key free]
key = $KF
rpm = 0

[key admin]
key = $KA

[key poor]
key = $KP
budget = 0
EOF
kv_start

key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
key_field_is() { [ "$(key_field "$1" "$2")" = "$3" ]; }
jq_ok() { jq -e "$1" "$2" >/dev/null 2>&1; }
hdr() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1; }
mock_count() { grep -c " auth=$1 " "$MOCK_LOG"; }
chat() {	# chat KEY BODY OUT-PREFIX [CURL ARGS]
	local key=$1 body=$2 out=$3
	shift 3
	curl -sS -m 120 -o "$out.body" -D "$out.head" -w '%{http_code}' \
		-H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@" \
		--data-binary "$body" "$KV_URL/v1/chat/completions"
}

# burst KEY BODY DIR [CURL ARGS]: 200 concurrent requests; codes in DIR/*.code,
# the time each answer arrived (ns) in DIR/*.t.
burst() {
	local key=$1 body=$2 dir=$3 i pids=()
	shift 3
	mkdir -p "$dir"
	for i in $(seq 1 200); do
		{ chat "$key" "$body" "$dir/$i" "$@"; echo; date +%s%N >"$dir/$i.t"; } \
			>"$dir/$i.code" 2>"$dir/$i.err" &
		pids+=($!)
	done
	wait "${pids[@]}"
}

KR_ID=$(id_of "$KR")
KT_ID=$(id_of "$KT")
check_eq "the rpm key has its [key] rpm" "$(key_field "$KR_ID" rpm)" $M
check_eq "the rpm key has tpm = 0 (none) overriding nothing" "$(key_field "$KR_ID" tpm)" 0
check_eq "the tpm key has its [key] tpm" "$(key_field "$KT_ID" tpm)" $TPM

# ---- 200 concurrent requests, exactly M per minute ---------------------------

t0=$(date +%s%N)
burst "$KR" "$BODY" "$T/r"
t1=$(date +%s%N)
# retry-after is exact: refused now, admitted once it has passed.
# (A slow burst may have refilled one more: take it first.)
late=0
for i in 1 2 3; do
	tr1=$(date +%s%N)
	code=$(chat "$KR" "$BODY" "$T/r1")
	[ "$code" = 200 ] || break
	late=$((late + 1))
done
ra=$(hdr retry-after "$T/r1.head")
check_eq "right after the burst the key is refused ($late refilled first)" "$code" 429
sleep "${ra:-1}"
check_eq "after retry-after ($ra s) a request passes" "$(chat "$KR" "$BODY" "$T/r2")" 200
r3=$(chat "$KR" "$BODY" "$T/r3")
t3=$(date +%s%N)
[ "$r3" = 200 ] && late=$((late + 1))
# It may pass only if, since the refusal, its wait (> retry-after - 1 s)
# and another emission interval (3 s) went by: a slow machine's round trips.
since=$(((t3 - tr1) / 1000000))
check "and the one after it waits again ($r3, $since ms after the refusal)" \
	test "$r3" = 429 -o $since -ge $(((ra - 1 + 3) * 1000))
n200=$(cat "$T"/r/*.code | grep -c '^200$')
n429=$(cat "$T"/r/*.code | grep -c '^429$')
el=$(((t1 - t0) / 1000000))
echo "# rpm $M: $n200 x 200, $n429 x 429 in $el ms; others:" \
	"$(cat "$T"/r/*.code | grep -vx -e 200 -e 429 | sort | uniq -c | tr '\n' ' ')"
# One more request every 3 s of the burst may pass: the bucket refills.
extra=$((el / 3000))
check "exactly $M (+$extra for the burst's $el ms of refill) of 200 are admitted ($n200)" \
	test "$n200" -ge $M -a "$n200" -le $((M + extra))
check_eq "every other one is a 429" $((n200 + n429)) 200
check_eq "the mock received exactly the admitted ones" "$(mock_count "$KR_ID")" $((n200 + late + 1))
bad=0 badh=0 ra_max=0
for i in $(seq 1 200); do
	f=$T/r/$i
	if [ "$(cat "$f.code")" = 429 ]; then
		jq_ok '.error.code == "rate_limit_exceeded" and .error.type == "requests" and
			(.error.message | test("requests per minute"))' \
			"$f.body" || bad=$((bad + 1))
		ra=$(hdr retry-after "$f.head")
		[[ $ra =~ ^[1-3]$ ]] && [ "$(hdr x-should-retry "$f.head")" = true ] &&
			[ "$(hdr x-ratelimit-limit-requests "$f.head")" = $M ] &&
			[ "$(hdr x-ratelimit-remaining-requests "$f.head")" = 0 ] &&
			[[ $(hdr x-ratelimit-reset-requests "$f.head") =~ ^[0-9.]+(ms|s)$|^1m0s$ ]] &&
			[ -z "$(hdr x-ratelimit-limit-tokens "$f.head")" ] || badh=$((badh + 1))
		[ "${ra:-0}" -gt $ra_max ] 2>/dev/null && ra_max=$ra
	else
		[ "$(hdr x-ratelimit-limit-requests "$f.head")" = $M ] &&
			[[ $(hdr x-ratelimit-remaining-requests "$f.head") =~ ^[0-9]+$ ]] ||
			badh=$((badh + 1))
	fi
done
check_eq "every 429 has the OpenAI shape (code rate_limit_exceeded, type requests)" "$bad" 0
check_eq "every response has x-ratelimit-*-requests (and a 429 retry-after 1..3, x-should-retry: true)" "$badh" 0
check_eq "the key counts its 429s" "$(key_field "$KR_ID" rate_refusals)" $((n429 + 1 + (r3 == 429)))
check_eq "a 429 is not a budget refusal" "$(key_field "$KR_ID" refusals)" 0
check "the rpm key's reservations all settle" kv_wait_for 30 key_field_is "$KR_ID" reserved_nusd 0


# ---- tokens per minute, reserved and settled ---------------------------------

t0=$(date +%s%N)
# Answers 15 s late, so every admitted request holds its reservation
# while the others ask.
burst "$KT" "$TBODY" "$T/t" -H 'x-mock-tokens: 100' -H 'x-mock-first-delay-ms: 15000'
# The admissions took until the last refusal came back.
t1=$(for i in $(seq 1 200); do grep -qx 429 "$T/t/$i.code" && cat "$T/t/$i.t"; done | sort -n | tail -n 1)
el=$(((${t1:-$t0} - t0) / 1000000))
n200=$(cat "$T"/t/*.code | grep -c '^200$')
n429=$(cat "$T"/t/*.code | grep -c '^429$')
echo "# tpm $TPM ($TRES reserved, $TREAL billed per request): $n200 x 200, $n429 x 429, the refusals within $el ms"
extra=$((el / 6000))	# a request's reservation refills in 6 s
if [ $el -lt 15000 ]; then
	check "exactly 10 (+$extra for $el ms of refill) of 200 are admitted ($n200)" \
		test "$n200" -ge 10 -a "$n200" -le $((10 + extra))
else	# a burst slower than the answers: settled refunds admit more
	echo "# the burst took longer than the answers' delay: only the token bound is checked"
fi
# Whatever the timing: what was admitted fits the limit plus its refill.
check "admitted tokens never pass tpm + refill ($((n200 * TREAL)) <= $((TPM + TPM * el / 60000)))" \
	test $((n200 * TREAL)) -le $((TPM + TPM * el / 60000))
check_eq "every other one is a 429" $((n200 + n429)) 200
check_eq "the mock received exactly the admitted ones" "$(mock_count "$KT_ID")" "$n200"
badh=0
for i in $(seq 1 200); do
	f=$T/t/$i
	[ "$(hdr x-ratelimit-limit-tokens "$f.head")" = $TPM ] &&
		[[ $(hdr x-ratelimit-remaining-tokens "$f.head") =~ ^[0-9]+$ ]] &&
		[ -z "$(hdr x-ratelimit-limit-requests "$f.head")" ] || badh=$((badh + 1))
	if [ "$(cat "$f.code")" = 429 ]; then
		jq_ok '.error.type == "tokens" and (.error.message | test("tokens per minute"))' "$f.body" &&
			[[ $(hdr retry-after "$f.head") =~ ^[1-6]$ ]] || badh=$((badh + 1))
	fi
done
check_eq "every response has x-ratelimit-*-tokens only (a 429 type tokens, retry-after 1..6)" "$badh" 0
check "the tpm key's reservations all settle" kv_wait_for 30 key_field_is "$KT_ID" reserved_nusd 0
used=$(key_field "$KT_ID" input_tokens)+$(key_field "$KT_ID" output_tokens)
check_eq "the ledger holds the real tokens of the admitted requests" "$((used))" $((n200 * TREAL))
left=$(key_field "$KT_ID" tokens_remaining)
echo "# tokens remaining after settling: $left of $TPM (real use $((n200 * TREAL)))"
check "settling gave back the reserved tokens not used ($left >= $TPM - $((n200 * TREAL)))" \
	test "$left" -ge $((TPM - n200 * TREAL))

# ---- a worker killed with tokens reserved ------------------------------------

KW_ID=$(id_of "$KW")
# As the budget keeps a sent request's input on a death (its "sent"
# minimum), tpm keeps the same input tokens (body bytes / 4) and gets the
# rest back: the bucket is then exactly 1000 - input full, plus what it
# refilled (1000 per minute) since the request was admitted.
PAD=$(head -c 1600 /dev/zero | tr '\0' a)
WB='{"model":"gpt-4o-mini","max_tokens":800,"messages":[{"role":"user","content":"'$PAD'"}]}'
WIN=$((${#WB} / 4))
t0=$(date +%s%N)
chat "$KW" "$WB" "$T/w" -H 'x-mock-first-delay-ms: 60000' >/dev/null 2>&1 &
cpid=$!
held() { [ "$(key_field "$KW_ID" tokens_remaining)" -lt 300 ]; }
check "a slow request holds its tokens (remaining < 300 of 1000)" kv_wait_for 10 held
KV_KILLS_WORKERS=1
for w in $(ps -o pid= --ppid "$KV_PID"); do kill -9 "$w"; done
back() { [ "$(key_field "$KW_ID" tokens_remaining)" -ge $((1000 - WIN)) ]; }
check "the master released the dead worker's tokens but its input ($WIN)" kv_wait_for 10 back
left=$(key_field "$KW_ID" tokens_remaining)
el=$((($(date +%s%N) - t0) / 1000000))
echo "# after kill -9: $left tokens left, $((1000 - WIN)) + refill over $el ms"
check "exactly: $left <= $((1000 - WIN)) + $el ms of refill" \
	test "$left" -le $((1000 - WIN + el * 1000 / 60000 + 1))
check_eq "and the budget holds nothing for it" "$(key_field "$KW_ID" reserved_nusd)" 0
wait $cpid 2>/dev/null
models_ok() { [ "$(kv_curl /v1/models -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KF")" = 200 ]; }
check "the respawned workers serve" kv_wait_for 20 models_ok

# ---- defaults, no limit, 402, kvctl and the admin API -----------------------

code=$(chat "$KD" "$BODY" "$T/d")
check_eq "a new unnamed key passes" "$code" 200
check_eq "it has the [budget] rpm" "$(hdr x-ratelimit-limit-requests "$T/d.head")" 1000
check_eq "and remaining counts this request" "$(hdr x-ratelimit-remaining-requests "$T/d.head")" 999
chat "$KF" "$BODY" "$T/f" >/dev/null
check "a key with no limit gets no x-ratelimit-* header" \
	test -z "$(grep -i '^x-ratelimit' "$T/f.head")"
check_eq "a budget refusal is a 402" "$(chat "$KP" "$BODY" "$T/p")" 402
check_eq "and says x-should-retry: false" "$(hdr x-should-retry "$T/p.head")" false
check "and has no retry-after" test -z "$(hdr retry-after "$T/p.head")"

KF_ID=$(id_of "$KF")
check "kvctl limits sets rpm" kv_ctl limits "$KF_ID" --rpm 2 >"$T/lim.out"
check "kvctl limits reports what it did" grep -q "rpm 2, tpm none (was rpm none, tpm none)" "$T/lim.out"
check_eq "kvctl keys --json shows it" "$(key_field "$KF_ID" rpm)" 2
check_eq "kvctl limits --json shows them (0 = none)" \
	"$(kv_ctl limits "$KF_ID" --json | jq -c '[.id, .rpm, .tpm, .was_rpm]')" "[\"$KF_ID\",2,0,2]"
codes=$(for i in 1 2 3; do chat "$KF" "$BODY" "$T/f$i"; echo; done | tr '\n' ' ')
check_eq "the key now passes 2 and refuses the third" "$codes" "200 200 429 "
check "one request every 30 s: retry-after 29..30" grep -Eqx '29|30' <(hdr retry-after "$T/f3.head")
check "kvctl show prints rpm" grep -qx "rpm: 2" <(kv_ctl show "$KF_ID")
check "kvctl keys has RPM and TPM columns" grep -q "RPM.*TPM" <(kv_ctl keys)
check "kvctl limits --rpm 0 lifts it" kv_ctl limits "$KF_ID" --rpm 0 >/dev/null
check_eq "and the key passes again" "$(chat "$KF" "$BODY" "$T/f4")" 200
check_eq "kvctl limits refuses a bad number (exit 2)" "$(kv_ctl limits "$KF_ID" --rpm -3 >/dev/null 2>&1; echo $?)" 2

KA_ID=$(id_of "$KA")
st() { curl -sS -m 10 "$@"; }
SURL=http://127.0.0.1:$KV_STATUS_PORT
code=$(st -o /dev/null -w '%{http_code}' -X POST --data '{"rpm":5}' "$SURL/keys/$KA_ID/limits")
check_eq "the admin API wants the token" "$code" 401
code=$(st -o "$T/adm.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
	--data '{"rpm": 5, "tpm": 7000}' "$SURL/keys/$KA_ID/limits")
check_eq "POST /keys/ID/limits answers 200" "$code" 200
check "with the account, its new limits in it" jq_ok '.rpm == 5 and .tpm == 7000 and
	.requests_remaining == 5 and .tokens_remaining == 7000' "$T/adm.json"
code=$(st -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
	--data '{"rpm": 5, "rpm": 6}' "$SURL/keys/$KA_ID/limits")
check_eq "a body naming rpm twice is a 400" "$code" 400
code=$(st -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
	--data '{"tpm": 4000000001}' "$SURL/keys/$KA_ID/limits")
check_eq "a limit past 4000000000 is a 400" "$code" 400
check_eq "the gateway applies them" "$(chat "$KA" "$BODY" "$T/a")" 200
check_eq "its responses say so" "$(hdr x-ratelimit-limit-tokens "$T/a.head")/$(hdr x-ratelimit-limit-requests "$T/a.head")" 7000/5

st "$SURL/metrics" >"$T/metrics"
check "/metrics has the rpm limit by key" \
	grep -q "^kilovolt_key_rate_limit_requests_per_minute{key=\"$KR_ID\",label=\"rpm\"} $M\$" "$T/metrics"
check "/metrics has the tpm limit by key" \
	grep -q "^kilovolt_key_rate_limit_tokens_per_minute{key=\"$KT_ID\",label=\"tpm\"} $TPM\$" "$T/metrics"
check "/metrics counts 429s by key" \
	grep -q "^kilovolt_key_rate_limited_total{key=\"$KR_ID\",label=\"rpm\"} [1-9]" "$T/metrics"
check "/metrics counts 429s in total" grep -q '^kilovolt_rate_limited_total [1-9]' "$T/metrics"
st "$SURL/status.json" >"$T/status.json"
check "/status.json has rpm, tpm and what is left" jq -e --arg id "$KR_ID" \
	'.keys[] | select(.id == $id) | .rpm == '$M' and .tpm == 0 and
	(.requests_remaining | type == "number") and .tokens_remaining == null' "$T/status.json" \
	>/dev/null

# ---- the official SDK retries a 429 after retry-after and succeeds -----------

if kv_sdk_setup >"$T/sdk-setup.log" 2>&1; then
	# 6 per minute: one more every 10 s, longer than node takes to start.
	kv_ctl limits "$KF_ID" --rpm 6 >/dev/null
	for i in $(seq 1 6); do chat "$KF" "$BODY" "$T/s$i" >/dev/null; done
	check_eq "the key is spent before the SDK asks" "$(chat "$KF" "$BODY" "$T/s0")" 429
	refused() { grep -c "key=$KF_ID POST /v1/chat/completions .* status=429" "$KV_LOG"; }
	before=$(mock_count "$KF_ID") r0=$(refused)
	timeout 60 node "$KV_SDK/ratelimit_test.mjs" "$KV_URL" "$KF" >"$T/sdk.out" 2>&1
	rc=$?
	sed 's/^/    /' "$T/sdk.out"
	check_eq "the OpenAI SDK's retry on 429 ends in success" "$rc" 0
	check_eq "the mock received the SDK's request once" $(($(mock_count "$KF_ID") - before)) 1
	check "the gateway refused the SDK's first try with 429" test $(($(refused) - r0)) -ge 1
else
	sed 's/^/    /' "$T/sdk-setup.log"
	echo "# the Node SDK is not available: SDK retry check skipped"
fi

kv_finish
