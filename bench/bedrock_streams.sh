#!/bin/bash
# bench/bedrock_streams.sh BUILDDIR: a Bedrock stream's memory beside an
# OpenAI stream's (issue 35), by scenario 3's method (bench/run.sh).
#
# One bench/benchmock plays both providers, paced the same: N concurrent
# streams of T one-token events D ms apart (2N in all, two on each client
# connection, as scenario 3), through a fresh kilovolt (2 workers, full
# accounting) with an OpenAI upstream and a bedrock upstream (provider =
# bedrock, SigV4 with static keys from the environment) at the mock. Three
# kinds: openai (chat completions SSE, sk- key as in scenario 3), invoke
# (InvokeModelWithResponseStream, the kilovolt key as a bearer token, as
# Claude Code and the AWS SDK send it) and converse (ConverseStream); each at
# T events and at 10 T (memory flat in stream length), kinds interleaved in
# each round. bench/pss samples the PSS of kilovolt's tree every 100 ms;
# KiB a stream is (peak - idle) / N. Each run is also checked: every stream
# 200 and complete (bench/loadgen), no cut (KV0436) in kilovolt's log, the
# ledger's requests none estimated, reserved back to 0.
#
# Environment: BR_STREAMS (500), BR_TOKENS (100), BR_DELAY_MS (20),
# BR_LONG (10: the long runs' factor), BR_ROUNDS (3), BR_KINDS ("openai
# invoke converse"), KEEP=1 keeps the work dir. Prints one line a run, then
# a markdown table (each kind and length: its rounds' idle and peak PSS and
# KiB a stream) on stdout; exit 1 when a run failed a check.
set -u
B=$(cd "${1:?usage: bedrock_streams.sh BUILDDIR}" && pwd)
N=${BR_STREAMS:-500}
TOK=${BR_TOKENS:-100}
DELAY=${BR_DELAY_MS:-20}
LONG=${BR_LONG:-10}
ROUNDS=${BR_ROUNDS:-3}
KINDS=${BR_KINDS:-openai invoke converse}
W=$(mktemp -d "${TMPDIR:-/tmp}/kvbrbench.XXXXXX") || exit 1
BM_PID= KV_PID= PSS_PID= FAILED=0
MODEL=us.anthropic.claude-sonnet-4-5-20250929-v1:0
KEY=kvk-bench-bedrock-0123456789

export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true	# no credential look-up off this machine

log() { echo "bedrock_streams: $*" >&2; }
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cleanup() {
	bench_stop "$PSS_PID"
	bench_stop "$KV_PID"
	bench_stop "$BM_PID"
	if [ "${KEEP:-0}" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=65536
[ "$hard" -gt 65536 ] && hard=65536
ulimit -n "$hard"

j() { [ -s "$1" ] && jq -r "$2 // empty" "$1" 2>/dev/null; }
free_port() { "$B/tests/mock_upstream" --free-port; }

# write_config: bench/run.sh's kilovolt, plus the bedrock upstream and the
# key it admits (a bedrock upstream takes configured keys only).
write_config() {
	PORT=$(free_port)
	{ bench_kv_server "$PORT" 2 1024 "127.0.0.1:$(free_port)"
	printf 'client_timeout = 60\nupstream_timeout = 600\n'
	bench_kv_budget
	cat <<INI

[upstream openai]
url = http://127.0.0.1:$BM_PORT
paths = /v1/chat/completions /v1/completions /v1/embeddings /v1/responses /v1/models

[upstream br]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$BM_PORT
control_url = http://127.0.0.1:$BM_PORT

[key bench]
key = $KEY

[price gpt-4o-mini*]
input = 0.15
output = 0.60
cached_input = 0.075

[price us.anthropic.claude-sonnet-4-5*]
input = 3.30
output = 16.50

[price default]
input = 1.00
output = 3.00
INI
	} >"$W/kilovolt.ini"
	rm -f "$W/ledger"
}

# load_args KIND TOKENS: the loadgen flags (LOAD array).
load_args() {
	local path=/model/${MODEL/:/%3A}
	LOAD=(-c "$N" -n $((2 * N)) -t $((60 + 4 * $2 * DELAY / 1000)) -e $(($2 * 100)) -m POST
		-H 'Content-Type: application/json' -H "x-mock-tokens: $2" -H "x-mock-delay-ms: $DELAY")
	case $1 in
	openai) LOAD+=(-s -u /v1/chat/completions -H 'Authorization: Bearer sk-bench-0123456789'
		-b '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Write a long story."}]}') ;;
	invoke) LOAD+=(-u "$path/invoke-with-response-stream" -H "Authorization: Bearer $KEY"
		-b '{"anthropic_version":"bedrock-2023-05-31","max_tokens":2048,"messages":[{"role":"user","content":"Write a long story."}]}') ;;
	converse) LOAD+=(-u "$path/converse-stream" -H "Authorization: Bearer $KEY"
		-b '{"messages":[{"role":"user","content":[{"text":"Write a long story."}]}],"inferenceConfig":{"maxTokens":2048}}') ;;
	esac
}

