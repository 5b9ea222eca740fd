#!/bin/bash
# The relay through the real daemon: the bytes a client gets through kilovolt
# are the bytes it would get from the provider directly (JSON, SSE, Anthropic
# SSE, 50 MB bodies both ways), keep-alive on both legs, the header rewrite
# (Host, hop-by-hop, virtual keys, x-kilovolt-*), and the gateway's own
# answers (401, 404, 100-continue, HTTP/1.0).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq sha256sum ss; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

kv_start_mock
M=http://127.0.0.1:$MOCK_PORT
# A mock of its own for the pool test: every connection to it is that
# upstream's, whatever the other upstreams keep pooled.
kv__mock mock-pool || { fail "start the pool's mock_upstream"; kv_finish; }
POOL_PORT=$KV__PORT
KEY=sk-relay-test-key
KEYID=$(printf '%s' "$KEY" | sha256sum | cut -c1-12)
UPSTREAM_KEY=sk-provider-secret
export UPSTREAM_KEY
UPID=$(printf '%s' "$UPSTREAM_KEY" | sha256sum | cut -c1-12)

# Anthropic traffic goes through a virtual key; OpenAI's is passed through;
# /sink and /blob reach the mock's test helpers.
kv_write_config <<EOF
[upstream anthropic]
api_key = env:UPSTREAM_KEY

; virtual keys admit only configured keys (issue 20)
[key relay]
key = $KEY

[upstream files]
url = $M
free_paths = /sink /blob

[upstream pool]
url = http://127.0.0.1:$POOL_PORT
models = pool-*
EOF
kv_start
AUTH=(-H "Authorization: Bearer $KEY")

# jqf EXPR FILE: EXPR holds for the JSON in FILE.
jqf() { jq -e "$1" "$2" >/dev/null; }

# norm: the response with its timestamps zeroed (the mock stamps "created"
# with the current second, so two fetches may differ there and only there).
norm() { sed -E 's/"(created|created_at)":[0-9]+/"\1":0/g' "$@"; }

# same DESC PATH BODY [CURL ARGS]: the body through the gateway equals the
# body straight from the mock, timestamps aside.
same() {
	local desc=$1 path=$2 body=$3
	shift 3
	rm -f "$T/direct" "$T/relayed"	# a failed fetch must not pass on old bytes
	curl -sS -m 30 -o "$T/direct" "$M$path" -d "$body" "$@"
	kv_curl "$path" -o "$T/relayed" -d "$body" "${AUTH[@]}" "$@"
	if [ -s "$T/direct" ] && cmp -s <(norm "$T/direct") <(norm "$T/relayed"); then
		pass "$desc"
	else
		fail "$desc"
		diff <(norm "$T/direct") <(norm "$T/relayed") | head -n 10
	fi
}

# ---- byte-identical relay ----------------------------------------------------

same "chat JSON relayed byte for byte" /v1/chat/completions \
	'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}' -H 'x-mock-tokens: 9'
same "embeddings JSON relayed byte for byte" /v1/embeddings \
	'{"model":"text-embedding-3-small","input":"hello"}'
same "chat SSE with include_usage relayed byte for byte" /v1/chat/completions \
	'{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-mock-tokens: 12'
same "responses SSE relayed byte for byte" /v1/responses \
	'{"model":"gpt-4o-mini","input":"x","stream":true}' -H 'x-mock-tokens: 5'
same "Anthropic JSON relayed byte for byte" /v1/messages \
	'{"model":"claude-sonnet-4","max_tokens":50,"messages":[]}' -H 'x-mock-tokens: 4'
same "Anthropic SSE relayed byte for byte" /v1/messages \
	'{"model":"claude-sonnet-4","max_tokens":50,"stream":true,"messages":[]}' \
	-H 'x-mock-tokens: 7' -H 'x-mock-cached: 3' -H 'x-mock-two-deltas: 1'

# Without include_usage the gateway asks for usage upstream and removes it
# again: the client gets what the mock sends a request without it.
body='{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}'
same "chat SSE without include_usage: the injected usage is removed" \
	/v1/chat/completions "$body" -H 'x-mock-tokens: 10'
