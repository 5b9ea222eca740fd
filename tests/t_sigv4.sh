#!/bin/bash
# t_sigv4: kilovolt's SigV4 signer (common/sigv4.c, through tests/sigv4_sign)
# against AWS's own (@smithy/signature-v4, pinned in tests/sdk/package.json,
# the signer of the AWS SDK for JavaScript): tests/sdk/sigv4_check.mjs
# generates 4,000 requests from two seeds (Bedrock model ids and
# percent-encoded inference-profile ARNs in the path, the control plane's
# query, dot segments, reserved and UTF-8 bytes, repeated parameters, header
# names in any case, blank runs in values, headers AWS never signs, session
# tokens, x-amz-content-sha256 on and off, dates to 2099) and both must give
# the same X-Amz-Date and Authorization for every one.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

kv_sdk_setup || skip "AWS's signer is not available (node/npm missing or npm unreachable)"

for seed in 1 2; do
	timeout 300 node "$KV_SDK/sigv4_check.mjs" "$top_builddir/tests/sigv4_sign" 2000 "$seed" \
		>"$T/seed$seed.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "seed $seed: ${line#ok - }" ;;
		"FAIL - "*) fail "seed $seed: ${line#FAIL - }" ;;
		"  "*) echo "$line" ;;
		esac
	done <"$T/seed$seed.out"
	summary=$(tail -n 1 "$T/seed$seed.out")
	if [ $rc != 0 ] || [ "$summary" != "2000 passed, 0 failed" ]; then
		fail "seed $seed: sigv4_check.mjs exits 0 with every request alike (exit $rc: $summary)"
	fi
done

kv_finish
