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

# The clone's own config, on free ports, with the ledger in $T, and OpenAI
# played by the mock, so that the curl run.sh prints gets its answer.
kv_start_mock
KV_PORT=$(kv_free_port)
KV_STATUS_PORT=$(kv_free_port)
sed -e "s|^listen = [^ ;]*|listen = 127.0.0.1:$KV_PORT|" \
    -e "s|^status_listen = [^ ;]*|status_listen = 127.0.0.1:$KV_STATUS_PORT|" \
    -e "s|^ledger = [^ ;]*|ledger = $T/ledger|" \
    -e "s|^workers = [^ ;]*|workers = 1|" \
    -e "s|^prices = data/|prices = $src/data/|" \
    -e "s|^url = https://api.openai.com|url = http://127.0.0.1:$MOCK_PORT|" "$src/kilovolt.ini" >"$T/kv.ini"
grep -q "^url = http://127.0.0.1:$MOCK_PORT" "$T/kv.ini" || fail "the bundled config has no [upstream openai] url line to point at the mock"

untracked() { git -C "$src" status --porcelain --untracked-files=all; }

healthz() { curl -fsS -m 2 "http://127.0.0.1:$KV_STATUS_PORT/healthz" >/dev/null 2>&1; }

up_or_gone() { healthz || ! kv_alive "$1"; }

id12() { printf '%s' "$1" | sha256sum | cut -c1-12; }

# The commands run.sh printed after "In another terminal:", run as a user
# pastes them: from another directory, with their own OPENAI_API_KEY.
next_steps() {
	local log=$1 n=0 cmd rc
	while IFS= read -r cmd; do
		n=$((n + 1))
		(cd / && OPENAI_API_KEY=sk-quickstart-next-steps bash -c "$cmd") >"$T/step$n.out" 2>"$T/step$n.err"
		rc=$?
		check_eq "next step $n as printed exits 0: ${cmd:0:60}..." "$rc" 0
	done < <(awk '/In another terminal:$/ { f = 1; next } f && /^  / { sub(/^  /, ""); print; next } { f = 0 }' "$log")
	check_eq "run.sh printed three next steps" "$n" 3
	check "... the curl through the gateway got a completion" grep -q '"choices"' "$T/step1.out"
	check_eq "... /healthz answered ok" "$(cat "$T/step2.out")" ok
	check "... kvctl keys lists the key that curl used" grep -q "$(id12 sk-quickstart-next-steps)" "$T/step3.out"
}

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
		[ "$1" = 1 ] && next_steps "$log"
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
