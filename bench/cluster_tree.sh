#!/bin/bash
# bench/cluster_tree.sh BUILDDIR: Redis commands per request when a budget
# tree is shared across hosts (issue 36, docs/cluster.md "The tree across
# hosts"): the kvcluster target of bench/run.sh (scenario 1's small chat
# completions, [cluster] on a local redis-server, lease_max $50) run on H
# kilovolt hosts at once, each with its own ledger and host_id, all leasing
# one tree from one Redis.
#
# Depth 4: an org, 2 divisions under it, 5 teams under those, and one key
# per host in team (host mod 5): every request holds its key, its team, its
# division and the org, all with budgets (so all leased). Depth 1: the same
# keys, no teams. The org is held by every request of every host.
#
# Each host gets C keep-alive connections from its own bench/loadgen; 2 s
# of load warms the leases, then S seconds are measured. Redis's INFO
# commandstats before and after give every command sent in the window (the
# lease script's EVALSHA, and the issued-key look's GET/HSCAN); the lease
# calls beyond the timer's (each host syncs every 500 ms, 128 accounts a
# call) are the refills. Each host's ledger must account for every
# request exactly: the org's spend summed over the hosts equals the keys'.
#
# Environment: CT_HOSTS (10), CT_DEPTH (4 or 1; default "4 1": both, in
# that order), CT_SECS (10), CT_CONNS (8 per host), CT_WORKERS (1 per
# host), KEEP=1 keeps the work dir. Prints a line per run and a markdown
# table on stdout; exit 1 when a run had an error or an inexact ledger.
set -u
B=$(cd "${1:?usage: cluster_tree.sh BUILDDIR}" && pwd)
H=${CT_HOSTS:-10}
DEPTHS=${CT_DEPTH:-4 1}
SECS=${CT_SECS:-10}
CONNS=${CT_CONNS:-8}
WORKERS=${CT_WORKERS:-1}
W=$(mktemp -d "${TMPDIR:-/tmp}/kvctbench.XXXXXX") || exit 1
BM_PID= REDIS_PID= FAILED=0
KV_PIDS=()
BODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the benchmark."}]}'

log() { echo "cluster_tree: $*" >&2; }
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

stop_hosts() {
	local p
	for p in "${KV_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${KV_PIDS[@]}"; do bench_stop "$p"; done
	KV_PIDS=()
}

