#!/bin/bash
# Faults on either side of the relay: a client that leaves mid-stream stops
# the upstream within a second; an upstream that resets, refuses, hangs,
# speaks garbage or fails with 500 gives the client what a proxy owes it
# (a cut stream, 502, 504, the 500 as is) and is charged only as the SPEC
# says; and a client that stops reading pauses the upstream instead of
# growing the worker (backpressure).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq ss; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

kv_start_mock
M=http://127.0.0.1:$MOCK_PORT
CLOSED=$(kv_dead_ports 1) || exit 1
kv_write_config <<EOF
[server]
upstream_timeout = 2

[upstream closed]
url = http://127.0.0.1:$CLOSED
models = closed-*

[upstream files]
url = $M
free_paths = /blob
EOF
kv_start
KEY=sk-faults-test
KEYID=$(printf '%s' "$KEY" | sha256sum | cut -c1-12)
AUTH=(-H "Authorization: Bearer $KEY")
CHAT='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}'

now_ms() { date +%s%3N; }
jqf() { jq -e "$1" "$2" >/dev/null; }
stat_gt() { [ "$(kv_mock_stat "$1")" -gt "$2" ]; }

# ---- the client leaves mid-stream --------------------------------------------

# A 30 s stream (300 events, 100 ms apart); the client gives up after 2 s.
aborts=$(kv_mock_stat aborted_streams)
kv_curl /v1/chat/completions -m 2 -o "$T/part" "${AUTH[@]}" -d "$CHAT" \
	-H 'x-mock-tokens: 300' -H 'x-mock-delay-ms: 100' 2>/dev/null
rc=$? left=$(now_ms)
check_eq "curl --max-time left the slow stream (exit 28)" "$rc" 28
check "... after some events reached it" grep -q '"content":"tok1 "' "$T/part"
check "... the mock saw its stream aborted" kv_wait_for 10 stat_gt aborted_streams "$aborts"
gap=$(($(kv_mock_stat last_abort_ms) - left))
check "... within 1 s of the client leaving (${gap} ms)" test "$gap" -lt 1000

