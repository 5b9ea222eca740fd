#!/bin/bash
# The systemd unit: systemd itself accepts it (systemd-analyze verify), it
# keeps the contract's directives, and its exposure score is at most 2.0.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
MAX_EXPOSURE=2.0

if ! command -v systemd-analyze > /dev/null; then
	echo "SKIP: systemd-analyze not installed (Debian package: systemd)"
	exit 77
fi
unit=$top_builddir/systemd/kilovolt.service
[ -f "$unit" ] || { echo "FAIL: $unit was not built"; exit 1; }

tmp=$(mktemp -d /tmp/kv-systemd.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The directives the deployment contract names, each exactly once.
for d in 'Type=notify' 'ExecReload=/bin/kill -HUP $MAINPID' 'KillSignal=SIGTERM' \
    'TimeoutStopSec=40' 'StateDirectory=kilovolt' 'User=kilovolt' 'Group=kilovolt' \
    'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' 'PrivateDevices=yes' \
    'NoNewPrivileges=yes' 'CapabilityBoundingSet=CAP_NET_BIND_SERVICE' \
    'AmbientCapabilities=CAP_NET_BIND_SERVICE' \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' \
    'SystemCallFilter=@system-service' 'SystemCallArchitectures=native' \
    'MemoryMax=64M' 'LimitNOFILE=65536' 'Restart=on-failure' 'RestartPreventExitStatus=2'; do
	n=$(grep -cxF -- "$d" "$unit")
	[ "$n" = 1 ] || bad "unit has '$d' $n times, want 1"
done
grep -q '^ExecStartPre=.*/kilovoltd -t -c ' "$unit" || bad "no ExecStartPre config check"
grep -q '^ExecStart=.*/kilovoltd -c ' "$unit" || bad "no ExecStart"

# verify loads the unit as systemd would and checks the command exists, so
# check a copy that runs this build's kilovoltd (the configured path is not
# installed yet). Man pages are checked by t_install.
sed "s|^\(Exec[A-Za-z]*=\)[^ ]*/kilovoltd|\1$top_builddir/kilovoltd|" "$unit" > "$tmp/kilovolt.service"
if [ -x "$top_builddir/kilovoltd" ]; then
	(cd "$tmp" && systemd-analyze verify --man=no "$tmp/kilovolt.service") > "$tmp/verify.out" 2>&1
	rc=$?
	# Warnings about the host (no running manager here) are not the unit's.
	if [ $rc != 0 ] || grep -v -e '^$' -e 'Failed to connect' "$tmp/verify.out" | grep -q .; then
		cat "$tmp/verify.out"
		bad "systemd-analyze verify (exit $rc)"
	else
		echo "ok systemd-analyze verify"
	fi
else
	bad "$top_builddir/kilovoltd not built"
fi

# Exposure: systemd's own 0 (locked down) .. 10 (unprotected) score.
(cd "$tmp" && systemd-analyze security --offline=true --no-pager "$unit") > "$tmp/sec.out" 2>&1
grep -E '^✗' "$tmp/sec.out" | cut -c1-100
line=$(grep 'Overall exposure level' "$tmp/sec.out")
echo "$line"
score=$(echo "$line" | sed -n 's/.*: \([0-9][0-9.]*\) .*/\1/p')
if [ -z "$score" ]; then
	cat "$tmp/sec.out"
	bad "no exposure score from systemd-analyze security"
elif awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }'; then
	echo "ok exposure $score <= $MAX_EXPOSURE"
else
	bad "exposure $score > $MAX_EXPOSURE"
fi

# Type=notify end to end: the daemon itself tells a listener on
# NOTIFY_SOCKET (abstract, as systemd uses) READY=1, RELOADING=1 on SIGHUP
# and STOPPING=1 on SIGTERM, then exits 0.
notify_check() {
	local sock=@kv-t-systemd-$$ lpid kpid i port sport rc
	python3 - "$sock" "$tmp/notify.out" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1][1:])
s.settimeout(1)
out = open(sys.argv[2], "w")
out.write("BOUND\n"); out.flush()
end = time.time() + 60
while time.time() < end:
    try:
        d = s.recv(4096).decode()
    except socket.timeout:
        continue
    out.write(d + "\n"); out.flush()
    if "STOPPING=1" in d:
        break
PY
	lpid=$!
	for ((i = 0; i < 50; i++)); do grep -q BOUND "$tmp/notify.out" 2> /dev/null && break; sleep 0.1; done
	port=$("$top_builddir/tests/mock_upstream" --free-port)
	sport=$("$top_builddir/tests/mock_upstream" --free-port)
	sed -e "s|^status_listen = .*|status_listen = 127.0.0.1:$sport|" \
	    -e "s|^prices = data/|prices = $top_srcdir/data/|" "$top_srcdir/kilovolt.ini" > "$tmp/kv.ini"
	NOTIFY_SOCKET=$sock KILOVOLT_PORT=$port KILOVOLT_WORKERS=1 KILOVOLT_LEDGER=$tmp/ledger \
	    "$top_builddir/kilovoltd" -c "$tmp/kv.ini" > "$tmp/kv.log" 2>&1 &
	kpid=$!
	waitfor() {	# waitfor PATTERN: in the datagrams received, within 10 s
		local j
		for ((j = 0; j < 100; j++)); do grep -q "$1" "$tmp/notify.out" && return 0; sleep 0.1; done
		return 1
	}
	if waitfor '^READY=1'; then echo "ok READY=1 after start"; else bad "no READY=1 from kilovoltd"; fi
	grep -q '^STATUS=' "$tmp/notify.out" && echo "ok $(grep -m1 '^STATUS=' "$tmp/notify.out")"
	kill -HUP "$kpid"
	if waitfor '^RELOADING=1'; then echo "ok RELOADING=1 on SIGHUP"; else bad "no RELOADING=1 on SIGHUP"; fi
	# systemd waits for READY=1 again before it calls the reload done.
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^READY=1' "$tmp/notify.out")" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(grep -c '^READY=1' "$tmp/notify.out")" -ge 2 ] && echo "ok READY=1 after the reload" ||
	    bad "no READY=1 after the reload"
	kill -TERM "$kpid"
	if waitfor '^STOPPING=1'; then echo "ok STOPPING=1 on SIGTERM"; else bad "no STOPPING=1 on SIGTERM"; fi
	for ((i = 0; i < 400; i++)); do kill -0 "$kpid" 2> /dev/null || break; sleep 0.1; done
	if kill -0 "$kpid" 2> /dev/null; then
		bad "kilovoltd still running 40 s after SIGTERM"
		kill -KILL "$kpid"
	fi
	wait "$kpid"; rc=$?
	[ $rc = 0 ] || { bad "kilovoltd exited $rc after SIGTERM"; tail -n 5 "$tmp/kv.log"; }
	kill "$lpid" 2> /dev/null
	wait "$lpid" 2> /dev/null
	if grep -E 'AddressSanitizer|runtime error' "$tmp/kv.log"; then bad "sanitizer report"; fi
}
if ! command -v python3 > /dev/null; then
	echo "skip sd_notify check: no python3 for the listener"
elif [ -x "$top_builddir/kilovoltd" ] && [ -x "$top_builddir/tests/mock_upstream" ]; then
	notify_check
fi

[ $fail = 0 ] && echo "PASS t_systemd"
exit $fail
