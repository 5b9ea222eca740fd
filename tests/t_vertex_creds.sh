#!/bin/bash
# t_vertex_creds: kilovoltd's Google access token for a vertex upstream,
# against the Vertex stand-in (tests/sdk/vertex_standin.mjs), whose token
# endpoint verifies each signed JWT assertion with jose and whose model
# endpoints take only a live token it vended. A service account key file
# (GOOGLE_APPLICATION_CREDENTIALS) gives a token at start; a token that
# lives 8 s is refreshed by the master before it expires and picked up by
# the running workers (no restart), every request meanwhile answered; the
# metadata server (GCE_METADATA_HOST) gives one without a key file, asked
# with Metadata-Flavor: Google; a reload that brings the first vertex
# upstream has one fetched; a key the token endpoint does not accept, a key
# file that cannot be read and no source at all each stop the start,
# saying why; a token endpoint that goes away is retried, logged (KV0492).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v openssl >/dev/null || skip "openssl not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
. "$top_srcdir/tests/vertex_lib.sh"

KEY=kv-vertex-creds-$$
MODEL=claude-haiku-4-5@20251001
DEAD=$(kv_free_port)
vx_keypair sa
vx_keypair other
vx_start_standin --token-ttl 8
vx_sa_file sa "$VX_URL/token"
vx_sa_file other "$VX_URL/token"

