#!/bin/bash
# t_audit (issue 36): the audit log of admin writes (docs/audit.md), with
# the real daemon, the admin API over curl and kvctl:
#  - every write through the API (create, budget, limits, reset, rotate,
#    revoke; a refused one with its status) and every kvctl command that
#    writes the ledger (budget, budget --config, limits, keys create,
#    rotate, revoke, reset, reset --all, forget) appends one line with
#    who (the admin token's id and admin_name, or the Unix user), what,
#    before and after, and its status; a read (kvctl limits KEY) or an
#    unauthenticated call adds none;
#  - neither the admin token nor any key's secret is ever in the log;
#  - API writes and kvctl writes racing each other keep the chain whole;
#  - kvctl audit --verify passes, then names the right line for a byte
#    edited, a line deleted, two lines swapped, the first line deleted and
#    the file cut mid-line; --anchor finds the last line deleted;
#  - while the log cannot be taken (another holds its lock, or it ends
#    inside a line) no write is made: 503 (KV0820), kvctl exit 2 (KV0823).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
command -v flock >/dev/null || skip "flock (util-linux) not installed"
kv_start_mock
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
admin_name = ops-team
[key alice]
key = sk-alice-audit
budget = 5.00
EOF
kv_start
AUD=$T/audit.jsonl
ME=$(id -un)
lines() { if [ -f "$AUD" ]; then wc -l <"$AUD"; else echo 0; fi; }
# last [N]: the Nth line from the end (1: the last)
last() { tail -n "${1:-1}" "$AUD" | head -n 1; }
lj() { last | jq -r "$1"; }

check_eq "no line before the first write" "$(lines)" 0

# ---- the admin API -----------------------------------------------------------

check_eq "POST /keys: 201" "$(api POST /keys "${auth[@]}" -d '{"label":"dev1","budget":"1.50"}')" 201
K1=$(jq -r .key "$T/api")
ID1=$(jq -r .id "$T/api")
check_eq "one line" "$(lines)" 1
check_eq "... key.create by the API" "$(lj '"\(.via) \(.op) \(.request) \(.status)"')" \
	"api key.create POST /keys 201"
check_eq "... who: the admin token's id and admin_name, never the token" \
	"$(lj '"\(.who.admin_token) \(.who.name) \(.who.peer)"')" "$(id_of "$ADMIN") ops-team 127.0.0.1"
check_eq "... the new key's id and label" "$(lj '"\(.key.id) \(.key.label)"')" "$ID1 dev1"
check_eq "... its arguments as parsed" "$(lj .args.budget_nusd)" 1500000000
check_eq "... before: none; after: the new account" \
	"$(lj '"\(.before) \(.after.budget_nusd) \(.after.revoked)"')" "null 1500000000 false"
check "... a time in UTC to the millisecond" eval "lj .time | grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$'"
check "... and time_ms the same instant" test "$(lj '.time_ms / 1000 | floor | todate')" = "$(lj '.time | sub("\\.[0-9]+Z$"; "Z")')"
check_eq "... the first line chains on the genesis value" "$(lj .prev)" \
	0000000000000000000000000000000000000000000000000000000000000000

check_eq "POST /keys/alice/budget: 200" \
	"$(api POST /keys/alice/budget "${auth[@]}" -d '{"budget":"7.25"}')" 200
check_eq "... key.budget: before and after" \
	"$(lj '"\(.op) \(.key.label) \(.before.budget_nusd) \(.after.budget_nusd) \(.status)"')" \
	"key.budget alice 5000000000 7250000000 200"
check_eq "... its prev is the SHA-256 of the line before" "$(lj .prev)" \
	"$(last 2 | tr -d '\n' | sha256sum | cut -c1-64)"
l=$(last)
check_eq "... its hash the SHA-256 of the line without its hash member" "$(lj .hash)" \
	"$(printf '%s}' "${l%,\"hash\":*}" | sha256sum | cut -c1-64)"
