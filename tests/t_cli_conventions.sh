#!/bin/bash
# t_cli_conventions (issue 24, points 7 and 8): both programs take --help
# and --version (exit 0) as nginx and redis do; the version is
# configure.ac's and -V names the libraries it was built with; a bad option
# exits 2; `kvctl forget` of a key of the config exits 0 once the master
# did it (it gives the key a fresh account at once); start-up says so when
# it listens on a non-loopback address with no keys.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"

want=$(sed -n 's/^AC_INIT(\[kilovolt\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
check "configure.ac names a version" test -n "$want"

for prog in "$KV_DAEMON_BIN" "$KV_CTL_BIN"; do
	name=$(basename "$prog")
	"$prog" --help >"$T/help" 2>&1
	check_eq "$name --help exits 0" "$?" 0
	check "$name --help prints the usage" grep -q "^usage: $name" "$T/help"
	"$prog" --version >"$T/version" 2>&1
	check_eq "$name --version exits 0" "$?" 0
	check "$name --version says configure.ac's version $want" grep -qx "$name $want" \
		<(head -n 1 "$T/version")
	"$prog" --no-such-flag >/dev/null 2>&1
	check_eq "$name --no-such-flag exits 2" "$?" 2
done
"$KV_DAEMON_BIN" -V >"$T/V"
check "kilovoltd -V names OpenSSL and libmicrohttpd" \
	eval "grep -q OpenSSL '$T/V' && grep -q libmicrohttpd '$T/V'"

# ---- relative paths resolve against the config file's directory (point 1) -------

mkdir -p "$T/sub"
printf '[server]\nledger = ./var/ledger\n[upstream u]\nurl = http://127.0.0.1:1\npaths = /v1/x\n' \
	>"$T/sub/kv.ini"
(cd / && "$KV_CTL_BIN" -c "$T/sub/kv.ini" keys) >/dev/null 2>"$T/rel.err"
check "kvctl -c DIR/kv.ini from / looks for DIR/var/ledger" \
	grep -qF "no ledger at $T/sub/var/ledger " "$T/rel.err"

kv_start_mock
kv_write_config <<EOF
[key carol]
key = sk-carol-cli
budget = 3.00
EOF
kv_start
ID=$(id_of sk-carol-cli)
kv_curl /v1/chat/completions -o /dev/null -H "Authorization: Bearer sk-carol-cli" \
	-d '{"model":"gpt-4o-mini","max_tokens":5}'
check "carol has spent something" test "$(kv_ctl keys --json |
	jq -r --arg id "$ID" '.keys[] | select(.id == $id) | .spent_nusd')" -gt 0
kv_ctl forget carol >"$T/forget" 2>&1
check_eq "kvctl forget of a key of the config exits 0" "$?" 0
check "... and says it forgot it" grep -q "^forgot $ID" "$T/forget"
check_eq "... carol has a fresh account" "$(kv_ctl keys --json |
	jq -r --arg id "$ID" '.keys[] | select(.id == $id) | .spent_nusd')" 0
check "on 127.0.0.1 with a [key], no warning about an open listener" \
	eval "! grep -q KV0131 '$KV_LOG'"

# ---- a public listener without keys is said once at start-up (point 1) ------------

kv_stop
rm -f "$T/kilovolt.ini"
printf '[server]\nworkers = 1\n' | kv_write_config
sed -i "s/^listen = 127.0.0.1:/listen = 0.0.0.0:/" "$T/kilovolt.ini"
kv_start
check "on 0.0.0.0 without keys, start-up warns (KV0131) naming the address" \
	grep -q "KV0131.*listening on 0.0.0.0:$KV_PORT (not loopback) with no kilovolt keys" "$KV_LOG"
check_eq "... once" "$(grep -c KV0131 "$KV_LOG")" 1
check "one worker is 'started: 1 worker,', not '1 workers' (point 9)" \
	grep -q "kilovoltd started: 1 worker, " "$KV_LOG"

kv_finish
