#!/bin/bash
# t_admission: admission reads the whole request (issue 10) and usage is
# always asked for (issue 11). One section per way the prefix window broke,
# with the trigger the issue describes; each asserts the ledger (kvctl
# --json: reserved_nusd while the request is in flight, spent_nusd after)
# and what the mock providers received (nothing for a refusal).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes
KV_WORKERS=1		# one worker: idle uploads and the next request share it
PIDS=()

key_field() {
	kv_ctl keys --json | jq -r --arg id "$1" \
	    '[.keys[] | select(.id == $id) | .'"$2"'] | first // "none"'
}
key_field_is() { [ "$(key_field "$1" "$2")" = "$3" ]; }
reserved_nonzero() { local r; r=$(key_field "$1" reserved_nusd); [ "$r" != none ] && [ "$r" != 0 ]; }
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }

kv_start_mock
kv__mock local || { fail "start the local mock"; kv_finish; }
LOCAL_LOG=$T/local.log
LOCAL_PORT=$KV__PORT

# llama-*: $0.10 in / $1.00 out per 1M tokens = 100 / 1000 nUSD a token.
# ctx-*: the same, with the two token keys set. gpt-4o-mini: 150 / 600.
KN=sk-kvtest-adm-n-eight-1234
KC=sk-kvtest-adm-chunked-5678
KS=sk-kvtest-adm-small-9012
kv_write_config <<EOF
[upstream local]
url = http://127.0.0.1:$LOCAL_PORT
paths = /local-only
models = llama-*

[price llama-*]
input = 0.10
output = 1.00

[price ctx-*]
input = 0.10
output = 1.00
context_window = 100000
max_output = 2000

[key small]
key = $KS
budget = 0.05
EOF
kv_start

# cost IN OUT: nano-dollars at the llama/ctx prices.
cost() { echo $(($1 * 100 + $2 * 1000)); }

# A body as the official Python SDK writes it: messages first, then the
# parameters. sdk_body FILE PROMPT_BYTES TAIL: TAIL is the text after the
# prompt's closing brackets, e.g. ,"model":"llama-3","max_tokens":50
sdk_body() {
	{
		printf '{"messages":[{"role":"user","content":"'
		head -c "$2" /dev/zero | tr '\0' p
		printf '"}]%s}' "$3"
	} >"$1"
}

# inflight NAME KEY EXPECTED_RESV FILE [CURL ARGS]: post FILE with the mock
# holding its answer 5 s, check the key's reservation while it waits, then
# wait for the answer (status in $T/NAME.status).
inflight() {
	local name=$1 key=$2 want=$3 file=$4 id
	shift 4
	id=$(id_of "$key")
	kv_curl /v1/chat/completions -o "$T/$name.out" -w '%{http_code}' \
		-H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
		-H 'x-mock-first-delay-ms: 5000' --data-binary @"$file" "$@" \
		>"$T/$name.status" 2>"$T/$name.err" &
	local pid=$!
	kv_wait_for 60 reserved_nonzero "$id"
	check_eq "$name: reserved while in flight" "$(key_field "$id" reserved_nusd)" "$want"
	wait "$pid"
}

# ---- 1. the Python SDK's key order, model and max_tokens after 2 MB --------------

