#!/bin/bash
# t_routing: what a client meets at the edges of routing. An HTTP/2 client
# with prior knowledge gets 505 and a message, and the log says HTTP/1.1 is
# required; a 404 for an unrouted path names the path; on a path both
# providers serve (/v1/models), a client of the Anthropic API (it sends
# anthropic-version or x-api-key) goes to the upstream serving /v1/messages;
# a Bedrock path with no bedrock upstream gets a 404 that says so.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"
RAW=$top_builddir/tests/rawclient

kv_start_mock
kv_write_config <<EOF
[server]
request_log = $T/requests.log
EOF
kv_start

# ---- HTTP/2 prior knowledge ---------------------------------------------------
n0=$(kv_mock_stat requests)	# kv_start's own probe
printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' >"$T/preface"
"$RAW" -t 5 "$KV_PORT" "$T/preface" >"$T/h2.out" 2>"$T/h2.err"
check "the HTTP/2 preface: 505 HTTP Version Not Supported" \
	grep -q $'^HTTP/1.1 505 HTTP Version Not Supported\r$' "$T/h2.out"
check "... with a message that says HTTP/1.1" grep -q 'HTTP/2 is not supported: kilovolt speaks HTTP/1.1' "$T/h2.out"
check "... and the connection closed" grep -q "end=eof\|end=reset" "$T/h2.err"
check "the log says HTTP/1.1 is required" grep -q "KV0804.*HTTP/1.1 is required" "$KV_LOG"
if curl --version | grep -q HTTP2; then
	curl -sS -m 5 --http2-prior-knowledge "$KV_URL/v1/models" -H "Authorization: Bearer sk-h2" \
		>/dev/null 2>"$T/curl.err"
	check "curl --http2-prior-knowledge fails (it cannot read HTTP/1.1)" test $? != 0
fi
check_eq "the mock got none of it (its stats calls aside)" "$(kv_mock_stat requests)" "$((n0 + 1))"

# ---- 404 names the path -----------------------------------------------------------
code=$(kv_curl "/v1/nowhere/at-all?x=secret" -o "$T/404" -w '%{http_code}' -H "Authorization: Bearer sk-404" \
	-H 'Content-Type: application/json' -d '{}')
check_eq "an unrouted path: 404" "$code" 404
check "the 404 names the path" jq -e '.error.message == "no upstream is configured for the path /v1/nowhere/at-all"' "$T/404"

# A Bedrock path with no bedrock upstream: 404 in Bedrock's shape, saying
# so (not "did you mean /v1/model/...").
code=$(kv_curl "/model/anthropic.claude-x/invoke" -o "$T/br404" -D "$T/br404.h" -w '%{http_code}' \
	-H "Authorization: Bearer sk-br" -H 'Content-Type: application/json' -d '{"max_tokens":1,"messages":[]}')
check_eq "a Bedrock path, no bedrock upstream: 404" "$code" 404
check "... saying a bedrock upstream serves it, in Bedrock's shape" \
	jq -e '.message | test("no upstream with provider = bedrock serves the path /model/anthropic.claude-x/invoke")' "$T/br404"
check "... x-amzn-ErrorType: ResourceNotFoundException" grep -qi '^x-amzn-ErrorType: ResourceNotFoundException' "$T/br404.h"

# ---- /v1/models by client family -----------------------------------------------
upstream_of() { grep "\"request_id\":\"$1\"" "$T/requests.log" | jq -r .upstream; }
rid() { grep -i '^x-kilovolt-request-id:' "$1" | tr -d '\r' | cut -d' ' -f2; }
models() {	# models NAME CURL-HEADERS...: GET /v1/models, print the upstream it went to
	local name=$1
	shift
	kv_curl /v1/models -D "$T/$name.h" -o "$T/$name.b" "$@" >/dev/null
	kv_wait_for 5 grep -q "$(rid "$T/$name.h")" "$T/requests.log"
	upstream_of "$(rid "$T/$name.h")"
}
check_eq "Authorization: Bearer alone: /v1/models goes to openai" \
	"$(models oa -H 'Authorization: Bearer sk-oa')" openai
check_eq "x-api-key (the Anthropic SDKs): to anthropic" \
	"$(models xk -H 'x-api-key: sk-ant-1')" anthropic
check_eq "Bearer with anthropic-version: to anthropic" \
	"$(models av -H 'Authorization: Bearer sk-ant-2' -H 'anthropic-version: 2023-06-01')" anthropic
check_eq "/v1/models/ID with anthropic-version: to anthropic" \
	"$(kv_curl /v1/models/claude-sonnet-4 -D "$T/m1.h" -o /dev/null -H 'x-api-key: sk-ant-3' \
	   -H 'anthropic-version: 2023-06-01'; kv_wait_for 5 grep -q "$(rid "$T/m1.h")" "$T/requests.log";
	   upstream_of "$(rid "$T/m1.h")")" anthropic
check_eq "the mock saw the Anthropic key on that request" \
	"$(grep -c "auth=$(printf %s sk-ant-1 | sha256sum | cut -c1-12)" "$MOCK_LOG")" 1

kv_finish
