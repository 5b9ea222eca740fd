#!/bin/bash
# Limits through the real daemon: max_connections per worker refuses the
# connection past it with a clean 503 and keeps serving the ones it holds;
# running out of file descriptors (EMFILE from accept) is logged, does not
# spin the worker, and passes once connections close; max_body answers 413
# in the provider's shape for Content-Length and chunked bodies alike; the
# status service binds loopback unless told otherwise.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl jq ss prlimit; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
RAW=$top_builddir/tests/rawclient
[ -x "$RAW" ] || skip "tests/rawclient not built"

KEY=sk-limits-test
AUTH="Authorization: Bearer $KEY"
REQ="GET /v1/models HTTP/1.1\r\nHost: gw\r\n$AUTH\r\nConnection: close\r\n\r\n"
FDS=()

# open_conns N: N more connections to the gateway held by this shell.
open_conns() {
	local i fd
	for ((i = 0; i < $1; i++)); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$KV_PORT" || return 1
		FDS+=("$fd")
	done
}

close_conns() {
	local fd
	for fd in "${FDS[@]}"; do
		exec {fd}>&-
	done
	FDS=()
}

# The connections the daemon's workers hold, from its ledger.
daemon_conns() { kv_ctl status --json | jq '[.workers[].connections] | add // 0'; }
conns_are() { [ "$(daemon_conns)" = "$1" ]; }
worker_pid() { ps -o pid= --ppid "$KV_PID" | head -n 1 | tr -d ' '; }
jqf() { jq -e "$1" "$2" >/dev/null 2>&1; }
models_ok() { [ "$(kv_curl /v1/models -m 10 -o /dev/null -w '%{http_code}' -H "$AUTH")" = 200 ]; }

kv_start_mock
KV_WORKERS=1 kv_write_config <<EOF
[server]
max_connections = 20
max_body = 1k
# The 20 idle connections are held through the checks below, which take
# longer than the default 10 s head timeout on a loaded machine.
header_timeout = 300
EOF
kv_start

# ---- max_connections = 20, one worker -------------------------------------------

open_conns 20 || fail "open 20 connections"
check "the worker holds 20 connections" kv_wait_for 20 conns_are 20
: >"$T/empty"
"$RAW" -t 10 "$KV_PORT" "$T/empty" >"$T/c21.out" 2>"$T/c21.err"
check "the 21st connection is answered and closed ($(sed 's/^rawclient: //' "$T/c21.err"))" \
	grep -qE 'end=(eof|reset)' "$T/c21.err"
check_eq "... with 503" "$(head -n 1 "$T/c21.out" | tr -d '\r' | cut -d' ' -f2)" 503
cl=$(sed -n 's/^content-length: *\([0-9]*\).*/\1/ip' "$T/c21.out" | head -n 1)
sed -n '/^\r$/,$p' "$T/c21.out" | tail -n +2 >"$T/c21.body"
check_eq "... its Content-Length matches its body" "$cl" "$(wc -c <"$T/c21.body")"
check "... a JSON error body" jqf '(.error.message|type) == "string"' "$T/c21.body"
check "... and Connection: close" grep -qi '^connection: close' "$T/c21.out"
# The way clients see it: curl sends its request before the refusal, so
# the gateway closes with unread bytes (a reset after the 503). Ten times.
got=
for ((i = 0; i < 10; i++)); do
	code=$(kv_curl /v1/models -m 10 -o /dev/null -w '%{http_code}' -H "$AUTH" 2>"$T/c21.curlerr")
	got="$got $code/$?"
done
check_eq "curl as the 21st, 10 times: 503 and a complete response (code/exit)" "$got" \
	"$(printf ' 503/0%.0s' {1..10})"
check_eq "the worker still holds exactly the 20" "$(daemon_conns)" 20
served=0
for fd in "${FDS[@]}"; do
	printf '%b' "$REQ" >&"$fd" 2>/dev/null || continue
	IFS= read -r -t 20 line <&"$fd" || continue
	[ "${line%$'\r'}" = "HTTP/1.1 200 OK" ] && served=$((served + 1))
