#!/bin/bash
# t_keys_issue (issue 24): kilovolt keys issued without editing a file,
# under unknown_keys = deny, through the real daemon and the mock:
#  - kvctl keys create prints a kv- key once; the running workers admit it
#    at once (no restart, no SIGHUP) and charge it exactly what the mock's
#    usage costs (gpt-4o-mini: 150 n$ per input token, 600 per output);
#  - a request its budget cannot cover gets 402 and never reaches the mock;
#  - kvctl keys revoke: the next request gets 401 naming the revocation,
#    and the mock receives nothing;
#  - kvctl keys rotate: the old secret gets 401, the new one is charged to
#    the same account (same id, the spend goes on from where it was);
#  - a master restart keeps issued keys; a worker killed -9 while keys are
#    being created loses none of them;
#  - a name of a [key] section is refused, in kvctl and in the config.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
KV_KILLS_WORKERS=1	# one check kills a worker on purpose

kv_start_mock
kv_write_config <<EOF
[budget]
unknown_keys = deny
[key alice]
key = sk-alice-issue
budget = 5.00
EOF
kv_start

# chat KEY MAX_TOKENS [OUT]: the status code; the body in OUT (default $T/body)
chat() {
	kv_curl /v1/chat/completions -o "${3:-$T/body}" -w '%{http_code}' \
		-H "Authorization: Bearer $1" -H 'content-type: application/json' \
		-d "{\"model\":\"gpt-4o-mini\",\"max_tokens\":$2,\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}"
}
mock_posts() { grep -c '^POST /v1/chat/completions' "$MOCK_LOG"; }
field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
cost_of() { jq '.usage.prompt_tokens * 150 + .usage.completion_tokens * 600' "$1"; }

# ---- create: admitted at once and charged exactly ------------------------------

check_eq "a stranger's key is refused under deny" "$(chat sk-nobody 5)" 401
kv_ctl keys create dev1 --budget 0.01 >"$T/key1" 2>"$T/create.err"
check_eq "kvctl keys create exits 0" "$?" 0
K1=$(cat "$T/key1")
check "the key is kv- and 43 base62 digits, alone on stdout" \
	grep -Eqx 'kv-[0-9A-Za-z]{43}' "$T/key1"
check "the ledger holds the key's hash, never the key" eval "! grep -qa '$K1' '$T/ledger'"
ID1=$(id_of "$K1")
check "stderr names the key and its budget" grep -q "$ID1 (dev1), budget \$0.010000" "$T/create.err"
check_eq "kvctl keys lists it with its budget" "$(field "$ID1" budget_nusd)" 10000000
check_eq "the new key is served at once (no reload)" "$(chat "$K1" 5)" 200
want=$(cost_of "$T/body")
check "the mock reported usage" test "$want" -gt 0
check_eq "spent_nusd is the mock's usage x price" "$(field "$ID1" spent_nusd)" "$want"
check_eq "nothing stays reserved" "$(field "$ID1" reserved_nusd)" 0
check_eq "the response names the account" \
	"$(kv_curl /v1/chat/completions -o /dev/null -D - -H "Authorization: Bearer $K1" \
		-d '{"model":"gpt-4o-mini","max_tokens":5}' | tr -d '\r' |
		sed -n 's/^x-kilovolt-key: //p')" "$ID1"
spent1=$(field "$ID1" spent_nusd)

# ---- budget: 402, nothing sent --------------------------------------------------

n=$(mock_posts)
check_eq "a request the budget cannot cover gets 402" "$(chat "$K1" 100000)" 402
check "... in OpenAI's shape" jq -e '.error.code == "budget_exceeded"' "$T/body"
check_eq "... and the mock received nothing" "$(mock_posts)" "$n"
kv_ctl budget dev1 "0.$(printf %09d "$spent1")" >/dev/null
check_eq "with the budget spent to the nano-dollar, even a small request gets 402" \
	"$(chat "$K1" 5)" 402
check_eq "... and the mock received nothing" "$(mock_posts)" "$n"
kv_ctl budget dev1 1.00 >/dev/null

# ---- a name of the config is refused --------------------------------------------

kv_ctl keys create alice --budget 1 >/dev/null 2>"$T/clash.err"
check_eq "creating a key named like a [key] section exits 2" "$?" 2
check "... and says why" grep -q "is a \[key alice\] section" "$T/clash.err"
kv_ctl keys create dev1 --budget 1 >/dev/null 2>"$T/dup.err"
check_eq "creating a name that exists exits 2" "$?" 2
check "... and points at rotate" grep -q "keys rotate" "$T/dup.err"

# ---- rotate: old secret 401, new one charged to the same account ----------------

