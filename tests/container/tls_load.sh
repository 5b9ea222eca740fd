#!/bin/bash
# tls_load.sh URL OUTDIR N TOKENS DELAY_MS: N paced streams at once (TOKENS
# events DELAY_MS apart) against the gateway, from N / 50 curl processes of
# 50 parallel transfers each (one process per stream would cost the host
# more than the gateway). Each transfer is one of: completed (200, curl
# exit 0, the full length: every completed one the same size, ending in
# data: [DONE]), refused (503 with Retry-After, curl exit 0), or anything
# else, which is a failure. Prints "tls-load: N offered, C completed,
# R refused, F failed" and exits 0 when F is 0.
set -u
url=$1 out=$2 n=$3 tokens=$4 delay=$5
per=50
mkdir -p "$out" || exit 2
# max_tokens bounds each stream's reservation: with none, the bundled file
# reserves gpt-4o-mini's max_output (16384 tokens, about $0.01), and the
# key's $2 would admit only some 200 of these streams at once.
body='{"model":"gpt-4o-mini","stream":true,"max_tokens":'"$tokens"',"messages":[{"role":"user","content":"Say hello."}]}'
pids=()
for ((j = 0; j * per < n; j++)); do
	for ((i = 0; i < per && j * per + i < n; i++)); do
		echo "url = \"$url/v1/chat/completions\""
		echo "output = \"$out/body.$((j * per + i))\""
	done > "$out/cfg.$j"
	curl -sS -Z --parallel-max $per --parallel-immediate --max-time 240 -K "$out/cfg.$j" \
	    -w '%{http_code} %{size_download} %{exitcode} %header{retry-after}\n' \
	    -H 'Authorization: Bearer sk-container-tls' -H 'Content-Type: application/json' \
	    -H "x-mock-tokens: $tokens" -H "x-mock-delay-ms: $delay" \
	    --data "$body" > "$out/res.$j" 2> "$out/err.$j" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

res=$(cat "$out"/res.*)
done_ok=0
for f in "$out"/body.*; do
	tail -c 200 "$f" 2> /dev/null | tr -d '\r' | grep -qx 'data: \[DONE\]' && done_ok=$((done_ok + 1))
done
completed=$(echo "$res" | awk '$1 == 200 && $3 == 0' | wc -l)
refused=$(echo "$res" | awk '$1 == 503 && $3 == 0 && $4 != ""' | wc -l)
sizes=$(echo "$res" | awk '$1 == 200 && $3 == 0 { print $2 }' | sort -u | wc -l)
failed=$((n - completed - refused))
[ "$completed" -gt 0 ] && [ "$sizes" != 1 ] && { echo "tls-load: completed streams differ in length"; failed=$((failed + 1)); }
[ "$done_ok" != "$completed" ] && { echo "tls-load: $done_ok bodies end in [DONE], $completed completed"; failed=$((failed + 1)); }
echo "$res" | awk '!($1 == 200 && $3 == 0) && !($1 == 503 && $3 == 0)' | sort | uniq -c | head -n 5 |
    sed 's/^/tls-load: other: /'
echo "tls-load: $n offered, $completed completed, $refused refused, $failed failed"
[ "$failed" = 0 ]
