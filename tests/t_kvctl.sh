#!/bin/bash
# t_kvctl: every kvctl command in both output forms over a ledger built with
# tests/ledger_fill, every error path with its exit code, and a ledger of
# another layout version refused without a byte of it changing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

FILL=$top_builddir/tests/ledger_fill
KVCTL=$KV_CTL_BIN
[ -x "$FILL" ] || skip "$FILL not built"
[ -x "$KVCTL" ] || skip "$KVCTL not built"
command -v jq >/dev/null || skip "jq not installed"

L=$T/ledger
chmod 711 "$T"	# so an unprivileged user reaches the ledger itself
: >"$T/all.err"

# ctl ARGS: kvctl -l $L ARGS; stdout in $T/out, stderr in $T/err, status in RC.
ctl() {
	"$KVCTL" -l "$L" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	cat "$T/err" >>"$T/all.err"
}
# ctl_raw ARGS: kvctl without -l.
ctl_raw() {
	"$KVCTL" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	cat "$T/err" >>"$T/all.err"
}
out_has() { grep -qF -- "$1" "$T/out"; }
err_has() { grep -qF -- "$1" "$T/err"; }
# jqout FILTER: evaluate FILTER over $T/out (-e: false/null is a failure).
jqout() { jq -e "$1" "$T/out" >/dev/null 2>&1; }

# ---- a ledger with three keys, two models, a worker and a master ---------
"$FILL" "$L" 64 \
	key sk-alice alice 25.00 key sk-bob - 2.00 key sk-carol carol 1.00 \
	use sk-alice gpt-4o-mini 1500000 1000 200 100 \
	use sk-alice claude-sonnet-4 3000000000 2000 500 0 \
	use sk-bob gpt-4o-mini 250000 10 20 0 \
	hold sk-carol 500000000 \
	worker 0 $$ master $$ >"$T/fill.out" 2>&1
check "ledger_fill builds the ledger" test $? = 0
ALICE=$(id_of sk-alice) BOB=$(id_of sk-bob) CAROL=$(id_of sk-carol)
check_eq "ledger_fill prints the key ids" "$(cut -d' ' -f1 "$T/fill.out" | tr '\n' ' ')" \
	"$ALICE $BOB $CAROL "

# ---- usage -----------------------------------------------------------------
ctl_raw --help
check_eq "--help exits 0" "$RC" 0
check "--help prints the usage on stdout" out_has "usage: kvctl"
ctl_raw -h
check "-h prints the usage" out_has "budget KEY AMOUNT"
ctl_raw
check_eq "no command: exit 2" "$RC" 2
check "no command: usage on stderr" err_has "usage: kvctl"
ctl frobnicate
check_eq "unknown command: exit 2" "$RC" 2
check "unknown command named" err_has "unknown command 'frobnicate'"
ctl_raw -x keys
check_eq "unknown option: exit 2" "$RC" 2
ctl keys --frob
check_eq "unknown command option: exit 2" "$RC" 2
check "unknown command option named" err_has "unknown option '--frob'"
ctl show
check_eq "show without KEY: exit 2" "$RC" 2
ctl budget alice
check_eq "budget without AMOUNT: exit 2" "$RC" 2
ctl_raw -c /x.ini -l "$L" keys
check_eq "-c with -l: exit 2" "$RC" 2
ctl keys --watch --json
check_eq "--watch with --json: exit 2" "$RC" 2
ctl keys --count 3
check_eq "--count without --watch: exit 2" "$RC" 2

