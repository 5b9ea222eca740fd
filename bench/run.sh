#!/bin/bash
# bench/run.sh: kilovolt against HAProxy and nginx, side by side (issue 6).
#
# Run by `make bench` from the build directory (it needs kilovoltd,
# tests/mock_upstream, bench/loadgen and bench/pss built there). Installs
# HAProxy and nginx with apt-get when they are missing, runs each in the
# foreground with our own config in a temp dir and stops it by PID: no
# system service is started or left running.
#
# Scenarios (each proxy is started fresh for each):
#   1 small   small non-streamed chat completions, 64 keep-alive connections
#   2 large   256 concurrent SSE streams of ~5 MB each, at full speed
#   3 paced   1,000 concurrent SSE streams of 100 chunks 20 ms apart
#   4 cgroup  scenario 2 with the proxy in a 30 MiB memory cgroup
#   5 tls     scenario 3 with the upstream over TLS 1.3 (the mock serves the
#             chain of tests/gen_certs.sh; every proxy verifies chain and
#             host name and reuses sessions); no direct row (loadgen speaks
#             plaintext); the mock's full / resumed handshake counts per run
#   6 upload  64 concurrent 1 MB request bodies (the Python SDK's key order:
#             model last), 640 in all: kilovolt scans each whole and spools
#             it to disk before admission, nginx spools by default, HAProxy
#             streams
#   7 tls-small  scenario 1 with the upstream over TLS 1.3 (bench/benchmock
#             -t, the chain of tests/gen_certs.sh; every proxy verifies chain
#             and host name, resumes sessions and pools connections); no
#             direct row; upstream TLS handshakes per 1,000 requests
#   8 failover  scenario 1's load on kilovolt with one upstream of three
#             targets (three fresh benchmocks each run): row kilovolt with
#             all three up, row kvkill with one of them killed (SIGKILL)
#             halfway through; the errors the clients saw and the latency
#             p99 the kill added (issue 13). Only these two targets.
# Scenarios 1 and 7 are served by bench/benchmock (one epoll thread, the
# same bytes per request whatever the proxy); the streaming ones by
# tests/mock_upstream (a thread per connection: it has the SSE knobs).
# Targets: direct (the mock itself), kilovolt (2 workers, full accounting:
# the client does not ask for usage, so kilovolt adds include_usage
# upstream and filters the usage event out), haproxy (2 threads), nginx
# (2 workers), kvcluster (kilovolt with [cluster] on a local redis-server,
# scenario 1 only; its line gives Redis commands per request), kvlimits
# (kilovolt with [budget] rpm and tpm set too high ever to refuse,
# scenarios 1 and 2 only; its line compares it with kilovolt round by
# round, issue 13), kvossl (kilovolt with tls_record_layer = openssl, TLS
# scenarios 5 and 7 only: OpenSSL's record layer against kilovolt's own,
# issue 21). Three more, not run unless named: kvfree (kilovolt with
# worker_cpu_affinity = none, its workers placed by the kernel; scenarios
# 1, 2, 3 and 7), haproxy-pinned (cpu-map: a thread to each CPU) and
# nginx-pinned (worker_cpu_affinity auto; both scenarios 1 and 7 only),
# which say what pinning itself is worth to each. Memory is the PSS of the
# proxy's whole process tree (bench/pss), CPU the tree's user+system
# seconds during the load.
#
# Scenario 3's method over Bedrock's event streams (InvokeModel and
# ConverseStream beside OpenAI SSE, paced by bench/benchmock) is
# bench/bedrock_streams.sh, run by hand (issue 35).
#
# Writes the tables to $top_builddir/bench/RESULTS.md and, when the source
# tree is writable, to $top_srcdir/bench/RESULTS.md (the committed copy).
#
# Environment: top_srcdir, top_builddir (as make check exports them),
# BENCH_SCENARIOS (default "1 7 2 3 4 5 6 8"), BENCH_TARGETS (default "direct
# kilovolt kvossl kvlimits kvcluster haproxy nginx kvkill"), BENCH_SMALL_SECS (8), BENCH_ROUNDS (3: each
# scenario runs that many times, targets interleaved, and each target's row
# is its round with the median key number: req/s for scenario 1, TTFB p99
# for 3, MB/s for 2 and 4), BENCH_NO_INSTALL=1 skips
# apt-get, BENCH_QUIET_SECS (10) bounds the wait for a quiet machine before
# each run, BENCH_REV names the commit measured (default: git's HEAD of
# top_srcdir), KEEP=1 keeps the work dir. Exit 0 when every run finished
# with no error, 1 otherwise.

set -u

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
SCENARIOS=${BENCH_SCENARIOS:-1 7 2 3 4 5 6 8}
TARGETS=${BENCH_TARGETS:-direct kilovolt kvossl kvlimits kvcluster haproxy nginx kvkill}
SMALL_SECS=${BENCH_SMALL_SECS:-8}
ROUNDS=${BENCH_ROUNDS:-3}

LOADGEN=$top_builddir/bench/loadgen
PSS=$top_builddir/bench/pss
MOCK=$top_builddir/tests/mock_upstream
BENCHMOCK=$top_builddir/bench/benchmock
KVD=$top_builddir/kilovoltd
CG_LIMIT=$((30 * 1024 * 1024))

W=$(mktemp -d "${TMPDIR:-/tmp}/kvbench.XXXXXX") || exit 1
MOCK_PID=
MOCK_TLS_PID=
UP_TLS=0	# this run's upstream is over TLS (scenarios 5 and 7)
UP_PORT=	# this run's upstream port
UP_URLS=	# scenario 8: the upstream's three target URLs
FO_PIDS=()	# scenario 8: the three benchmocks of this run
BM_PID=
BM_TLS_PID=
PROXY_PID=
SAMPLER_PID=
CGROUP=
FAILED=0

log() { echo "bench: $*" >&2; }
. "$top_srcdir/bench/lib.sh"

