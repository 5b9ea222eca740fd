#!/bin/bash
# t_ledger: the ledger through the real daemon. A known set of requests (every
# API shape the gateway bills, JSON and SSE, cache reads and writes, a
# two-delta Anthropic stream) leaves exactly the tokens and nano-dollars
# computed here from the mock's deterministic usage and the config's prices;
# named keys are listed before first use; unknown_keys = deny; a full account
# table; spend survives a restart; the raw key is nowhere on disk or on a
# page; the ledger is 0600; upstream errors are free; a cut stream is charged
# as estimated.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes

K1=sk-kvtest-ledger-one-9f8e7d6c5b4a
K2=sk-kvtest-ledger-two-0a1b2c3d4e5f
K3=sk-kvtest-ledger-three-55aa55aa55aa
K4=sk-kvtest-ledger-four-deadbeef0042
ALICE=sk-kvtest-alice-raw-c0ffee123456
BOB=sk-kvtest-bob-raw-feedface7890
K1_ID=$(id_of "$K1")
ALICE_ID=$(id_of "$ALICE")
BOB_ID=$(id_of "$BOB")

# Prices in nano-dollars per 1M tokens: input, cached input, cache write,
# output (cache write falls back to input when the section has none).
P_GPT="150000000 75000000 150000000 600000000"
P_CLAUDE="3000000000 300000000 3750000000 15000000000"
P_ODD="123456789 12345678 123456789 987654321"
P_DEFAULT="1000000000 1000000000 1000000000 3000000000"

OVERLAY="[server]
max_keys = 4

[price kv-odd*]
input = 0.123456789
output = 0.987654321
cached_input = 0.012345678

[key alice]
key = sha256:$(printf %s "$ALICE" | sha256sum | cut -d' ' -f1)
budget = 25.00

[key bob]
key = $BOB
budget = 3.5"

kv_start_mock
kv_write_config <<<"$OVERLAY"
kv_start

# ---- helpers ------------------------------------------------------------------

# post PATH AUTH-HEADER BODY [CURL ARGS]: prints the HTTP status, body in $T/out.
post() {
	local path=$1 auth=$2 body=$3
	shift 3
	kv_curl "$path" -o "$T/out" -w '%{http_code}' -H "$auth" \
		-H 'Content-Type: application/json' --data-binary "$body" "$@"
}

# key_field ID FIELD: one field of that key in `kvctl keys --json`.
key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
# model_json MODEL: that model's object in `kvctl models --json`, compact.
model_json() { kv_ctl models --json | jq -c --arg m "$1" '.models[] | select(.model == $m)'; }
counter() { kv_ctl status --json | jq -r ".$1"; }
# jq_ok FILTER FILE: FILTER holds over FILE's JSON.
jq_ok() { jq -e "$1" "$2" >/dev/null 2>&1; }
key_requests_are() { [ "$(key_field "$1" requests)" = "$2" ]; }
counter_is() { [ "$(counter "$1")" = "$2" ]; }

# The expectation, accumulated per key (K1 only) and per reported model.
E_REQ=0 E_IN=0 E_OUT=0 E_CACHED=0 E_COST=0
declare -A M_REQ M_IN M_OUT M_CACHED M_COST

# cost PRICES IN CACHED WRITE OUT: nano-dollars, rounded up per request as
# common/money.c does.
cost() {
	local pi pc pw po
	read -r pi pc pw po <<<"$1"
	local sum=$((($2 - $3 - $4) * pi + $3 * pc + $4 * pw + $5 * po))
	echo $(((sum + 999999) / 1000000))
}

# expect MODEL PRICES IN CACHED WRITE OUT: one billed request on K1.
expect() {
	local m=$1 c
	c=$(cost "$2" "$3" "$4" "$5" "$6")
	E_REQ=$((E_REQ + 1)) E_IN=$((E_IN + $3)) E_OUT=$((E_OUT + $6))
	E_CACHED=$((E_CACHED + $4)) E_COST=$((E_COST + c))
	M_REQ[$m]=$((${M_REQ[$m]:-0} + 1))
	M_IN[$m]=$((${M_IN[$m]:-0} + $3))
	M_OUT[$m]=$((${M_OUT[$m]:-0} + $6))
	M_CACHED[$m]=$((${M_CACHED[$m]:-0} + $4))
	M_COST[$m]=$((${M_COST[$m]:-0} + c))
}

