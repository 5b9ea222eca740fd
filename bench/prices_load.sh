#!/bin/bash
# prices_load.sh BUILDDIR [RUNS]: what the bundled kilovolt.ini's price
# catalogue costs. Times `kilovoltd -t` on it RUNS times (default 10; wall
# and CPU ms, each run, and the largest RSS; KV_SRC=DIR takes kilovolt.ini and data/
# from another checkout, for a before/after), then starts kilovoltd on a copy of it
# (its own ports and ledger, 2 workers, the catalogue path made absolute, no
# traffic), waits 10 s and prints the PSS of the master and workers, in kB,
# summed by bench/pss.sh, and its anonymous part. On demand, not a test.
set -u
B=${1:?usage: prices_load.sh BUILDDIR [RUNS]}
R=${2:-10}
P0=$(cd "$(dirname "$0")" && pwd)
S=${KV_SRC:-$(dirname "$P0")}
D=$(mktemp -d "${TMPDIR:-/tmp}/kv-prices-load.XXXXXX") || exit 1
trap 'rm -rf "$D"' EXIT
# CPU ms by perf stat's task-clock when there is perf (wall time on this
# shared machine says more about the neighbours than about the load)
for i in $(seq 1 "$R"); do
	t0=$(date +%s%N)
	if command -v perf >/dev/null; then
		perf stat -x, -e task-clock -o "$D/cpu.$i" /usr/bin/time -f "%M" -o "$D/rss.$i" \
		    "$B/kilovoltd" -t -c "$S/kilovolt.ini" >/dev/null 2>&1
	else
		/usr/bin/time -f "%M" -o "$D/rss.$i" "$B/kilovoltd" -t -c "$S/kilovolt.ini" \
		    >/dev/null 2>&1
	fi || { echo "kilovoltd -t failed" >&2; exit 1; }
	t1=$(date +%s%N)
	cpu=$(awk -F, '$3 == "task-clock" { printf "%.1f", $1 }' "$D/cpu.$i" 2>/dev/null)
	echo "load_ms $(( (t1 - t0) / 1000 )) cpu_ms ${cpu:--} max_rss_kb $(cat "$D/rss.$i")" |
	    awk '{ printf "load_ms %.1f cpu_ms %s max_rss_kb %s\n", $2 / 1000, $4, $6 }'
done
PORT=$((20000 + RANDOM % 20000))
sed -e "s|^listen = .*|listen = 127.0.0.1:$PORT|" \
    -e "s|^status_listen = .*|status_listen = 127.0.0.1:$((PORT + 1))|" \
    -e "s|^workers = .*|workers = 2|" \
    -e "s|^worker_cpu_affinity = .*|worker_cpu_affinity = none|" \
    -e "s|^ledger = .*|ledger = $D/ledger|" \
    -e "s|^prices = data/|prices = $S/data/|" "$S/kilovolt.ini" >"$D/kv.ini"
"$B/kilovoltd" -c "$D/kv.ini" 2>"$D/log" &
P=$!
sleep 10
echo "idle_pss_kb $("$P0/pss.sh" "$P")"
# the anonymous part (heap: the price table is there), which the
# libraries other processes of the machine share do not move
anon=0
for pid in $P $(cat /proc/"$P"/task/*/children 2>/dev/null); do
	kb=$(awk '$1 == "Pss_Anon:" { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null)
	anon=$((anon + ${kb:-0}))
done
echo "idle_pss_anon_kb $anon"
kill "$P"
wait "$P" 2>/dev/null
