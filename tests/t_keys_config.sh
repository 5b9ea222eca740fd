#!/bin/bash
# Keys follow the config (issue 12): under unknown_keys = deny only the
# running config's keys are admitted, so a key removed or rotated out gets
# 401 right after SIGHUP, and so does a key that got an account while the
# setting was allow; a budget set with kvctl (an override) survives reload
# and restart, is shown as one, and gives way when the config's own value
# for that key changes or on `kvctl budget KEY --config`.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

kv_start_mock
conf() {	# conf UNKNOWN ALICE_KEY ALICE_BUDGET [bob]
	{
		printf '[server]\nadmin_token = kv-keys-admin\n\n[budget]\nunknown_keys = %s\n\n[key alice]\nkey = %s\nbudget = %s\n' "$1" "$2" "$3"
		[ "${4:-}" = bob ] && printf '\n[key bob]\nkey = sk-bob-keys\nbudget = 5.00\n'
	} >"$T/overlay.in"
	rm -f "$T/kilovolt.ini"
	kv_write_config <"$T/overlay.in"
}
code() {
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
		-d '{"model":"gpt-4o-mini","max_tokens":5}'
}
reload() {
	local n
	n=$(grep -c "reloading " "$KV_LOG")
	kill -HUP "$KV_PID"
	kv_wait_for 10 eval "[ \$(grep -c 'reloading ' '$KV_LOG') -gt $n ]"
}
ALICE=$(id_of sk-alice-keys)
budget() { kv_ctl keys --json | jq -r ".keys[] | select(.id == \"$1\") | .budget_nusd"; }

# ---- allow first: a stranger gets an account ------------------------------------

conf allow sk-alice-keys 5.00 bob
kv_start
check_eq "under allow a stranger is served" "$(code sk-stranger-keys)" 200
check_eq "... and bob" "$(code sk-bob-keys)" 200

# ---- deny: the stranger's old account does not let it in -------------------------

conf deny sk-alice-keys 5.00 bob
reload
check_eq "after switching to deny, the stranger (who has an account) gets 401" \
	"$(code sk-stranger-keys)" 401
check_eq "... alice is served" "$(code sk-alice-keys)" 200
check_eq "... bob is served" "$(code sk-bob-keys)" 200

conf deny sk-alice-keys 5.00
reload
check_eq "bob removed from the config: 401 right after the SIGHUP" "$(code sk-bob-keys)" 401

conf deny sk-alice-rotated 5.00
reload
check_eq "alice's key rotated: the old key gets 401" "$(code sk-alice-keys)" 401
check_eq "... the new one is served" "$(code sk-alice-rotated)" 200
# The label follows the config: "alice" names the rotated key now; the old
# account keeps its label for the record, marked as no longer in the config.
ROT=$(id_of sk-alice-rotated)
kv_ctl show alice >"$T/show-rot" 2>&1
check "kvctl show alice finds the current key, not an ambiguity" grep -q "^id: $ROT\$" "$T/show-rot"
kv_ctl show "$ALICE" >"$T/show-old"
check "the old account is shown as no longer in the config" \
	grep -q '^label: alice (no longer in the config' "$T/show-old"
check "kvctl keys puts the old label in parentheses" \
	grep -q "^$ALICE  *(alice) " <(kv_ctl keys)
check_eq "keys --json: the old account says not_in_config, the new one not" \
	"$(kv_ctl keys --json | jq -c '[.keys[] | select(.label == "alice") | [.id, .not_in_config]] | sort')" \
	"$(jq -nc --arg o "$ALICE" --arg n "$ROT" '[[$o, true], [$n, null]] | sort')"
check_eq "the admin API's /keys/alice is the current key" \
	"$(curl -s -X POST -H 'Authorization: Bearer kv-keys-admin' --data '{"rpm": 0}' \
		"http://127.0.0.1:$KV_STATUS_PORT/keys/alice/limits" | jq -r .id)" "$ROT"
conf deny sk-alice-keys 5.00
reload
check_eq "rotated back: served again" "$(code sk-alice-keys)" 200
check "... and kvctl show alice is that key again" grep -q "^id: $ALICE\$" <(kv_ctl show alice)

# ---- overrides --------------------------------------------------------------------

kv_ctl budget "$ALICE" 0 >"$T/out"
check "kvctl budget says it is an override" grep -q "an override" "$T/out"
check_eq "the override refuses alice (402)" "$(code sk-alice-keys)" 402
reload
check_eq "after SIGHUP the override stands: budget 0" "$(budget "$ALICE")" 0
check_eq "... still 402" "$(code sk-alice-keys)" 402
kv_ctl show "$ALICE" >"$T/show"
check "kvctl show marks it, with the config's value" \
	grep -q '^budget_override: yes (the config says \$5.000000' "$T/show"
check_eq "keys --json carries the config's value" \
	"$(kv_ctl keys --json | jq ".keys[] | select(.id == \"$ALICE\") | .budget_override.config_budget_nusd")" \
	5000000000
kv_stop
kv_start
check_eq "after a restart the override stands" "$(budget "$ALICE")" 0
conf deny sk-alice-keys 7.00
reload
check_eq "the config's value for alice changed (5 -> 7): it wins" "$(budget "$ALICE")" 7000000000
check "... and the override is gone" eval "! kv_ctl show $ALICE | grep -q budget_override"
check_eq "... alice is served" "$(code sk-alice-keys)" 200
kv_ctl budget "$ALICE" 1.5 >/dev/null
check_eq "a new override" "$(budget "$ALICE")" 1500000000
kv_ctl budget "$ALICE" --config >"$T/out"
check_eq "kvctl budget alice --config: the config's value again" "$(budget "$ALICE")" 7000000000
check "... saying so" grep -q "the config's; override dropped" "$T/out"
reload
check_eq "... and it stays after SIGHUP" "$(budget "$ALICE")" 7000000000
kv_ctl budget "$(id_of sk-stranger-keys)" --config 2>"$T/err"
check_eq "--config on a key not in the config: exit 2" "$?" 2
check "... saying why" grep -q "not a key of the config" "$T/err"

# ---- a [key] renamed: the account takes the config's new name ----------------------

sed 's/^\[key alice\]/[key alicia]/' "$T/overlay.in" >"$T/overlay.ren"
rm -f "$T/kilovolt.ini"
kv_write_config <"$T/overlay.ren"
reload
check "[key alice] renamed alicia: kvctl show alicia is alice's account" \
	grep -q "^id: $ALICE\$" <(kv_ctl show alicia)
check_eq "... its spend and budget kept" "$(budget "$ALICE")" 7000000000
kv_ctl show alice >"$T/show-gone"
check "... and alice is only the rotated-out account, marked" \
	eval "grep -q '^id: $ROT\$' '$T/show-gone' && grep -q '^label: alice (no longer' '$T/show-gone'"

# ---- a rotation made by an older build (its old account never marked) --------------

kv_stop
"$top_builddir/tests/ledger_fill" "$T/ledger" 0 key sk-carol-old carol 1 >/dev/null
check "an account labelled carol that no build marked" grep -q '^label: carol$' \
	<(kv_ctl show "$(id_of sk-carol-old)")
printf '\n[key carol]\nkey = sk-carol-new\n' >>"$T/overlay.ren"
rm -f "$T/kilovolt.ini"
kv_write_config <"$T/overlay.ren"
kv_start
check "at start-up carol is the config's key" grep -q "^id: $(id_of sk-carol-new)\$" <(kv_ctl show carol)
check "... and the old one is marked as no longer in the config" \
	grep -q '^label: carol (no longer' <(kv_ctl show "$(id_of sk-carol-old)")

kv_finish