check "... the mock was asked for usage (injected upstream)" \
	grep -q "^POST /v1/chat/completions .*include_usage=1 stream_options=1" "$MOCK_LOG"
check "... no usage and no \"usage\":null reached the client" \
	bash -c "! grep -q usage '$T/relayed'"
check "... the stream ends with [DONE]" bash -c "tail -n 2 '$T/relayed' | grep -qx 'data: \\[DONE\\]'"
line() { grep '\[access\].* POST /v1/chat/completions ' "$KV_LOG" | tail -n 1; }
has_usage() { line | grep -E -q 'status=200 .* tokens=[1-9][0-9]*/10 cost=\$[0-9.]+$'; }
check "... and charged the provider's own usage (10 tokens, not an estimate)" \
	kv_wait_for 10 has_usage

# ---- keep-alive on both legs ------------------------------------------------

url=$KV_URL/v1/chat/completions
curl -sv -m 30 "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' -o /dev/null "$url" \
	--next "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' -o /dev/null "$url" \
	--next "${AUTH[@]}" -d '{"model":"gpt-4o-mini","stream":true}' -o /dev/null "$url" \
	2>"$T/verbose"
check_eq "client keep-alive: three requests on one connection" \
	"$(grep -c 'Re-using existing connection' "$T/verbose")" 2

kv_check_pool "upstream pool" "$POOL_PORT" pool-1
check_eq "upstream pool: the mock saw the 12 requests" "$(kv_mock_stat requests "$POOL_PORT")" 13

# One client connection, several upstreams: each request finds its own
# upstream's pooled connection, and one the server closed after answering
# (without saying so) is not used again: the liveness check sees the close
# before any byte is written (a request is never sent twice).
: >"$T/verbose"
curl -sv -m 30 "${AUTH[@]}" -d '{"model":"pool-1"}' -o "$T/k1" -w '%{http_code} ' "$url" \
	--next "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' -o "$T/k2" -w '%{http_code} ' "$url" \
	--next "${AUTH[@]}" -d '{"model":"pool-1"}' -H 'x-mock-silent-close: 1' -o "$T/k3" \
		-w '%{http_code} ' "$url" \
	--next "${AUTH[@]}" -d '{"model":"pool-1"}' -o "$T/k4" -w '%{http_code} ' "$url" \
	--next "${AUTH[@]}" -d '{"model":"pool-1"}' -o "$T/k5" -w '%{http_code}' "$url" \
	>"$T/codes" 2>"$T/verbose"
check_eq "one client connection across two upstreams and a silent upstream close: all 200" \
	"$(cat "$T/codes")" "200 200 200 200 200"
