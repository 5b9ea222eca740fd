#!/bin/bash
# kvcodes_scan.sh DIR: prints "CODE<TAB>KEY<TAB>FILE:LINE" for every KV code
# the sources under DIR log, KEY being the first three words of its message
# (two uses with the same KEY are one message logged from two places, as a
# line split over two branches). Used by tests/t_kvcodes.sh.
cd "${1:-.}" || exit 1
grep -rnoE '"KV[0-9]{4}", *"([^"\\]|\\.)*"|KV[0-9]{4}: ([^"\\]|\\.)*"' \
    --include='*.c' --include='*.h' master cli worker shm common |
sed -E 's/^([^:]*:[0-9]*):"?(KV[0-9]{4})"?(, *"|: )/\2\t\1\t/; s/"$//' |
awk -F'\t' '{ n = split($3, w, " "); k = w[1]; for (i = 2; i <= 3 && i <= n; i++) k = k " " w[i];
	print $1 "\t" k "\t" $2 }'
