#!/bin/bash
# t_eventstream: the AWS event-stream decoder (worker/aws_eventstream.c) and
# the chunk-payload decoder (worker/aws_chunk.c) on streams made by AWS's own
# codec (@smithy/eventstream-codec, pinned in tests/sdk/package.json). First,
# the pinned codec must still make the checked-in tests/data/eventstream.bin
# byte for byte (and its expected decoding, eventstream.txt), so what
# tests/test_aws_eventstream checks without node is AWS's output. Then three
# streams made at random by the codec (69 messages each: every header type
# with random values, chunk events of random JSON, payloads up to 20 KB) go
# through test_aws_eventstream: cut whole, a byte at a time, at ~300 points
# and ~300 random ways, bits flipped, truncated.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

kv_sdk_setup || skip "AWS's codec is not available (node/npm missing or npm unreachable)"

if node "$KV_SDK/eventstream_frames.mjs" "$T/es.bin" "$T/es.txt" 2>"$T/node.err"; then
	check "AWS's codec makes the checked-in stream byte for byte" \
		cmp "$T/es.bin" "$top_srcdir/tests/data/eventstream.bin"
	check "the checked-in expected decoding is the script's" \
		cmp "$T/es.txt" "$top_srcdir/tests/data/eventstream.txt"
else
	cat "$T/node.err"
	fail "eventstream_frames.mjs runs"
fi

for seed in 1 2 3; do
	mkdir -p "$T/s$seed/tests/data"
	if ! node "$KV_SDK/eventstream_frames.mjs" "$T/s$seed/tests/data/eventstream.bin" \
		"$T/s$seed/tests/data/eventstream.txt" "$seed" 2>"$T/node.err"; then
		cat "$T/node.err"
		fail "eventstream_frames.mjs makes random stream $seed"
		continue
	fi
	if top_srcdir=$T/s$seed "$top_builddir/tests/test_aws_eventstream" >"$T/s$seed.out" 2>&1; then
		pass "random stream $seed ($(stat -c %s "$T/s$seed/tests/data/eventstream.bin") bytes)" \
			"decodes as AWS's codec made it: $(tail -n 1 "$T/s$seed.out")"
	else
		head -n 40 "$T/s$seed.out"
		fail "random stream $seed decodes as AWS's codec made it"
	fi
done

kv_finish
