#!/bin/bash
# t_status: the status service of a running kilovoltd. /metrics passes
# promtool and agrees with the ledger (bounded per-key series, escaped
# labels, cumulative histograms); /status.json equals `kvctl status --json`;
# /healthz; admin writes refused without (401) or with a wrong (403) token
# or with none configured (403), accepted with the right one and visible in
# kvctl; 404/405/409/413 answers; the HTML page rendered by headless
# Chromium shows the keys, and its screenshot is kept for the README.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

FILL=$top_builddir/tests/ledger_fill
[ -x "$FILL" ] || skip "$FILL not built"
command -v jq >/dev/null || skip "jq not installed"

ADMIN=adm-$$-$RANDOM$RANDOM
NBULK=120	# more keys than the 100 that get their own metric series

# ---- a ledger with many keys, made before the daemon maps it ---------------
# A few keys get labels and spends near their budgets so the page (and the
# screenshot in docs/) shows every bar colour.
steps=(key sk-search team-search 50.00 use sk-search gpt-4o-mini 41250000000 900000 210000 300000
	key sk-evals batch-evals 20.00 use sk-evals 'claude-sonnet-4-20250514' 19100000000 1200000 90000 0
	key sk-bot support-bot 10.00 use sk-bot gpt-4o-mini 7300000000 650000 120000 50000
	key sk-odd - 2.00 use sk-odd 'odd"model\name' 1000 1 1 0)
for ((i = 0; i < NBULK; i++)); do
	steps+=(key "sk-bulk-$i" - 2.00 use "sk-bulk-$i" gpt-4o-mini $((1000000 + i * 7919)) $((i + 10)) 5 0)
done
"$FILL" "$T/ledger" 1024 "${steps[@]}" >"$T/fill.out" 2>&1
check "ledger_fill builds a ledger with $((NBULK + 4)) keys" test $? = 0

kv_start_mock
export KV_TEST_ADMIN=$ADMIN
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN

[key alice]
key = sk-alice-status
budget = 25.00
EOF
kv_start
S=http://127.0.0.1:$KV_STATUS_PORT
ALICE=$(id_of sk-alice-status)

# Real traffic, so the counters, the histograms and a named key move.
chat='{"model":"gpt-4o-mini","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}'
code=$(kv_curl /v1/chat/completions -o "$T/chat.out" -w '%{http_code}' \
	-H 'Authorization: Bearer sk-alice-status' -H 'x-mock-tokens: 400' \
	-H 'Content-Type: application/json' -d "$chat")
check_eq "a chat completion through the gateway" "$code" 200
msg='{"model":"claude-sonnet-4-20250514","max_tokens":1500,"messages":[{"role":"user","content":"hi"}]}'
code=$(kv_curl /v1/messages -o "$T/msg.out" -w '%{http_code}' -H 'x-api-key: sk-alice-status' \
	-H 'x-mock-tokens: 1200' \
	-H 'anthropic-version: 2023-06-01' -H 'Content-Type: application/json' -d "$msg")
check_eq "an Anthropic message through the gateway" "$code" 200

# get PATH [CURL ARGS]: body in $T/body, headers in $T/hdr, status in CODE.
get() {
	local path=$1
	shift
	CODE=$(curl -sS -m 10 -D "$T/hdr" -o "$T/body" -w '%{http_code}' "$@" "$S$path")
}
body_has() { grep -qF -- "$1" "$T/body"; }

# ---- /healthz ----------------------------------------------------------------
healthy() { get /healthz && [ "$CODE" = 200 ]; }
check "/healthz answers 200 once a worker heartbeats" kv_wait_for 15 healthy
check "/healthz says ok" body_has ok

keepalive() { curl -sv -m 10 -o /dev/null -o /dev/null "$S/healthz" "$S/metrics" 2>&1 |
	grep -qiE 're-?using existing connection'; }
check "GETs keep the connection alive (scrapers reuse it)" keepalive

# ---- /status.json against kvctl --------------------------------------------
get /status.json
check_eq "/status.json: 200" "$CODE" 200
check "/status.json: application/json" grep -qi '^content-type: application/json' "$T/hdr"
check "/status.json parses with jq" jq -e . "$T/body" >/dev/null
cp "$T/body" "$T/status.json"
kv_ctl status --json >"$T/kvctl.json"
check "kvctl status --json parses" jq -e . "$T/kvctl.json" >/dev/null
same() { [ "$(jq -cS "$1" "$T/status.json")" = "$(jq -cS "$1" "$T/kvctl.json")" ]; }
check "/status.json keys equal kvctl's" same .keys
check "/status.json models equal kvctl's" same .models
check "/status.json counters equal kvctl's" same '{requests_total, cost_nusd_total, max_keys}'
check_eq "/status.json lists every key" "$(jq '.keys | length' "$T/status.json")" $((NBULK + 5))
check "/status.json shows alice's spend" \
	jq -e --arg id "$ALICE" '.keys[] | select(.id == $id and .label == "alice" and .spent_nusd > 0)' \
	"$T/status.json" >/dev/null

