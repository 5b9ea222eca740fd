#!/bin/sh
# Build and run the libFuzzer targets tests/fuzz/fuzz_*.c.
#
# usage: run.sh [--time SECONDS] [target...]
#
# Without --time each target runs once over its seed corpus
# tests/fuzz/corpus/<name>/ (a regression test: every input executed once).
# With --time S each target fuzzes for S seconds, starting from a copy of its
# corpus in a temp dir so the source tree is never written; crashes are left
# in the build dir. Targets are named "http" or "fuzz_http"; default is all.
# Exit: 0 pass, 1 a target failed to build or found a bug, 2 usage,
# 77 when clang cannot build libFuzzer targets (or every target was skipped).

usage() {
	echo "usage: $0 [--time SECONDS] [target...]" >&2
	exit 2
}

fuzz_time=
while [ $# -gt 0 ]; do
	case $1 in
	--time) [ $# -ge 2 ] || usage; fuzz_time=$2; shift 2 ;;
	--time=*) fuzz_time=${1#--time=}; shift ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
case $fuzz_time in
''|*[!0-9]*) [ -z "$fuzz_time" ] || usage ;;
esac

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
fuzzdir=$top_srcdir/tests/fuzz

if ! command -v clang >/dev/null 2>&1; then
	echo "SKIP: clang is not installed"
	exit 77
fi

# The build dir: under the build tree when make runs us, else a temp dir.
if [ -n "${top_builddir:-}" ]; then
	bindir=$top_builddir/tests/fuzz-bin
	mkdir -p "$bindir" || exit 1
else
	bindir=$(mktemp -d "${TMPDIR:-/tmp}/kv-fuzz.XXXXXX") || exit 1
fi
workdir=$(mktemp -d "${TMPDIR:-/tmp}/kv-fuzz-work.XXXXXX") || exit 1
trap 'rm -rf "$workdir"' EXIT INT TERM

CFLAGS_FUZZ="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

# libFuzzer needs clang's runtime (libclang-rt-*-dev), not just clang.
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n%s\n' \
    'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' \
    >"$workdir/probe.c"
if ! clang $CFLAGS_FUZZ "$workdir/probe.c" -o "$workdir/probe" 2>/dev/null; then
	echo "SKIP: clang cannot build libFuzzer targets (libclang-rt missing?)"
	exit 77
fi

# Every target links all the pure sources; one still being written is left
# out, and only then may a target that fails to link be skipped. The
# config loader is every common/config*.c: its files come and go with
# sections, and a list by hand has missed them.
sources=$(ls "$top_srcdir"/common/config*.c)
missing=
for f in common/http.c common/chunked.c worker/usage.c worker/usage_scan.c worker/usage_json.c worker/jsonv.c worker/reqscan.c worker/reqscan_converse.c worker/reqscan_gemini.c worker/usage_gemini.c worker/reqscan_tools.c worker/media_bound.c worker/tool_prompts.c worker/endpoints.c worker/sse_filter.c worker/credential.c \
    worker/aws_eventstream.c worker/aws_eventstream_headers.c worker/aws_chunk.c worker/aws_stream_filter.c common/crc32.c common/sigv4.c common/sigv4_canon.c \
    common/aws_creds.c common/aws_creds_parse.c common/vertex_path.c common/gcp_parse.c common/seqslot.c common/azure_path.c \
    worker/tls13.c common/money.c common/bedrock_path.c common/gemini_path.c common/log.c common/resp.c common/redis_info.c common/jsonline.c \
    common/jsonread.c common/catalog.c common/catalog_report.c common/pricetab.c common/glob.c common/key_label.c master/admin_keys_parse.c \
    common/b64url.c common/jwks.c common/jwk_verify.c common/jwt.c \
    common/audit_line.c common/ws_frame.c common/tags.c worker/ws_event.c worker/ws_upgrade.c; do
	if [ -f "$top_srcdir/$f" ]; then
		sources="$sources $top_srcdir/$f"
	else
		missing="$missing $f"
	fi
