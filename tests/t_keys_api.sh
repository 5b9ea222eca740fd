#!/bin/bash
# t_keys_api (issue 24): issued keys through the admin API of the status
# service, with the real daemon, two workers and the mock, unknown_keys = deny:
#  - POST /keys answers 201 with the raw key once and its id (its SHA-256's
#    first 12 hex digits); the gateway serves it at once and charges it what
#    the mock's usage costs (gpt-4o-mini: 150 n$ per input token, 600 per
#    output); the ledger and the log never hold the key;
#  - POST /keys/{id}/rotate: the old secret 401, the new one 200, charged to
#    the same account, whose spend goes on from where it was;
#  - DELETE /keys/{id}: 401 from the next request on, on both workers (their
#    request counters both move while every answer is 401), nothing sent;
#  - issued keys survive a restart and a SIGHUP;
#  - POST /keys/{id}/budget takes USD ("budget": "3.50"), the old
#    budget_nusd still works;
#  - every bad call gets its 4xx and a JSON error, and kvctl keys --json is
#    the same before and after it (nothing changed in the ledger).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
kv_start_mock
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
max_keys = 24
[budget]
unknown_keys = deny
[key alice]
key = sk-alice-api
budget = 5.00
EOF
kv_start
S=http://127.0.0.1:$KV_STATUS_PORT

mock_posts() { grep -c '^POST /v1/chat/completions' "$MOCK_LOG"; }
cost_of() { jq '.usage.prompt_tokens * 150 + .usage.completion_tokens * 600' "$1"; }

# ---- create ------------------------------------------------------------------

check_eq "POST /keys: 201" "$(api POST /keys "${auth[@]}" \
	-d '{"label":"dev1","budget":"0.05","rpm":100,"tpm":100000,"period":"month","expires":"2099-01-01"}')" 201
cp "$T/api" "$T/created"
K1=$(jq -r .key "$T/created")
ID1=$(jq -r .id "$T/created")
check "the key is kv- and 43 base62 digits" eval "[[ '$K1' =~ ^kv-[0-9A-Za-z]{43}$ ]]"
check_eq "its id is its SHA-256's first 12 hex digits" "$ID1" "$(id_of "$K1")"
check_eq "the answer holds the account: budget 0.05 USD" \
	"$(jq -r .account.budget_nusd "$T/created")" 50000000
check_eq "... its limits" "$(jq -r '"\(.account.rpm) \(.account.tpm)"' "$T/created")" "100 100000"
check_eq "... issued" "$(jq -r .account.issued "$T/created")" true
check_eq "kvctl keys lists it with that budget" "$(field "$ID1" budget_nusd)" 50000000
check "the ledger never holds the raw key" eval "! grep -qa '$K1' '$T/ledger'"
check_eq "the new key is served at once" "$(chat "$K1")" 200
want=$(cost_of "$T/body")
check "the mock reported usage" test "$want" -gt 0
check_eq "spent_nusd is the mock's usage x price" "$(field "$ID1" spent_nusd)" "$want"
check_eq "nothing stays reserved" "$(field "$ID1" reserved_nusd)" 0
check "POST /keys is logged, by id" grep -q "key $ID1 (dev1) issued by admin" "$KV_LOG"

# a body without budget gets the [budget] default (2.00); a label may be an id prefix
check_eq "POST /keys with a label only: 201" \
	"$(api POST /keys "${auth[@]}" -d '{"label":"dev2"}')" 201
K2=$(jq -r .key "$T/api")
ID2=$(jq -r .id "$T/api")
check_eq "... with the [budget] default" "$(field "$ID2" budget_nusd)" 2000000000

# ---- rotate ------------------------------------------------------------------

spent=$(field "$ID1" spent_nusd)
check_eq "POST /keys/dev1/rotate: 200" "$(api POST /keys/dev1/rotate "${auth[@]}")" 200
K1b=$(jq -r .key "$T/api")
check "a new secret" test -n "$K1b" -a "$K1b" != "$K1" -a "$K1b" != null
check_eq "the same account id" "$(jq -r .id "$T/api")" "$ID1"
n=$(mock_posts)
check_eq "the old secret gets 401" "$(chat "$K1")" 401
check "... saying it was replaced" jq -e '.error.message | test("replaced")' "$T/body"
check_eq "... and the mock received nothing" "$(mock_posts)" "$n"
check_eq "the spend is the account's still" "$(field "$ID1" spent_nusd)" "$spent"
check_eq "the new secret is served" "$(chat "$K1b")" 200
check_eq "... and charged to the same account, on top of its spend" \
	"$(field "$ID1" spent_nusd)" "$((spent + $(cost_of "$T/body")))"