# What the mock answered for each request, by upstream body size (its
# prompt tokens are body bytes / 4); checked against its log below.
UP_SIZES=()
sent() { UP_SIZES+=("$1"); }

# ---- named keys are in the ledger before first use -----------------------------

kv_ctl keys --json >"$T/keys0.json"
check_eq "alice is listed before first use, with label and budget" \
	"$(jq -c --arg id "$ALICE_ID" '.keys[] | select(.id == $id) | [.label, .budget_nusd, .requests, .spent_nusd]' "$T/keys0.json")" \
	'["alice",25000000000,0,0]'
check_eq "bob (a raw key in the config) is listed with label and budget" \
	"$(jq -c --arg id "$BOB_ID" '.keys[] | select(.id == $id) | [.label, .budget_nusd, .requests, .spent_nusd]' "$T/keys0.json")" \
	'["bob",3500000000,0,0]'
check_eq "only the named keys are in a fresh ledger" "$(jq '.keys | length' "$T/keys0.json")" 2
check_eq "the ledger file is mode 0600" "$(stat -c %a "$T/ledger")" 600

# ---- the known set of requests on K1 -------------------------------------------

AUTH="Authorization: Bearer $K1"
GPT=gpt-4o-mini-2024-07-18 CLAUDE=claude-sonnet-4-20250514 ODD=kv-odd-1
INJECT='"stream_options":{"include_usage":true},'
MSGS='"messages":[{"role":"user","content":"Count the volts in a kilovolt, please."}]'

