# vertex_lib.sh: what the Vertex AI tests share (sourced after tests/lib.sh,
# after kv_sdk_setup): a service account (a fresh RSA key, its key file
# naming the stand-in's token endpoint) and the Vertex stand-in
# (tests/sdk/vertex_standin.mjs).
VX_EMAIL=kv-test@kv-project.iam.gserviceaccount.com

# vx_keypair NAME: $T/NAME.key (PKCS #8, as Google's key files hold) and
# $T/NAME.pub.
vx_keypair() {
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/$1.key" 2>/dev/null &&
		openssl pkey -in "$T/$1.key" -pubout -out "$T/$1.pub" 2>/dev/null ||
		fail "openssl makes an RSA key pair"
}

# vx_sa_file KEYNAME TOKEN_URI: $T/sa-KEYNAME.json, a service account key
# file as Google issues it, with that private key and token_uri.
vx_sa_file() {
	jq -n --rawfile k "$T/$1.key" --arg e "$VX_EMAIL" --arg u "$2" \
		'{type: "service_account", project_id: "kv-project", private_key_id: "0123456789abcdef",
		  private_key: $k, client_email: $e, client_id: "1234567890", auth_uri:
		  "https://accounts.google.com/o/oauth2/auth", token_uri: $u}' >"$T/sa-$1.json"
}

# vx_start_standin [ARGS]: the stand-in on a free port, verifying assertions
# against $T/sa.pub. Sets VX_PORT, VX_PID, VX_URL, VX_LOG.
vx_start_standin() {
	VX_LOG=$T/vertex.jsonl
	kv__node_standin vertex "the Vertex stand-in" vertex_standin.mjs --log "$VX_LOG" \
		--public-key "$T/sa.pub" --client-email "$VX_EMAIL" "$@"
	VX_PID=$KV__STANDIN_PID
	VX_PORT=$KV__STANDIN_PORT
	VX_URL=http://127.0.0.1:$VX_PORT
}

# vx_upstream [LINES]: a vertex upstream at the stand-in, for kv_write_config.
vx_upstream() {
	printf '[upstream vertex]\nprovider = vertex\nproject = kv-project\nlocation = us-east5\nurl = %s\n%s\n' \
		"$VX_URL" "${1:-}"
}
