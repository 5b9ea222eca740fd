#!/bin/bash
# t_failover: one upstream with three targets (worker/peer.c) --
# one dead (nothing listens), one resetting each connection after its
# answer (the next request finds the pooled connection dead), one slow --
# through the real daemon: no client sees an error, every request reaches a
# target exactly once, the dead target is ejected and,
# once it listens again, re-admitted after its cool-down. A stream whose
# target dies mid-stream is cut, not retried, and charged as a cut; a
# request a target read and then dropped is not sent anywhere else. An
# upstream whose targets are all down falls back to another upstream with
# its own api_key and model name. The ledger is exact throughout.
: "${KV_TIMEOUT:=600}"
export KV_TIMEOUT
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
export LC_ALL=C

KA=sk-kvtest-failover-a
KC=sk-kvtest-failover-cut
KD=sk-kvtest-failover-drop
KF=sk-kvtest-failover-fb
BACKUP_KEY=sk-backup-provider-key
BODY='{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"which target?"}]}'

kv_start_mock				# the anthropic upstream's, unused here
kv__mock slow -D 200 || exit 1
SLOW_PORT=$KV__PORT SLOW_LOG=$T/slow.log
kv__mock reset -R || exit 1
RST_PORT=$KV__PORT RST_LOG=$T/reset.log
kv__mock backup || exit 1
FB_PORT=$KV__PORT FB_LOG=$T/backup.log
kv__mock busy -S 429 || exit 1
BUSY_PORT=$KV__PORT BUSY_LOG=$T/busy.log
kv__mock calm || exit 1
CALM_PORT=$KV__PORT CALM_LOG=$T/calm.log
DEAD_PORT=$(kv_free_port)	# free, not held: a mock listens on it later
DEAD2_PORT=$(kv_dead_ports 1) || exit 1

kv_write_config <<EOF
[upstream openai]
url = http://127.0.0.1:$DEAD_PORT http://127.0.0.1:$RST_PORT http://127.0.0.1:$SLOW_PORT
eject_after = 2
eject_time = 2

[upstream primary]
url = http://127.0.0.1:$DEAD2_PORT
models = fb-model*
fallback = backup

[upstream limited]
url = http://127.0.0.1:$BUSY_PORT http://127.0.0.1:$CALM_PORT
models = lim-model*
eject_after = 1

[upstream backup]
url = http://127.0.0.1:$FB_PORT
api_key = $BACKUP_KEY
model_map = fb-model=backup-deployment
EOF
kv_start

key_field() { kv_ctl keys --json | jq -r --arg id "$1" ".keys[] | select(.id == \$id) | .$2"; }
key_field_is() { [ "$(key_field "$1" "$2")" = "$3" ]; }
hdr() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1; }
posts() { grep -c "^POST .* auth=$1 " "$2"; }
# cost_of LOG ID: what the mock billed that key, in nano-dollars (gpt-4o-mini:
# 150 / 600 per token; input = body bytes / 4, output 5).
cost_of() { awk -v id="auth=$2" '$0 ~ id { for (i = 1; i <= NF; i++) if ($i ~ /^body_bytes=/)
	{ split($i, a, "="); s += int(a[2] / 4) * 150 + 5 * 600 } } END { print s + 0 }' "$1"; }
chat() {	# chat KEY OUT [CURL ARGS]: the status code
	local key=$1 out=$2
	shift 2
	curl -sS -m 60 -o "$out.body" -D "$out.head" -w '%{http_code}' \
		-H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@" \
		--data-binary "${DATA:-$BODY}" "$KV_URL/v1/chat/completions"
}
metric() { curl -sS -m 10 "http://127.0.0.1:$KV_STATUS_PORT/metrics" |
	sed -n "s|^$1{target=\"$2\"} ||p"; }

# ---- dead, resetting, slow: no client sees an error ----------------------

KA_ID=$(id_of "$KA")
mkdir -p "$T/a"
bad=0
for i in $(seq 1 12); do
	[ "$(chat "$KA" "$T/a/$i")" = 200 ] || bad=$((bad + 1))