# A: chat JSON, 3 cached prompt tokens (OpenAI's prompt_tokens include them).
b='{"model":"gpt-4o-mini",'$MSGS'}'
check_eq "chat JSON: 200" "$(post /v1/chat/completions "$AUTH" "$b" -H 'x-mock-tokens: 7' -H 'x-mock-cached: 3')" 200
sent ${#b}; expect $GPT "$P_GPT" $((${#b} / 4)) 3 0 7

# B: chat SSE, the client asked for usage.
b='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},'$MSGS'}'
check_eq "chat SSE with include_usage: 200" "$(post /v1/chat/completions "$AUTH" "$b" -H 'x-mock-tokens: 4')" 200
check "chat SSE with include_usage: the client gets the usage chunk" grep -q '"usage":{"prompt_tokens"' "$T/out"
sent ${#b}; expect $GPT "$P_GPT" $((${#b} / 4)) 0 0 4

# C: chat SSE without include_usage: the gateway adds it upstream.
b='{"model":"gpt-4o-mini","stream":true,'$MSGS'}'
check_eq "chat SSE without include_usage: 200" "$(post /v1/chat/completions "$AUTH" "$b" -H 'x-mock-tokens: 6')" 200
check "chat SSE without include_usage: no usage chunk reaches the client" \
	bash -c "! grep -q '\"usage\"' '$T/out'"
up=$((${#b} + ${#INJECT}))
sent $up; expect $GPT "$P_GPT" $((up / 4)) 0 0 6

# D: legacy completions JSON at prices that do not divide evenly.
b='{"model":"kv-odd-1","prompt":"Say kilovolt nine times","max_tokens":50}'
check_eq "completions JSON: 200" "$(post /v1/completions "$AUTH" "$b" -H 'x-mock-tokens: 9')" 200
sent ${#b}; expect $ODD "$P_ODD" $((${#b} / 4)) 0 0 9

# E: completions SSE with usage and cached tokens.
b='{"model":"kv-odd-1","prompt":"Say kilovolt thrice","stream":true,"stream_options":{"include_usage":true}}'
check_eq "completions SSE: 200" "$(post /v1/completions "$AUTH" "$b" -H 'x-mock-tokens: 3' -H 'x-mock-cached: 2')" 200
sent ${#b}; expect $ODD "$P_ODD" $((${#b} / 4)) 2 0 3

# F: embeddings: input only.
b='{"model":"kv-odd-1","input":"the quick brown fox jumps over the lazy dog"}'
check_eq "embeddings: 200" "$(post /v1/embeddings "$AUTH" "$b")" 200
sent ${#b}; expect $ODD "$P_ODD" $((${#b} / 4)) 0 0 0

# G: embeddings on a model only [price default] matches.
b='{"model":"text-embedding-3-small","input":"volts and amperes"}'
check_eq "embeddings, default price: 200" "$(post /v1/embeddings "$AUTH" "$b")" 200
# A model without a [price] section of its own is counted in the one "other"
# row, so made-up names cannot fill the model table.
sent ${#b}; expect other "$P_DEFAULT" $((${#b} / 4)) 0 0 0

# H: Responses API JSON with cached input.
b='{"model":"gpt-4o-mini","input":"What is a kilovolt-ampere?"}'
check_eq "responses JSON: 200" "$(post /v1/responses "$AUTH" "$b" -H 'x-mock-tokens: 5' -H 'x-mock-cached: 2')" 200
sent ${#b}; expect $GPT "$P_GPT" $((${#b} / 4)) 2 0 5

# I: Responses API SSE (usage in response.completed).
b='{"model":"gpt-4o-mini","input":"What is a kilovolt-hour?","stream":true}'
check_eq "responses SSE: 200" "$(post /v1/responses "$AUTH" "$b" -H 'x-mock-tokens: 4' -H 'x-mock-cached: 1')" 200
check "responses SSE: ends in response.completed" grep -q 'event: response.completed' "$T/out"
sent ${#b}; expect $GPT "$P_GPT" $((${#b} / 4)) 1 0 4

# J: Anthropic JSON with cache reads and writes, key in x-api-key.
XAUTH="x-api-key: $K1"
b='{"model":"claude-sonnet-4","max_tokens":100,'$MSGS'}'
check_eq "messages JSON: 200" "$(post /v1/messages "$XAUTH" "$b" -H 'x-mock-tokens: 6' \
	-H 'x-mock-cached: 10' -H 'x-mock-cache-write: 4')" 200
p=$((${#b} / 4))
sent ${#b}; expect $CLAUDE "$P_CLAUDE" $((p + 10 + 4)) 10 4 6

# K: Anthropic SSE with cache reads and writes (usage in message_start and
# message_delta).
b='{"model":"claude-sonnet-4","max_tokens":100,"stream":true,'$MSGS'}'
check_eq "messages SSE: 200" "$(post /v1/messages "$XAUTH" "$b" -H 'x-mock-tokens: 5' \
	-H 'x-mock-cached: 2' -H 'x-mock-cache-write: 3')" 200
p=$((${#b} / 4))
sent ${#b}; expect $CLAUDE "$P_CLAUDE" $((p + 2 + 3)) 2 3 5

# L: two cumulative message_delta events: the last one counts, not the sum.
check_eq "messages SSE, two deltas: 200" "$(post /v1/messages "$AUTH" "$b" -H 'x-mock-tokens: 8' \
	-H 'x-mock-two-deltas: 1')" 200
check_eq "messages SSE, two deltas: the mock sent two message_delta events" \
	"$(grep -c '^event: message_delta' "$T/out")" 2
sent ${#b}; expect $CLAUDE "$P_CLAUDE" $((${#b} / 4)) 0 0 8

# The mock's prompt tokens come from what it received: check that first.
check_eq "the mock received the bodies the expectation assumes" \
	"$(grep -o 'body_bytes=[0-9]*' "$MOCK_LOG" | cut -d= -f2 | tr '\n' ' ')" "${UP_SIZES[*]} "
check_eq "only the chat stream without include_usage got it injected" \
	"$(grep -o 'include_usage=[01] stream_options=[01]' "$MOCK_LOG" | sed -n 3p)" \
	"include_usage=1 stream_options=1"

# The charge is settled after the last byte goes out: wait for it.
check "K1's $E_REQ requests are settled" kv_wait_for 20 key_requests_are "$K1_ID" $E_REQ
check_eq "K1: tokens and spend equal the expectation exactly" \
	"$(kv_ctl keys --json | jq -c --arg id "$K1_ID" '.keys[] | select(.id == $id) |
		[.requests, .input_tokens, .output_tokens, .cached_input_tokens, .spent_nusd, .reserved_nusd, .label]')" \
	"[$E_REQ,$E_IN,$E_OUT,$E_CACHED,$E_COST,0,null]"
echo "# K1 expected: requests=$E_REQ in=$E_IN out=$E_OUT cached=$E_CACHED cost_nusd=$E_COST"
check_eq "K1: remaining = budget - spent" "$(key_field "$K1_ID" remaining_nusd)" $((2000000000 - E_COST))
for m in $GPT $CLAUDE $ODD other; do
	check_eq "model $m: requests, tokens and cost equal the expectation exactly" \
		"$(model_json "$m")" \
		"{\"model\":\"$m\",\"requests\":${M_REQ[$m]},\"input_tokens\":${M_IN[$m]},\"output_tokens\":${M_OUT[$m]},\"cached_input_tokens\":${M_CACHED[$m]},\"cost_nusd\":${M_COST[$m]}}"
done
check_eq "no other model was billed" "$(kv_ctl models --json | jq '.models | length')" 4
check_eq "global cost counter equals the expectation" "$(counter cost_nusd_total)" $E_COST
check_eq "no request was estimated" "$(counter estimated_requests_total)" 0

# ---- upstream errors are not charged ---------------------------------------------

before=$(kv_ctl keys --json | jq -c --arg id "$K1_ID" '.keys[] | select(.id == $id) |
	[.input_tokens, .output_tokens, .spent_nusd]')
total=$(counter requests_total)
b='{"model":"gpt-4o-mini",'$MSGS'}'
check_eq "upstream 400 is relayed" "$(post /v1/chat/completions "$AUTH" "$b" -H 'x-mock-status: 400')" 400
check_eq "upstream 500 is relayed" "$(post /v1/chat/completions "$AUTH" "$b" -H 'x-mock-status: 500')" 500
b='{"model":"claude-sonnet-4","max_tokens":100,"stream":true,'$MSGS'}'
check_eq "upstream 529 on /v1/messages is relayed" "$(post /v1/messages "$XAUTH" "$b" -H 'x-mock-status: 529')" 529
check "the three error responses are counted" \
	kv_wait_for 20 counter_is requests_total $((total + 3))
check_eq "upstream 4xx/5xx: nothing charged, no tokens" \
	"$(kv_ctl keys --json | jq -c --arg id "$K1_ID" '.keys[] | select(.id == $id) |
		[.input_tokens, .output_tokens, .spent_nusd]')" "$before"
check_eq "upstream 4xx/5xx: nothing reserved" "$(key_field "$K1_ID" reserved_nusd)" 0

# ---- a stream cut short is charged as estimated -------------------------------------

# cut_case LABEL PATH AUTH BODY: the mock resets the stream halfway; the
# account must grow by a non-zero estimate priced exactly at PRICES.
cut_case() {
	local label=$1 path=$2 auth=$3 body=$4 prices=$5 est0 spent0 in0 out0 c0 d_in d_out d_spent
	est0=$(counter estimated_requests_total)
	read -r spent0 in0 out0 c0 < <(kv_ctl keys --json | jq -r --arg id "$K1_ID" \
		'.keys[] | select(.id == $id) | "\(.spent_nusd) \(.input_tokens) \(.output_tokens) \(.cached_input_tokens)"')
	# Events 20 ms apart: the gateway has read some before the RST (which
	# may drop whatever it has not read yet).
	post "$path" "$auth" "$body" -H 'x-mock-fail: reset' -H 'x-mock-tokens: 40' \
		-H 'x-mock-delay-ms: 20' >/dev/null 2>&1
	check "$label: estimated_requests_total increases" \
		kv_wait_for 20 counter_is estimated_requests_total $((est0 + 1))
	read -r d_spent d_in d_out < <(kv_ctl keys --json | jq -r --arg id "$K1_ID" \
		'.keys[] | select(.id == $id) | "\(.spent_nusd) \(.input_tokens) \(.output_tokens)"')
	d_spent=$((d_spent - spent0)) d_in=$((d_in - in0)) d_out=$((d_out - out0))
	echo "# $label: estimated $d_in input + $d_out output tokens, $d_spent nUSD"
	check "$label: input and relayed output are charged (in $d_in, out $d_out)" \
		test "$d_in" -gt 0 -a "$d_out" -gt 0
	check_eq "$label: the estimate is priced as the tokens it counts" "$d_spent" \
		"$(cost "$prices" "$d_in" 0 0 "$d_out")"
	check_eq "$label: nothing stays reserved" "$(key_field "$K1_ID" reserved_nusd)" 0
}
cut_case "chat SSE reset" /v1/chat/completions "$AUTH" \
	'{"model":"gpt-4o-mini","stream":true,'"$MSGS"'}' "$P_GPT"
cut_case "messages SSE reset" /v1/messages "$XAUTH" \
	'{"model":"claude-sonnet-4","max_tokens":100,"stream":true,'"$MSGS"'}' "$P_CLAUDE"

# ---- a full account table -----------------------------------------------------------

b='{"model":"gpt-4o-mini",'$MSGS'}'
check_eq "the fourth key (table now full) is admitted" \
	"$(post /v1/chat/completions "Authorization: Bearer $K2" "$b")" 200
check_eq "a fifth key gets 503 when max_keys = 4 are used" \
	"$(post /v1/chat/completions "Authorization: Bearer $K3" "$b")" 503
check "the 503 says the key table is full, in OpenAI's error shape" \
	jq_ok '.error.message | test("key table is full")' "$T/out"
check_eq "the refused key got no account" "$(kv_ctl keys --json | jq '.keys | length')" 4
check_eq "a known unnamed key still works on a full table" \
	"$(post /v1/chat/completions "$AUTH" "$b")" 200
check_eq "a second known key still works" \
	"$(post /v1/chat/completions "Authorization: Bearer $K2" "$b")" 200
check_eq "named key alice (sha256 in the config) works" \
	"$(post /v1/chat/completions "Authorization: Bearer $ALICE" "$b")" 200
bm='{"model":"claude-sonnet-4","max_tokens":100,'$MSGS'}'
check_eq "named key bob (raw in the config) works on /v1/messages" \
	"$(post /v1/messages "x-api-key: $BOB" "$bm")" 200

# ---- spend survives a restart -----------------------------------------------------------

kv_wait_for 20 key_requests_are "$BOB_ID" 1
snap() {
	kv_ctl keys --json | jq -cS '.keys | sort_by(.id)'
	kv_ctl models --json | jq -cS '.models | sort_by(.model)'
}
snap >"$T/snap-before"
check "kilovoltd stops cleanly" kv_stop
snap >"$T/snap-stopped"
check "kvctl reads the same numbers without the daemon" cmp -s "$T/snap-before" "$T/snap-stopped"
kv_start
snap >"$T/snap-after"
check "spend, tokens and models are the same after a restart" cmp -s "$T/snap-before" "$T/snap-after"
check_eq "K1's spend after the restart" "$(key_field "$K1_ID" spent_nusd)" \
	"$(jq -r --arg id "$K1_ID" '.[] | select(.id == $id) | .spent_nusd' <(head -n1 "$T/snap-before"))"
check_eq "the ledger file is still mode 0600" "$(stat -c %a "$T/ledger")" 600

# ---- unknown_keys = deny ------------------------------------------------------------------

kv_stop
kv_write_config <<<"$OVERLAY
[budget]
unknown_keys = deny"
kv_start
check_eq "deny: an unknown key gets 401" "$(post /v1/chat/completions "Authorization: Bearer $K4" "$b")" 401
check "deny: the 401 is in OpenAI's error shape" \
	jq_ok '.error.type == "invalid_request_error" and (.error.message | test("unknown"))' "$T/out"
check_eq "deny: an unknown key gets 401 on /v1/messages" "$(post /v1/messages "x-api-key: $K4" "$bm")" 401
check "deny: that 401 is in Anthropic's error shape" \
	jq_ok '.type == "error" and .error.type == "authentication_error"' "$T/out"
check_eq "deny: named key alice works" "$(post /v1/chat/completions "Authorization: Bearer $ALICE" "$b")" 200
check_eq "deny: named key bob works" "$(post /v1/messages "Authorization: Bearer $BOB" "$bm")" 200
check "deny: the unknown key got no account" \
	test -z "$(key_field "$(id_of "$K4")" id)"

# ---- the raw keys are nowhere -----------------------------------------------------------------

kv_wait_for 20 key_requests_are "$ALICE_ID" 2
S=http://127.0.0.1:$KV_STATUS_PORT
curl -sS -m 10 "$S/" >"$T/page.html"
curl -sS -m 10 "$S/status.json" >"$T/status.json"
curl -sS -m 10 "$S/metrics" >"$T/metrics.txt"
kv_ctl keys >"$T/keys.txt"
check "the status page is served" grep -qi "<html" "$T/page.html"
check "status.json lists K1's id" grep -qF "$K1_ID" "$T/status.json"
check "/metrics lists K1's id" grep -qF "$K1_ID" "$T/metrics.txt"
check "the daemon log names K1 by its id" grep -qF "$K1_ID" "$KV_LOG"
for f in "$T/ledger" "$KV_LOG" "$T/page.html" "$T/status.json" "$T/metrics.txt" "$T/keys.txt"; do
	found=
	for k in "$K1" "$K2" "$K3" "$K4" "$ALICE" "$BOB"; do
		grep -qaF -- "$k" "$f" && found="$found $k"
	done
	check_eq "no raw key in $(basename "$f")" "$found" ""
done

kv_finish