check_eq "... on one client connection" "$(grep -c 'Re-using existing connection' "$T/verbose")" 4
check_eq "... each answer for its own model" \
	"$(cat "$T/k1" "$T/k2" "$T/k3" "$T/k4" "$T/k5" | grep -o '"model":"[^"]*"' | tr '\n' ' ')" \
	'"model":"pool-1" "model":"gpt-4o-mini-2024-07-18" "model":"pool-1" "model":"pool-1" "model":"pool-1" '

# A pooled connection the server closes while it waits in the pool leaves
# the pool by its epoll event, before any request takes it (no request is
# sent on it, none is sent twice): kilovolt keeps no half-closed
# (CLOSE-WAIT) connection to the server, and the next request is answered.
no_close_wait() { [ "$(ss -Htn state close-wait "( dport = :$POOL_PORT )" | grep -c .)" = 0 ]; }
n0=$(kv_mock_stat requests "$POOL_PORT")
code=$(kv_curl /v1/chat/completions "${AUTH[@]}" -d '{"model":"pool-1"}' \
	-H 'x-mock-silent-close: 1' -o /dev/null -w '%{http_code}')
check_eq "an answer after which the server closes the connection: 200" "$code" 200
check "... its pooled connection is closed by the server's event, not left in CLOSE-WAIT" \
	kv_wait_for 10 no_close_wait
code=$(kv_curl /v1/chat/completions "${AUTH[@]}" -d '{"model":"pool-1"}' -o /dev/null \
	-w '%{http_code}')
check_eq "... the next request to that upstream: 200" "$code" 200
check_eq "... the server saw each of the two once (and this stats request)" \
	"$(kv_mock_stat requests "$POOL_PORT")" $((n0 + 3))

# ---- 50 MB each way ------------------------------------------------------------

head -c 50000000 /dev/urandom >"$T/big"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
rm -f "$T/sink.json"
kv_curl /sink "${AUTH[@]}" -m 120 --data-binary @"$T/big" -o "$T/sink.json"
check_eq "50 MB request body (Content-Length) arrives intact" \
	"$(jq -r .sha256 "$T/sink.json" 2>/dev/null)" "$want"
rm -f "$T/sink.json"
kv_curl /sink "${AUTH[@]}" -m 120 -H 'Transfer-Encoding: chunked' --data-binary @"$T/big" \
	-o "$T/sink.json"
check_eq "50 MB request body (chunked) arrives intact" \
	"$(jq -r '"\(.bytes) \(.sha256)"' "$T/sink.json" 2>/dev/null)" "50000000 $want"
rm -f "$T/big"

bytes=52428800
for variant in "" "&chunked=1" "&close=1"; do
	q="bytes=$bytes&seed=42$variant"
	rm -f "$T/blob.head"
	want=$(curl -sS -m 120 "$M/blob?$q" | sha256sum | cut -d' ' -f1)
	got=$(kv_curl "/blob?$q" -m 120 "${AUTH[@]}" -D "$T/blob.head" | sha256sum | cut -d' ' -f1)
	check_eq "50 MB response (${variant:-&content-length}) relayed intact" "$got" "$want"
	check_eq "... and its sha256 is the one the mock announced" "$got" \
		"$(sed -n 's/^x-body-sha256: \([0-9a-f]*\).*/\1/ip' "$T/blob.head")"
done

# A client that falls behind: it reads nothing for a moment, so the gateway
# reads the whole response from the upstream while the last bytes wait in the
# splice pipe behind a full client socket; they must leave once the client
# reads (CI caught them stranded there until the client gave up). That
# happens when the body is a little larger than the gateway's socket send
# buffer, which grows to tcp_wmem's maximum: sizes around it are tried.
RAW=$top_builddir/tests/rawclient
wmem=$(awk '{print int($3 / 1024)}' /proc/sys/net/ipv4/tcp_wmem 2>/dev/null)
[ -n "$wmem" ] && [ "$wmem" -gt 0 ] || wmem=4096
behind=none
for kb in $(seq $((wmem - 384)) 16 $((wmem + 128))); do
	q="bytes=$((kb * 1024))&seed=7"
	printf 'GET /blob?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' \
		"$q" "$KEY" >"$T/slow.req"
	"$RAW" -t 30 -p 100 -r 4096 "$KV_PORT" "$T/slow.req" >"$T/slow.out" 2>"$T/slow.err"
	got=$(sed '1,/^\r$/d' "$T/slow.out" | sha256sum | cut -d' ' -f1)
	want=$(curl -sS -m 60 "$M/blob?$q" | sha256sum | cut -d' ' -f1)
	if [ "$got" != "$want" ] || ! grep -q 'end=eof' "$T/slow.err"; then
		behind="$kb KiB: $(tail -n 1 "$T/slow.err")"
		break
	fi
done
check_eq "responses around the send buffer's size reach a client that fell behind" \
	"$behind" none

# ---- headers --------------------------------------------------------------------

: >"$MOCK_LOG"
kv_curl /v1/chat/completions -o /dev/null "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' \
	-H 'Connection: keep-alive, X-Hop-Private' -H 'X-Hop-Private: 1' \
	-H 'Keep-Alive: timeout=5' -H 'TE: trailers' -H 'Upgrade: h2c' \
	-H 'Proxy-Authorization: Basic eDp5' -H 'Proxy-Connection: keep-alive' \
	-H 'X-End-To-End: 1'
line=$(grep '^POST /v1/chat/completions' "$MOCK_LOG" | tail -n 1)
check "Host is rewritten to the upstream's" grep -q "host=127.0.0.1:$MOCK_PORT " <<<"$line"
hdrs=",$(sed 's/.* headers=//' <<<"$line" | tr 'A-Z' 'a-z'),"
for h in x-hop-private keep-alive te upgrade proxy-authorization proxy-connection; do
	check "hop-by-hop $h is not forwarded" bash -c "[[ '$hdrs' != *,$h,* ]]"
done
check "an end-to-end header is forwarded" bash -c "[[ '$hdrs' == *,x-end-to-end,* ]]"
check "the client's own key passes through (no api_key upstream)" \
	grep -q " auth=$KEYID " <<<"$line"

# has_kv_headers HEADFILE: both x-kilovolt headers, the key id, 6 decimals.
has_kv_headers() {
	grep -qi "^x-kilovolt-key: $KEYID"$'\r'"\$" "$1" &&
		grep -qiE '^x-kilovolt-budget-remaining: -?[0-9]+\.[0-9]{6}'$'\r''$' "$1"
}
rm -f "$T/h1"
kv_curl /v1/chat/completions -o /dev/null -D "$T/h1" "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}'
check "x-kilovolt-* on a JSON response" has_kv_headers "$T/h1"
rm -f "$T/h1"
kv_curl /v1/messages -o /dev/null -D "$T/h1" "${AUTH[@]}" \
	-d '{"model":"claude-sonnet-4","max_tokens":5,"stream":true}'
check "x-kilovolt-* on an SSE response" has_kv_headers "$T/h1"
rm -f "$T/h1"
kv_curl /v1/chat/completions -o /dev/null -D "$T/h1" "${AUTH[@]}" -d '{"model":"m"}' \
	-H 'x-mock-status: 429'
check "x-kilovolt-* on an upstream error" has_kv_headers "$T/h1"
rm -f "$T/h1"
kv_curl "/blob?bytes=10" -o /dev/null -D "$T/h1" "${AUTH[@]}"
check "x-kilovolt-* on a spliced response" has_kv_headers "$T/h1"
rm -f "$T/h1"
kv_curl /v1/models -o /dev/null -D "$T/h1" "${AUTH[@]}"
check "x-kilovolt-* on GET /v1/models" has_kv_headers "$T/h1"

# ---- virtual keys -----------------------------------------------------------------

: >"$MOCK_LOG"
body='{"model":"claude-sonnet-4","max_tokens":5,"messages":[]}'
code=$(kv_curl /v1/messages -o /dev/null -w '%{http_code}' "${AUTH[@]}" -d "$body")
check_eq "virtual key (Authorization): 200" "$code" 200
line=$(tail -n 1 "$MOCK_LOG")
check "... the mock saw the provider key, not the client's" grep -q " auth=$UPID " <<<"$line"
hdrs=",$(sed 's/.* headers=//' <<<"$line" | tr 'A-Z' 'a-z'),"
check "... in Authorization, as the client sent it" \
	bash -c "[[ '$hdrs' == *,authorization,* && '$hdrs' != *,x-api-key,* ]]"
code=$(kv_curl /v1/messages -o /dev/null -w '%{http_code}' -H "x-api-key: $KEY" -d "$body")
check_eq "virtual key (x-api-key): 200" "$code" 200
line=$(tail -n 1 "$MOCK_LOG")
check "... the mock saw the provider key" grep -q " auth=$UPID " <<<"$line"
hdrs=",$(sed 's/.* headers=//' <<<"$line" | tr 'A-Z' 'a-z'),"
check "... in x-api-key, as the client sent it" \
	bash -c "[[ '$hdrs' == *,x-api-key,* && '$hdrs' != *,authorization,* ]]"
check "the client's key never reached the mock" bash -c "! grep -q 'auth=$KEYID' '$MOCK_LOG'"

# ---- the gateway's own answers ------------------------------------------------------

rm -f "$T/out"
code=$(kv_curl /v1/chat/completions -o "$T/out" -w '%{http_code}' -d '{"model":"gpt-4o-mini"}')
check_eq "no credential on /v1/chat/completions: 401" "$code" 401
check "... in OpenAI's error shape" jqf '.error.message and (.error | has("type"))' "$T/out"
rm -f "$T/out"
code=$(kv_curl /v1/messages -o "$T/out" -w '%{http_code}' -d '{"model":"claude-sonnet-4"}')
check_eq "no credential on /v1/messages: 401" "$code" 401
check "... in Anthropic's error shape" \
	jqf '.type == "error" and (.error.type | type) == "string" and (.error.message | type) == "string"' "$T/out"
n=$(kv_mock_stat requests)
code=$(kv_curl /v2/nothing/here -o /dev/null -w '%{http_code}' "${AUTH[@]}" -d '{}')
check_eq "unknown path: 404" "$code" 404
check_eq "... and nothing went upstream" "$(kv_mock_stat requests)" $((n + 1))

head -c 200000 /dev/zero | tr '\0' 'a' >"$T/pad"
printf '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"%s"}]}' "$(cat "$T/pad")" >"$T/expect.json"
out=$(kv_curl /v1/chat/completions "${AUTH[@]}" -H 'Expect: 100-continue' \
	--expect100-timeout 20 --data-binary @"$T/expect.json" -o /dev/null -v \
	-w '%{http_code} %{time_total}' 2>"$T/verbose")
check_eq "Expect: 100-continue: 200" "${out% *}" 200
check "... the gateway said 100 Continue" grep -q '< HTTP/1.1 100 Continue' "$T/verbose"
check "... without making the client wait for its timeout (${out#* } s)" \
	awk -v t="${out#* }" 'BEGIN { exit !(t < 15) }'
check "... and the body reached the mock whole" \
	grep -q "body_bytes=$(stat -c %s "$T/expect.json") " "$MOCK_LOG"

body='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}'
rm -f "$T/direct" "$T/relayed" "$T/h10"
curl -sS -m 30 -o "$T/direct" "$M/v1/chat/completions" -d "$body" -H 'x-mock-tokens: 6'
kv_curl /v1/chat/completions --http1.0 --raw -D "$T/h10" -o "$T/relayed" "${AUTH[@]}" \
	-d "$body" -H 'x-mock-tokens: 6'
check "HTTP/1.0 client: the status line answers" grep -q '^HTTP/1\.[01] 200' "$T/h10"
check "... no chunked framing in the head" bash -c "! grep -qi '^transfer-encoding' '$T/h10'"
check "... the body is the plain SSE stream (no chunk sizes)" \
	cmp -s <(norm "$T/direct") <(norm "$T/relayed")
rm -f "$T/relayed" "$T/h10"
kv_curl /v1/chat/completions --http1.0 -D "$T/h10" -o "$T/relayed" "${AUTH[@]}" \
	-d '{"model":"gpt-4o-mini"}'
check "HTTP/1.0 JSON: 200 with its body" bash -c \
	"grep -q '^HTTP/1\.[01] 200' '$T/h10' && jq -e '.object == \"chat.completion\"' '$T/relayed' >/dev/null"

body='{"model":"gpt-4o-mini","stream":true,"messages":[]}'
rm -f "$T/direct" "$T/relayed" "$T/h10"
curl -sS -m 30 -o "$T/direct" "$M/v1/chat/completions" -d "$body" -H 'x-mock-tokens: 6'
kv_curl /v1/chat/completions --http1.0 --raw -D "$T/h10" -o "$T/relayed" "${AUTH[@]}" \
	-d "$body" -H 'x-mock-tokens: 6'
check "HTTP/1.0 client, usage injected and removed: the mock's plain SSE bytes" \
	cmp -s <(norm "$T/direct") <(norm "$T/relayed")
check "... no chunked framing in the head" bash -c "! grep -qi '^transfer-encoding' '$T/h10'"
rm -f "$T/h10"
got=$(kv_curl "/blob?bytes=5000000&seed=9&chunked=1" --http1.0 --raw -D "$T/h10" "${AUTH[@]}" |
	sha256sum | cut -d' ' -f1)
check_eq "HTTP/1.0 client, 5 MB chunked upstream body: de-chunked intact" "$got" \
	"$(sed -n 's/^x-body-sha256: \([0-9a-f]*\).*/\1/ip' "$T/h10")"
check "... and ended by closing (Connection: close, no chunked)" bash -c \
	"grep -qi '^connection: close' '$T/h10' && ! grep -qi '^transfer-encoding' '$T/h10'"
curl -sv -m 30 --http1.0 -H 'Connection: keep-alive' "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' \
	-o /dev/null "$url" --next --http1.0 -H 'Connection: keep-alive' "${AUTH[@]}" \
	-d '{"model":"gpt-4o-mini"}' -o /dev/null "$url" 2>"$T/verbose"
check "HTTP/1.0 keep-alive client: the gateway keeps the connection" \
	grep -q 'Re-using existing connection' "$T/verbose"

# Two pipelined requests in one write: both answered, in order.
b='{"model":"gpt-4o-mini"}' e='{"model":"text-embedding-3-small","input":"a"}'
rm -f "$T/pipe"
if exec 3<>"/dev/tcp/127.0.0.1/$KV_PORT"; then
	printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%sPOST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
		"$KEY" ${#b} "$b" "$KEY" ${#e} "$e" >&3
	timeout 30 cat <&3 >"$T/pipe"
	exec 3<&-
fi
check_eq "pipelined requests: two responses" "$(grep -a -o 'HTTP/1.1 200 OK' "$T/pipe" | wc -l)" 2
check_eq "... in order" "$(grep -a -o '"object":"\(chat.completion\|list\)"' "$T/pipe" | tr '\n' ' ')" \
	'"object":"chat.completion" "object":"list" '

# The next request arriving while the first's response is pending (the
# upstream takes 400 ms): the gateway stops listening to the client while it
# waits, answers the first, then reads and answers the second. The second
# request trickles in one byte every 5 ms, so the client wakes the gateway
# many times during the wait.
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nx-mock-first-delay-ms: 400\r\nContent-Length: %d\r\n\r\n' \
	"$KEY" ${#b} >"$T/early.req"
printf '%sPOST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
	"$b" "$KEY" ${#e} "$e" >>"$T/early.req"
"$top_builddir/tests/rawclient" -t 30 -d 5 "$KV_PORT" "$T/early.req" >"$T/early.out" 2>"$T/early.err"
check_eq "a request sent while the previous response is pending: two responses, in order" \
	"$(grep -a -o '"object":"\(chat.completion\|list\)"' "$T/early.out" | tr '\n' ' ')" \
	'"object":"chat.completion" "object":"list" '
check "... and the gateway closed the connection after the second" grep -q 'end=eof' "$T/early.err"

# The head is parsed into the worker's one scratch struct; a request whose
# body is still coming in when another connection's head is parsed must go
# upstream with its own headers (request_send.c parses it again unless
# nothing was parsed since). A trickles its body one byte every 5 ms, B is
# sent whole meanwhile; each arrives at the mock with its own header.
: >"$MOCK_LOG"
pad=$(printf '%400s' '')
ab="{\"model\":\"gpt-4o-mini\",\"messages\":[]$pad}"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Slow-A: 1\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
	"$KEY" ${#ab} "$ab" >"$T/slow.req"
"$top_builddir/tests/rawclient" -t 30 -d 5 "$KV_PORT" "$T/slow.req" >"$T/slow.out" 2>"$T/slow.err" &
slow_pid=$!
kv_track "$slow_pid"
sleep 1.5
code=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H 'X-Fast-B: 1' \
	-d '{"model":"gpt-4o-mini","messages":[]}')
wait "$slow_pid"
check_eq "a request sent whole while another's body trickles in: 200" "$code" 200
check "... the trickled one answered 200" grep -aq 'HTTP/1.1 200' "$T/slow.out"
check_eq "... each went upstream once with its own headers" \
	"$(grep -ci 'x-slow-a' "$MOCK_LOG") $(grep -ci 'x-fast-b' "$MOCK_LOG") $(grep -i 'x-slow-a' "$MOCK_LOG" | grep -ci 'x-fast-b')" "1 1 0"

kv_finish
