#!/usr/bin/env bash
# Install, build and run the whole test suite twice: a -Werror build, then an
# AddressSanitizer + UBSan build; then the container test. Ends with
# "N passed, N failed, N skipped" over every test program and script.
# Builds out of tree (build-release/, build-asan/), so it works before or
# after ./scripts/run.sh (build/). KV_BUILD_ONLY=1 stops after the two builds
# (tests/t_quickstart.sh uses it).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc)

./scripts/deps.sh test || exit 1
autoreconf -fi >/dev/null 2>&1 || { autoreconf -fi; exit 1; }
. ./scripts/tree.sh
kv_tree_prepare

passed=0 failed=0 skipped=0
tally() {	# tally BUILDDIR: add up automake's per-test results
	local log=$1/test-suite.log p f s e
	[ -f "$log" ] || { failed=$((failed + 1)); return; }
	p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
	s=$(sed -n 's/^# SKIP: *//p' "$log"); e=$(sed -n 's/^# ERROR: *//p' "$log")
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0}))
	skipped=$((skipped + ${s:-0}))
}

suite() {	# suite NAME CONFIGURE-ARGS...
	local name=$1 dir=$top/build-$1
	shift
	echo "=== $name build: configure $*"
	rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
	if ! "$top/configure" "$@" >configure.out 2>&1 || ! make -j"$jobs" >make.out 2>&1; then
		cat configure.out make.out | tail -40
		echo "$name build failed"
		failed=$((failed + 1))
		cd "$top"
		return
	fi
	if [ "${KV_BUILD_ONLY:-0}" = 1 ]; then
		passed=$((passed + 1))
		cd "$top"
		return
	fi
	make -j"$jobs" check KV_SUITE="$name" 2>&1 | grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):'
	for t in $(grep -l -E '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null); do
		echo "--- ${t%.trs}.log"
		tail -60 "${t%.trs}.log"
	done
	tally "$dir"
	cd "$top"
}

suite release --enable-werror
suite asan --enable-werror --enable-asan
if [ "${KV_SKIP_CONTAINER:-0}" != 1 ] && [ "${KV_BUILD_ONLY:-0}" != 1 ] && [ -f "$top/build-release/Makefile" ]; then
	echo "=== container test"
	if make -C "$top/build-release" check-container; then
		passed=$((passed + 1))
	else
		rc=$?
		[ $rc = 77 ] && skipped=$((skipped + 1)) || failed=$((failed + 1))
	fi
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