cleanup() {
	stop_hosts
	bench_stop "$BM_PID"
	bench_stop "$REDIS_PID"
	if [ "${KEEP:-0}" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

j() { [ -s "$1" ] && jq -r "$2 // empty" "$1" 2>/dev/null; }
free_port() { "$B/tests/mock_upstream" --free-port; }
rcli() { redis-cli -s "$W/redis.sock" "$@"; }
# cmds [NAME]: commands Redis served so far (all, or NAME's)
# stats FILE: every command's count so far, "name count" lines
stats() {
	rcli info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ { print substr($1, 9), $3 }' >"$1"
}
cmds() {
	rcli info commandstats | tr -d '\r' |
		awk -F'[:=,]' -v n="${1:-}" '/^cmdstat_/ && (n == "" || $1 == "cmdstat_" n) { s += $3 } END { print s + 0 }'
}

start_base() {
	local i
	redis-server --port 0 --unixsocket "$W/redis.sock" --save '' --appendonly no \
		--dir "$W" </dev/null >"$W/redis.log" 2>&1 &
	REDIS_PID=$!
	for ((i = 0; i < 50; i++)); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
	bench_spawn bm BM_PID BM_PORT "$B/bench/benchmock" || exit 1
}

# tree DEPTH: the [team] sections, and each key's team= (TEAM_OF[i])
tree() {
	local t
	TEAM_OF=()
	[ "$1" = 4 ] || return 0
	printf '[team acme]\nbudget = 100000\n\n'
	printf '[team d0]\nparent = acme\nbudget = 100000\n\n[team d1]\nparent = acme\nbudget = 100000\n\n'
	for t in 0 1 2 3 4; do
		printf '[team t%d]\nparent = d%d\nbudget = 100000\n\n' "$t" $((t % 2))
	done
}

# host_config I DEPTH: host I's config (port PORT[I]) on the one Redis
host_config() {
	local i=$1
	PORT[$i]=$(free_port)
	{ bench_kv_server "${PORT[$i]}" "$WORKERS" 1024 "127.0.0.1:$(free_port)" |
		sed "s|^ledger = .*|ledger = $W/h$i.ledger|"; bench_kv_budget; } >"$W/h$i.ini"
	cat >>"$W/h$i.ini" <<INI

[upstream openai]
url = http://127.0.0.1:$BM_PORT
paths = /v1/chat/completions

[price gpt-4o-mini*]
input = 0.15
output = 0.60
cached_input = 0.075

$(tree "$2")
$(for k in $(seq 0 $((H - 1))); do
	printf '[key k%d]\nkey = sk-bench-tree-%04d-0123456789\nbudget = 100000\n' "$k" "$k"
	[ "$2" = 4 ] && printf 'team = t%d\n' $((k % 5))
	echo
done)
[cluster]
redis = unix:$W/redis.sock
host_id = h$i
lease_max = 50.00
INI
}

# load LABEL SECS: every host's loadgen at once, on its own key
load() {
	local i pids=()
	for ((i = 0; i < H; i++)); do
		timeout 300 "$B/bench/loadgen" -p "${PORT[$i]}" -l "$1" -m POST -u /v1/chat/completions \
			-H 'Content-Type: application/json' \
			-H "Authorization: Bearer sk-bench-tree-$(printf %04d "$i")-0123456789" \
			-c "$CONNS" -d "$2" -t 30 -b "$BODY" >"$W/$1.$i.json" 2>"$W/$1.$i.err" &
		pids+=($!)
	done
	wait "${pids[@]}"
}

# spent HOST BY NODE: NODE's spent_nusd in HOST's ledger
spent() {
	"$B/kvctl" -c "$W/h$1.ini" report --by "$2" --json 2>/dev/null |
		jq -r --arg n "$3" '[.rows[] | select(.node == $n) | .spent_nusd] | first // 0'
}

# exact DEPTH: on every host, the org's spend is its keys' (all settled)
exact() {
	local i k keys org=0 all=0
	[ "$1" = 4 ] || return 0
	sleep 1
	for ((i = 0; i < H; i++)); do
		keys=0
		for ((k = 0; k < H; k++)); do keys=$((keys + $(spent "$i" key "key/k$k"))); done
		org=$((org + $(spent "$i" team team/acme)))
		all=$((all + keys))
	done
	echo "$org $all"
	[ "$org" = "$all" ] && [ "$org" -gt 0 ]
}

run() {	# DEPTH
	local d=$1 i c0 e0 c1 e1 n=0 err=0 rps=0 ex
	rcli flushall >/dev/null
	for ((i = 0; i < H; i++)); do
		rm -f "$W/h$i.ledger"
		host_config "$i" "$d"
		"$B/kilovoltd" -c "$W/h$i.ini" </dev/null >"$W/h$i.log" 2>&1 &
		KV_PIDS+=($!)
	done
	for ((i = 0; i < H; i++)); do
		bench_wait_port "${PORT[$i]}" "${KV_PIDS[$i]}" || { log "host $i did not start"; tail "$W/h$i.log" >&2; exit 1; }
	done
	load warm$d 2
	c0=$(cmds) e0=$(cmds evalsha)
	stats "$W/st0"
	load run$d "$SECS"
	c1=$(cmds) e1=$(cmds evalsha)
	stats "$W/st1"
	sent=$(awk 'NR == FNR { a[$1] = $2; next } $1 ~ /^(evalsha|get|hscan|info|config|script|ping|auth|hgetall|incr)$/ { s += $2 - a[$1] }
		END { print s + 0 }' "$W/st0" "$W/st1")
	log "depth $d: commands in the window: $(awk 'NR == FNR { a[$1] = $2; next }
		{ if ($2 - a[$1] > 0) printf "%s %d, ", $1, $2 - a[$1] }' "$W/st0" "$W/st1")"
	for ((i = 0; i < H; i++)); do
		n=$((n + $(j "$W/run$d.$i.json" .requests)))
		err=$((err + $(j "$W/run$d.$i.json" .errors)))
		rps=$(awk -v a="$rps" -v b="$(j "$W/run$d.$i.json" .rps)" 'BEGIN { printf "%.0f", a + b }')
	done
	ex=$(exact "$d") || { log "depth $d: the org's spend is not its keys' ($ex)"; FAILED=1; }
	[ "$err" = 0 ] || FAILED=1
	stop_hosts
	# the timer's share: each host one call per 500 ms (one batch: < 128 accounts)
	timer=$((H * SECS * 2))
	printf '| %d | %d | %s | %d | %d | %s | %d | %s | %d | %s | %d | %s |\n' "$d" "$H" "$rps" "$n" \
		"$sent" "$(awk -v c="$sent" -v n="$n" 'BEGIN { printf "%.5f", c / n }')" \
		$((c1 - c0)) "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.5f", c / n }')" \
		$((e1 - e0)) "$(awk -v c=$((e1 - e0)) -v n="$n" 'BEGIN { printf "%.5f", c / n }')" \
		$((e1 - e0 - timer > 0 ? e1 - e0 - timer : 0)) "$err" >>"$W/table"
	log "depth $d, $H hosts: $n requests ($rps/s), $((c1 - c0)) Redis commands," \
		"$((e1 - e0)) EVALSHA (timer $timer), $err errors${ex:+, org = keys = $ex nUSD}"
}

command -v redis-server >/dev/null && command -v jq >/dev/null ||
	{ log "needs redis-server and jq"; exit 1; }
ulimit -n 65536 2>/dev/null
start_base
: >"$W/table"
for d in $DEPTHS; do run "$d"; done
echo "| depth | hosts | req/s | requests | commands sent | per request | with the script's own | per request | EVALSHA | per request | EVALSHA past the timer | errors |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
cat "$W/table"
exit "$FAILED"
