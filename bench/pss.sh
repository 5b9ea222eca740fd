#!/bin/sh
# pss.sh PID: the proportional set size, in kB, of PID and every descendant
# (for kilovoltd: the master and its workers), summed from
# /proc/PID/smaps_rollup. PSS splits pages shared between the processes
# (the ledger mapping, the binary, copy-on-write heap after fork) among
# them, so the sum is what the whole tree costs the machine, not N times
# the shared part as an RSS sum would be. A process that exits while we
# read it counts 0. Exit 1 when PID itself is gone.
set -u
[ $# = 1 ] || { echo "usage: pss.sh PID" >&2; exit 2; }
[ -r "/proc/$1/smaps_rollup" ] || { echo "pss.sh: no process $1" >&2; exit 1; }

# descendants PID: PID and its children's subtrees (bounded by the depth
# of a real process tree; /proc/PID/task/*/children lists each thread's).
descendants() {
	echo "$1"
	for kid in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		descendants "$kid"
	done
}

total=0
for pid in $(descendants "$1"); do
	kb=$(awk '$1 == "Pss:" { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null)
	total=$((total + ${kb:-0}))
done
echo "$total"
