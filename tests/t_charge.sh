#!/bin/bash
# t_charge: every billable request is charged for what the provider bills,
# through the real daemon and the mock. Each check reads the ledger (kvctl
# --json) and what the mock received.
#  - prices fail closed: unknown_models = deny refuses (400, nothing sent);
#    a price section without output is a config error; service tiers,
#    Anthropic 1-hour cache writes and the long-context tier are priced;
#  - a non-streamed response whose client left is read to its end and
#    charged exactly; a stream whose client left is closed upstream at
#    once and charged its exact opening input (cache fields included) plus
#    the output so far (the stream's cumulative count where given), marked
#    estimated; exact usage already read is never replaced by an estimate;
#  - a 504, a stream cancelled before its head and a worker killed after
#    the request was sent charge the input estimate plus the reservation's
#    output (the provider got it whole and may have generated it all);
#    kvctl and /status.json count estimated charges;
#  - a pooled connection that closes after reading a request: the request
#    is not sent again.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes
KV_KILLS_WORKERS=1	# one check kills a worker on purpose

key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
spent() { key_field "$(id_of "$1")" spent_nusd; }
spent_is() { [ "$(spent "$1")" = "$2" ]; }
estimated() { key_field "$(id_of "$1")" estimated_requests; }
# requests the mock received for MODEL
mock_got() { grep -c " model=$1 " "$MOCK_LOG"; }
# input tokens the mock counted for MODEL's last request: the body it got / 4
# (the gateway may have added stream_options to it)
mock_in() { grep " model=$1 " "$MOCK_LOG" | tail -n 1 | sed 's/.* body_bytes=\([0-9]*\) .*/\1/' |
	awk '{ print int($1 / 4) }'; }

# Prices per token, in nano-dollars (the sections are per 1M tokens):
#   kv-tier: input 1000, output 2000; priority 3000 / 6000
#   kv-cut:  input 10000, output 100000, cache reads 1000, 5-minute writes
#            20000, 1-hour writes 40000
#   kv-long: input 1000, output 2000; past 50 input tokens 5000 / 7000
write_config() {
	kv_write_config <<EOF
[server]
workers = 1
upstream_timeout = $1
[budget]
default = 1000.00
unknown_models = deny
[price kv-tier*]
input = 1
output = 2
priority_input = 3
priority_output = 6
[price kv-cut*]
input = 10
output = 100
cached_input = 1
cache_write = 20
cache_write_1h = 40
[price kv-long*]
input = 1
output = 2
long_context_threshold = 50
long_context_input = 5
long_context_output = 7
EOF
}

kv_start_mock
write_config 3
kv_start

chat() { printf '{"model":"%s","messages":[{"role":"user","content":"%s"}]%s}' "$1" "$2" "${3:-}"; }

# ---- prices fail closed ------------------------------------------------------
K=sk-charge-unknown
body=$(chat mystery-model-1 hello)
check_eq "unknown_models = deny: an unknown model is refused" "$(post $K /v1/chat/completions "$body")" 400
says() { jq -e "$1" "$T/out" >/dev/null; }
check "... naming the model and the setting" \
	says '.error.message | test("mystery-model-1") and test("unknown_models")'
check_eq "... the mock received nothing" "$(mock_got mystery-model-1)" 0
check_eq "... and nothing was charged" "$(spent $K)" 0
printf '[upstream a]\nurl = http://127.0.0.1:1\npaths = /v1\n[price x]\ninput = 1\n' >"$T/nooutput.ini"
"$KV_DAEMON_BIN" -t -c "$T/nooutput.ini" >"$T/t.out" 2>&1
check_eq "a price section without output: kilovoltd -t exits 2" "$?" 2
check "... saying output is required" grep -q 'output is required' "$T/t.out"
printf '[upstream a]\nurl = http://127.0.0.1:1\npaths = /v1\n[price x]\ninput = 1\noutput = 0\n' >"$T/zero.ini"
"$KV_DAEMON_BIN" -t -c "$T/zero.ini" >"$T/t.out" 2>&1
check_eq "output = 0 (embeddings) is accepted" "$?" 0

