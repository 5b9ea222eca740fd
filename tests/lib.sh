# lib.sh: the integration-test harness, sourced by every tests/t_*.sh:
#
#	. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
#
# Like nginx-tests: each test gets its own temp dir ($T), ephemeral ports, a
# fake upstream (tests/mock_upstream), a watchdog, and ends with kv_finish,
# which also asserts that the daemon's and the mock's logs hold no sanitizer
# report and that no worker died (the master respawns one and logs KV0112,
# which checks of the responses alone could miss). A test that kills workers
# on purpose sets KV_KILLS_WORKERS=1.
#
# Environment: top_srcdir, top_builddir (make check exports both; by default
# the repository this file is in and "."), KEEP=1 keeps $T, KV_TIMEOUT the
# watchdog's seconds (300), KV_WORKERS the daemon's workers (2).
#
# Functions (each documented where it is defined):
#	kv_start_mock [ARGS]      MOCK_PORT, MOCK_PID, MOCK_LOG
#	kv_start_mock_tls [CERT]  MOCK_TLS_PORT, MOCK_TLS_PID, MOCK_TLS_LOG, KV_CERTS
#	kv_write_config <<EOF     $T/kilovolt.ini, overlaid with stdin
#	kv_start [ARGS]           KV_PORT, KV_PID, KV_STATUS_PORT, KV_URL, KV_LOG
#	kv_stop, kv_ctl, kv_curl, kv_mock_stat, kv_wait_for, kv_sdk_setup
#	kv_start_standin [ARGS]   STANDIN_PORT, STANDIN_PID, STANDIN_URL, STANDIN_LOG
#	kv_start_ws_standin [ARGS] WSS_PORT, WSS_PID, WSS_URL, WSS_WS, WSS_LOG, WSS_KEY
#	kv_codex_home DIR URL, kv_codex DIR OUT PROMPT
#	kv_node_checks NAME OUT CMD...
#	kv_memcg BYTES            CG, cg_remove, oom_kills, kv_start_in_cg [ARGS],
#	                          kv_real_clients OUT
#	kv_redis_start [ARGS]     RSOCK, rcli; kv_host_config NAME (a cluster host)
#	pass, fail, skip, check, check_eq, kv_finish

set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir

KV_TEST=$(basename "$0" .sh)
KV_MOCK_BIN=$top_builddir/tests/mock_upstream
KV_DAEMON_BIN=$top_builddir/kilovoltd
KV_CTL_BIN=$top_builddir/kvctl
KV_PASSED=0
KV_FAILED=0
KV_WATCHDOG=
KV_PID=
T=$(mktemp -d "${TMPDIR:-/tmp}/kv-$KV_TEST.XXXXXX") || exit 1
# Traffic only to 127.0.0.1: a daemon with a bedrock upstream and no AWS
# credentials must not ask the real instance metadata service for some.
export AWS_EC2_METADATA_DISABLED=true
: >"$T/pids"

# ---- results ---------------------------------------------------------------

pass() { KV_PASSED=$((KV_PASSED + 1)); echo "ok - $*"; }
fail() { KV_FAILED=$((KV_FAILED + 1)); echo "FAIL - $*"; }

# skip REASON: the whole test cannot run here (exit 77).
skip() {
	echo "SKIP: $*"
	exit 77
}

# check DESCRIPTION CMD [ARGS...]: passes when CMD exits 0.
check() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc (exit $?: $*)"; fi
}

# check_eq DESCRIPTION GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}

# The id kilovolt shows for a raw key: the first 12 hex digits of its SHA-256.
id_of() { printf %s "$1" | sha256sum | cut -c1-12; }

# kv_start_host NAME PORT [LEDGER]: one more kilovoltd (a cluster host) with
# $T/NAME.ini and LEDGER (default $T/NAME.ledger), logging to
# $T/kilovoltd-NAME.log, until it answers on PORT; KV__PID is its pid. A
# host that never answers fails the test.
kv_start_host() {
	local name=$1 port=$2 ledger=${3:-$T/$1.ledger} i
	KILOVOLT_LEDGER=$ledger "$KV_DAEMON_BIN" -c "$T/$name.ini" \
		</dev/null >>"$T/kilovoltd-$name.log" 2>&1 &
	KV__PID=$!
	kv_track "$KV__PID"
	for ((i = 0; i < 200; i++)); do
		curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/" && return 0
		sleep 0.1
	done
	fail "host $name started"
	tail -n 20 "$T/kilovoltd-$name.log"
	kv_finish
}