check_eq "POST /keys/alice/limits: 200" "$(api POST /keys/alice/limits "${auth[@]}" -d '{"rpm":60}')" 200
check_eq "... key.limits: before and after" \
	"$(lj '"\(.op) \(.before.rpm) \(.after.rpm) \(.after.tpm)"')" "key.limits 0 60 0"
check_eq "a chat on alice" "$(chat sk-alice-audit)" 200
spent=$(key_field sk-alice-audit spent_nusd)
check "... spent something" test "$spent" -gt 0
check_eq "POST /keys/alice/reset: 200" "$(api POST /keys/alice/reset "${auth[@]}")" 200
check_eq "... key.reset: the spend before, 0 after" \
	"$(lj '"\(.op) \(.before.spent_nusd) \(.after.spent_nusd)"')" "key.reset $spent 0"
check_eq "POST /keys/dev1/rotate: 200" "$(api POST /keys/dev1/rotate "${auth[@]}")" 200
K1b=$(jq -r .key "$T/api")
check_eq "... key.rotate: the live secret's id before and after, never a secret" \
	"$(lj '"\(.op) \(.before.secret_id) \(.after.secret_id)"')" "key.rotate $ID1 $(id_of "$K1b")"
check_eq "DELETE /keys/dev1: 200" "$(api DELETE /keys/dev1 "${auth[@]}")" 200
check_eq "... key.revoke: revoked false, then true" \
	"$(lj '"\(.op) \(.request) \(.before.revoked) \(.after.revoked)"')" \
	"key.revoke DELETE /keys/dev1 false true"
check_eq "a budget for no such key: 404" \
	"$(api POST /keys/nosuch/budget "${auth[@]}" -d '{"budget":"1"}')" 404
check_eq "... is in the log too, with its status and nothing changed" \
	"$(lj '"\(.op) \(.status) \(.key) \(.before) \(.after)"')" "key.budget 404 null null null"
n=$(lines)
check_eq "without the token: 401" "$(api POST /keys/alice/budget -d '{"budget":"1"}')" 401
check_eq "with a wrong one: 403" \
	"$(api POST /keys/alice/budget -H 'Authorization: Bearer nope' -d '{"budget":"1"}')" 403
check_eq "... neither is an admin write: no line" "$(lines)" "$n"

# ---- kvctl ---------------------------------------------------------------------

check "kvctl budget alice 9.00" kv_ctl budget alice 9.00
check_eq "... key.budget by kvctl, who: the Unix user" \
	"$(lj '"\(.via) \(.who.user) \(.who.uid) \(.op) \(.request)"')" \
	"kvctl $ME $(id -u) key.budget kvctl budget alice 9.00"
check_eq "... before and after" "$(lj '"\(.before.budget_nusd) \(.after.budget_nusd) \(.status)"')" \
	"7250000000 9000000000 0"
check "kvctl budget alice --config" kv_ctl budget alice --config
check_eq "... key.budget_config: the override dropped" \
	"$(lj '"\(.op) \(.before.budget_nusd) \(.after.budget_nusd) \(.after.override)"')" \
	"key.budget_config 9000000000 5000000000 false"
n=$(lines)
kv_ctl limits alice >/dev/null
check_eq "kvctl limits KEY only reads: no line" "$(lines)" "$n"
check "kvctl limits alice --tpm 1000" kv_ctl limits alice --tpm 1000
check_eq "... key.limits" "$(lj '"\(.op) \(.before.tpm) \(.after.tpm) \(.after.rpm)"')" \
	"key.limits 0 1000 60"
K2=$(kv_ctl keys create dev2 --budget 2 2>/dev/null)
check_eq "kvctl keys create dev2" "$(lj '"\(.op) \(.key.label) \(.args.budget_nusd) \(.after.budget_nusd)"')" \
	"key.create dev2 2000000000 2000000000"
K2b=$(kv_ctl keys rotate dev2 2>/dev/null)
check_eq "kvctl keys rotate dev2" "$(lj '"\(.op) \(.before.secret_id) \(.after.secret_id)"')" \
	"key.rotate $(id_of "$K2") $(id_of "$K2b")"