# ---- service tiers -----------------------------------------------------------------
tier() {
	local k=$1 t=$2 want_in=$3 want_out=$4 body p
	body=$(chat kv-tier-1 hi)
	p=$(( ${#body} / 4 ))
	check_eq "service_tier $t: relayed" "$(post "$k" /v1/chat/completions "$body" \
		-H "x-mock-service-tier: $t")" 200
	check_eq "service_tier $t: charged at $want_in/$want_out per token" "$(spent "$k")" \
		$(( p * want_in + 5 * want_out ))
}
tier sk-charge-tier-default default 1000 2000
tier sk-charge-tier-priority priority 3000 6000
tier sk-charge-tier-scale scale 3000 6000	# a tier it cannot price: the dearest

# ---- Anthropic 1-hour cache writes ------------------------------------------------------
K=sk-charge-1h
body='{"model":"kv-cut-1h","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}'
p=$(( ${#body} / 4 ))
check_eq "1-hour cache writes: relayed" "$(post $K /v1/messages "$body" -H 'x-mock-cached: 50' \
	-H 'x-mock-cache-write: 100' -H 'x-mock-cache-1h: 40')" 200
check_eq "... 60 writes at cache_write, 40 at cache_write_1h, 50 reads at cached_input" \
	"$(spent $K)" $(( p * 10000 + 50 * 1000 + 60 * 20000 + 40 * 40000 + 5 * 100000 ))

# ---- the long-context tier ---------------------------------------------------------------
K=sk-charge-long
body=$(chat kv-long-1 "$(printf 'x%.0s' {1..400})")
p=$(( ${#body} / 4 ))
check_eq "long context: relayed" "$(post $K /v1/chat/completions "$body")" 200
check_eq "... $p input tokens (past 50): every token at the long-context prices" \
	"$(spent $K)" $(( p * 5000 + 5 * 7000 ))

# ---- a non-streamed response whose client left -------------------------------------------
K=sk-charge-gone-json
body=$(chat kv-cut-json hello)
p=$(( ${#body} / 4 ))
ab0=$(kv_mock_stat aborted_streams)
post $K /v1/chat/completions "$body" -m 1 -H 'x-mock-first-delay-ms: 2000' >/dev/null 2>&1
check "non-streamed, client gone before the head: charged exactly once the response is read" \
	kv_wait_for 15 spent_is $K $(( p * 10000 + 5 * 100000 ))
check_eq "... not as an estimate" "$(estimated $K)" 0
check_eq "... the mock got it once" "$(mock_got kv-cut-json)" 1
check_eq "... and was read to the end (no abort seen by the mock)" \
	"$(kv_mock_stat aborted_streams)" "$ab0"

# ---- a stream whose client left -----------------------------------------------------------
K=sk-charge-cut-stream
body='{"model":"kv-cut-s","max_tokens":400,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
p=$(( ${#body} / 4 ))
ab0=$(kv_mock_stat aborted_streams)
post $K /v1/messages "$body" -m 1 -H 'x-mock-tokens: 400' -H 'x-mock-delay-ms: 10' \
	-H 'x-mock-cached: 10000' -H 'x-mock-cache-write: 1000' >/dev/null 2>&1
aborted_since() { [ "$(kv_mock_stat aborted_streams)" -gt "$1" ]; }
check "a cut stream: the upstream is closed at once" kv_wait_for 10 aborted_since "$ab0"
in_cost=$(( p * 10000 + 10000 * 1000 + 1000 * 20000 ))
estimated_is() { [ "$(estimated "$1")" = "$2" ]; }
check "... charged (estimated)" kv_wait_for 10 estimated_is $K 1
s=$(spent $K)
check "... the exact input, cache reads at cached_input, plus output so far ($s nUSD)" \
	test "$s" -gt "$in_cost" -a "$s" -le $(( in_cost + 400 * 2 * 100000 ))
check "... not cache reads at the input price (that is $(( p * 10000 + 10000 * 10000 + 1000 * 20000 )))" \
	test "$s" -lt $(( p * 10000 + 10000 * 10000 + 1000 * 20000 ))

K=sk-charge-cancel-stream
body=$(chat kv-cut-cancel hello ',"stream":true')
ab0=$(kv_mock_stat aborted_streams)
post $K /v1/chat/completions "$body" -m 1 -H 'x-mock-first-delay-ms: 2500' >/dev/null 2>&1
check "a stream cancelled before the response head: the upstream is closed" \
	kv_wait_for 10 aborted_since "$ab0"
check "... and charged its input estimate (body bytes / 4) and the reserved output (1024)" \
	kv_wait_for 10 spent_is $K $(( ${#body} / 4 * 10000 + 1024 * 100000 ))
check_eq "... marked estimated" "$(estimated $K)" 1
check_eq "... the mock got it once" "$(mock_got kv-cut-cancel)" 1

K=sk-charge-cut-cumulative
body='{"model":"kv-cut-c","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
p=$(( ${#body} / 4 ))
post $K /v1/messages "$body" -m 2 -H 'x-mock-tokens: 1000' -H 'x-mock-token-bytes: 1' \
	-H 'x-mock-hold-ms: 8000' >/dev/null 2>&1
check "cut after message_delta: charged its cumulative output (1000), not bytes / 4" \
	kv_wait_for 10 spent_is $K $(( p * 10000 + 1000 * 100000 ))
check_eq "... marked estimated (no message_stop)" "$(estimated $K)" 1

K=sk-charge-after-usage
body=$(chat kv-cut-u hello ',"stream":true')
post $K /v1/chat/completions "$body" -m 2 -H 'x-mock-tokens: 1000' -H 'x-mock-token-bytes: 1' \
	-H 'x-mock-hold-ms: 8000' >/dev/null 2>&1
p=$(mock_in kv-cut-u)
check "cut after the usage event, before [DONE]: the exact usage (1000 output tokens)" \
	kv_wait_for 10 spent_is $K $(( p * 10000 + 1000 * 100000 ))
check_eq "... not an estimate" "$(estimated $K)" 0

# ---- a 504 --------------------------------------------------------------------------------
K=sk-charge-504
body=$(chat kv-cut-504 hello)
p=$(( ${#body} / 4 ))
check_eq "upstream silent past upstream_timeout: 504" "$(post $K /v1/chat/completions "$body" \
	-H 'x-mock-first-delay-ms: 8000')" 504
check_eq "... the mock got it once" "$(mock_got kv-cut-504)" 1
check_eq "... charged the input estimate and the reserved output" "$(spent $K)" \
	$(( p * 10000 + 1024 * 100000 ))
check_eq "... counted as estimated" "$(estimated $K)" 1
check_eq "... in /status.json too" "$(curl -sS "http://127.0.0.1:$KV_STATUS_PORT/status.json" |
	jq --arg id "$(id_of $K)" '.keys[] | select(.id == $id) | .estimated_requests')" 1
check "... and in kvctl show" bash -c "$KV_CTL_BIN -c '$T/kilovolt.ini' show $(id_of $K) |
	grep -qx 'estimated_requests: 1'"

# ---- a worker death after the request was sent ----------------------------------------------
kv_stop
write_config 60
kv_start
K=sk-charge-death
body=$(chat kv-cut-death hello)
p=$(( ${#body} / 4 ))
post $K /v1/chat/completions "$body" -H 'x-mock-first-delay-ms: 30000' >/dev/null 2>&1 &
kv_track $!
got_death() { [ "$(mock_got kv-cut-death)" = 1 ]; }
check "the request reached the mock" kv_wait_for 10 got_death
worker=$(kv_ctl status --json | jq -r '.workers[] | select(.state == "running") | .pid' | head -n 1)
check "a worker is running" test -n "$worker"
kill -9 "$worker" 2>/dev/null
reserved0() { [ "$(key_field "$(id_of $K)" reserved_nusd)" = 0 ]; }
check "the master released the dead worker's reservation" kv_wait_for 15 reserved0
check_eq "... and charged the input estimate and the reserved output" "$(spent $K)" \
	$(( p * 10000 + 1024 * 100000 ))

# ---- at most one send -------------------------------------------------------------------------
K=sk-charge-once
check_eq "a first request leaves a pooled connection" \
	"$(post $K /v1/chat/completions "$(chat kv-cut-first hi)")" 200
s0=$(spent $K)
body=$(chat kv-cut-once hello)
p=$(( ${#body} / 4 ))
check_eq "the pooled connection closes after reading the next request: 502" \
	"$(post $K /v1/chat/completions "$body" -H 'x-mock-fail: close')" 502
check_eq "... which the mock received once, not twice" "$(mock_got kv-cut-once)" 1
check_eq "... charged the input estimate and the reserved output (the provider got it whole)" \
	"$(spent $K)" $(( s0 + p * 10000 + 1024 * 100000 ))

kv_finish
