#!/bin/bash
# t_keys_names (issue 33, row 8): ids and labels cannot collide, through the
# real daemon, the admin API and kvctl (unknown_keys = deny):
#  - a name that reads as an id (6 or more hex digits, nothing else), or
#    holds a byte outside letters, digits and -_.@:/, or a '/' a client
#    would rewrite, is refused by POST /keys (400), kvctl keys create
#    (exit 2) and the config ([key NAME]: kilovoltd -t exits 2); nothing
#    changes in the ledger;
#  - a name with '/' is reached by every verb, by name: POST
#    /keys/team/bot/{budget,limits,reset,rotate} (also with %2F), DELETE
#    /keys/team/reset (a name ending like an action), and kvctl's budget,
#    limits, reset, show, keys rotate, keys revoke, forget;
#  - the issue's case, with a name an older build let in (written into the
#    ledger file with the daemon stopped): a tenant's key named after the
#    leaked key's id. Every verb given that id acts on the leaked key, never
#    the tenant's: budget, limits, reset, rotate, DELETE (the leaked key gets
#    401, the tenant's is served), kvctl's the same;
#  - a name that is a prefix of another key's id: every admin verb answers
#    409 naming both keys and every kvctl verb exits 2 naming both, and
#    nothing changes in the ledger; the whole id still reaches its key.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
. "${top_srcdir:-$(dirname "$0")/..}/tests/keys_lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
kv_start_mock
kv_write_config <<EOF
[server]
admin_token = env:KV_TEST_ADMIN
max_keys = 32
[budget]
unknown_keys = deny
[key alice]
key = sk-alice-names
budget = 5.00
EOF
kv_start
S=http://127.0.0.1:$KV_STATUS_PORT
ALICE=$(id_of sk-alice-names)

# ctl_refused WHAT PATTERN KVCTL-ARGS: kvctl exits 2 saying PATTERN, and the
# ledger is as it was
ctl_refused() {
	local what=$1 pat=$2 rc
	shift 2
	ledger_keys >"$T/before"
	kv_ctl "$@" >"$T/ctl.out" 2>"$T/ctl.err"
	rc=$?
	check_eq "$what: exit 2" "$rc" 2
	check "... saying '$pat'" grep -q -- "$pat" "$T/ctl.err"
	ledger_keys >"$T/after"
	check "... and nothing changed in the ledger" diff "$T/before" "$T/after"
}
created() { api POST /keys "${auth[@]}" -d "{\"label\":\"$1\",\"budget\":\"${2:-1.00}\"}"; }

# ---- names that read as ids, or would not survive a path ---------------------

refused "POST /keys named after alice's id" 400 POST /keys "${auth[@]}" -d "{\"label\":\"$ALICE\"}"
check "... it reads as a key id" jq -e '.code == "bad_request" and (.error | test("reads as a key id"))' "$T/api"
refused "POST /keys named ABCDEF" 400 POST /keys "${auth[@]}" -d '{"label":"ABCDEF"}'
refused "POST /keys named 123456" 400 POST /keys "${auth[@]}" -d '{"label":"123456"}'
refused "POST /keys named a?b" 400 POST /keys "${auth[@]}" -d '{"label":"a?b"}'
refused "POST /keys named a%2Fb" 400 POST /keys "${auth[@]}" -d '{"label":"a%2Fb"}'
refused "POST /keys named a/../b" 400 POST /keys "${auth[@]}" -d '{"label":"a/../b"}'
refused "POST /keys named team/" 400 POST /keys "${auth[@]}" -d '{"label":"team/"}'
refused "POST /keys named .." 400 POST /keys "${auth[@]}" -d '{"label":".."}'
ctl_refused "kvctl keys create named after alice's id" "reads as a key id" \
	keys create "$ALICE" --budget 1
ctl_refused "kvctl keys create named 0123456789" "reads as a key id" \
	keys create 0123456789 --budget 1
ctl_refused "kvctl keys create named a#b" "letters, digits and -_.@:/ only" \
	keys create 'a#b' --budget 1
sed "s/^\[key alice\]/[key deadbeef01]/" "$T/kilovolt.ini" >"$T/hexname.ini"
"$KV_DAEMON_BIN" -t -c "$T/hexname.ini" >"$T/t.out" 2>&1
check_eq "kilovoltd -t with [key deadbeef01]: exit 2" "$?" 2
check "... FILE:LINE: bad key name, it reads as a key id" \
	grep -q "hexname.ini:[0-9]*: bad key name 'deadbeef01': it reads as a key id" "$T/t.out"
check_eq "short hex names are still names: POST /keys named cafe" "$(created cafe)" 201

