#!/bin/bash
# t_keys_revoke (issue 34, row 4): a revocation is never lost. Two kilovolt
# hosts on a real redis-server share issued keys (unknown_keys = deny):
#  - kvctl keys create, revoke and rotate on host a write Redis themselves:
#    a revocation made while a's kilovoltd is down reaches host b (401)
#    within its next issued-key pass; the time from kvctl's exit to b's
#    first 401 is printed for each of 3 keys (the window; goal <= 1 s,
#    checked against a generous 3 s);
#  - with Redis unreachable, kvctl keys revoke exits non-zero and says so;
#    the key is revoked on a all the same, and running it again once Redis
#    answers writes it;
#  - DELETE /keys/ID on a running a: b refuses within a generous 3 s (the
#    window printed too); followed at once by a's stop: the master's last
#    pass writes it, b refuses the key;
#  - kvctl forget of an issued key removes it from Redis (a revoked one;
#    a valid one is refused: revoke first), and no host writes it back; a
#    host down through the revocation and the forget revokes it when back.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in redis-server redis-cli jq curl sha256sum; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C

kv_redis_start
kv_start_mock

ADMIN=admin-$RANDOM-token
export KV_TEST_ADMIN=$ADMIN

host_config() {
	kv_host_config "$1" <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
[budget]
unknown_keys = deny
EOF
}
host_start() {
	kv_start_host "$1" "$(eval echo "\$PORT_$1")"
	eval "PID_$1=$KV__PID"
}
host_stop() {
	local pid
	pid=$(eval echo "\$PID_$1")
	kill -TERM "$pid"
	kv_wait_for 30 eval "! kill -0 $pid 2>/dev/null" || fail "host $1 stopped"
	wait "$pid" 2>/dev/null
}
hctl() { local h=$1; shift; "$KV_CTL_BIN" -c "$T/$h.ini" "$@"; }
chat() {
	curl -sS -m 30 -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $2" \
		-H 'content-type: application/json' \
		-d '{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"http://127.0.0.1:$(eval echo "\$PORT_$1")/v1/chat/completions"
}
is() { [ "$(chat "$1" "$2")" = "$3" ]; }
hash_of() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
in_redis() { rcli hget kv:issued "$(hash_of "$1")"; }
now_ms() { date +%s%3N; }
# refused_after KEY: ms from now until host b answers KEY with 401 (30 s cap)
refused_after() {
	local t0 i
	t0=$(now_ms)
	for ((i = 0; i < 600; i++)); do
		is b "$1" 401 && { echo $(($(now_ms) - t0)); return 0; }
		sleep 0.05
	done
	echo 99999
}

host_config a
host_config b
host_start a
host_start b

# ---- kvctl writes Redis itself ------------------------------------------------

WINDOWS=
for i in 1 2 3; do
	K=$(hctl a keys create "leak$i" --budget 1.00 2>/dev/null)
	check "kvctl keys create leak$i: in Redis at once" eval "in_redis '$K' | grep -q '^1 0 '"
	check "host b serves leak$i" kv_wait_for 15 is b "$K" 200
	[ "$i" = 1 ] && host_stop a	# a is down for the revocations
	check "kvctl keys revoke leak$i with a's kilovoltd down: exit 0" hctl a keys revoke "leak$i"
	ms=$(refused_after "$K")
	WINDOWS="$WINDOWS $ms"
	check "host b refuses leak$i within 3 s of kvctl's exit (${ms} ms)" [ "$ms" -lt 3000 ]
	check "Redis has leak$i revoked" eval "in_redis '$K' | grep -q '^1 [13] '"
done
echo "# window from kvctl keys revoke (host a down) to host b's first 401, ms:$WINDOWS"

# ---- Redis unreachable: kvctl says so -----------------------------------------

K=$(hctl a keys create unreachable --budget 1.00 2>/dev/null)
sed "s|^redis = .*|redis = unix:$T/no-such.sock|" "$T/a.ini" >"$T/a-noredis.ini"
"$KV_CTL_BIN" -c "$T/a-noredis.ini" keys revoke unreachable >"$T/out" 2>"$T/err"
rc=$?
check_eq "kvctl keys revoke with Redis unreachable: exit 2" "$rc" 2
check "... and it says Redis could not be written" grep -q 'Redis could not be written' "$T/err"
check "... the key is revoked here all the same" eval "hctl a show unreachable --json | jq -e '.revoked == true' >/dev/null || hctl a keys --json | jq -e '.keys[] | select(.label == \"unreachable\") | .revoked' | grep -q true"
check "... Redis still has it valid" eval "in_redis '$K' | grep -q '^1 0 '"
check "running it again with Redis back writes it" hctl a keys revoke unreachable
check "host b refuses it" kv_wait_for 15 is b "$K" 401

