#!/bin/bash
# t_keys_slots (issue 33, row 9): slots come back. max_keys = 8 and
# unknown_keys = allow, through the real daemon and the mock:
#  - one issued key rotated 7 times (kvctl keys rotate, POST /keys/ID/rotate)
#    holds all 8 slots: its account and a link per later secret; kvctl
#    status and the kilovolt_keys metric count all 8 (they said 1, then 0);
#  - revoked (DELETE /keys/ID), its 6 rotated-out secrets give their slots
#    back at the master's next tick (the live secret's stays: it answers
#    401 "revoked", not a stranger's welcome); kvctl forget frees the rest:
#    kilovolt_keys 0, then 7 POST /keys and a new client key fill the 8
#    slots (before: one POST /keys, then 409 table_full, and 503);
#  - a table full of a live key's rotated-out secrets: a new client key
#    gets 503 once, the master reclaims them at once (no grace on a full
#    table), the retry is served; POST /keys on such a table is 503 busy
#    ("try again"), then 201; the key's live secret is served throughout and
#    charged to the same account;
#  - with no daemon, kvctl keys create on such a table frees them itself.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
kv_start_mock
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
max_keys = 8
[budget]
unknown_keys = allow
default = 1.00
EOF
kv_start
S=http://127.0.0.1:$KV_STATUS_PORT

metric() { curl -sS -m 30 "$S/metrics" | sed -n "s/^$1 //p"; }
slots_used() { kv_ctl status --json | jq .accounts_used; }
nkeys() { kv_ctl keys --json | jq '.keys | length'; }
# until_eq WHAT WANT CMD...: wait (up to 20 s) for CMD's output to be WANT
until_eq() {
	local what=$1 want=$2 got i
	shift 2
	for ((i = 0; i < 200; i++)); do
		got=$("$@")
		[ "$got" = "$want" ] && break
		sleep 0.1
	done
	check_eq "$what" "$got" "$want"
}
# rotate NAME N: rotate NAME N times, alternating kvctl and the admin API;
# the last secret into $LIVE
rotate() {
	local i
	for ((i = 1; i <= $2; i++)); do
		if [ $((i % 2)) = 1 ]; then
			LIVE=$(kv_ctl keys rotate "$1" 2>/dev/null)
		else
			api POST "/keys/$1/rotate" "${auth[@]}" >/dev/null
			LIVE=$(jq -r .key "$T/api")
		fi
	done
}

# ---- the issue's sequence: rotate 7 times, revoke, forget ---------------------

K0=$(kv_ctl keys create weekly --budget 1 2>/dev/null)
ID=$(id_of "$K0")
check_eq "the new key is served" "$(chat "$K0")" 200
rotate weekly 7
check "7 rotations, each a new kv- key" eval "[[ '$LIVE' =~ ^kv-[0-9A-Za-z]{43}$ ]]"
check_eq "kvctl keys lists one key" "$(nkeys)" 1
check_eq "kvctl status: 8 of 8 slots used (the account and 7 links)" "$(slots_used)" 8
check_eq "kilovolt_keys counts the 8 slots" "$(metric kilovolt_keys)" 8
check_eq "kilovolt_key_slots 8" "$(metric kilovolt_key_slots)" 8
check_eq "within the grace, the first secret gets 401" "$(chat "$K0")" 401
check "... saying it was replaced" grep -q 'replaced by a new one' "$T/body"
check_eq "the live secret is served" "$(chat "$LIVE")" 200

check_eq "DELETE /keys/weekly: 200" "$(api DELETE /keys/weekly "${auth[@]}")" 200
until_eq "revoked, its 6 rotated-out secrets' slots come back" 2 slots_used
check_eq "... kilovolt_keys 2" "$(metric kilovolt_keys)" 2
check "... the master says so" grep -q 'reclaimed 6 slots of rotated-out' "$KV_LOG"
check_eq "the revoked key's live secret still gets 401" "$(chat "$LIVE")" 401
check "... saying it was revoked (not a stranger's default budget)" grep -q 'revoked' "$T/body"

kv_ctl forget weekly >"$T/forget.out" 2>&1
check "kvctl forget weekly" grep -q "forgot $ID" "$T/forget.out"
check_eq "forgotten: kvctl keys lists 0" "$(nkeys)" 0
until_eq "... 0 slots used" 0 slots_used
check_eq "... kilovolt_keys 0" "$(metric kilovolt_keys)" 0
made=0
for ((i = 1; i <= 7; i++)); do
	[ "$(api POST /keys "${auth[@]}" -d "{\"label\":\"after$i\",\"budget\":\"0.50\"}")" = 201 ] &&
		made=$((made + 1))
done
check_eq "all 8 slots are free: POST /keys 201 seven times (was once, then 409 table_full)" "$made" 7
check_eq "... and a new client key: 200 (was 503)" "$(chat sk-new-client-$RANDOM)" 200
check_eq "kilovolt_keys 8: the 7 new keys and the client's" "$(metric kilovolt_keys)" 8

# ---- a table full of a live key's rotated-out secrets --------------------------

for id in $(kv_ctl keys --json | jq -r '.keys[].id'); do kv_ctl forget "$id" >/dev/null; done
until_eq "an empty table again" 0 slots_used
K0=$(kv_ctl keys create monthly --budget 1 2>/dev/null)
ID=$(id_of "$K0")
rotate monthly 7
check_eq "8 of 8 slots used" "$(slots_used)" 8
check_eq "POST /keys on a full table of rotated-out secrets: 503" \
	"$(api POST /keys "${auth[@]}" -d '{"label":"late"}')" 503
check "... busy, try again" jq -e '.code == "busy" and (.error | test("try again"))' "$T/api"
until_eq "the master reclaims the 6 at once (no grace on a full table)" 2 slots_used
check_eq "... POST /keys again: 201" "$(api POST /keys "${auth[@]}" -d '{"label":"late"}')" 201

# Full again (monthly, its live secret and late take 3 slots), through the
# workers: a stranger's key meets the full table.
rotate monthly 5
kv_ctl status --json >"$T/status.json"
check "the table is full again" jq -e '.accounts_used == .max_keys' "$T/status.json"
CLIENT=sk-client-$RANDOM$RANDOM
check_eq "a new client key on the full table: 503" "$(chat "$CLIENT")" 503
code=
for ((i = 0; i < 100; i++)); do
	code=$(chat "$CLIENT")
	[ "$code" = 200 ] && break
	sleep 0.2
done
check_eq "... served once the master reclaimed the rotated-out secrets" "$code" 200
check_eq "the live secret is served" "$(chat "$LIVE")" 200
check "... charged to the same account" test "$(kv_ctl keys --json |
	jq --arg id "$ID" '.keys[] | select(.id == $id) | .spent_nusd')" -gt 0
check_eq "kvctl status and kilovolt_keys agree" "$(metric kilovolt_keys)" "$(slots_used)"

# ---- no daemon: kvctl frees rotated-out secrets' slots itself ------------------

kv_stop
for ((i = 0; i < 8 && $(slots_used) < 8; i++)); do kv_ctl keys rotate monthly >/dev/null 2>&1; done
check_eq "kilovoltd stopped, kvctl keys rotate filled the table" "$(slots_used)" 8
K9=$(kv_ctl keys create offline --budget 1 2>"$T/offline.err")
check "kvctl keys create on it: a new key" eval "[[ '$K9' =~ ^kv-[0-9A-Za-z]{43}$ ]]"
check_eq "... the rotated-out secrets' slots came back: the accounts and one live secret" \
	"$(slots_used)" "$(($(nkeys) + 1))"
kv_finish
