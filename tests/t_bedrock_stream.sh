#!/bin/bash
# t_bedrock_stream: Bedrock's event streams through kilovolt (issue 35), the
# C mock serving streams AWS's own codec made (tests/data/bedrock_*.bin, from
# tests/sdk/bedrock_streams.mjs; when node is here, the pinned codec must
# still make them byte for byte). For InvokeModelWithResponseStream (with
# cache reads and writes, and with invocation metrics that differ from the
# Anthropic events' counts) and ConverseStream: the client gets the stream
# byte for byte, the key's spent_nusd is the usage priced exactly at the
# path's model's price (not the Anthropic model the events name), and
# reserved_nusd is back to 0. An exception message, a body that ends
# inside a message and a corrupted message are cuts, charged as README
# "How cuts, cancels and timeouts are charged" says: the exact input the
# stream gave (cache included) plus the reservation's output, marked
# estimated, KV0436 in the log; the client still gets the bytes as sent.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"

D=$top_srcdir/tests/data
if kv_sdk_setup >/dev/null 2>&1; then
	mkdir -p "$T/made"
	if node "$KV_SDK/bedrock_streams.mjs" "$T/made" 2>"$T/node.err"; then
		for f in invoke metrics converse exception; do
			check "AWS's codec makes bedrock_$f.bin byte for byte" cmp "$T/made/bedrock_$f.bin" "$D/bedrock_$f.bin"
			check "... and its usage line" cmp "$T/made/bedrock_$f.txt" "$D/bedrock_$f.txt"
		done
	else
		cat "$T/node.err"
		fail "bedrock_streams.mjs runs"
	fi
fi

kv_start_mock
MODEL=global.anthropic.claude-sonnet-4-5-20250929-v1:0
{
	cat <<EOF
[server]
request_log = $T/requests.log

[upstream br]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$MOCK_PORT
control_url = http://127.0.0.1:$MOCK_PORT

; cheaper than [price claude-sonnet-4*], the Anthropic model the events name
[price global.anthropic.claude-sonnet-4-5*]
input = 2.00
output = 10.00
cached_input = 0.20
cache_write = 2.50
EOF
	for k in invoke metrics converse exception truncated corrupt; do
		printf '\n[key %s]\nkey = kvk-bedrock-stream-%s\n' "$k" "$k"
	done
} | kv_write_config
# whatever signs the bedrock upstream's requests finds credentials here
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true
kv_start

key_field() { kv_ctl keys --json | jq -r --arg id "$(id_of "kvk-bedrock-stream-$1")" ".keys[] | select(.id == \$id) | .$2"; }
INVOKE='{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'
CONVERSE='{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":64}}'
# stream NAME PATH-TAIL BODY FILE [CUT]: the stream FILE through kilovolt for
# key NAME; the body the client got in $T/NAME.out
stream() {
	local name=$1 tail=$2 body=$3 file=$4 cut=${5:-}
	kv_curl "/model/$MODEL/$tail" -o "$T/$name.out" -w '%{http_code}' \
		-H "Authorization: Bearer kvk-bedrock-stream-$name" -H 'Content-Type: application/json' \
		-H "x-mock-eventstream: $file" ${cut:+-H "x-mock-eventstream-cut: $cut"} -d "$body"
}
# nusd IN OUT READ WRITE: the usage priced, per token: 2,000, 10,000, 200, 2,500 nUSD
nusd() { echo $(($1 * 2000 + $2 * 10000 + $3 * 200 + $4 * 2500)); }
settled() {	# settled NAME WANT DESC
	check_eq "$1: spent_nusd is $3" "$(key_field "$1" spent_nusd)" "$2"
	check_eq "$1: reserved_nusd back to 0" "$(key_field "$1" reserved_nusd)" 0
}

# ---- whole streams: usage exact -----------------------------------------
check_eq "invoke: 200" "$(stream invoke invoke-with-response-stream "$INVOKE" "$D/bedrock_invoke.bin")" 200
check "invoke: the client got the stream byte for byte" cmp "$T/invoke.out" "$D/bedrock_invoke.bin"
settled invoke "$(nusd 25 42 1200 300)" "25 in, 42 out, 1,200 cache reads, 300 writes at the path's price"
check_eq "invoke: not estimated" "$(key_field invoke estimated_requests)" 0

check_eq "metrics: 200" "$(stream metrics invoke-with-response-stream "$INVOKE" "$D/bedrock_metrics.bin")" 200
check "metrics: byte for byte" cmp "$T/metrics.out" "$D/bedrock_metrics.bin"
settled metrics "$(nusd 26 43 1201 301)" "the invocation metrics' (AWS's bill), not the events' counts"

check_eq "converse: 200" "$(stream converse converse-stream "$CONVERSE" "$D/bedrock_converse.bin")" 200
check "converse: byte for byte" cmp "$T/converse.out" "$D/bedrock_converse.bin"
settled converse "$(nusd 30 17 2048 512)" "the metadata event's usage, cache included"
check_eq "converse: not estimated" "$(key_field converse estimated_requests)" 0
kv_wait_for 5 test "$(grep -c . "$T/requests.log")" -ge 3
check_eq "the request log names the path's model" \
	"$(jq -r 'select(.status == 200) | .model' "$T/requests.log" | sort -u)" "$MODEL"

# ---- cuts: the exact input, the reservation's output (64) ---------------
CUT=$(nusd 25 64 1200 300)
check_eq "exception: 200" "$(stream exception invoke-with-response-stream "$INVOKE" "$D/bedrock_exception.bin")" 200
check "exception: byte for byte" cmp "$T/exception.out" "$D/bedrock_exception.bin"
settled exception "$CUT" "a cut's: message_start's input and cache, max_tokens of output"
check_eq "exception: estimated" "$(key_field exception estimated_requests)" 1

check_eq "truncated: 200" "$(stream truncated invoke-with-response-stream "$INVOKE" "$D/bedrock_invoke.bin" 1400)" 200
check "truncated: the client got the 1,400 bytes sent" cmp "$T/truncated.out" <(head -c 1400 "$D/bedrock_invoke.bin")
settled truncated "$CUT" "a cut's (the body ended inside a message)"

cp "$D/bedrock_invoke.bin" "$T/corrupt.bin"
b=$(od -An -tu1 -j2440 -N1 "$T/corrupt.bin")
printf "\\x$(printf %02x $((b ^ 1)))" | dd of="$T/corrupt.bin" bs=1 seek=2440 conv=notrunc status=none
check "corrupt: one bit flipped" test "$(cmp -l "$T/corrupt.bin" "$D/bedrock_invoke.bin" | wc -l)" = 1
check_eq "corrupt: 200" "$(stream corrupt invoke-with-response-stream "$INVOKE" "$T/corrupt.bin")" 200
check "corrupt: relayed as sent" cmp "$T/corrupt.out" "$T/corrupt.bin"
settled corrupt "$CUT" "a cut's (message_stop's CRC fails: its metrics are void)"

kv_wait_for 5 test "$(grep -c KV0436 "$KV_LOG")" -ge 3
check "KV0436 names the exception" grep -q "KV0436.*an exception message modelStreamErrorException" "$KV_LOG"
check "KV0436 names the truncation" grep -q "KV0436.*the body ended inside a message" "$KV_LOG"
check "KV0436 names the bad CRC" grep -q "KV0436.*CRC" "$KV_LOG"
check_eq "KV0436 once a cut stream" "$(grep -c KV0436 "$KV_LOG")" 3

kv_finish