# kv_redis_start [ARGS]: a redis-server on the unix socket $RSOCK
# ($T/redis.sock; no TCP port, no RDB) with ARGS added, logging to
# $T/redis.log; rcli talks to it. A Redis that never answers fails the test.
kv_redis_start() {
	RSOCK=$T/redis.sock
	redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 --dir "$T" \
		--save '' --logfile "$T/redis.log" "$@" </dev/null &
	kv_track "$!"
	kv_wait_for 10 sh -c "redis-cli -s '$RSOCK' ping 2>/dev/null | grep -q PONG" ||
		{ fail "start redis-server"; kv_finish; }
}
rcli() { redis-cli -s "$RSOCK" "$@"; }

# kv_host_config NAME <<EOF: $T/NAME.ini for a cluster host NAME on $RSOCK
# (host_id NAME, lease_ttl 4, its own ledger $T/NAME.ledger and ports
# PORT_NAME, SPORT_NAME), overlaid with stdin; start it with kv_start_host.
kv_host_config() {
	local name=$1 port sport
	port=$(kv_free_port)
	sport=$(kv_free_port)
	{ printf '[cluster]\nredis = unix:%s\nhost_id = %s\nlease_ttl = 4\n' \
		"$RSOCK" "$name"; cat; } >"$T/$name.overlay"
	KV_PORT=$port KV_STATUS_PORT=$sport kv_write_config <"$T/$name.overlay"
	sed -i "s|^ledger = .*|ledger = $T/$name.ledger|" "$T/kilovolt.ini"
	mv "$T/kilovolt.ini" "$T/$name.ini"
	eval "PORT_$name=$port SPORT_$name=$sport"
}

# ---- money: what the ledger and the mock's bill say -------------------------

# key_field KEY FIELD: FIELD of KEY's account in kvctl keys --json.
key_field() { kv_ctl keys --json | jq -r --arg id "$(id_of "$1")" ".keys[] | select(.id == \$id) | .$2"; }
spent() { key_field "$1" spent_nusd; }
reserved() { key_field "$1" reserved_nusd; }
settled() { [ "$(reserved "$1")" = 0 ] && [ -n "$(spent "$1")" ]; }
# bill_field NAME: NAME=N of the mock's last bill line ($MOCK_LOG.bills).
bill_field() { tail -n 1 "$MOCK_LOG.bills" | sed "s/.* $1=\([0-9]*\).*/\1/"; }
J=(-H 'Content-Type: application/json')
# post KEY PATH BODY [curl args]: the status code; the body goes to $T/out
post() {
	local k=$1 p=$2 b=$3
	shift 3
	kv_curl "$p" -o "$T/out" -w '%{http_code}' -H "Authorization: Bearer $k" "${J[@]}" \
		-d "$b" "$@"
}

# ---- memory cgroups ----------------------------------------------------------

# kv_memcg BYTES: make a memory cgroup of BYTES (swap off) for this test in
# CG (v1 or v2), removed at exit; skips the test when none can be made. The
# test puts the daemon in it ("$CG/cgroup.procs"); cg_remove removes it early,
# oom_kills prints the OOM kills the kernel made in it.
kv_memcg() {
	local limit=$1
	CG=
	if [ -w /sys/fs/cgroup/memory ]; then
		CG=/sys/fs/cgroup/memory/kv-$KV_TEST-$$
		mkdir "$CG" && echo "$limit" >"$CG/memory.limit_in_bytes" ||
			skip "cannot make a v1 memory cgroup"
		[ -f "$CG/memory.memsw.limit_in_bytes" ] && echo "$limit" >"$CG/memory.memsw.limit_in_bytes"
	elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ] &&
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
		CG=/sys/fs/cgroup/kv-$KV_TEST-$$
		mkdir "$CG" && echo "$limit" >"$CG/memory.max" || skip "cannot make a v2 memory cgroup"
		[ -f "$CG/memory.swap.max" ] && echo 0 >"$CG/memory.swap.max"
	else
		skip "no writable memory cgroup (v1 or v2)"
	fi
	trap 'rc=$?; cg_remove; (exit $rc); kv_cleanup' EXIT
}

cg_remove() {
	local i
	[ -n "${CG:-}" ] || return 0
	for ((i = 0; i < 50; i++)); do
		rmdir "$CG" 2>/dev/null && break
		sleep 0.1
	done
	CG=
}

# kv_start_in_cg [ARGS]: kv_start with the daemon started inside $CG, so
# the workers it forks are in it and read their limits from it.
kv_start_in_cg() {
	local real=$KV_DAEMON_BIN rc
	cat >"$T/in-cgroup.sh" <<EOF
#!/bin/sh
echo \$\$ >"$CG/cgroup.procs" && exec "$real" "\$@"
EOF
	chmod +x "$T/in-cgroup.sh"
	KV_DAEMON_BIN=$T/in-cgroup.sh
	kv_start "$@"
	rc=$?
	KV_DAEMON_BIN=$real
	return $rc
}