check_eq "rotate by id prefix: 200" "$(api POST "/keys/${ID2:0:8}/rotate" "${auth[@]}" -d '{}')" 200
K2=$(jq -r .key "$T/api")
check "no secret is ever logged" eval "! grep -qF -e '$K1' -e '$K1b' -e '$K2' '$KV_LOG'"

# ---- restart and SIGHUP keep issued keys ---------------------------------------

kv_stop
kv_start
check_eq "after a restart the issued key is served" "$(chat "$K1b")" 200
check_eq "... the rotated-out secret still refused" "$(chat "$K1")" 401
check_eq "... its budget kept" "$(field "$ID1" budget_nusd)" 50000000
spent=$(field "$ID1" spent_nusd)
kill -HUP "$KV_PID"
check "the reload is done" kv_wait_for 15 grep -q "reloaded .*: generation 2 serving" "$KV_LOG"
check_eq "after a SIGHUP the issued key is served" "$(chat "$K1b")" 200
check_eq "... its spend kept and added to" "$(field "$ID1" spent_nusd)" \
	"$((spent + $(cost_of "$T/body")))"
check_eq "... and the other one is served" "$(chat "$K2")" 200

# ---- revoke: 401 at once, on both workers ----------------------------------------
# Clients each hold one connection (so one worker): a chat the mock holds
# 8 s, then, on the same connection, another. Batches go out until both
# workers hold some (the kernel picks the worker per connection); then the
# key is revoked, so every second request meets the revocation on the
# worker that served the first.
body='{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
two_step() {
	local h=(-H "Authorization: Bearer $1" -H 'content-type: application/json')
	curl -sS -m 60 -o /dev/null -w '%{http_code}\n' "${h[@]}" -H 'x-mock-first-delay-ms: 8000' \
		-d "$body" "$KV_URL/v1/chat/completions" --next \
		-o /dev/null -w '%{http_code} %{num_connects}\n' "${h[@]}" \
		-d "$body" "$KV_URL/v1/chat/completions" >"$2" 2>&1
}
busy() { kv_ctl status --json | jq '[.workers[] | select(.state == "running" and .active_streams > 0)] | length'; }
n=$(mock_posts)
spread=no
clients=()
for batch in 1 2 3 4 5 6; do
	for c in 1 2 3; do
		two_step "$K1b" "$T/two.$batch.$c" &
		clients+=($!)
	done
	kv_wait_for 3 eval '[ "$(busy)" -ge 1 ]'
	sleep 0.3
	if [ "$(busy)" = 2 ]; then spread=yes; break; fi
done
check_eq "the held requests are spread over both workers" "$spread" yes
check_eq "DELETE /keys/ID: 200" "$(api DELETE "/keys/$ID1" "${auth[@]}")" 200
check_eq "... answers the account, revoked" "$(jq -r '"\(.id) \(.revoked)"' "$T/api")" "$ID1 true"
check_eq "a new connection gets 401 at once" "$(chat "$K1b")" 401
for c in "${clients[@]}"; do wait "$c"; done
check_eq "the requests in flight at the revocation finish (200)" \
	"$(sed -n 1p "$T"/two.* | sort -u | xargs)" 200
check_eq "the next request on each of their connections gets 401" \
	"$(sed -n 2p "$T"/two.* | sort -u | xargs)" "401 0"
check_eq "... and the mock received only the held ones" "$(mock_posts)" "$((n + ${#clients[@]}))"
check "the 401 says the key was revoked" jq -e '.error.message | test("revoked")' "$T/body"
check_eq "kvctl keys --json: revoked" "$(field "$ID1" revoked)" true
check_eq "DELETE again: 200, still revoked" "$(api DELETE "/keys/$ID1" "${auth[@]}")" 200
check "revoke is logged" grep -q "key $ID1 revoked by admin" "$KV_LOG"
check_eq "the other issued key is served still" "$(chat "$K2")" 200

# ---- budget and limits in USD -------------------------------------------------------

check_eq "POST /keys/dev2/budget {\"budget\":\"3.50\"}: 200" \
	"$(api POST /keys/dev2/budget "${auth[@]}" -d '{"budget": "3.50"}')" 200
