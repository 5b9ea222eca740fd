#!/bin/bash
# The mock upstream itself, against curl and the official SDKs, no gateway:
# every other integration test trusts it to speak the providers' wire formats
# and to misbehave exactly as asked.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq perl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
kv_start_mock
M=http://127.0.0.1:$MOCK_PORT

# post PATH BODY [CURL ARGS]: the response body.
post() {
	local path=$1 body=$2
	shift 2
	curl -sS -m 10 "$M$path" -H 'content-type: application/json' -d "$body" "$@"
}

# jqe JSON EXPR: EXPR holds for JSON. jqs FILE EXPR: EXPR holds for the
# array of the JSON documents in FILE.
jqe() { printf '%s' "$1" | jq -e "$2" >/dev/null 2>&1; }
jqs() { jq -se "$2" "$1" >/dev/null; }

# sse_data: the data payloads of an SSE stream, one per line.
sse_data() { sed -n 's/^data: //p'; }

# chunk_events: check HTTP chunked framing where every chunk is exactly one
# SSE event; print the number of chunks.
chunk_events() {
	perl -e '
		local $/; my $s = <STDIN>; my $n = 0;
		for (;;) {
			$s =~ s/\A([0-9a-f]+)\r\n// or die "bad chunk-size line\n";
			my $len = hex $1;
			if ($len == 0) { $s eq "\r\n" or die "bad last chunk\n"; last }
			my $data = substr($s, 0, $len, "");
			length($data) == $len or die "short chunk\n";
			$s =~ s/\A\r\n// or die "no CRLF after chunk data\n";
			$data =~ /\A(event: [a-z_.]+\n)?data: [^\n]*\n\n\z/
				or die "chunk is not one SSE event: $data\n";
			$n++;
		}
		print "$n\n";'
}

# ---- JSON endpoints ------------------------------------------------------------

body='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello there"}]}'
r=$(post /v1/chat/completions "$body" -H 'x-mock-cached: 4' -H 'x-mock-tokens: 7')
check "chat: a chat.completion" jqe "$r" '.object == "chat.completion" and .choices[0].message.role == "assistant"'
check "chat: gpt-4o-mini answers as its dated version" jqe "$r" '.model == "gpt-4o-mini-2024-07-18"'
check "chat: prompt_tokens = body bytes / 4" jqe "$r" ".usage.prompt_tokens == $((${#body} / 4))"
check "chat: completion_tokens = x-mock-tokens" jqe "$r" '.usage.completion_tokens == 7 and .usage.total_tokens == .usage.prompt_tokens + 7'
check "chat: cached_tokens = x-mock-cached" jqe "$r" '.usage.prompt_tokens_details.cached_tokens == 4 and .usage.completion_tokens_details.reasoning_tokens == 0'
check "chat: the content is the tokens" jqe "$r" '.choices[0].message.content == "tok1 tok2 tok3 tok4 tok5 tok6 tok7 "'
r=$(post /v1/chat/completions '{"model":"my-model","max_tokens":3}' -H 'x-mock-token-bytes: 8')
check "chat: other models echoed as sent" jqe "$r" '.model == "my-model"'
check "chat: max_tokens cuts the output (finish_reason length)" jqe "$r" '.usage.completion_tokens == 3 and .choices[0].finish_reason == "length"'
check "chat: x-mock-token-bytes sizes each token" jqe "$r" '.choices[0].message.content == "tok1xxx tok2xxx tok3xxx "'

r=$(post /v1/completions '{"model":"gpt-3.5-turbo-instruct","prompt":"Hi"}')
check "completions: a text_completion with usage" jqe "$r" '.object == "text_completion" and .usage.completion_tokens == 5 and (.choices[0].text | length) == 25'
r=$(post /v1/embeddings '{"model":"text-embedding-3-small","input":"hi"}')
check "embeddings: a float vector and usage" jqe "$r" '(.data[0].embedding | length) == 8 and .usage.prompt_tokens == .usage.total_tokens and .usage.prompt_tokens > 0'
r=$(post /v1/embeddings '{"model":"text-embedding-3-small","input":"hi","encoding_format":"base64"}')
check "embeddings: base64 when asked (the SDK's default)" jqe "$r" '(.data[0].embedding | type) == "string"'
body='{"model":"gpt-4o-mini","input":"Hello"}'
r=$(post /v1/responses "$body" -H 'x-mock-cached: 2')
check "responses: a completed response with usage" jqe "$r" ".object == \"response\" and .status == \"completed\" and .usage.input_tokens == $((${#body} / 4)) and .usage.output_tokens == 5 and .usage.input_tokens_details.cached_tokens == 2 and .usage.output_tokens_details.reasoning_tokens == 0 and .usage.total_tokens == .usage.input_tokens + 5"
check "responses: output text" jqe "$r" '.output[0].content[0].text == "tok1 tok2 tok3 tok4 tok5 "'
r=$(curl -sS -m 10 "$M/v1/models")
check "models: a list" jqe "$r" '.object == "list" and ([.data[].id] | index("gpt-4o-mini")) != null'