# kv_real_clients OUT: while a flood runs, 60 real clients' chat requests
# (10 at a time, each on a new connection, a second between rounds); each
# one's status code is appended to OUT.
kv_real_clients() {
	local out=$1 body i j pids
	body='{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"real"}]}'
	for ((j = 0; j < 6; j++)); do
		pids=()
		for ((i = 0; i < 10; i++)); do
			curl -sS -m 30 -o /dev/null -w '%{http_code}\n' "$KV_URL/v1/chat/completions" \
				-H 'Authorization: Bearer sk-real' -H 'Content-Type: application/json' \
				-d "$body" >>"$out" 2>/dev/null &
			pids+=($!)
		done
		wait "${pids[@]}"
		sleep 1
	done
}

oom_kills() {
	if [ -f "$CG/memory.oom_control" ]; then
		awk '$1 == "oom_kill" { print $2 }' "$CG/memory.oom_control"
	else
		awk '$1 == "oom_kill" { print $2 }' "$CG/memory.events"
	fi
}

# ---- processes -------------------------------------------------------------

# Remember a PID so the watchdog and the exit trap can stop it.
kv_track() { echo "$1" >>"$T/pids"; }

kv_alive() { kill -0 "$1" 2>/dev/null; }

# Stop PID: SIGTERM, up to SECS seconds (default 5) to go, then SIGKILL.
# Returns 0 when it left on its own.
kv_kill() {
	local pid=$1 secs=${2:-5} i
	kv_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < secs * 10; i++)); do
		kv_alive "$pid" || return 0
		sleep 0.1
	done
	echo "lib.sh: pid $pid ignored SIGTERM for ${secs}s, killing it" >&2
	kill -KILL "$pid" 2>/dev/null
	return 1
}

kv_kill_tracked() {
	local pid
	[ -f "$T/pids" ] || return 0
	for pid in $(tac "$T/pids"); do
		kv_kill "$pid" "${1:-5}"
	done
}

