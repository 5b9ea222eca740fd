#!/bin/bash
# The heads kilovolt writes, pinned byte for byte (issue 26): the request
# head it sends upstream and the response head a client gets, for a few
# shapes of request (plain; a key with rate limits; Anthropic's path under a
# virtual key; HEAD with odd header case; HTTP/1.0; CORS; a query string)
# and of response (odd case and hop-by-hop headers, chunked, a reason
# phrase of its own). The fake upstream (tests/head_record.py) records what
# it gets; curl --raw shows what the client gets; both are compared with
# tests/data/headbytes.expected, request ids and ports masked. A change of
# any byte fails: the fast paths of the head code must write what the slow
# ones did.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl python3; do
	command -v $tool >/dev/null || skip "$tool not installed"
done

python3 "$top_srcdir/tests/head_record.py" "$T/rec.port" "$T/rec.log" 2>"$T/mock-rec.err" &
kv_track $!
for ((i = 0; i < 100; i++)); do [ -s "$T/rec.port" ] && break; sleep 0.1; done
[ -s "$T/rec.port" ] || { fail "head_record.py started"; kv_finish; }
UP=$(cat "$T/rec.port")
KP=sk-head-plain-0123456789
KL=sk-head-limits-0123456789
KA=sk-head-anthropic-0123456789
export HEAD_UPSTREAM_KEY=sk-provider-secret

KV_WORKERS=1 KV_UPSTREAM_URL=http://127.0.0.1:$UP kv_write_config <<EOF
[server]
cors_origins = http://app.example

[upstream anthropic]
api_key = env:HEAD_UPSTREAM_KEY

[key plain]
key = $KP

[key limits]
key = $KL
rpm = 1000
tpm = 1000000

[key anthropic]
key = $KA
EOF
kv_start

BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":16}'
ABODY='{"model":"claude-sonnet-4","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
C=(-sS -m 30 --raw -H 'User-Agent: t/1')

# one NAME [CURL ARGS]: a request whose response (head and body as sent)
# goes to the transcript under NAME.
one() {
	local name=$1
	shift
	printf '==== %s: client got\n' "$name" >>"$T/got"
	curl "${C[@]}" "$@" >>"$T/got.one" 2>>"$T/curl.err" || fail "$name: curl"
	cat "$T/got.one" >>"$T/got"
	rm -f "$T/got.one"
	printf '\n' >>"$T/got"
}

one plain -i "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H 'Content-Type: application/json' -H 'X-Custom:   spaced value  ' \
	-H 'Accept-Encoding: gzip' -H 'Connection: x-drop' -H 'x-drop: 1' -d "$BODY"
one limits-chunked -i "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KL" \
	-H 'Content-Type: application/json' -H 'x-shape: chunked' -d "$BODY"
one anthropic -i "$KV_URL/v1/messages" -H "x-api-key: $KA" \
	-H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
	-H 'x-shape: anthropic' -d "$ABODY"
one head-odd-case -I "$KV_URL/v1/models" -H "aUtHoRiZaTiOn: Bearer $KP" \
	-H 'X-SHAPE: models' -H 'aCCept: */*'
one http10-chunked -i --http1.0 "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H 'Content-Type: application/json' -H 'x-shape: chunked' -d "$BODY"
one http10-keepalive -i --http1.0 "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H 'Content-Type: application/json' -H 'Connection: keep-alive' -d "$BODY"
one cors -i "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H 'Origin: http://app.example' -H 'Content-Type: application/json' -d "$BODY"
one query -i "$KV_URL/v1/chat/completions?a=1&b=2" -H "Authorization: Bearer $KL" \
	-H 'Content-Type: application/json' -d "$BODY"
one anthropic-on-shared-path -i "$KV_URL/v1/models/claude-sonnet-4" -H "x-api-key: $KA" \
	-H 'anthropic-version: 2023-06-01' -H 'x-shape: models'

# Refusals of the credential check, whose reasons name the first problem
# met: a repeated header after a Connection naming one, and the reverse;
# two keys that differ; Authorization not Bearer beside a key.
one cred-conn-first -i "$KV_URL/v1/chat/completions" -H 'Connection: x-api-key' \
	-H "Authorization: Bearer $KP" -H "Authorization: Bearer $KP" -d "$BODY"
one cred-repeat-first -i "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H "Authorization: Bearer $KP" -H 'Connection: x-api-key' -d "$BODY"
one cred-differ -i "$KV_URL/v1/chat/completions" -H "Authorization: Bearer $KP" \
	-H "api-key: $KL" -H "x-api-key: $KP" -d "$BODY"
one cred-xkey-repeat -i "$KV_URL/v1/chat/completions" -H "x-api-key: $KP" \
	-H "X-Api-Key: $KP" -H "x-goog-api-key: $KL" -d "$BODY"
one cred-basic -i "$KV_URL/v1/chat/completions" -H 'Authorization: Basic eDp5' \
	-H "x-goog-api-key: $KP" -d "$BODY"

# What the upstream got, then what the clients got, masked where a run
# differs from the next: ports, request ids, and the rate-limit figures
# that depend on the clock (ratelimit_headers.c formats them, not the head code).
{
	echo "==== upstream got"
	cat "$T/rec.log"
	cat "$T/got"
} | sed -e "s/127\.0\.0\.1:$UP/127.0.0.1:UP/g" -e "s/127\.0\.0\.1:$KV_PORT/127.0.0.1:KV/g" \
	-e 's/^\(x-kilovolt-request-id: \).*\r$/\1ID\r/' \
	-e 's/^\(x-ratelimit-\(remaining\|reset\)-[a-z]*: \)[0-9]*/\1N/' >"$T/transcript"
if [ -n "${HEADBYTES_WRITE:-}" ]; then	# regenerate the pin (only on purpose)
	cp "$T/transcript" "$HEADBYTES_WRITE"
fi
if cmp -s "$T/transcript" "$top_srcdir/tests/data/headbytes.expected"; then
	pass "every head byte as pinned in tests/data/headbytes.expected"
else
	fail "the heads differ from tests/data/headbytes.expected"
	diff -a "$top_srcdir/tests/data/headbytes.expected" "$T/transcript" | head -n 60
fi
kv_finish