done
check_eq "each of the 20 held connections is then served (200)" "$served" 20
close_conns
check "the worker lets them go" kv_wait_for 20 conns_are 0
check "and takes new connections again" models_ok

# ---- max_body = 1k ----------------------------------------------------------------

# body N: a chat request of exactly N bytes.
body() {
	local n=$1 pre='{"model":"gpt-4o-mini","messages":[],"pad":"' post='"}'
	printf '%s%s%s' "$pre" "$(head -c $((n - ${#pre} - ${#post})) /dev/zero | tr '\0' x)" "$post"
}
body 1024 >"$T/b1024"
body 1025 >"$T/b1025"
body 2048 >"$T/b2048"
mock_lines() { wc -l <"$MOCK_LOG"; }

# post413 DESC PATH FILTER [CURL ARGS]: 413, FILTER holds on the body, and
# the mock saw nothing.
post413() {
	local desc=$1 path=$2 filter=$3 lines code
	shift 3
	lines=$(mock_lines)
	rm -f "$T/413.json"
	code=$(kv_curl "$path" -o "$T/413.json" -w '%{http_code}' -H "$AUTH" "$@")
	check_eq "$desc: 413" "$code" 413
	check "... in the provider's shape ($(head -c 160 "$T/413.json"))" jqf "$filter" "$T/413.json"
	check_eq "... and nothing reached the upstream" "$(mock_lines)" "$lines"
}
OPENAI='.error.code == "request_too_large" and (.error.message|type) == "string"'
ANTHROPIC='.type == "error" and .error.type == "request_too_large"'
code=$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' -H "$AUTH" --data-binary @"$T/b1024")
check_eq "a body of exactly max_body (1024 bytes) passes" "$code" 200
post413 "2 KB body, Content-Length, /v1/chat/completions" /v1/chat/completions "$OPENAI" \
	--data-binary @"$T/b2048"
post413 "1025-byte body, Content-Length" /v1/chat/completions "$OPENAI" --data-binary @"$T/b1025"
# A client still sending when the 413 goes out: closed at once, the unread
# bytes would make the kernel reset the connection, and a reset destroys the
# answer the client has not read yet. The rest is read and dropped instead.
late_sender() {
	python3 - "$KV_PORT" "$KEY" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"
           "Transfer-Encoding: chunked\r\n\r\n800\r\n" % sys.argv[2]).encode() + b"x" * 2048 + b"\r\n")
time.sleep(0.5)                 # the 413 is sent meanwhile
try:
    for _ in range(16):
        s.sendall(b"4000\r\n" + b"y" * 16384 + b"\r\n")
        time.sleep(0.02)
except OSError:
    pass
time.sleep(0.3)
data = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except OSError as e:
    print("read failed: %s" % e)
print(data.split(b"\r\n", 1)[0].decode(errors="replace"))
PY
}
for ((i = 1; i <= 3; i++)); do
	check_eq "a client still sending after its 413 reads the answer ($i of 3)" \
		"$(late_sender | tail -n 1)" "HTTP/1.1 413 Payload Too Large"
done
body $((8 * 1024 * 1024)) >"$T/b8m"
for ((i = 1; i <= 5; i++)); do
	post413 "8 MB chunked body after 100-continue, still being sent at the 413 ($i of 5)" \
		/v1/chat/completions "$OPENAI" -H 'Transfer-Encoding: chunked' --data-binary @"$T/b8m"
done
post413 "2 KB body, chunked, /v1/chat/completions" /v1/chat/completions "$OPENAI" \
	-H 'Transfer-Encoding: chunked' --data-binary @"$T/b2048"
post413 "2 KB body, Content-Length, /v1/messages" /v1/messages "$ANTHROPIC" \
	--data-binary @"$T/b2048"
post413 "2 KB body, chunked, /v1/messages" /v1/messages "$ANTHROPIC" \
	-H 'Transfer-Encoding: chunked' --data-binary @"$T/b2048"
