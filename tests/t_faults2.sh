#!/bin/bash
# t_faults2: targets that never answer, at-most-once and no-bill answers
# (issues 20 and 22), through the real daemon:
#  - a target whose SYNs are dropped (a listener with its accept queue kept
#    full): connect_timeout is a target failure, the request moves to the
#    other target (nothing was sent), the target is ejected -- 10 of 10 served;
#  - a TLS target that accepts TCP and never finishes the handshake: three
#    concurrent requests time out side by side (the handshake gate does not
#    line them up), and with a second target all three are served;
#  - a spooled body (a prompt over 8 KiB) fails over from a dead target,
#    re-sent from the spool file whole;
#  - a target that reads the request, bills it, and answers 504: relayed,
#    never sent to the fallback, the mock saw it once, the ledger charged
#    at least what it billed;
#  - one target answers 503, the other refuses the connection: no provider
#    billed, the key is charged 0.
: "${KV_TIMEOUT:=400}"
export KV_TIMEOUT
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in jq python3 curl; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
export LC_ALL=C

CT=2	# connect_timeout
NEVER="python3 $top_srcdir/tests/never_answer.py"

kv_start_mock				# the anthropic upstream's, unused here
kv_start_mock_tls
kv__mock calm || exit 1
CALM_PORT=$KV__PORT CALM_LOG=$T/calm.log
kv__mock calm2 || exit 1
CALM2_PORT=$KV__PORT CALM2_LOG=$T/calm2.log
kv__mock billed504 -B -S 504 || exit 1
B504_PORT=$KV__PORT B504_LOG=$T/billed504.log
kv__mock backup || exit 1
FB_PORT=$KV__PORT FB_LOG=$T/backup.log
kv__mock busy503 -S 503 || exit 1
N503_PORT=$KV__PORT N503_LOG=$T/busy503.log
DEAD_PORT=$(kv_dead_ports 1) || exit 1
$NEVER blackhole "$T/bh.port" 300 </dev/null >>"$T/never.err" 2>&1 &
kv_track $!
$NEVER stall "$T/stall.port" 300 "$T/stall.stat" </dev/null >>"$T/never.err" 2>&1 &
kv_track $!
kv_wait_for 10 test -s "$T/bh.port" || { fail "black-hole listener started"; kv_finish; }
kv_wait_for 10 test -s "$T/stall.port" || { fail "stalling listener started"; kv_finish; }
BH_PORT=$(cat "$T/bh.port") STALL_PORT=$(cat "$T/stall.port")
check "the black-holed listener drops SYNs (curl cannot connect within 1 s)" \
	bash -c "! curl -s -m 3 --connect-timeout 1 -o /dev/null http://127.0.0.1:$BH_PORT/"

kv_write_config <<EOF
[server]
connect_timeout = $CT
upstream_timeout = 30

[upstream openai]
url = http://127.0.0.1:$BH_PORT http://127.0.0.1:$CALM_PORT
eject_after = 1
eject_time = 60

[upstream stall]
url = https://localhost:$STALL_PORT
ca_file = $KV_CERTS/ca.pem
models = stall-*

[upstream stall2]
url = https://localhost:$STALL_PORT https://localhost:$MOCK_TLS_PORT
ca_file = $KV_CERTS/ca.pem
models = tls2-*
eject_after = 100

[upstream spool]
url = http://127.0.0.1:$DEAD_PORT http://127.0.0.1:$CALM2_PORT
models = spool-*
eject_after = 1000

[upstream once]
url = http://127.0.0.1:$B504_PORT
models = once-*
fallback = backup

[upstream backup]
url = http://127.0.0.1:$FB_PORT

[upstream nobill]
url = http://127.0.0.1:$N503_PORT http://127.0.0.1:$DEAD_PORT
models = nobill-*
eject_after = 1000

[price stall-*]
input = 0.15
output = 0.60

[price tls2-*]
input = 0.15
output = 0.60

[price spool-*]
input = 0.15
output = 0.60

[price once-*]
input = 0.15
output = 0.60

[price nobill-*]
input = 0.15
output = 0.60
EOF
kv_start

key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
key_field_is() { [ "$(key_field "$1" "$2")" = "$3" ]; }
hdr() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1; }
posts() { grep -c "^POST .* auth=$1 " "$2"; }
# cost_of LOG ID: what the mock billed that key (150 / 600 nano-dollars a
# token in / out; input = body bytes / 4, output 5).
cost_of() { awk -v id="auth=$2" '$0 ~ id { for (i = 1; i <= NF; i++) if ($i ~ /^body_bytes=/)
	{ split($i, a, "="); s += int(a[2] / 4) * 150 + 5 * 600 } } END { print s + 0 }' "$1"; }