cleanup() {
	bench_stop "$SAMPLER_PID"
	bench_stop "$PROXY_PID"
	bench_stop "$MOCK_PID"
	bench_stop "$MOCK_TLS_PID"
	bench_stop "$BM_PID"
	bench_stop "$BM_TLS_PID"
	bench_stop "$REDIS_PID"
	stop_failover_mocks
	cgroup_remove
	if [ "${KEEP:-0}" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- setup -------------------------------------------------------------------

# install_peers: HAProxy and nginx from the distribution when missing.
# policy-rc.d keeps dpkg from starting them as services (a Docker image
# usually has one already; if we add it, we remove it again).
install_peers() {
	local pkgs=() added=
	command -v haproxy >/dev/null || pkgs+=(haproxy)
	command -v nginx >/dev/null || pkgs+=(nginx-light)
	[ ${#pkgs[@]} = 0 ] && return 0
	if [ "${BENCH_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		log "not installing ${pkgs[*]} (not root, no apt-get or BENCH_NO_INSTALL=1)"
		return 0
	fi
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && added=1
	fi
	log "apt-get install ${pkgs[*]}"
	apt_install "${pkgs[@]}" || { timeout 300 apt-get update -q >>"$W/apt.log" 2>&1; apt_install "${pkgs[@]}"; } ||
		{ [ "${pkgs[*]}" != "${pkgs[*]/nginx-light/nginx}" ] && apt_install "${pkgs[@]/nginx-light/nginx}"; } ||
		{ log "apt-get failed:"; tail -n 5 "$W/apt.log" >&2; }
	[ -n "$added" ] && rm -f /usr/sbin/policy-rc.d
	return 0
}

apt_install() {
	DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q "$@" >>"$W/apt.log" 2>&1
}

# Every process gets the same open-file limit: the hard limit, capped.
raise_nofile() {
	local hard
	hard=$(ulimit -Hn)
	[ "$hard" = unlimited ] && hard=65536
	[ "$hard" -gt 65536 ] && hard=65536
	ulimit -n "$hard"
	NOFILE=$hard
	# Connection tables sized for scenario 3 (1,000 clients + 1,000
	# upstream), not for the file limit: nginx and HAProxy allocate them
	# up front, which would inflate their idle memory for nothing.
	MAXCONN=4096
	[ $MAXCONN -gt $(((hard - 64) / 2)) ] && MAXCONN=$(((hard - 64) / 2))
}

free_port() { "$MOCK" --free-port; }

# The chain both TLS upstreams serve, made once.
make_certs() {
	[ -s "$W/certs/ca.pem" ] && return 0
	bash "$top_srcdir/tests/gen_certs.sh" "$W/certs" >"$W/certs.log" 2>&1 ||
		{ log "gen_certs.sh failed"; cat "$W/certs.log" >&2; return 1; }
}

# bench/benchmock over TLS (scenario 7), and the mock (scenario 5).
start_benchmock_tls() {
	make_certs &&
	bench_spawn bm-tls BM_TLS_PID BM_TLS_PORT "$BENCHMOCK" -t "$W/certs/server-chain.pem" \
		"$W/certs/server.key"
}

start_mock_tls() {
	make_certs &&
	bench_spawn mock-tls MOCK_TLS_PID MOCK_TLS_PORT "$MOCK" -p 0 -t "$W/certs/server-chain.pem" \
		"$W/certs/server.key"
}

# tls_stats FILE: this run's TLS upstream's handshake counters.
tls_stats() {
	curl -s -m 5 --cacert "$W/certs/ca.pem" "https://localhost:$UP_PORT/mock/stats" >"$1" 2>/dev/null
}

# ---- proxies ------------------------------------------------------------------

# The same config shape tests/lib.sh writes: openai upstream → the mock,
# priced model, budgets on (high enough for every scenario's spend).
write_kilovolt() {
	{ bench_kv_server "$PORT" 2 1024 "127.0.0.1:$(free_port)"
	printf 'client_timeout = 60\nupstream_timeout = 600\n'
	bench_kv_budget
	cat <<EOF

[upstream openai]
$(if [ -n "$UP_URLS" ]; then
	echo "url = $UP_URLS"
elif [ "$UP_TLS" = 1 ]; then
	echo "url = https://localhost:$UP_PORT"
	echo "ca_file = $W/certs/ca.pem"
else
	echo "url = http://127.0.0.1:$UP_PORT"
fi)
paths = /v1/chat/completions /v1/completions /v1/embeddings /v1/responses /v1/models

[price gpt-4o-mini*]
input = 0.15
output = 0.60
cached_input = 0.075

[price default]
input = 1.00
output = 3.00
EOF
	} >"$W/kilovolt.ini"
	rm -f "$W/ledger"
	CMD=("$KVD" -c "$W/kilovolt.ini")
}

# kilovolt with limits that never refuse: every request still takes its
# GCRA words (rpm and tpm) at admission and settles tpm afterwards. 4e9 a
# minute is the most a limit may be; scenario 1 reserves ~1.1k tokens a
# request, so even 60,000 req/s stay under it.
write_kvlimits() {
	write_kilovolt
	sed -i 's/^reserve_output_tokens = 1024$/&\nrpm = 4000000000\ntpm = 4000000000/' "$W/kilovolt.ini"
}

# kilovolt with its TLS legs on OpenSSL's record layer after the handshake,
# as before issue 21: what the own record layer saves.
write_kvossl() {
	write_kilovolt
	sed -i 's|^paths = /v1/chat/completions /v1/completions .*|tls_record_layer = openssl\n&|' "$W/kilovolt.ini"
}

# kilovolt with its workers left to the kernel, as before worker_cpu_affinity.
write_kvfree() {
	write_kilovolt
	sed -i 's|^workers = 2$|&\nworker_cpu_affinity = none|' "$W/kilovolt.ini"
}

# Scenario 8's second row: the same kilovolt; run_one kills a target.
write_kvkill() { write_kilovolt; }

# Scenario 8: three fresh benchmocks, the upstream's targets.
start_failover_mocks() {
	local i port
	FO_PIDS=()
	UP_URLS=
	for i in 1 2 3; do
		rm -f "$W/fo$i.port"
		"$BENCHMOCK" -P "$W/fo$i.port" </dev/null >"$W/fo$i.err" 2>&1 &
		FO_PIDS+=($!)
		port=$(bench_wait_portfile "$W/fo$i.port" "$!") || { log "benchmock $i did not start"; return 1; }
		UP_URLS="$UP_URLS${UP_URLS:+ }http://127.0.0.1:$port"
	done
}

stop_failover_mocks() {
	local p
	for p in "${FO_PIDS[@]}"; do bench_stop "$p"; done
	FO_PIDS=()
	UP_URLS=
}

# kilovolt with [cluster] leasing from a redis-server of our own (unix
# socket, no persistence): scenario 1 only, to show the hot path stays
# local (issue 14).
REDIS_PID=
rcli() { redis-cli -s "$W/redis.sock" "$@"; }
write_kvcluster() {
	write_kilovolt
	# lease_max covers a few seconds of this load's spend (~$9/s reserved)
	printf '\n[cluster]\nredis = unix:%s\nhost_id = bench\nlease_max = 50.00\n' "$W/redis.sock" >>"$W/kilovolt.ini"
	if [ -z "$REDIS_PID" ]; then
		redis-server --port 0 --unixsocket "$W/redis.sock" --save '' --appendonly no \
			--dir "$W" </dev/null >"$W/redis.log" 2>&1 &
		REDIS_PID=$!
		for ((i = 0; i < 50; i++)); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
	fi
	rcli flushall >/dev/null
}
# Redis commands served so far (INFO commandstats, all commands).
redis_calls() {
	rcli info commandstats | awk -F'[=,]' '/^cmdstat_/ { n += $2 } END { print n + 0 }'
}

# fill TEMPLATE OUT: the template with our ports, limits and dir.
fill() {
	local up=$UP_PORT tls= scheme=http ssl=
	if [ "$UP_TLS" = 1 ]; then
		tls=" ssl verify required ca-file $W/certs/ca.pem sni str(localhost) verifyhost localhost"
		scheme=https
		ssl="proxy_ssl_verify on; proxy_ssl_trusted_certificate $W/certs/ca.pem; proxy_ssl_name localhost; proxy_ssl_server_name on; proxy_ssl_session_reuse on;"
	fi
	sed -e "s|@PORT@|$PORT|g" -e "s|@UPSTREAM_PORT@|$up|g" \
	    -e "s|@UPSTREAM_TLS@|$tls|g" -e "s|@UPSTREAM_SCHEME@|$scheme|g" -e "s|@PROXY_SSL@|$ssl|g" \
	    -e "s|@MAXCONN@|$MAXCONN|g" -e "s|@NOFILE@|$NOFILE|g" -e "s|@DIR@|$W/nginx|g" \
	    "$top_srcdir/bench/$1" >"$2"
}

write_haproxy() {
	fill haproxy.cfg.in "$W/haproxy.cfg"
	CMD=(haproxy -db -f "$W/haproxy.cfg")
}

write_nginx() {
	rm -rf "$W/nginx"
	mkdir -p "$W/nginx"
	fill nginx.conf.in "$W/nginx/nginx.conf"
	CMD=(nginx -e "$W/nginx/error.log" -p "$W/nginx/" -c "$W/nginx/nginx.conf" -g "daemon off;")
}

# The two peers with a thread or worker pinned to each CPU, as kilovolt's are.
write_haproxy-pinned() {
	write_haproxy
	sed -i 's|^\tnbthread 2$|&\n\tcpu-map auto:1/1-2 0-1|' "$W/haproxy.cfg"
}

write_nginx-pinned() {
	write_nginx
	sed -i 's|^worker_processes .*|&\nworker_cpu_affinity auto;|' "$W/nginx/nginx.conf"
}

have_target() {
	case $1 in
	direct) return 0 ;;
	kilovolt) [ -x "$KVD" ] ;;
	kvlimits|kvkill|kvossl|kvfree) [ -x "$KVD" ] ;;
	haproxy-pinned|nginx-pinned) command -v "${1%-pinned}" >/dev/null ;;
	kvcluster) [ -x "$KVD" ] && command -v redis-server >/dev/null && command -v redis-cli >/dev/null ;;
	*) command -v "$1" >/dev/null ;;
	esac
}

