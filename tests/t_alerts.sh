#!/bin/bash
# t_alerts: [alerts] posts one message per key per threshold crossed per
# period to a webhook: here a local HTTP receiver (python3) that records
# every POST and fails the first one with 500, so the retry with back-off
# is seen. The relay never waits for it: a request that crosses a threshold
# is answered while the receiver stalls. Then format = slack gives
# {"text": ...}; a restart does not repeat what was sent; a reset re-arms.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"
command -v python3 >/dev/null || skip "python3 not installed"

HOOK_PORT=$(kv_free_port)
cat >"$T/receiver.py" <<'EOF'
import http.server, sys, time
port, out, fail_first, stall = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
seen = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global seen
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/probe":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        seen += 1
        with open(out, "ab") as f:
            f.write(body + b"\n")
        time.sleep(stall)
        self.send_response(500 if seen <= fail_first else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
receiver() {	# receiver FAIL_FIRST STALL_SECONDS
	python3 "$T/receiver.py" "$HOOK_PORT" "$T/hook.log" "$1" "$2" >"$T/receiver.err" 2>&1 &
	RECV=$!
	kv_track $RECV
	up() { curl -s -o /dev/null -m 1 -X POST -d '' "http://127.0.0.1:$HOOK_PORT/probe"; }
	kv_wait_for 10 up
	: >"$T/hook.log"
}
receiver 1 2

kv_start_mock
kv_write_config <<EOF
[alerts]
webhook = http://127.0.0.1:$HOOK_PORT/hooks/kilovolt
thresholds = 50 80 100
[key alice]
key = sk-alice-$$
budget = 0.000100
EOF
kv_start
KA=sk-alice-$$
AID=$(printf %s "$KA" | sha256sum | cut -c1-12)
# 22 input and 10 output tokens of gpt-4o-mini: 22*150 + 10*600 = 9,300 nUSD a request.
chat() {
	kv_curl /v1/chat/completions -o /dev/null -w '%{http_code} %{time_total}\n' \
		-H "Authorization: Bearer $KA" -H 'x-mock-tokens: 10' -H 'Content-Type: application/json' \
		--data-binary '{"model":"gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"alert me"}]}'
}
messages() { awk 'END { print NR }' "$T/hook.log" 2>/dev/null; }
has() { [ "$(messages)" -ge "$1" ]; }

for i in 1 2 3 4 5; do chat >>"$T/codes"; done	# 46,500 of 100,000: under 50%
sleep 2
check_eq "under the first threshold: nothing posted" "$(messages)" 0
read -r code secs < <(chat)	# 55,800: past 50%
check_eq "the request that crosses 50% is answered" "$code" 200
check "... without waiting for the webhook (which stalls 2 s): ${secs}s" \
	awk -v s="$secs" 'BEGIN { exit !(s < 1.5) }'
check "the 50% alert is posted, and posted again after a 500" kv_wait_for 15 has 2
sed -n 1p "$T/hook.log" >"$T/m1"
check "the message: event, key, label, threshold, spent, budget, text" jq -e --arg id "$AID" '
	.event == "budget_threshold" and .key_id == $id and .label == "alice" and
	.threshold_percent == 50 and .spent_nusd == 55800 and .budget_nusd == 100000 and
	(.text | test("alice .* 50% of its budget: \\$0.000055 of \\$0.000100"))' "$T/m1"
check_eq "the retry is the same message" "$(sed -n 2p "$T/hook.log")" "$(cat "$T/m1")"
check "the retry waited for the back-off (1 s), and the log says so" \
	grep -q "KV0814.*key $AID at 50%: attempt 1 of 4 got HTTP 500" "$KV_LOG"
check "then it was delivered" kv_wait_for 10 grep -q "alert sent: key $AID at 50% (attempt 2)" "$KV_LOG"
for i in 1 2 3; do chat >>"$T/codes"; done	# 83,700: past 80%
check "80%: one more message" kv_wait_for 10 has 3
sleep 2
check_eq "... and only one" "$(messages)" 3
check "... for 80" jq -e '.threshold_percent == 80' <(sed -n 3p "$T/hook.log")
chat >>"$T/codes"; chat >>"$T/codes"	# 93,000 then the budget refuses
sleep 2
check_eq "no 100% message while spend stays under the budget" "$(messages)" 3

# A restart does not repeat what was sent; a reset re-arms the thresholds.
kv_stop
kv_kill "$RECV" 5
receiver 0 0
sed -i 's/^thresholds = .*/thresholds = 50 80 100\nformat = slack/' "$T/kilovolt.ini"
kv_start
sleep 3
check_eq "after a restart nothing is posted again" "$(messages)" 0
kv_ctl reset alice >/dev/null
sleep 1.5	# the master notices a reset at its next look (every second)
for i in 1 2 3 4 5 6; do chat >>"$T/codes"; done
check "after a reset, crossing 50% again posts again" kv_wait_for 10 has 1
check "format = slack: {\"text\": ...}" jq -e 'keys == ["text"] and (.text | test("^kilovolt: key alice \\(.*\\) has spent 50% of its budget"))' \
	<(sed -n 1p "$T/hook.log")

# HTTPS is verified: the mock over TLS (a test CA no system store holds)
# as the webhook. Without its CA the handshake is refused; with it
# (SSL_CERT_FILE) the POST goes through, and the mock answers 404 for a path
# it does not serve, which the log shows as the HTTP status it got.
kv_start_mock_tls
kv_stop
sed -i "s|^webhook = .*|webhook = https://localhost:$MOCK_TLS_PORT/hooks/kilovolt|" "$T/kilovolt.ini"
kv_start
sleep 2	# the master's first look: what is passed by then counts as sent
kv_ctl reset alice >/dev/null
sleep 1.5	# the master notices a reset at its next look (every second)
for i in 1 2 3 4 5 6; do chat >>"$T/codes"; done
check "https, CA not trusted: the handshake is refused and logged" \
	kv_wait_for 15 grep -q "KV0812: alerts: TLS to localhost: certificate verify failed" "$KV_LOG"
# Restart while the refused delivery's child still retries: the child must
# not keep the ledger's lock (its mapping held the file, and so the flock,
# until it unmapped it), or this start fails with KV0602.
kv_stop
SSL_CERT_FILE=$KV_CERTS/ca.pem kv_start
sleep 2
kv_ctl reset alice >/dev/null
sleep 1.5	# the master notices a reset at its next look (every second)
for i in 1 2 3 4 5 6; do chat >>"$T/codes"; done
check "https with the CA: the message reaches the server (its answer: HTTP 404)" \
	kv_wait_for 15 grep -q "KV0814: alerts: key $AID at 50%: attempt 1 of 4 got HTTP 404" "$KV_LOG"
# [alerts] ca_file names the CA instead (the environment without it): the
# webhook's TLS takes the anchors from the config, as the upstreams do.
kv_stop
sed -i "/^webhook = /a ca_file = $KV_CERTS/ca.pem" "$T/kilovolt.ini"
kv_start
sleep 2
kv_ctl reset alice >/dev/null
sleep 1.5	# the master notices a reset at its next look (every second)
for i in 1 2 3 4 5 6; do chat >>"$T/codes"; done
answered_404() { [ "$(grep -c "KV0814: alerts: key $AID at 50%: attempt 1 of 4 got HTTP 404" "$KV_LOG")" -ge 2 ]; }
check "https with [alerts] ca_file: the message reaches the server (HTTP 404)" \
	kv_wait_for 15 answered_404
kv_finish
