#!/bin/bash
# bedrock_stream_mem.sh BUILDDIR [N] [KINDS]: what a Bedrock event stream costs
# kilovoltd beside an OpenAI SSE stream. N (default 500) paced streams of
# each kind through kilovoltd and the C mock (tests/lib.sh's set-up): OpenAI
# chat completions of 26 events, then Bedrock InvokeModelWithResponseStream
# answers (tests/data/bedrock_invoke.bin, 8 messages in 26 pieces), 600 ms
# between events, all N in flight at once; prints the PSS of the master and
# workers (bench/pss.sh) idle before each kind and five samples 6 s into it,
# and each kind's growth a stream (median sample minus idle, over N). KINDS
# (default "openai bedrock") may also name gemini (Gemini API
# streamGenerateContent?alt=sse, 26 chunks each with its cumulative
# usageMetadata, tests/mock_gemini.c; issue 38) and gemini-array (the same
# chunks as one JSON array, without alt=sse). On demand, not a test.
set -u
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [N] [KINDS]" >&2; exit 2; }
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$(cd "$1" && pwd)
N=${2:-500}
KINDS=${3:-openai bedrock}
export top_srcdir top_builddir
. "$top_srcdir/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"
ulimit -n $((4 * N + 1000)) || skip "cannot raise the descriptor limit"
PSS=$top_srcdir/bench/pss.sh
MODEL=us.anthropic.claude-sonnet-4-5-20250929-v1:0

kv_start_mock
kv_write_config <<EOF
[upstream br]
provider = bedrock
region = us-east-1
url = http://127.0.0.1:$MOCK_PORT
control_url = http://127.0.0.1:$MOCK_PORT

[upstream gm]
provider = gemini
url = http://127.0.0.1:$MOCK_PORT
api_key = bench-gemini-upstream-key

[key bench]
key = kvk-bench-bedrock-mem
budget = 1000

[price gemini-2.5-flash]
input = 0.3
output = 2.5
max_output = 64

[price us.anthropic.claude-sonnet-4-5*]
input = 3
output = 15
cached_input = 0.3
cache_write = 3.75
EOF
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_EC2_METADATA_DISABLED=true
kv_start

# streams KIND COUNT: COUNT paced streams of KIND (openai, bedrock), 50 a
# curl process, in the background; PIDS holds the curls.
streams() {
	local kind=$1 count=$2 per=50 j k url args
	PIDS=()
	if [ "$kind" = gemini ] || [ "$kind" = gemini-array ]; then
		url="$KV_URL/v1beta/models/gemini-2.5-flash:streamGenerateContent"
		[ "$kind" = gemini ] && url="$url?alt=sse"
		args=(-H "x-goog-api-key: kvk-bench-bedrock-mem" -H "x-mock-tokens: 26"
			-d '{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":64,"thinkingConfig":{"thinkingBudget":0}}}')
	elif [ "$kind" = bedrock ]; then
		url=$KV_URL/model/$MODEL/invoke-with-response-stream
		args=(-H "Authorization: Bearer kvk-bench-bedrock-mem"
			-H "x-mock-eventstream: $top_srcdir/tests/data/bedrock_invoke.bin"
			-d '{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}')
	else
		url=$KV_URL/v1/chat/completions
		args=(-H "Authorization: Bearer sk-bench-openai-mem" -H "x-mock-tokens: 26" -H "x-mock-token-bytes: 60"
			-d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}')
	fi
	for ((j = 0; j * per < count; j++)); do
		k=$((count - j * per < per ? count - j * per : per))
		for ((i = 0; i < k; i++)); do
			echo "url = \"$url\""
			echo 'output = "/dev/null"'
		done >"$T/$kind.cfg.$j"
		curl -s --no-progress-meter -Z --parallel-max "$per" --parallel-immediate -m 300 \
			-K "$T/$kind.cfg.$j" -w '%{http_code} %{size_download}\n' \
			-H 'Content-Type: application/json' -H 'x-mock-delay-ms: 600' "${args[@]}" \
			>"$T/$kind.res.$j" 2>/dev/null &
		PIDS+=($!)
	done
}

measure() {	# measure KIND
	local kind=$1 idle open=() kb=() p med
	sleep 2
	idle=$("$PSS" "$KV_PID")
	streams "$kind" "$N"
	sleep 6
	for i in 1 2 3 4 5; do
		open+=($(ss -Htn state established "( sport = :$KV_PORT )" | wc -l))
		kb+=($("$PSS" "$KV_PID"))
		sleep 0.3
	done
	for p in "${PIDS[@]}"; do wait "$p"; done
	med=$(printf '%s\n' "${kb[@]}" | sort -n | sed -n 3p)
	echo "$kind: idle $idle kB; $N in flight (client connections: ${open[*]}): ${kb[*]} kB;" \
		"$(awk -v a="$med" -v b="$idle" -v n="$N" 'BEGIN { printf "%.2f", (a - b) / n }') KiB a stream;" \
		"answers: $(sort "$T"/$kind.res.* | uniq -c | tr -s ' ' | tr '\n' ';')"
}

for kind in $KINDS; do	# a warm-up of each first
	streams "$kind" 20
	for p in "${PIDS[@]}"; do wait "$p"; done
done
for kind in $KINDS; do
	measure "$kind"
done
kv_stop
kv_kill_tracked 5
rm -rf "$T"
