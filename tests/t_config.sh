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

# kilovoltd -T: the effective config as an ini. Read back by -t it is
# accepted and prints the same; no secret reaches the output.
: >"$tmp/ca.pem"
cat >"$tmp/full.ini" <<EOF
[server]
listen = [::1]:18080
workers = 3
status_listen = 19090
ledger = ./var/ledger
client_timeout = 2m
upstream_timeout = 5400
max_body = 65536
memory_limit = 64m
admin_token = adm-SECRET-token
cors_origins = https://app.example http://127.0.0.1:3000
request_log = logs/requests.jsonl
[budget]
default = 0.000000001
period = daily
unknown_keys = deny
rpm = 60
drain_timeout = 90
on_cut = drain
[upstream pool]
url = http://127.0.0.1:1/base http://127.0.0.1:2
url = http://[::1]:3
paths = /v1/chat/completions /v1/responses
models = gpt-* o3*
api_key = sk-PROVIDER-SECRET
model_map = gpt-4o=gpt-4o-2024-08-06
fallback = spare
health_check = /health?deep=1
health_interval = 1m
eject_time = 90s
[upstream spare]
url = http://127.0.0.1:4
free_paths = /v1/models
shared_stored_objects = yes
tls_record_layer = openssl
[price default]
input = 3
output = 15
[price gpt-*]
input = 1.25
output = 10
web_search = 10.0000001
long_context_threshold = 200000
long_context_input = 2.5
long_context_output = 20
[key alice]
key = kv-RAW-KEY-SECRET
budget = 25
rpm = 10
[key bob]
key = sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855
[cluster]
redis = redis+sentinel://127.0.0.1,[::1]:26380/mymaster
password = redis-PASS-SECRET
user = gw
host_id = gw1.test
ca_file = ca.pem
lease_ttl = 30s
departed_after = 1h
[alerts]
webhook = https://hooks.example/services/HOOK-SECRET
thresholds = 50 90
format = slack
EOF
mkdir -p "$tmp/other"
(cd "$tmp" && timeout 10 "$daemon" -T -c full.ini) >"$tmp/other/dump1.ini" 2>"$tmp/dump1.err"
rc=$?
[ "$rc" -eq 0 ] || bad "-T: exit $rc, want 0: $(cat "$tmp/dump1.err")"
grep -qF "full.ini: ok" "$tmp/dump1.err" || bad "-T: no 'ok' on stderr"
grep -q 'SECRET' "$tmp/other/dump1.ini" "$tmp/dump1.err" && bad "-T: a secret printed"
for want in 'listen = [::1]:18080' 'status_listen = 127.0.0.1:19090' \
    "ledger = $tmp/var/ledger" "request_log = $tmp/logs/requests.jsonl" \
    'client_timeout = 2m' 'upstream_timeout = 1h30m' 'max_body = 64k' \
    'memory_limit = 64m' 'admin_token = ***' 'api_key = ***' 'password = ***' \
    'webhook = https://hooks.example/***' 'url = http://127.0.0.1:2' 'url = http://[::1]:3' \
    'default = 0.000000001' 'web_search = 10.000001' 'drain_timeout = 1m30s' \
    'redis = redis+sentinel://127.0.0.1,[::1]:26380/mymaster' \
    'key = sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
    'header_timeout = 10s' 'workers = 3' 'thresholds = 50 90' 'format = slack' \
    'fallback = spare' 'model_map = gpt-4o=gpt-4o-2024-08-06' 'rpm = 10' 'budget = 25' \
    'tls_record_layer = openssl' 'shared_stored_objects = yes' "ca_file = $tmp/ca.pem"; do
	grep -qxF -- "$want" "$tmp/other/dump1.ini" || bad "-T: no line '$want'"
done
# [cluster]'s ca_file, written relative, is the config directory's.
(cd "$tmp/other" && timeout 10 "$daemon" -T -c "$tmp/full.ini") 2>/dev/null |
    awk '/^\[/ { s = $0 } s == "[cluster]" && /^ca_file = /' >"$tmp/cl.ca"
grep -qxF "ca_file = $tmp/ca.pem" "$tmp/cl.ca" ||
    bad "[cluster] ca_file = ca.pem is not relative to the config: $(cat "$tmp/cl.ca")"
# Read back from another directory: the same output but for the first line.
(cd "$tmp/other" && timeout 10 "$daemon" -T -c dump1.ini) >"$tmp/dump2.ini" 2>"$tmp/dump2.err"
rc=$?
[ "$rc" -eq 0 ] || bad "-T of -T: exit $rc, want 0: $(cat "$tmp/dump2.err")"
(cd "$tmp/other" && timeout 10 "$daemon" -t -c dump1.ini) >/dev/null 2>&1 ||
    bad "-t rejects the -T output"
tail -n +2 "$tmp/other/dump1.ini" >"$tmp/d1" && tail -n +2 "$tmp/dump2.ini" >"$tmp/d2"
cmp -s "$tmp/d1" "$tmp/d2" || bad "-T output read back differs: $(diff "$tmp/d1" "$tmp/d2")"
# The bundled config, with an override: -T shows the value in effect.
KILOVOLT_PORT=18081 timeout 10 "$daemon" -T -c "$top_srcdir/kilovolt.ini" >"$tmp/b.ini" \
    2>/dev/null || bad "-T of the bundled config failed"
grep -qxF 'listen = 0.0.0.0:18081' "$tmp/b.ini" || bad "-T: KILOVOLT_PORT not shown"
grep -qx '\[price gpt-5\]' "$tmp/b.ini" || bad "-T: [price gpt-5] missing"
timeout 10 "$daemon" -T -c "$tmp/missing.ini" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] || bad "-T of a missing file: exit $rc, want 2"

[ $fail -eq 0 ] && echo "PASS: t_config"
exit $fail
