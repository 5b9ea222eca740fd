#!/bin/bash
# t_health: active health checks (master/health_check.c) through the real
# daemon. Mock targets answer GET /health with the status a file holds
# (mock_upstream -H), so the test flips a target's health at run time: a
# target failing its check gets no request while another target is usable,
# and gets requests again once it passes; when every target fails, requests
# are still served (an upstream never has all its targets out). An https
# target is checked over TLS with the upstream's ca_file: a target whose
# certificate does not verify is marked down. 24 targets in all (past the
# 16 of earlier ledger layouts) each get their slot. An upstream without
# health_check is never probed, and a reload that removes the check stops
# the probes and clears the marks. The ledger holds exactly what the
# targets billed.
: "${KV_TIMEOUT:=600}"
export KV_TIMEOUT
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
export LC_ALL=C

K=sk-kvtest-health
K_ID=$(id_of "$K")
PROVIDER_KEY=sk-tls-provider-key
PK_ID=$(id_of "$PROVIDER_KEY")

kv_certs
echo 200 >"$T/a.health"
echo 503 >"$T/b.health"
echo 200 >"$T/plain.health"
echo 200 >"$T/tls.health"
kv__mock a -H "$T/a.health" || exit 1
A_PORT=$KV__PORT A_LOG=$T/a.log
kv__mock b -H "$T/b.health" || exit 1
B_PORT=$KV__PORT B_LOG=$T/b.log
kv__mock plain -H "$T/plain.health" || exit 1
P_PORT=$KV__PORT P_LOG=$T/plain.log
kv__mock tls -H "$T/tls.health" -t "$KV_CERTS/server-chain.pem" "$KV_CERTS/server.key" || exit 1
TLS_PORT=$KV__PORT TLS_LOG=$T/tls.log
kv__mock wrong -H "$T/tls.health" -t "$KV_CERTS/wrong-chain.pem" "$KV_CERTS/wrong.key" || exit 1
WRONG_PORT=$KV__PORT WRONG_LOG=$T/wrong.log
kv__mock w1 -H "$T/a.health" || exit 1
W1_PORT=$KV__PORT W1_LOG=$T/w1.log
kv__mock w2 -H "$T/a.health" || exit 1
W2_PORT=$KV__PORT W2_LOG=$T/w2.log
# 20 targets in one upstream (24 in all, past the 16 of ledger layout 10):
# 18 on ports held with nothing listening, which fail their checks, and two
# mocks. Four URLs a line (a line holds 198 bytes; each url line adds targets).
WIDE_URLS="url = http://127.0.0.1:$W1_PORT http://127.0.0.1:$W2_PORT"
mapfile -t WIDE_DEAD < <(kv_dead_ports 18)
[ "${#WIDE_DEAD[@]}" = 18 ] || { echo "no 18 dead ports" >&2; exit 1; }
for i in "${!WIDE_DEAD[@]}"; do
	[ $((i % 4)) = 2 ] && WIDE_URLS="$WIDE_URLS
url ="
	WIDE_URLS="$WIDE_URLS http://127.0.0.1:${WIDE_DEAD[i]}"
done

kv_write_config <<EOF
[upstream openai]
url = http://127.0.0.1:$A_PORT http://127.0.0.1:$B_PORT
health_check = /health
health_interval = 2s

[upstream anthropic]
url = http://127.0.0.1:$P_PORT

[upstream secure]
url = https://127.0.0.1:$TLS_PORT https://localhost:$WRONG_PORT
models = gpt-4o-mini-tls*
api_key = $PROVIDER_KEY
ca_file = $KV_CERTS/ca.pem
health_check = /health
health_interval = 2

[upstream plain]
url = http://127.0.0.1:$P_PORT
models = gpt-4o-mini-plain*

; an api_key upstream admits only configured keys (issue 20)
[key health]
key = $K
EOF
# Appended as written: the overlay keeps one line per key, and 'wide' has
# several url lines.
cat >>"$T/kilovolt.ini" <<EOF

[upstream wide]
$WIDE_URLS
models = gpt-4o-mini-wide*
health_check = /health
health_interval = 2
EOF
kv_start

A_T="openai/127.0.0.1:$A_PORT"
B_T="openai/127.0.0.1:$B_PORT"
key_field() { kv_ctl keys --json | jq -r --arg id "$K_ID" ".keys[] | select(.id == \$id) | .$1"; }
key_field_is() { [ "$(key_field "$1")" = "$2" ]; }
hdr() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1; }
posts() { grep -c "^POST .* auth=$K_ID " "$1"; }
probes() { grep -c "^GET /health " "$1"; }
probed() { [ "$(probes "$1")" -ge 1 ]; }	# for kv_wait_for: counted at each try
# cost_of LOG [ID]: what the mock billed K (or ID) (gpt-4o-mini*: 150 / 600 nano-dollars a
# token; input = body bytes / 4, output 5).
cost_of() { awk -v id="auth=${2:-$K_ID}" '$0 ~ id { for (i = 1; i <= NF; i++) if ($i ~ /^body_bytes=/)
	{ split($i, a, "="); s += int(a[2] / 4) * 150 + 5 * 600 } } END { print s + 0 }' "$1"; }