# ---- a name with '/' is reached by every verb --------------------------------

check_eq "POST /keys named team/bot" "$(created team/bot)" 201
KB=$(jq -r .key "$T/api")
IDB=$(id_of "$KB")
check_eq "POST /keys named team/reset" "$(created team/reset)" 201
KR=$(jq -r .key "$T/api")
check_eq "POST /keys/team/bot/budget" \
	"$(api POST /keys/team/bot/budget "${auth[@]}" -d '{"budget":"2.50"}')" 200
check_eq "... its budget" "$(field "$IDB" budget_nusd)" 2500000000
check_eq "POST /keys/team%2Fbot/limits" \
	"$(api POST /keys/team%2Fbot/limits "${auth[@]}" -d '{"rpm":70}')" 200
check_eq "... its rpm" "$(field "$IDB" rpm)" 70
check_eq "team/bot is served" "$(chat "$KB")" 200
check "... and charged" test "$(field "$IDB" spent_nusd)" -gt 0
check_eq "POST /keys/team/bot/reset" "$(api POST /keys/team/bot/reset "${auth[@]}")" 200
check_eq "... spent 0" "$(field "$IDB" spent_nusd)" 0
check_eq "POST /keys/team/bot/rotate" "$(api POST /keys/team/bot/rotate "${auth[@]}")" 200
KB2=$(jq -r .key "$T/api")
check_eq "... the old secret 401" "$(chat "$KB")" 401
check_eq "... the new one 200" "$(chat "$KB2")" 200
check_eq "DELETE /keys/team/reset (a name that ends like an action)" \
	"$(api DELETE /keys/team/reset "${auth[@]}")" 200
check_eq "... revoked team/reset" "$(jq -r .label "$T/api")" team/reset
check_eq "... its key 401" "$(chat "$KR")" 401
check_eq "... team/bot untouched" "$(chat "$KB2")" 200
check "GET /keys/team/reset: 405 Allow: POST, DELETE" eval "curl -sS -o /dev/null -D - \
	'$S/keys/team/reset' | tr -d '\r' | grep -qix 'allow: POST, DELETE'"
kv_ctl budget team/bot 3.25 >/dev/null
check_eq "kvctl budget team/bot" "$(field "$IDB" budget_nusd)" 3250000000
kv_ctl limits team/bot --tpm 9000 >/dev/null
check_eq "kvctl limits team/bot" "$(field "$IDB" tpm)" 9000
kv_ctl reset team/bot >/dev/null
check_eq "kvctl reset team/bot" "$(field "$IDB" spent_nusd)" 0
check "kvctl show team/bot" eval "kv_ctl show team/bot --json | jq -e '.id == \"$IDB\"' >/dev/null"
KB3=$(kv_ctl keys rotate team/bot 2>/dev/null)
check_eq "kvctl keys rotate team/bot: the new secret 200" "$(chat "$KB3")" 200
kv_ctl keys revoke team/bot >/dev/null
check_eq "kvctl keys revoke team/bot: 401" "$(chat "$KB3")" 401
kv_ctl forget team/reset >/dev/null
check_eq "kvctl forget team/reset" "$(kv_ctl keys --json | jq '[.keys[] | select(.label == "team/reset")] | length')" 0

# ---- the issue's case: a tenant's key named after the leaked key's id --------

KL=$(kv_ctl keys create leaked-app --budget 1 2>/dev/null)
IDL=$(id_of "$KL")
KT=$(kv_ctl keys create tenant-key-zz --budget 1 2>/dev/null)
IDT=$(id_of "$KT")
KV=$(kv_ctl keys create victim --budget 1 2>/dev/null)
IDV=$(id_of "$KV")
P8=${IDV:0:8}
KN=$(kv_ctl keys create namer-key --budget 1 2>/dev/null)
IDN=$(id_of "$KN")
check_eq "the tenant's key is served" "$(chat "$KT")" 200
check_eq "the leaked key is served" "$(chat "$KL")" 200
TSPENT=$(field "$IDT" spent_nusd)
# An older build let these names in: write them into the ledger, stopped.
kv_stop
python3 - "$T/ledger" "$IDL" "$P8" <<'PY'
import sys
path, idl, p8 = sys.argv[1:]
data = bytearray(open(path, 'rb').read())
for old, new in ((b'tenant-key-zz', idl), (b'namer-key', p8)):
    at = data.find(old + b'\0')
    assert at > 0 and data.find(old + b'\0', at + 1) < 0, old
    data[at:at + 48] = new.encode().ljust(48, b'\0')
