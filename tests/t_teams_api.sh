#!/bin/bash
# t_teams_api: teams through the admin API and kvctl team (issue 36). kvctl
# team create makes a team under a [team] of the config; a key of the config
# put in it (a reload) is refused with 402 naming it past its budget; a team
# made with rpm 1 answers the second request 429 naming it; kvctl team set
# and move change it, and the tree then charges the new parents exactly;
# an unknown parent, a cycle, a tree too deep and a change to a [team] of
# kilovolt.ini are refused with their reasons; every write is in the audit
# log with before and after, and kvctl audit --verify passes; /metrics and
# the status page show the team's figures exactly; a restart keeps the teams
# (the teams file beside the ledger) and what they spent.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

M=20
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"a team made by the API"}]}'
R=$(ceil_cost ${#BODY} $M 1000 1000000000)
KP=sk-kvtest-api-team-pay-11111 KO=sk-kvtest-api-team-ops-22222

kv_start_mock
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
admin_name = ops-team

[price kv-budget*]
input = 0.000001
output = 1.00

[team acme]
budget = 100
EOF
kv_start
AUD=$T/audit.jsonl
TEAMS=$(sed -n 's/^ledger = //p' "$T/kilovolt.ini").teams
[ -n "$TEAMS" ] && [ "$TEAMS" != .teams ] || TEAMS=$T/ledger.teams

call() {	# NAME KEY: the code; body and head in $T/NAME.*
	curl -sS -m 60 -o "$T/$1.body" -D "$T/$1.head" -w '%{http_code}' \
		-H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" --data-binary "$BODY" "$KV_URL/v1/chat/completions"
}
node_of() { tr -d '\r' <"$T/$1.head" | sed -n 's/^x-kilovolt-budget-node: //p'; }
team() { curl -sS -m 30 "http://127.0.0.1:$KV_STATUS_PORT/teams/$1"; }
row() { kv_ctl report --by team --json | jq -r --arg n "team/$1" ".rows[] | select(.node == \$n) | .$2"; }
in_ledger() { [ "$(team "$1" | jq -r '.ledger.budget_nusd')" = "$2" ]; }
reloaded() {	# a reload finished: no generation but the newest serves
	kv_wait_for 60 sh -c "grep -c 'reloaded ' '$KV_LOG' | grep -qx '$1'"
}

# ---- create ---------------------------------------------------------------------
kv_ctl team create payments --parent acme --budget "$(usd $((2 * R)))" --period monthly --json >"$T/c.json"
check_eq "kvctl team create: exit 0" $? 0
check_eq "... answers the team made by the API" "$(jq -r '.node + " " + .parent + " " + .made_by + " " + (.budget_nusd | tostring)' "$T/c.json")" \
	"team/payments acme api $((2 * R))"
check "the reload makes its node in the ledger" kv_wait_for 60 in_ledger payments $((2 * R))
check "the teams file holds it" grep -qx "\[team payments\]" "$TEAMS"
check_eq "a team made twice: 409" "$(curl -sS -o "$T/dup.json" -w '%{http_code}' "${auth[@]}" \
	-d '{"name":"payments"}' "http://127.0.0.1:$KV_STATUS_PORT/teams")" 409
check_eq "without the admin token: 401" "$(curl -sS -o /dev/null -w '%{http_code}' \
	-d '{"name":"x"}' "http://127.0.0.1:$KV_STATUS_PORT/teams")" 401

# a key of the config in the API's team, by a reload
printf '\n[key p1]\nkey = %s\nteam = payments\n' "$KP" >>"$T/kilovolt.ini"
check "kilovoltd -t takes a key in a team of the teams file" "$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini"
n=$(grep -c 'reloaded ' "$KV_LOG")
kill -HUP "$KV_PID"
check "the reload serves" reloaded $((n + 1))
codes="$(call a1 "$KP") $(call a2 "$KP") $(call a3 "$KP")"
check_eq "team payments (budget 2R) admits 2 requests, then 402" "$codes" "200 200 402"
check_eq "... naming team/payments" "$(node_of a3)" "team/payments"
check "... in its message" grep -qF "budget exceeded for team/payments" "$T/a3.body"
check_eq "payments spent exactly 2R" "$(row payments spent_nusd)" $((2 * R))
check_eq "... and so did acme" "$(row acme spent_nusd)" $((2 * R))

# ---- a team's rpm: 429 naming it --------------------------------------------------------
kv_ctl team create ops --parent acme --rpm 1 >/dev/null
check_eq "kvctl team create ops --rpm 1" $? 0
check "ops is in the ledger" kv_wait_for 60 sh -c "team ops | jq -e '.ledger != null' >/dev/null"
printf '\n[key o1]\nkey = %s\nteam = ops\n' "$KO" >>"$T/kilovolt.ini"
n=$(grep -c 'reloaded ' "$KV_LOG")
kill -HUP "$KV_PID"
check "the reload serves" reloaded $((n + 1))
codes="$(call b1 "$KO") $(call b2 "$KO")"
check_eq "team ops (rpm 1): 200, then 429" "$codes" "200 429"
check_eq "... naming team/ops" "$(node_of b2)" "team/ops"

# ---- set and move ---------------------------------------------------------------
n=$(grep -c 'reloaded ' "$KV_LOG")
kv_ctl team set payments --budget "$(usd $((5 * R)))" --tpm 100000 --json >"$T/s.json"
check_eq "kvctl team set: exit 0" $? 0
check_eq "... answers the new settings" "$(jq -r '(.budget_nusd | tostring) + " " + (.tpm | tostring)' "$T/s.json")" "$((5 * R)) 100000"
check "... applied by a reload" reloaded $((n + 1))
check_eq "payments admits again" "$(call a4 "$KP")" 200
n=$(grep -c 'reloaded ' "$KV_LOG")
kv_ctl team set ops --rpm 0 >/dev/null	# ops' rpm would refuse payments' requests below
check "kvctl team set ops --rpm 0, applied" reloaded $((n + 1))
n=$(grep -c 'reloaded ' "$KV_LOG")
kv_ctl team move payments ops --json >"$T/m.json"
check_eq "kvctl team move payments ops: exit 0" $? 0
check_eq "... answers its new parent" "$(jq -r .parent "$T/m.json")" ops
check "... applied by a reload" reloaded $((n + 1))
o0=$(row ops spent_nusd) a0=$(row acme spent_nusd)
check_eq "a payments request after the move" "$(call a5 "$KP")" 200
check_eq "... is charged at ops, its new parent, exactly" $(($(row ops spent_nusd) - o0)) "$R"
check_eq "... and at acme" $(($(row acme spent_nusd) - a0)) "$R"

# ---- refusals --------------------------------------------------------------------
refused() {	# NAME STATUS CODE ARGS...: kvctl team ARGS fails; the API said STATUS/CODE
	local name=$1 code=$2
	shift 2
	kv_ctl team "$@" --json >"$T/r.json" 2>"$T/r.err"
	check "$name: kvctl exits non-zero" test $? -ne 0
	check_eq "... code $code" "$(jq -r .code "$T/r.json")" "$code"
}
refused "an unknown parent" unknown_parent create x --parent nowhere
refused "a cycle (ops under payments, which is under ops)" cycle move ops payments
refused "moving a [team] of kilovolt.ini" config_team move acme ops
refused "setting rpm on a [team] of kilovolt.ini" config_team set acme --rpm 5
refused "a bad model_budget" refused create y --model-budget "gpt-5*:lots"
check "... with the reader's reason" grep -q "model_budget" "$T/r.json"
prev=acme
for i in 1 2 3 4 5 6 7; do	# acme and d1..d7: 8 teams, the most a chain may hold
	kv_ctl team create d$i --parent $prev >/dev/null || fail "create d$i"
	prev=d$i
done
refused "a ninth team in a chain" refused create d8 --parent d7
check "... saying why" grep -q "more than 8 teams" "$T/r.json"
check_eq "a [team] of kilovolt.ini takes a budget (an override)" \
	"$(kv_ctl team set acme --budget 200 --json | jq -r .ledger.budget_nusd)" 200000000000
check_eq "kvctl team show: its settings and figures" \
	"$(kv_ctl team show payments --json | jq -r '.parent + " " + (.ledger.spent_nusd | tostring)')" \
	"ops $((4 * R))"
kv_ctl team show payments >"$T/show.txt"
check "kvctl team show, for a person" grep -Eqx 'team/payments: parent ops, budget \$[0-9.]+ monthly, rpm 0, tpm 100000, model_budget -, made by api; spent \$[0-9.]+, reserved \$0\.0+, 4 requests' "$T/show.txt"
kv_ctl team create payments 2>"$T/dup.err"
check "a refusal, for a person, on standard error" grep -q "^kvctl: team: a team of that name exists.*(409 exists)" "$T/dup.err"
check_eq "kvctl team show on no team: exit 1" "$(kv_ctl team show ghost >/dev/null 2>&1; echo $?)" 1

# ---- the audit log ------------------------------------------------------------------
jq -c 'select(.op | startswith("team."))' "$AUD" >"$T/team_lines"
check_eq "every team write is in the audit log (ok and refused)" "$(wc -l <"$T/team_lines")" 21
set_line=$(grep '"op":"team.set"' "$T/team_lines" | head -n 1)
check_eq "team.set: who, args, before and after" \
	"$(jq -r '"\(.who.name) \(.args.team) \(.before.budget_nusd) \(.after.budget_nusd) \(.before.tpm) \(.after.tpm) \(.status)"' <<<"$set_line")" \
	"ops-team payments $((2 * R)) $((5 * R)) 0 100000 200"
check_eq "team.set: the key is the team's node" "$(jq -r '.key.label + " " + .key.id' <<<"$set_line")" \
	"team/payments $(printf '\001node:team/payments' | sha256sum | cut -c1-12)"
check_eq "team.move: before and after" \
	"$(grep '"op":"team.move"' "$T/team_lines" | head -n 1 | jq -r '"\(.before.parent) \(.after.parent)"')" "acme ops"
check "kvctl audit --verify passes" kv_ctl audit --verify

# ---- /metrics and the status page -------------------------------------------------------
curl -sS -m 30 "http://127.0.0.1:$KV_STATUS_PORT/metrics" >"$T/metrics"
curl -sS -m 30 "http://127.0.0.1:$KV_STATUS_PORT/" >"$T/page.html"
check_eq "/metrics: payments spent 4R exactly" \
	"$(sed -n 's/^kilovolt_team_spent_dollars{team="payments"} //p' "$T/metrics")" "$(usd $((4 * R)))"
check_eq "/metrics: payments' budget" \
	"$(sed -n 's/^kilovolt_team_budget_dollars{team="payments"} //p' "$T/metrics")" "$(usd $((5 * R)))"
check_eq "/metrics: payments' requests" \
	"$(sed -n 's/^kilovolt_team_requests_total{team="payments"} //p' "$T/metrics")" 4
check_eq "the status page: payments' spend" \
	"$(grep -o '<tr data-node="team/payments"[^>]*>' "$T/page.html" | sed 's/.*data-spent-nusd="\([0-9]*\)".*/\1/')" $((4 * R))
check "the status page: payments under ops under acme" \
	sh -c "grep -o 'data-node=\"team/[a-z0-9]*\"' '$T/page.html' | head -3 | tr '\n' ' ' | grep -qx 'data-node=\"team/acme\" data-node=\"team/ops\" data-node=\"team/payments\" '"

# ---- a restart keeps the teams ------------------------------------------------------------
kv_stop
kv_start
check_eq "after a restart payments is still the API's, under ops" \
	"$(team payments | jq -r '.made_by + " " + .parent + " " + (.ledger.spent_nusd | tostring)')" "api ops $((4 * R))"
codes="$(call c1 "$KP") $(call c2 "$KP")"
check_eq "... and its budget (5R, 4R spent) admits one more, then 402" "$codes" "200 402"
check_eq "... naming team/payments" "$(node_of c2)" "team/payments"

kv_finish
