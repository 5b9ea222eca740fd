#!/bin/bash
# t_tls_flood: no upstream can make a worker spin (issue 34, row 2). A
# hostile TLS 1.3 server (tests/hostile_tls, sealing its own records) sends,
# mid-stream, records that carry no data back to back for seconds: empty
# records and KeyUpdates fail the connection after 32 in a row (KV0665);
# session tickets, which a server may send many of, are read a few at a time
# between the worker's other work, on kilovolt's own record layer and on
# OpenSSL's (auto-retry off) alike, and the stream ends whole. Meanwhile
# another client's requests on the same (only) worker are answered: their
# time is a bounded correctness check (a few seconds, against 4-5 s of a
# stalled worker), not a measurement. A record header TLS 1.3 does not
# allow is logged (KV0661) as it is closed.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq openssl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
HOSTILE=$top_builddir/tests/hostile_tls
[ -x "$HOSTILE" ] || skip "tests/hostile_tls not built"

KV_WORKERS=1	# the other client is on the hostile stream's worker
FLOOD=5
kv_start_mock
kv_certs

# hostile NAME MODE [ARGS]: a hostile server; its port in ${NAME}_PORT
hostile() {
	local name=$1 mode=$2
	shift 2
	"$HOSTILE" -P "$T/$name.port" -c "$KV_CERTS/server-chain.pem" -k "$KV_CERTS/server.key" \
		-m "$mode" -d "$FLOOD" -L "$T/$name.log" "$@" 2>>"$T/$name.err" &
	kv_track $!
	kv_wait_for 10 test -s "$T/$name.port" || { fail "start hostile_tls $name"; kv_finish; }
	printf -v "${name}_PORT" %s "$(cat "$T/$name.port")"
}
hostile empty empty
hostile keyupdate keyupdate
hostile tickets tickets
hostile badheader badheader

kv_write_config <<EOF
[upstream plain]
url = http://127.0.0.1:$MOCK_PORT
free_paths = /blob

[upstream empty]
url = https://localhost:$empty_PORT
ca_file = $KV_CERTS/ca.pem
free_paths = /flood/empty

[upstream keyupdate]
url = https://localhost:$keyupdate_PORT
ca_file = $KV_CERTS/ca.pem
free_paths = /flood/keyupdate

[upstream tickets]
url = https://localhost:$tickets_PORT
ca_file = $KV_CERTS/ca.pem
free_paths = /flood/tickets

[upstream ticketsossl]
url = https://localhost:$tickets_PORT
ca_file = $KV_CERTS/ca.pem
free_paths = /flood/tickets-openssl
tls_record_layer = openssl

[upstream badheader]
url = https://localhost:$badheader_PORT
ca_file = $KV_CERTS/ca.pem
free_paths = /flood/badheader
EOF
kv_start
AUTH="Authorization: Bearer sk-tls-flood-test"

# other_client OUT: requests to the plain mock on the same worker, one every
# 0.2 s while the flood runs; each one's seconds, a line each, into OUT
other_client() {
	local i
	sleep 0.5
	for ((i = 0; i < 15; i++)); do
		kv_curl "/blob?bytes=100&seed=$i" -H "$AUTH" -o /dev/null -w '%{http_code} %{time_total}\n' \
			>>"$1" 2>/dev/null || echo "000 99" >>"$1"
		sleep 0.2
	done
}

# flood NAME PATH: a stream from the hostile server NAME while another
# client asks; the stream's body in $T/NAME.body
flood() {
	local name=$1 path=$2
	: >"$T/$name.other"
	kv_curl "$path" -H "$AUTH" -o "$T/$name.body" -m 60 &
	local cpid=$!
	other_client "$T/$name.other"
	wait "$cpid"
}

worst() { awk '{ if ($2 > w) w = $2 } END { print w + 0 }' "$1"; }
all_ok() { [ "$(grep -c '^200 ' "$1")" = 15 ]; }
bounded() { awk -v w="$(worst "$1")" 'BEGIN { exit !(w < 2.5) }'; }

for mode in empty keyupdate; do
	flood "$mode" "/flood/$mode"
	check "$mode: the other client's 15 requests answered" all_ok "$T/$mode.other"
	check "$mode: the other client waited at most 2.5 s (worst $(worst "$T/$mode.other") s)" \
		bounded "$T/$mode.other"
	check "$mode: the hostile server was cut off early" kv_wait_for 10 grep -qs 'end=cut' "$T/$mode.log"
	check "$mode: the stream did not end whole" eval "! grep -q last '$T/$mode.body'"
	echo "# $mode: $(cat "$T/$mode.log"); other client worst $(worst "$T/$mode.other") s"
done
check_eq "KV0665 logged for each flood of empty records and KeyUpdates" \
	"$(grep -c KV0665 "$KV_LOG")" 2

for path in /flood/tickets /flood/tickets-openssl; do
	name=tickets${path#/flood/tickets}
	flood "$name" "$path"
	check "$name: the other client's 15 requests answered" all_ok "$T/$name.other"
	check "$name: the other client waited at most 2.5 s (worst $(worst "$T/$name.other") s)" \
		bounded "$T/$name.other"
	check "$name: the stream ended whole after the tickets" grep -q '"last":true' "$T/$name.body"
	echo "# $name: other client worst $(worst "$T/$name.other") s"
done
check_eq "both ticket floods were sent whole" "$(grep -c 'mode=tickets.*end=done' "$T/tickets.log")" 2
echo "# tickets: $(tr '\n' ' ' <"$T/tickets.log")"

kv_curl /flood/badheader -H "$AUTH" -o "$T/badheader.body" -m 30
check "a record header TLS 1.3 does not allow: logged (KV0661) and closed" \
	grep -q 'KV0661.*header TLS 1.3' "$KV_LOG"
# (the server finds out at its next send after kilovolt's close)
check "badheader: the hostile server was cut off" kv_wait_for 10 grep -qs 'end=cut' "$T/badheader.log"

kv_finish