metric() { curl -sS -m 10 "http://127.0.0.1:$KV_STATUS_PORT/metrics" |
	sed -n "s|^$1{target=\"$2\"} ||p"; }
body() { printf '{"model":"%s","max_tokens":10,"messages":[{"role":"user","content":"%s"}]}' "$1" "$2"; }
chat() {	# chat KEY OUT BODY: the status code; OUT.head, OUT.body, OUT.ms
	local key=$1 out=$2 t0 code
	t0=$(date +%s%3N)
	code=$(curl -sS -m 60 -o "$out.body" -D "$out.head" -w '%{http_code}' \
		-H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
		--data-binary "$3" "$KV_URL/v1/chat/completions")
	echo $(($(date +%s%3N) - t0)) >"$out.ms"
	echo "$code"
}
# burst N KEY DIR BODY: N requests at once; prints how many got 200
burst() {
	local n=$1 key=$2 dir=$3 i pids=()
	mkdir -p "$dir"
	for ((i = 1; i <= n; i++)); do
		chat "$key" "$dir/$i" "$4" >"$dir/$i.code" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	cat "$dir"/*.code | grep -cx 200
}

# ---- SYNs black-holed: connect_timeout fails over, ejects ------------------------

KB=sk-kvtest-faults2-blackhole
KB_ID=$(id_of "$KB")
BH_T="openai/127.0.0.1:$BH_PORT"
ok=$(burst 10 "$KB" "$T/bh" "$(body gpt-4o-mini "where do SYNs go?")")
check_eq "one target drops SYNs: 10 of 10 concurrent requests served" "$ok" 10
check_eq "... each once, by the other target" "$(posts "$KB_ID" "$CALM_LOG")" 10
check "/metrics: the connect timeouts count as target failures" \
	test "$(metric kilovolt_upstream_target_failures_total "$BH_T")" -ge 1
check "/metrics: ... and ejected it" \
	test "$(metric kilovolt_upstream_target_ejections_total "$BH_T")" -ge 1
check "/metrics: ... requests moved off it" \
	test "$(metric kilovolt_upstream_target_retries_total "$BH_T")" -ge 1
check "the log names the connect timeout (KV0423)" grep -q "KV0423.*$BH_PORT.*TCP connection" "$KV_LOG"
for i in 1 2 3; do
	[ "$(chat "$KB" "$T/bh/s$i" "$(body gpt-4o-mini "again")")" = 200 ] || break
done
check_eq "ejected, it costs nothing more: 3 more served" "$i" 3
check "... at once (${i:+$(cat "$T/bh/s3.ms")} ms, connect_timeout ${CT} s)" \
	test "$(cat "$T/bh/s3.ms")" -lt $((CT * 1000))
check "every reservation settles" kv_wait_for 30 key_field_is "$KB_ID" reserved_nusd 0
check_eq "the ledger holds what the live target billed" \
	"$(key_field "$KB_ID" spent_nusd)" "$(cost_of "$CALM_LOG" "$KB_ID")"

# ---- a TLS handshake that never finishes -------------------------------------------

KS=sk-kvtest-faults2-stall
KS_ID=$(id_of "$KS")
t0=$(date +%s%3N)
ok=$(burst 3 "$KS" "$T/stall" "$(body stall-model "hello?")")
el=$(($(date +%s%3N) - t0))
codes=$(cat "$T/stall"/*.code | sort | tr '\n' ' ')
check_eq "3 concurrent requests to a target that never finishes TLS: 504 each" "$codes" "504 504 504 "
check "... the handshakes ran side by side, not one after another ($(cat "$T/stall.stat"))" \
	grep -q "max=3 " "$T/stall.stat"
check "... all three answered in ${el} ms (one after another would take $((3 * CT)) s)" \
	test "$el" -lt $((3 * CT * 1000 - 500))
check "the log names the TLS handshake timeout" grep -q "KV0423.*$STALL_PORT.*TLS handshake" "$KV_LOG"
check_eq "nothing was sent: charged 0" "$(key_field "$KS_ID" spent_nusd)" 0
check_eq "... and nothing stays reserved" "$(key_field "$KS_ID" reserved_nusd)" 0

KT=sk-kvtest-faults2-stall2
KT_ID=$(id_of "$KT")
ok=$(burst 6 "$KT" "$T/stall2" "$(body tls2-model "hello again")")
check_eq "with a second TLS target: 6 of 6 concurrent requests served" "$ok" 6
check_eq "... each once by the working target" \
	"$(posts "$KT_ID" "$MOCK_TLS_LOG")" 6

# ---- a spooled body fails over ------------------------------------------------

KP=sk-kvtest-faults2-spool
KP_ID=$(id_of "$KP")
big=$(head -c 12000 /dev/zero | tr '\0' 'p')
bad=0
mkdir -p "$T/spool"
for i in $(seq 1 12); do
	[ "$(chat "$KP" "$T/spool/$i" "$(body spool-model "$i $big")")" = 200 ] || bad=$((bad + 1))
done
check_eq "12 prompts of 12 KB (spooled), one target dead: all 200" "$bad" 0
check "... some were moved off the dead target" \
	test "$(metric kilovolt_upstream_target_retries_total "spool/127.0.0.1:$DEAD_PORT")" -ge 1
check_eq "the live target got each once" "$(posts "$KP_ID" "$CALM2_LOG")" 12
blen=$(body spool-model "1 $big" | wc -c)
check "... whole: body_bytes $blen and more (spool re-sent from its start)" \
	bash -c "! grep \"auth=$KP_ID\" '$CALM2_LOG' | grep -vq 'body_bytes=$blen\|body_bytes=$((blen + 1))'"
check "every reservation settles" kv_wait_for 30 key_field_is "$KP_ID" reserved_nusd 0
check_eq "the ledger holds what the live target billed" \
	"$(key_field "$KP_ID" spent_nusd)" "$(cost_of "$CALM2_LOG" "$KP_ID")"
spool_fds() { local p n=0; for p in $(ps -o pid= --ppid "$KV_PID"); do
	n=$((n + $(find "/proc/$p/fd" -lname "$T/spool/*" 2>/dev/null | wc -l))); done; echo $n; }
check_eq "no spool file is left open" "$(spool_fds)" 0

# ---- at most once: billed, then 504 ----------------------------------------------

KO=sk-kvtest-faults2-once
KO_ID=$(id_of "$KO")
b=$(body once-model "bill me once")
code=$(chat "$KO" "$T/once" "$b")
check_eq "a target that billed and answered 504: the client gets the 504" "$code" 504
check_eq "... the target saw the request once" "$(posts "$KO_ID" "$B504_LOG")" 1
check_eq "... the fallback never got it" "$(grep -c "auth=$KO_ID" "$FB_LOG" 2>/dev/null || true)" 0
read -r bin bout < <(sed -n 's/^BILLED input=\([0-9]*\) output=\([0-9]*\)$/\1 \2/p' "$B504_LOG")
billed=$(( ${bin:-0} * 150 + ${bout:-0} * 600 ))
check "every reservation settles" kv_wait_for 30 key_field_is "$KO_ID" reserved_nusd 0
spent=$(key_field "$KO_ID" spent_nusd)
check "the mock billed it (input $bin, output $bout: $billed nano-dollars)" test "$billed" -gt 0
check "the ledger charged at least that ($spent)" test "$spent" -ge "$billed"
check_eq "... as reserved: the input estimate and all 10 output tokens" \
	"$spent" $(( ${#b} / 4 * 150 + 10 * 600 ))

# ---- no charge when no provider could bill ------------------------------------

KN=sk-kvtest-faults2-nobill
KN_ID=$(id_of "$KN")
codes=
mkdir -p "$T/nobill"
for i in $(seq 1 8); do
	codes="$codes $(chat "$KN" "$T/nobill/$i" "$(body nobill-model "busy $i")")"
done
check "8 requests to a 503 target and a refusing one: each 502 or 503 ($codes)" \
	bash -c "[ -z \"\$(echo '$codes' | tr ' ' '\n' | grep -v '^$' | grep -vx '50[23]')\" ]"
check "... the 503 target saw them" test "$(posts "$KN_ID" "$N503_LOG")" -ge 1
check "... some went to it first and then to the refusing one (answered 502)" \
	bash -c "echo '$codes' | grep -q 502"
check "every reservation settles" kv_wait_for 30 key_field_is "$KN_ID" reserved_nusd 0
check_eq "no provider billed: the key is charged 0" "$(key_field "$KN_ID" spent_nusd)" 0

kv_stop
kv_finish
