#!/bin/bash
# Strangers cannot take the table (issue 12): a flood of junk bearer
# tokens (the provider rejects each) fills max_keys, but those accounts
# were never charged nor answered 2xx, so the master reclaims them and a
# real new key gets in (after at most one 503 "table full"); a key the
# provider accepted is kept; `kvctl forget KEY` deletes an account; made-up
# model names add to one "other" row instead of taking model slots.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

kv_start_mock
kv_write_config <<EOF
[server]
max_keys = 16

[key alice]
key = sk-alice-strangers
budget = 5.00
EOF
kv_start
code() {	# code KEY [MOCK_STATUS] [MODEL]
	local st=()
	[ -n "${2:-}" ] && st=(-H "x-mock-status: $2")
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
		"${st[@]}" -d "{\"model\":\"${3:-gpt-4o-mini}\",\"max_tokens\":5}"
}
has_key() { kv_ctl keys --json | jq -e ".keys[] | select(.id == \"$(id_of "$1")\")" >/dev/null; }
used() { kv_ctl status --json | jq .accounts_used; }
# served KEY: the status of KEY's request once it is 200, or the last of 30
# tries (a table full of junk answers 503 until the master reclaims it)
served() {
	local got= i
	for i in $(seq 1 30); do
		got=$(code "$1")
		[ "$got" = 200 ] && break
		sleep 0.2
	done
	echo "$got"
}

check_eq "a real key the provider accepts" "$(code sk-kept-strangers)" 200

# ---- the flood ----------------------------------------------------------------------
full=0
for i in $(seq 1 40); do
	c=$(code "sk-junk-$i" 401)
	[ "$c" = 503 ] && full=$((full + 1))
done
echo "# $full of 40 junk tokens met a full table"
check "the flood filled the table at some point" test "$full" -gt 0
check "the master reclaimed never-charged accounts" kv_wait_for 10 \
	grep -q "reclaimed [0-9]* accounts of unknown keys that were never charged" "$KV_LOG"
check_eq "a real new key gets in after the flood" "$(served sk-real-after-flood)" 200
check "the provider-accepted key is kept through the flood" has_key sk-kept-strangers
check "... and alice (config)" has_key sk-alice-strangers
check "... and the new real key" has_key sk-real-after-flood
# The flood may still be arriving when the master reclaims (it does so the
# moment a worker finds the table full), so the table can be full again now;
# what must hold is that each further real key is let in after at most one
# 503, and junk never pushes the table past its size.
check "the table holds at most its 16 slots ($(used) used)" test "$(used)" -le 16
check_eq "... and a second new key gets in too" "$(served sk-second-real-strangers)" 200
check "... the provider-accepted keys are all kept" \
	eval "has_key sk-kept-strangers && has_key sk-real-after-flood && has_key sk-alice-strangers"

# ---- kvctl forget ---------------------------------------------------------------------
spent=$(kv_ctl keys --json | jq ".keys[] | select(.id == \"$(id_of sk-real-after-flood)\") | .spent_nusd")
check "the real key has history (spent $spent)" test "$spent" -gt 0
kv_ctl forget "$(id_of sk-real-after-flood)" >"$T/out"
check "kvctl forget with the daemon running: exit 0" test $? = 0
check "... says so" grep -q "^forgot $(id_of sk-real-after-flood)" "$T/out"
check "... the account is gone" eval "! has_key sk-real-after-flood"
check_eq "... the key is served again, as new" "$(code sk-real-after-flood)" 200
check_eq "... with fresh history (requests 1)" \
	"$(kv_ctl keys --json | jq ".keys[] | select(.id == \"$(id_of sk-real-after-flood)\") | .requests")" 1
kv_ctl forget alice >"$T/out"
check "forgetting a config key: the master gives it a fresh account" kv_wait_for 5 has_key sk-alice-strangers
check_eq "... with 0 spent" \
	"$(kv_ctl keys --json | jq ".keys[] | select(.id == \"$(id_of sk-alice-strangers)\") | .spent_nusd")" 0
kv_stop
kv_ctl forget "$(id_of sk-kept-strangers)" >"$T/out"
check "kvctl forget with no daemon running" grep -q "no daemon running" "$T/out"
check "... gone" eval "! has_key sk-kept-strangers"
kv_start
check "... and still gone after a start" eval "! has_key sk-kept-strangers"

# ---- made-up models sum under "other" --------------------------------------------------
for i in $(seq 1 5); do
	code sk-alice-strangers "" "made-up-model-$i" >/dev/null
done
code sk-alice-strangers >/dev/null
kv_ctl models --json >"$T/models"
check_eq "5 made-up model names: one \"other\" row with 5 requests" \
	"$(jq '.models[] | select(.model == "other") | .requests' "$T/models")" 5
check_eq "... none of them got a row" "$(jq '[.models[] | select(.model | startswith("made-up"))] | length' "$T/models")" 0
check "... a priced model keeps its own row" \
	jq -e '.models[] | select(.model | startswith("gpt-4o-mini"))' "$T/models"

kv_finish
