#!/bin/bash
# Hostile clients through the real daemon. Every request-smuggling shape
# (CL+TE, TE obfuscations, duplicate or differing lengths, bad chunk framing,
# bare CR/LF, NULs, obs-fold, oversized heads) is answered with the status
# SPEC.md names, in the provider's JSON error shape, and the connection is
# closed; none of it reaches an upstream (a tap that records every byte
# stands in for the provider of the paths the bad requests name), and a body
# that hides a second request never becomes a second upstream request.
# Slow-loris heads, stalled bodies and clients that never read are dropped at
# client_timeout, without the workers growing; a good request succeeds after
# every bad one.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
RAW=$top_builddir/tests/rawclient
[ -x "$RAW" ] || skip "tests/rawclient not built"

kv_start_mock
# The tap: chat completions and messages go to it, so any byte of a bad
# request the gateway forwarded would show up in tap.out.
"$RAW" -l "$T/tap.port" -t 3600 >"$T/tap.out" 2>"$T/tap.err" &
kv_track $!
kv_wait_for 10 test -s "$T/tap.port" || { fail "start the tap"; kv_finish; }
TAP_PORT=$(cat "$T/tap.port")

write_config() {
	kv_write_config <<EOF
[server]
client_timeout = $1

[upstream openai]
url = http://127.0.0.1:$TAP_PORT
paths = /v1/chat/completions

[upstream anthropic]
url = http://127.0.0.1:$TAP_PORT
paths = /v1/messages

[upstream mock]
url = http://127.0.0.1:$MOCK_PORT
paths = /v1/models /v1/completions /v1/embeddings /v1/responses
free_paths = /blob /sink
EOF
}
write_config 30
kv_start

KEY=sk-hostile-test
AUTH="Authorization: Bearer $KEY"
CRLF=$'\r\n'

# (the mock logs its own /mock/stats requests too: no kv_mock_stat between
# counting and checking)
mock_lines() { wc -l <"$MOCK_LOG" 2>/dev/null || echo 0; }
tap_bytes() { wc -c <"$T/tap.out"; }
stat_gt() { [ "$(kv_mock_stat "$1")" -gt "$2" ]; }

# good TAG: a well-formed request through the gateway; 200 from the mock,
# and it is the only request the mock saw since BEFORE (mock log lines).
good() {
	local tag=$1 before=$2 code
	code=$(kv_curl "/v1/models?after=$tag" -o /dev/null -w '%{http_code}' -H "$AUTH")
	[ "$code" = 200 ] || { echo "good request after $tag: status $code"; return 1; }
	[ "$(mock_lines)" = $((before + 1)) ] || { echo "mock log grew by $(($(mock_lines) - before)), want 1"; return 1; }
	tail -n 1 "$MOCK_LOG" | grep -q "^GET /v1/models?after=$tag " ||
		{ echo "last mock request: $(tail -n 1 "$MOCK_LOG")"; return 1; }
}

# Parts of a raw exchange saved by send_raw.
resp_status() { head -n 1 "$T/$1.out" | tr -d '\r' | cut -d' ' -f2; }
resp_body() { sed -n '/^\r$/,$p' "$T/$1.out" | tail -n +2; }
resp_end() { sed -n 's/^rawclient: end=\([a-z]*\) .*/\1/p' "$T/$1.err"; }
resp_ms() { sed -n 's/^rawclient: end=[a-z]* ms=\([0-9]*\) .*/\1/p' "$T/$1.err"; }

# send_raw NAME [RAWCLIENT ARGS]: send $T/NAME.req, keep $T/NAME.out/.err.
send_raw() {
	local name=$1
	shift
	"$RAW" "$@" "$KV_PORT" "$T/$name.req" >"$T/$name.out" 2>"$T/$name.err"
}

