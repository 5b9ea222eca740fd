#!/bin/bash
# Upstreams over HTTPS: the mock's TLS mode with the chain from gen_certs.sh.
# A good chain is relayed (JSON and SSE) over pooled connections; a leaf for
# another name, a self-signed leaf, an IP the leaf does not name, and the
# test root without ca_file (the system store) are all refused with 502 in
# the provider's shape and a log line that says why.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq openssl ss; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

kv_start_mock_tls server
GOOD=$MOCK_TLS_PORT
kv_start_mock_tls wrong
WRONG=$MOCK_TLS_PORT
kv_start_mock_tls self
SELF=$MOCK_TLS_PORT
kv_start_mock_tls server
BURST=$MOCK_TLS_PORT
CA=$KV_CERTS/ca.pem

# openssl s_server -www answers every GET with a page saying whether the TLS
# session was new or resumed, and closes: each request is a new handshake.
SPORT=$(kv_free_port)
openssl s_server -accept "127.0.0.1:$SPORT" -cert "$KV_CERTS/server.pem" \
	-key "$KV_CERTS/server.key" -cert_chain "$KV_CERTS/inter.pem" -www -quiet \
	</dev/null >"$T/s_server.log" 2>&1 &
kv_track $!
s_server_up() { curl -s -o /dev/null -m 2 --cacert "$CA" "https://localhost:$SPORT/"; }
kv_wait_for 10 s_server_up || fail "openssl s_server answers on $SPORT"

# Each upstream is chosen by the request's model; the OpenAI and Anthropic
# paths still decide the error shape.
kv_write_config <<EOF
[upstream good]
url = https://localhost:$GOOD
ca_file = $CA
models = good-*

[upstream byip]
url = https://127.0.0.1:$GOOD
ca_file = $CA
models = byip-*

[upstream wname]
url = https://localhost:$WRONG
ca_file = $CA
models = wname-*

[upstream wip]
url = https://127.0.0.1:$WRONG
ca_file = $CA
models = wip-*

[upstream self]
url = https://localhost:$SELF
ca_file = $CA
models = self-*

[upstream store]
url = https://localhost:$GOOD
models = store-*

[upstream burst]
url = https://localhost:$BURST
ca_file = $CA
models = burst-*

[upstream resume]
url = https://localhost:$SPORT
ca_file = $CA
free_paths = /tlsinfo
EOF
kv_start
AUTH=(-H 'Authorization: Bearer sk-tls-test')
M=https://localhost:$GOOD

jqf() { jq -e "$1" "$2" >/dev/null; }
norm() { sed -E 's/"(created|created_at)":[0-9]+/"\1":0/g' "$@"; }

# relayed DESC PATH BODY [CURL ARGS]: 200 through the gateway, and the body
# is the one the mock gives directly (timestamps aside).
relayed() {
	local desc=$1 path=$2 body=$3 code
	shift 3
	rm -f "$T/direct" "$T/relayed"	# a failed fetch must not pass on old bytes
	curl -sS -m 30 --cacert "$CA" -o "$T/direct" "$M$path" -d "$body" "$@"
	code=$(kv_curl "$path" -o "$T/relayed" -w '%{http_code}' "${AUTH[@]}" -d "$body" "$@")
	check_eq "$desc: 200" "$code" 200
	if [ -s "$T/direct" ] && cmp -s <(norm "$T/direct") <(norm "$T/relayed"); then
		pass "$desc: the mock's bytes"
	else
		fail "$desc: the mock's bytes"
		diff <(norm "$T/direct") <(norm "$T/relayed") | head -n 10
	fi
}

relayed "TLS chat JSON" /v1/chat/completions '{"model":"good-1","messages":[]}' \
	-H 'x-mock-tokens: 8'
relayed "TLS chat SSE" /v1/chat/completions \
	'{"model":"good-1","stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-mock-tokens: 20'
relayed "TLS chat SSE, usage injected and removed" /v1/chat/completions \
	'{"model":"good-1","stream":true}' -H 'x-mock-tokens: 20'
relayed "TLS Anthropic SSE" /v1/messages \
	'{"model":"good-1","max_tokens":30,"stream":true,"messages":[]}' -H 'x-mock-tokens: 9'
relayed "TLS 1 MB response" /v1/chat/completions \
	'{"model":"good-1","stream":true}' -H 'x-mock-tokens: 64' -H 'x-mock-token-bytes: 16384'

# The pool: sequential requests reuse the connections the first ones opened.
# Only good-* has been to this port so far.
kv_check_pool "TLS pool" "$GOOD" good-1
check_eq "TLS pool: no handshake failure logged" "$(grep -c 'KV0422' "$T/kilovoltd.log")" 0

relayed "TLS by IP address (verified against the IP SAN)" /v1/chat/completions \
	'{"model":"byip-1"}'

# A client leaving a TLS stream stops the upstream at once.
now_ms() { date +%s%3N; }
stat_gt() { [ "$(kv_mock_stat "$1" "$GOOD" https)" -gt "$2" ]; }
aborts=$(kv_mock_stat aborted_streams "$GOOD" https)
kv_curl /v1/chat/completions -m 2 -o /dev/null "${AUTH[@]}" -d '{"model":"good-1","stream":true}' \
	-H 'x-mock-tokens: 300' -H 'x-mock-delay-ms: 100' 2>/dev/null
left=$(now_ms)
check "TLS client abort: the mock saw its stream aborted" kv_wait_for 10 stat_gt aborted_streams "$aborts"
gap=$(($(kv_mock_stat last_abort_ms "$GOOD" https) - left))
check "... within 1 s of the client leaving (${gap} ms)" test "$gap" -lt 1000