body='{"model":"claude-sonnet-4","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}'
r=$(post /v1/messages "$body" -H 'x-mock-cached: 11' -H 'x-mock-cache-write: 13' -H 'x-mock-tokens: 6')
check "messages: an Anthropic message" jqe "$r" '.type == "message" and .role == "assistant" and .content[0].type == "text" and .stop_reason == "end_turn"'
check "messages: claude-sonnet-4 answers as its dated version" jqe "$r" '.model == "claude-sonnet-4-20250514"'
check "messages: usage with cache fields" jqe "$r" ".usage == {\"input_tokens\":$((${#body} / 4)),\"cache_creation_input_tokens\":13,\"cache_read_input_tokens\":11,\"output_tokens\":6}"
code=$(curl -sS -m 10 -o "$T/out" -w '%{http_code}' "$M/v1/messages" -d '{"model":"claude-sonnet-4"}')
check_eq "messages: max_tokens is required (400)" "$code" 400
check "messages: ... in Anthropic's error shape" jqe "$(cat "$T/out")" '.type == "error" and .error.type == "invalid_request_error"'

# ---- provider errors -------------------------------------------------------------

for st in 400 429 500; do
	code=$(curl -sS -m 10 -o "$T/out" -w '%{http_code}' "$M/v1/chat/completions" -d '{"model":"m"}' -H "x-mock-status: $st")
	check_eq "x-mock-status $st: OpenAI status" "$code" "$st"
	check "x-mock-status $st: OpenAI error shape" jqe "$(cat "$T/out")" '(.error | has("message") and has("type") and has("param") and has("code"))'
	code=$(curl -sS -m 10 -o "$T/out" -w '%{http_code}' "$M/v1/messages" -d '{"model":"m"}' -H "x-mock-status: $st")
	check_eq "x-mock-status $st: Anthropic status" "$code" "$st"
	check "x-mock-status $st: Anthropic error shape" jqe "$(cat "$T/out")" '.type == "error" and (.error.type | type) == "string" and (.error.message | type) == "string"'
done
r=$(post /v1/chat/completions '{"model":"m"}' -H 'x-mock-status: 429')
check "429 is rate_limit_exceeded" jqe "$r" '.error.code == "rate_limit_exceeded"'

# ---- SSE ----------------------------------------------------------------------------

curl -sS -m 10 --raw -D "$T/head" -o "$T/raw" "$M/v1/chat/completions" -d '{"model":"gpt-4o-mini","stream":true}' -H 'x-mock-tokens: 4'
check "chat stream: text/event-stream" grep -qi '^content-type: text/event-stream' "$T/head"
check "chat stream: chunked" grep -qi '^transfer-encoding: chunked' "$T/head"
n=$(chunk_events <"$T/raw")
check_eq "chat stream: one chunk per event (role, 4 tokens, finish, DONE)" "$n" 7
curl -sS -m 10 -o "$T/sse" "$M/v1/chat/completions" -d '{"model":"gpt-4o-mini","stream":true}' -H 'x-mock-tokens: 4'
sse_data <"$T/sse" | grep -v '^\[DONE\]$' >"$T/events"
check "chat stream: every event is a chunk object" jqs "$T/events" 'length == 6 and all(.[]; .object == "chat.completion.chunk" and .model == "gpt-4o-mini-2024-07-18")'
check "chat stream: no usage without include_usage" jqs "$T/events" 'all(.[]; has("usage") | not) and all(.[]; (.choices | length) == 1)'
check "chat stream: the deltas are the tokens" jqs "$T/events" '[.[].choices[0].delta.content // empty] | add == "tok1 tok2 tok3 tok4 "'
check "chat stream: ends with finish_reason stop, then [DONE]" jqs "$T/events" '.[-1].choices[0].finish_reason == "stop"'
check_eq "chat stream: [DONE] is the last data" "$(sse_data <"$T/sse" | tail -n 1)" "[DONE]"