# start_proxy TARGET: start it fresh on a new port (inside $CGROUP when
# set, joined before exec so the workers it forks are in it too); sets
# PROXY_PID and PORT.
start_proxy() {
	PORT=$(free_port)
	"write_$1"
	if [ -n "$CGROUP" ]; then
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGROUP" "${CMD[@]}" \
			</dev/null >"$W/$1.log" 2>&1 &
	else
		"${CMD[@]}" </dev/null >"$W/$1.log" 2>&1 &
	fi
	PROXY_PID=$!
	if ! bench_wait_port "$PORT" "$PROXY_PID"; then
		log "$1 did not start:"
		tail -n 20 "$W/$1.log" >&2
		bench_stop "$PROXY_PID"
		PROXY_PID=
		return 1
	fi
}

# ---- cgroups (v1 memory controller, or v2) -------------------------------------

cgroup_create() {
	local base
	if [ -w /sys/fs/cgroup/memory ]; then
		base=/sys/fs/cgroup/memory/kvbench-$$-$1
		mkdir "$base" && echo "$CG_LIMIT" >"$base/memory.limit_in_bytes" || return 1
	elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
		base=/sys/fs/cgroup/kvbench-$$-$1
		mkdir "$base" && echo "$CG_LIMIT" >"$base/memory.max" || return 1
	else
		return 1
	fi
	CGROUP=$base
}

# cgroup_report FILE: peak bytes, failcnt / limit hits, OOM kills.
cgroup_report() {
	local peak fails ooms
	if [ -f "$CGROUP/memory.max_usage_in_bytes" ]; then
		peak=$(cat "$CGROUP/memory.max_usage_in_bytes")
		fails=$(cat "$CGROUP/memory.failcnt")
		ooms=$(awk '$1 == "oom_kill" { print $2 }' "$CGROUP/memory.oom_control")
	else
		peak=$(cat "$CGROUP/memory.peak" 2>/dev/null || echo 0)
		fails=$(awk '$1 == "max" { print $2 }' "$CGROUP/memory.events")
		ooms=$(awk '$1 == "oom_kill" { print $2 }' "$CGROUP/memory.events")
	fi
	echo "{\"cg_peak\":${peak:-0},\"cg_failcnt\":${fails:-0},\"cg_oom_kills\":${ooms:-0}}" >"$1"
}

cgroup_remove() {
	local i
	[ -n "$CGROUP" ] || return 0
	for ((i = 0; i < 50; i++)); do
		rmdir "$CGROUP" 2>/dev/null && break
		sleep 0.1
	done
	CGROUP=
}

# ---- one run --------------------------------------------------------------------