done
libs=-linih
if pkg-config --exists libcrypto 2>/dev/null; then
	libs="$libs $(pkg-config --libs libcrypto)"
fi

if [ $# -eq 0 ]; then
	for f in "$fuzzdir"/fuzz_*.c; do
		[ -f "$f" ] || continue
		n=${f##*/}
		set -- "$@" "${n%.c}"
	done
fi

# The pure sources compiled once, side by side, into $objdir: every target
# links them all (compiling them again for each of ~30 targets took a
# quarter of an hour of the suite, twice: release and ASan). Always
# compiled afresh: a run tests the sources as they are.
objdir=$bindir/obj
rm -rf "$objdir" && mkdir -p "$objdir" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
objects= i=0
for f in $sources; do
	o=$objdir/$(printf '%s' "${f#"$top_srcdir"/}" | tr / _).o
	objects="$objects $o"
	clang $CFLAGS_FUZZ -I"$top_srcdir" -c "$f" -o "$o" >"$o.log" 2>&1 ||
	    echo "$o.log" >>"$objdir/failed" &
	i=$((i + 1))
	[ $((i % jobs)) -ne 0 ] || wait
done
wait

# build NAME: compile tests/fuzz/NAME.c and link it with the objects into
# $bindir/NAME. Returns 0 built, 1 failed, 77 skipped.
build() {
	log=$bindir/$1.build.log
	if [ -f "$objdir/failed" ]; then
		cat $(cat "$objdir/failed") >"$log"
	elif clang $CFLAGS_FUZZ -I"$top_srcdir" "$fuzzdir/$1.c" $objects $libs \
	    -o "$bindir/$1" >"$log" 2>&1; then
		return 0
	fi
	if [ -n "$missing" ]; then
		echo "SKIP: $1 does not build while$missing missing" \
		    "(see $log)"
		return 77
	fi
	echo "FAIL: $1 does not build:"
	tail -n 20 "$log"
	return 1
}

# run NAME: the regression pass or the timed fuzzing session.
run() {
	corpus=$fuzzdir/corpus/${1#fuzz_}
	# libFuzzer adds new inputs to the first corpus dir: give it a copy,
	# kept in the build dir for whoever wants to look at what it found
	work=$bindir/corpus/${1#fuzz_}
	rm -rf "$work"
	mkdir -p "$work" || return 1
	if [ -d "$corpus" ]; then
		cp "$corpus"/* "$work"/ 2>/dev/null
	fi
	if [ -z "$fuzz_time" ]; then
		# -runs=0: execute every corpus input once, then stop
		"$bindir/$1" -runs=0 -timeout=25 -artifact_prefix="$bindir/$1-" \
		    "$work" >"$bindir/$1.log" 2>&1
	else
		"$bindir/$1" -max_total_time="$fuzz_time" -timeout=25 \
		    -print_final_stats=1 -artifact_prefix="$bindir/$1-" \
		    "$work" >"$bindir/$1.log" 2>&1
	fi
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $1 (exit $rc); last lines of $bindir/$1.log:"
		tail -n 30 "$bindir/$1.log"
		return 1
	fi
	echo "PASS: $1 ($(ls "$work" | wc -l) inputs)"
	return 0
}

failed=0
ran=0
for t in "$@"; do
	t=fuzz_${t#fuzz_}
	if [ ! -f "$fuzzdir/$t.c" ]; then
		echo "FAIL: no target $fuzzdir/$t.c"
		failed=1
		continue
	fi
	build "$t"
	case $? in
	0) ;;
	77) continue ;;
	*) failed=1; continue ;;
	esac
	ran=$((ran + 1))
	run "$t" || failed=1
done

if [ $failed -ne 0 ]; then
	echo "build dir kept: $bindir"
	exit 1
fi
[ -n "${top_builddir:-}" ] || rm -rf "$bindir"
[ $ran -gt 0 ] || exit 77
exit 0