done
pids=()
for i in $(seq 13 32); do
	{ chat "$KA" "$T/a/$i"; echo; } >"$T/a/$i.code" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
for i in $(seq 13 32); do grep -qx 200 "$T/a/$i.code" || bad=$((bad + 1)); done
check_eq "32 requests (12 in a row, 20 at once) over dead, resetting and slow targets: all 200" "$bad" 0
other=0 nslow=0
for i in $(seq 1 32); do
	case $(hdr x-kilovolt-upstream "$T/a/$i.head") in
	"openai/127.0.0.1:$SLOW_PORT") nslow=$((nslow + 1)) ;;
	"openai/127.0.0.1:$RST_PORT") ;;
	*) other=$((other + 1)) ;;
	esac
done
check_eq "each says x-kilovolt-upstream: the slow or the resetting target" "$other" 0
echo "# $nslow of 32 answered by the slow target, $((32 - nslow)) by the resetting one"
check_eq "the two received each request exactly once between them" \
	$(( $(posts "$KA_ID" "$SLOW_LOG") + $(posts "$KA_ID" "$RST_LOG") )) 32
check_eq "and each answered what its log shows" "$(posts "$KA_ID" "$SLOW_LOG")" $nslow
check "every reservation settles" kv_wait_for 30 key_field_is "$KA_ID" reserved_nusd 0
check_eq "the ledger holds exactly what the two targets billed" \
	"$(key_field "$KA_ID" spent_nusd)" \
	$(( $(cost_of "$SLOW_LOG" "$KA_ID") + $(cost_of "$RST_LOG" "$KA_ID") ))
check_eq "and counts 32 requests" "$(key_field "$KA_ID" requests)" 32
DEAD_T="openai/127.0.0.1:$DEAD_PORT"
RST_T="openai/127.0.0.1:$RST_PORT"
check "/metrics: the dead target was ejected" test "$(metric kilovolt_upstream_target_ejections_total "$DEAD_T")" -ge 1
check "/metrics: requests moved off the dead target" test "$(metric kilovolt_upstream_target_retries_total "$DEAD_T")" -ge 1
check_eq "/metrics: the slow and resetting targets took the 32" \
	$(( $(metric kilovolt_upstream_target_requests_total "openai/127.0.0.1:$SLOW_PORT") +
	$(metric kilovolt_upstream_target_requests_total "$RST_T") )) 32
check "/metrics: every target has an up gauge" test -n "$(metric kilovolt_upstream_target_up "$DEAD_T")"
check "the retries are in the log" grep -q "openai/127.0.0.1:$DEAD_PORT failed (upstream unreachable): retrying to" "$KV_LOG"

# ---- the dead target comes back and is re-admitted after its cool-down ----

kv__mock revived -p "$DEAD_PORT" || exit 1
REV_LOG=$T/revived.log
back() { [ "$(grep -c "^POST " "$REV_LOG" 2>/dev/null)" -ge 1 ]; }
bad=0
for i in $(seq 1 60); do
	[ "$(chat "$KA" "$T/r")" = 200 ] || bad=$((bad + 1))
	back && break
	sleep 0.3
done
check "the revived target gets requests again after its cool-down" back
check_eq "and no client saw an error meanwhile" "$bad" 0

# ---- a stream cut mid-way is not retried, and is charged as a cut ---------

KC_ID=$(id_of "$KC")
SBODY='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":40,"messages":[{"role":"user","content":"cut me"}]}'
DATA=$SBODY chat "$KC" "$T/cut" -H 'x-mock-fail: reset' -H 'x-mock-tokens: 40' >/dev/null 2>&1
n=$(( $(posts "$KC_ID" "$SLOW_LOG") + $(posts "$KC_ID" "$REV_LOG") + $(posts "$KC_ID" "$RST_LOG") ))
check_eq "the cut stream reached one target once" "$n" 1
check "its reservation settles" kv_wait_for 30 key_field_is "$KC_ID" reserved_nusd 0
check_eq "it is charged as an estimate (a cut)" "$(key_field "$KC_ID" estimated_requests)" 1
check "for the input and what was relayed (> 0)" test "$(key_field "$KC_ID" spent_nusd)" -gt 0