# busy_pct: how busy the CPUs were over the last second, in percent.
busy_pct() {
	local a b
	a=($(head -n 1 /proc/stat))
	sleep 1
	b=($(head -n 1 /proc/stat))
	awk -v u=$((b[1] + b[2] + b[3] + b[6] + b[7] - a[1] - a[2] - a[3] - a[6] - a[7])) \
	    -v i=$((b[4] + b[5] - a[4] - a[5])) 'BEGIN { printf "%.0f", (u + i) ? 100 * u / (u + i) : 0 }'
}

# wait_quiet: the machine is shared; wait (up to BENCH_QUIET_SECS, 10) for
# it to be less than half busy before a run, and print how busy it was.
wait_quiet() {
	local i pct
	for ((i = 0; ; i++)); do	# measured at least once, even for 0 s
		pct=$(busy_pct)
		[ "$pct" -lt 50 ] || [ "$i" -ge $((${BENCH_QUIET_SECS:-10} - 1)) ] && break
	done
	echo "$pct"
}

BODY_SMALL='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello to the benchmark."}]}'
BODY_STREAM='{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Write a long story."}]}'

# Scenario 6's body: 1 MB of prompt, then the parameters, as the official
# Python SDK writes them.
upload_body() {
	[ -s "$W/upload.json" ] && return 0
	{
		printf '{"messages":[{"role":"user","content":"'
		head -c 1048576 /dev/zero | tr '\0' u
		printf '"}],"model":"gpt-4o-mini","max_tokens":16}'
	} >"$W/upload.json"
}

# load_args SCENARIO: the loadgen flags for it (LOAD array, CONC).
load_args() {
	local common=(-m POST -u /v1/chat/completions -H 'Content-Type: application/json'
		-H 'Authorization: Bearer sk-bench-0123456789')
	case $1 in
	1|7|8) CONC=64
	   LOAD=("${common[@]}" -c 64 -d "$SMALL_SECS" -t 30 -b "$BODY_SMALL") ;;
	2|4) CONC=256
	   LOAD=("${common[@]}" -c 256 -n 256 -t 120 -s -e 5000000 -b "$BODY_STREAM"
		-H 'x-mock-tokens: 5000' -H 'x-mock-token-bytes: 800') ;;
	3|5) CONC=1000
	   LOAD=("${common[@]}" -c 1000 -n 2000 -t 60 -s -b "$BODY_STREAM"
		-H 'x-mock-tokens: 100' -H 'x-mock-delay-ms: 20') ;;
	6) CONC=64
	   upload_body
	   LOAD=("${common[@]}" -c 64 -n 640 -t 120 -f "$W/upload.json") ;;
	esac
}

# run_one SCENARIO TARGET ROUND: writes $W/sS-T.rROUND.{load,pss,cg}.json.
run_one() {
	local s=$1 t=$2 out=$W/s$1-$2.r$3 port rc alive
	rm -f "$out".*
	load_args "$s"
	UP_TLS=0
	case $s in
	1) UP_PORT=$BM_PORT ;;
	8) start_failover_mocks || { FAILED=1; stop_failover_mocks; return 0; } ;;
	7) UP_PORT=$BM_TLS_PORT; UP_TLS=1 ;;
	5) UP_PORT=$MOCK_TLS_PORT; UP_TLS=1 ;;
	*) UP_PORT=$MOCK_PORT ;;
	esac
	if [ "$s" = 4 ] && ! cgroup_create "$t"; then
		log "scenario 4: cannot make a memory cgroup here, skipped"
		return 0
	fi
	if [ "$t" = direct ]; then
		port=$UP_PORT
	else
		start_proxy "$t" || { FAILED=1; cgroup_remove; return 0; }
		port=$PORT
		sleep 1	# settle: idle is measured after start-up, before load
		"$PSS" "$PROXY_PID" >"$out.pss.json" 2>"$out.pss.err" &
		SAMPLER_PID=$!
		sleep 0.5
		[ "$t" = kvcluster ] || kill -USR1 "$SAMPLER_PID"
	fi
	log "scenario $s, $t, round $3 of $ROUNDS"
	[ "$UP_TLS" = 1 ] && tls_stats "$out.tls0.json"
	wait_quiet >"$out.busy"
	if [ "$t" = kvcluster ]; then
		# The lease grows from lease_min to the load's demand in about a
		# second; the steady state after that is compared. Warmed here,
		# after the wait for a quiet machine: warmed before it (up to 10
		# s idle) the host's lease decayed back (half-life ~5 s), and the
		# load's first burst met a lease sized for no load: 7-56 of its
		# requests a round were refused with 503 and retry-after: 1 (the
		# "share of the key's budget is being renewed" of
		# docs/cluster.md) until the master's next sync, and counted as
		# errors. The idle mark (and the CPU count) starts after it.
		"$LOADGEN" -p "$port" -l warmup "${LOAD[@]}" -d 2 >/dev/null 2>&1
		kill -USR1 "$SAMPLER_PID"
		sleep 0.3	# the sampler marks idle at its next 100 ms tick
		redis_calls >"$out.rc0"
	fi
	local killer=
	if [ "$t" = kvkill ]; then
		# Halfway through, the first target dies as a crashed host does.
		{ sleep "$(awk -v s="$SMALL_SECS" 'BEGIN { print s / 2 }')"; kill -KILL "${FO_PIDS[0]}"; } &
		killer=$!
	fi
	timeout 300 "$LOADGEN" -p "$port" -l "$t" "${LOAD[@]}" >"$out.load.json" 2>"$out.load.err"
	rc=$?
	[ -n "$killer" ] && wait "$killer" 2>/dev/null
	# Handshakes this run made: the counters' difference, less the two
	# stats requests' own.
	if [ "$UP_TLS" = 1 ] && tls_stats "$out.tls1.json"; then
		jq -n --slurpfile a "$out.tls0.json" --slurpfile b "$out.tls1.json" \
			'{full: ($b[0].tls_full - $a[0].tls_full - 1), resumed: ($b[0].tls_resumed - $a[0].tls_resumed)}' \
			>"$out.tls.json" 2>/dev/null
	fi
	[ "$t" = kvcluster ] && redis_calls >"$out.rc1"
	cat "$out.load.err" >&2
	[ $rc = 0 ] || FAILED=1
	if [ -n "$SAMPLER_PID" ]; then
		kill -TERM "$SAMPLER_PID" 2>/dev/null
		wait "$SAMPLER_PID" 2>/dev/null
		SAMPLER_PID=
	fi
	if [ "$t" != direct ]; then
		if kill -0 "$PROXY_PID" 2>/dev/null; then alive=true; else alive=false; FAILED=1; fi
		[ -n "$CGROUP" ] && cgroup_report "$out.cg.json"
		echo "{\"survived\":$alive}" >"$out.alive.json"
		bench_stop "$PROXY_PID"
		PROXY_PID=
	fi
	# How the streams spread over kilovolt's workers (its access log).
	[ "$t" = kilovolt ] && grep -o '\[access\] worker [0-9]*' "$W/kilovolt.log" |
		awk '{ n[$3]++ } END { for (w in n) printf "%sworker %s: %d", s++ ? ", " : "", w, n[w] }' \
		>"$out.workers"
	# Scenario 8: what the access log says each target answered, and the
	# statuses the gateway itself gave.
	if [ "$s" = 8 ]; then
		grep -o 'upstream=[^ ]* status=[0-9]*' "$W/$t.log" | sort | uniq -c |
			awk '{ printf "%s%s %s %s", (NR > 1 ? ", " : ""), $2, $3, $1 }' >"$out.targets"
		grep -c 'retrying to' "$W/$t.log" >"$out.retries"
		stop_failover_mocks
	fi
	cgroup_remove
}

