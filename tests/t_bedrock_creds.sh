#!/bin/bash
# t_bedrock_creds: kilovolt's upstream authentication to Bedrock, against
# the Bedrock stand-in (tests/sdk/bedrock_standin.mjs), which recomputes
# every SigV4 signature with AWS's own signer and plays STS and IMDSv2.
# Each way kilovoltd gets AWS credentials (AWS's chain: static keys in its
# environment, web identity through STS AssumeRoleWithWebIdentity, the
# instance role through IMDSv2) must give signatures the stand-in accepts;
# credentials that expire are refreshed by the master and picked up by the
# running workers (no restart), requests before and after accepted; a
# reload that brings the first bedrock upstream has them fetched; the body
# signed is the one sent (spooled, or with the usage member kilovolt adds);
# the control plane's reads are signed; a
# retry to another target is signed again for its Host; the client's own
# key, signature and token never reach the upstream; a bedrock upstream's
# `api_key = env:NAME` goes as a bearer token; with no credentials at all
# the daemon refuses to start, saying why.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
kv_sdk_setup || skip "the Node SDKs are not available (node/npm missing or npm unreachable)"
WIT=eyJhbGciOiJSUzI1NiJ9.kv-test-web-identity.sig
ROLE_ARN=arn:aws:iam::123456789012:role/kv-standin-role
CLIENT_KEY=kv-client-secret-4f1d2a
# Vended credentials expire in 308 s: the master refreshes them 300 s
# before, so every 8 s or so.
kv_start_standin --cred-ttl 308 --web-identity-token "$WIT"
printf '%s\n' "$WIT" >"$T/wit"
DEAD=$(kv_free_port)

MODEL=anthropic.claude-3-5-haiku-20241022-v1:0

# config [EXTRA LINES]: a bedrock upstream at the stand-in (or at URL), its
# control plane there too, and the client's kilovolt key (a bedrock
# upstream takes kilovolt keys only).
config() {
	printf '[upstream bedrock]\nprovider = bedrock\nregion = us-east-1\nurl = %s\ncontrol_url = %s\npaths = /model/ /openai/v1/\n%s\n[key client]\nkey = %s\nbudget = 1.00\n' \
		"${URL:-$STANDIN_URL}" "$STANDIN_URL" "${1:-}" "$CLIENT_KEY" >"$T/bedrock.ini"
	kv_write_config <"$T/bedrock.ini"
}

