#!/bin/bash
# kilovoltd -t: the bundled config passes (exit 0, "FILE: ok"); broken ones
# fail with exit 2 and "FILE:LINE: message" on stderr. Skips (77) only when
# the daemon has not been built.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
daemon=$top_builddir/kilovoltd
[ -x "$daemon" ] || { echo "SKIP: $daemon not built"; exit 77; }

tmp=$(mktemp -d /tmp/kv-t-config.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
unset KILOVOLT_PORT KILOVOLT_WORKERS KILOVOLT_LEDGER KILOVOLT_DEFAULT_BUDGET \
    KILOVOLT_ADMIN_TOKEN KILOVOLT_CONFIG

bad() { echo "FAIL: $*"; fail=1; }

# run_t FILE: runs `kilovoltd -t -c FILE` under a watchdog; sets rc, out, errout.
run_t() {
	timeout 10 "$daemon" -t -c "$1" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out")
	errout=$(cat "$tmp/err")
}

# expect_ok FILE
expect_ok() {
	run_t "$1"
	[ "$rc" -eq 0 ] || bad "$1: exit $rc, want 0 (stderr: $errout)"
	grep -qF "$1: ok" "$tmp/out" "$tmp/err" || bad "$1: no '$1: ok' in output: $out $errout"
}

# expect_bad NAME WANT TEXT: WANT is what stderr must hold after "FILE:".
expect_bad() {
	local f="$tmp/$1.ini"
	printf '%b' "$3" >"$f"
	run_t "$f"
	[ "$rc" -eq 2 ] || bad "$1: exit $rc, want 2"
	grep -qF -- "$f:$2" "$tmp/err" || bad "$1: stderr lacks '$f:$2': $errout"
}

expect_ok "$top_srcdir/kilovolt.ini"

# The same file with every override set, and from another directory.
KILOVOLT_PORT=18080 KILOVOLT_WORKERS=2 KILOVOLT_LEDGER=$tmp/ledger \
    KILOVOLT_DEFAULT_BUDGET=5.00 KILOVOLT_ADMIN_TOKEN=secret-admin expect_ok "$top_srcdir/kilovolt.ini"
case "$errout$out" in *secret-admin*) bad "admin token printed";; esac

up='[upstream o]\nurl = https://api.openai.com\npaths = /v1/chat/completions\n'
expect_bad unknown_section '4: unknown section [bogus]' "$up[bogus]\n"
expect_bad unknown_key '3: unknown key '"'"'listn'"'"' in [server]' "; x\n[server]\nlistn = 1\n$up"
expect_bad bad_number '2: workers: '"'"'two'"'"' is not a number' "[server]\nworkers = two\n$up"
expect_bad bad_url '2: url: bad URL' "[upstream a]\nurl = gopher://x\npaths = /x\n"
expect_bad bad_period '6: period: ' "$up\n[budget]\nperiod = hourly\n"
expect_bad bad_price '5: input: ' "$up[price m]\ninput = 1.2.3\n"
expect_bad dup_section '4: duplicate section [upstream o]' "$up$up"
expect_bad missing_env '4: api_key: environment variable KV_T_CONFIG_UNSET is not set' \
    "${up}api_key = env:KV_T_CONFIG_UNSET\n"

printf '[server]\n' >"$tmp/noup.ini"
run_t "$tmp/noup.ini"
[ "$rc" -eq 2 ] || bad "no upstream: exit $rc, want 2"
grep -qF "$tmp/noup.ini: no [upstream" "$tmp/err" || bad "no upstream: $errout"

run_t "$tmp/missing.ini"
[ "$rc" -eq 2 ] || bad "missing file: exit $rc, want 2"
grep -qF "$tmp/missing.ini: No such file or directory" "$tmp/err" || bad "missing file: $errout"

KILOVOLT_PORT=http run_t "$top_srcdir/kilovolt.ini"
[ "$rc" -eq 2 ] || bad "bad KILOVOLT_PORT: exit $rc, want 2"
grep -qF "KILOVOLT_PORT: not a port" "$tmp/err" || bad "bad KILOVOLT_PORT: $errout"

# A secret in a broken line must not reach the log.
printf '%b' "${up}api_key = sk-VERYSECRET\napi_key = sk-VERYSECRET\n" >"$tmp/secret.ini"
run_t "$tmp/secret.ini"
[ "$rc" -eq 2 ] || bad "secret: exit $rc, want 2"
case "$errout$out" in *VERYSECRET*) bad "secret printed: $errout";; esac

[ $fail -eq 0 ] && echo "PASS: t_config"
exit $fail