body='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}'
curl -sS -m 10 -o "$T/sse" "$M/v1/chat/completions" -d "$body" -H 'x-mock-tokens: 4' -H 'x-mock-cached: 1'
sse_data <"$T/sse" | grep -v '^\[DONE\]$' >"$T/events"
check "include_usage: usage:null on every chunk before the last" jqs "$T/events" '.[:-1] | all(.[]; has("usage") and .usage == null)'
check "include_usage: last chunk has empty choices and usage" jqs "$T/events" ".[-1].choices == [] and .[-1].usage.prompt_tokens == $((${#body} / 4)) and .[-1].usage.completion_tokens == 4 and .[-1].usage.prompt_tokens_details.cached_tokens == 1"
check "include_usage: the mock's log says so" grep -q 'include_usage=1 stream_options=1' "$MOCK_LOG"
curl -sS -m 10 -o "$T/sse" "$M/v1/chat/completions" -d '{"model":"m","stream":true,"stream_options":{"include_usage":false}}'
check "include_usage false: no usage chunk" bash -c "! grep -q '\"usage\":{' '$T/sse'"

curl -sS -m 10 -o "$T/sse" "$M/v1/completions" -d '{"model":"gpt-3.5-turbo-instruct","prompt":"x","stream":true,"stream_options":{"include_usage":true}}' -H 'x-mock-tokens: 2'
sse_data <"$T/sse" | grep -v '^\[DONE\]$' >"$T/events"
check "completions stream: text chunks then usage" jqs "$T/events" '.[0].choices[0].text == "tok1 " and .[-1].choices == [] and .[-1].usage.completion_tokens == 2'

curl -sS -m 10 --raw -o "$T/raw" "$M/v1/responses" -d '{"model":"gpt-4o-mini","input":"x","stream":true}' -H 'x-mock-tokens: 3'
n=$(chunk_events <"$T/raw")
check_eq "responses stream: one chunk per event" "$n" 11
curl -sS -m 10 -o "$T/sse" "$M/v1/responses" -d '{"model":"gpt-4o-mini","input":"x","stream":true}' -H 'x-mock-tokens: 3'
want="response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"
check_eq "responses stream: the event sequence" "$(sed -n 's/^event: //p' "$T/sse" | tr '\n' ' ')" "$want "
sse_data <"$T/sse" >"$T/events"
check "responses stream: event and data type agree, sequence numbers count up" jqs "$T/events" '[.[].sequence_number] == [range(0; 11)] and .[-1].type == "response.completed"'
check "responses stream: response.completed carries usage" jqs "$T/events" '.[-1].response.usage.output_tokens == 3 and .[-1].response.usage.input_tokens > 0 and .[-1].response.usage.output_tokens_details.reasoning_tokens == 0 and .[-1].response.usage.input_tokens_details.cached_tokens == 0'
check "responses stream: no [DONE]" bash -c "! grep -q 'DONE' '$T/sse'"

body='{"model":"claude-sonnet-4","max_tokens":100,"stream":true,"messages":[]}'
curl -sS -m 10 --raw -o "$T/raw" "$M/v1/messages" -d "$body" -H 'x-mock-tokens: 3' -H 'x-mock-cached: 5' -H 'x-mock-cache-write: 6'
n=$(chunk_events <"$T/raw")
check_eq "messages stream: one chunk per event" "$n" 9
curl -sS -m 10 -o "$T/sse" "$M/v1/messages" -d "$body" -H 'x-mock-tokens: 3' -H 'x-mock-cached: 5' -H 'x-mock-cache-write: 6'
want="message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
check_eq "messages stream: the Anthropic event sequence" "$(sed -n 's/^event: //p' "$T/sse" | tr '\n' ' ')" "$want "
sse_data <"$T/sse" >"$T/events"
check "messages stream: message_start usage" jqs "$T/events" ".[0].message.usage == {\"input_tokens\":$((${#body} / 4)),\"cache_creation_input_tokens\":6,\"cache_read_input_tokens\":5,\"output_tokens\":1} and .[0].message.model == \"claude-sonnet-4-20250514\""
check "messages stream: message_delta output_tokens" jqs "$T/events" '[.[] | select(.type == "message_delta") | .usage.output_tokens] == [3]'
curl -sS -m 10 -o "$T/sse" "$M/v1/messages" -d "$body" -H 'x-mock-tokens: 8' -H 'x-mock-two-deltas: 1'
check "x-mock-two-deltas: two cumulative message_delta events" bash -c "sed -n 's/^data: //p' '$T/sse' | jq -se '[.[] | select(.type == \"message_delta\") | .usage.output_tokens] == [4, 8]' >/dev/null"

