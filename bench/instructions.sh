#!/bin/bash
# bench/instructions.sh: instructions per request, counted by valgrind's
# callgrind, of kilovolt without and with rate limits (issue 13). A count
# of instructions does not depend on how busy the shared machine is, which
# the wall-clock scenarios of bench/run.sh do.
#
# Method: kilovoltd with one worker runs under callgrind against
# bench/benchmock (scenario 1's small chat completion), twice per mode:
# bench/loadgen sends WARM requests in one run and WARM + N in the other,
# one at a time on one keep-alive connection (how requests batch in an
# event-loop turn depends on timing; one at a time it does not), then the
# daemon stops and callgrind writes the worker's total. What still varies
# is the worker's once-a-second tick (malloc_trim and pool upkeep) over a
# run's length, a few hundred instructions a request at N = 3000: the
# default N is 10000. The difference over N is the worker's cost per request:
# parsing, admission (budget, and with limits the GCRA words of rpm and
# tpm; with a budget tree every node's hold), relaying, usage scanning,
# settling, logging. (callgrind_control
# cannot reach the worker: kilovoltd makes itself non-dumpable, which
# forbids the ptrace vgdb needs.) The master's share is left out: it does
# no per-request work.
# Modes: "plain" (no limits), "limits" ([budget] rpm and tpm of 4e9 a
# minute: every request takes both words and settles tpm, none refused),
# "haproxy" (HAProxy with bench/haproxy.cfg.in, one thread instead of two,
# the same load: the peer's own instructions per request, counted the same
# way; it parses and relays but keeps no accounts and scans no body),
# "azure" (plain's request as Azure OpenAI's: POST
# /openai/deployments/mini/chat/completions?api-version=... with the key in
# api-key, to a provider = azure upstream mapping the deployment to
# gpt-4o-mini: the deployment's lookup and Azure's header; issue 38; the
# key in a [key], as an upstream with api_key takes only those: compare
# with "key"),
# "gemini" (the same question as the Gemini API's: POST
# /v1beta/models/gemini-2.5-flash:generateContent with the key in
# x-goog-api-key and maxOutputTokens 16, to a provider = gemini upstream
# with api_key, answered with the same five tokens in usageMetadata; issue
# 38; the key in a [key]: compare with "key"),
# "vertex" (gemini's request as Vertex AI's: POST
# /v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent
# with the key as a bearer token, to a provider = vertex upstream whose
# api_key stands for Google's access token (no token fetch): the Vertex
# path's parse and its project and location put in; issue 38; compare
# with "gemini"),
# "tls" and "haproxy-tls" (plain and haproxy with the upstream over TLS
# 1.3 to bench/benchmock -t, the chain of tests/gen_certs.sh verified,
# connections pooled: the record layer's share of a request).
#
# Run from the build directory (kilovoltd, bench/benchmock, bench/loadgen
# built there). Environment: top_srcdir, top_builddir, N (10000), WARM
# (1000), MODES ("plain limits"). Prints one line per mode and a ratio.
set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
N=${N:-10000}
WARM=${WARM:-1000}
MODES=${MODES:-plain limits}
KVD=$top_builddir/kilovoltd
BM=$top_builddir/bench/benchmock
LG=$top_builddir/bench/loadgen
W=$(mktemp -d "${TMPDIR:-/tmp}/kvinstr.XXXXXX") || exit 1
BM_PID= BM_TLS_PID= KV_PID=

log() { echo "instructions: $*" >&2; }
. "$top_srcdir/bench/lib.sh"
stop() { bench_stop "$1" 300; }	# valgrind is slow to exit
cleanup() { stop "$KV_PID"; stop "$BM_PID"; stop "$BM_TLS_PID"; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

for f in "$KVD" "$BM" "$LG"; do [ -x "$f" ] || { echo "$f is not built" >&2; exit 1; }; done
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
	{ echo "valgrind (callgrind) is needed" >&2; exit 1; }
case " $MODES " in
*" haproxy "*|*" haproxy-tls "*) command -v haproxy >/dev/null || { echo "haproxy is needed for MODES=haproxy" >&2; exit 1; } ;;
esac

bench_spawn bm BM_PID BM_PORT "$BM" || exit 1
BM_TLS_PORT=
case " $MODES " in
*" tls "*|*" haproxy-tls "*)
	bash "$top_srcdir/tests/gen_certs.sh" "$W/certs" >"$W/certs.log" 2>&1 ||
		{ echo "gen_certs.sh failed" >&2; cat "$W/certs.log" >&2; exit 1; }
	bench_spawn bm-tls BM_TLS_PID BM_TLS_PORT "$BM" -t "$W/certs/server-chain.pem" \
		"$W/certs/server.key" || exit 1 ;;