# ---- status ----------------------------------------------------------------
ctl status
check_eq "status: exit 0" "$RC" 0
check "status names the master and its uptime" out_has "pid $$, up 1h02m0"
check "status shows 3 of 64 key slots" out_has "3 of 64 slots used"
check "status lists every counter" grep -q "^estimated_requests_total *0$" "$T/out"
check "status shows requests_total" grep -q "^requests_total *7$" "$T/out"
check "status has the workers table" grep -q "^ *0 *$$ *running" "$T/out"
ctl status --json
check_eq "status --json: exit 0" "$RC" 0
check "status --json is JSON" jqout .
check "status --json: totals" jqout ".requests_total == 7 and .master_pid == $$ and
	.max_keys == 64 and .accounts_used == 3 and .uptime_seconds >= 3723 and
	.active_streams == 1 and .connections == 2 and has(\"cost_nusd_total\")"
check "status --json: workers" jqout ".workers == [.workers[0]] and .workers[0].pid == $$ and
	.workers[0].slot == 0 and (.workers[0] | has(\"heartbeat_age_seconds\"))"
check "status --json: a worker's state is a name" jqout '.workers[0].state == "running"'

check "status --json: keys sorted by spend" jqout \
	"[.keys[].id] == [\"$ALICE\", \"$BOB\", \"$CAROL\"]"
check "status --json: models" jqout '[.models[].model] == ["claude-sonnet-4", "gpt-4o-mini"]'

# ---- keys ------------------------------------------------------------------
ctl keys
check_eq "keys: exit 0" "$RC" 0
check "keys: heading" grep -q "^ID  *LABEL  *BUDGET  *SPENT  *RESERVED  *REMAINING  *REQUESTS" "$T/out"
check_eq "keys: sorted by spend" "$(awk 'NR > 1 { printf "%s ", $1 }' "$T/out")" "$ALICE $BOB $CAROL "
check "keys: money as \$N.NNNNNN" grep -q "^$ALICE  alice  \$25.000000  \$3.001500 " "$T/out"
check "keys: unnamed label shown as -" grep -q "^$BOB  -  " "$T/out"
check "keys: never used" grep -q "^$CAROL .* never$" "$T/out"
# Right-aligned money columns end where their heading ends.
HEAD_END=$(awk 'NR == 1 { print index($0, "REMAINING") + 8 }' "$T/out")
ROW_ENDS=$(awk -v e="$HEAD_END" 'NR > 1 { print substr($0, e, 1) substr($0, e + 1, 1) }' "$T/out" | sort -u)
check_eq "keys: columns aligned to the data" "$ROW_ENDS" "0 "
ctl keys --json
check "keys --json is {\"keys\":[...]}" jqout '(keys == ["keys"]) and (.keys | length == 3)'
check "keys --json: object fields" jqout '.keys | all(keys == (["budget_nusd",
	"cached_input_tokens", "estimated_requests", "free_requests", "id", "input_tokens",
	"label", "last_used", "output_tokens", "refusals", "remaining_nusd", "requests",
	"reserved_nusd", "spent_nusd", "rpm", "tpm", "requests_remaining", "tokens_remaining",
	"rate_refusals"] | sort))'
check "keys --json: ids are 12 hex digits" jqout 'all(.keys[].id; test("^[0-9a-f]{12}$"))'
check "keys --json: money is integer nano-dollars" jqout \
	'all(.keys[] | .budget_nusd, .spent_nusd, .reserved_nusd, .remaining_nusd; type == "number" and . == floor)'
check "keys --json: alice's numbers" jqout ".keys[0] == {\"id\":\"$ALICE\",\"label\":\"alice\",
	\"budget_nusd\":25000000000,\"spent_nusd\":3001500000,\"reserved_nusd\":0,
	\"remaining_nusd\":21998500000,\"requests\":2,\"input_tokens\":3000,\"output_tokens\":700,
	\"cached_input_tokens\":100,\"refusals\":0,\"estimated_requests\":0,
	\"free_requests\":0,\"last_used\":.keys[0].last_used,
	\"rpm\":0,\"tpm\":0,\"requests_remaining\":null,\"tokens_remaining\":null,
	\"rate_refusals\":0}"
check "keys --json: label null when unnamed" jqout '.keys[1].label == null'
check "keys --json: reservation counted" jqout '.keys[2].reserved_nusd == 500000000 and .keys[2].remaining_nusd == 500000000'
check "keys --json matches status --json" \
	test "$(jq -c .keys "$T/out")" = "$("$KVCTL" -l "$L" status --json | jq -c .keys)"

# ---- models ----------------------------------------------------------------
ctl models
check_eq "models: exit 0" "$RC" 0
check "models: heading" grep -q "^MODEL  *REQUESTS  *TOKENS IN  *TOKENS OUT  *CACHED IN  *COST$" "$T/out"
check "models: sorted by cost, money formatted" grep -q "^claude-sonnet-4  *1  *2000  *500  *0  *\$3.000000$" "$T/out"
check "models: gpt-4o-mini totals" grep -q "^gpt-4o-mini  *2  *1010  *220  *100  *\$0.001750$" "$T/out"
ctl models --json
check "models --json is {\"models\":[...]}" jqout 'keys == ["models"] and (.models | length == 2)'
check "models --json: numbers" jqout '.models[1] == {"model":"gpt-4o-mini","requests":2,
	"input_tokens":1010,"output_tokens":220,"cached_input_tokens":100,"cost_nusd":1750000}'

