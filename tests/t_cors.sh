#!/bin/bash
# t_cors: [server] cors_origins. A preflight is answered by the gateway
# without a credential (204 and the Access-Control-Allow-* headers for a
# listed origin, 403 for another) and never reaches the provider; a real
# request from a listed origin gets Access-Control-Allow-Origin on its
# response, errors included. Then headless Chromium makes a real fetch()
# from a page on a listed origin (it gets the completion, its usage and the
# kilovolt headers) and from one that is not (the browser blocks it).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"

kv_start_mock
OK_PORT=$(kv_free_port) BAD_PORT=$(kv_free_port)
OK=http://127.0.0.1:$OK_PORT BAD=http://127.0.0.1:$BAD_PORT
kv_write_config <<EOF
[server]
cors_origins = https://app.example.com $OK
EOF
kv_start
hdr() { grep -i "^$1:" "$2" | tr -d '\r' | cut -d' ' -f2-; }
n_mock() { kv_mock_stat requests; }

m0=$(n_mock)
code=$(kv_curl /v1/chat/completions -X OPTIONS -D "$T/p1" -o /dev/null -w '%{http_code}' \
	-H "Origin: $OK" -H 'Access-Control-Request-Method: POST' \
	-H 'Access-Control-Request-Headers: authorization,content-type,x-stainless-os')
check_eq "preflight from a listed origin, no credential: 204" "$code" 204
check_eq "... Access-Control-Allow-Origin is that origin" "$(hdr access-control-allow-origin "$T/p1")" "$OK"
check_eq "... the requested headers are allowed" "$(hdr access-control-allow-headers "$T/p1")" \
	"authorization,content-type,x-stainless-os"
check "... POST is allowed" grep -qi '^access-control-allow-methods:.*POST' "$T/p1"
check "... Vary: Origin" grep -qi '^vary: origin' "$T/p1"
code=$(kv_curl /v1/messages -X OPTIONS -D "$T/p2" -o "$T/p2.b" -w '%{http_code}' \
	-H "Origin: $BAD" -H 'Access-Control-Request-Method: POST')
check_eq "preflight from another origin: 403" "$code" 403
check "... without Access-Control-Allow-Origin" eval "! grep -qi '^access-control-allow-origin' '$T/p2'"
check_eq "no preflight reached the provider (its stats calls aside)" "$(n_mock)" "$((m0 + 1))"

CHAT='{"model":"gpt-4o-mini","max_tokens":20,"messages":[{"role":"user","content":"from a browser"}]}'
kv_curl /v1/chat/completions -D "$T/r1" -o "$T/r1.b" -H "Origin: $OK" -H 'Authorization: Bearer sk-cors' \
	-H 'Content-Type: application/json' --data-binary "$CHAT"
check_eq "a request from a listed origin: Allow-Origin on the response" \
	"$(hdr access-control-allow-origin "$T/r1")" "$OK"
check "... with the kilovolt headers exposed" \
	grep -qi '^access-control-expose-headers:.*x-kilovolt-budget-remaining.*x-kilovolt-request-id' "$T/r1"
check_eq "... once" "$(grep -ci '^access-control-allow-origin' "$T/r1")" 1
kv_curl /v1/chat/completions -D "$T/r2" -o /dev/null -H "Origin: $OK" \
	-H 'Content-Type: application/json' --data-binary "$CHAT"
check "a 401 to a listed origin carries Allow-Origin too (the app can read it)" \
	grep -qi "^access-control-allow-origin: $OK" "$T/r2"
kv_curl /v1/chat/completions -D "$T/r3" -o /dev/null -H "Origin: $BAD" -H 'Authorization: Bearer sk-cors' \
	-H 'Content-Type: application/json' --data-binary "$CHAT"
check "a request from another origin: no Allow-Origin" eval "! grep -qi '^access-control-allow-origin' '$T/r3'"

# ---- a real browser ----------------------------------------------------------
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ] || ! command -v python3 >/dev/null; then
	echo "# no chromium or python3: the browser part is not run"
	kv_finish
fi
mkdir -p "$T/www"
cat >"$T/www/app.html" <<EOF
<!doctype html><html><body><pre id="out">pending</pre><script>
fetch("$KV_URL/v1/chat/completions", { method: "POST",
  headers: { "Authorization": "Bearer sk-browser", "Content-Type": "application/json" },
  body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 20,
    messages: [{ role: "user", content: "hello from chromium" }] }) })
 .then(function (r) { return r.json().then(function (j) {
   document.getElementById("out").textContent = "RESULT ok " + r.status + " " +
     j.usage.completion_tokens + " " + r.headers.get("x-kilovolt-request-id"); }); })
 .catch(function (e) { document.getElementById("out").textContent = "RESULT blocked " + e.name; });
</script></body></html>
EOF
for p in "$OK_PORT" "$BAD_PORT"; do
	python3 -m http.server "$p" --bind 127.0.0.1 --directory "$T/www" >"$T/http-$p.log" 2>&1 &
	kv_track $!
done
serving() { curl -fs -o /dev/null "http://127.0.0.1:$1/app.html"; }
kv_wait_for 10 serving "$OK_PORT"
kv_wait_for 10 serving "$BAD_PORT"
browse() {
	local prof
	prof=$(mktemp -d "$T/chrome.XXXXXX")
	timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --disable-dev-shm-usage --user-data-dir="$prof" \
		--virtual-time-budget=5000 --dump-dom "$1/app.html" 2>>"$T/chrome.err" |
		sed -n 's/.*<pre id="out">\([^<]*\)<.*/\1/p'
}
m0=$(n_mock)
got=$(browse "$OK")
echo "# listed origin: $got"
ok_result() { [[ $got =~ ^RESULT\ ok\ 200\ 5\ [0-9a-f]{16}$ ]]; }
check "Chromium on a listed origin: the fetch succeeds, usage and request id readable" ok_result
got=$(browse "$BAD")
echo "# other origin: $got"
check_eq "Chromium on another origin: the browser blocks the fetch" "$got" "RESULT blocked TypeError"
check_eq "only the listed origin's request reached the provider" "$(n_mock)" "$((m0 + 2))"
spent=$(kv_ctl show "$(printf %s sk-browser | sha256sum | cut -c1-12)" --json | jq .requests)
check_eq "the ledger counts that one request" "$spent" 1

kv_finish