# The same with a raw socket that reads three events and closes.
aborts=$(kv_mock_stat aborted_streams)
body='{"model":"claude-sonnet-4","max_tokens":500,"stream":true,"messages":[]}'
if exec 3<>"/dev/tcp/127.0.0.1/$KV_PORT"; then
	printf 'POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nx-mock-tokens: 300\r\nx-mock-delay-ms: 100\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
		"$KEY" ${#body} "$body" >&3
	n=0
	while [ $n -lt 3 ] && IFS= read -r -t 20 line <&3; do
		[[ $line == event:\ content_block_delta* ]] && n=$((n + 1))
	done
	exec 3<&-
	left=$(now_ms)
	check_eq "raw client read 3 content_block_delta events" "$n" 3
	check "... the mock saw the Anthropic stream aborted" \
		kv_wait_for 10 stat_gt aborted_streams "$aborts"
	gap=$(($(kv_mock_stat last_abort_ms) - left))
	check "... within 1 s of the socket closing (${gap} ms)" test "$gap" -lt 1000
else
	fail "connect to the gateway with /dev/tcp"
fi
check "the abandoned stream is logged as cut and estimated" \
	kv_wait_for 10 bash -c "grep '\[access\].*/v1/messages' '$KV_LOG' | tail -n 1 | grep -q 'estimated cut'"

# A client that leaves before the first byte (the upstream still thinking).
aborts=$(kv_mock_stat aborted_streams)
kv_curl /v1/chat/completions -m 3 -o /dev/null "${AUTH[@]}" -d "$CHAT" \
	-H 'x-mock-first-delay-ms: 20000' 2>/dev/null
left=$(now_ms)
check "client gone before the first byte: the mock saw the request abandoned" \
	kv_wait_for 10 stat_gt aborted_streams "$aborts"
gap=$(($(kv_mock_stat last_abort_ms) - left))
check "... within 1 s of the client leaving (${gap} ms)" test "$gap" -lt 1000

# ---- the upstream resets mid-stream ------------------------------------------

rm -f "$T/part"
kv_curl /v1/chat/completions -o "$T/part" "${AUTH[@]}" -d "$CHAT" \
	-H 'x-mock-tokens: 40' -H 'x-mock-fail: reset' 2>/dev/null
rc=$?
check "upstream reset: the client's stream is cut (curl exit $rc is 18 or 56)" \
	test "$rc" = 18 -o "$rc" = 56
check "... after the events before the reset" grep -q '"content":"tok1 "' "$T/part"
check "... and without the end of the stream" bash -c "! grep -q DONE '$T/part'"
check "... charged as estimated and cut" kv_wait_for 10 bash -c \
	"grep '\[access\].*/v1/chat/completions' '$KV_LOG' | tail -n 1 | grep -q 'status=200 .*estimated cut'"
line=$(grep '\[access\].*/v1/chat/completions' "$KV_LOG" | tail -n 1)
not_free() { [[ $line != *'cost=$0.000000'* ]]; }
check "... for more than nothing (${line##* cost=})" not_free

rm -f "$T/part"
kv_curl /v1/chat/completions -o "$T/part" "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}' \
	-H 'x-mock-tokens: 400' -H 'x-mock-fail: reset' 2>/dev/null
rc=$?
check "upstream reset inside a JSON body: the client sees it cut (curl exit $rc is 18 or 56)" \
	test "$rc" = 18 -o "$rc" = 56
check "... after the bytes before the reset" grep -q '"chatcmpl-mock"' "$T/part"

# An upstream silent mid-stream for longer than upstream_timeout: cut.
rm -f "$T/part"
t0=$(now_ms)
kv_curl /v1/chat/completions -o "$T/part" "${AUTH[@]}" -d "$CHAT" \
	-H 'x-mock-tokens: 3' -H 'x-mock-delay-ms: 8000' 2>/dev/null
rc=$? t1=$(now_ms)
check "upstream idle mid-stream past upstream_timeout: cut (curl exit $rc is 18 or 56)" \
	test "$rc" = 18 -o "$rc" = 56
check "... after about 2 s, not the stream's 24 s ($((t1 - t0)) ms)" test $((t1 - t0)) -lt 7000
check "... with the first event relayed" grep -q '"role":"assistant"' "$T/part"

# ---- the upstream fails before answering ---------------------------------------

# fails DESC WANT-STATUS MAX-SECS MODEL [CURL ARGS]: the gateway's own error,
# in both providers' shapes, within MAX-SECS.
fails() {
	local desc=$1 want=$2 secs=$3 model=$4 out t0 t1
	shift 4
	rm -f "$T/out"
	t0=$(now_ms)
	out=$(kv_curl /v1/chat/completions -o "$T/out" -w '%{http_code}' "${AUTH[@]}" \
		-d "{\"model\":\"$model\"}" "$@")
	t1=$(now_ms)
	check_eq "$desc: $want" "$out" "$want"
	check "$desc: OpenAI error shape" jqf '.error.message | type == "string"' "$T/out"
	check "$desc: in $((t1 - t0)) ms (< ${secs} s)" test $((t1 - t0)) -lt $((secs * 1000))
	rm -f "$T/out"
	out=$(kv_curl /v1/messages -o "$T/out" -w '%{http_code}' "${AUTH[@]}" \
		-d "{\"model\":\"$model\",\"max_tokens\":5}" "$@")
	check_eq "$desc on /v1/messages: $want" "$out" "$want"
	check "$desc: Anthropic error shape" \
		jqf '.type == "error" and (.error.message | type == "string")' "$T/out"
}

fails "upstream refused" 502 10 closed-1
fails "upstream hangs past upstream_timeout = 2" 504 15 gpt-4o-mini -H 'x-mock-fail: hang'
fails "upstream answers garbage" 502 10 gpt-4o-mini -H 'x-mock-fail: garbage'
fails "upstream closes without answering" 502 10 gpt-4o-mini -H 'x-mock-fail: close'

# ---- an upstream error is relayed as is and not charged ----------------------------

kv_curl /v1/chat/completions -o /dev/null "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}'
kv_ctl show "$KEYID" --json >"$T/before"
rm -f "$T/direct" "$T/relayed"
curl -sS -m 30 -o "$T/direct" "$M/v1/chat/completions" -d '{"model":"gpt-4o-mini"}' \
	-H 'x-mock-status: 500'
code=$(kv_curl /v1/chat/completions -o "$T/relayed" -w '%{http_code}' "${AUTH[@]}" \
	-d '{"model":"gpt-4o-mini"}' -H 'x-mock-status: 500')
check_eq "upstream 500: relayed as 500" "$code" 500
check "... with the upstream's body" cmp -s "$T/direct" "$T/relayed"
kv_ctl show "$KEYID" --json >"$T/after"
check_eq "... not charged (spent unchanged)" "$(jq .spent_nusd "$T/after")" \
	"$(jq .spent_nusd "$T/before")"
check_eq "... and its reservation released" "$(jq .reserved_nusd "$T/after")" 0

kv_ctl show "$KEYID" --json >"$T/before"
code=$(kv_curl /v1/messages -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
	-d '{"model":"claude-sonnet-4","max_tokens":5}' -H 'x-mock-status: 429')
check_eq "upstream 429: relayed as 429" "$code" 429
kv_ctl show "$KEYID" --json >"$T/after"
check_eq "... not charged either" "$(jq .spent_nusd "$T/after")" "$(jq .spent_nusd "$T/before")"

# ---- a client that does not read: backpressure --------------------------------------

# queues FILTER FIELD: the summed Recv-Q (FIELD 1) or Send-Q (FIELD 2) of the
# established sockets matching the ss FILTER.
queues() { ss -Htn state established "( $1 )" | awk -v f="$2" '{ s += $f } END { print s + 0 }'; }
# paused: the gateway leaves over 16 kB (a read once the client has
# stalled) of the mock's bytes unread, twice 0.5 s apart. A gateway that
# kept reading would drain its socket at once (and hold the bytes itself);
# one that paused leaves them in the kernel.
paused() {
	[ "$(queues "dport = :$MOCK_PORT" 1)" -gt 16384 ] || return 1
	sleep 0.5
	[ "$(queues "dport = :$MOCK_PORT" 1)" -gt 16384 ]
}
asan=0
ldd "$KV_DAEMON_BIN" 2>/dev/null | grep -q asan && asan=1

# slow DESC PATH [CURL ARGS]: a 1 kB/s client on a 20 MB response.
slow() {
	local desc=$1 path=$2 base kb cpid
	shift 2
	kv_curl /v1/chat/completions -o /dev/null "${AUTH[@]}" -d "$CHAT"	# warm the buffers
	base=$(kv_daemon_kb)
	# Its own key: the cut stream is charged, and must not spend AUTH's budget.
	curl -sS -m 120 --limit-rate 1k -o /dev/null -H 'Authorization: Bearer sk-faults-slow' \
		"$KV_URL$path" "$@" 2>/dev/null &
	cpid=$!
	kv_track $cpid
	check "$desc: the gateway stops reading the upstream" kv_wait_for 30 paused
	kb=$(kv_daemon_kb)
	echo "# $desc: daemon ${base} kB -> ${kb} kB; mock Send-Q $(queues "sport = :$MOCK_PORT" 2)," \
		"gateway Recv-Q $(queues "dport = :$MOCK_PORT" 1), Send-Q to client $(queues "sport = :$KV_PORT" 2)"
	if [ $asan = 1 ]; then
		echo "# $desc: memory not measured under ASan (its allocator holds freed memory)"
	else
		check "$desc: daemon memory grew by $((kb - base)) kB (< 4 MB) with 20 MB pending" \
			test $((kb - base)) -lt 4096
	fi
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
}

slow "slow reader, spliced /blob" "/blob?bytes=20000000&seed=3"
slow "slow reader, scanned SSE" /v1/chat/completions -d "$CHAT" \
	-H 'x-mock-tokens: 2000' -H 'x-mock-token-bytes: 10000'
code=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' "${AUTH[@]}" -d '{"model":"gpt-4o-mini"}')
check_eq "the gateway still answers after the slow readers left" "$code" 200

# Every cut, abort, timeout and error above settled its reservation and
# closed its stream gauge.
reserved() { [ "$(kv_ctl keys --json | jq '[.keys[].reserved_nusd] | add')" = 0 ]; }
check "no reservation is left behind" kv_wait_for 10 reserved
streams() { [ "$(kv_ctl status --json | jq .active_streams)" = 0 ]; }
check "no stream is counted active" kv_wait_for 10 streams

kv_finish
