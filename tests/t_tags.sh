#!/bin/bash
# t_tags: tags (issue 36) through the real daemon and the mock provider. A
# request's x-kilovolt-tags names [tag] nodes it is held at as well as its
# key's tree, all or nothing: a tag over its budget answers 402 naming
# tag/NAME, the provider never sees that request, and nothing stays held at
# the nodes taken before it. Every node's spent_nusd and reserved_nusd is
# asserted exactly; kvctl report --by tag counts a request once in each of
# its tags' rows and never in a team's total twice. An unknown tag, a
# malformed one and too many are 400s; the header never goes upstream.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C		# ${#body} counts bytes

M=20
# As in t_teams: at these prices a request's real cost is its reservation.
ceil_cost() { echo $((($1 * $3 + $2 * $4 + 999999) / 1000000)); }
usd() { printf '%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
BODY='{"model":"kv-budget-1","stream":true,"stream_options":{"include_usage":true},"max_tokens":'$M',"messages":[{"role":"user","content":"tags on a request"}]}'
R=$(ceil_cost ${#BODY} $M 1000 1000000000)
check_eq "a request costs what it reserves" "$(ceil_cost $((${#BODY} / 4)) $M 1000 1000000000)" "$R"

K1=sk-kvtest-tags-one-1111111 K2=sk-kvtest-tags-two-2222222

kv_start_mock
kv_write_config <<EOF2
[budget]
max_tags = 2

[price kv-budget*]
input = 0.000001
output = 1.00

[team acme]
budget = $(usd $((100 * R)))

[team eng]
parent = acme
budget = $(usd $((50 * R)))

[tag alpha]
budget = $(usd $((3 * R)))

[tag beta]
budget = $(usd $((10 * R)))
period = daily

[tag gamma]
model_budget = kv-budget*:$(usd $((1 * R)))

[tag load-a]
budget = $(usd $((10 * R)))

[tag load-b]

[key one]
key = $K1
team = eng
budget = 100

[key two]
key = $K2
budget = 100
EOF2

bad_config() {	# NAME TEXT WANT: kilovoltd -t refuses the config plus TEXT
	cat "$T/kilovolt.ini" - >"$T/bad.ini" <<<"$2"
	check "kilovoltd -t refuses $1" sh -c "! '$KV_DAEMON_BIN' -t -c '$T/bad.ini' >'$T/bad.out' 2>&1"
	grep -q "$3" "$T/bad.out" || { fail "the error says '$3'"; cat "$T/bad.out"; }
}
bad_config "a tag named with a comma" "[tag a,b]" "bad tag name 'a,b'"
bad_config "a tag given twice" "[tag alpha]" "duplicate section \[tag alpha\]"
bad_config "a tag with a parent" "[tag delta]
parent = acme" "delta\|parent"
check "kilovoltd -t accepts the tags" "$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini"
"$KV_DAEMON_BIN" -T -c "$T/kilovolt.ini" >"$T/dump.ini" 2>/dev/null
check "kilovoltd -T shows [tag beta]" grep -qx "\[tag beta\]" "$T/dump.ini"
check "kilovoltd -T shows the tags header" grep -qx "tags_header = x-kilovolt-tags" "$T/dump.ini"
check "kilovoltd -T reads back" "$KV_DAEMON_BIN" -t -c "$T/dump.ini"

kv_start

row() {		# BY NODE FIELD
	kv_ctl report --by "$1" --json | jq -r --arg n "$2" ".rows[] | select(.node == \$n) | .$3"
}
ask() {		# KEY TAGS [BODY]: the status code; head and body in $T/last.*
	local h=()
	[ -n "$2" ] && h=(-H "x-kilovolt-tags: $2")
	curl -sS -m 60 -o "$T/last.body" -D "$T/last.head" -w '%{http_code}' \
		-H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		-H "x-mock-tokens: $M" "${h[@]}" --data-binary "${3:-$BODY}" \
		"$KV_URL/v1/chat/completions"
}
node_of() { tr -d '\r' <"$T/last.head" | sed -n 's/^x-kilovolt-budget-node: //p'; }
nodes="key/one key/two team/acme team/eng tag/alpha tag/beta tag/gamma"
field() {	# NODE FIELD
	case $1 in
	key/*) row key "$1" "$2" ;;
	tag/*) row tag "$1" "$2" ;;
	*) row team "$1" "$2" ;;
	esac
}
allfree() {
	local n
	for n in $nodes; do [ "$(field "$n" reserved_nusd)" = 0 ] || return 1; done
}
expect() {	# WHAT NODE=N ...: each node's spent is N requests' cost, nothing held
	local what=$1 kv n want got
	shift
	kv_wait_for 30 allfree || fail "$what: a node still holds a reservation"
	for kv in "$@"; do
		n=${kv%=*} want=$((${kv#*=} * R))
		got=$(field "$n" spent_nusd)
		check_eq "$what: $n spent_nusd" "$got" "$want"
		check_eq "$what: $n reserved_nusd" "$(field "$n" reserved_nusd)" 0
	done
}

mock0=$(kv_mock_stat requests)
selfcount=$(($(kv_mock_stat requests) - mock0))	# what one /mock/stats read adds
mock0=$(kv_mock_stat requests)
mock_saw() { echo $(($(kv_mock_stat requests) - mock0 - selfcount)); }	# one read later: +selfcount

# ---- two tags, then one of them over its budget -----------------------------------
codes=
for i in 1 2 3; do codes="$codes $(ask "$K1" "alpha, beta")"; done
check_eq "three requests tagged alpha,beta are admitted" "$codes" " 200 200 200"
expect "after 3 x alpha,beta" key/one=3 team/eng=3 team/acme=3 tag/alpha=3 tag/beta=3 \
	tag/gamma=0 key/two=0
seen=$(mock_saw)
# beta is held first, then alpha refuses: beta, the key and its teams let go
check_eq "a 4th (beta,alpha) is refused with 402" "$(ask "$K1" "beta,alpha")" 402
check_eq "... naming tag/alpha in x-kilovolt-budget-node" "$(node_of)" tag/alpha
check "... and in its message" grep -qF "budget exceeded for tag/alpha" "$T/last.body"
check_eq "... and the provider never saw it" "$(mock_saw)" $((seen + selfcount))
expect "after the refusal" key/one=3 team/eng=3 team/acme=3 tag/alpha=3 tag/beta=3
check_eq "tag/alpha counts one refusal" "$(row tag tag/alpha refusals)" 1

check_eq "beta alone is still admitted" "$(ask "$K1" beta)" 200
check_eq "a key without a team, tagged beta twice" "$(ask "$K2" "beta,beta")" 200
expect "beta given twice is held once" key/one=4 key/two=1 team/eng=4 team/acme=4 tag/beta=5

# a tag's model cap (gamma has no budget of its own)
check_eq "gamma's cap admits one kv-budget request" "$(ask "$K2" gamma)" 200
check_eq "... then refuses" "$(ask "$K2" gamma)" 402
check_eq "... naming model/tag/gamma/kv-budget*" "$(node_of)" "model/tag/gamma/kv-budget*"
expect "after gamma" key/two=2 tag/gamma=1 tag/beta=5 tag/alpha=3
check_eq "the cap node spent one request" "$(row model 'model/tag/gamma/kv-budget*' spent_nusd)" "$R"

# ---- what is refused before anything is held ------------------------------------
seen=$(mock_saw)
check_eq "an unknown tag: 400" "$(ask "$K1" "alpha,nope")" 400
check "... saying which and how to make it" grep -qF "unknown tag 'nope'" "$T/last.body"
check_eq "more than max_tags = 2: 400" "$(ask "$K1" "alpha,beta,gamma")" 400
check "... saying max_tags" grep -qF "max_tags" "$T/last.body"
check_eq "a malformed tag: 400" "$(ask "$K1" "alpha;beta")" 400
check_eq "an empty tag in the list: 400" "$(ask "$K1" "alpha,,beta")" 400
code=$(curl -sS -m 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $K1" \
	-H 'Content-Type: application/json' -H 'x-kilovolt-tags: beta' -H 'x-kilovolt-tags: alpha' \
	--data-binary "$BODY" "$KV_URL/v1/chat/completions")
check_eq "the header twice: 400" "$code" 400
check_eq "the provider saw none of them" "$(mock_saw)" $((seen + selfcount))
expect "after the 400s" key/one=4 key/two=2 team/eng=4 team/acme=4 tag/alpha=3 tag/beta=5 tag/gamma=1
check "the tags header never went upstream" sh -c "! grep -qi 'x-kilovolt-tags' '$MOCK_LOG'"
check "... while the mock logs the headers it got" grep -q "headers=" "$MOCK_LOG"

# ---- the report -------------------------------------------------------------------
kv_ctl report --by tag
kv_ctl report --by tag --json >"$T/tags.json"
check_eq "report --by tag --json: the rows" \
	"$(jq -c '[.rows[] | [.node, .spent_nusd, .budget_nusd, .requests]] | sort' "$T/tags.json")" \
	"$(jq -nc --argjson r "$R" '[["tag/alpha",3*$r,3*$r,3],["tag/beta",5*$r,10*$r,5],["tag/gamma",$r,null,1],
		["tag/load-a",0,10*$r,0],["tag/load-b",0,null,0]]')"
# 6 admitted: 3 tagged alpha,beta, 1 beta and 1 beta (key two), 1 gamma (key two)
keys=$(($(row key key/one spent_nusd) + $(row key key/two spent_nusd)))
tags=$(jq '[.rows[].spent_nusd] | add' "$T/tags.json")
check_eq "the keys' spend is each request once" "$keys" $((6 * R))
check_eq "the tag rows count a request once per tag (3 requests in two rows)" "$tags" $((9 * R))
check_eq "the teams' total holds no tag spend" "$(row team team/acme spent_nusd)" "$(row key key/one spent_nusd)"

# ---- 40 requests, 20 at a time, on a tag that fits 10 -------------------------------
seen=$(mock_saw)
mkdir -p "$T/c"
one() {
	curl -sS -m 120 -o "$T/c/$1.body" -D "$T/c/$1.head" -w '%{http_code}\n' \
		-H "Authorization: Bearer $K2" -H 'Content-Type: application/json' \
		-H 'x-kilovolt-tags: load-b, load-a' -H "x-mock-tokens: $M" -H 'x-mock-delay-ms: 50' \
		--data-binary "$BODY" "$KV_URL/v1/chat/completions" >"$T/c/$1.code" 2>"$T/c/$1.err"
}
export -f one
export T M BODY KV_URL K2
k2=$(row key key/two spent_nusd)
seq 1 40 | xargs -P 20 -I{} bash -c 'one {}'
n200=$(cat "$T"/c/*.code | grep -c '^200$')
n402=$(cat "$T"/c/*.code | grep -c '^402$')
check_eq "under concurrency tag/load-a admits exactly what fits (10), refuses the rest" "$n200 $n402" "10 30"
check_eq "every 402 names tag/load-a" \
	"$(cat "$T"/c/*.head | tr -d '\r' | sed -n 's/^x-kilovolt-budget-node: //p' | sort | uniq -c | tr -s ' ')" " 30 tag/load-a"
check_eq "the provider saw only the admitted" "$(mock_saw)" $((seen + selfcount + n200))
nodes="$nodes tag/load-a tag/load-b"
expect "after the load" tag/load-a=10 tag/load-b=10
check_eq "... key two spent as much" $(($(row key key/two spent_nusd) - k2)) $((10 * R))

# ---- a window of the history (kvctl report --since/--until) ---------------------
# Everything was spent in the last minutes: once the master's sampler (every
# second) has seen it, the last 30 minutes hold every node's whole spend.
wrow() {	# BY NODE: its spent_nusd over the last 30 minutes
	kv_ctl report --by "$1" --since 30m --json | jq -r --arg n "$2" '.rows[] | select(.node == $n) | .spent_nusd'
}
sampled() {
	local n
	for n in tag/alpha tag/beta tag/gamma; do
		[ "$(wrow tag $n)" = "$(row tag $n spent_nusd)" ] || return 1
	done
	[ "$(wrow team team/acme)" = "$(row team team/acme spent_nusd)" ] &&
		[ "$(wrow key key/two)" = "$(row key key/two spent_nusd)" ]
}
check "report --since 30m: every node's window is its whole spend" kv_wait_for 30 sampled
kv_ctl report --by tag --since 30m
kv_ctl report --by team --since -30m --until "$(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)" --json >"$T/win.json"
check_eq "a window with -30m and an RFC 3339 until: team/eng is key/one's spend" \
	"$(jq -r '.rows[] | select(.node == "team/eng") | .spent_nusd' "$T/win.json")" "$(wrow key key/one)"
check_eq "... the org is its teams' sum" "$(wrow team team/acme)" "$(wrow team team/eng)"
check_eq "... by the minute, requests null (the history keeps spend)" \
	"$(jq -c '[.bucket_seconds, .rows[0].requests, (.since < .until)]' "$T/win.json")" '[60,null,true]'
check_eq "a window 2 hours back is by the hour" "$(kv_ctl report --by tag --since 2h --json | jq .bucket_seconds)" 3600
check "a window before the history's 24 hours is refused" sh -c "! '$KV_CTL_BIN' -c '$T/kilovolt.ini' report --by tag --since 2d >'$T/old.out' 2>&1"
check "... saying why" grep -q "last 24 hours" "$T/old.out"
check "an until before the since is refused" sh -c "! '$KV_CTL_BIN' -c '$T/kilovolt.ini' report --by tag --since 10m --until 20m 2>/dev/null"

# ---- a tags header of the operator's choice -------------------------------------
sed 's/^max_tags = 2$/max_tags = 2\ntags_header = X-LiteLLM-Tags/' "$T/kilovolt.ini" >"$T/k2.ini"
mv "$T/k2.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
renamed() {
	curl -sS -m 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $K2" \
		-H 'Content-Type: application/json' -H 'x-litellm-tags: nope' \
		--data-binary "$BODY" "$KV_URL/v1/chat/completions" | grep -qx 400
}
check "after a reload, tags_header = X-LiteLLM-Tags is read" kv_wait_for 30 renamed
# the old generation may answer until it has exited: wait for the new one
ordinary() { [ "$(ask "$K2" nope)" = 200 ]; }
check "... and x-kilovolt-tags is then an ordinary header" kv_wait_for 30 ordinary
check "kvctl budget tag/alpha 1 (an override, as on a key)" kv_ctl budget tag/alpha 1
check_eq "... shows in report --by tag" "$(row tag tag/alpha budget_nusd)" 1000000000

kv_finish