chat() {	# chat MODEL OUT: the status code
	curl -sS -m 60 -o "$2.body" -D "$2.head" -w '%{http_code}' \
		-H "Authorization: Bearer $K" -H 'Content-Type: application/json' \
		--data-binary "{\"model\":\"$1\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"healthy?\"}]}" \
		"$KV_URL/v1/chat/completions"
}
metric() { curl -sS -m 10 "http://127.0.0.1:$KV_STATUS_PORT/metrics" |
	sed -n "s|^$1{target=\"$2\"} ||p"; }
logged() { [ "$(grep -c -- "$1" "$KV_LOG")" -ge "$2" ]; }
# run N MODEL DIR: N requests one after another; prints how many were not 200.
run() {
	local n=$1 model=$2 dir=$T/$3 i bad=0
	mkdir -p "$dir"
	for i in $(seq 1 "$n"); do
		[ "$(chat "$model" "$dir/$i")" = 200 ] || bad=$((bad + 1))
	done
	echo $bad
}
# answered_by DIR N TARGET: how many of DIR's N answers name TARGET.
answered_by() {
	local i c=0
	for i in $(seq 1 "$2"); do
		[ "$(hdr x-kilovolt-upstream "$1/$i.head")" = "$3" ] && c=$((c + 1))
	done
	echo $c
}

# ---- a target failing its check gets no traffic ---------------------------

check "B's failed check is logged (KV0720)" \
	kv_wait_for 30 logged "KV0720.*$B_T failed its health check (GET /health: status 503)" 1
check "A is probed" kv_wait_for 30 probed "$A_LOG"
check_eq "/metrics: B is down" "$(metric kilovolt_upstream_target_up "$B_T")" 0
check_eq "/metrics: A is up" "$(metric kilovolt_upstream_target_up "$A_T")" 1
check_eq "20 requests while B fails its check: all 200" "$(run 20 gpt-4o-mini down-b)" 0
check_eq "all 20 answered by A" "$(answered_by "$T/down-b" 20 "$A_T")" 20
check_eq "B received none of them" "$(posts "$B_LOG")" 0
check_eq "A received each once" "$(posts "$A_LOG")" 20
check "the probes carry no credential" test "$(grep "^GET /health " "$A_LOG" | grep -vc ' auth=- ')" = 0

# ---- it comes back once it passes; the other one goes down ----------------

echo 200 >"$T/b.health"
echo 503 >"$T/a.health"
check "B's pass is logged" kv_wait_for 30 logged "$B_T passed its health check: back in use" 1
check "A's failure is logged" kv_wait_for 30 logged "KV0720.*$A_T failed its health check" 1
check_eq "20 requests now: all 200" "$(run 20 gpt-4o-mini down-a)" 0
check_eq "all 20 answered by B" "$(answered_by "$T/down-a" 20 "$B_T")" 20
check_eq "A received no more" "$(posts "$A_LOG")" 20
check_eq "B received these 20" "$(posts "$B_LOG")" 20

# ---- every target failing: still served, never all out -------------------

echo 503 >"$T/b.health"
check "B's second failure is logged" kv_wait_for 30 logged "KV0720.*$B_T failed its health check" 2
check_eq "6 requests while both fail their checks: still all 200" "$(run 6 gpt-4o-mini down-both)" 0
check_eq "the targets received exactly those 6 between them" \
	$(( $(posts "$A_LOG") + $(posts "$B_LOG") )) 46

# ---- both pass: both get traffic again ------------------------------------

echo 200 >"$T/a.health"
echo 200 >"$T/b.health"
check "A passes again" kv_wait_for 30 logged "$A_T passed its health check" 1
check "B passes again" kv_wait_for 30 logged "$B_T passed its health check" 2
a0=$(posts "$A_LOG") b0=$(posts "$B_LOG")
mkdir -p "$T/both"
pids=()
for i in $(seq 1 40); do
	{ chat gpt-4o-mini "$T/both/$i"; echo; } >"$T/both/$i.code" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
bad=0
for i in $(seq 1 40); do grep -qx 200 "$T/both/$i.code" || bad=$((bad + 1)); done
check_eq "40 requests at once with both up: all 200" "$bad" 0
check "A took some" test $(( $(posts "$A_LOG") - a0 )) -gt 0
check "B took some" test $(( $(posts "$B_LOG") - b0 )) -gt 0
echo "# A took $(( $(posts "$A_LOG") - a0 )), B $(( $(posts "$B_LOG") - b0 )) of the 40"

# ---- TLS: checked with the upstream's verification ------------------------