check "kvctl keys revoke dev2" kv_ctl keys revoke dev2
check_eq "... key.revoke" "$(lj '"\(.op) \(.request) \(.after.revoked)"')" \
	"key.revoke kvctl keys revoke dev2 true"
check "kvctl reset alice" kv_ctl reset alice
check_eq "... key.reset" "$(lj '"\(.op) \(.after.spent_nusd)"')" "key.reset 0"
check "kvctl reset --all" kv_ctl reset --all
check_eq "... key.reset_all" "$(lj '"\(.op) \(.args) \(.before.keys > 0) \(.after.spent_nusd)"')" \
	"key.reset_all null true 0"
check "kvctl forget dev1 (revoked; the master retires it)" kv_ctl forget dev1
check_eq "... key.forget" "$(lj '"\(.op) \(.key.id) \(.before.budget_nusd) \(.after.forgotten) \(.status)"')" \
	"key.forget $ID1 1500000000 true 0"

# ---- writers racing ---------------------------------------------------------------

n=$(lines)
racers=()
for i in 1 2 3 4 5 6; do
	curl -sS -m 30 -o /dev/null "${auth[@]}" -d "{\"budget\":\"$i.00\"}" \
		"http://127.0.0.1:$KV_STATUS_PORT/keys/alice/budget" &
	racers+=($!)
	kv_ctl budget alice "1$i.00" >/dev/null &
	racers+=($!)
done
wait "${racers[@]}"
check_eq "12 writes at once from the API and kvctl: 12 lines" "$(lines)" "$((n + 12))"

# ---- what the log holds, and kvctl audit ---------------------------------------------

N=$(lines)
check "the admin token is nowhere in the log" eval "! grep -qF '$ADMIN' '$AUD'"
check "no key's secret is either" eval "! grep -qF -e '$K1' -e '$K1b' -e '$K2' -e '$K2b' -e sk-alice-audit '$AUD'"
check "every line is one JSON object" eval "jq -e . '$AUD' >/dev/null"
check "every write has before and after (but the refused 404)" \
	eval "[ \"\$(jq -c 'select(.status != 404 and (.before == null and .op != \"key.create\" or .after == null))' '$AUD')\" = '' ]"
check "kvctl audit --verify: exit 0" kv_ctl audit --verify
check "... naming the lines" eval "kv_ctl audit --verify | grep -q '$N lines, the chain is intact'"
check_eq "kvctl audit --verify --json" "$(kv_ctl audit --verify --json | jq -r '"\(.intact) \(.lines)"')" "true $N"
check_eq "kvctl audit: a row a line" "$(kv_ctl audit | wc -l)" "$N"
check "... each with who, what, before -> after" eval "kv_ctl audit | grep -q 'api:ops-team key.budget [0-9a-f]* (alice) {\"budget_nusd\":5000000000} -> {\"budget_nusd\":7250000000} 200'"
check_eq "kvctl audit --json" "$(kv_ctl audit --json | jq '.audit | length')" "$N"
check_eq "kvctl audit --since 1h" "$(kv_ctl audit --since 1h --json | jq '.audit | length')" "$N"
check_eq "kvctl audit --since a time to come" \
	"$(kv_ctl audit --since "$(($(date +%s) + 3600))" --json | jq '.audit | length')" 0

# ---- tampering: each found, at its line ----------------------------------------------------

