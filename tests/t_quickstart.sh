#!/bin/bash
# The README's two commands, as a new user meets them: in a fresh clone,
# ./scripts/run.sh (in the background, stopped once it answers), then the
# build steps of ./scripts/test.sh (KV_BUILD_ONLY=1: both builds, no suite,
# since this test is part of that suite), then ./scripts/run.sh again. Before
# the first, the clone is configured in place as an older run.sh did, which
# used to make test.sh fail with "source directory already configured".
# After each command the clone has no untracked file.
#
# It clones the committed HEAD of the checkout under test: uncommitted edits
# are not in the clone. Three full builds: KV_TIMEOUT defaults to 1800 here.
: "${KV_TIMEOUT:=1800}"
export KV_TIMEOUT
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1 || skip "$top_srcdir is not a git checkout"
command -v autoreconf >/dev/null || skip "no autoreconf"
# Its builds use their own flags: once per run of the suite is enough.
[ "${KV_SUITE:-release}" = release ] || skip "runs in the release suite only"

src=$T/src
git clone -q "$top_srcdir" "$src" || { fail "git clone"; kv_finish; }

# The clone's own config, on free ports, with the ledger in $T.
KV_PORT=$(kv_free_port)
KV_STATUS_PORT=$(kv_free_port)
sed -e "s|^listen = [^ ;]*|listen = 127.0.0.1:$KV_PORT|" \
    -e "s|^status_listen = [^ ;]*|status_listen = 127.0.0.1:$KV_STATUS_PORT|" \
    -e "s|^ledger = [^ ;]*|ledger = $T/ledger|" \
    -e "s|^workers = [^ ;]*|workers = 1|" \
    -e "s|^prices = data/|prices = $src/data/|" "$src/kilovolt.ini" >"$T/kv.ini"

untracked() { git -C "$src" status --porcelain --untracked-files=all; }

healthz() { curl -fsS -m 2 "http://127.0.0.1:$KV_STATUS_PORT/healthz" >/dev/null 2>&1; }

up_or_gone() { healthz || ! kv_alive "$1"; }

# run_sh N: ./scripts/run.sh in the background until the gateway answers,
# then SIGTERM (run.sh execs kilovoltd, so its pid is the daemon's).
run_sh() {
	local log=$T/run$1.log pid rc
	(cd "$src" && KILOVOLT_CONFIG=$T/kv.ini exec ./scripts/run.sh) >"$log" 2>&1 &
	pid=$!
	kv_track "$pid"
	kv_wait_for 900 up_or_gone "$pid"
	if healthz; then
		pass "run.sh #$1: the gateway answers"
	else
		tail -30 "$log"
		fail "run.sh #$1: the gateway never answered"
	fi
	kv_kill "$pid" 35
	wait "$pid"
	rc=$?
	check_eq "run.sh #$1: kilovoltd stopped cleanly on SIGTERM" "$rc" 0
	check_eq "run.sh #$1: no untracked file" "$(untracked)" ""
}

# An in-place configure, as the run.sh of before did.
(cd "$src" && autoreconf -fi && ./configure) >"$T/inplace.log" 2>&1 ||
	{ tail -20 "$T/inplace.log"; fail "in-place configure"; }

run_sh 1

(cd "$src" && KV_BUILD_ONLY=1 ./scripts/test.sh) >"$T/test.log" 2>&1
rc=$?
tail -3 "$T/test.log"
check_eq "test.sh after run.sh: exit status" "$rc" 0
check_eq "test.sh after run.sh: both builds" "$(tail -1 "$T/test.log")" "2 passed, 0 failed, 0 skipped"
check_eq "test.sh: no untracked file" "$(untracked)" ""

run_sh 2

kv_finish
