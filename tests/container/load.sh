#!/bin/bash
# load.sh URL OUTDIR NSLOW NFAST: open NSLOW slow streams (few tokens, long
# pauses: many idle connections at once) and NFAST long fast streams (many
# tokens, no pause: bytes flowing) against the gateway, all concurrently, and
# check that every one ends with "data: [DONE]" after an HTTP 200.
# Prints one summary line; exit 0 when every stream completed.
set -u
url=$1 out=$2 nslow=$3 nfast=$4
# A slow stream lasts 30 s: starting 500 curls on a busy 2-core machine can
# take over 15 s, and the first must still be open when the last starts.
SLOW_TOKENS=${SLOW_TOKENS:-120} SLOW_DELAY_MS=${SLOW_DELAY_MS:-250}
FAST_TOKENS=${FAST_TOKENS:-20000} FAST_TOKEN_BYTES=${FAST_TOKEN_BYTES:-64}
MAX_TIME=${MAX_TIME:-240}
# max_tokens as the mock streams: a provider stops at the request's limit.
body() { echo '{"model":"gpt-4o-mini","stream":true,"max_tokens":'"$1"',"messages":[{"role":"user","content":"Say hello."}]}'; }
mkdir -p "$out" || exit 2

one() {	# one NAME KEY TOKENS DELAY_MS TOKEN_BYTES
	curl -sS -N --max-time "$MAX_TIME" -o "$out/$1.body" -w '%{http_code}' \
	    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
	    -H "x-mock-tokens: $3" -H "x-mock-delay-ms: $4" -H "x-mock-token-bytes: $5" \
	    --data "$(body "$3")" "$url/v1/chat/completions" > "$out/$1.code" 2> "$out/$1.err"
	echo $? > "$out/$1.rc"
}

# Slow ones first, so they are all open while the fast ones run.
for ((i = 0; i < nslow; i++)); do
	one "slow$i" sk-container-slow "$SLOW_TOKENS" "$SLOW_DELAY_MS" 5 &
done
for ((i = 0; i < nfast; i++)); do
	one "fast$i" sk-container-fast "$FAST_TOKENS" 0 "$FAST_TOKEN_BYTES" &
done
wait

ok=0 failed=0 bytes=0
for f in "$out"/*.rc; do
	n=${f%.rc}
	last=$(tail -c 200 "$n.body" 2> /dev/null | tr -d '\r' | sed '/^$/d' | tail -n 1)
	if [ "$(cat "$f")" = 0 ] && [ "$(cat "$n.code")" = 200 ] && [ "$last" = "data: [DONE]" ]; then
		ok=$((ok + 1))
	else
		failed=$((failed + 1))
		[ $failed -le 5 ] && echo "stream $(basename "$n"): curl rc $(cat "$f"), http $(cat "$n.code"), last line '$last' $(head -c 200 "$n.err")"
	fi
	bytes=$((bytes + $(stat -c %s "$n.body" 2> /dev/null || echo 0)))
done
echo "load: $ok of $((nslow + nfast)) streams completed with data: [DONE] ($failed failed), $((bytes / 1048576)) MiB relayed"
[ $failed = 0 ] && [ $ok = $((nslow + nfast)) ]