# ---- show ------------------------------------------------------------------
ctl show alice
check_eq "show by label: exit 0" "$RC" 0
check "show: name: value lines" grep -q "^budget: \$25.000000$" "$T/out"
check "show: id line" grep -q "^id: $ALICE$" "$T/out"
check "show: spent" grep -q "^spent: \$3.001500$" "$T/out"
ctl show "${BOB:0:8}"
check "show by id prefix" grep -q "^id: $BOB$" "$T/out"
ctl show "$(echo "${CAROL:0:6}" | tr a-f A-F)"
check "show by upper-case prefix" grep -q "^label: carol$" "$T/out"
ctl show --json carol
check "show --json: one account object" jqout ".id == \"$CAROL\" and .reserved_nusd == 500000000"
ctl show nobody
check_eq "show unknown key: exit 1" "$RC" 1
check "show unknown key: says so" err_has "no key matches 'nobody'"
ctl show 0123456789abcdef0
check_eq "show unknown id: exit 1" "$RC" 1

# An ambiguous prefix: two more keys whose ids share their first 3 digits.
declare -A seen
P1= P2=
for p in "$ALICE" "$BOB" "$CAROL"; do seen[${p:0:3}]=taken; done
for ((i = 0; i < 5000; i++)); do
	[ -n "$P2" ] && break
	p=$(id_of "sk-amb-$i" | cut -c1-3)
	if [ "${seen[$p]:-}" = taken ]; then continue; fi
	if [ -n "${seen[$p]:-}" ]; then P1=${seen[$p]} P2=sk-amb-$i PFX=$p; else seen[$p]=sk-amb-$i; fi
done
"$FILL" "$L" 64 key "$P1" - 1.00 key "$P2" twin 1.00 >/dev/null
ctl show "$PFX"
check_eq "ambiguous prefix: exit 2" "$RC" 2
check "ambiguous prefix: lists the first match" err_has "$(id_of "$P1")"
check "ambiguous prefix: lists the second match with its label" err_has "$(id_of "$P2") (twin)"
check "ambiguous prefix: says ambiguous" err_has "'$PFX' is ambiguous: it matches 2 keys"
ctl show "$(id_of "$P2")"
check "a longer prefix resolves it" grep -q "^label: twin$" "$T/out"

# ---- budget ----------------------------------------------------------------
ctl budget alice 30.5
check_eq "budget: exit 0" "$RC" 0
check "budget: reports old and new" out_has "budget of $ALICE (alice): \$30.500000 (was \$25.000000)"
ctl show alice
check "budget change visible in show" grep -q "^budget: \$30.500000$" "$T/out"
check "remaining follows the budget" grep -q "^remaining: \$27.498500$" "$T/out"
ctl budget "$BOB" '$0.25'
ctl show --json "$BOB"
check "budget with a \$ sign, by id" jqout '.budget_nusd == 250000000'
ctl budget alice abc
check_eq "budget not a number: exit 2" "$RC" 2
check "budget not a number: says so" err_has "'abc' is not an amount in USD"
ctl budget alice -- -5
check_eq "negative budget: exit 2" "$RC" 2
ctl budget nobody 1.00
check_eq "budget for an unknown key: exit 1" "$RC" 1

# ---- reset -----------------------------------------------------------------
ctl reset bob
check_eq "reset by a label that is not there: exit 1" "$RC" 1
ctl reset "$BOB"
check_eq "reset KEY: exit 0" "$RC" 0
check "reset KEY: reports what was spent" out_has "reset $BOB: spent was \$0.000250"
ctl keys --json
check "reset KEY zeroes that key only" jqout ".keys | map({(.id): .spent_nusd}) | add |
	.\"$BOB\" == 0 and .\"$ALICE\" == 3001500000"
ctl reset
check_eq "reset without KEY: exit 2" "$RC" 2
ctl reset alice --all
check_eq "reset KEY --all: exit 2" "$RC" 2
ctl reset --all
check_eq "reset --all: exit 0" "$RC" 0
check "reset --all: counts the keys" out_has "reset 5 keys (\$3.001500 spent cleared)"
"$FILL" "$T/one" 64 key sk-one one 1.00 >/dev/null
ctl_raw -l "$T/one" reset --all
check "reset --all of one key: \"1 key\"" out_has "reset 1 key (\$0.000000 spent cleared)"
ctl keys --json
check "reset --all zeroes every key" jqout '[.keys[].spent_nusd] | add == 0'
check "reset leaves reservations alone" jqout "(.keys | map(select(.id == \"$CAROL\")))[0].reserved_nusd == 500000000"
check "reset leaves request counts alone" jqout "(.keys | map(select(.id == \"$ALICE\")))[0].requests == 2"