esac
BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":16}'
LOAD=(-m POST -u /v1/chat/completions -H 'Content-Type: application/json'
	-H 'Authorization: Bearer sk-bench-0123456789' -c 1 -t 60 -b "$BODY")
GM_BODY='{"contents":[{"role":"user","parts":[{"text":"Say hello in five words."}]}],"generationConfig":{"maxOutputTokens":16,"thinkingConfig":{"thinkingBudget":0}}}'
LOAD_GEMINI=(-m POST -u '/v1beta/models/gemini-2.5-flash:generateContent'
	-H 'Content-Type: application/json' -H 'x-goog-api-key: sk-bench-0123456789' -c 1 -t 60 -b "$GM_BODY")
LOAD_VERTEX=(-m POST -u '/v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent'
	-H 'Content-Type: application/json' -H 'Authorization: Bearer sk-bench-0123456789' -c 1 -t 60 -b "$GM_BODY")
LOAD_AZURE=(-m POST -u '/openai/deployments/mini/chat/completions?api-version=2024-10-21'
	-H 'Content-Type: application/json' -H 'api-key: sk-bench-0123456789' -c 1 -t 60 -b "$BODY")

# Modes "key" (the bench key named in a [key], no team: depth 1),
# "tree4" (that key under team t1, in t2, in t3, the org: depth 4, the org
# with a model_budget that matches nothing): the budget tree's cost per
# request (issue 36); "tree4tags" (tree4, each request tagged
# "x-kilovolt-tags: alpha, beta", two [tag]s with budgets, beta with a
# model_budget that matches nothing): the cost of two tags.
tree_sections() {	# tree_sections MODE
	case $1 in key|tree4|tree4tags|azure|gemini|vertex) ;; *) return 0 ;; esac
	printf '[key bench]\nkey = sk-bench-0123456789\n'
	case $1 in key|azure|gemini|vertex) return 0 ;; esac
	printf 'team = t1\n\n[team t3]\nbudget = 100000\nmodel_budget = claude-*:5\n'
	printf '\n[team t2]\nparent = t3\nbudget = 100000\n'
	printf '\n[team t1]\nparent = t2\nbudget = 100000\n'
	[ "$1" = tree4tags ] || return 0
	printf '\n[tag alpha]\nbudget = 100000\n'
	printf '\n[tag beta]\nbudget = 100000\nmodel_budget = claude-*:5\n'
}

write_config() {	# write_config MODE PORT
	{ bench_kv_server "$2" 1 64 off
	bench_kv_budget
	[ "$1" = limits ] && printf 'rpm = 4000000000\ntpm = 4000000000\n'
	cat <<EOF

$(if [ "$1" = azure ]; then
	printf '[upstream azure]\nprovider = azure\napi_key = sk-azure-resource-key\n'
	printf 'deployments = mini:gpt-4o-mini\n'
elif [ "$1" = gemini ]; then
	printf '[upstream gemini]\nprovider = gemini\napi_key = bench-gemini-key\n'
elif [ "$1" = vertex ]; then
	printf '[upstream vertex]\nprovider = vertex\nproject = p\nlocation = us-east5\napi_key = bench-vertex-token\n'
else
	echo '[upstream openai]'
fi)
$(if [ "$1" = tls ]; then
	printf 'url = https://localhost:%s\nca_file = %s\n' "$BM_TLS_PORT" "$W/certs/ca.pem"
else
	echo "url = http://127.0.0.1:$BM_PORT"
fi)
$([ "$1" = azure ] || [ "$1" = gemini ] || [ "$1" = vertex ] || echo 'paths = /v1/chat/completions')

[price gpt-4o-mini*]
input = 0.15
output = 0.60

[price gemini-2.5-flash]
input = 0.30
output = 2.50
$(tree_sections "$1")
EOF
	} >"$W/kv.ini"
	rm -f "$W/ledger"
}

# HAProxy as bench/run.sh runs it, but one thread: its process is the
# worker (callgrind runs threads one at a time anyway).
write_haproxy() {	# write_haproxy MODE PORT
	local up=$BM_PORT tls=
	if [ "$1" = haproxy-tls ]; then
		up=$BM_TLS_PORT
		tls=" ssl verify required ca-file $W/certs/ca.pem sni str(localhost) verifyhost localhost"
	fi
	sed -e "s|@PORT@|$2|g" -e "s|@UPSTREAM_PORT@|$up|g" -e "s|@UPSTREAM_TLS@|$tls|g" \
	    -e "s|@MAXCONN@|1024|g" -e "s|nbthread 2|nbthread 1|" \
	    "$top_srcdir/bench/haproxy.cfg.in" >"$W/haproxy.cfg"
}

# The worker: kilovoltd's child (the master forks it; valgrind follows).
worker_pid() { pgrep -P "$KV_PID" | head -n 1; }