# A client that stops reading a 20 MB TLS stream pauses the upstream read
# (the bytes stay in the kernel) instead of growing the worker.
recvq() { ss -Htn state established "( dport = :$GOOD )" | awk '{ s += $1 } END { print s + 0 }'; }
# Over 16 kB (a read once the client has stalled) unread twice 0.5 s apart:
# the read paused.
paused() { [ "$(recvq)" -gt 16384 ] && sleep 0.5 && [ "$(recvq)" -gt 16384 ]; }
base=$(kv_daemon_kb)
# Its own key: the cut stream is charged, and must not spend the others' budget.
curl -sS -m 120 --limit-rate 1k -o /dev/null -H 'Authorization: Bearer sk-tls-slow' \
	"$KV_URL/v1/chat/completions" \
	-d '{"model":"good-1","stream":true}' -H 'x-mock-tokens: 2000' \
	-H 'x-mock-token-bytes: 10000' 2>/dev/null &
cpid=$!
kv_track $cpid
check "TLS slow reader: the gateway stops reading the upstream" kv_wait_for 30 paused
kb=$(kv_daemon_kb)
echo "# TLS slow reader: daemon $base kB -> $kb kB, gateway Recv-Q $(recvq)"
if ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan; then
	echo "# TLS slow reader: memory not measured under ASan (its allocator holds freed memory)"
else
	check "TLS slow reader: daemon memory grew by $((kb - base)) kB (< 4 MB) with 20 MB pending" \
		test $((kb - base)) -lt 4096
fi
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null

# Session resumption: each worker's first handshake to s_server may be new,
# every later one must resume: WORKERS + 4 requests, at least 4 resumed.
reused=0 total=$((${KV_WORKERS:-2} + 4))
for i in $(seq 1 $total); do
	rm -f "$T/tlsinfo"
	kv_curl /tlsinfo -o "$T/tlsinfo" "${AUTH[@]}"
	grep -q '^Reused, TLS' "$T/tlsinfo" && reused=$((reused + 1))
done
check "TLS session resumption: $reused of $total handshakes resumed (>= 4)" test $reused -ge 4
check "... and the pages were relayed (close-delimited HTTP/1.0 upstream)" \
	grep -q 'session cache' "$T/tlsinfo"

# A burst to a target no worker has a session for yet: each worker makes one
# full handshake, the others wait for its ticket and resume. 40 streams of
# a second each, all at once, so the pool cannot serve any of them.
BN=40
for ((i = 0; i < BN; i++)); do
	echo "url = \"$KV_URL/v1/chat/completions\""
	echo "output = \"$T/burst.$i\""
done >"$T/burst.cfg"
curl -sS -Z --parallel-max $BN --parallel-immediate -m 60 -K "$T/burst.cfg" \
	-w '%{http_code}\n' "${AUTH[@]}" -d '{"model":"burst-1","stream":true}' \
	-H 'x-mock-tokens: 10' -H 'x-mock-delay-ms: 100' >"$T/burst.codes" 2>"$T/burst.err"
check_eq "TLS burst: $BN streams answered 200" "$(grep -c '^200$' "$T/burst.codes")" $BN
check_eq "... each ended with [DONE]" "$(cat "$T/burst".[0-9]* | grep -c '^data: \[DONE\]')" $BN
# The stats request is a full handshake of its own.
full=$(($(kv_mock_stat tls_full "$BURST" https) - 1))
resumed=$(kv_mock_stat tls_resumed "$BURST" https)
check "TLS burst: $full full handshakes (<= ${KV_WORKERS:-2}, one per worker)" \
	test "$full" -le "${KV_WORKERS:-2}"
check "TLS burst: $resumed resumed (>= $((BN - ${KV_WORKERS:-2})))" \
	test "$resumed" -ge $((BN - ${KV_WORKERS:-2}))

# ---- refusals --------------------------------------------------------------------

# refused DESC MODEL LOG-ERE: 502 in both shapes, and a log line naming the
# upstream and matching LOG-ERE.
refused() {
	local desc=$1 model=$2 why=$3 code
	rm -f "$T/out"
	code=$(kv_curl /v1/chat/completions -o "$T/out" -w '%{http_code}' "${AUTH[@]}" \
		-d "{\"model\":\"$model\"}")
	check_eq "$desc: 502" "$code" 502
	check "$desc: OpenAI error shape" jqf '.error.message | type == "string"' "$T/out"
	rm -f "$T/out"
	code=$(kv_curl /v1/messages -o "$T/out" -w '%{http_code}' "${AUTH[@]}" \
		-d "{\"model\":\"$model\",\"max_tokens\":5}")
	check_eq "$desc on /v1/messages: 502" "$code" 502
	check "$desc: Anthropic error shape" \
		jqf '.type == "error" and (.error.message | type == "string")' "$T/out"
	check "$desc: the log says why" kv_wait_for 10 grep -qE "upstream ${model%%-*}: .*$why" \
		"$T/kilovoltd.log"
}

refused "leaf for the wrong name" wname-1 "[Hh]ostname mismatch"
refused "leaf without the upstream's IP" wip-1 "IP address mismatch"
refused "self-signed leaf" self-1 "self.signed"
refused "test root with no ca_file (the system store)" store-1 \
	"unable to get local issuer|self.signed|unable to verify"
check "the good upstream still answers after the refusals" bash -c \
	"[ \"\$(curl -sS -m 30 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer k' \
	-d '{\"model\":\"good-2\"}' $KV_URL/v1/chat/completions)\" = 200 ]"

kv_finish
