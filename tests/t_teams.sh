#!/bin/bash
# t_teams: the budget tree (issue 36) through the real daemon. An org with
# two teams of two keys each takes 300 requests, 50 at a time, on budgets
# the load exceeds: no node spends past its budget, the keys sum exactly to
# their team and the teams to the org, nothing stays reserved, every 402
# names the node that refused (x-kilovolt-budget-node) and the provider saw
# only the admitted requests. A per-model cap refuses only its models.
# kilovoltd -t refuses an unknown parent, a cycle and a tree too deep.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes

M=20
# As in t_budget: at these prices a request's real cost is its reservation.
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"a tree of budgets"}]}'
R=$(ceil_cost ${#BODY} $M 1000 1000000000)
check_eq "a request costs what it reserves" "$(ceil_cost $((${#BODY} / 4)) $M 1000 1000000000)" "$R"

KP1=sk-kvtest-team-pay-one-11111 KP2=sk-kvtest-team-pay-two-22222
KS1=sk-kvtest-team-search-one-333 KS2=sk-kvtest-team-search-two-444
KC=sk-kvtest-team-capped-55555

OVERLAY="[price kv-budget*]
input = 0.000001
output = 1.00

[price kv-cap*]
input = 0.000001
output = 1.00

[team acme]
budget = $(usd $((60 * R)))

[team payments]
parent = acme
budget = $(usd $((40 * R)))

[team search]
parent = acme
budget = $(usd $((30 * R)))

[team capped]
parent = acme
model_budget = kv-cap*:$(usd $((3 * R)))

[key p1]
key = $KP1
team = payments
budget = $(usd $((25 * R)))

[key p2]
key = $KP2
team = payments
budget = 100

[key s1]
key = $KS1
team = search
budget = 100

[key s2]
key = $KS2
team = search
budget = 100

[key c]
key = $KC
team = capped
budget = 100"

kv_start_mock
kv_write_config <<<"$OVERLAY"

# ---- the config's checks --------------------------------------------------------

bad_config() {	# NAME TEXT: kilovoltd -t refuses the config plus TEXT
	printf '%s\n' "$2" >"$T/bad.ini.add"
	cat "$T/kilovolt.ini" "$T/bad.ini.add" >"$T/bad.ini"
	check "kilovoltd -t refuses $1" sh -c "! '$KV_DAEMON_BIN' -t -c '$T/bad.ini' >'$T/bad.out' 2>&1"
	grep -q "$3" "$T/bad.out" || { fail "the error says '$3'"; cat "$T/bad.out"; }
}
bad_config "an unknown parent" "[team x]
parent = nowhere" "parent 'nowhere' is no \[team\]"
bad_config "a cycle" "[team x]
parent = y
[team y]
parent = x" "cycle"
deep="[team d0]"
for i in $(seq 1 8); do deep="$deep
[team d$i]
parent = d$((i - 1))"; done
bad_config "a tree deeper than 8" "$deep" "more than 8 teams"
bad_config "a key's unknown team" "[key z]
key = sk-kvtest-team-z-9999
team = ghost" "team 'ghost' is no \[team\]"
check "kilovoltd -t accepts the tree" "$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini"
"$KV_DAEMON_BIN" -T -c "$T/kilovolt.ini" >"$T/dump.ini" 2>&1
check "kilovoltd -T shows the teams" grep -qx "parent = acme" "$T/dump.ini"
check "kilovoltd -T shows a model_budget" grep -q "^model_budget = kv-cap\*:" "$T/dump.ini"
check "kilovoltd -T shows a key's team" grep -qx "team = payments" "$T/dump.ini"

kv_start

row() {		# BY NODE FIELD
	kv_ctl report --by "$1" --json | jq -r --arg n "$2" ".rows[] | select(.node == \$n) | .$3"
}
key_spent() { row key "key/$1" spent_nusd; }
check_eq "kvctl report shows the org's budget" "$(row team team/acme budget_nusd)" $((60 * R))

# ---- 300 requests, 50 at a time ----------------------------------------------------

mock0=$(kv_mock_stat requests)
selfcount=$(($(kv_mock_stat requests) - mock0))	# what one /mock/stats read adds
mock0=$(kv_mock_stat requests)
mkdir -p "$T/c"
one() {		# I: request I with key I mod 4
	local keys=("$KP1" "$KP2" "$KS1" "$KS2")
	curl -sS -m 120 -o "$T/c/$1.body" -D "$T/c/$1.head" -w '%{http_code}\n' \
		-H "Authorization: Bearer ${keys[$(($1 % 4))]}" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 20' --data-binary "$BODY" \
		"$KV_URL/v1/chat/completions" >"$T/c/$1.code" 2>"$T/c/$1.err"
}
export -f one
export T M BODY KV_URL KP1 KP2 KS1 KS2
seq 1 300 | xargs -P 50 -I{} bash -c 'one {}'
n200=$(cat "$T"/c/*.code | grep -c '^200$')
n402=$(cat "$T"/c/*.code | grep -c '^402$')
echo "# 300 requests: $n200 x 200, $n402 x 402"
check_eq "every request is admitted or refused with 402" $((n200 + n402)) 300
check "some are refused (the load exceeds the budgets)" test "$n402" -gt 0

P1=key/p1 P2=key/p2 S1=key/s1 S2=key/s2
badnode=0
declare -A refusedby
for i in $(seq 1 300); do
	[ "$(cat "$T/c/$i.code")" = 402 ] || continue
	node=$(tr -d '\r' <"$T/c/$i.head" | sed -n 's/^x-kilovolt-budget-node: //p')
	case $i:$node in
	*:team/acme|*:team/payments|*:team/search) ;;
	*:key/*) [ "$((i % 4))" = 0 ] && [ "$node" = "key/$(id_of "$KP1")" ] || badnode=$((badnode + 1)) ;;
	*) badnode=$((badnode + 1)) ;;
	esac
	case $((i % 4)):$node in 2:team/payments|3:team/payments|0:team/search|1:team/search)
		badnode=$((badnode + 1)) ;; esac
	grep -qF "budget exceeded for ${node%%/*}" "$T/c/$i.body" || badnode=$((badnode + 1))
	refusedby[$node]=$((${refusedby[$node]:-0} + 1))
done
for n in "${!refusedby[@]}"; do echo "# refused by $n: ${refusedby[$n]}"; done
check_eq "every 402 names a node on its key's path, in its header and message" "$badnode" 0
check_eq "the provider saw only the admitted requests" \
	"$(($(kv_mock_stat requests) - mock0 - selfcount))" "$n200"

settled() { [ "$(kv_ctl report --by team --json | jq '[.rows[].reserved_nusd] | add')" = 0 ] &&
	[ "$(kv_ctl report --by key --json | jq '[.rows[].reserved_nusd] | add')" = 0 ]; }
check "every node's reservations are released" kv_wait_for 30 settled
kv_ctl report --by team
kv_ctl report --by key
id1=$(id_of "$KP1")
sp1=$(row key key/p1 spent_nusd) sp2=$(row key key/p2 spent_nusd)
ss1=$(row key key/s1 spent_nusd) ss2=$(row key key/s2 spent_nusd)
tp=$(row team team/payments spent_nusd) ts=$(row team team/search spent_nusd)
ta=$(row team team/acme spent_nusd)
check_eq "payments' keys sum exactly to payments" $((sp1 + sp2)) "$tp"
check_eq "search's keys sum exactly to search" $((ss1 + ss2)) "$ts"
check_eq "the teams sum exactly to the org" $((tp + ts)) "$ta"
check_eq "the org's spend is the admitted requests' cost" "$ta" $((n200 * R))
check "key p1 within its budget ($sp1 <= $((25 * R)))" test "$sp1" -le $((25 * R))
check "payments within its budget ($tp <= $((40 * R)))" test "$tp" -le $((40 * R))
check "search within its budget ($ts <= $((30 * R)))" test "$ts" -le $((30 * R))
check "acme within its budget ($ta <= $((60 * R)))" test "$ta" -le $((60 * R))
check_eq "the org counts the admitted requests" "$(row team team/acme requests)" "$n200"
kv_ctl team acme --json >"$T/team.json"
check_eq "kvctl team acme --json" "$(jq -r '.node + " " + (.spent_nusd | tostring)' "$T/team.json")" "team/acme $ta"

# The key's own refusal names the key.
check "kvctl budget p1 0.000001" kv_ctl budget p1 0.000001
code=$(curl -sS -m 60 -o /dev/null -D "$T/key.head" -w '%{http_code}' -H "Authorization: Bearer $KP1" \
	-H 'Content-Type: application/json' --data-binary "$BODY" "$KV_URL/v1/chat/completions")
check_eq "a key over its own budget: 402 naming key/ID" \
	"$code $(tr -d '\r' <"$T/key.head" | sed -n 's/^x-kilovolt-budget-node: //p')" "402 key/$id1"
check_eq "... and nothing of it stays held at its team" "$(row team team/payments reserved_nusd)" 0

# ---- a per-model cap ---------------------------------------------------------------

# The org is spent: raise it (kvctl budget on the node, as on a key).
check "kvctl budget team/acme 1000" kv_ctl budget team/acme 1000
CBODY=${BODY/kv-budget-1/kv-cap-1}
capcode() {
	curl -sS -m 60 -o "$T/cap.body" -D "$T/cap.head" -w '%{http_code}' \
		-H "Authorization: Bearer $KC" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" --data-binary "$1" "$KV_URL/v1/chat/completions"
}
codes=
for i in 1 2 3 4; do codes="$codes $(capcode "$CBODY")"; done
check_eq "the kv-cap* cap of \$3R admits 3 kv-cap requests, then 402" "$codes" " 200 200 200 402"
check_eq "... named model/team/capped/kv-cap*" \
	"$(tr -d '\r' <"$T/cap.head" | sed -n 's/^x-kilovolt-budget-node: //p')" "model/team/capped/kv-cap*"
check_eq "another model of the same key is not capped" "$(capcode "$BODY")" 200
check_eq "the cap node spent exactly 3 requests" "$(row model 'model/team/capped/kv-cap*' spent_nusd)" $((3 * R))

# A node forgotten while the daemon runs comes back fresh (the master
# syncs the config's tree), and the workers hold at the new account.
check "kvctl forget team/search" kv_ctl forget team/search
check_eq "team/search starts again at 0" "$(row team team/search spent_nusd)" 0
code=$(curl -sS -m 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KS1" \
	-H 'Content-Type: application/json' --data-binary "$BODY" "$KV_URL/v1/chat/completions")
check_eq "a search key is admitted again" "$code" 200
check "... and charged at the new team/search" kv_wait_for 10 \
	sh -c "[ \"\$('$KV_CTL_BIN' -c '$T/kilovolt.ini' team search --json | jq .spent_nusd)\" -gt 0 ]"

# A worker killed while it holds a tree: the master releases every node.
k0=$(row key key/s2 spent_nusd) t0=$(row team team/search spent_nusd) a0=$(row team team/acme spent_nusd)
kpids=()
for i in 1 2 3 4 5 6; do
	curl -sS -m 120 -o /dev/null -H "Authorization: Bearer $KS2" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 1500' --data-binary "$BODY" \
		"$KV_URL/v1/chat/completions" 2>/dev/null &
	kpids+=($!)
done
held6() { [ "$(row team team/search reserved_nusd)" = $((6 * R)) ]; }
check "6 slow streams hold 6 reservations at team/search" kv_wait_for 30 held6
victims=
for pid in $(kv_ctl status --json | jq -r '.workers[] | select(.active_streams > 0) | .pid'); do
	[ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = "$KV_PID" ] && victims="$victims $pid"
done
check "the streams are on this daemon's workers ($victims)" test -n "$victims"
KV_KILLS_WORKERS=1	# on purpose: kv_finish must not count it
for pid in $victims; do kill -KILL "$pid"; done
released() { [ "$(row team team/search reserved_nusd)" = 0 ] && [ "$(row team team/acme reserved_nusd)" = 0 ] &&
	[ "$(row key key/s2 reserved_nusd)" = 0 ]; }
check "within 10 s of kill -9 the key's, team's and org's holds are back to 0" kv_wait_for 10 released
wait "${kpids[@]}"
dk=$(($(row key key/s2 spent_nusd) - k0))
check "the dead worker's requests were charged ($dk)" test "$dk" -gt 0
check_eq "... the same at team/search" $(($(row team team/search spent_nusd) - t0)) "$dk"
check_eq "... and at team/acme" $(($(row team team/acme spent_nusd) - a0)) "$dk"
kv_wait_for 30 sh -c "curl -s -o /dev/null -H 'Authorization: Bearer $KS1' -H 'Content-Type: application/json' \
	--data-binary '$BODY' '$KV_URL/v1/chat/completions'"	# a new worker serves

# A reload applies the tree: a new team and a changed budget (which drops
# kvctl's override of the org, as it would a key's).
awk -v acme="$(usd $((60 * R)))" '$0 == "budget = " acme && !done { print "budget = 7"; done = 1; next }
	{ print }' "$T/kilovolt.ini" >"$T/k2.ini"
printf '\n[team ops]\nparent = acme\nbudget = 1\n' >>"$T/k2.ini"
mv "$T/k2.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
org7() { [ "$(row team team/acme budget_nusd)" = 7000000000 ] && [ -n "$(row team team/ops node)" ]; }
check "a reload sets the org's budget and makes the new team" kv_wait_for 30 org7

kv_finish