# aws_env VAR=VALUE...: the AWS environment kilovoltd starts with, and no other.
aws_env() {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_WEB_IDENTITY_TOKEN_FILE \
		AWS_ROLE_ARN AWS_ROLE_SESSION_NAME AWS_ENDPOINT_URL_STS AWS_EC2_METADATA_SERVICE_ENDPOINT \
		AWS_EC2_METADATA_DISABLED AWS_REGION AWS_DEFAULT_REGION KV_TEST_BEDROCK_KEY
	[ $# -gt 0 ] && export "$@"
	return 0
}

# calls: the model calls the stand-in logged so far (it logs a request
# once its answer is sent, maybe after the client has it).
calls() { [ -f "$STANDIN_LOG" ] && jq -c 'select(.op != null)' "$STANDIN_LOG" | wc -l || echo 0; }
more_calls() { [ "$(calls)" -gt "$1" ]; }
# invoke: one InvokeModel through kilovolt with the client's kilovolt key
# and stray AWS headers; prints the HTTP status once the stand-in logged it.
invoke() {
	local before code
	before=$(calls)
	code=$(kv_curl "/model/$MODEL/invoke" -o "$T/answer" -w '%{http_code}' \
		-H "Authorization: Bearer $CLIENT_KEY" -H "x-api-key: $CLIENT_KEY" -H "api-key: $CLIENT_KEY" \
		-H 'X-Amz-Date: 20200101T000000Z' -H 'X-Amz-Security-Token: client-session-token' \
		-H 'X-Amz-Content-Sha256: UNSIGNED-PAYLOAD' -H 'Content-Type: application/json' \
		-d '{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}')
	[ "$code" = 200 ] && kv_wait_for 10 more_calls "$before"
	echo "$code"
}
# call PATH FILE: FILE's JSON posted to PATH with the client's key; prints
# the HTTP status once the stand-in logged the call.
call() {
	local before code
	before=$(calls)
	code=$(kv_curl "$1" -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer $CLIENT_KEY" \
		-H 'Content-Type: application/json' --data-binary "@$2")
	[ "$code" = 200 ] && kv_wait_for 10 more_calls "$before"
	echo "$code"
}
# last FILTER: FILTER applied to the last model call the stand-in logged.
last() { jq -c 'select(.op != null)' "$STANDIN_LOG" | tail -n 1 | jq -r "$1"; }
vended() { jq -r --arg v "$1" 'select(.vended.via == $v) | .vended.accessKeyId' "$STANDIN_LOG"; }

# ---- no credentials: the start fails, and says why --------------------------------
config
aws_env AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:$DEAD
KILOVOLT_LEDGER=$T/ledger timeout 60 "$KV_DAEMON_BIN" -c "$T/kilovolt.ini" >"$T/nocreds.log" 2>&1
check_eq "no AWS credentials and no api_key: kilovoltd exits 2" "$?" 2
check "no AWS credentials: KV0471 names the upstream and the chain's last try" \
	grep -q "KV0471.*upstream bedrock: .*instance role: IMDS 127.0.0.1:$DEAD" "$T/nocreds.log"

# ---- static keys from the environment ---------------------------------------------
aws_env AWS_ACCESS_KEY_ID=$STANDIN_AK AWS_SECRET_ACCESS_KEY=$STANDIN_SK
kv_start
check_eq "env keys: the request is answered" "$(invoke)" 200
check_eq "env keys: the stand-in verified kilovolt's signature (AWS's signer)" \
	"$(last .auth)" "sigv4:$STANDIN_AK"
check_eq "env keys: scoped to us-east-1/bedrock, host and x-amz-date signed" \
	"$(last '.headers.authorization' | sed 's/.*Credential=[^/]*\/[0-9]*\/\([^,]*\), SignedHeaders=\([^,]*\),.*/\1 \2/')" \
	"us-east-1/bedrock/aws4_request host;x-amz-date"
check_eq "env keys: no session token without one, no client's X-Amz-* header" \
	"$(last '[.headers | keys[] | select(startswith("x-amz-"))] | join(" ")')" "x-amz-date"
# The body signed is the body sent: one past the 8 KB window, spooled and
# hashed from the spool; one kilovolt adds a member to (usage asked for).
printf '{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"%s"}]}' \
	"$(head -c 30000 /dev/zero | tr '\0' a)" >"$T/big.json"
check_eq "spooled body: answered, signed with the spool's hash, the body the one sent" \
	"$(call "/model/$MODEL/invoke" "$T/big.json") $(last .auth) $(last .body_sha256) $(last .body_bytes)" \
	"200 sigv4:$STANDIN_AK $(sha256sum <"$T/big.json" | cut -d' ' -f1) $(wc -c <"$T/big.json")"
printf '{"model":"openai.gpt-oss-20b-1:0","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$T/stream.json"
check_eq "usage member added: answered, the signature covers the body with it" \
	"$(call /openai/v1/chat/completions "$T/stream.json") $(last .auth) $(last '.body_bytes > '"$(wc -c <"$T/stream.json")")" \
	"200 sigv4:$STANDIN_AK true"
code=$(kv_curl '/inference-profiles?type=SYSTEM_DEFINED' -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer $CLIENT_KEY")
control() { grep -q '"outcome":"control"' "$STANDIN_LOG"; }
kv_wait_for 10 control
check_eq "env keys: the control plane's read (relayed free) is signed too and answered" \
	"$code:$(jq -r 'select(.outcome == "control") | .auth' "$STANDIN_LOG" | tail -n 1)" "200:sigv4:$STANDIN_AK"
kv_stop

# ---- a retry to another target is signed for that target's Host --------------------
URL="http://127.0.0.1:$DEAD $STANDIN_URL" config
kv_start
check_eq "retry: the request that found the first target dead is answered" "$(invoke)" 200
check_eq "retry: signed again for the second target" "$(last .auth)" "sigv4:$STANDIN_AK"
check_eq "retry: the Host it was signed for is the stand-in's" "$(last .headers.host)" "127.0.0.1:$STANDIN_PORT"
kv_stop
config

# ---- web identity through STS, then a refresh the workers pick up -------------------
aws_env AWS_WEB_IDENTITY_TOKEN_FILE=$T/wit AWS_ROLE_ARN=$ROLE_ARN AWS_ROLE_SESSION_NAME=kv-test \
	AWS_ENDPOINT_URL_STS=$STANDIN_URL AWS_EC2_METADATA_DISABLED=true
kv_start
first=$(vended sts | head -n 1)
check "web identity: STS vended credentials at start" test -n "$first"
check_eq "web identity: the request is answered" "$(invoke)" 200
check_eq "web identity: signed with the credentials STS vended" "$(last .auth)" "sigv4:$first"
check_eq "web identity: the session token goes as X-Amz-Security-Token, signed" \
	"$(last '.headers["x-amz-security-token"] | startswith("IQoJ")') $(last .headers.authorization | grep -c 'SignedHeaders=host;x-amz-date;x-amz-security-token,')" "true 1"
check "web identity: STS got the role and the token file's token" \
	grep -q "\"role\":\"$ROLE_ARN\"" "$STANDIN_LOG"
workers=$(pgrep -P "$KV_PID" | tr '\n' ' ')
# published: the master logs each set of credentials once it is published
refreshed() { [ "$(grep -c 'AWS credentials from web identity' "$KV_LOG")" -ge 2 ]; }
check "refresh: the master fetched new credentials before the old ones expired" \
	kv_wait_for 60 refreshed
for i in 1 2 3 4; do
	check_eq "refresh: request $i after it is answered" "$(invoke)" 200
	check "refresh: request $i is signed with refreshed credentials" \
		test "$(last .auth)" != "sigv4:$first" -a "$(last .auth)" != "sigv4:"
done
alive=0
for p in $workers; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check_eq "refresh: the workers that served before it serve after it (no restart)" \
	"$alive" "$(echo $workers | wc -w)"
check "refresh: the master logged where the credentials came from" \
	grep -q "AWS credentials from web identity, expiring in" "$KV_LOG"
kv_stop

# ---- the instance role through IMDSv2, first needed after a reload ---------------------
aws_env AWS_EC2_METADATA_SERVICE_ENDPOINT=$STANDIN_URL
kv_write_config </dev/null
kv_start
check_eq "IMDSv2: no bedrock upstream, no credentials fetched" "$(vended imds)" ""
config
kill -HUP "$KV_PID"
fetched() { grep -q "AWS credentials from instance role (IMDSv2)" "$KV_LOG"; }
check "IMDSv2: the reload that adds a bedrock upstream has them fetched" kv_wait_for 30 fetched
reloaded() { [ "$(invoke)" = 200 ]; }
check "IMDSv2: the reloaded generation serves the bedrock upstream" kv_wait_for 30 reloaded
imds=$(vended imds | head -n 1)
check "IMDSv2: the instance role's credentials were vended" test -n "$imds"
check_eq "IMDSv2: the request is answered" "$(invoke)" 200
check "IMDSv2: signed with the instance role's credentials" \
	test -n "$(vended imds | while read -r ak; do [ "$(last .auth)" = "sigv4:$ak" ] && echo y; done)"
check_eq "IMDSv2: the token was asked for with a TTL" \
	"$(jq -r 'select(.target == "/latest/api/token") | .headers["x-aws-ec2-metadata-token-ttl-seconds"]' "$STANDIN_LOG" | sort -u)" 21600
kv_stop

# ---- a Bedrock API key: a bearer token, whatever the client sent ------------------------
config "api_key = env:KV_TEST_BEDROCK_KEY"
aws_env KV_TEST_BEDROCK_KEY=$STANDIN_API_KEY
kv_start
check_eq "API key: the request is answered" "$(invoke)" 200
check_eq "API key: sent as Authorization: Bearer" "$(last .headers.authorization)" "Bearer $STANDIN_API_KEY"
check_eq "API key: no x-api-key, api-key nor X-Amz-* header went up" \
	"$(last '[.headers | keys[] | select(. == "x-api-key" or . == "api-key" or startswith("x-amz-"))] | length')" 0
before=$(calls)
code=$(kv_curl "/model/$MODEL/invoke" -o /dev/null -w '%{http_code}' -H "x-api-key: $CLIENT_KEY" \
	-d '{"anthropic_version":"bedrock-2023-05-31","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}')
kv_wait_for 10 more_calls "$before"
check_eq "API key: a client's key in x-api-key still sends the Bedrock key as Bearer" \
	"$code $(last .headers.authorization) $(last '.headers["x-api-key"]')" "200 Bearer $STANDIN_API_KEY null"
kv_stop
aws_env

# ---- the client's key, signature and token never reached the upstream ----------------------
check_eq "no request the stand-in got carried the client's key or its own AWS headers" \
	"$(jq -c --arg k "$CLIENT_KEY" '.headers | tostring | select(contains($k) or contains("client-session-token") or contains("20200101T000000Z") or contains("UNSIGNED-PAYLOAD"))' "$STANDIN_LOG" | wc -l)" 0
check_eq "every model call the stand-in got was authenticated" \
	"$(jq -r 'select(.op != null) | .status' "$STANDIN_LOG" | sort -u | tr '\n' ' ')" "200 "
check "no secret in kilovoltd's logs" eval "! grep -h -e '$STANDIN_SK' -e '$WIT' -e 'IQoJ' '$T'/kilovoltd*.log '$T/nocreds.log'"

kv_finish