# ---- keys --watch ------------------------------------------------------------
ctl keys --watch
check_eq "--watch without a terminal: exit 2" "$RC" 2
check "--watch without a terminal: says why" err_has "needs a terminal"
if command -v script >/dev/null; then
	timeout 20 script -qec "'$KVCTL' -l '$L' keys --watch --count 2" /dev/null </dev/null >"$T/out" 2>"$T/err"
	check_eq "--watch --count 2 on a terminal: exit 0" "$?" 0
	check_eq "--watch: two frames, each cleared" "$(grep -o $'\e\\[H\e\\[2J' "$T/out" | wc -l)" 2
	check_eq "--watch: the keys in each frame" "$(grep -c "^$ALICE " "$T/out")" 2
	START=$(date +%s)
	(sleep 1.5; printf q) | timeout 20 script -qec "'$KVCTL' -l '$L' keys --watch" /dev/null >"$T/out" 2>"$T/err"
	check_eq "--watch: q quits" "$?" 0
	check "--watch: q quits promptly" test $(($(date +%s) - START)) -lt 10
	# A label too long for the narrow view, on an 80-column terminal.
	cp "$L" "$T/long"
	"$FILL" "$T/long" 64 key sk-long a-label-much-too-long-for-the-view 99.00 >/dev/null
	timeout 20 script -qec "stty cols 80; '$KVCTL' -l '$T/long' keys --watch --count 1" /dev/null </dev/null >"$T/out" 2>"$T/err"
	widest=$(sed -e $'s/\e\\[[0-9;]*[A-Za-z]//g' -e 's/\r$//' "$T/out" | awk '{ if (length > w) w = length } END { print w + 0 }')
	check "--watch: fits 80 columns (widest line $widest)" test "$widest" -le 80
	check "--watch: a long label is cut with ~" grep -q "a-label-muc~" "$T/out"
else
	echo "# script(1) missing: --watch on a terminal not tested"
fi

# ---- the config decides the ledger -----------------------------------------
cat >"$T/k.ini" <<EOF
[server]
ledger = $L
status_listen = off
[upstream openai]
url = http://127.0.0.1:9
paths = /v1/chat/completions
EOF
ctl_raw -c "$T/k.ini" show alice
check "-c CONFIG: the config's ledger is used" grep -q "^id: $ALICE$" "$T/out"
KILOVOLT_LEDGER=$T/elsewhere ctl_raw -c "$T/k.ini" keys
check_eq "KILOVOLT_LEDGER overrides the config's ledger" "$RC" 2
check "KILOVOLT_LEDGER: its path in the error" err_has "no ledger at $T/elsewhere (is kilovoltd configured with this ledger?)"
(cd "$T" && KILOVOLT_CONFIG="$T/k.ini" "$KVCTL" keys --json >"$T/out" 2>"$T/err")
check "KILOVOLT_CONFIG names the default config" jqout '.keys | length == 5'
printf '[server]\nledger = %s\nbogus = 1\n' "$L" >"$T/bad.ini"
ctl_raw -c "$T/bad.ini" keys
check_eq "bad config: exit 2" "$RC" 2
check "bad config: FILE:LINE: message" err_has "$T/bad.ini:3:"
ctl_raw -c "$T/missing.ini" keys
check_eq "missing config: exit 2" "$RC" 2

# ---- -V, show --key, the master after a clean stop, rounding ------------
ctl_raw -V
check_eq "-V: exit 0" "$RC" 0
check "-V: prints the version" grep -qx "kvctl [0-9][0-9.]*" "$T/out"
ctl show --key <<<sk-alice
check_eq "show --key: exit 0" "$RC" 0
check "show --key: finds the account of the raw key on stdin" grep -q "^id: $ALICE$" "$T/out"
ctl show --key --json < <(printf sk-carol)
check "show --key --json: no newline needed" jqout ".id == \"$CAROL\""
ctl show --key <<<sk-nobody
check_eq "show --key, a key never used: exit 1" "$RC" 1
check "show --key: the raw key is never echoed" eval "! grep -q sk-nobody '$T/out' '$T/err'"
ctl show --key </dev/null
check_eq "show --key with nothing on stdin: exit 2" "$RC" 2
ctl show alice --key <<<sk-alice
check_eq "show KEY --key: exit 2" "$RC" 2

cp "$L" "$T/stopped"
"$FILL" "$T/stopped" 64 master 0 >/dev/null
ctl_raw -l "$T/stopped" status
check "status after a clean stop: not running, not 'never started'" \
	out_has "master:          not running (stopped; last started "