check_eq "... the budget is 3.50 USD" "$(field "$ID2" budget_nusd)" 3500000000
check_eq "the old budget_nusd still works" \
	"$(api POST /keys/dev2/budget "${auth[@]}" -d '{"budget_nusd": 4000000000}')" 200
check_eq "... 4 USD" "$(field "$ID2" budget_nusd)" 4000000000

# ---- every bad call: its 4xx, a JSON error, the ledger unchanged ------------------

j=(-H 'content-type: application/json')
refused "no token" 401 POST /keys -d '{"label":"x1"}'
refused "a wrong token" 403 POST /keys -H "Authorization: Bearer x$ADMIN" -d '{"label":"x1"}'
refused "a wrong token on DELETE" 403 DELETE "/keys/$ID2" -H "Authorization: Bearer ${ADMIN%?}"
refused "an unknown field" 400 POST /keys "${auth[@]}" "${j[@]}" -d '{"label":"x1","owner":"bob"}'
check "... named in the error" jq -e '.error | test("unknown field \"owner\"")' "$T/api"
refused "a bad USD amount" 400 POST /keys "${auth[@]}" -d '{"label":"x1","budget":"12.5.0"}'
refused "a negative USD amount" 400 POST /keys "${auth[@]}" -d '{"label":"x1","budget":"-1"}'
refused "a budget as a JSON number" 400 POST /keys "${auth[@]}" -d '{"label":"x1","budget":12.5}'
refused "a label too long" 400 POST /keys "${auth[@]}" -d "{\"label\":\"$(printf 'a%.0s' $(seq 1 48))\"}"
check "... saying so" jq -e '.error | test("too long")' "$T/api"
refused "a label with a space" 400 POST /keys "${auth[@]}" -d '{"label":"a b"}'
refused "no label" 400 POST /keys "${auth[@]}" -d '{"budget":"1"}'
refused "a duplicate label" 409 POST /keys "${auth[@]}" -d '{"label":"dev2"}'
check "... code label_taken" jq -e '.code == "label_taken"' "$T/api"
refused "a [key] section's name" 409 POST /keys "${auth[@]}" -d '{"label":"alice"}'
refused "a bad period" 400 POST /keys "${auth[@]}" -d '{"label":"x1","period":"yearly"}'
refused "an expiry in the past" 400 POST /keys "${auth[@]}" -d '{"label":"x1","expires":"2020-01-01"}'
refused "an rpm past the limit" 400 POST /keys "${auth[@]}" -d '{"label":"x1","rpm":4000000001}'
refused "a field twice" 400 POST /keys "${auth[@]}" -d '{"label":"x1","label":"x2"}'
refused "not JSON" 400 POST /keys "${auth[@]}" -d '{"label":"x1",'
refused "an empty body" 400 POST /keys "${auth[@]}"
refused "a body over 1 KB" 413 POST /keys "${auth[@]}" -d "{\"label\":\"$(printf '%01100d' 5)\"}"
refused "a bad USD budget on /budget" 400 POST /keys/dev2/budget "${auth[@]}" -d '{"budget":"abc"}'
refused "DELETE of an unknown key" 404 DELETE /keys/nosuchkey "${auth[@]}"
refused "DELETE of a [key] of the config" 409 DELETE /keys/alice "${auth[@]}"
refused "DELETE with a body" 400 DELETE "/keys/$ID2" "${auth[@]}" -d '{"now":true}'
refused "rotate of a [key] of the config" 409 POST /keys/alice/rotate "${auth[@]}"
refused "rotate of a revoked key" 409 POST "/keys/$ID1/rotate" "${auth[@]}"
refused "GET /keys" 405 GET /keys "${auth[@]}"
check "... Allow: POST" eval "curl -sS -o /dev/null -D - '$S/keys' | tr -d '\r' | grep -qix 'allow: POST'"
refused "POST /keys/ID" 405 POST "/keys/$ID2" "${auth[@]}"

# the table full: 24 slots, 3 taken by alice, dev1, dev2, one by dev2's
# rotation link (kvctl keys lists accounts only); fill the rest with kvctl
i=0
while [ $i -lt 40 ] && kv_ctl keys create "fill$i" --budget 1 >/dev/null 2>&1; do i=$((i + 1)); done
check "kvctl filled the table (then refused)" test "$i" -gt 10 -a "$i" -lt 40
refused "a full key table" 409 POST /keys "${auth[@]}" -d '{"label":"x1"}'
check "... code table_full" jq -e '.code == "table_full"' "$T/api"

check_eq "alice is untouched and served" "$(chat sk-alice-api)" 200
kv_finish
