#!/bin/bash
# t_tls13: kilovolt's own TLS 1.3 record layer (tls_record_layer = own, the
# default) against the mock over TLS 1.3 with the chain from gen_certs.sh.
# After OpenSSL's handshake the connection leaves OpenSSL (the status port's
# kilovolt_upstream_tls_handoffs_total counts it); JSON, SSE and 1 MB
# streams come out byte for byte as the same requests through a plaintext
# upstream; the ledger holds the mock's bill; KeyUpdates (with and without
# update_requested) and extra tickets from the server mid-stream are
# followed, and our own KeyUpdate is one the server accepts; a server that
# speaks only TLS 1.2, and an upstream with tls_record_layer = openssl, stay
# on OpenSSL and relay the same bytes; tls_record_layer = kernel falls back
# to the own layer where the kernel has no TLS, and says so once a worker.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq openssl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

KV_WORKERS=1	# one worker: one pooled connection per upstream, counts exact
kv_start_mock
kv_start_mock_tls server
GOOD=$MOCK_TLS_PORT
GOOD_LOG=$MOCK_TLS_LOG
kv__mock mock-tls12 -t "$KV_CERTS/server-chain.pem" "$KV_CERTS/server.key" -2 ||
	{ fail "start mock_upstream over TLS 1.2"; kv_finish; }
OLD=$KV__PORT
CA=$KV_CERTS/ca.pem
# openssl s_server -www answers a GET with a page over TLS 1.3 and ends it
# with close_notify (HTTP/1.0, close-delimited).
SPORT=$(kv_free_port)
openssl s_server -accept "127.0.0.1:$SPORT" -cert "$KV_CERTS/server.pem" \
	-key "$KV_CERTS/server.key" -cert_chain "$KV_CERTS/inter.pem" -www -quiet \
	</dev/null >"$T/s_server.log" 2>&1 &
kv_track $!
s_server_up() { curl -s -o /dev/null -m 2 --cacert "$CA" "https://localhost:$SPORT/"; }
kv_wait_for 10 s_server_up || fail "openssl s_server answers on $SPORT"

kv_write_config <<EOF
[budget]
default = 100.00

[upstream own]
url = https://localhost:$GOOD
ca_file = $CA
models = own-*

[upstream plain]
url = http://127.0.0.1:$MOCK_PORT
models = pln-*

[upstream tls12]
url = https://localhost:$OLD
ca_file = $CA
models = t12-*

[upstream ossl]
url = https://localhost:$GOOD
ca_file = $CA
models = osl-*
tls_record_layer = openssl

[upstream kern]
url = https://localhost:$GOOD
ca_file = $CA
models = krn-*
tls_record_layer = kernel

[upstream page]
url = https://localhost:$SPORT
ca_file = $CA
free_paths = /tlsinfo
EOF
kv_start

metric() {
	curl -sS -m 5 "http://127.0.0.1:$KV_STATUS_PORT/metrics" |
		awk -v m="$1" '$1 == m { print $2 }'
}
handshakes() { metric kilovolt_upstream_tls_handshakes_total; }
handoffs() { metric kilovolt_upstream_tls_handoffs_total; }
key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
settled() { [ "$(key_field "$1" reserved_nusd)" = 0 ] && [ -n "$(key_field "$1" spent_nusd)" ]; }
# The bill of the mock's last response at [price default] (1 and 3 USD per
# 1M tokens: 1,000 and 3,000 nUSD per token).
bill_nusd() {
	local line i o
	line=$(tail -n 1 "$1.bills")
	i=$(sed 's/.* input=\([0-9]*\).*/\1/' <<<"$line")
	o=$(sed 's/.* output=\([0-9]*\).*/\1/' <<<"$line")
	echo $((i * 1000 + o * 3000))
}
# Timestamps and the model names (which pick the upstream) aside.
norm() { sed -E -e 's/"(created|created_at)":[0-9]+/"\1":0/g' -e 's/(own|pln|t12|osl|krn)-1/M-1/g' "$@"; }