cp "$AUD" "$T/good"
# verify_broken WHAT LINE REGEX: kvctl audit --verify on the tampered log
# exits 1 naming LINE, and its reason matches REGEX.
verify_broken() {
	local out rc
	out=$("$KV_CTL_BIN" -c "$T/kilovolt.ini" audit --verify --json)
	rc=$?
	check_eq "$1: kvctl audit --verify exits 1" "$rc" 1
	check_eq "... naming line $2" "$(jq -r .line <<<"$out")" "$2"
	check "... saying why ($3)" eval "jq -r .error <<<'$out' | grep -qE '$3'"
	cp "$T/good" "$AUD"
}
sed -i '3s/"status":200/"status":201/' "$AUD"
verify_broken "a byte edited in line 3" 3 "line 3: its hash does not match"
sed -i '4d' "$AUD"
verify_broken "line 4 deleted" 4 "line 4: its prev is not the hash of line 3"
sed -i -n '1p;2{h;d};3{p;x;p;d};4,$p' "$AUD"
verify_broken "lines 2 and 3 swapped" 2 "line 2: its prev"
sed -i '1d' "$AUD"
verify_broken "line 1 deleted" 1 "genesis"
truncate -s -20 "$AUD"
verify_broken "the file cut mid-line" "$N" "cut short"
sed -i '5s/"hash":"[0-9a-f]*"/"hash":"'"$(printf 'f%.0s' $(seq 64))"'"/' "$AUD"
verify_broken "a hash replaced" 5 "line 5: its hash"
check "the good copy verifies again" kv_ctl audit --verify
D=$(kv_ctl audit --verify --json | jq -r .last_hash)
check "--verify --anchor the last line's digest: exit 0" kv_ctl audit --verify --anchor "$D"
sed -i '$d' "$AUD"
check "the last line deleted: the chain alone is still intact" kv_ctl audit --verify
out=$(kv_ctl audit --verify --anchor "$D" --json)
check_eq "... but --anchor its digest exits 1" "$?" 1
check "... saying lines were deleted from the end" \
	eval "jq -r .error <<<'$out' | grep -q 'no line has the anchored digest'"
cp "$T/good" "$AUD"
kv_ctl audit --verify --anchor nothex >/dev/null 2>&1
check_eq "--anchor that is no digest: usage, exit 2" "$?" 2

# ---- no write while the log cannot be taken ----------------------------------------------

# another process holds the lock until $T/release appears
(flock 9 && touch "$T/held" && until [ -e "$T/release" ]; do sleep 0.1; done) 9>>"$AUD" &
holder=$!
kv_track "$holder"
kv_wait_for 10 test -e "$T/held" || fail "the lock was taken"
ledger_keys >"$T/before"
check_eq "another holds the log's lock: the API answers 503" \
	"$(api POST /keys/alice/budget "${auth[@]}" -d '{"budget":"3.00"}')" 503
check "... saying so" grep -q "audit log cannot be written" "$T/api"
check "... logged as KV0820" grep -q "KV0820: audit log unavailable: .*lock" "$KV_LOG"
kv_ctl budget alice 4.00 2>"$T/err"
check_eq "... kvctl budget exits 2" "$?" 2
check "... saying KV0823" grep -q "KV0823: audit log unavailable" "$T/err"
ledger_keys >"$T/after"
check "... and nothing changed in the ledger" diff "$T/before" "$T/after"
touch "$T/release"
wait "$holder" 2>/dev/null
check_eq "once let go, the API writes again" \
	"$(api POST /keys/alice/budget "${auth[@]}" -d '{"budget":"3.00"}')" 200
printf '{"time":"cut' >>"$AUD"
check_eq "a log ending inside a line: 503" \
	"$(api POST /keys/alice/budget "${auth[@]}" -d '{"budget":"3.50"}')" 503
check "... with nothing appended after the cut line" eval "tail -c 12 '$AUD' | grep -q '\"time\":\"cut$'"
kv_ctl reset alice 2>"$T/err"
check_eq "... kvctl reset exits 2" "$?" 2
check "... naming the cut" grep -q "ends inside a line" "$T/err"

# ---- audit_log = off ---------------------------------------------------------------------

kv_stop
printf '[server]\naudit_log = off\n' | kv__overlay "$T/kilovolt.ini" /dev/stdin >"$T/off.ini"
mv "$T/off.ini" "$T/kilovolt.ini"
kv_start
cp "$AUD" "$T/cut"
check_eq "audit_log = off: the API writes, logging nothing" \
	"$(api POST /keys/alice/budget "${auth[@]}" -d '{"budget":"6.00"}')" 200
check "... kvctl too" kv_ctl budget alice 6.50
check "... the file untouched" cmp "$AUD" "$T/cut"
kv_ctl audit 2>"$T/err"
check_eq "... kvctl audit says the log is off: exit 2" "$?" 2
check "... saying so" grep -q "audit_log = off" "$T/err"
kv_finish