# bad NAME WANT SHAPE: send $T/NAME.req raw. WANT is the status; SHAPE is
# openai or anthropic. Passes when the answer has that status and error
# shape, says Connection: close, the gateway then closed the connection
# (well before client_timeout), nothing reached the tap, no request reached
# the mock, and a good request right after succeeds.
bad() {
	local name=$1 want=$2 shape=$3 why= st end ms tap0 lines0 filter
	tap0=$(tap_bytes)
	lines0=$(mock_lines)
	send_raw "$name" -t 20
	st=$(resp_status "$name") end=$(resp_end "$name") ms=$(resp_ms "$name")
	[ "$st" = "$want" ] || why="$why; status '$st', want $want"
	if [ "$shape" = anthropic ]; then
		filter='.type == "error" and (.error.type|type) == "string" and (.error.message|type) == "string"'
	else
		filter='(.error.message|type) == "string" and (.error.type|type) == "string" and has("type") == false'
	fi
	resp_body "$name" | jq -e "$filter" >/dev/null 2>&1 ||
		why="$why; body is not the $shape error shape: $(resp_body "$name" | head -c 200)"
	grep -qi '^connection: close' "$T/$name.out" || why="$why; no Connection: close"
	case $end in
	eof | reset) [ "${ms:-99999}" -lt 15000 ] || why="$why; closed only after ${ms} ms" ;;
	*) why="$why; the gateway did not close the connection ($end)" ;;
	esac
	[ "$(tap_bytes)" = "$tap0" ] || why="$why; $(($(tap_bytes) - tap0)) bytes reached the upstream"
	[ "$(mock_lines)" = "$lines0" ] || why="$why; the mock saw a request"
	good "$name" "$lines0" >"$T/$name.good" 2>&1 || why="$why; $(cat "$T/$name.good")"
	if [ -z "$why" ]; then
		pass "$name: $want, $shape error shape, closed ($end after ${ms} ms), nothing upstream, next request served"
	else
		fail "$name${why}"
	fi
}

# req NAME TEXT: $T/NAME.req holds TEXT with printf %b escapes expanded
# (\r, \n, \0000 for NUL).
req() { printf '%b' "$2" >"$T/$1.req"; }

H="Host: gw\r\n$AUTH\r\nContent-Type: application/json\r\n"
CHAT="POST /v1/chat/completions HTTP/1.1\r\n$H"
MSG="POST /v1/messages HTTP/1.1\r\n$H"
B='{"model":"gpt-4o-mini","messages":[]}'	# 37 bytes
SMUGGLED="GET /v1/models?smuggled=1 HTTP/1.1\r\nHost: gw\r\n$AUTH\r\n\r\n"

# ---- smuggling shapes: 400, or 501 for a coding we do not know ---------------

req cl_te "${CHAT}Content-Length: 37\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUGGLED"
bad cl_te 400 openai
req te_cl "${CHAT}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n25\r\n$B\r\n0\r\n\r\n$SMUGGLED"
bad te_cl 400 openai
req te_xchunked "${CHAT}Transfer-Encoding: xchunked\r\n\r\n25\r\n$B\r\n0\r\n\r\n"
bad te_xchunked 501 openai
req te_chunked_identity "${CHAT}Transfer-Encoding: chunked, identity\r\n\r\n25\r\n$B\r\n0\r\n\r\n"
bad te_chunked_identity 400 openai
req te_twice "${CHAT}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n25\r\n$B\r\n0\r\n\r\n"
bad te_twice 400 openai
req te_http10 "POST /v1/chat/completions HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n25\r\n$B\r\n0\r\n\r\n"
bad te_http10 400 openai
req te_space_colon "${CHAT}Transfer-Encoding : chunked\r\nContent-Length: 37\r\n\r\n$B"
bad te_space_colon 400 openai
req cl_space_colon "${CHAT}Content-Length : 37\r\n\r\n$B"
bad cl_space_colon 400 openai
req cl_duplicate "${CHAT}Content-Length: 37\r\nContent-Length: 37\r\n\r\n$B"
bad cl_duplicate 400 openai
req cl_differing "${CHAT}Content-Length: 37\r\nContent-Length: 5\r\n\r\n$B"
bad cl_differing 400 openai
req cl_list "${CHAT}Content-Length: 37, 37\r\n\r\n$B"
bad cl_list 400 openai
req cl_negative "${CHAT}Content-Length: -37\r\n\r\n$B"
bad cl_negative 400 openai
req cl_plus "${CHAT}Content-Length: +37\r\n\r\n$B"
bad cl_plus 400 openai
req cl_huge "${CHAT}Content-Length: 99999999999999999999999\r\n\r\n$B"
bad cl_huge 400 openai
req cl_hex "${CHAT}Content-Length: 0x25\r\n\r\n$B"
bad cl_hex 400 openai