open(path, 'r+b').write(data)
PY
kv_start
check_eq "the tenant's key is now named after the leaked key's id" "$(field "$IDT" label)" "$IDL"
check_eq "POST /keys/IDL/budget" "$(api POST "/keys/$IDL/budget" "${auth[@]}" -d '{"budget":"0.75"}')" 200
check_eq "... the leaked key's budget" "$(field "$IDL" budget_nusd)" 750000000
check_eq "... not the tenant's" "$(field "$IDT" budget_nusd)" 1000000000
check_eq "POST /keys/IDL/limits" "$(api POST "/keys/$IDL/limits" "${auth[@]}" -d '{"rpm":11}')" 200
check_eq "... the leaked key's rpm" "$(field "$IDL" rpm)" 11
check_eq "POST /keys/IDL/reset" "$(api POST "/keys/$IDL/reset" "${auth[@]}")" 200
check_eq "... the leaked key's spend 0" "$(field "$IDL" spent_nusd)" 0
check_eq "... the tenant's kept" "$(field "$IDT" spent_nusd)" "$TSPENT"
kv_ctl budget "$IDL" 0.80 >/dev/null
check_eq "kvctl budget IDL: the leaked key's" "$(field "$IDL" budget_nusd)" 800000000
kv_ctl limits "$IDL" --tpm 1234 >/dev/null
check_eq "kvctl limits IDL: the leaked key's" "$(field "$IDL" tpm)" 1234
check_eq "... not the tenant's" "$(field "$IDT" tpm)" "$(field "$IDV" tpm)"
check "kvctl show IDL: the leaked key" eval "kv_ctl show '$IDL' --json | jq -e '.id == \"$IDL\"' >/dev/null"
kv_ctl reset "$IDL" >/dev/null
check_eq "kvctl reset IDL: the tenant's spend kept" "$(field "$IDT" spent_nusd)" "$TSPENT"
check_eq "POST /keys/IDL/rotate" "$(api POST "/keys/$IDL/rotate" "${auth[@]}")" 200
check_eq "... rotated the leaked key" "$(jq -r .id "$T/api")" "$IDL"
KL2=$(jq -r .key "$T/api")
check_eq "... the tenant's key is served" "$(chat "$KT")" 200
KL3=$(kv_ctl keys rotate "$IDL" 2>/dev/null)
check_eq "kvctl keys rotate IDL: the leaked key's previous secret 401" "$(chat "$KL2")" 401
check_eq "DELETE /keys/IDL (the issue's row 8)" "$(api DELETE "/keys/$IDL" "${auth[@]}")" 200
check_eq "... revoked the leaked key" "$(jq -r .id "$T/api")" "$IDL"
check_eq "... which gets 401" "$(chat "$KL3")" 401
check_eq "... while the tenant's is served" "$(chat "$KT")" 200
kv_ctl keys revoke "$IDL" >"$T/revoke.out"
check "kvctl keys revoke IDL: the leaked key, revoked already" grep -q "^$IDL.*revoked already" "$T/revoke.out"
check_eq "... the tenant's is served" "$(chat "$KT")" 200

# ---- a name that is another key's id prefix: 409, never a guess ---------------

for verb in reset budget limits rotate; do
	body='{}'
	[ $verb = budget ] && body='{"budget":"9.00"}'
	[ $verb = limits ] && body='{"rpm":1}'
	[ $verb = rotate ] && body=
	refused "POST /keys/P8/$verb (a name and another key's id prefix)" 409 \
		POST "/keys/$P8/$verb" "${auth[@]}" ${body:+-d "$body"}
	check "... naming both keys" eval "jq -r .error '$T/api' |
		grep -q 'label of key $IDN and a prefix of the id of key $IDV'"
done
refused "DELETE /keys/P8" 409 DELETE "/keys/$P8" "${auth[@]}"
check "... code ambiguous, naming both keys" eval "jq -e '.code == \"ambiguous\"' '$T/api' >/dev/null &&
	jq -r .error '$T/api' | grep -q 'label of key $IDN and a prefix of the id of key $IDV'"
for cmd in "show $P8" "reset $P8" "budget $P8 9" "limits $P8 --rpm 1" "forget $P8" \
	"keys revoke $P8" "keys rotate $P8"; do
	# shellcheck disable=SC2086
	ctl_refused "kvctl $cmd" "both a key's label and a prefix of another key's id" $cmd
	check "... listing both keys" eval "grep -q '$IDV' '$T/ctl.err' && grep -q '$IDN (' '$T/ctl.err'"
done
check "the whole id still reaches the key" eval "kv_ctl show '$IDV' --json | jq -e '.id == \"$IDV\"' >/dev/null"
check_eq "... which is served" "$(chat "$KV")" 200
kv_finish
