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

[ $fail = 0 ] && echo "PASS t_systemd"
exit $fail