# The number a scenario is judged by: its rounds are ranked on it.
key_metric() {
	case $1 in
	1|6|7) echo .rps ;;
	8) echo .lat_ms.p99 ;;
	3|5) echo .ttfb_ms.p99 ;;
	*) echo .mbps ;;
	esac
}

# pick_median SCENARIO TARGET: of the target's rounds, the one with the
# median key metric becomes $W/sS-T.* for the report, every file of that
# round together (its memory, CPU and cgroup numbers stay its own).
pick_median() {
	local s=$1 t=$2 r n m
	n=$(for r in $(seq 1 "$ROUNDS"); do
		m=$(j "$W/s$s-$t.r$r.load.json" "$(key_metric "$s")")
		[ -n "$m" ] && echo "$m $r"
	done | sort -g | awk '{ a[NR] = $2 } END { if (NR) print a[int((NR + 1) / 2)] }')
	[ -n "$n" ] || return 0
	for f in "$W/s$s-$t.r$n".*; do
		cp "$f" "$W/s$s-$t.${f##*.r$n.}"
	done
	echo "$n" >"$W/s$s-$t.round"
}

# ---- the report ------------------------------------------------------------------

# j FILE FILTER: one value from a JSON file, "" when there is none.
j() { [ -s "$1" ] && jq -r "$2 // empty" "$1" 2>/dev/null; }

# fmt VALUE DECIMALS: a number, or – when there is none.
fmt() { if [ -n "$1" ]; then printf "%.${2}f" "$1"; else printf '–'; fi; }

# ratio A B: A/B as ×N.NN, – when either is missing or B is 0.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "–"; else printf "×%.2f", a / b }'
}

mb() { [ -n "$1" ] && awk -v k="$1" 'BEGIN { printf "%.2f", k / 1024 }'; }

scenario_title() {
	case $1 in
	1) echo "1. Small non-streamed chat completions, 64 keep-alive connections, ${SMALL_SECS} s" ;;
	2) echo "2. 256 concurrent SSE streams of ~5 MB each, full speed" ;;
	3) echo "3. 1,000 concurrent SSE streams of 100 chunks 20 ms apart (2,000 streams in all)" ;;
	5) echo "5. Scenario 3 with the upstream over TLS 1.3, chain and host name verified" ;;
	6) echo "6. 64 concurrent 1 MB request bodies (model last), 640 in all" ;;
	7) echo "7. Scenario 1 with the upstream over TLS 1.3, chain and host name verified, ${SMALL_SECS} s" ;;
	8) echo "8. Failover: scenario 1's load on one upstream of three targets, one killed halfway, ${SMALL_SECS} s" ;;
	4) echo "4. Scenario 2 inside a 30 MiB memory cgroup" ;;
	esac
}

# table_row SCENARIO TARGET
table_row() {
	local s=$1 t=$2 f=$W/s$1-$2 d=$W/s$1-direct rps mbps idle peak growth errs
	load_args "$s"
	rps=$(j "$f.load.json" .rps)
	mbps=$(j "$f.load.json" .mbps)
	idle=$(j "$f.pss.json" .idle_kb)
	peak=$(j "$f.pss.json" .peak_kb)
	growth=
	[ -n "$peak" ] && growth=$(awk -v p="$peak" -v i="$idle" -v c="$CONC" 'BEGIN { printf "%.2f", (p - i) / c }')
	errs=$(j "$f.load.json" .errors)
	[ -s "$f.load.json" ] || errs="did not run"
	printf '| %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" \
		"$(fmt "$rps" 0)" "$(fmt "$mbps" 1)" "$(ratio "$rps" "$(j "$d.load.json" .rps)")" \
		"$(fmt "$(j "$f.load.json" .ttfb_ms.p50)" 2)" "$(fmt "$(j "$f.load.json" .ttfb_ms.p99)" 2)" \
		"$(fmt "$(j "$f.load.json" .lat_ms.p50)" 1)" "$(fmt "$(j "$f.load.json" .lat_ms.p99)" 1)" \
		"$(fmt "$(j "$f.load.json" .gap_ms.max)" 1)" \
		"$(fmt "$(mb "$idle")" 2)" "$(fmt "$(mb "$peak")" 2)" "$(fmt "$growth" 2)" \
		"$(fmt "$(j "$f.pss.json" .cpu_s)" 2)" "$(fmt "$(cpu_us "$f")" 1)" \
		"$errs" "$(cat "$f.busy" 2>/dev/null || echo –)"
}

# cpu_us FILE_PREFIX: the proxy tree's CPU microseconds per request of a
# run: what the proxy costs, less moved by the machine's load than req/s.
cpu_us() {
	local c n
	c=$(j "$1.pss.json" .cpu_s)
	n=$(j "$1.load.json" .requests)
	[ -n "$c" ] && [ -n "$n" ] && awk -v c="$c" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", c * 1e6 / n }'
}