# same DESC LAYER KEY BODY [CURL ARGS]: the request with model LAYER-1 through
# the gateway, with key sk-t13-KEY, gives the bytes the same request with
# model pln-1 gives through a plaintext upstream, and that key's ledger
# spend is the mock's bill.
same() {
	local desc=$1 layer=$2 key=$3 body=$4 code log
	shift 4
	rm -f "$T/plain.out" "$T/tls.out"
	# bodies go through files: one argument may not pass 128 KB
	printf '%s' "${body//LAYER/pln}" >"$T/plain.body"
	printf '%s' "${body//LAYER/$layer}" >"$T/tls.body"
	code=$(kv_curl /v1/chat/completions -o "$T/plain.out" -w '%{http_code}' \
		-H "Authorization: Bearer sk-t13-plain-$key" --data-binary @"$T/plain.body" "$@")
	check_eq "$desc: plaintext run 200" "$code" 200
	code=$(kv_curl /v1/chat/completions -o "$T/tls.out" -w '%{http_code}' \
		-H "Authorization: Bearer sk-t13-$key" --data-binary @"$T/tls.body" "$@")
	check_eq "$desc: 200" "$code" 200
	if [ -s "$T/plain.out" ] && cmp -s <(norm "$T/plain.out") <(norm "$T/tls.out"); then
		pass "$desc: the same bytes as through plaintext ($(wc -c <"$T/tls.out") bytes)"
	else
		fail "$desc: the same bytes as through plaintext"
		diff <(norm "$T/plain.out") <(norm "$T/tls.out") | head -n 10 | cut -c1-300
	fi
	log=$GOOD_LOG
	[ "$layer" = t12 ] && log=$T/mock-tls12.log
	local id
	id=$(id_of "sk-t13-$key")
	check "$desc: settled" kv_wait_for 20 settled "$id"
	check_eq "$desc: the ledger holds the mock's bill" "$(key_field "$id" spent_nusd)" "$(bill_nusd "$log")"
}

# ---- TLS 1.3 on the own record layer ------------------------------------------

same "JSON" own json '{"model":"LAYER-1","messages":[]}' -H 'x-mock-tokens: 40'
hs=$(handshakes) ho=$(handoffs)
check "after one request, the connection left OpenSSL: $ho hand-off(s) of $hs handshake(s)" \
	test "$hs" -ge 1 -a "$ho" = "$hs"
same "SSE with usage" own sse \
	'{"model":"LAYER-1","stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-mock-tokens: 200' -H 'x-mock-delay-ms: 2'
same "SSE, usage injected and removed" own inj '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 30'
same "1 MB stream in 16 KB tokens (records of 2^14)" own big \
	'{"model":"LAYER-1","stream":true}' -H 'x-mock-tokens: 64' -H 'x-mock-token-bytes: 16384'
same "JSON of 1 MB" own bigjson '{"model":"LAYER-1","messages":[]}' \
	-H 'x-mock-tokens: 100' -H 'x-mock-token-bytes: 10000'
# A 400 KB request body: sealed in records of 2^14, the mock bills it whole
# (input = its bytes / 4, in the usage the plaintext run's bytes match).
big=$(head -c 300000 /dev/zero | base64 -w0)
same "a 400 KB request body" own bigbody "{\"model\":\"LAYER-1\",\"messages\":[{\"role\":\"user\",\"content\":\"$big\"}]}" \
	-H 'x-mock-tokens: 5'
check "... billed as the whole body (input $(tail -n 1 "$GOOD_LOG.bills" | sed 's/.* input=\([0-9]*\).*/\1/') tokens)" \
	test "$(tail -n 1 "$GOOD_LOG.bills" | sed 's/.* input=\([0-9]*\).*/\1/')" -ge 100000
check_eq "the pooled TLS 1.3 connection stayed on the own layer (no new handshake)" \
	"$(handshakes)/$(handoffs)" "$hs/$ho"

# KeyUpdate from the server mid-stream: every 4th event one, every other one
# asking for ours; a ticket every 7th. The stream relays the same bytes, on
# the same connection, and the server reads our KeyUpdates (the next request
# on that connection is sealed under our updated key).
ku0=$(kv_mock_stat key_updates_sent "$GOOD" https)
seen0=$(kv_mock_stat key_updates_seen "$GOOD" https)
same "SSE with the server's KeyUpdates and tickets mid-stream" own ku \
	'{"model":"LAYER-1","stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-mock-tokens: 40' -H 'x-mock-delay-ms: 5' -H 'x-mock-key-update: 4' -H 'x-mock-tickets: 7'
