#!/bin/bash
# t_route_hints (issue 24 point 3): a 404 for a path no upstream serves
# names the right path when adding or removing /v1 would route it (a base
# URL without /v1, or with it twice), and nothing reaches the provider.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"

kv_start_mock
kv_write_config </dev/null
kv_start

# post PATH [CURL ARGS]: the status; the body in $T/body
post() {
	local p=$1
	shift
	kv_curl "$p" -o "$T/body" -w '%{http_code}' -H 'Authorization: Bearer sk-hint' \
		-H 'content-type: application/json' "$@" -d '{"model":"gpt-4o-mini","max_tokens":5}'
}
msg() { jq -r '.error.message' "$T/body"; }

check_eq "POST /chat/completions (base URL without /v1): 404" "$(post /chat/completions)" 404
check "... naming /v1/chat/completions and the fix" \
	grep -q "did you mean /v1/chat/completions? (end the client's base URL with /v1" <(msg)
check_eq "POST /messages with anthropic-version: 404" \
	"$(post /messages -H 'anthropic-version: 2023-06-01')" 404
check "... naming /v1/messages" grep -q "did you mean /v1/messages?" \
	<(jq -r '.error.message' "$T/body")
check_eq "POST /v1/v1/chat/completions (/v1 twice): 404" "$(post /v1/v1/chat/completions)" 404
check "... naming /v1/chat/completions and dropping /v1" \
	grep -q "did you mean /v1/chat/completions? (drop /v1 from the client's base URL)" <(msg)
check_eq "a path nothing near routes: 404" "$(post /nothing/here?x=1)" 404
check "... without a guess, and without the query" \
	grep -qx "no upstream is configured for the path /nothing/here" <(msg)
check_eq "none of them reached the provider" "$(grep -c '^POST' "$MOCK_LOG")" 0

kv_finish