config() {
	{ vx_upstream; printf '[key client]\nkey = %s\n' "$KEY"; } >"$T/vx.ini"
	kv_write_config <"$T/vx.ini"
}
gcp_env() {
	unset GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST
	[ $# -gt 0 ] && export "$@"
	return 0
}
# call: one rawPredict through kilovolt; prints the status once the
# stand-in logged the call.
calls() { jq -c 'select(.op != null)' "$VX_LOG" | wc -l; }
more_calls() { [ "$(calls)" -gt "$1" ]; }
call() {
	local before code
	before=$(calls)
	code=$(kv_curl "/v1/projects/p/locations/l/publishers/anthropic/models/$MODEL:rawPredict" -o "$T/answer" \
		-w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"anthropic_version":"vertex-2023-10-16","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}')
	[ "$code" = 200 ] && kv_wait_for 10 more_calls "$before"
	echo "$code"
}
last() { jq -c 'select(.op != null)' "$VX_LOG" | tail -n 1 | jq -r "$1"; }
vended() { jq -r --arg v "$1" 'select(.vended.via == $v) | .vended.token' "$VX_LOG"; }
# start_fails NAME: kilovoltd must exit 2 at start; its log in $T/NAME.log.
start_fails() {
	KILOVOLT_LEDGER=$T/ledger timeout 60 "$KV_DAEMON_BIN" -c "$T/kilovolt.ini" >"$T/$1.log" 2>&1
	check_eq "$1: kilovoltd exits 2" "$?" 2
}

# ---- the start fails without a token, and says why ----------------------------------

config
gcp_env GOOGLE_APPLICATION_CREDENTIALS=$T/sa-other.json
start_fails badkey
check "a key the token endpoint refuses: KV0491 names the upstream and the OAuth error" \
	grep -q "KV0491.*upstream vertex: .*token endpoint 127.0.0.1:$VX_PORT answered 400: invalid_grant" "$T/badkey.log"
check_eq "... the stand-in refused the assertion's signature (jose)" \
	"$(jq -r 'select(.target == "/token") | .auth' "$VX_LOG" | tail -n 1)" "refused:Invalid JWT Signature or claims (ERR_JWS_SIGNATURE_VERIFICATION_FAILED)"
check "... and no private key in the log" test "$(grep -c 'PRIVATE KEY' "$T/badkey.log")" = 0
gcp_env GOOGLE_APPLICATION_CREDENTIALS=$T/no-such.json
start_fails nofile
check "an unreadable key file: KV0491 names it" grep -q "KV0491.*GOOGLE_APPLICATION_CREDENTIALS $T/no-such.json: No such file" "$T/nofile.log"
echo '{"type":"authorized_user","client_id":"x"}' >"$T/user.json"
gcp_env GOOGLE_APPLICATION_CREDENTIALS=$T/user.json
start_fails notsa
check "a key file that is no service account's: KV0491 says so" grep -q 'KV0491.*"type" is not "service_account"' "$T/notsa.log"
gcp_env GCE_METADATA_HOST=127.0.0.1:$DEAD
start_fails nosource
check "no key file, no metadata server: KV0491 names the metadata server tried" \
	grep -q "KV0491.*metadata server 127.0.0.1:$DEAD" "$T/nosource.log"

# ---- a key file; a token living 8 s, refreshed under running workers -------------------

gcp_env GOOGLE_APPLICATION_CREDENTIALS=$T/sa-sa.json
kv_start
first=$(vended "token endpoint" | head -n 1)
check "key file: the token endpoint vended a token at start" test -n "$first"
check_eq "key file: the request is answered" "$(call)" 200
check_eq "key file: sent with that token" "$(last .auth)" "token:$first"
check_eq "key file: the assertion's issuer is the account, its kid the key file's private_key_id" \
	"$(jq -r 'select(.vended) | "\(.auth) \(.kid)"' "$VX_LOG" | tail -n 1)" "assertion:$VX_EMAIL 0123456789abcdef"
workers=$(pgrep -P "$KV_PID" | tr '\n' ' ')
refreshed() { [ "$(grep -c 'Google access token from service account file' "$KV_LOG")" -ge 3 ]; }
check "refresh: the master fetched new tokens before the old ones expired" kv_wait_for 60 refreshed
bad=0 tokens=
for i in 1 2 3 4 5 6 7 8; do
	[ "$(call)" = 200 ] || bad=$((bad + 1))
	tokens="$tokens $(last .auth)"
	sleep 2
done
check_eq "refresh: 8 requests over 16 s (two lives of a token) all answered" "$bad" 0
check "refresh: they carried refreshed tokens, more than one of them" \
	test "$(printf '%s\n' $tokens | sort -u | wc -l)" -ge 2 -a "$(printf '%s\n' $tokens | grep -c "$first")" = 0
check_eq "refresh: each a live token the stand-in vended" \
	"$(printf '%s\n' $tokens | cut -d: -f1 | sort -u)" token
alive=0
for p in $workers; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check_eq "refresh: the workers that served before serve after (no restart)" "$alive" "$(echo $workers | wc -w)"
kv_stop

# ---- the metadata server, first needed after a reload ----------------------------------

gcp_env GCE_METADATA_HOST=127.0.0.1:$VX_PORT
kv_write_config </dev/null
kv_start
check_eq "metadata server: no vertex upstream, no token fetched" "$(vended "metadata server")" ""
config
kill -HUP "$KV_PID"
fetched() { grep -q "Google access token from metadata server" "$KV_LOG"; }
check "metadata server: the reload that adds a vertex upstream has a token fetched" kv_wait_for 30 fetched
answered() { [ "$(call)" = 200 ]; }
check "metadata server: the request is answered" kv_wait_for 20 answered
check "metadata server: sent with a token it vended" \
	grep -qx "$(last .auth | sed 's/^token://')" <(vended "metadata server")
check_eq "metadata server: asked with Metadata-Flavor: Google" \
	"$(jq -r 'select(.vended.via == "metadata server") | .headers["metadata-flavor"]' "$VX_LOG" | sort -u)" Google

# ---- the token endpoint goes away: retried, logged --------------------------------------

kv_kill "$VX_PID" 5
failed() { grep -q "KV0492.*Google access token refresh failed: metadata server 127.0.0.1:$VX_PORT" "$KV_LOG"; }
check "a refresh that fails is logged (KV0492) and retried" kv_wait_for 30 failed
kv_stop
kv_finish