# versus SCENARIO PEER: kilovolt's numbers over PEER's.
versus() {
	local k=$W/s$1-kilovolt p=$W/s$1-$2
	[ -s "$p.load.json" ] && [ -s "$k.load.json" ] || return 0
	printf '| kilovolt / %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" \
		"$(ratio "$(j "$k.load.json" .rps)" "$(j "$p.load.json" .rps)")" \
		"$(ratio "$(j "$k.load.json" .mbps)" "$(j "$p.load.json" .mbps)")" \
		"$(ratio "$(j "$k.load.json" .ttfb_ms.p99)" "$(j "$p.load.json" .ttfb_ms.p99)")" \
		"$(ratio "$(j "$k.load.json" .lat_ms.p99)" "$(j "$p.load.json" .lat_ms.p99)")" \
		"$(ratio "$(j "$k.pss.json" .peak_kb)" "$(j "$p.pss.json" .peak_kb)")" \
		"$(ratio "$(j "$k.pss.json" .cpu_s)" "$(j "$p.pss.json" .cpu_s)")" \
		"$(ratio "$(cpu_us "$k")" "$(cpu_us "$p")")"
}

# Full and resumed upstream handshakes per target in a TLS scenario's
# median round, and (scenario 7) all of them per 1,000 requests.
# switches_line SCENARIO: the proxy tree's context switches per 1,000
# requests (every thread of every process, bench/pss), voluntary (a thread
# slept in epoll_wait with nothing left to do) / involuntary (the scheduler
# took its CPU: with three programs on two CPUs, the share it lost).
switches_line() {
	local s=$1 t f line= n v iv
	for t in $TARGETS; do
		f=$W/s$s-$t
		[ -s "$f.pss.json" ] && [ -s "$f.load.json" ] || continue
		v=$(j "$f.pss.json" .vcsw)
		iv=$(j "$f.pss.json" .ivcsw)
		n=$(j "$f.load.json" .requests)
		[ -n "$v" ] && [ -n "$iv" ] && [ -n "$n" ] || continue
		line="$line${line:+, }$t $(awk -v v="$v" -v i="$iv" -v n="$n" \
			'BEGIN { if (n > 0) printf "%.1f / %.1f", v * 1000 / n, i * 1000 / n; else print "–" }')"
	done
	[ -n "$line" ] && { echo; echo "Context switches per 1,000 requests, voluntary / involuntary: $line."; }
	return 0
}

tls_handshakes() {
	local s=$1 t f line= full res n
	for t in $TARGETS; do
		f=$W/s$s-$t
		[ -s "$f.tls.json" ] || continue
		full=$(j "$f.tls.json" .full)
		res=$(j "$f.tls.json" .resumed)
		line="$line${line:+, }$t $full / $res"
		if [ "$s" = 7 ]; then
			n=$(j "$f.load.json" .requests)
			line="$line ($(awk -v a="$full" -v b="$res" -v n="$n" \
				'BEGIN { if (n > 0) printf "%.2f", (a + b) * 1000 / n; else print "–" }') per 1,000 requests)"
		fi
	done
	[ -n "$line" ] && { echo; echo "Upstream TLS handshakes, full / resumed: $line."; }
	return 0
}

# round_ratios SCENARIO PEER: kilovolt's key number over PEER's, round by
# round (the rounds interleave the targets, so each pair ran within the
# same minute); prints "r1 / r2 / r3, median M, lowest L".
round_ratios() {
	local s=$1 p=$2 num=${3:-kilovolt} r a b v list
	v=$(for r in $(seq 1 "$ROUNDS"); do
		a=$(j "$W/s$s-$num.r$r.load.json" "$(key_metric "$s")")
		b=$(j "$W/s$s-$p.r$r.load.json" "$(key_metric "$s")")
		[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.3f\n", a / b }'
	done)
	[ -n "$v" ] || return 0
	list=$(echo "$v" | awk '{ printf "%s%.2f", (NR > 1 ? " / " : ""), $1 }')
	echo "$v" | sort -g | awk -v l="$list" '{ a[NR] = $1 }
		END { printf "%s, median %.2f, lowest %.2f", l, a[int((NR + 1) / 2)], a[1] }'
}

# round_stat SCENARIO PEER median|lowest [NUM]: one number of round_ratios.
round_stat() {
	round_ratios "$1" "$2" "${4:-kilovolt}" | sed -n "s/.*$3 \([0-9.]*\).*/\1/p"
}

# The pairs of a throughput scenario, per peer (the pinned peers and
# kvfree only when they ran: kilovolt / kvfree is what pinning is worth).
paired_lines() {
	local s=$1 p line
	case $s in 1|2|7) ;; *) return 0 ;; esac
	for p in haproxy nginx haproxy-pinned nginx-pinned kvfree; do
		line=$(round_ratios "$s" "$p")
		[ -n "$line" ] && { echo; echo "kilovolt / $p, $(key_metric "$s" | tr -d .) round by round: $line."; }
	done
	return 0
}

