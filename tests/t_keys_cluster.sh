#!/bin/bash
# t_keys_cluster (issue 24): an issued key is valid on every host of a
# [cluster], on a real redis-server (unix socket) and two kilovolt hosts
# under unknown_keys = deny:
#  - POST /keys on host a: host b serves the key within a few seconds, and
#    its spend on b counts in Redis for the key;
#  - POST /keys/ID/rotate on a: b refuses the old secret (401) and serves the
#    new one, charged to the same account;
#  - kvctl keys revoke on b: a refuses it (401), the mock sees nothing;
#  - a third host started later with a fresh ledger knows the live keys;
#  - a name that host b has as a [key] section is not taken over there
#    (KV0772), the key stays valid where it was issued;
#  - issue 33: a revoked key's rotated-out secrets give their slots back on
#    every host, and no host makes them again from Redis (which keeps them).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli jq curl sha256sum; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C

RSOCK=$T/redis.sock
rcli() { redis-cli -s "$RSOCK" "$@"; }
redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 --dir "$T" \
	--save '' --logfile "$T/redis.log" </dev/null &
kv_track "$!"
kv_wait_for 10 sh -c "redis-cli -s '$RSOCK' ping 2>/dev/null | grep -q PONG"
kv_start_mock

ADMIN=admin-$RANDOM-token
export KV_TEST_ADMIN=$ADMIN

# host_start NAME [INI TEXT on stdin]: a daemon with config $T/NAME.ini,
# ledger $T/NAME.ledger, log $T/kilovoltd-NAME.log; PORT_NAME, SPORT_NAME.
host_start() {
	local name=$1 port sport i
	port=$(kv_free_port)
	sport=$(kv_free_port)
	KV_PORT=$port KV_STATUS_PORT=$sport kv_write_config
	sed -i "s|^ledger = .*|ledger = $T/$name.ledger|" "$T/kilovolt.ini"
	cat >>"$T/kilovolt.ini" <<EOF

[cluster]
redis = unix:$RSOCK
host_id = $name
lease_ttl = 4
EOF
	mv "$T/kilovolt.ini" "$T/$name.ini"
	eval "PORT_$name=$port SPORT_$name=$sport"
	kv_start_host "$name" "$port"
}
hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
field() { hctl "$1" keys --json | jq -r --arg id "$2" "[.keys[] | select(.id == \$id) | .$3] | first // \"none\""; }
# chat HOST KEY: the status code of a small chat completion on HOST
chat() {
	curl -sS -m 30 -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $2" \
		-H 'content-type: application/json' \
		-d '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"http://127.0.0.1:$(eval echo "\$PORT_$1")/v1/chat/completions"
}
is() { [ "$(chat "$1" "$2")" = "$3" ]; }
api() {
	local h=$1 m=$2 p=$3
	shift 3
	curl -sS -m 30 -o "$T/api" -w '%{http_code}' -X "$m" -H "Authorization: Bearer $ADMIN" \
		"$@" "http://127.0.0.1:$(eval echo "\$SPORT_$h")$p"
}
mock_posts() { grep -c '^POST /v1/chat/completions' "$MOCK_LOG"; }

host_start a <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
[budget]
unknown_keys = deny
EOF
host_start b <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
[budget]
unknown_keys = deny
[key dup]
key = sk-dup-on-b
EOF

# ---- issued on a, valid on b ---------------------------------------------------

check_eq "POST /keys on host a: 201" \
	"$(api a POST /keys -d '{"label":"shared","budget":"1.00","rpm":1000}')" 201
K1=$(jq -r .key "$T/api")
ID=$(jq -r .id "$T/api")
check "Redis holds the key's state, not the key" \
	kv_wait_for 10 eval "rcli hget kv:issued \"\$(printf %s '$K1' | sha256sum | cut -d' ' -f1)\" | grep -q '^1 0 1000000000 1000 '"
check "... and never the raw key" eval "! rcli hgetall kv:issued | grep -qF '$K1'"
check "host b serves the key issued on a" kv_wait_for 15 is b "$K1" 200
check "b's log says where it came from" \
	grep -q "cluster: key $ID (shared) issued on another host is valid here" "$T/kilovoltd-b.log"
check_eq "b lists it as issued" "$(field b "$ID" issued)" true
check_eq "... with its budget" "$(field b "$ID" budget_nusd)" 1000000000
H1=$(printf %s "$K1" | sha256sum | cut -d' ' -f1)
settled() { [ "$(rcli hget "kv:$H1:0" S)" -gt 0 ] 2>/dev/null; }
check "b's spend on the key reaches Redis (its settled spend S > 0)" kv_wait_for 10 settled
check_eq "a serves it too" "$(chat a "$K1")" 200

