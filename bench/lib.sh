# bench/lib.sh: what the bench scripts share, sourced by them: stopping a
# process they started, waiting for a port, starting a mock that writes its
# port to a file, and the [server] and [budget] sections of the kilovolt
# they measure. The caller sets W (its work dir) and defines log().

# bench_stop PID [TENTHS]: SIGTERM, up to TENTHS tenths of a second (100)
# to leave, then SIGKILL; reaps it. Nothing to do for an empty PID.
bench_stop() {
	local pid=$1 tenths=${2:-100} i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < tenths; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# bench_port_open PORT: something accepts connections there (no request sent).
bench_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# bench_wait_port PORT PID [TENTHS]: up to TENTHS tenths of a second (100)
# for PORT to accept while PID lives.
bench_wait_port() {
	local i
	for ((i = 0; i < ${3:-100}; i++)); do
		kill -0 "$2" 2>/dev/null || return 1
		bench_port_open "$1" && return 0
		sleep 0.1
	done
	return 1
}

# bench_wait_portfile FILE PID: up to 10 s for FILE to hold the port PID
# listens on; prints it.
bench_wait_portfile() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$1" ] && { cat "$1"; return 0; }
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# bench_spawn NAME PIDVAR PORTVAR PROGRAM [ARGS...]: PROGRAM -P $W/NAME.port
# ARGS in the background (bench/benchmock and tests/mock_upstream write the
# port they listen on there), its output in $W/NAME.err; sets PIDVAR and
# PORTVAR. Returns 1, having said why, when it did not start.
bench_spawn() {
	local name=$1 pidvar=$2 portvar=$3 prog=$4 port
	shift 4
	"$prog" -P "$W/$name.port" "$@" </dev/null >"$W/$name.err" 2>&1 &
	printf -v "$pidvar" '%s' "$!"
	port=$(bench_wait_portfile "$W/$name.port" "$!") ||
		{ log "$(basename "$prog") ($name) did not start"; cat "$W/$name.err" >&2; return 1; }
	printf -v "$portvar" '%s' "$port"
}

# bench_kv_server PORT WORKERS MAX_KEYS STATUS_LISTEN: the [server] section
# of a measured kilovolt, its ledger in $W; more [server] lines may follow.
bench_kv_server() {
	cat <<EOF
[server]
listen = 127.0.0.1:$1
workers = $2
status_listen = $4
ledger = $W/ledger
max_keys = $3
shutdown_timeout = 5
EOF
}

# bench_kv_budget: the [budget] section: every key allowed, a budget no
# run spends, no period; more [budget] lines may follow.
bench_kv_budget() {
	cat <<EOF

[budget]
default = 100000.00
period = none
unknown_keys = allow
reserve_output_tokens = 1024
EOF
}