P=$((2 * 1024 * 1024))
sdk_body "$T/sdk.json" $P ',"model":"llama-3","max_tokens":50'
B=$(stat -c %s "$T/sdk.json")
for mode in length chunked; do
	K=sk-kvtest-adm-sdk-$mode-4242
	extra=()
	[ $mode = chunked ] && extra=(-H 'Transfer-Encoding: chunked')
	o0=$(lines "$MOCK_LOG") l0=$(lines "$LOCAL_LOG")
	inflight "sdk_$mode" "$K" "$(cost "$B" 50)" "$T/sdk.json" "${extra[@]}"
	check_eq "sdk $mode: 200" "$(cat "$T/sdk_$mode.status")" 200
	check_eq "sdk $mode: routed by model to the local upstream" "$(lines "$LOCAL_LOG")" $((l0 + 1))
	check_eq "sdk $mode: nothing went to the path's upstream" "$(lines "$MOCK_LOG")" "$o0"
	check "sdk $mode: the local mock got the whole body, model and limit" \
		grep -q "^POST /v1/chat/completions .* body_bytes=$B model=llama-3 max_tokens=50 " \
		<(tail -n 1 "$LOCAL_LOG")
	# the mock bills body/4 input tokens and 5 output tokens
	check "sdk $mode: charged the provider's usage" \
		kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(cost $((B / 4)) 5)"
	check_eq "sdk $mode: nothing left reserved" "$(key_field "$(id_of "$K")" reserved_nusd)" 0
done

# A stream with the fields last: usage is injected (the body is seen whole)
# and charged exactly, not estimated from bytes.
K=sk-kvtest-adm-sdk-stream-4343
sdk_body "$T/sdks.json" 300000 ',"model":"llama-3","max_tokens":1000,"stream":true'
kv_curl /v1/chat/completions -o "$T/sdks.out" -H "Authorization: Bearer $K" \
	-H 'x-mock-tokens: 50' --data-binary @"$T/sdks.json"
check "sdk stream: usage was asked for upstream" \
	grep -q 'include_usage=1 stream_options=1 .*model=llama-3 ' <(tail -n 1 "$LOCAL_LOG")
check "sdk stream: the client got no usage event" bash -c "! grep -q '\"usage\":{' '$T/sdks.out'"
BB=$(tail -n 1 "$LOCAL_LOG" | sed -n 's/.* body_bytes=\([0-9]*\) .*/\1/p')
check "sdk stream: charged 50 output tokens, as the provider said" \
	kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(cost $((BB / 4)) 50)"

# A key whose budget the whole body does not fit: 402, nothing sent.
o0=$(lines "$MOCK_LOG") l0=$(lines "$LOCAL_LOG")
st=$(kv_curl /v1/chat/completions -o "$T/small.out" -w '%{http_code}' \
	-H "Authorization: Bearer $KS" --data-binary @"$T/sdk.json")
check_eq "a 2 MB SDK-order body on a \$0.05 key: 402" "$st" 402
check_eq "... and no upstream got anything" "$(lines "$MOCK_LOG")/$(lines "$LOCAL_LOG")" "$o0/$l0"
check_eq "... spent 0" "$(key_field "$(id_of "$KS")" spent_nusd)" 0
check_eq "... reserved 0" "$(key_field "$(id_of "$KS")" reserved_nusd)" 0

# ---- 2. chunked bodies reserve every byte -------------------------------------

sdk_body "$T/c600.json" 600000 ',"model":"llama-3"'
C=$(stat -c %s "$T/c600.json")
RC=$(cost "$C" 1024)		# no max_tokens, no max_output: reserve_output_tokens
kv_stop
kv_write_config <<EOF
[upstream local]
url = http://127.0.0.1:$LOCAL_PORT
paths = /local-only
models = llama-*

[price llama-*]
input = 0.10
output = 1.00

[price ctx-*]
input = 0.10
output = 1.00
context_window = 100000
max_output = 2000

[key small]
key = $KS
budget = 0.05

[key chunked]
key = $KC
budget = $(usd $((3 * RC + RC / 2)))

[key neight]
key = $KN
budget = 0.004150000
EOF
kv_start
l0=$(lines "$LOCAL_LOG")
for i in 1 2 3 4 5 6 7 8; do
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}\n' \
		-H "Authorization: Bearer $KC" -H 'Transfer-Encoding: chunked' \
		-H 'x-mock-first-delay-ms: 4000' --data-binary @"$T/c600.json" >>"$T/c600.codes" &
	PIDS+=($!)
done
wait "${PIDS[@]}"
PIDS=()
check_eq "8 concurrent 600 KB chunked on a budget for 3: three 200s" \
	"$(grep -c '^200$' "$T/c600.codes")" 3
