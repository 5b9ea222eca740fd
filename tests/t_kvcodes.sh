#!/bin/bash
# The KV code registry (docs/kvcodes.md) against the sources: every code a
# source logs must have a row there, and be logged only with an opening that
# row lists — a code reused for another message fails. The same message
# logged from two places (one opening) is one meaning and passes. A row no
# source logs any more fails too, so the table stays the list of what is used.

top_srcdir=${top_srcdir:-.}
reg=$top_srcdir/docs/kvcodes.md
[ -r "$reg" ] || { echo "FAIL: $reg missing"; exit 1; }
uses=$(bash "$top_srcdir/tests/kvcodes_scan.sh" "$top_srcdir") || exit 1
[ -n "$uses" ] || { echo "FAIL: the scan found no KV code"; exit 1; }
fail=0
while IFS=$'\t' read -r code key where; do
	row=$(grep -E "^\| $code \|" "$reg")
	if [ -z "$row" ]; then
		echo "FAIL: $code ($where: \"$key\") is not in docs/kvcodes.md"; fail=1; continue
	fi
	openings=";$(printf '%s\n' "$row" | awk -F' \\| ' '{ sub(/ \|$/, "", $3); print $3 }');"
	case "$openings" in
	*";$key;"*) ;;
	*) echo "FAIL: $code at $where logs \"$key\", which its row does not list: $row"; fail=1 ;;
	esac
done <<<"$uses"
# A row whose code no source logs any more is stale: drop it from the table.
for code in $(grep -oE '^\| KV[0-9]{4} ' "$reg" | cut -c3-8); do
	printf '%s\n' "$uses" | grep -q "^$code"$'\t' ||
	    { echo "FAIL: $code is in docs/kvcodes.md but no source logs it"; fail=1; }
done
n=$(printf '%s\n' "$uses" | cut -f1 | sort -u | wc -l)
[ $fail = 0 ] && echo "PASS: $n KV codes, each with one registered meaning"
exit $fail