spent1=$(field "$ID1" spent_nusd)
kv_ctl keys rotate dev1 >"$T/key2" 2>/dev/null
check_eq "kvctl keys rotate exits 0" "$?" 0
K2=$(cat "$T/key2")
check "a new secret" test -n "$K2" -a "$K2" != "$K1"
n=$(mock_posts)
check_eq "the old secret gets 401 after rotate" "$(chat "$K1" 5)" 401
check "... saying it was replaced" jq -e '.error.message | test("replaced")' "$T/body"
check_eq "... and the mock received nothing" "$(mock_posts)" "$n"
check_eq "the same account, the same spend after rotate" "$(field "$ID1" spent_nusd)" "$spent1"
check_eq "the new secret is served" "$(chat "$K2" 5)" 200
check_eq "... charged to the same account" "$(field "$ID1" spent_nusd)" \
	"$((spent1 + $(cost_of "$T/body")))"
check "kvctl keys marks it issued" grep -q "^$ID1  *dev1 \[issued\] " <(kv_ctl keys)
check_eq "keys --json: \"issued\": true" "$(field "$ID1" issued)" true
check "kvctl show says where the key came from" grep -qx "source: issued (kvctl keys create)" \
	<(kv_ctl show dev1)
check "... and for a [key] of the config" grep -qx "source: config" <(kv_ctl show alice)
check_eq "kvctl keys still lists one dev1" \
	"$(kv_ctl keys --json | jq '[.keys[] | select(.label == "dev1")] | length')" 1

# ---- x-kilovolt-budget-remaining: this request's worst case is not taken off ----

K4=$(kv_ctl keys create hdr --budget 2 2>/dev/null)
check_eq "a fresh \$2 key reads 2.000000 on a call reserving 64000 output tokens" \
	"$(kv_curl /v1/chat/completions -o /dev/null -D - -H "Authorization: Bearer $K4" \
		-d '{"model":"gpt-4o-mini","max_tokens":64000}' | tr -d '\r' |
		sed -n 's/^x-kilovolt-budget-remaining: //p')" 2.000000
spent4=$(field "$(id_of "$K4")" spent_nusd)
check_eq "... and the next one reads the budget less what the first cost" \
	"$(kv_curl /v1/chat/completions -o /dev/null -D - -H "Authorization: Bearer $K4" \
		-d '{"model":"gpt-4o-mini","max_tokens":64000}' | tr -d '\r' |
		sed -n 's/^x-kilovolt-budget-remaining: //p')" \
	"$(printf '1.%06d' $(( (1000000000 - spent4) / 1000 )))"

# ---- restart keeps issued keys ---------------------------------------------------

kv_ctl keys create dev2 --budget 2.50 --rpm 100 >"$T/key3" 2>/dev/null
K3=$(cat "$T/key3")
kv_stop
kv_start
check_eq "after a master restart the issued key is served" "$(chat "$K3" 5)" 200
check_eq "... and the rotated one" "$(chat "$K2" 5)" 200
check_eq "... the old secret still refused" "$(chat "$K1" 5)" 401
check_eq "... its budget kept" "$(field "$(id_of "$K3")" budget_nusd)" 2500000000

# ---- revoke: 401, nothing sent ---------------------------------------------------

kv_ctl keys revoke "$(id_of "$K3")" >"$T/revoke.out"
check_eq "kvctl keys revoke ID exits 0" "$?" 0
n=$(mock_posts)
check_eq "a revoked key gets 401 at once" "$(chat "$K3" 5)" 401
check "... saying it was revoked" jq -e '.error.message | test("revoked")' "$T/body"
check_eq "... and the mock received nothing" "$(mock_posts)" "$n"
check_eq "keys --json: \"revoked\": true" "$(field "$(id_of "$K3")" revoked)" true
kv_ctl keys revoke alice >/dev/null 2>&1
check_eq "revoking a [key] of the config is refused (exit 2)" "$?" 2
kv_ctl keys revoke nosuchkey >/dev/null 2>&1
check_eq "revoking an unknown name exits 1" "$?" 1

# ---- a worker killed -9 while keys are created loses none -----------------------

: >"$T/many"
(for i in $(seq 1 30); do kv_ctl keys create "bulk$i" --budget 1 2>/dev/null; done \
	>>"$T/many") &
CREATOR=$!
kv_track "$CREATOR"
wpid=$(kv_ctl status --json | jq -r '.workers[0].pid')
kill -9 "$wpid"
wait "$CREATOR"
check_eq "30 keys created while a worker was killed" "$(grep -c '^kv-' "$T/many")" 30
kv_wait_for 20 eval "[ \"\$(chat \"\$(head -n 1 '$T/many')\" 5 /dev/null)\" = 200 ]"
ok=0
while read -r k; do
	[ "$(chat "$k" 5 /dev/null)" = 200 ] && ok=$((ok + 1))
done <"$T/many"
check_eq "every one of them is served" "$ok" 30

# ---- the config may not take an issued key's name --------------------------------

cat >>"$T/kilovolt.ini" <<EOF

[key dev1]
key = sk-dev1-config
EOF
kill -HUP "$KV_PID"
kv_wait_for 10 grep -q KV0130 "$KV_LOG"
check "a reload with a [key] named like an issued key is refused (KV0130)" \
	grep -q "KV0130.*\[key dev1\] has the name of an issued key" "$KV_LOG"
check_eq "... and the issued key is still served" "$(chat "$K2" 5)" 200

kv_finish