check_eq "... five 402s" "$(grep -c '^402$' "$T/c600.codes")" 5
check_eq "... the upstream got three" "$(lines "$LOCAL_LOG")" $((l0 + 3))
spent=$(key_field "$(id_of "$KC")" spent_nusd)
check "... spent ($spent) within the budget ($((3 * RC + RC / 2)))" \
	test "$spent" -le $((3 * RC + RC / 2))
check_eq "... each charged its exact usage" "$spent" $((3 * $(cost $((C / 4)) 5)))

# ---- 3. n and best_of multiply the output -----------------------------------------

NB='{"model":"llama-3","max_tokens":100,"n":8,"messages":[{"role":"user","content":"n"}]}'
RN=$(cost ${#NB} 800)
# budget 4,150,000 nUSD: 5 reservations of RN (~802,000) fit, 6 do not
l0=$(lines "$LOCAL_LOG")
for ((i = 0; i < 20; i++)); do
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}\n' \
		-H "Authorization: Bearer $KN" -H 'x-mock-tokens: 100' \
		-H 'x-mock-first-delay-ms: 4000' -d "$NB" >>"$T/n8.codes" &
	PIDS+=($!)
done
wait "${PIDS[@]}"
PIDS=()
check_eq "20 concurrent n:8 on a budget for 5: five 200s (reserved $RN each)" \
	"$(grep -c '^200$' "$T/n8.codes")" 5
check_eq "... the upstream got five, each asked for n=8" \
	"$(tail -n +$((l0 + 1)) "$LOCAL_LOG" | grep -c ' n=8 ')" 5
spent=$(key_field "$(id_of "$KN")" spent_nusd)
check_eq "... charged 8 x 100 output tokens each" "$spent" $((5 * $(cost $((${#NB} / 4)) 800)))
check "... within the budget" test "$spent" -le 4150000
K=sk-kvtest-adm-bestof-77
BO='{"model":"llama-3","max_tokens":10,"best_of":3,"n":2,"prompt":"x"}'
kv_curl /v1/completions -o /dev/null -H "Authorization: Bearer $K" \
	-H 'x-mock-first-delay-ms: 2000' -d "$BO" &
pid=$!
kv_wait_for 10 reserved_nonzero "$(id_of "$K")"
check_eq "best_of 3, n 2: reserves 3 x max_tokens" \
	"$(key_field "$(id_of "$K")" reserved_nusd)" "$(cost ${#BO} 30)"
wait "$pid"

# ---- 4. idle chunked uploads cannot change how the next request is judged ---------

for ((i = 0; i < 300; i++)); do
	exec {fd}<>/dev/tcp/127.0.0.1/"$KV_PORT" || break
	printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-kvtest-adm-idle\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n{"messages":[{"role":"user","content":"%s' \
		"$(head -c 200 /dev/zero | tr '\0' i)" >&"$fd"
	IDLE+=("$fd")
done
check_eq "300 idle chunked uploads are open on the one worker" "${#IDLE[@]}" 300
K=sk-kvtest-adm-after-idle-99
o0=$(lines "$MOCK_LOG") l0=$(lines "$LOCAL_LOG")
inflight after_idle "$K" "$(cost "$B" 50)" "$T/sdk.json" -H 'Transfer-Encoding: chunked'
check_eq "after 300 idle uploads: the next 2 MB request is 200" "$(cat "$T/after_idle.status")" 200
check "... routed by model" grep -q "body_bytes=$B model=llama-3 max_tokens=50 " \
	<(tail -n 1 "$LOCAL_LOG")
check_eq "... nothing went to the path's upstream" "$(lines "$MOCK_LOG")" "$o0"
check "... charged exactly" \
	kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(cost $((B / 4)) 5)"
for fd in "${IDLE[@]}"; do exec {fd}>&-; done
check_eq "the idle uploads reached no upstream" "$(lines "$LOCAL_LOG")" $((l0 + 1))

# ---- 5. invalid or unusual JSON ------------------------------------------------------

K=sk-kvtest-adm-json-31
# refused BODY_FILE STATUS TEXT DESC [CURL ARGS]
refused() {
	local file=$1 want=$2 text=$3 desc=$4 o0 l0 st
	shift 4
	o0=$(lines "$MOCK_LOG") l0=$(lines "$LOCAL_LOG")
	st=$(kv_curl /v1/chat/completions -o "$T/refused.out" -w '%{http_code}' \
		-H "Authorization: Bearer $K" --data-binary @"$file" "$@")
	if [ "$st" = "$want" ] && grep -q -- "$text" "$T/refused.out" &&
	    [ "$(lines "$MOCK_LOG")/$(lines "$LOCAL_LOG")" = "$o0/$l0" ]; then
		pass "$desc: $want naming it, nothing forwarded"
	else
		fail "$desc: got $st $(head -c 300 "$T/refused.out")"
	fi
}
printf '{"model":"llama-3","max_tokens":10,"temperature":NaN}' >"$T/nan.json"
refused "$T/nan.json" 400 "NaN" "NaN"
printf '\xef\xbb\xbf{"model":"llama-3","max_tokens":10}' >"$T/bom.json"
refused "$T/bom.json" 400 "byte order mark" "a UTF-8 BOM"
{ printf '{"model":"llama-3","x":'; head -c 513 /dev/zero | tr '\0' '['; head -c 513 /dev/zero | tr '\0' ']'; printf '}'; } >"$T/deep.json"
refused "$T/deep.json" 400 "nesting deeper than 128" "513-deep nesting"
printf '{"model":"llama-3","content":"\xc0\xaf"}' >"$T/utf8.json"
refused "$T/utf8.json" 400 "invalid UTF-8" "overlong UTF-8"
printf '{"model":"llama-3","max_tokens":"8192"}' >"$T/str.json"
refused "$T/str.json" 400 "max_tokens must be an integer" "max_tokens as a string"
printf '{"model":"llama-3","max_tokens":8192.5}' >"$T/frac.json"
refused "$T/frac.json" 400 "max_tokens is not an integer" "a fractional max_tokens"
printf '{"model":"llama-3","max_completion_tokens":-1}' >"$T/neg.json"
refused "$T/neg.json" 400 "is negative" "a negative limit"
printf '{"model":"llama-3","max_output_tokens":1e12}' >"$T/big.json"
refused "$T/big.json" 400 "out of range" "a limit out of range"
printf '{"model":"llama-3","max_tokens":10}' | gzip >"$T/gz.json"
refused "$T/gz.json" 415 "Content-Encoding" "a gzip request body" -H 'Content-Encoding: gzip'
check_eq "none of them charged or reserved anything (no account was made)" \
	"$(key_field "$(id_of "$K")" spent_nusd)/$(key_field "$(id_of "$K")" reserved_nusd)" "none/none"
for v in 8192.0 8.192e3; do
	K2=sk-kvtest-adm-num-$v
	printf '{"model":"llama-3","max_tokens":%s}' "$v" >"$T/num.json"
	inflight "num_$v" "$K2" "$(cost "$(stat -c %s "$T/num.json")" 8192)" "$T/num.json"
	check "max_tokens $v: the mock read 8192 too" grep -q ' max_tokens=8192 ' <(tail -n 1 "$LOCAL_LOG")
done

# ---- 6. content the provider fetches: the context window is reserved --------------

K=sk-kvtest-adm-fetch-55
IMG='{"model":"ctx-vision","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}'
printf %s "$IMG" >"$T/img.json"
# context_window 100000 input tokens, no max_tokens: max_output 2000
inflight img "$K" "$(cost 100000 2000)" "$T/img.json"
check_eq "an image by URL on a model with context_window: 200" "$(cat "$T/img.status")" 200
check "... charged its usage after" \
	kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(cost $((${#IMG} / 4)) 5)"
printf %s "${IMG/ctx-vision/llama-3}" >"$T/img2.json"
refused "$T/img2.json" 400 "set context_window in \[price llama-\*\]" \
	"an image by URL on a model without context_window"
printf '{"model":"llama-3","input":"hi","previous_response_id":"resp_1"}' >"$T/prev.json"
st=$(kv_curl /v1/responses -o "$T/prev.out" -w '%{http_code}' -H "Authorization: Bearer $K" \
	--data-binary @"$T/prev.json")
check_eq "previous_response_id on a model without context_window: 400" "$st" 400
check "... naming the price key" grep -q context_window "$T/prev.out"
K3=sk-kvtest-adm-fetch-66
printf '{"model":"ctx-m","max_tokens":10,"tools":[{"type":"web_search_preview"}],"input":"q"}' >"$T/ws.json"
# a hosted tool without max_uses: 1 + [budget] max_tool_turns (10) turns of context_window
inflight ws "$K3" "$(cost 1100000 10)" "$T/ws.json"

# ---- 7. one credential ----------------------------------------------------------------

THROW=sk-kvtest-adm-throwaway REAL=sk-kvtest-adm-real-key
cred() {
	local desc=$1 o0 st
	shift
	o0=$(lines "$MOCK_LOG")
	st=$(kv_curl /v1/chat/completions -o "$T/cred.out" -w '%{http_code}' "$@" \
		-d '{"model":"gpt-4o-mini","max_tokens":5}')
	check_eq "$desc: 400" "$st" 400
	check_eq "... nothing forwarded" "$(lines "$MOCK_LOG")" "$o0"
}
cred "Bearer throwaway, x-api-key real, Connection: authorization" \
	-H "Authorization: Bearer $THROW" -H "x-api-key: $REAL" -H 'Connection: authorization'
cred "Authorization and x-api-key with different keys" \
	-H "Authorization: Bearer $THROW" -H "x-api-key: $REAL"
cred "two Authorization headers" -H "Authorization: Bearer $THROW" -H "Authorization: Bearer $REAL"
cred "two x-api-key headers" -H "x-api-key: $THROW" -H "x-api-key: $REAL"
cred "Connection naming content-length" -H "Authorization: Bearer $REAL" \
	-H 'Connection: keep-alive, Content-Length'
check_eq "neither key was charged (no account)" \
	"$(key_field "$(id_of "$THROW")" spent_nusd)/$(key_field "$(id_of "$REAL")" spent_nusd)" "none/none"
st=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $REAL" \
	-H "x-api-key: $REAL" -d '{"model":"gpt-4o-mini","max_tokens":5}')
check_eq "the same key in both headers is one credential: 200" "$st" 200

# ---- 8. usage is always asked for (issue 11) ----------------------------------------------

# gpt-4o-mini: 150 / 600 nUSD a token
mini() { echo $(($1 * 150 + $2 * 600)); }
i=0
for so in '"stream_options":{"include_usage":false}' \
    '"stream_options":{}' '"stream_options":{"include_obfuscation":false}' ''; do
	i=$((i + 1))
	K=sk-kvtest-adm-usage-$i
	body='{"model":"gpt-4o-mini","stream":true,'$so${so:+,}'"messages":[{"role":"user","content":"u"}]}'
	kv_curl /v1/chat/completions -o "$T/u$i.out" -H "Authorization: Bearer $K" \
		-H 'x-mock-tokens: 40' -d "$body"
	line=$(tail -n 1 "$MOCK_LOG")
	bb=$(sed -n 's/.* body_bytes=\([0-9]*\) .*/\1/p' <<<"$line")
	check "${so:-no stream_options}: usage asked for upstream" grep -q 'include_usage=1 stream_options=1' <<<"$line"
	check "... the client got no usage event and [DONE]" \
		bash -c "! grep -q '\"usage\":{' '$T/u$i.out' && grep -q '^data: \[DONE\]' '$T/u$i.out'"
	check "... charged the provider's 40 output tokens, not an estimate" \
		kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(mini $((bb / 4)) 40)"
done
check "the client's other stream_options members are kept" \
	grep -q 'so_keys=include_obfuscation,include_usage ' "$MOCK_LOG"
# one stream_options (issue 20); a null one is absent, as the providers
# read it (issue 33): it becomes the object usage is merged into
st=$(kv_curl /v1/chat/completions -o "$T/sonull.out" -w '%{http_code}' \
	-H "Authorization: Bearer sk-kvtest-adm-usage-null" \
	-d '{"model":"gpt-4o-mini","stream":true,"stream_options":null,"messages":[]}')
check_eq '"stream_options":null on a stream: 200' "$st" 200
check "... the provider got one stream_options member, asking usage" \
	grep -q 'include_usage=1 stream_options=1 .*so_keys=include_usage ' <<<"$(grep -v '^BILLED' "$MOCK_LOG" | tail -n 1)"
check "... the client got no usage event and [DONE]" \
	bash -c "! grep -q '\"usage\":{' '$T/sonull.out' && grep -q '^data: \[DONE\]' '$T/sonull.out'"
K=sk-kvtest-adm-usage-legacy
kv_curl /v1/completions -o "$T/legacy.out" -H "Authorization: Bearer $K" -H 'x-mock-tokens: 30' \
	-d '{"model":"gpt-4o-mini","prompt":"x","stream":true}'
line=$(tail -n 1 "$MOCK_LOG")
bb=$(sed -n 's/.* body_bytes=\([0-9]*\) .*/\1/p' <<<"$line")
check "a legacy /v1/completions stream asks for usage too" \
	grep -q '^POST /v1/completions .*include_usage=1' <<<"$line"
check "... the client got no usage event" bash -c "! grep -q '\"usage\":{' '$T/legacy.out'"
check "... charged exactly" kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd "$(mini $((bb / 4)) 30)"
K=sk-kvtest-adm-usage-asked
body='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}'
kv_curl /v1/chat/completions -o "$T/asked.out" -H "Authorization: Bearer $K" -d "$body"
check "a client that asked include_usage gets the usage event" grep -q '"usage":{' "$T/asked.out"
check "... and its body went up as sent" grep -q "body_bytes=${#body} " <(tail -n 1 "$MOCK_LOG")

# ---- 9. the spool: bounded, sent over TLS too, tmpfs warned about ----------------------

kv_start_mock_tls
SHM=
[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && SHM=$(mktemp -d /dev/shm/kv-adm.XXXXXX)
kv_stop
cp "$T/kilovolt.ini" "$T/kilovolt.ini.keep"
kv_write_config <<EOF
[server]
spool_max = 3m
${SHM:+spool_dir = $SHM}

[upstream tls]
url = https://localhost:$MOCK_TLS_PORT
ca_file = $KV_CERTS/ca.pem
paths = /tls-only
models = tlsm-*

[price tlsm-*]
input = 0.10
output = 1.00

[upstream local]
url = http://127.0.0.1:$LOCAL_PORT
paths = /local-only
models = llama-*

[price llama-*]
input = 0.10
output = 1.00
EOF
kv_start
if [ -n "$SHM" ]; then
	check "a spool_dir on tmpfs is warned about at start" grep -q 'KV0502.*tmpfs' "$KV_LOG"
fi
K=sk-kvtest-adm-tls-1
sdk_body "$T/tls.json" $P ',"model":"tlsm-1","max_tokens":20,"stream":true,"stream_options":{"include_obfuscation":false}'
TB=$(stat -c %s "$T/tls.json")
INJ=',"include_usage":true'
TB=$((TB + ${#INJ}))	# what the provider gets: merged into the client's object
kv_curl /v1/chat/completions -o "$T/tls.out" -H "Authorization: Bearer $K" \
	-H 'Transfer-Encoding: chunked' -H 'x-mock-tokens: 20' --data-binary @"$T/tls.json"
line=$(tail -n 1 "$MOCK_TLS_LOG")
check "a 2 MB chunked stream body went over TLS from the spool, usage added" \
	grep -q "include_usage=1 stream_options=1 body_bytes=$TB model=tlsm-1 max_tokens=20 n=1 so_keys=include_obfuscation,include_usage " <<<"$line"
check "... the client got no usage event" bash -c "! grep -q '\"usage\":{' '$T/tls.out'"
check "... charged exactly" kv_wait_for 10 key_field_is "$(id_of "$K")" spent_nusd \
	"$(cost $((TB / 4)) 20)"
# spool_max 3m: a 2 MB upload still arriving holds its 2 MB; a second is refused
K=sk-kvtest-adm-full-2
l0=$(lines "$LOCAL_LOG")
exec {up}<>/dev/tcp/127.0.0.1/"$KV_PORT"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n' "$K" "$B" >&"$up"
head -c $((B - 1)) "$T/sdk.json" >&"$up"
sleep 1
st=$(kv_curl /v1/chat/completions -D "$T/full.h" -o "$T/full.out" -w '%{http_code}' \
	-H "Authorization: Bearer $K" --data-binary @"$T/sdk.json")
check_eq "a body past the worker's spool_max: 503" "$st" 503
check "... with Retry-After" grep -qi '^retry-after: [0-9]' "$T/full.h"
head -c 1 <(tail -c 1 "$T/sdk.json") >&"$up"
lines_are() { [ "$(lines "$1")" = "$2" ]; }
check "... the first, once whole, is served" kv_wait_for 20 lines_are "$LOCAL_LOG" $((l0 + 1))
exec {up}>&-
st=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer $K" --data-binary @"$T/sdk.json")
check_eq "... and with the spool free again the next is 200" "$st" 200
kv_stop
[ -n "$SHM" ] && rm -rf "$SHM"
cp "$T/kilovolt.ini.keep" "$T/kilovolt.ini"
kv_start

# ---- 10. memory: 200 uploads of 4 MB hold what 200 of 4 KB hold ------------------------

# stalled SIZE: 200 connections each send a head for SIZE body bytes and
# all but the last byte, then wait; prints the process tree's PSS in kB.
stalled() {
	local size=$1 fds=() fd i kb pre='{"model":"llama-3","x":"'
	head -c $((size - 1 - ${#pre})) /dev/zero | tr '\0' s >"$T/stall.body"
	for ((i = 0; i < 200; i++)); do
		exec {fd}<>/dev/tcp/127.0.0.1/"$KV_PORT" || break
		printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-kvtest-adm-mem\r\nContent-Length: %d\r\n\r\n%s' "$size" "$pre" >&"$fd"
		cat "$T/stall.body" >&"$fd"
		fds+=("$fd")
	done
	sleep 2		# the gateway reads what was sent
	kb=$(kv_daemon_kb)
	for fd in "${fds[@]}"; do exec {fd}>&-; done
	echo "$kb"
}
# each on a fresh daemon, so neither inherits the other's heap
kv_stop; kv_start
small=$(stalled 4096)
kv_stop; kv_start
big=$(stalled $((4 * 1024 * 1024)))
echo "# PSS with 200 stalled uploads: 4 KB bodies ${small} kB, 4 MB bodies ${big} kB"
if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	echo "# ASan build (freed memory is quarantined): the PSS comparison is skipped"
else
	check "200 stalled 4 MB uploads: PSS ($big kB) within 2 MB of 4 KB ones ($small kB)" \
		test $((big - small)) -le 2048
fi
spool_fds() { local p; for p in $(pgrep -P "$KV_PID"); do ls -l "/proc/$p/fd"; done 2>/dev/null | grep -c "$T/spool"; }
check_eq "... and the spool files went when the uploads did" "$(kv_wait_for 10 test "$(spool_fds)" = 0; spool_fds)" 0

kv_finish