# ---- the admin API, a running: a's next pass writes it ------------------------

host_start a
api_key() {
	curl -sS -m 30 -o "$T/api" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
		-d "{\"label\":\"$1\",\"budget\":\"1.00\"}" "http://127.0.0.1:$SPORT_a/keys"
}
api_revoke() {
	curl -sS -m 30 -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $ADMIN" \
		"http://127.0.0.1:$SPORT_a/keys/$1"
}
APIW=
for i in 1 2 3; do
	check_eq "POST /keys api$i on a: 201" "$(api_key "api$i")" 201
	K=$(jq -r .key "$T/api")
	ID=$(jq -r .id "$T/api")
	check "host b serves api$i" kv_wait_for 15 is b "$K" 200
	check_eq "DELETE /keys/ID on a: 200" "$(api_revoke "$ID")" 200
	ms=$(refused_after "$K")
	APIW="$APIW $ms"
	check "host b refuses api$i within 3 s (${ms} ms)" [ "$ms" -lt 3000 ]
done
echo "# window from DELETE /keys/ID on host a (running) to host b's first 401, ms:$APIW"

# ---- the master's last pass at stop -------------------------------------------

check_eq "POST /keys on a: 201" "$(api_key apikey)" 201
K=$(jq -r .key "$T/api")
ID=$(jq -r .id "$T/api")
check "host b serves it" kv_wait_for 15 is b "$K" 200
code=$(api_revoke "$ID")
host_stop a	# at once: before a's next issued-key pass
check_eq "DELETE /keys/ID on a: 200" "$code" 200
check "a's last pass wrote the revocation to Redis" eval "in_redis '$K' | grep -q '^1 [13] '"
check "host b refuses it" kv_wait_for 15 is b "$K" 401

# ---- forget ------------------------------------------------------------------

host_start a
KL=$(hctl a keys create live --budget 1.00 2>/dev/null)
hctl a forget live >"$T/out" 2>"$T/err"
rc=$?
check_eq "kvctl forget of a valid issued key: exit 2" "$rc" 2
check "... it says to revoke first" grep -q 'revoke it first' "$T/err"
check "... and it is still in Redis" eval "in_redis '$KL' | grep -q '^1 0 '"
K1=$(hctl a keys create gone --budget 1.00 2>/dev/null)
check "host b serves gone" kv_wait_for 15 is b "$K1" 200
check "kvctl keys revoke gone" hctl a keys revoke gone
check "kvctl forget gone (a's kilovoltd running)" hctl a forget gone
check "gone is no longer in Redis" eval "[ -z \"\$(in_redis '$K1')\" ]"
check "... its forget is recorded (kv:forgotten)" eval "rcli hexists kv:forgotten '$(hash_of "$K1")' | grep -q 1"
sleep 3	# three issued-key passes on each host
check "... nor written back by either host" eval "[ -z \"\$(in_redis '$K1')\" ]"
check "... nor imported again on a" eval "! hctl a show gone >/dev/null 2>&1"
check "b refuses it" is b "$K1" 401

# A host that was down through the revocation and the forget, holding
# the key valid, revokes it when it comes back rather than write it back.
KB=$(hctl a keys create behind --budget 1.00 2>/dev/null)
check "host b serves behind" kv_wait_for 15 is b "$KB" 200
host_stop b
check "kvctl keys revoke behind (b down)" hctl a keys revoke behind
check "kvctl forget behind (b down)" hctl a forget behind
host_start b
check "b, back, refuses behind" kv_wait_for 15 is b "$KB" 401
check "... and says why" kv_wait_for 10 grep -q 'forgotten on another host' "$T/kilovoltd-b.log"
sleep 2
check "behind stays out of Redis" eval "[ -z \"\$(in_redis '$KB')\" ]"

kv_finish