kv_cleanup() {
	local rc=$?
	[ -n "$KV_WATCHDOG" ] && kill "$KV_WATCHDOG" 2>/dev/null
	kv_kill_tracked 5
	wait 2>/dev/null
	if [ "${KEEP:-0}" = 1 ]; then
		echo "lib.sh: kept $T"
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap kv_cleanup EXIT
trap 'exit 1' INT TERM HUP

# The watchdog: past KV_TIMEOUT seconds it stops, by PID, everything the test
# started (tracked daemons and mocks, then the shell's own children, such as
# a curl that hangs) and then the test itself.
kv_watchdog() {
	local me=$$ secs=${KV_TIMEOUT:-300} i pid
	for ((i = 0; i < secs; i++)); do
		sleep 1 </dev/null >/dev/null 2>&1
		kv_alive "$me" || exit 0
	done
	echo "lib.sh: watchdog: $KV_TEST ran past ${secs}s, stopping it" >&2
	: >"$T/watchdog-fired"
	# The test first: its trap runs as soon as its foreground child is gone.
	kill -TERM "$me"
	for pid in $(tac "$T/pids" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null
	done
	for pid in $(ps -o pid= --ppid "$me"); do
		[ "$pid" != "$BASHPID" ] && kill -KILL "$pid" 2>/dev/null
	done
}
kv_watchdog &
KV_WATCHDOG=$!

# kv_wait_for SECS CMD [ARGS...]: poll CMD every 0.1 s until it succeeds.
kv_wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# A TCP port nothing listens on right now (the kernel's choice).
kv_free_port() { "$KV_MOCK_BIN" --free-port; }

# kv_dead_ports N: N ports that refuse connections for the rest of the
# test, a line each. A port kv_free_port printed is free only for the
# moment: a test running beside this one may listen on it later. These are
# held bound (never listening) by a mock that the test's end stops.
kv_dead_ports() {
	local f=$T/dead-ports.$RANDOM pid
	"$KV_MOCK_BIN" --hold-ports "$1" "$f" </dev/null >>"$T/dead-ports.err" 2>&1 &
	pid=$!
	kv_track "$pid"
	kv_wait_for 10 test -s "$f" && kv_alive "$pid" || { echo "lib.sh: --hold-ports failed" >&2; return 1; }
	cat "$f"
}

# ---- the mock upstream -------------------------------------------------------

# kv__mock NAME ARGS...: start one mock; sets KV__PID and KV__PORT.
kv__mock() {
	local name=$1
	shift
	[ -x "$KV_MOCK_BIN" ] || { echo "lib.sh: $KV_MOCK_BIN not built" >&2; return 1; }
	rm -f "$T/$name.port"
	"$KV_MOCK_BIN" -p 0 -P "$T/$name.port" -l "$T/$name.log" "$@" \
		</dev/null >>"$T/$name.err" 2>&1 &
	KV__PID=$!
	kv_track "$KV__PID"
	if ! kv_wait_for 10 test -s "$T/$name.port"; then
		echo "lib.sh: $name did not start:" >&2
		cat "$T/$name.err" >&2
		return 1
	fi
	KV__PORT=$(cat "$T/$name.port")
}

# kv_start_mock [ARGS]: the plain-HTTP mock. Sets MOCK_PORT, MOCK_PID and
# MOCK_LOG (one line per request the mock received; see mock_upstream.c).
kv_start_mock() {
	kv__mock mock "$@" || { fail "start mock_upstream"; kv_finish; }
	MOCK_PID=$KV__PID
	MOCK_PORT=$KV__PORT
	MOCK_LOG=$T/mock.log
}

# kv_certs: a CA chain in $T/certs (see gen_certs.sh), KV_CERTS names the dir.
kv_certs() {
	KV_CERTS=$T/certs
	[ -s "$KV_CERTS/ca.pem" ] && return 0
	command -v openssl >/dev/null || skip "no openssl CLI"
	"$top_srcdir/tests/gen_certs.sh" "$KV_CERTS" || { fail "gen_certs.sh"; kv_finish; }
}

# kv_start_mock_tls [server|wrong|self]: the mock over TLS presenting that
# certificate (default server: localhost + 127.0.0.1, chained to
# $KV_CERTS/ca.pem). Sets MOCK_TLS_PORT, MOCK_TLS_PID, MOCK_TLS_LOG.
kv_start_mock_tls() {
	local cert=${1:-server} chain
	kv_certs
	chain=$KV_CERTS/$cert-chain.pem
	[ -f "$chain" ] || chain=$KV_CERTS/$cert.pem
	kv__mock mock-tls -t "$chain" "$KV_CERTS/$cert.key" ||
		{ fail "start mock_upstream over TLS"; kv_finish; }
	MOCK_TLS_PID=$KV__PID
	MOCK_TLS_PORT=$KV__PORT
	MOCK_TLS_LOG=$T/mock-tls.log
}

# kv_mock_stat FIELD [PORT [SCHEME]]: one number from the mock's /mock/stats.
kv_mock_stat() {
	local port=${2:-$MOCK_PORT} scheme=${3:-http} ca=()
	[ "$scheme" = https ] && ca=(--cacert "$KV_CERTS/ca.pem")
	curl -sS -m 5 "${ca[@]}" "$scheme://127.0.0.1:$port/mock/stats" | jq -r ".$1"
}

# ---- the gateway -------------------------------------------------------------

# kv__overlay BASE OVERLAY: print BASE with OVERLAY's keys merged in. A key
# in a section BASE has replaces BASE's line; other keys join that section;
# new sections are appended. (kilovolt rejects a section written twice.)
kv__overlay() {
	awk '
	function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
	function section(l) { l = trim(l); return substr(l, 1, index(l, "]")) }
	function keyof(l) {
		if (l ~ /^[ \t]*[;#]/ || index(l, "=") == 0) return ""
		return trim(substr(l, 1, index(l, "=") - 1))
	}
	function rest(s,   i, k) {
		for (i = 1; i <= n[s]; i++) {
			k = keys[s, i]
			if (!((s, k) in used)) print line[s, k]
		}
	}
	FILENAME == ARGV[1] { next }
	FILENAME == ARGV[2] {
		if ($0 ~ /^[ \t]*\[/) {
			s = section($0)
			if (!(s in n)) { n[s] = 0; order[++ns] = s }
			next
		}
		k = keyof($0)
		if (k == "" || s == "") next
		if (!((s, k) in line)) keys[s, ++n[s]] = k
		line[s, k] = $0
		next
	}
	/^[ \t]*$/ { blanks++; next }	# held, so added keys stay inside their section
	{
		if ($0 ~ /^[ \t]*\[/) {
			if (cur != "") rest(cur)
			cur = section($0); seen[cur] = 1
		}
		for (; blanks > 0; blanks--) print ""
		k = keyof($0)
		if (k != "" && ((cur, k) in line)) { print line[cur, k]; used[cur, k] = 1; next }
		print
	}
	END {
		if (cur != "") rest(cur)
		for (i = 1; i <= ns; i++)
			if (!(order[i] in seen)) { print ""; print order[i]; rest(order[i]) }
	}' /dev/null "$2" "$1"
}

# kv_write_config [<<EOF ... EOF]: write $T/kilovolt.ini for the mock: both
# providers' paths go to http://127.0.0.1:$MOCK_PORT, the ledger is in $T,
# the ports are free ones (KV_PORT, KV_STATUS_PORT). Ini text on stdin is
# overlaid (see kv__overlay), e.g. "[server]\nmax_body = 1m" or new
# [key NAME] sections. Stdin is read only when it is a heredoc, file or pipe.
# KV_UPSTREAM_URL replaces the upstreams' URL and KV_UPSTREAM_CA adds their
# ca_file, e.g. for the TLS mock:
#	kv_start_mock_tls
#	KV_UPSTREAM_URL=https://localhost:$MOCK_TLS_PORT KV_UPSTREAM_CA=$KV_CERTS/ca.pem \
#		kv_write_config </dev/null
kv_write_config() {
	local up=${KV_UPSTREAM_URL:-http://127.0.0.1:${MOCK_PORT:-1}} ca=
	[ -n "${KV_UPSTREAM_CA:-}" ] && ca="ca_file = $KV_UPSTREAM_CA"
	: "${KV_PORT:=$(kv_free_port)}" "${KV_STATUS_PORT:=$(kv_free_port)}"
	cat >"$T/base.ini" <<EOF
; written by tests/lib.sh for $KV_TEST
[server]
listen = 127.0.0.1:$KV_PORT
workers = ${KV_WORKERS:-2}
status_listen = 127.0.0.1:$KV_STATUS_PORT
ledger = $T/ledger
max_keys = 1024
client_timeout = 60
upstream_timeout = 600
shutdown_timeout = 5

[budget]
default = 2.00
period = none
unknown_keys = allow
reserve_output_tokens = 1024

[upstream openai]
url = $up
paths = /v1/chat/completions /v1/completions /v1/embeddings /v1/responses /v1/models
$ca

[upstream anthropic]
url = $up
paths = /v1/messages
$ca

[price gpt-4o-mini*]
input = 0.15
output = 0.60
cached_input = 0.075

[price claude-sonnet-4*]
input = 3.00
output = 15.00
cached_input = 0.30
cache_write = 3.75

[price default]
input = 1.00
output = 3.00
EOF
	# A heredoc is a file or a pipe; a pipe inherited from whatever ran the
	# test may never close, so a pipe gets 10 s. With nothing to add, call
	# it as kv_write_config </dev/null.
	if [ -f /dev/stdin ]; then
		cat >"$T/overlay.ini"
	elif [ -p /dev/stdin ]; then
		timeout 10 cat >"$T/overlay.ini"
	else
		: >"$T/overlay.ini"
	fi
	kv__overlay "$T/base.ini" "$T/overlay.ini" >"$T/kilovolt.ini"
}

# kv_start [ARGS]: start kilovoltd -c $T/kilovolt.ini ARGS (writing the config
# first if there is none) and wait until its port answers. Sets KV_PID,
# KV_PORT, KV_STATUS_PORT, KV_URL (http://127.0.0.1:KV_PORT), KV_LOG.
# A lost race for the port is retried on fresh ports.
kv_start() {
	local try
	[ -x "$KV_DAEMON_BIN" ] || { fail "$KV_DAEMON_BIN not built"; kv_finish; }
	[ -f "$T/kilovolt.ini" ] || kv_write_config </dev/null
	KV_LOG=$T/kilovoltd.log
	for try in 1 2 3; do
		kv__start_once "$@" && return 0
		grep -qi "address already in use" "$KV_LOG" || break
		KV_PORT=$(kv_free_port)
		KV_STATUS_PORT=$(kv_free_port)
		sed -i -e "s/^listen = .*/listen = 127.0.0.1:$KV_PORT/" \
			-e "s/^status_listen = 127.*/status_listen = 127.0.0.1:$KV_STATUS_PORT/" \
			"$T/kilovolt.ini"
	done
	echo "---- $KV_LOG (tail)"
	tail -n 30 "$KV_LOG"
	fail "kilovoltd started and answered on 127.0.0.1:$KV_PORT"
	kv_finish
}

kv__answers() {
	local code
	kv_alive "$KV_PID" || return 2
	code=$(curl -s -o /dev/null -m 1 -w '%{http_code}' "http://127.0.0.1:$KV_PORT/" 2>/dev/null)
	[ -n "$code" ] && [ "$code" != 000 ]
}

kv__start_once() {
	local i rc
	KV_PORT=$(sed -n 's/^listen = .*:\([0-9]*\)$/\1/p' "$T/kilovolt.ini")
	KV_STATUS_PORT=$(sed -n 's/^status_listen = .*:\([0-9]*\)$/\1/p' "$T/kilovolt.ini")
	KV_URL=http://127.0.0.1:$KV_PORT
	echo "---- kilovoltd -c $T/kilovolt.ini $* (port $KV_PORT)" >>"$KV_LOG"
	KILOVOLT_LEDGER=$T/ledger "$KV_DAEMON_BIN" -c "$T/kilovolt.ini" "$@" \
		</dev/null >>"$KV_LOG" 2>&1 &
	KV_PID=$!
	kv_track "$KV_PID"
	for ((i = 0; i < 200; i++)); do	# 20 s: sanitizer builds start slowly
		kv__answers
		rc=$?
		[ $rc = 0 ] && return 0
		[ $rc = 2 ] && return 1
		sleep 0.1
	done
	return 1
}

# kv_stop [SECS]: SIGTERM the daemon, wait up to SECS (default 15) for it to
# exit. Returns the daemon's exit status (1 if it had to be killed).
kv_stop() {
	local secs=${1:-15} rc
	[ -n "$KV_PID" ] || return 0
	kv_kill "$KV_PID" "$secs" || { KV_PID=; return 1; }
	wait "$KV_PID" 2>/dev/null
	rc=$?
	KV_PID=
	return $rc
}

# kv_ctl ARGS: kvctl against this test's config and ledger.
kv_ctl() { "$KV_CTL_BIN" -c "$T/kilovolt.ini" "$@"; }

# kv_curl PATH [CURL ARGS]: a request to the gateway (silent, 30 s cap).
kv_curl() {
	local path=$1
	shift
	curl -sS -m "${KV_CURL_TIMEOUT:-30}" "$@" "$KV_URL$path"
}

# ---- the Node SDK tests ------------------------------------------------------

# kv_sdk_setup: install tests/sdk's locked dependencies (npm ci) into
# $top_builddir/tests/sdk once, and set KV_SDK to that directory. Returns 1
# (with the reason) when node or npm is missing or npm ci fails; callers
# decide whether that skips them: kv_sdk_setup || skip "no Node SDKs".
kv_sdk_setup() {
	local src=$top_srcdir/tests/sdk dst=$top_builddir/tests/sdk
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "lib.sh: node/npm not installed"
		return 1
	fi
	mkdir -p "$dst" || return 1
	# One at a time: tests run side by side (make -j), and an npm ci
	# empties node_modules while another test's node reads from it.
	if ! (flock -w 600 9 || exit 1; kv__sdk_install "$src" "$dst") 9>"$dst/.setup.lock"; then
		echo "lib.sh: npm ci failed"
		return 1
	fi
	KV_SDK=$dst
}

# kv__sdk_install SRC DST: the scripts copied, and npm ci run when the lock
# file changed since the last install (under kv_sdk_setup's lock). A script
# is copied only when it changed, and renamed into place: a test beside
# this one may be running it, and node reading a file cp has just
# truncated runs nothing and exits 0 (t_eventstream saw no output).
kv__sdk_install() {
	local src=$1 dst=$2 f
	for f in package.json package-lock.json "$src"/*.mjs; do
		f=${f##*/}
		[ "$src/$f" -ef "$dst/$f" ] && continue
		cmp -s "$src/$f" "$dst/$f" && continue
		cp "$src/$f" "$dst/.$f.new" && mv -f "$dst/.$f.new" "$dst/$f" || return 1
	done
	cmp -s "$dst/package-lock.json" "$dst/node_modules/.kv-lock" && return 0
	if ! (cd "$dst" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
		>"$T/npm.log" 2>&1; then
		cat "$T/npm.log"
		return 1
	fi
	cp "$dst/package-lock.json" "$dst/node_modules/.kv-lock"
}

# ---- the Bedrock stand-in -------------------------------------------------------

# Its static credentials (what kilovoltd gets as AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY) and the Bedrock API key it accepts as a bearer token.
STANDIN_AK=AKIAKVSTANDIN0000001
STANDIN_SK=kvStandinSecretKey/0000000000000000000001
STANDIN_API_KEY=kv-standin-bedrock-api-key

# kv_start_standin [ARGS]: tests/sdk/bedrock_standin.mjs (after kv_sdk_setup)
# on a free port with those credentials and ARGS. Sets STANDIN_PORT,
# STANDIN_PID, STANDIN_URL and STANDIN_LOG (a JSON line per request it
# received: method, target, headers, body_sha256, auth, status, model, op,
# usage, outcome).
kv_start_standin() {
	STANDIN_LOG=$T/standin.jsonl
	kv__node_standin standin "the Bedrock stand-in" bedrock_standin.mjs --log "$STANDIN_LOG" \
		--access-key "$STANDIN_AK" --secret-key "$STANDIN_SK" --api-key "$STANDIN_API_KEY" "$@"
	STANDIN_PID=$KV__STANDIN_PID
	STANDIN_PORT=$KV__STANDIN_PORT
	STANDIN_URL=http://127.0.0.1:$STANDIN_PORT
}

# kv__node_standin NAME WHAT SCRIPT ARGS...: node tests/sdk's SCRIPT
# --port-file $T/NAME.port ARGS in the background (output in $T/NAME.out
# and .err, its log, the ARGS' --log FILE, emptied first), tracked; sets
# KV__STANDIN_PID and KV__STANDIN_PORT, or fails the test ("start WHAT").
kv__node_standin() {
	local name=$1 what=$2 script=$3 a prev=
	shift 3
	for a in "$@"; do
		[ "$prev" = --log ] && : >"$a"
		prev=$a
	done
	rm -f "$T/$name.port"
	node "$KV_SDK/$script" --port-file "$T/$name.port" "$@" \
		</dev/null >>"$T/$name.out" 2>>"$T/$name.err" &
	KV__STANDIN_PID=$!
	kv_track "$KV__STANDIN_PID"
	if ! kv_wait_for 20 test -s "$T/$name.port"; then
		cat "$T/$name.err"
		fail "start $what"
		kv_finish
	fi
	KV__STANDIN_PORT=$(cat "$T/$name.port")
}

# ---- the OpenAI WebSocket stand-in ----------------------------------------------

# The key the WebSocket stand-in accepts as a bearer token.
WSS_KEY=sk-kv-ws-standin

# kv_start_ws_standin [ARGS]: tests/sdk/ws_standin.mjs (after kv_sdk_setup)
# on a free port, accepting WSS_KEY, with ARGS. Sets WSS_PORT, WSS_PID,
# WSS_URL (http://127.0.0.1:PORT), WSS_WS (ws://127.0.0.1:PORT) and WSS_LOG
# (a JSON line per upgrade, client event, turn, close and HTTP request; see
# the script's opening comment).
kv_start_ws_standin() {
	WSS_LOG=$T/ws_standin.jsonl
	kv__node_standin ws_standin "the WebSocket stand-in" ws_standin.mjs --log "$WSS_LOG" \
		--api-key "$WSS_KEY" "$@"
	WSS_PID=$KV__STANDIN_PID
	WSS_PORT=$KV__STANDIN_PORT
	WSS_URL=http://127.0.0.1:$WSS_PORT
	WSS_WS=ws://127.0.0.1:$WSS_PORT
}

# kv_codex_home DIR BASE_URL: a CODEX_HOME in DIR whose config.toml makes
# Codex (tests/sdk's @openai/codex) use BASE_URL (ending /v1) as a
# Responses provider over WebSockets, its key in $KV_CODEX_KEY, and talk to
# nothing else (no plugin sync, analytics or update check).
kv_codex_home() {
	mkdir -p "$1" || return 1
	cat >"$1/config.toml" <<EOF
model = "gpt-5-codex"
model_provider = "kv"
model_reasoning_effort = "low"
check_for_update_on_startup = false

[model_providers.kv]
name = "kilovolt"
base_url = "$2"
wire_api = "responses"
supports_websockets = true
env_key = "KV_CODEX_KEY"

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false

[analytics]
enabled = false
EOF
}

# kv_codex DIR OUT PROMPT: codex exec (JSON events to OUT, stderr to
# OUT.err) with CODEX_HOME DIR and KV_CODEX_KEY exported by the caller, in
# a scratch work directory, 120 s at most.
kv_codex() {
	mkdir -p "$T/codex-work"
	(cd "$T/codex-work" && CODEX_HOME=$1 timeout 120 "$KV_SDK/node_modules/.bin/codex" exec \
		--skip-git-repo-check --json "$3" </dev/null >"$2" 2>"$2.err")
}

# kv_node_checks NAME OUT CMD...: run a node check script (timeout 300 s),
# its output in OUT (stderr in OUT.err); each of its "ok"/"FAIL" lines
# becomes one of ours and it must exit 0 ending "N passed, 0 failed".
kv_node_checks() {
	local name=$1 out=$2 rc line summary
	shift 2
	timeout 300 "$@" >"$out" 2>"$out.err"
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "$name: ${line#ok - }" ;;
		"FAIL - "*) fail "$name: ${line#FAIL - }" ;;
		esac
	done <"$out"
	summary=$(tail -n 1 "$out")
	if [ $rc != 0 ] || ! [[ $summary =~ ^[1-9][0-9]*\ passed,\ 0\ failed$ ]]; then
		sed 's/^/    /' "$out"
		grep -v -e NodeVersionSupportWarning -e '^$' "$out.err" | head -n 20 | sed 's/^/    stderr: /'
		fail "$name: exits 0 with all its checks passed (exit $rc: $summary)"
	else
		pass "$name: exits 0 ($summary)"
	fi
}

# ---- measurements shared by several tests ---------------------------------------

# kv_daemon_kb: the summed PSS (else RSS) of the master and its workers, in kB.
kv_daemon_kb() {
	local pid sum=0 kb
	for pid in $KV_PID $(ps -o pid= --ppid "$KV_PID"); do
		kb=$(awk '/^Pss:/ { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null)
		[ -n "$kb" ] || kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
		sum=$((sum + ${kb:-0}))
	done
	echo $sum
}

# kv__up_ports PORT: local ports of the gateway's open connections to PORT.
kv__up_ports() {
	ss -Htn state established "( dport = :$1 )" | awk '{ print $3 }' | sort
}

kv__pool_ok() {
	KV__POOL_N=$(kv__up_ports "$1" | wc -l)
	[ "$KV__POOL_N" -ge 1 ] && [ "$KV__POOL_N" -le "${KV_WORKERS:-2}" ]
}

# kv_check_pool LABEL PORT MODEL: twelve sequential requests for MODEL (with
# the caller's AUTH), idle across the workers' once-a-second tick after the
# sixth, reuse kept-alive connections to PORT: 1..KV_WORKERS of them are open
# after, and one pooled before the idle second is still open after it.
# Nothing else may talk to PORT meanwhile.
kv_check_pool() {
	local label=$1 port=$2 model=$3 i w=${KV_WORKERS:-2}

	for i in $(seq 1 12); do
		kv_curl /v1/chat/completions -o /dev/null "${AUTH[@]}" -d "{\"model\":\"$model\"}"
		[ $i = 6 ] && kv__up_ports "$port" >"$T/ports6" && sleep 1.5
	done
	kv__up_ports "$port" >"$T/ports12"
	# Nothing opens or closes connections now: waiting only rides out a
	# flaky read of the socket table.
	if kv_wait_for 5 kv__pool_ok "$port"; then
		pass "$label: 12 requests used 1..$w kept-alive connections (saw $KV__POOL_N)"
	else
		fail "$label: 12 requests used 1..$w kept-alive connections (saw $KV__POOL_N)"
		ss -tan | grep ":$port\b"
	fi
	check "$label: a connection pooled before an idle second is still open after it" \
		test -n "$(comm -12 "$T/ports6" "$T/ports12")"
}

# ---- the end -------------------------------------------------------------------

# kv__log_clean FILE: no sanitizer report in FILE.
kv__log_clean() {
	[ -f "$1" ] || return 0
	if grep -n -A 15 -e 'ERROR: AddressSanitizer' -e 'runtime error:' \
		-e 'LeakSanitizer' -e 'ThreadSanitizer' "$1" >"$T/bad-lines"; then
		head -n 40 "$T/bad-lines"
		return 1
	fi
}

# kv_finish: stop what is still running, check the logs, print the totals,
# exit 0 when every check passed (and there was at least one), else 1.
kv_finish() {
	local f
	[ -n "$KV_PID" ] && kv_stop
	kv_kill_tracked 5
	for f in "$T"/kilovoltd*.log "$T"/mock*.err; do
		[ -f "$f" ] || continue
		check "$(basename "$f") holds no sanitizer report" kv__log_clean "$f"
	done
	if [ "${KV_KILLS_WORKERS:-0}" != 1 ]; then
		for f in "$T"/kilovoltd*.log; do
			[ -f "$f" ] || continue
			check "$(basename "$f"): no worker died" eval "! grep 'KV0112' '$f'"
		done
	fi
	if [ "$KV_FAILED" != 0 ] && [ -f "$T/kilovoltd.log" ]; then
		echo "---- kilovoltd.log (tail)"
		tail -n 40 "$T/kilovoltd.log"
	fi
	[ -e "$T/watchdog-fired" ] && fail "the test finished within ${KV_TIMEOUT:-300}s"
	[ $((KV_PASSED + KV_FAILED)) = 0 ] && fail "the test checked nothing"
	echo "$KV_PASSED passed, $KV_FAILED failed"
	[ "$KV_FAILED" = 0 ] && exit 0
	exit 1
}