# skip_target SCENARIO TARGET: the pairs that are not run.
skip_target() {
	case $1 in 4|5|7) [ "$2" = direct ] && return 0 ;; esac
	[ "$2" = kvcluster ] && [ "$1" != 1 ] && return 0
	[ "$2" = kvlimits ] && [ "$1" != 1 ] && [ "$1" != 2 ] && return 0
	[ "$2" = kvossl ] && [ "$1" != 5 ] && [ "$1" != 7 ] && return 0
	# kvfree streams too: pinning must not cost the long streams.
	case $2/$1 in *-pinned/[17]|kvfree/[1237]) ;; *-pinned/*|kvfree/*) return 0 ;; esac
	# Scenario 8 is kilovolt against itself with a target killed.
	[ "$2" = kvkill ] && [ "$1" != 8 ] && return 0
	[ "$1" = 8 ] && [ "$2" != kilovolt ] && [ "$2" != kvkill ] && return 0
	return 1
}

cgroup_table() {
	local t f
	echo
	echo "| target | cgroup peak MiB | limit hits (failcnt) | OOM kills | survived | errors |"
	echo "|---|---:|---:|---:|---|---:|"
	for t in $TARGETS; do
		f=$W/s4-$t
		[ "$t" = direct ] && continue
		[ -s "$f.cg.json" ] || continue
		printf '| %s | %s | %s | %s | %s | %s |\n' "$t" \
			"$(awk -v b="$(j "$f.cg.json" .cg_peak)" 'BEGIN { printf "%.2f", b / 1048576 }')" \
			"$(j "$f.cg.json" .cg_failcnt)" "$(j "$f.cg.json" .cg_oom_kills)" \
			"$(j "$f.alive.json" .survived)" "$(j "$f.load.json" .errors)"
	done
}

# kvcluster against kilovolt without [cluster], and Redis commands per request.
cluster_line() {
	local c=$W/s$1-kvcluster k=$W/s$1-kilovolt n calls
	n=$(j "$c.load.json" .requests)
	calls=$(( $(cat "$c.rc1" 2>/dev/null || echo 0) - $(cat "$c.rc0" 2>/dev/null || echo 0) ))
	echo
	echo "kilovolt with [cluster] (leases from a local Redis): req/s $(fmt "$(j "$c.load.json" .rps)" 0)" \
		"= $(ratio "$(j "$c.load.json" .rps)" "$(j "$k.load.json" .rps)") of kilovolt without it;" \
		"$calls Redis commands for $n requests" \
		"($(awk -v c="$calls" -v n="$n" 'BEGIN { if (n > 0) printf "%.5f", c / n; else print "–" }') per request)."
}

# kvlimits against kilovolt: the cost of rate limits that never refuse.
limits_line() {
	local s=$1 l=$W/s$1-kvlimits k=$W/s$1-kilovolt
	echo
	echo "kilovolt with rpm and tpm limits (never refusing): $(key_metric "$s" | tr -d .)" \
		"$(ratio "$(j "$l.load.json" "$(key_metric "$s")")" "$(j "$k.load.json" "$(key_metric "$s")")") of kilovolt" \
		"without them in the median rounds; round by round: $(round_ratios "$s" kilovolt kvlimits)."
}

# Scenario 8: the errors and the latency a killed target cost the clients.
failover_lines() {
	local k=$W/s8-kilovolt x=$W/s8-kvkill
	[ -s "$x.load.json" ] || return 0
	echo
	echo "Killing one of three targets halfway: $(j "$x.load.json" .errors) client errors in" \
		"$(j "$x.load.json" .requests) requests (goal 0; by kind: $(jq -c .errors_by "$x.load.json" 2>/dev/null));" \
		"latency p99 $(fmt "$(j "$x.load.json" .lat_ms.p99)" 2) ms against $(fmt "$(j "$k.load.json" .lat_ms.p99)" 2) ms" \
		"with all three up ($(awk -v a="$(j "$x.load.json" .lat_ms.p99)" -v b="$(j "$k.load.json" .lat_ms.p99)" \
		'BEGIN { if (a != "" && b != "") printf "%+.2f ms", a - b; else print "–" }') added), max" \
		"$(fmt "$(j "$x.load.json" .lat_ms.max)" 1) ms against $(fmt "$(j "$k.load.json" .lat_ms.max)" 1) ms;" \
		"$(cat "$x.retries" 2>/dev/null || echo –) requests moved to another target (log lines)."
	echo
	echo "What the gateway logged, by target and status: with the kill: $(cat "$x.targets" 2>/dev/null);" \
		"without: $(cat "$k.targets" 2>/dev/null)."
}

scenario_table() {
	local s=$1 t
	echo
	echo "### $(scenario_title "$s")"
	echo
	echo "| target | req/s | MB/s | req/s vs direct | TTFB p50 / p99 ms | latency p50 / p99 ms | max chunk gap ms | idle PSS MiB | peak PSS MiB | PSS growth KiB/stream | CPU s | CPU us/req | errors | CPU busy before % |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for t in $TARGETS; do
		skip_target "$s" "$t" && continue
		table_row "$s" "$t"
	done
	echo
	echo "| ratio | req/s | MB/s | TTFB p99 | latency p99 | peak PSS | CPU s | CPU us/req |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	for t in haproxy nginx; do versus "$s" "$t"; done
	paired_lines "$s"
	[ -s "$W/s$s-kvcluster.load.json" ] && cluster_line "$s"
	[ -s "$W/s$s-kvlimits.load.json" ] && limits_line "$s"
	[ "$s" = 8 ] && failover_lines
	if [ -s "$W/s$s-kilovolt.workers" ]; then
		echo
		echo "kilovolt responses per worker: $(cat "$W/s$s-kilovolt.workers")."
	fi
	[ "$s" = 4 ] && cgroup_table
	[ "$s" = 5 ] || [ "$s" = 7 ] && tls_handshakes "$s"
	[ "$s" = 1 ] || [ "$s" = 7 ] && switches_line "$s"
	return 0
}

# ---- the targets of issue 6, checked ------------------------------------------------

# verdict NAME GOT OP WANT: one line, met or missed.
verdict() {
	local ok
	ok=$(awk -v g="$2" -v w="$4" -v op="$3" 'BEGIN {
		if (g == "" || w == "") { print "n/a"; exit }
		r = (op == "<=") ? (g + 0 <= w + 0) : (g + 0 >= w + 0)
		print r ? "met" : "MISSED" }')
	echo "| $1 | $2 | $3 $4 | $ok |"
}

targets() {
	local k1=$W/s1-kilovolt k2=$W/s2-kilovolt k3=$W/s3-kilovolt h=haproxy idle s
	echo
	echo "### Targets (issue 6)"
	echo
	echo "| target | kilovolt | wanted | verdict |"
	echo "|---|---:|---:|---|"
	idle=$(for s in $SCENARIOS; do j "$W/s$s-kilovolt.pss.json" .idle_kb; done | sort -n | tail -n 1)
	verdict "idle PSS, master + workers, largest of the scenarios (KiB)" "$idle" "<=" 4096
	verdict "scenario 2 peak PSS (KiB)" "$(j "$k2.pss.json" .peak_kb)" "<=" 8192
	verdict "scenario 2 peak PSS (KiB) vs 0.75 × HAProxy" "$(j "$k2.pss.json" .peak_kb)" "<=" \
		"$(awk -v p="$(j "$W/s2-$h.pss.json" .peak_kb)" 'BEGIN { if (p != "") printf "%.0f", p * 0.75 }')"
	verdict "scenario 2 MB/s vs HAProxy" "$(j "$k2.load.json" .mbps)" ">=" "$(j "$W/s2-$h.load.json" .mbps)"
	verdict "scenario 3 peak PSS (KiB)" "$(j "$k3.pss.json" .peak_kb)" "<=" 10240
	verdict "scenario 3 PSS growth (KiB/stream)" "$(awk -v p="$(j "$k3.pss.json" .peak_kb)" \
		-v i="$(j "$k3.pss.json" .idle_kb)" 'BEGIN { if (p != "") printf "%.2f", (p - i) / 1000 }')" "<=" 4
	verdict "scenario 3 TTFB p99 (ms) vs HAProxy" "$(j "$k3.load.json" .ttfb_ms.p99)" "<=" \
		"$(j "$W/s3-$h.load.json" .ttfb_ms.p99)"
	verdict "scenario 1 req/s vs HAProxy" "$(j "$k1.load.json" .rps)" ">=" "$(j "$W/s1-$h.load.json" .rps)"
	verdict "scenario 4 cgroup peak (bytes) vs the lowest peer" "$(j "$W/s4-kilovolt.cg.json" .cg_peak)" "<=" \
		"$(for t in haproxy nginx; do j "$W/s4-$t.cg.json" .cg_peak; done | sort -n | head -n 1)"
	verdict "scenario 5 peak PSS (KiB), issue 16" "$(j "$W/s5-kilovolt.pss.json" .peak_kb)" "<=" 15360
	verdict "scenario 5 full upstream handshakes, issue 16" "$(j "$W/s5-kilovolt.tls.json" .full)" "<=" 2
	verdict "scenario 4 kilovolt survived (1 = yes)" \
		"$(j "$W/s4-kilovolt.alive.json" '.survived | if . then 1 else 0 end')" ">=" 1
}

# The goals of issue 17: ratios of paired rounds.
goals() {
	local s p
	echo
	echo "### Goals (issue 17: ratios of the paired rounds)"
	echo
	echo "| goal | kilovolt | wanted | verdict |"
	echo "|---|---:|---:|---|"
	for s in 1 7; do
		for p in haproxy nginx; do
			verdict "scenario $s req/s / $p, median of the rounds" "$(round_stat "$s" "$p" median)" ">=" 1.05
		done
	done
	verdict "scenario 2 MB/s / haproxy, lowest round" "$(round_stat 2 haproxy lowest)" ">=" 1.05
}

machine() {
	echo "- machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
		"$(awk '/^MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
	echo "- versions: kilovolt $("$KVD" -V 2>&1 | head -n 1), $(haproxy -v 2>/dev/null | head -n 1 | cut -d' ' -f1-3)," \
		"$(nginx -v 2>&1 | head -n 1)"
	echo "- command: \`cd BUILDDIR && make bench\` (runs \`bench/run.sh\`), $(date -u '+%Y-%m-%d %H:%M UTC')," \
		"commit ${BENCH_REV:-$(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
	echo "- open-file limit $NOFILE for every process; loadgen, the mock and the proxy share the machine"
}

# The hand-written analysis below the NOTES marker of the committed
# RESULTS.md outlives a new run (the tables above it are replaced).
NOTES='<!-- notes: written by hand, kept by bench/run.sh -->'

write_results() {
	local s src=$top_srcdir/bench/RESULTS.md
	{
		echo "# Benchmark results: kilovolt, HAProxy, nginx"
		echo
		echo "Written by \`bench/run.sh\` (\`make bench\`); see that script for the method."
		echo "kilovolt runs with 2 workers and full accounting (usage injected and filtered,"
		echo "budgets reserved and settled); HAProxy with 2 threads, nginx with 2 workers,"
		echo "both unbuffered with upstream keep-alive. PSS is summed over the proxy's whole"
		echo "process tree every 100 ms; growth per stream is (peak − idle) / concurrent streams."
		echo "CPU s is the proxy tree's user+system time during the load, CPU us/req that over"
		echo "the requests served (what a request costs the proxy). Errors are responses"
		echo "that were not status 200 with complete framing (and, for SSE, \`data: [DONE]\`)."
		echo "The machine is shared: each run waits (up to 10 s) for the CPUs to be under 50 %"
		echo "busy; the last column says how busy they were in the second before it began."
		echo "Each scenario ran $ROUNDS times, the targets interleaved; each row is that target's"
		echo "round with the median req/s (scenario 1), TTFB p99 (3) or MB/s (2, 4), all its"
		echo "numbers from that one round."
		echo
		machine
		for s in $SCENARIOS; do scenario_table "$s"; done
		targets
		goals
		if [ -f "$src" ] && grep -qF -- "$NOTES" "$src"; then
			echo
			sed -n "\|$NOTES|,\$p" "$src"
		fi
	} >"$W/RESULTS.md"
	cp "$W/RESULTS.md" "$top_builddir/bench/RESULTS.md"
	if [ -w "$top_srcdir/bench" ] && ! [ "$top_srcdir/bench" -ef "$top_builddir/bench" ]; then
		cp "$top_builddir/bench/RESULTS.md" "$top_srcdir/bench/RESULTS.md"
	fi
}

# ---- main ---------------------------------------------------------------------------

main() {
	local s t
	for f in "$LOADGEN" "$PSS" "$MOCK" "$BENCHMOCK" "$KVD"; do
		[ -x "$f" ] || { log "$f is not built (run make first)"; exit 1; }
	done
	command -v jq >/dev/null || { log "jq is needed"; exit 1; }
	"$LOADGEN" --self-test >"$W/selftest.log" 2>&1 ||
		{ cat "$W/selftest.log" >&2; log "loadgen --self-test failed: its numbers cannot be trusted"; exit 1; }
	install_peers
	raise_nofile
	mkdir -p "$top_builddir/bench"
	bench_spawn mock MOCK_PID MOCK_PORT "$MOCK" -p 0 || exit 1
	bench_spawn bm BM_PID BM_PORT "$BENCHMOCK" || exit 1
	case " $SCENARIOS " in *" 5 "*) start_mock_tls || exit 1 ;; esac
	case " $SCENARIOS " in *" 7 "*) start_benchmock_tls || exit 1 ;; esac
	# Rounds interleave the targets, so a busy spell of the shared machine
	# falls on all of them rather than on one.
	for s in $SCENARIOS; do
		for r in $(seq 1 "$ROUNDS"); do
			for t in $TARGETS; do
				skip_target "$s" "$t" && continue
				have_target "$t" || { log "$t is not installed, skipped"; continue; }
				run_one "$s" "$t" "$r"
			done
		done
		for t in $TARGETS; do pick_median "$s" "$t"; done
	done
	write_results
	cat "$top_builddir/bench/RESULTS.md"
	return $FAILED
}

main "$@"