# A spend of half a micro-dollar: spent is shown rounded up, so spent +
# reserved + remaining is the budget to the micro-dollar.
"$FILL" "$T/round" 64 key sk-round round 2.00 use sk-round gpt-4o-mini 500 1 0 0 \
	key sk-round2 round2 1.00 use sk-round2 gpt-4o-mini 1234567 1 0 0 hold sk-round2 333 >/dev/null
ctl_raw -l "$T/round" show round
check "show: spent rounded up" grep -qx 'spent: \$0.000001' "$T/out"
check "show: spent + remaining == budget" grep -qx 'remaining: \$1.999999' "$T/out"
ctl_raw -l "$T/round" keys
sums=$(awk 'NR > 1 { for (i = 3; i <= 6; i++) { v = $i; gsub(/[$.]/, "", v); m[i] = v + 0 }
	print m[3] - m[4] - m[5] - m[6] }' "$T/out" | tr '\n' ' ')
check_eq "keys: budget - spent - reserved - remaining is 0 on each row" "$sums" "0 0 "

# ---- ledger errors -----------------------------------------------------------
ctl_raw -l "$T/nope" status
check_eq "no ledger: exit 2" "$RC" 2
check "no ledger: clear message" err_has "kvctl: no ledger at $T/nope (is kilovoltd configured with this ledger?)"
ctl_raw -l "$T/nope" reset --all
check "no ledger: a write command does not create one" test ! -e "$T/nope"

cp "$L" "$T/v2"
# The next layout version than this build's (read from the file it made).
VER=$(od -An -tu4 -j8 -N4 "$L" | tr -d ' ')
NEXT=$((VER + 1))
printf "\\$(printf %03o "$NEXT")" | dd of="$T/v2" bs=1 seek=8 conv=notrunc status=none	# version, little-endian
SUM=$(sha256sum <"$T/v2")
for cmd in status keys "show alice" "reset --all" "budget alice 9" models; do
	# shellcheck disable=SC2086
	ctl_raw -l "$T/v2" $cmd
	check_eq "newer-version ledger, $cmd: exit 2" "$RC" 2
	check "newer-version ledger, $cmd: says why" err_has "ledger $T/v2: layout version $NEXT, this build reads $VER"
done
check_eq "a refused ledger is left exactly as it was" "$(sha256sum <"$T/v2")" "$SUM"

head -c 4096 "$L" >"$T/short"
ctl_raw -l "$T/short" keys
check_eq "truncated ledger: exit 2" "$RC" 2
check "truncated ledger: sizes in the message" err_has "truncated: 4096 bytes, header says $(stat -c %s "$L")"
head -c 100000 /dev/urandom >"$T/junk"
ctl_raw -l "$T/junk" keys
check "not a ledger: bad magic" err_has "bad magic"

if [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null && AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
	chmod 000 "$L" && AS_NOBODY=env
fi
if [ -n "${AS_NOBODY:-}" ]; then
	# nobody runs a copy it can reach (a clone under a 0700 home is not):
	# the refusal must come from the ledger, not from exec's 126.
	chmod 711 "$T" && mkdir -p "$T/bin" && cp "$KVCTL" "$T/bin/kvctl" && chmod 755 "$T/bin" "$T/bin/kvctl"
	$AS_NOBODY "$T/bin/kvctl" -l "$L" keys >"$T/out" 2>"$T/err"
	check_eq "unreadable ledger: exit 2" "$?" 2
	check "unreadable ledger: permission denied" err_has "ledger $L: permission denied (open for reading: Permission denied)"
	chmod 600 "$L"
fi

# Labels are copied out of the slot and escaped: JSON stays valid whatever
# bytes a label holds.
"$FILL" "$L" 64 key sk-weird $'we"ird\\lab\tel\001' 1.00 >/dev/null
ctl keys --json
check "a label with quotes, backslash and control bytes stays valid JSON" \
	jqout '[.keys[].label] | index("we\"ird\\lab\tel\u0001") != null'
ctl status --json
check "status --json with that label is valid JSON" jqout '.keys | length == 6'
# Model names come from API clients: no escape sequence reaches a terminal.
"$FILL" "$L" 64 use sk-weird $'evil\e[2J\e]0;pwned\a-model' 5 1 1 0 >/dev/null
ctl models
check "models: control bytes in a model name are neutralised" \
	grep -q '^evil?\[2J?\]0;pwned?-model ' "$T/out"
check "models: no escape byte in the table" test "$(tr -dc '\033\007' <"$T/out" | wc -c)" = 0
ctl keys
check "keys: no control byte from a label" test "$(tr -dc '\001' <"$T/out" | wc -c)" = 0

check "no sanitizer report from kvctl" kv__log_clean "$T/all.err"
kv_finish