# ---- rotated on a ----------------------------------------------------------------

check_eq "POST /keys/shared/rotate on a: 200" "$(api a POST /keys/shared/rotate)" 200
K2=$(jq -r .key "$T/api")
check_eq "... same account" "$(jq -r .id "$T/api")" "$ID"
check "b serves the new secret" kv_wait_for 15 is b "$K2" 200
check "b refuses the old one" kv_wait_for 15 is b "$K1" 401
check "... saying it was replaced" jq -e '.error.message | test("replaced")' "$T/body"
check_eq "b charges the new secret to the same account" "$(hctl b keys --json |
	jq -r --arg id "$ID" '[.keys[] | select(.id == $id)] | length')" 1

# ---- a host started later ---------------------------------------------------------

host_start c <<EOF
[budget]
unknown_keys = deny
EOF
check "host c, started later, serves the live secret" kv_wait_for 15 is c "$K2" 200
check_eq "... and refuses the rotated one" "$(chat c "$K1")" 401

# ---- revoked on b ------------------------------------------------------------------

# Until a host's next pass over kv:issued (a second) it still serves the
# key: the requests of the wait loop may reach the mock; once refused, none.
check "kvctl keys revoke on host b" hctl b keys revoke shared
t0=$(date +%s%N)
check "a refuses the key revoked on b" kv_wait_for 15 is a "$K2" 401
echo "# the revocation reached host a in $((($(date +%s%N) - t0) / 1000000)) ms"
check "... saying it was revoked" jq -e '.error.message | test("revoked")' "$T/body"
check "c refuses it too" kv_wait_for 15 is c "$K2" 401
n=$(mock_posts)
codes=
for i in 1 2 3 4 5; do codes="$codes $(chat a "$K2") $(chat b "$K2") $(chat c "$K2")"; done
check_eq "from then on every host refuses it" "$(tr ' ' '\n' <<<"$codes" | grep . | sort -u | xargs)" 401
check_eq "... and the mock receives nothing" "$(mock_posts)" "$n"
check "Redis has it revoked" eval "rcli hget kv:issued \"\$(printf %s '$K1' | sha256sum | cut -d' ' -f1)\" | grep -q '^1 [13] '"

# ---- slots come back on every host (issue 33) ------------------------------------------

# Link slots of a host: its slots in use less its accounts.
links() {
	echo $(($(hctl "$1" status --json | jq .accounts_used) - $(hctl "$1" keys --json | jq '.keys | length')))
}
check_eq "POST /keys 'churn' on a: 201" "$(api a POST /keys -d '{"label":"churn"}')" 201
for i in 1 2 3; do api a POST /keys/churn/rotate >/dev/null; done
KC=$(jq -r .key "$T/api")
check "b serves churn's third secret" kv_wait_for 15 is b "$KC" 200
check_eq "a holds 4 link slots (shared's live secret, churn's 3)" "$(links a)" 4
# b holds 2 to 4: a slot for each secret it served before its rotation was
# seen there, none for one it learnt of rotated out already.
check "kvctl keys revoke churn on a" hctl a keys revoke churn
check "a frees churn's 2 rotated-out secrets' slots" kv_wait_for 15 eval '[ "$(links a)" = 2 ]'
check "b refuses churn" kv_wait_for 15 is b "$KC" 401
check "b frees those it held" kv_wait_for 15 eval '[ "$(links b)" = 2 ]'
sleep 3	# three passes over kv:issued: a link made again from Redis would show
check_eq "a does not make them again from Redis" "$(links a)" 2
check_eq "... nor b" "$(links b)" 2
check_eq "a reclaimed them once" "$(grep -c 'reclaimed 2 slots of rotated-out' "$T/kilovoltd-a.log")" 1
check "Redis still lists churn's 2 rotated-out secrets (its state only grows)" eval \
	"rcli hgetall kv:issued | grep ' churn ' | grep -o ':1' | wc -l | grep -qx 2"

# ---- a name b has in its config -------------------------------------------------------

check_eq "POST /keys 'dup' on a (b has a [key dup]): 201" \
	"$(api a POST /keys -d '{"label":"dup"}')" 201
K3=$(jq -r .key "$T/api")
check "b says it cannot take it (KV0772)" kv_wait_for 15 grep -q "KV0772.*dup.*exists already" "$T/kilovoltd-b.log"
check_eq "b refuses that key" "$(chat b "$K3")" 401
check_eq "b's own [key dup] is served" "$(chat b sk-dup-on-b)" 200
check "a serves it" kv_wait_for 10 is a "$K3" 200

kv_finish