# ---- a target that read the request and dropped it: never sent twice -----

KD_ID=$(id_of "$KD")
code=$(chat "$KD" "$T/drop" -H 'x-mock-fail: close')
check_eq "a request a target read and dropped is a 502 to the client" "$code" 502
# (A pooled connection the target closed gets one fresh try on the same
# target: the engine's fresh-connection rule (conn_retry). No other target may get it.)
n=0
for f in "$SLOW_LOG" "$REV_LOG" "$RST_LOG"; do [ "$(posts "$KD_ID" "$f")" -gt 0 ] && n=$((n + 1)); done
check_eq "and no other target received it" "$n" 1
check_eq "that 502 says retry-after: 1" "$(hdr retry-after "$T/drop.head")" 1
# (What it costs is the relay's rule for a request the provider received and
# never answered: charged as an estimate of its input, once.)
check "its reservation settles" kv_wait_for 20 key_field_is "$KD_ID" reserved_nusd 0
check "it is charged at most once, as an estimate" \
	test "$(key_field "$KD_ID" estimated_requests)" -le 1

# ---- fallback: another upstream, its own key and model name --------------

KF_ID=$(id_of "$KF")
FBODY='{"model":"fb-model","max_tokens":10,"messages":[{"role":"user","content":"fall back"}]}'
code=$(DATA=$FBODY chat "$KF" "$T/fb")
check_eq "a request to an upstream whose only target is dead falls back: 200" "$code" 200
check_eq "x-kilovolt-upstream names the fallback" "$(hdr x-kilovolt-upstream "$T/fb.head")" \
	"backup/127.0.0.1:$FB_PORT"
BK_ID=$(id_of "$BACKUP_KEY")
check "the fallback got the backup's api_key, not the client's" grep -q "^POST .* auth=$BK_ID " "$FB_LOG"
check "and the model its model_map names" grep -q "auth=$BK_ID .*model=backup-deployment" "$FB_LOG"
check_eq "the client's key never reached it" "$(grep -c "auth=$KF_ID" "$FB_LOG")" 0
check_eq "the answer is the backup's" "$(jq -r .model "$T/fb.body")" backup-deployment
check "the fallback's reservation settles" kv_wait_for 20 key_field_is "$KF_ID" reserved_nusd 0
fb_bytes=$(sed -n "s/.* auth=$BK_ID .*body_bytes=\([0-9]*\).*/\1/p" "$FB_LOG" | head -n 1)
check_eq "charged at [price default] for what the backup billed" \
	"$(key_field "$KF_ID" spent_nusd)" $(( (fb_bytes / 4) * 1000 + 5 * 3000 ))

# ---- a target answering 429 is cooled, not ejected, and not relayed -------

KL=sk-kvtest-failover-limited
KL_ID=$(id_of "$KL")
LBODY='{"model":"lim-model","max_tokens":10,"messages":[{"role":"user","content":"busy?"}]}'
bad=0
for i in 1 2 3 4 5 6; do [ "$(DATA=$LBODY chat "$KL" "$T/l$i")" = 200 ] || bad=$((bad + 1)); done
check_eq "6 requests to an upstream whose other target answers 429: all 200" "$bad" 0
check "the 429 target got at most one of them (cooled 5 s after its 429)" \
	test "$(posts "$KL_ID" "$BUSY_LOG")" -le 1
check_eq "the calm target answered all 6" "$(posts "$KL_ID" "$CALM_LOG")" 6
BUSY_T="limited/127.0.0.1:$BUSY_PORT"
check_eq "a 429 does not eject (eject_after = 1)" \
	"$(metric kilovolt_upstream_target_ejections_total "$BUSY_T")" 0
check "the ledger charged the 6 exactly once" kv_wait_for 20 key_field_is "$KL_ID" requests 6

kv_finish