sent=$(( $(kv_mock_stat key_updates_sent "$GOOD" https) - ku0 ))
asked=$(( (sent + 1) / 2 ))
check "the mock sent KeyUpdates mid-stream ($sent, $asked asking for ours)" test "$sent" -ge 8
check "... and tickets ($(kv_mock_stat tickets_sent "$GOOD" https))" \
	test "$(kv_mock_stat tickets_sent "$GOOD" https)" -ge 4
seen_ok() { [ $(( $(kv_mock_stat key_updates_seen "$GOOD" https) - seen0 )) -ge "$asked" ]; }
check "the mock read our KeyUpdate for each that asked ($asked)" kv_wait_for 10 seen_ok
same "the next request on that connection, under our new key" own afterku \
	'{"model":"LAYER-1","stream":true}' -H 'x-mock-tokens: 10'
check_eq "... on the same connection, still on the own layer" "$(handshakes)/$(handoffs)" "$hs/$ho"

# close_notify ends a close-delimited page: relayed whole, on the own layer.
rm -f "$T/page"
kv_curl /tlsinfo -o "$T/page" -H 'Authorization: Bearer sk-t13-page'
check "s_server's page over TLS 1.3, relayed to its end (close_notify)" \
	grep -q 'Protocol  *: TLSv1.3' "$T/page"
check "... whole" grep -q '</HTML>' "$T/page"
check_eq "... on a new connection that left OpenSSL too" "$(handshakes)/$(handoffs)" \
	"$((hs + 1))/$((ho + 1))"
hs=$(handshakes) ho=$(handoffs)

# ---- OpenSSL's record layer: a TLS 1.2 server; tls_record_layer = openssl ------

same "TLS 1.2 server: SSE" t12 old '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 50' -H 'x-mock-delay-ms: 2'
same "TLS 1.2 server: 1 MB stream" t12 oldbig '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 64' -H 'x-mock-token-bytes: 16384'
check_eq "the TLS 1.2 mock never spoke TLS 1.3" "$(kv_mock_stat tls13 "$OLD" https)" 0
check_eq "TLS 1.2: one more handshake, no hand-off" "$(handshakes)/$(handoffs)" "$((hs + 1))/$ho"
same "tls_record_layer = openssl: SSE" osl ossl '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 50' -H 'x-mock-key-update: 5'
check_eq "tls_record_layer = openssl: one more handshake, no hand-off" \
	"$(handshakes)/$(handoffs)" "$((hs + 2))/$ho"

# ---- tls_record_layer = kernel ----------------------------------------------
# Without kernel TLS (no /proc/net/tls_stat: this machine has no tls module)
# the leg falls back to the own record layer, said once per worker. With it,
# the kernel seals and opens the records: that path was never run here.
hs=$(handshakes) ho=$(handoffs)
same "tls_record_layer = kernel: SSE" krn kern '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 50' -H 'x-mock-delay-ms: 2'
check_eq "tls_record_layer = kernel: one more handshake, and it left OpenSSL" \
	"$(handshakes)/$(handoffs)" "$((hs + 1))/$((ho + 1))"
same "tls_record_layer = kernel: 1 MB stream" krn kernbig '{"model":"LAYER-1","stream":true}' \
	-H 'x-mock-tokens: 64' -H 'x-mock-token-bytes: 16384'
n663=$(grep -c 'KV0663' "$T/kilovoltd.log")
if [ -e /proc/net/tls_stat ]; then
	check_eq "kernel TLS is here: no fallback logged" "$n663" 0
else
	check "no kernel TLS: the fallback to the own layer logged, once a worker ($n663)" \
		test "$n663" -ge 1 -a "$n663" -le 2
	check "... saying why" grep -q 'KV0663.*kernel TLS unavailable (no /proc/net/tls_stat' "$T/kilovoltd.log"
fi

check_eq "no record layer failure logged (KV0661, KV0662)" \
	"$(grep -c 'KV066[12]' "$T/kilovoltd.log")" 0
kv_finish