# Bad chunked framing, caught before anything goes upstream. The Anthropic
# path shows the error in Anthropic's shape.
req chunk_bad_hex "${CHAT}Transfer-Encoding: chunked\r\n\r\nzz\r\n$B\r\n0\r\n\r\n"
bad chunk_bad_hex 400 openai
req chunk_negative "${CHAT}Transfer-Encoding: chunked\r\n\r\n-25\r\n$B\r\n0\r\n\r\n"
bad chunk_negative 400 openai
req chunk_overflow "${CHAT}Transfer-Encoding: chunked\r\n\r\n10000000000000000000025\r\n$B\r\n0\r\n\r\n"
bad chunk_overflow 400 openai
req chunk_huge "${CHAT}Transfer-Encoding: chunked\r\n\r\nfffffffffff\r\n$B\r\n0\r\n\r\n"
bad chunk_huge 400 openai
req chunk_space "${CHAT}Transfer-Encoding: chunked\r\n\r\n 25\r\n$B\r\n0\r\n\r\n"
bad chunk_space 400 openai
req chunk_no_crlf "${CHAT}Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
bad chunk_no_crlf 400 openai
req chunk_short_data "${MSG}Transfer-Encoding: chunked\r\n\r\n30\r\n$B\r\n0\r\n\r\n$SMUGGLED"
bad chunk_short_data 400 anthropic
ext=$(head -c 5000 /dev/zero | tr '\0' 'e')
req chunk_ext_oversized "${MSG}Transfer-Encoding: chunked\r\n\r\n25;$ext\r\n$B\r\n0\r\n\r\n"
bad chunk_ext_oversized 400 anthropic
req chunk_bare_lf "${MSG}Transfer-Encoding: chunked\r\n\r\n25\n$B\r\n0\r\n\r\n"
bad chunk_bare_lf 400 anthropic

# ---- bytes no head may hold -----------------------------------------------------

req bare_cr "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\rX-Evil: 1\r\n\r\n"
bad bare_cr 400 openai
req bare_lf "GET /v1/models HTTP/1.1\nHost: gw\n${AUTH}\n\n"
bad bare_lf 400 openai
req bare_lf_mixed "GET /v1/models HTTP/1.1\r\nHost: gw\n${AUTH}\r\n\r\n"
bad bare_lf_mixed 400 openai
req nul_value "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nX-Evil: a\0000b\r\n\r\n"
bad nul_value 400 openai
req nul_target "GET /v1/mo\0000dels HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n\r\n"
bad nul_target 400 openai
req obs_fold "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nX-Evil: a\r\n b\r\n\r\n"
bad obs_fold 400 openai
req obs_fold_te "${CHAT}Content-Length: 37\r\nX-Evil: a\r\n Transfer-Encoding: chunked\r\n\r\n$B"
bad obs_fold_te 400 openai
req ctl_name "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nX\001Evil: 1\r\n\r\n"
bad ctl_name 400 openai
req absolute_form "GET http://evil.example/v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n\r\n"
bad absolute_form 400 openai
req no_host "GET /v1/models HTTP/1.1\r\n${AUTH}\r\n\r\n"
bad no_host 400 openai
req two_hosts "GET /v1/models HTTP/1.1\r\nHost: gw\r\nHost: evil\r\n${AUTH}\r\n\r\n"
bad two_hosts 400 openai

# ---- oversized heads -------------------------------------------------------------

long=$(head -c 102400 /dev/zero | tr '\0' 'a')
req header_100k "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nX-Long: $long\r\n\r\n"
bad header_100k 431 openai
{
	printf 'GET /v1/models HTTP/1.1\r\nHost: gw\r\n%s\r\n' "$AUTH"
	for ((i = 0; i < 1000; i++)); do printf 'X-H%d: v\r\n' $i; done
	printf '\r\n'
} >"$T/headers_1000.req"
bad headers_1000 431 openai
long=$(head -c 10240 /dev/zero | tr '\0' 'a')
req request_line_10k "GET /v1/models?q=$long HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n\r\n"
bad request_line_10k 414 openai