# ir FILE: the "summary:" line of a callgrind output file (instructions).
ir() { awk '/^summary:/ { print $2; exit }' "$1"; }

# run MODE COUNT: kilovoltd under callgrind answers COUNT requests and stops;
# prints the worker's instructions over its whole life.
run() {
	local mode=$1 count=$2 port wpid i
	port=$("$top_builddir/tests/mock_upstream" --free-port)
	local cmd=("$KVD" -c "$W/kv.ini")
	if [ "${mode#haproxy}" != "$mode" ]; then
		write_haproxy "$mode" "$port"
		cmd=(haproxy -db -f "$W/haproxy.cfg")
	else
		write_config "$mode" "$port"
	fi
	rm -f "$W"/cg.*
	(cd "$W" && exec valgrind --tool=callgrind --callgrind-out-file="$W/cg.%p" \
		"${cmd[@]}") </dev/null >"$W/kv.$mode.$count.log" 2>&1 &
	KV_PID=$!
	bench_wait_port "$port" "$KV_PID" 600 || { cat "$W/kv.$mode.$count.log" >&2; return 1; }
	local load=("${LOAD[@]}") tags=()
	[ "$mode" = azure ] && load=("${LOAD_AZURE[@]}")
	[ "$mode" = gemini ] && load=("${LOAD_GEMINI[@]}")
	[ "$mode" = vertex ] && load=("${LOAD_VERTEX[@]}")
	[ "$mode" = tree4tags ] && tags=(-H 'x-kilovolt-tags: alpha, beta')
	"$LG" -p "$port" "${load[@]}" "${tags[@]}" -n "$count" -l "$mode" >/dev/null \
		2>"$W/load.$mode.$count.err" ||
		{ cat "$W/load.$mode.$count.err" >&2; return 1; }
	wpid=$KV_PID
	[ "${mode#haproxy}" != "$mode" ] || wpid=$(worker_pid)	# forked after the master listens: looked up now
	echo "  $mode, $count requests: $(tail -n 1 "$W/load.$mode.$count.err")" >&2
	stop "$KV_PID"
	KV_PID=
	[ -s "$W/cg.$wpid" ] || { echo "no callgrind output of worker $wpid" >&2; return 1; }
	cp "$W/cg.$wpid" "$W/callgrind.$mode.$count"	# for callgrind_annotate (KEEP=1)
	ir "$W/cg.$wpid"
}

# A worker's instructions over its life are start-up + count x per request
# (+ its 1 s ticks, a few thousand instructions each): the difference of two
# counts takes start-up and most ticks out.
declare -A PER
for mode in $MODES; do
	a=$(run "$mode" "$WARM") || exit 1
	b=$(run "$mode" $((WARM + N))) || exit 1
	PER[$mode]=$(awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / n }')
	echo "$mode: worker $a instructions for $WARM requests, $b for $((WARM + N)):" \
		"${PER[$mode]} per request"
done
if [ -n "${PER[plain]:-}" ] && [ -n "${PER[limits]:-}" ]; then
	awk -v a="${PER[limits]}" -v b="${PER[plain]}" 'BEGIN {
		printf "limits / plain: x%.4f (%+d instructions per request, %+.2f %%)\n", a / b, a - b, (a - b) * 100 / b }'
fi
if [ -n "${PER[key]:-}" ] && [ -n "${PER[gemini]:-}" ]; then
	awk -v a="${PER[gemini]}" -v b="${PER[key]}" 'BEGIN {
		printf "gemini / key (OpenAI): x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
if [ -n "${PER[gemini]:-}" ] && [ -n "${PER[vertex]:-}" ]; then
	awk -v a="${PER[vertex]}" -v b="${PER[gemini]}" 'BEGIN {
		printf "vertex / gemini: x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
if [ -n "${PER[key]:-}" ] && [ -n "${PER[vertex]:-}" ]; then
	awk -v a="${PER[vertex]}" -v b="${PER[key]}" 'BEGIN {
		printf "vertex / key (OpenAI): x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
if [ -n "${PER[key]:-}" ] && [ -n "${PER[azure]:-}" ]; then
	awk -v a="${PER[azure]}" -v b="${PER[key]}" 'BEGIN {
		printf "azure / key (OpenAI): x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
if [ -n "${PER[plain]:-}" ] && [ -n "${PER[haproxy]:-}" ]; then
	awk -v a="${PER[plain]}" -v b="${PER[haproxy]}" 'BEGIN {
		printf "kilovolt / haproxy: x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
if [ -n "${PER[tls]:-}" ] && [ -n "${PER[haproxy-tls]:-}" ]; then
	awk -v a="${PER[tls]}" -v b="${PER[haproxy-tls]}" 'BEGIN {
		printf "kilovolt / haproxy, upstream over TLS: x%.4f (%+d instructions per request)\n", a / b, a - b }'
fi
