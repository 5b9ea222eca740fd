#!/bin/bash
# t_cluster_acl (issue 34, row 5): the Redis ACL user the manual describes
# works. A real redis-server; the user made with the very ACL SETUSER line
# of docs/cluster.md (the same as kilovolt.ini(5)'s); two kilovolt hosts
# under unknown_keys = deny logging in as it:
#  - a configured key is leased and served, no KV0755 or KV0775;
#  - a key issued on host a is served on host b (HSET and HSCAN of
#    kv:issued), kvctl cluster reads Redis as that user, and kvctl keys
#    revoke and forget write it as that user;
#  - the user without HSCAN and HMGET: at the next connection one line
#    names both (KV0775), the failing issued-key scan is logged once
#    (KV0776), not once a pass; given back, the scan's return is logged.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli jq curl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C

ACL_LINE=$(grep -m 1 '^ACL SETUSER kilovolt ' "$top_srcdir/docs/cluster.md")
[ -n "$ACL_LINE" ] || { fail "docs/cluster.md has the ACL SETUSER line"; kv_finish; }
RPW=kv-acl-$$-Pa55
export KV_TEST_REDIS_PW=$RPW
kv_redis_start --appendonly yes
# the line as documented, PASSWORD replaced; the default user keeps no
# password so that the test can inspect Redis
read -ra ACL_WORDS <<<"${ACL_LINE/PASSWORD/$RPW}"
check_eq "the documented ACL SETUSER is accepted" "$(rcli "${ACL_WORDS[@]}")" OK
kv_start_mock

ADMIN=admin-$RANDOM-token
export KV_TEST_ADMIN=$ADMIN
KEY=sk-acl-configured-31337

# host_start NAME: a daemon with $T/NAME.ini logging in as kilovolt
host_start() {
	kv_host_config "$1" <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
[budget]
unknown_keys = deny
[key configured]
key = $KEY
budget = 1.00
[cluster]
user = kilovolt
password = env:KV_TEST_REDIS_PW
EOF
	kv_start_host "$1" "$(eval echo "\$PORT_$1")"
}
hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
chat() {
	curl -sS -m 30 -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $2" \
		-H 'content-type: application/json' \
		-d '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"http://127.0.0.1:$(eval echo "\$PORT_$1")/v1/chat/completions"
}
is() { [ "$(chat "$1" "$2")" = "$3" ]; }
logs() { cat "$T"/kilovoltd-a.log "$T"/kilovoltd-b.log; }

host_start a
host_start b

check "host a serves the configured key through its lease" kv_wait_for 15 is a "$KEY" 200
check "host b too" kv_wait_for 15 is b "$KEY" 200
check "Redis holds the key's spend" eval "rcli --scan --pattern 'kv:*:*' | grep -q ."
code=$(curl -sS -m 30 -o "$T/api" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
	-d '{"label":"issued","budget":"1.00"}' "http://127.0.0.1:$SPORT_a/keys")
check_eq "POST /keys on host a: 201" "$code" 201
K1=$(jq -r .key "$T/api")
check "host b serves the key issued on a" kv_wait_for 15 is b "$K1" 200
check "kvctl cluster reads Redis as the user" eval "hctl a cluster | grep -q configured"
check "kvctl keys revoke as the user writes Redis" hctl a keys revoke issued
check "host b refuses it" kv_wait_for 15 is b "$K1" 401
check "kvctl forget as the user" hctl a forget issued
check "... it is out of kv:issued" eval "[ \"\$(rcli hlen kv:issued)\" = 0 ]"
check "no lease script failure (KV0755)" eval "! logs | grep -q KV0755"
check "no ACL refusal (KV0775)" eval "! logs | grep -q KV0775"
check "the probe keys are gone" eval "[ -z \"\$(rcli --scan --pattern 'kv:aclcheck*')\" ]"

# Without HSCAN and HMGET: the next connection names both.
check_eq "the ACL loses HSCAN and HMGET" "$(rcli ACL SETUSER kilovolt -hscan -hmget)" OK
rcli CLIENT KILL USER kilovolt >/dev/null
check "host a names both missing commands (KV0775)" kv_wait_for 15 \
	grep -q 'KV0775.*user kilovolt refuses HMGET HSCAN' "$T/kilovoltd-a.log"
check "the failing issued-key scan is logged (KV0776)" kv_wait_for 15 \
	grep -q 'KV0776.*NOPERM' "$T/kilovoltd-a.log"
sleep 4	# several passes of the issued-key scan (one a second)
check_eq "... once, not once a pass" "$(grep -c KV0776 "$T/kilovoltd-a.log")" 1
check_eq "KV0775 once per host" "$(grep -c KV0775 "$T/kilovoltd-a.log")" 1

check_eq "the ACL gets them back" "$(rcli ACL SETUSER kilovolt +hscan +hmget)" OK
rcli CLIENT KILL USER kilovolt >/dev/null
check "host a reads the issued keys again" kv_wait_for 15 \
	grep -q 'the issued keys are read from Redis again' "$T/kilovoltd-a.log"
check "host a serves again" kv_wait_for 15 is a "$KEY" 200

kv_finish