WRONG_T="secure/localhost:$WRONG_PORT"
TLS_T="secure/127.0.0.1:$TLS_PORT"
check "the https target is probed over TLS" kv_wait_for 30 probed "$TLS_LOG"
check "the target whose certificate does not verify is marked down" \
	kv_wait_for 30 logged "KV0720.*$WRONG_T failed its health check" 1
check_eq "/metrics: it is down" "$(metric kilovolt_upstream_target_up "$WRONG_T")" 0
check_eq "/metrics: the verified one is up" "$(metric kilovolt_upstream_target_up "$TLS_T")" 1
check_eq "no probe got past its TLS handshake" "$(probes "$WRONG_LOG")" 0
check "the TLS probes carry no credential either" \
	test "$(grep "^GET /health " "$TLS_LOG" | grep -vc ' auth=- ')" = 0
check_eq "10 requests to the TLS upstream: all 200" "$(run 10 gpt-4o-mini-tls tls)" 0
check_eq "the verified target received them with the upstream's key" \
	"$(grep -c "^POST .* auth=$PK_ID " "$TLS_LOG")" 10
check_eq "all answered by the verified target" "$(answered_by "$T/tls" 10 "$TLS_T")" 10

# ---- 24 targets in all: each has its slot, checks and balancing ----------

# Each by its own port: W1 and W2 share A's health file, and their failures
# while A failed are logged too.
all_dead_logged() {
	local p
	for p in "${WIDE_DEAD[@]}"; do
		logged "KV0720.*wide/127.0.0.1:$p failed its health check" 1 || return 1
	done
}
check "the 18 dead targets of 'wide' are marked down" kv_wait_for 60 all_dead_logged
check_eq "no target table full warning (KV0700/KV0723)" "$(grep -c 'KV0700\|KV0723' "$KV_LOG")" 0
check_eq "/metrics: an up gauge for each of the 24 targets" \
	"$(curl -sS -m 10 "http://127.0.0.1:$KV_STATUS_PORT/metrics" | grep -c '^kilovolt_upstream_target_up{')" 24
down=0
for p in "${WIDE_DEAD[@]}"; do
	[ "$(metric kilovolt_upstream_target_up "wide/127.0.0.1:$p")" = 0 ] && down=$((down + 1))
done
check_eq "/metrics: the 18 dead ones are down" "$down" 18
check_eq "20 requests to the 20-target upstream: all 200" "$(run 20 gpt-4o-mini-wide wide)" 0
check_eq "all answered by its two live targets" \
	$(( $(answered_by "$T/wide" 20 "wide/127.0.0.1:$W1_PORT") + $(answered_by "$T/wide" 20 "wide/127.0.0.1:$W2_PORT") )) 20
sent=0
for p in "${WIDE_DEAD[@]}"; do
	sent=$((sent + $(metric kilovolt_upstream_target_requests_total "wide/127.0.0.1:$p") + 0))
done
check_eq "no request was even tried on a target marked down" "$sent" 0

# ---- no health_check: no probe at all --------------------------------------

check_eq "5 requests to an unchecked upstream: all 200" "$(run 5 gpt-4o-mini-plain plain)" 0
check_eq "it received them" "$(posts "$P_LOG")" 5
check_eq "and not one probe, after $SECONDS s" "$(probes "$P_LOG")" 0

# ---- the ledger holds what the targets billed -----------------------------

check "every reservation settles" kv_wait_for 30 key_field_is reserved_nusd 0
check_eq "the ledger holds exactly what the targets billed" "$(key_field spent_nusd)" \
	$(( $(cost_of "$A_LOG") + $(cost_of "$B_LOG") + $(cost_of "$TLS_LOG" "$PK_ID") + $(cost_of "$P_LOG") +
	$(cost_of "$W1_LOG") + $(cost_of "$W2_LOG") ))
check_eq "and counts every request" "$(key_field requests)" 121

# ---- a reload without health_check: probes stop, marks are cleared ---------

echo 503 >"$T/b.health"
check "B's third failure is logged" kv_wait_for 30 logged "KV0720.*$B_T failed its health check" 3
sed -i -e '/^health_check = /d' -e '/^health_interval = /d' "$T/kilovolt.ini"
kill -HUP "$KV_PID"
check "the reload is done" kv_wait_for 30 logged "reloading .*generation 2" 1
sleep 1
a1=$(probes "$A_LOG") b1=$(probes "$B_LOG") t1=$(probes "$TLS_LOG")
sleep 5
check_eq "no probe of A after the reload" "$(probes "$A_LOG")" "$a1"
check_eq "nor of B" "$(probes "$B_LOG")" "$b1"
check_eq "nor of the TLS target" "$(probes "$TLS_LOG")" "$t1"
check_eq "/metrics: B, still failing /health, is up again" "$(metric kilovolt_upstream_target_up "$B_T")" 1

kv_finish
