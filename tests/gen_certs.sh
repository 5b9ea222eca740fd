#!/bin/bash
# gen_certs.sh OUTDIR: a real certificate chain for the TLS tests.
#
#   ca.pem               root CA (the client's trust anchor)
#   inter.pem            intermediate CA, signed by the root
#   server.pem/.key      leaf for DNS:localhost, IP:127.0.0.1, signed by the intermediate
#   server-chain.pem     leaf + intermediate: what the server presents
#   wrong.pem/.key       leaf for DNS:wrong.example only (hostname verification must fail)
#   wrong-chain.pem      wrong leaf + intermediate
#   self.pem/.key        a self-signed leaf for localhost (chain verification must fail)
#
# EC prime256v1 keys keep it fast. Idempotent: a complete OUTDIR is left alone.
set -eu

out=${1:?usage: gen_certs.sh OUTDIR}
files="ca.pem inter.pem server.pem server.key server-chain.pem wrong.pem wrong.key
	wrong-chain.pem self.pem self.key"

complete=1
for f in $files; do
	[ -s "$out/$f" ] || complete=0
done
[ $complete = 1 ] && exit 0

mkdir -p "$out"
work=$(mktemp -d "$out/.gen.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# sign NAME ISSUER SUBJECT EXTENSIONS: NAME.pem from a fresh NAME.key
sign() {
	key "$1.key"
	openssl req -new -key "$1.key" -subj "$3" -out "$1.csr"
	printf '%s\n' "$4" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}

leaf_ext() {
	printf '%s\n' "basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth" \
		"subjectKeyIdentifier=hash" \
		"authorityKeyIdentifier=keyid:always" \
		"subjectAltName=$1"
}

key ca.key
openssl req -x509 -new -key ca.key -subj "/O=kilovolt tests/CN=kilovolt test root" \
	-days 3650 -sha256 -out ca.pem \
	-addext "basicConstraints=critical,CA:TRUE" \
	-addext "keyUsage=critical,keyCertSign,cRLSign" \
	-addext "subjectKeyIdentifier=hash"

sign inter ca "/O=kilovolt tests/CN=kilovolt test intermediate" \
	"$(printf '%s\n' "basicConstraints=critical,CA:TRUE,pathlen:0" \
		"keyUsage=critical,keyCertSign,cRLSign" \
		"subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid:always")"
sign server inter "/O=kilovolt tests/CN=localhost" "$(leaf_ext "DNS:localhost,IP:127.0.0.1")"
sign wrong inter "/O=kilovolt tests/CN=wrong.example" "$(leaf_ext "DNS:wrong.example")"

key self.key
openssl req -x509 -new -key self.key -subj "/O=kilovolt tests/CN=localhost" \
	-days 3650 -sha256 -out self.pem \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1"

cat server.pem inter.pem >server-chain.pem
cat wrong.pem inter.pem >wrong-chain.pem
for f in $files; do
	mv -f "$f" "$out/$f"
done