# Chunked in many small chunks: the limit counts payload, not chunks.
{
	printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n%s\r\nTransfer-Encoding: chunked\r\n\r\n' "$AUTH"
	# a JSON string that never ends: only the size can refuse it
	printf '20\r\n{"input":"%s\r\n' "$(head -c 22 /dev/zero | tr '\0' y)"
	for ((i = 1; i < 64; i++)); do printf '20\r\n%s\r\n' "$(head -c 32 /dev/zero | tr '\0' y)"; done
	printf '0\r\n\r\n'
} >"$T/small_chunks.req"
lines=$(mock_lines)
"$RAW" -t 20 "$KV_PORT" "$T/small_chunks.req" >"$T/small_chunks.out" 2>/dev/null
check_eq "2 KB in 64 chunks of 32 bytes: 413" \
	"$(head -n 1 "$T/small_chunks.out" | tr -d '\r' | cut -d' ' -f2)" 413
check_eq "... and nothing reached the upstream" "$(mock_lines)" "$lines"
check "the gateway serves on after the refusals" models_ok

kv_stop

# ---- EMFILE: the worker runs out of descriptors ------------------------------

# Start with the default max_connections; the fd limit is what runs out.
sed -i -e '/^max_connections = /d' -e '/^max_body = /d' "$T/kilovolt.ini"
kv_start
wpid=$(worker_pid)
check "one worker ($wpid)" test -n "$wpid"
check "lower the daemon's RLIMIT_NOFILE to 64" \
	eval "prlimit --pid $KV_PID --nofile=64:64 && prlimit --pid $wpid --nofile=64:64"
nfd=$(ls "/proc/$wpid/fd" | wc -l)
# The worker can take 64 - nfd; open enough more that the backlog holds some.
open_conns $((64 - nfd + 20)) || fail "open $((64 - nfd + 20)) connections"
check "the worker hits EMFILE and logs it" \
	kv_wait_for 20 grep -q 'KV0513.*[Tt]oo many open files' "$KV_LOG"
ticks() { awk '{ print $14 + $15 }' "/proc/$wpid/stat"; }
logged() { grep -c KV0513 "$KV_LOG"; }
t0=$(ticks) l0=$(logged)
sleep 3	# the measurement window: CPU used by a worker that cannot accept
t1=$(ticks) l1=$(logged)
check "... without spinning: $((t1 - t0)) ticks of CPU in 3 s (< 45)" test $((t1 - t0)) -lt 45
check "... nor flooding its log: $((l1 - l0)) KV0513 lines in 3 s (< 60)" test $((l1 - l0)) -lt 60
check "... and it is still alive" kv_alive "$wpid"
close_conns
check "once the connections close it serves again" kv_wait_for 30 models_ok
check_eq "... from the same worker" "$(worker_pid)" "$wpid"
kv_stop

# ---- the status service binds loopback -----------------------------------------

# listening ADDR:PORT: ss shows a listener on exactly that address.
listening() { ss -ltnH "sport = :$2" | awk '{ print $4 }' | grep -qx "$1:$2"; }
any_listener() { ss -ltnH "sport = :$1" | grep -q .; }

# A bare port: the status service still binds loopback only.
sport=$(kv_free_port)
sed -i "s/^status_listen = .*/status_listen = $sport/" "$T/kilovolt.ini"
KV_STATUS_PORT=$sport
kv_start
check "status_listen = PORT binds 127.0.0.1:$sport" listening 127.0.0.1 "$sport"
check "... and not 0.0.0.0:$sport" eval "! listening 0.0.0.0 $sport && ! listening '*' $sport"
check "... and answers" eval "curl -sf -m 5 http://127.0.0.1:$sport/healthz >/dev/null"
kv_stop

# No status_listen at all: the default, 127.0.0.1:9090 (when that port is free).
sed -i '/^status_listen = /d' "$T/kilovolt.ini"
if any_listener 9090; then
	echo "# port 9090 is in use here: the default-address check is skipped"
else
	kv_start
	check "the default status service listens on 127.0.0.1:9090" kv_wait_for 10 listening 127.0.0.1 9090
	check "... and not on 0.0.0.0:9090" eval "! listening 0.0.0.0 9090 && ! listening '*' 9090"
	kv_stop
fi

kv_finish