# run_one KIND TOKENS ROUND: writes $W/KIND-TOKENS.rROUND.{load,pss}.json
# and prints its line.
run_one() {
	local out=$W/$1-$2.r$3 rc cuts reserved
	write_config
	"$B/kilovoltd" -c "$W/kilovolt.ini" </dev/null >"$W/kv.log" 2>&1 &
	KV_PID=$!
	if ! bench_wait_port "$PORT" "$KV_PID"; then
		log "kilovolt did not start:"; tail -n 20 "$W/kv.log" >&2; exit 1
	fi
	sleep 1	# settle: idle is measured after start-up, before load
	"$B/bench/pss" "$KV_PID" >"$out.pss.json" 2>/dev/null &
	PSS_PID=$!
	sleep 0.5
	kill -USR1 "$PSS_PID"
	load_args "$1" "$2"
	timeout 900 "$B/bench/loadgen" -p "$PORT" -l "$1" "${LOAD[@]}" >"$out.load.json" 2>"$out.load.err"
	rc=$?
	bench_stop "$PSS_PID"; PSS_PID=
	sleep 0.5	# the last settles reach the ledger
	"$B/kvctl" -l "$W/ledger" keys --json >"$out.keys.json" 2>/dev/null
	bench_stop "$KV_PID"; KV_PID=
	cuts=$(grep -c KV0436 "$W/kv.log")
	reserved=$(jq '[.. | .reserved_nusd? // empty] | add' "$out.keys.json" 2>/dev/null)
	estimated=$(jq '[.. | .estimated_requests? // empty] | add' "$out.keys.json" 2>/dev/null)
	[ "$rc" = 0 ] && [ "$cuts" = 0 ] && [ "$reserved" = 0 ] && [ "$estimated" = 0 ] || { FAILED=1; cat "$out.load.err" >&2; }
	printf '%s %s round %s: idle %s KiB, peak %s KiB, %s KiB a stream, streams %s, errors %s, cuts %s, estimated %s, reserved after %s, CPU %s s\n' \
		"$1" "$2" "$3" "$(j "$out.pss.json" .idle_kb)" "$(j "$out.pss.json" .peak_kb)" \
		"$(awk -v p="$(j "$out.pss.json" .peak_kb)" -v i="$(j "$out.pss.json" .idle_kb)" -v n="$N" \
			'BEGIN { printf "%.2f", (p - i) / n }')" \
		"$(j "$out.load.json" .requests)" "$(j "$out.load.json" .errors)" "$cuts" "$estimated" "$reserved" \
		"$(j "$out.pss.json" .cpu_s)"
}

# table: a row for each kind and length, its rounds side by side.
table() {
	local k t r f rounds
	echo "| stream | events | idle PSS KiB | peak PSS KiB | KiB a stream | CPU s |"
	echo "|---|---:|---:|---:|---:|---:|"
	for t in "$TOK" $((TOK * LONG)); do
		for k in $KINDS; do
			rounds=$(for r in $(seq 1 "$ROUNDS"); do
				f=$W/$k-$t.r$r.pss.json
				printf '%s %s %s\n' "$(j "$f" .idle_kb)" "$(j "$f" .peak_kb)" "$(j "$f" .cpu_s)"
			done)
			echo "$rounds" | awk -v k="$k" -v t="$t" -v n="$N" '
				{ i = i s $1; p = p s $2; g = g s sprintf("%.2f", ($2 - $1) / n); c = c s $3; s = " / " }
				END { printf "| %s | %d | %s | %s | %s | %s |\n", k, t + 0, i, p, g, c }'
		done
	done
}

bench_spawn bm BM_PID BM_PORT "$B/bench/benchmock" || exit 1
for r in $(seq 1 "$ROUNDS"); do
	for t in "$TOK" $((TOK * LONG)); do
		for k in $KINDS; do
			run_one "$k" "$t" "$r"
		done
	done
done
echo
table
exit $FAILED