check "the tap (upstream of the bad requests' paths) received no byte" test "$(tap_bytes)" = 0
# ... and it would have: a valid request on the same path reaches it (the
# tap never answers, so the client gives up after 2 s).
kv_curl /v1/chat/completions -m 2 -H "$AUTH" -d "$B" -o /dev/null 2>/dev/null
check "the tap does see a valid request forwarded to it" kv_wait_for 10 grep -q '^POST /v1/chat/completions ' "$T/tap.out"

# ---- bodies that hide a second request ------------------------------------------

# Requests whose bodies hold a complete request after their JSON: refused.
hidden() {
	local name=$1 lines0 why=
	lines0=$(mock_lines)
	send_raw "$name" -t 20
	[ "$(resp_status "$name")" = 400 ] || why="$why; status '$(resp_status "$name")'"
	[ "$(mock_lines)" = "$lines0" ] ||
		why="$why; the mock saw $(($(mock_lines) - lines0)) requests, want 0"
	grep -q smuggled "$MOCK_LOG" && why="$why; the smuggled request reached the mock"
	if [ -z "$why" ]; then
		pass "$name: a JSON body with bytes after it is a 400, nothing forwarded"
	else
		fail "$name${why}"
	fi
}

# The body is not one JSON value (issue 10): nothing is forwarded.
E="POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\n$AUTH\r\nContent-Type: application/json\r\nConnection: close\r\n"
inner=$(printf '%b' "$SMUGGLED")
body="{\"model\":\"text-embedding-3-small\",\"input\":\"x\"}$inner"
req hidden_cl "${E}Content-Length: ${#body}\r\n\r\n$body"
hidden hidden_cl
printf -v size '%x' ${#body}
req hidden_chunked "${E}Transfer-Encoding: chunked\r\n\r\n$size\r\n$body\r\n0\r\n\r\n"
hidden hidden_chunked

# CL+TE on the mock's own path, the classic desync: refused, and neither it
# nor what it hides reaches the mock.
lines0=$(mock_lines)
req desync_mock "POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\n$AUTH\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUGGLED"
send_raw desync_mock -t 20
check_eq "CL+TE desync on a path the mock serves: 400" "$(resp_status desync_mock)" 400
check_eq "... and the mock saw no request at all" "$(mock_lines)" "$lines0"
check "... nor the smuggled one" test "$(grep -c smuggled "$MOCK_LOG")" = 0

# Bad framing past the inspected prefix (64 KB): by then the body streams
# upstream, so the most a proxy can promise is that the upstream never gets
# a complete request: the client gets 400, the upstream connection a reset.
lines0=$(mock_lines)
{
	printf 'POST /sink HTTP/1.1\r\nHost: gw\r\n%s\r\nTransfer-Encoding: chunked\r\n\r\n' "$AUTH"
	for ((i = 0; i < 40; i++)); do
		printf '1000\r\n'
		head -c 4096 /dev/zero | tr '\0' z
		printf '\r\n'
	done
	printf 'zz\r\n\r\n'
} >"$T/late_bad_chunk.req"
send_raw late_bad_chunk -t 20
check_eq "bad chunk framing after 160 KB of body: 400" "$(resp_status late_bad_chunk)" 400
check "... and the gateway closed the connection" \
	grep -qE 'end=(eof|reset)' "$T/late_bad_chunk.err"
check_eq "... the upstream never got a complete request (mock log)" "$(mock_lines)" "$lines0"
l0=$(mock_lines)
check "... and the next request is served" good late_bad_chunk "$l0"

kv_stop
# ---- slow clients: client_timeout = 3 --------------------------------------------

write_config 3
kv_start
ASAN=0
ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan && ASAN=1

# A head that never ends, one byte a second: dropped at client_timeout
# although bytes keep coming (the deadline runs from the head's first byte).
req slowloris "GET /v1/models HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nX-Slow: $(head -c 60 /dev/zero | tr '\0' 's')"
send_raw slowloris -t 30 -d 1000
sent=$(sed -n 's/.* sent=\([0-9]*\) .*/\1/p' "$T/slowloris.err")
ms=$(resp_ms slowloris)
case $(resp_end slowloris) in
eof | reset) pass "slow-loris head: the gateway closed it ($(resp_end slowloris))" ;;
*) fail "slow-loris head: not closed ($(cat "$T/slowloris.err"))" ;;
esac
check "... at client_timeout (3 s): after ${ms} ms" test "${ms:-0}" -ge 2500 -a "${ms:-99999}" -le 8000
check "... while bytes kept coming (${sent} sent)" test "${sent:-0}" -ge 3
l0=$(mock_lines)
check "... and the next request is served" good slowloris "$l0"

