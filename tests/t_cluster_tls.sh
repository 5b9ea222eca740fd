#!/bin/bash
# t_cluster_tls: [cluster] redis = rediss:// against a real redis-server
# serving TLS only (tests/gen_certs.sh's chain):
#  - with ca_file naming the test CA the host leases over TLS and serves;
#    the lease is in Redis, and kvctl cluster reads it over TLS too;
#  - with a trust anchor that did not sign the server's chain, or a server
#    whose certificate names another host, the handshake is refused
#    (KV0768, the reason named), nothing is leased and the provider sees
#    nothing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v redis-server >/dev/null || skip "redis-server not installed"
command -v redis-cli >/dev/null || skip "redis-cli not installed"
kv_certs
KV_TIMEOUT=${KV_TIMEOUT:-200}
KEY=sk-kvtest-cluster-tls-51150

# redis_tls CHAIN KEYFILE: a redis-server on a TLS port only; sets RPORT.
redis_tls() {
	RPORT=$(kv_free_port)
	redis-server --port 0 --tls-port "$RPORT" --bind 127.0.0.1 \
		--tls-cert-file "$KV_CERTS/$1" --tls-key-file "$KV_CERTS/$2" \
		--tls-ca-cert-file "$KV_CERTS/ca.pem" --tls-auth-clients no \
		--dir "$T" --appendonly yes --appendfilename "ao-$RPORT.aof" \
		--appenddirname "ad-$RPORT" --save '' \
		--logfile "$T/redis-$RPORT.log" </dev/null &
	kv_track "$!"
	kv_wait_for 10 sh -c "redis-cli --tls --cacert '$KV_CERTS/ca.pem' -h 127.0.0.1 \
		-p $RPORT ping 2>/dev/null | grep -q PONG" || skip "redis-server without TLS"
}
rcli() { redis-cli --tls --cacert "$KV_CERTS/ca.pem" -h 127.0.0.1 -p "$RPORT" "$@"; }

# config HOST CA: one cluster host on rediss://HOST:RPORT trusting CA.
config() {
	kv_write_config <<EOF2
[key tls]
key = $KEY
budget = 1.00

[cluster]
redis = rediss://$1:$RPORT
ca_file = $2
host_id = tls-$$
lease_ttl = 4
EOF2
}

ask() {
	curl -sS -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" \
		-H 'Content-Type: application/json' -H 'x-mock-tokens: 5' \
		--data-binary '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"$KV_URL/v1/chat/completions"
}
sent() { grep -c "chat/completions" "$MOCK_LOG"; }

kv_start_mock
redis_tls server-chain.pem server.key
config localhost "$KV_CERTS/ca.pem"
kv_start
check "rediss:// with the test CA: connected over TLS" \
	kv_wait_for 20 grep -q "redis: connected to localhost" "$KV_LOG"
check_eq "rediss://: a request is served" "$(ask)" 200
check "rediss://: the lease is in Redis" sh -c \
	"redis-cli --tls --cacert '$KV_CERTS/ca.pem' -h 127.0.0.1 -p $RPORT --scan --pattern 'kv:*:0' | grep -q ."
check "rediss://: the host id is held over TLS" sh -c \
	"redis-cli --tls --cacert '$KV_CERTS/ca.pem' -h 127.0.0.1 -p $RPORT get kv:hb:tls-$$ | grep -q pid"
kv_ctl cluster --json >"$T/cluster.json" 2>"$T/cluster.err"
check "kvctl cluster reads Redis over TLS" grep -q "tls-$$" "$T/cluster.json"
kv_stop

# A trust anchor that did not sign the server's chain: refused.
config 127.0.0.1 "$KV_CERTS/self.pem"
kv_start
check "untrusted chain: the handshake is refused (KV0768)" \
	kv_wait_for 20 grep -q "KV0768.*certificate" "$KV_LOG"
echo "# $(grep KV0768 "$KV_LOG" | head -n 1)"
before=$(sent)
check_eq "untrusted chain: the request is refused" "$(ask)" 503
check_eq "untrusted chain: the provider saw nothing" "$(sent)" "$before"
check "kvctl cluster refuses the untrusted chain too" sh -c "! '$KV_CTL_BIN' -c '$T/kilovolt.ini' cluster"
kv_stop

# A server whose certificate names another host (wrong.example).
redis_tls wrong-chain.pem wrong.key
rm -f "$T/ledger"
config localhost "$KV_CERTS/ca.pem"
kv_start
check "wrong server name: the handshake is refused (KV0768)" \
	kv_wait_for 20 grep -q "KV0768.*localhost:$RPORT.*hostname mismatch" "$KV_LOG"
check_eq "wrong server name: nothing is leased in that Redis" \
	"$(rcli --scan --pattern 'kv:*' | grep -c .)" 0
kv_stop

kv_finish
