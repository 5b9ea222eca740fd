#!/bin/bash
# ledger_idle.sh BUILDDIR [NKEYS]: the master's idle memory with a big key
# table. Starts kilovoltd (max_keys 4096, 2 workers, no traffic) on a fresh
# ledger holding NKEYS accounts that have each spent once (made with
# tests/ledger_fill), runs it once for a few seconds (so the history
# sampler has seen that spend, as a long-running daemon has), restarts it
# and after 30 s prints the master's PSS and its ledger mapping's PSS and
# RSS, in kB, from /proc/PID/smaps_rollup and smaps. On demand, not a test.
set -u
B=${1:?usage: ledger_idle.sh BUILDDIR [NKEYS]}
N=${2:-4000}
D=$(mktemp -d "${TMPDIR:-/tmp}/kv-ledger-idle.XXXXXX") || exit 1
trap 'rm -rf "$D"' EXIT
PORT=$((20000 + RANDOM % 20000))
cat >"$D/kv.ini" <<INI
[server]
listen = 127.0.0.1:$PORT
workers = 2
status_listen = 127.0.0.1:$((PORT + 1))
ledger = $D/ledger
max_keys = 4096
[budget]
default = 2.00
period = daily
[upstream openai]
url = http://127.0.0.1:1
paths = /v1/chat/completions
[key alice]
key = sk-alice
INI
if [ "$N" -gt 0 ]; then
	args=()
	for i in $(seq 1 "$N"); do
		args+=(key "sk-idle-$i" - 5 use "sk-idle-$i" gpt-4o-mini 1000 10 10 0)
	done
	"$B/tests/ledger_fill" "$D/ledger" 4096 "${args[@]}" >/dev/null || exit 1
fi
"$B/kilovoltd" -c "$D/kv.ini" 2>"$D/log0" &
P=$!
sleep 4
kill "$P"
wait "$P" 2>/dev/null
"$B/kilovoltd" -c "$D/kv.ini" 2>"$D/log" &
P=$!
sleep 30
echo "keys $N"
awk '$1 == "Pss:" { print "master_pss_kb", $2 }' "/proc/$P/smaps_rollup"
grep -A20 "$D/ledger" "/proc/$P/smaps" | awk '$1 == "Pss:" { print "ledger_pss_kb", $2; exit }'
grep -A20 "$D/ledger" "/proc/$P/smaps" | awk '$1 == "Rss:" { print "ledger_rss_kb", $2; exit }'
kill "$P"
wait "$P" 2>/dev/null