# A body that stalls after half its bytes: dropped at client_timeout.
half=${B:0:20}
req stall_body "POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nContent-Length: 37\r\n\r\n$half"
lines0=$(mock_lines)
send_raw stall_body -t 30
ms=$(resp_ms stall_body)
case $(resp_end stall_body) in
eof | reset) pass "stalled body: the gateway closed it ($(resp_end stall_body))" ;;
*) fail "stalled body: not closed ($(cat "$T/stall_body.err"))" ;;
esac
check "... at client_timeout (3 s): after ${ms} ms" test "${ms:-0}" -ge 2500 -a "${ms:-99999}" -le 8000
check_eq "... and the half request never reached the mock" "$(mock_lines)" "$lines0"
check "... and the next request is served" good stall_body "$lines0"

# A chunked body that stalls mid-chunk.
req stall_chunked "POST /v1/embeddings HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\nTransfer-Encoding: chunked\r\n\r\n25\r\n$half"
send_raw stall_chunked -t 30
ms=$(resp_ms stall_chunked)
check "stalled chunked body: closed at client_timeout ($(resp_end stall_chunked) after ${ms} ms)" \
	test "$(resp_end stall_chunked)" != timeout -a "${ms:-0}" -ge 2500 -a "${ms:-99999}" -le 8000

# A client that never reads a 50 MB response: the relay stops at the full
# socket, the connection is cut at client_timeout, and the workers do not
# hold the response meanwhile. Twice: once spliced (Content-Length), once
# through the user-space buffers (chunked).
for mode in plain chunked; do
	q="bytes=50000000&seed=7"
	[ $mode = chunked ] && q="$q&chunked=1"
	# warm up: the first /blob maps code and buffers that then stay
	kv_curl "/blob?bytes=1000000&seed=1" -H "$AUTH" -o /dev/null
	before=$(kv_daemon_kb)
	aborts=$(kv_mock_stat aborted_streams)
	req "noread_$mode" "GET /blob?$q HTTP/1.1\r\nHost: gw\r\n${AUTH}\r\n\r\n"
	"$RAW" -t 40 -n -r 4096 "$KV_PORT" "$T/noread_$mode.req" >/dev/null 2>"$T/noread_$mode.err" &
	rpid=$!
	# sample while the stalled connection is open
	peak=$before
	for ((i = 0; i < 20; i++)); do
		sleep 0.1
		now=$(kv_daemon_kb)
		[ "$now" -gt "$peak" ] && peak=$now
	done
	wait $rpid
	ms=$(resp_ms "noread_$mode")
	case $(resp_end "noread_$mode") in
	eof | reset) pass "non-reading client ($mode 50 MB): dropped ($(resp_end "noread_$mode"))" ;;
	*) fail "non-reading client ($mode 50 MB): not dropped ($(cat "$T/noread_$mode.err"))" ;;
	esac
	check "... at client_timeout (3 s): after ${ms} ms" test "${ms:-0}" -ge 2500 -a "${ms:-99999}" -le 10000
	if [ $ASAN = 1 ]; then
		echo "# memory check skipped: ASan build (its allocator pins freed memory)"
	else
		check "... the daemon grew by $((peak - before)) KB while it stalled (< 4096)" \
			test $((peak - before)) -lt 4096
	fi
	check "... and the upstream stream was cut too (the mock saw the abort)" \
		kv_wait_for 10 stat_gt aborted_streams "$aborts"
	l0=$(mock_lines)
	check "... and the next request is served" good "noread_$mode" "$l0"
done

kv_finish