# ---- /metrics ----------------------------------------------------------------
get /metrics
cp "$T/body" "$T/metrics"
check_eq "/metrics: 200" "$CODE" 200
check "/metrics: text format 0.0.4" grep -qi '^content-type: text/plain; version=0.0.4' "$T/hdr"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1
	check "promtool check metrics accepts /metrics" test $? = 0
	cat "$T/promtool.out"
else
	echo "note: promtool not installed (Debian package: prometheus); structure checked by awk only"
fi
# Every sample's family has HELP and TYPE before it, and no family is split.
awk '/^# HELP /{h[$3]=1; next} /^# TYPE /{t[$3]=1; if ($3 in seen) bad=1; next}
	{ n=$1; sub(/\{.*/, "", n); f=n; sub(/_(bucket|sum|count)$/, "", f)
	  if (!(n in t) && !(f in t)) bad=1; if (!(n in h) && !(f in h)) bad=1
	  if (f != last) { if (f in seen) bad=1; seen[f]=1; last=f } }
	END { exit bad }' "$T/metrics"
check "every metric family has HELP and TYPE and is contiguous" test $? = 0
metric() { awk -v m="$1" '$1 == m { print $2 }' "$T/metrics"; }
check_eq "kilovolt_requests_total equals the ledger's" "$(metric kilovolt_requests_total)" \
	"$(jq .requests_total "$T/status.json")"
check_eq "kilovolt_up is 1" "$(metric kilovolt_up)" 1
check "no nano-dollar metric is exposed" sh -c "! grep -q nusd '$T/metrics'"
nano() { tr -d . | sed 's/^0*\([0-9]\)/\1/'; }	# 9-decimal dollars -> nano-dollars
check_eq "kilovolt_cost_dollars_total is the ledger's cost in dollars" \
	"$(metric kilovolt_cost_dollars_total | nano)" "$(jq .cost_nusd_total "$T/status.json")"
nkey=$(grep -c '^kilovolt_key_spent_dollars{' "$T/metrics")
check_eq "per-key series are bounded: 100 keys + other" "$nkey" 101
other=$(jq '[.keys[100:][].requests] | add' "$T/status.json")
check "the rest of the keys are summed into key=\"other\"" \
	grep -q "^kilovolt_key_requests_total{key=\"other\",label=\"\"} $other\$" "$T/metrics"
sum_metric=$(grep '^kilovolt_key_spent_dollars{' "$T/metrics" | awk '{print $2}' | nano |
	awk '{s += $1} END {printf "%.0f", s}')
check_eq "per-key spend (with other) sums to the ledger's" "$sum_metric" \
	"$(jq '[.keys[].spent_nusd] | add' "$T/status.json")"
check "a labelled key's series carries its label" grep -q \
	"^kilovolt_key_budget_dollars{key=\"$(id_of sk-search)\",label=\"team-search\"} 50.000000000\$" \
	"$T/metrics"
check "a model label is escaped per the text format" \
	grep -qF 'kilovolt_model_requests_total{model="odd\"model\\name"} 1' "$T/metrics"
# Histograms: cumulative buckets, +Inf equals _count, real requests counted.
for h in kilovolt_time_to_first_byte_seconds kilovolt_request_duration_seconds; do
	awk -v h="$h" 'index($0, h "_bucket{") == 1 { if ($2 < prev) bad = 1; prev = $2; last = $2 }
		$1 == h "_count" { cnt = $2 } END { exit bad || cnt != last || cnt < 1 }' "$T/metrics"
	check "$h: cumulative buckets, +Inf = _count >= 1" test $? = 0
	check "$h: le bounds in seconds" grep -q "^${h}_bucket{le=\"0.005\"}" "$T/metrics"
done

# ---- the HTML page in headless Chromium -------------------------------------
get /
check_eq "/: 200" "$CODE" 200
check "/: text/html" grep -qi '^content-type: text/html' "$T/hdr"
check "/: no external assets" sh -c "! grep -Eq '(src|href)=\"(https?:)?//' '$T/body'"
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
	echo "SKIP part: no chromium (Debian package: chromium); page not rendered"
else
	chrome_run() {
		local prof
		prof=$(mktemp -d "$T/chrome.XXXXXX")
		timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic \
			--no-first-run --disable-background-networking --disable-component-update \
			--disable-sync --disable-dev-shm-usage --user-data-dir="$prof" \
			--window-size=1280,900 --virtual-time-budget=3000 "$@" "$S/" 2>>"$T/chrome.err"
	}
	chrome_run --dump-dom >"$T/dom.html"
	check "Chromium renders the page" grep -q '<table id="keys"' "$T/dom.html"
	for i in 0 1 2; do
		id=$(jq -r ".keys[$i].id" "$T/status.json")
		usd=$(jq -r --argjson i $i '.keys[$i].spent_nusd | (. / 1000 | floor) as $u |
			"$\($u / 1000000 | floor).\(($u % 1000000) + 1000000 | tostring | .[1:])"' \
			"$T/status.json")
		check "the rendered page shows key $id" grep -qF ">$id<" "$T/dom.html"
		check "the rendered page shows its spend $usd" grep -qF ">${usd}<" "$T/dom.html"
	done
	check "the rendered page shows alice" grep -qF '>alice<' "$T/dom.html"
	check "the rendered page says it is live" grep -qF 'live' "$T/dom.html"
	mkdir -p "$top_builddir/tests"
	rm -f "$top_builddir/tests/status-page.png"
	chrome_run --screenshot="$top_builddir/tests/status-page.png" >/dev/null
	check "a screenshot of the page is saved" test -s "$top_builddir/tests/status-page.png"
fi

# ---- admin writes --------------------------------------------------------------
post() { get "$@" -X POST; }
auth=(-H "Authorization: Bearer $ADMIN")
post "/keys/$ALICE/reset"
check_eq "reset without a token: 401" "$CODE" 401
check "401 names the Bearer scheme" grep -qi '^www-authenticate: bearer' "$T/hdr"
post "/keys/$ALICE/reset" -H "Authorization: Bearer x$ADMIN"
check_eq "reset with a wrong token: 403" "$CODE" 403
post "/keys/$ALICE/reset" -H "Authorization: Bearer ${ADMIN%?}"
check_eq "reset with a token's prefix: 403" "$CODE" 403
spent_of() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
check "alice has spent something before the reset" test "$(spent_of "$ALICE" spent_nusd)" -gt 0
post "/keys/$ALICE/reset" "${auth[@]}"
check_eq "reset with the admin token: 200" "$CODE" 200
check "reset answers the account" jq -e --arg id "$ALICE" '.id == $id and .spent_nusd == 0' "$T/body" >/dev/null
check_eq "the reset is visible in kvctl" "$(spent_of "$ALICE" spent_nusd)" 0
post "/keys/${ALICE:0:6}/budget" "${auth[@]}" -d '{"budget_nusd": 7000000000}'
check_eq "budget by id prefix: 200" "$CODE" 200
check_eq "the new budget is visible in kvctl" "$(spent_of "$ALICE" budget_nusd)" 7000000000
for bad in '{"budget_nusd": -1}' '{"budget_nusd": 1.5}' '{"budget_nusd": "5"}' \
	'{"budget_nusd": 99999999999999999999}' '{"budget_nusd": 5, "x": 1}' '[5]' ''; do
	post "/keys/$ALICE/budget" "${auth[@]}" -d "$bad"
	check_eq "budget body '$bad': 400" "$CODE" 400
done
check_eq "a refused body changes nothing" "$(spent_of "$ALICE" budget_nusd)" 7000000000
post "/keys/$ALICE/budget" "${auth[@]}" -d "{\"budget_nusd\": $(printf '%01100d' 5)}"
check_eq "a body over 1 KB: 413" "$CODE" 413
unknown=$(jq -r '[.keys[].id] as $ids | ["0","1","2","3","4","5","6","7","8","9","a","b","c","d","e","f"] |
	map(. as $c | "\($c)\($c)\($c)\($c)\($c)\($c)\($c)\($c)\($c)\($c)\($c)\($c)") |
	map(select(. as $x | $ids | index($x) | not)) | .[0]' "$T/status.json")
post "/keys/$unknown/reset" "${auth[@]}"
check_eq "an unknown key: 404" "$CODE" 404
shared=$(jq -r '[.keys[].id[0:1]] | group_by(.) | map(select(length > 1)) | .[0][0]' "$T/status.json")
post "/keys/$shared/reset" "${auth[@]}"
check_eq "an ambiguous id prefix: 409" "$CODE" 409
get "/keys/$ALICE/reset"
check_eq "GET on an admin path: 405" "$CODE" 405
check "405 says Allow: POST" grep -qi '^allow: POST' "$T/hdr"
post /metrics
check_eq "POST /metrics: 405" "$CODE" 405
get /nowhere
check_eq "an unknown path: 404" "$CODE" 404
check "admin writes are logged" grep -q "key $ALICE reset by admin" "$KV_LOG"

# ---- no admin token configured: every write refused ---------------------------
check "kilovoltd stops cleanly" kv_stop
sed -i '/^admin_token/d' "$T/kilovolt.ini"
kv_start
S=http://127.0.0.1:$KV_STATUS_PORT
SEARCH=$(id_of sk-search)
post "/keys/$SEARCH/reset" "${auth[@]}"
check_eq "no admin token configured: the old token gets 403" "$CODE" 403
post "/keys/$SEARCH/budget" -d '{"budget_nusd": 0}'
check_eq "no admin token configured: no token gets 403" "$CODE" 403
check_eq "the refused reset changed nothing" "$(spent_of "$SEARCH" spent_nusd)" 41250000000
check_eq "the refused budget changed nothing" "$(spent_of "$SEARCH" budget_nusd)" 50000000000

kv_finish