# ---- big streams, delays, failures ----------------------------------------------------

size=$(curl -sS -m 30 -o /dev/null -w '%{size_download}' "$M/v1/chat/completions" -d '{"model":"m","stream":true}' -H 'x-mock-tokens: 1024' -H 'x-mock-token-bytes: 4096')
check "a 4 MB stream (1024 tokens of 4096 bytes)" test "$size" -gt $((4 * 1024 * 1024))
start=$(date +%s%3N)
curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m","stream":true}' -H 'x-mock-tokens: 2' -H 'x-mock-delay-ms: 150'
took=$(($(date +%s%3N) - start))
check "x-mock-delay-ms 150 between 5 events takes >= 750 ms ($took ms)" test "$took" -ge 750
start=$(date +%s%3N)
curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m"}' -H 'x-mock-first-delay-ms: 400'
took=$(($(date +%s%3N) - start))
check "x-mock-first-delay-ms 400 ($took ms)" test "$took" -ge 400

curl -sS -m 10 -o "$T/out" "$M/v1/chat/completions" -d '{"model":"m","stream":true}' -H 'x-mock-fail: reset' -H 'x-mock-tokens: 10' 2>/dev/null
rc=$?
check "x-mock-fail reset: curl sees a reset mid-stream (exit $rc)" test "$rc" = 56 -o "$rc" = 18
check "x-mock-fail reset: after some events" grep -q 'tok2 ' "$T/out"
check "x-mock-fail reset: before the end" bash -c "! grep -q DONE '$T/out'"
curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m"}' -H 'x-mock-fail: garbage' 2>/dev/null
rc=$?
check "x-mock-fail garbage: not HTTP (curl exit $rc)" test "$rc" = 1 -o "$rc" = 8
curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m"}' -H 'x-mock-fail: close' 2>/dev/null
rc=$?
check_eq "x-mock-fail close: empty reply" "$rc" 52
aborted=$(kv_mock_stat aborted_streams)
curl -sS -m 1 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m"}' -H 'x-mock-fail: hang' 2>/dev/null
rc=$?
check_eq "x-mock-fail hang: no answer (curl timeout)" "$rc" 28
check "hang: the mock notices the peer leave" kv_wait_for 3 test "$(kv_mock_stat aborted_streams)" -gt "$aborted"

# The abort probe the gateway tests rely on: a client leaves a slow stream
# and the mock records when it noticed.
aborted=$(kv_mock_stat aborted_streams)
curl -sS -m 1 -o "$T/out" "$M/v1/chat/completions" -d '{"model":"m","stream":true}' -H 'x-mock-tokens: 50' -H 'x-mock-delay-ms: 200' 2>/dev/null
gone=$(date +%s%3N)
aborted_more() { [ "$(kv_mock_stat aborted_streams)" -gt "$aborted" ]; }
check "abort: aborted_streams counts the stream the client left" kv_wait_for 3 aborted_more
noticed=$(kv_mock_stat last_abort_ms)
lag=$((noticed - gone))
check "abort: noticed within 300 ms of the client leaving (lag $lag ms)" test "$lag" -gt -300 -a "$lag" -lt 300
check "abort: the client got some events first" grep -q 'tok1 ' "$T/out"

# ---- keep-alive, request bodies, blobs ------------------------------------------------

