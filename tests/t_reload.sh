#!/bin/bash
# Reload never takes serving workers down (issue 12): `kilovoltd -t` builds
# every TLS context, so a garbage ca_file fails the check; a SIGHUP to such
# a config during a stream keeps the serving generation (the stream
# completes and is charged) and logs why; a burst of SIGHUPs never leaves
# the gateway without an accepting worker.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

# The new generation's workers exit 2 (KV0112) on the garbage ca_file.
KV_KILLS_WORKERS=1
kv_start_mock
kv_write_config </dev/null
cp "$T/kilovolt.ini" "$T/good.ini"
printf 'this is not a certificate\n' >"$T/garbage.pem"
cat "$T/good.ini" - >"$T/bad.ini" <<EOF

[upstream broken]
url = https://127.0.0.1:1
ca_file = $T/garbage.pem
models = broken-*
EOF
status_json() { curl -sS -m 5 "http://127.0.0.1:$KV_STATUS_PORT/status.json"; }
gens() { status_json | jq -r '[.workers[] | select(.state == "running") | .generation] | unique | join(" ")'; }
pids() { status_json | jq -r '.workers[] | select(.state == "running") | .pid' | sort; }
AUTH=(-H "Authorization: Bearer sk-reload-test")
KID=$(printf '%s' sk-reload-test | sha256sum | cut -c1-12)
field() { kv_ctl keys --json | jq -r ".keys[] | select(.id == \"$KID\") | .$1"; }

# ---- -t builds the TLS contexts ---------------------------------------------------

"$KV_DAEMON_BIN" -t -c "$T/bad.ini" >"$T/t.out" 2>&1
check_eq "kilovoltd -t with a garbage ca_file exits 2" "$?" 2
check "... naming the file" grep -q "garbage.pem" "$T/t.out"
"$KV_DAEMON_BIN" -t -c "$T/good.ini" >/dev/null 2>&1
check_eq "kilovoltd -t with the good config exits 0" "$?" 0

# ---- SIGHUP to a config whose new workers cannot start, during a stream -------------

kv_start
kv_wait_for 10 eval '[ "$(pids | wc -l)" = 2 ]'
before=$(pids)
kv_curl /v1/chat/completions -o "$T/stream" "${AUTH[@]}" -H 'x-mock-tokens: 40' \
	-H 'x-mock-delay-ms: 100' \
	-d '{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}' &
STREAM=$!
sleep 1
cp "$T/bad.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
check "the master logs the failed reload" kv_wait_for 15 grep -q \
	"KV0614: reload failed: generation 2 cannot serve the new config" "$KV_LOG"
check "... and the worker said why" grep -q "garbage.pem" "$KV_LOG"
check_eq "... the serving workers are the same processes" "$(pids)" "$before"
check "... still running" kv_alive "$KV_PID"
wait $STREAM
check "the stream in flight completed" grep -q 'data: \[DONE\]' "$T/stream"
check "... and was charged" test "$(field spent_nusd)" -gt 0
check_eq "... nothing left reserved" "$(field reserved_nusd)" 0
check_eq "new requests are served by the old generation" \
	"$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' "${AUTH[@]}" \
		-d '{"model":"gpt-4o-mini","max_tokens":5}')" 200
cp "$T/good.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
check "a good reload afterwards takes over" kv_wait_for 15 grep -q \
	"reloaded .*generation 3 serving" "$KV_LOG"
check "... and only generation 3 runs once the old one drained" kv_wait_for 15 \
	eval '[ "$(gens)" = 3 ]'

# ---- a SIGHUP burst: never zero accepting workers ---------------------------------------

fails=0
client() {
	local i code n=0
	for i in $(seq 1 80); do
		code=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -m 10 \
			"${AUTH[@]}" -d '{"model":"gpt-4o-mini","max_tokens":5}' 2>/dev/null)
		[ "$code" = 200 ] || n=$((n + 1))
		sleep 0.02
	done
	echo "$n" >"$T/client.$1"
}
client 1 &
C1=$!
client 2 &
C2=$!
for i in $(seq 1 10); do
	kill -HUP "$KV_PID"
	sleep 0.15
done
wait $C1 $C2
fails=$(($(cat "$T/client.1") + $(cat "$T/client.2")))
check_eq "160 requests during 10 SIGHUPs 150 ms apart: none refused or failed" "$fails" 0
check "after the burst one generation serves, with 2 workers" kv_wait_for 20 \
	eval '[ "$(gens | wc -w)" = 1 ] && [ "$(pids | wc -l)" = 2 ]'
check "the daemon never stopped" kv_alive "$KV_PID"
check_eq "the only workers that died were the failed generation's (exit 2)" \
	"$(grep KV0112 "$KV_LOG" | grep -vc 'exited with status 2')" 0

kv_finish
