#!/bin/bash
# `make install DESTDIR=...` puts every file where the configured layout says,
# the unit names the installed paths, the sysusers entry makes the user, and
# `make uninstall` takes it all away again.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
MAKE=${MAKE:-make}

tmp=$(mktemp -d /tmp/kv-install.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The directories exactly as the build was configured (make expands them).
dirs=$(cd "$top_builddir" && MAKEFLAGS= $MAKE -s -f Makefile -f - kv-print-dirs <<'MK'
kv-print-dirs:
	@echo "bindir='$(bindir)' sbindir='$(sbindir)' sysconfdir='$(sysconfdir)'"
	@echo "mandir='$(mandir)' sysusersdir='$(sysusersdir)' localstatedir='$(localstatedir)'"
	@echo "systemdsystemunitdir='$(systemdsystemunitdir)' version='$(VERSION)'"
	@echo "pkgdatadir='$(pkgdatadir)'"
MK
) || { echo "FAIL: cannot read the build's directories"; exit 1; }
eval "$dirs"
echo "layout: sbindir=$sbindir sysconfdir=$sysconfdir unitdir=$systemdsystemunitdir"

dest=$tmp/root
if ! (cd "$top_builddir" && MAKEFLAGS= $MAKE -s install DESTDIR="$dest") > "$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL: make install"
	exit 1
fi

want() {	# want MODE PATH: exists as a regular file with that mode
	local f=$dest$2 mode
	if [ ! -f "$f" ]; then bad "missing $2"; return; fi
	mode=$(stat -c %a "$f")
	[ "$mode" = "$1" ] || bad "$2 has mode $mode, want $1"
	echo "ok $2 ($mode)"
}
want 755 "$sbindir/kilovoltd"
want 755 "$bindir/kvctl"
want 644 "$sysconfdir/kilovolt/kilovolt.ini"
want 644 "$mandir/man8/kilovoltd.8"
want 644 "$mandir/man8/kvctl.8"
want 644 "$mandir/man5/kilovolt.ini.5"
want 644 "$sysusersdir/kilovolt.conf"
want 644 "$pkgdatadir/prices-2026-07-24.json"
if [ -n "$systemdsystemunitdir" ] && [ "$systemdsystemunitdir" != no ]; then
	unit=$dest$systemdsystemunitdir/kilovolt.service
	want 644 "$systemdsystemunitdir/kilovolt.service"
else
	unit=
	echo "unit not installed (--with-systemdsystemunitdir=no)"
fi

# Nothing installed that this test does not know about.
extra=$(cd "$dest" && find . -type f | sed 's|^\.||' | sort | while read -r f; do
	case $f in
	"$sbindir/kilovoltd"|"$bindir/kvctl"|"$sysconfdir/kilovolt/kilovolt.ini"|\
	"$mandir"/man[58]/*|"$sysusersdir/kilovolt.conf"|"$pkgdatadir/prices-2026-07-24.json"|\
	"$systemdsystemunitdir/kilovolt.service") ;;
	*) echo "$f" ;;
	esac
done)
[ -z "$extra" ] || bad "unexpected files installed: $extra"

# The unit runs the installed binary on the installed config; no @var@ left.
if [ -n "$unit" ] && [ -f "$unit" ]; then
	grep -qx "ExecStart=$sbindir/kilovoltd -c $sysconfdir/kilovolt/kilovolt.ini" "$unit" ||
	    bad "unit's ExecStart does not name $sbindir/kilovoltd and $sysconfdir/kilovolt/kilovolt.ini"
	grep -qx "ExecStartPre=$sbindir/kilovoltd -t -c $sysconfdir/kilovolt/kilovolt.ini" "$unit" ||
	    bad "unit's ExecStartPre is not the config check"
	! grep -q '@[a-z]*@' "$unit" || bad "unit has unsubstituted @variables@"
fi

# The installed config keeps its ledger in the state directory.
grep -qx "ledger = $localstatedir/lib/kilovolt/ledger *;.*\|ledger = $localstatedir/lib/kilovolt/ledger" \
    "$dest$sysconfdir/kilovolt/kilovolt.ini" ||
    bad "installed config's ledger is not $localstatedir/lib/kilovolt/ledger: $(grep '^ledger' "$dest$sysconfdir/kilovolt/kilovolt.ini")"

# ... and names the installed catalogue.
grep -q "^prices = $pkgdatadir/prices-2026-07-24.json" "$dest$sysconfdir/kilovolt/kilovolt.ini" ||
    bad "installed config's prices is not $pkgdatadir/prices-2026-07-24.json: $(grep '^prices' "$dest$sysconfdir/kilovolt/kilovolt.ini")"

# The installed programs run (they were linked, not just copied).
if "$dest$sbindir/kilovoltd" -V > "$tmp/v.out" 2>&1 && grep -qF "$version" "$tmp/v.out"; then
	echo "ok kilovoltd -V: $(head -n1 "$tmp/v.out")"
else
	bad "installed kilovoltd -V does not say $version: $(head -n3 "$tmp/v.out")"
fi

# The installed config passes the installed daemon's own check.
# (its catalogue is under DESTDIR here, where the config names it without)
sed "s|^prices = $pkgdatadir/|prices = $dest$pkgdatadir/|" "$dest$sysconfdir/kilovolt/kilovolt.ini" \
    > "$tmp/installed.ini"
KILOVOLT_ADMIN_TOKEN=x "$dest$sbindir/kilovoltd" -t -c "$tmp/installed.ini" \
    > "$tmp/t.out" 2>&1 || bad "kilovoltd -t rejects the installed config: $(head -n3 "$tmp/t.out")"

# The man pages render without groff warnings.
if command -v groff > /dev/null; then
	for m in "$dest$mandir"/man[58]/*; do
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		[ -z "$w" ] || bad "$(basename "$m"): $w"
	done
fi

# The sysusers.d entry creates kilovolt:kilovolt in an empty root.
if command -v systemd-sysusers > /dev/null; then
	mkdir -p "$tmp/sr/etc"
	if systemd-sysusers --root="$tmp/sr" "$dest$sysusersdir/kilovolt.conf" > /dev/null 2>&1 &&
	    grep -q '^kilovolt:x:[0-9]*:[0-9]*:.*:/var/lib/kilovolt:' "$tmp/sr/etc/passwd" &&
	    grep -q '^kilovolt:x:' "$tmp/sr/etc/group"; then
		echo "ok sysusers creates user and group kilovolt"
	else
		bad "systemd-sysusers did not create kilovolt"
	fi
fi

# DESTDIR-safe uninstall: no file left behind.
(cd "$top_builddir" && MAKEFLAGS= $MAKE -s uninstall DESTDIR="$dest") > "$tmp/uninstall.log" 2>&1 ||
    bad "make uninstall: $(tail -n3 "$tmp/uninstall.log")"
left=$(find "$dest" -type f)
[ -z "$left" ] || bad "left after uninstall: $left"

[ $fail = 0 ] && echo "PASS t_install"
exit $fail