curl -sS -m 10 -v -o /dev/null -o /dev/null "$M/v1/models" "$M/v1/models" 2>"$T/verbose"
check "keep-alive: curl reuses the connection" grep -qi 're-using existing connection' "$T/verbose"
curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"m"}' -H 'Connection: close' -D "$T/head"
check "Connection: close is answered with close" grep -qi '^connection: close' "$T/head"
# a pipelined pair on one connection
printf 'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"model":"m"}' |
	timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$MOCK_PORT; cat >&3; cat <&3" >"$T/out"
check_eq "pipelined requests: two responses" "$(grep -o 'HTTP/1.1 200 OK' "$T/out" | wc -l)" 2

for framing in "" "&chunked=1" "&close=1"; do
	curl -sS -m 30 -D "$T/head" -o "$T/blob" "$M/blob?bytes=3000001&seed=42$framing"
	sum=$(sha256sum "$T/blob" | cut -d' ' -f1)
	hdr=$(sed -n 's/^x-body-sha256: \([0-9a-f]*\).*/\1/p' "$T/head")
	check "blob$framing: x-body-sha256 matches the bytes" test "$sum" = "$hdr" -a "$(stat -c %s "$T/blob")" = 3000001
done
check "blob: chunked when asked" grep -qi '^transfer-encoding: chunked' <(curl -sS -m 10 -D - -o /dev/null "$M/blob?bytes=10&chunked=1")
check "blob: close-delimited when asked" bash -c "! curl -sS -m 10 -D - -o /dev/null '$M/blob?bytes=10&close=1' | grep -qi '^content-length'"
other=$(curl -sS -m 10 -D - -o /dev/null "$M/blob?bytes=1000&seed=43" | sed -n 's/^x-body-sha256: \([0-9a-f]*\).*/\1/p')
same=$(curl -sS -m 10 -D - -o /dev/null "$M/blob?bytes=1000&seed=42" | sed -n 's/^x-body-sha256: \([0-9a-f]*\).*/\1/p')
check "blob: the seed picks the bytes" test "$other" != "$same"

r=$(curl -sS -m 30 "$M/sink" --data-binary @"$T/blob")
check "sink: length and sha256 of a 3 MB body" jqe "$r" ".bytes == 3000001 and .sha256 == \"$sum\""
r=$(curl -sS -m 30 "$M/sink" -H 'Transfer-Encoding: chunked' --data-binary @"$T/blob")
check "sink: the same body chunked" jqe "$r" ".bytes == 3000001 and .sha256 == \"$sum\""
r=$(curl -sS -m 10 "$M/sink" -d '' )
check "sink: an empty body" jqe "$r" '.bytes == 0 and .sha256 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"'

# ---- the request log ------------------------------------------------------------------

curl -sS -m 10 -o /dev/null "$M/v1/chat/completions" -d '{"model":"logged-model"}' -H 'Host: api.example.com' -H 'Authorization: Bearer sk-log-test' -H 'X-Custom-Hop: 1'
line=$(grep 'model=logged-model' "$MOCK_LOG")
key_id=$(printf '%s' sk-log-test | sha256sum | cut -c1-12)
check "log: method and path" grep -q '^POST /v1/chat/completions ' <<<"$line"
check "log: the Host header" grep -q ' host=api.example.com ' <<<"$line"
check "log: auth is the key's id (sha256, 12 hex)" grep -q " auth=$key_id " <<<"$line"
check "log: body_bytes" grep -q ' body_bytes=24 ' <<<"$line"
check "log: header names" grep -q 'headers=.*X-Custom-Hop' <<<"$line"
curl -sS -m 10 -o /dev/null "$M/v1/messages" -d '{"model":"logged-anthropic","max_tokens":1}' -H 'x-api-key: sk-ant-log'
key_id=$(printf '%s' sk-ant-log | sha256sum | cut -c1-12)
check "log: x-api-key is hashed the same way" grep -q "auth=$key_id .*model=logged-anthropic" "$MOCK_LOG"
r=$(curl -sS -m 10 "$M/mock/stats")
check "stats: counters" jqe "$r" '.requests > 50 and .open_connections >= 1 and .aborted_streams >= 2 and .last_abort_ms > 1700000000000'

# ---- 1,200 concurrent connections -------------------------------------------------------

N=1200
ulimit -n 4096 2>/dev/null
if [ "$(ulimit -n)" -lt $((N + 100)) ]; then
	echo "# (skipping the $N-connection check: ulimit -n is $(ulimit -n))"
else
	fds=()
	for ((i = 0; i < N; i++)); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$MOCK_PORT" || break
		fds+=("$fd")
	done
	check_eq "$N connections opened" "${#fds[@]}" "$N"
	all_open() { [ "$(kv_mock_stat open_connections)" -ge "$N" ]; }
	check "the mock holds $N connections at once" kv_wait_for 10 all_open
	for fd in "${fds[@]}"; do
		printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"model":"m"}' >&"$fd"
	done
	ok=0
	for fd in "${fds[@]}"; do
		read -r -t 10 status <&"$fd" && [[ $status == "HTTP/1.1 200 OK"* ]] && ok=$((ok + 1))
		exec {fd}<&-
	done
	check_eq "every one of the $N got its answer" "$ok" "$N"
	few_open() { [ "$(kv_mock_stat open_connections)" -le 5 ]; }
	check "... and the mock let them all go" kv_wait_for 10 few_open
fi

# ---- TLS ----------------------------------------------------------------------------------

kv_start_mock_tls server
S=https://localhost:$MOCK_TLS_PORT
r=$(curl -sS -m 10 --cacert "$KV_CERTS/ca.pem" "$S/v1/chat/completions" -d '{"model":"gpt-4o-mini"}')
check "TLS: chat over the CA-verified chain (localhost)" jqe "$r" '.usage.completion_tokens == 5'
curl -sS -m 10 --cacert "$KV_CERTS/ca.pem" --raw -o "$T/raw" "https://127.0.0.1:$MOCK_TLS_PORT/v1/messages" -d '{"model":"claude-sonnet-4","max_tokens":9,"stream":true}'
check_eq "TLS: SSE framing by IP address (SAN IP:127.0.0.1)" "$(chunk_events <"$T/raw")" 11
r=$(curl -sS -m 30 --cacert "$KV_CERTS/ca.pem" "$S/sink" --data-binary @"$T/blob")
check "TLS: sink a 3 MB body" jqe "$r" ".sha256 == \"$sum\""
curl -sS -m 10 -o /dev/null "$S/v1/models" 2>/dev/null
check_eq "TLS: refused without the test CA" "$?" 60
curl -sS -m 10 -o /dev/null --cacert "$KV_CERTS/ca.pem" --resolve "wrong.example:$MOCK_TLS_PORT:127.0.0.1" "https://wrong.example:$MOCK_TLS_PORT/v1/models" 2>/dev/null
rc=$?
check "TLS: a name the certificate lacks is refused (curl exit $rc)" test "$rc" = 60 -o "$rc" = 51
kv_start_mock_tls wrong
curl -sS -m 10 -o /dev/null --cacert "$KV_CERTS/ca.pem" "https://localhost:$MOCK_TLS_PORT/v1/models" 2>/dev/null
rc=$?
check "TLS: the wrong.example leaf is refused for localhost (curl exit $rc)" test "$rc" = 60 -o "$rc" = 51
curl -sS -m 10 -o /dev/null --cacert "$KV_CERTS/ca.pem" --resolve "wrong.example:$MOCK_TLS_PORT:127.0.0.1" "https://wrong.example:$MOCK_TLS_PORT/v1/models"
check_eq "TLS: ... and accepted for wrong.example" "$?" 0
kv_start_mock_tls self
curl -sS -m 10 -o /dev/null --cacert "$KV_CERTS/ca.pem" "https://localhost:$MOCK_TLS_PORT/v1/models" 2>/dev/null
check_eq "TLS: a self-signed leaf is refused" "$?" 60

# ---- the official SDKs --------------------------------------------------------------------

# sdk SCRIPT ARGS: run one SDK test, its lines indented under ours.
sdk() {
	node "$KV_SDK/$1" "${@:2}" 2>&1 | sed 's/^/    /'
	return "${PIPESTATUS[0]}"
}
if kv_sdk_setup; then
	check "openai SDK against the mock" sdk openai_test.mjs "$M" sk-test-openai
	check "anthropic SDK against the mock" sdk anthropic_test.mjs "$M" sk-test-anthropic
else
	echo "# (the SDK checks need node and npm)"
fi

kv_finish
