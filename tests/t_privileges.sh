#!/bin/bash
# Privileges and secrets through the real daemon (needs root).
# Started as root with [server] user = nobody, kilovoltd binds a privileged
# port, then master and workers run as nobody, not dumpable (so no core and
# no /proc/PID/environ holds the provider key for another process); the
# ledger is 0600 and owned by nobody, the audit log 0640 and nobody's (the
# master appends to it after the drop). Neither a client's raw key nor the
# provider key (api_key = env:...) appears in the log, the ledger, the status
# service or any error the gateway makes. A ledger it must not use (owned by
# someone else, truncated, of another layout version) is refused with exit 2
# and left byte for byte as it was.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root"
for tool in curl jq ss setpriv sha256sum; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
RUN_AS=nobody
NB_UID=$(id -u $RUN_AS 2>/dev/null) || skip "no user $RUN_AS"
NB_GID=$(id -g $RUN_AS)
# The test dir must be reachable by nobody (mktemp made it 0700).
chmod 711 "$T"
as_nobody() { setpriv --reuid="$NB_UID" --regid="$NB_GID" --clear-groups "$@"; }
as_nobody true || skip "setpriv cannot switch to $RUN_AS here"
# What nobody runs must be where nobody can reach it: a clone under root's
# 0700 home is not (the exec would fail with 126), so run a copy from $T.
mkdir -p "$T/bin" && cp "$KV_DAEMON_BIN" "$T/bin/kilovoltd" && chmod 755 "$T/bin" "$T/bin/kilovoltd" ||
	{ fail "copy kilovoltd to $T/bin"; kv_finish; }
NB_DAEMON=$T/bin/kilovoltd

CLIENT_KEY=sk-client-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
PROVIDER_KEY=sk-provider-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
POOR_KEY=sk-poor-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ADMIN_TOKEN=admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
export KV_TEST_PROVIDER_KEY=$PROVIDER_KEY KV_TEST_ADMIN_TOKEN=$ADMIN_TOKEN
id12() { printf '%s' "$1" | sha256sum | cut -c1-12; }
SECRETS=("$CLIENT_KEY" "$PROVIDER_KEY" "$POOR_KEY" "$ADMIN_TOKEN")
SECRET_NAMES=(client provider client admin-token)

# A privileged port nothing listens on: binding it proves the bind ran as root.
PRIV_PORT=
for p in $(seq 901 999); do
	if ! ss -ltnH "sport = :$p" | grep -q .; then PRIV_PORT=$p; break; fi
done
[ -n "$PRIV_PORT" ] || skip "no free port in 901-999"

kv_start_mock
CLOSED=$(kv_dead_ports 1) || exit 1
KV_PORT=$PRIV_PORT kv_write_config <<EOF
[server]
user = $RUN_AS
admin_token = env:KV_TEST_ADMIN_TOKEN

[upstream openai]
api_key = env:KV_TEST_PROVIDER_KEY

[upstream anthropic]
api_key = env:KV_TEST_PROVIDER_KEY

[upstream closed]
url = http://127.0.0.1:$CLOSED
models = closed-*
api_key = env:KV_TEST_PROVIDER_KEY

[key poor]
key = sha256:$(printf '%s' "$POOR_KEY" | sha256sum | cut -d' ' -f1)
budget = 0.000001

; api_key upstreams admit only configured keys (issue 20)
[key client]
key = $CLIENT_KEY
EOF
chmod 644 "$T/kilovolt.ini"

# A place nobody may write, for the core-dump attempt (core_pattern "core").
mkdir -m 1777 "$T/cwd"
CORES=0
if [ "$(cut -c1 /proc/sys/kernel/core_pattern)" != "|" ] &&
	! grep -q / /proc/sys/kernel/core_pattern && ulimit -c unlimited 2>/dev/null; then
	# The control: a dumpable process of nobody's does leave a core here.
	(cd "$T/cwd" && as_nobody bash -c 'ulimit -c unlimited; kill -ABRT $$') 2>/dev/null
	if ls "$T/cwd"/core* >/dev/null 2>&1; then
		CORES=1
		rm -f "$T/cwd"/core*
	fi
fi
[ $CORES = 1 ] || echo "# core dumps are not written here (core_pattern $(cat /proc/sys/kernel/core_pattern)): the core check is skipped"

cd "$T/cwd" || exit 1
kv_start
cd - >/dev/null || exit 1
check_eq "kilovoltd listens on the privileged port $PRIV_PORT" "$KV_PORT" "$PRIV_PORT"

workers() { ps -o pid= --ppid "$KV_PID" | tr -d ' '; }
status_ids() { awk -v f="$2" '$1 == f { print $2, $3, $4, $5 }' "/proc/$1/status"; }
owner() { stat -c %u "$1"; }
jqf() { jq -e "$1" "$2" >/dev/null 2>&1; }

check "two workers run" kv_wait_for 10 test "$(workers | wc -l)" = 2
for pid in $KV_PID $(workers); do
	role=worker
	[ "$pid" = "$KV_PID" ] && role=master
	check_eq "$role $pid: real, effective, saved and fs uid are $RUN_AS's" \
		"$(status_ids "$pid" Uid:)" "$NB_UID $NB_UID $NB_UID $NB_UID"
	check_eq "$role $pid: all gids are $RUN_AS's" "$(status_ids "$pid" Gid:)" \
		"$NB_GID $NB_GID $NB_GID $NB_GID"
	check_eq "$role $pid: no supplementary groups" \
		"$(awk '$1 == "Groups:" { print $2 }' "/proc/$pid/status")" ""
	check_eq "$role $pid: not dumpable (/proc/$pid/environ owned by root)" \
		"$(owner "/proc/$pid/environ")" 0
	check "$role $pid: $RUN_AS cannot read its environment (the provider key)" \
		eval "! as_nobody cat /proc/$pid/environ >/dev/null 2>&1"
done
check_eq "the ledger is mode 0600" "$(stat -c %a "$T/ledger")" 600
check_eq "the ledger is owned by $RUN_AS" "$(stat -c %u:%g "$T/ledger")" "$NB_UID:$NB_GID"

# ---- traffic that could leak a key ---------------------------------------------

CHAT='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":5}'
code=$(kv_curl /v1/chat/completions -o "$T/ok.json" -D "$T/ok.head" -w '%{http_code}' \
	-H "Authorization: Bearer $CLIENT_KEY" -d "$CHAT")
check_eq "a virtual-key request succeeds" "$code" 200
check "... the provider key reached the upstream (mock auth=$(id12 "$PROVIDER_KEY"))" \
	grep -q "^POST /v1/chat/completions .*auth=$(id12 "$PROVIDER_KEY") " "$MOCK_LOG"
check "... the client's key did not" eval "! grep -q 'auth=$(id12 "$CLIENT_KEY")' '$MOCK_LOG'"
code=$(kv_curl /v1/messages -o "$T/ok2.json" -D "$T/ok2.head" -w '%{http_code}' \
	-H "x-api-key: $CLIENT_KEY" -H 'anthropic-version: 2023-06-01' \
	-d '{"model":"claude-sonnet-4","max_tokens":5,"messages":[]}')
check_eq "an x-api-key request succeeds" "$code" 200
code=$(kv_curl /v1/chat/completions -o "$T/402.json" -D "$T/402.head" -w '%{http_code}' \
	-H "Authorization: Bearer $POOR_KEY" -d "$CHAT")
check_eq "a key over budget gets 402" "$code" 402
check "... whose message names the key by id" grep -q "$(id12 "$POOR_KEY")" "$T/402.json"
code=$(kv_curl /v1/messages -o "$T/402a.json" -D "$T/402a.head" -w '%{http_code}' \
	-H "x-api-key: $POOR_KEY" -d '{"model":"claude-sonnet-4","max_tokens":5,"messages":[]}')
check_eq "... 402 on /v1/messages too" "$code" 402
code=$(kv_curl /v1/chat/completions -o "$T/502.json" -D "$T/502.head" -w '%{http_code}' \
	-H "Authorization: Bearer $CLIENT_KEY" -d '{"model":"closed-1","max_tokens":5}')
check_eq "an unreachable upstream gets 502" "$code" 502
code=$(kv_curl /v1/chat/completions -o "$T/401.json" -D "$T/401.head" -w '%{http_code}' \
	-H "Authorization: Basic $CLIENT_KEY" -d "$CHAT")
check_eq "a credential in the wrong scheme gets 401" "$code" 401
printf 'GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nX: a\r\n b\r\n\r\n' \
	"$CLIENT_KEY" >"$T/bad.req"
if [ -x "$top_builddir/tests/rawclient" ]; then
	"$top_builddir/tests/rawclient" -t 10 "$KV_PORT" "$T/bad.req" >"$T/400.raw" 2>/dev/null
	check "a malformed request with the key in it gets 400" grep -q '^HTTP/1.1 400' "$T/400.raw"
fi
S=http://127.0.0.1:$KV_STATUS_PORT
curl -sS -m 10 "$S/status.json" -o "$T/status.json"
curl -sS -m 10 "$S/metrics" -o "$T/metrics.txt"
curl -sS -m 10 "$S/" -o "$T/page.html"
curl -sS -m 10 -X POST -H "Authorization: Bearer $CLIENT_KEY" "$S/keys/$(id12 "$CLIENT_KEY")/reset" \
	-o "$T/admin.json"
code=$(curl -sS -m 10 -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -o "$T/admin-ok.json" \
	-w '%{http_code}' "$S/keys/$(id12 "$POOR_KEY")/reset")
check_eq "an admin write with the token succeeds" "$code" 200
check_eq "... the audit log, made at start as root, is $RUN_AS's" \
	"$(stat -c %u:%g:%a "$T/audit.jsonl")" "$NB_UID:$NB_GID:640"
check_eq "... and the master, as $RUN_AS, appended the write to it" \
	"$(jq -r '"\(.op) \(.who.admin_token) \(.status)"' "$T/audit.jsonl")" \
	"key.reset $(id12 "$ADMIN_TOKEN") 200"
check "the status service answers" jqf '.keys | length >= 2' "$T/status.json"
check "... and lists the client's key by id" grep -q "$(id12 "$CLIENT_KEY")" "$T/status.json"
kv_ctl keys --json >"$T/kvctl.json" 2>&1
kv_ctl status >"$T/kvctl.txt" 2>&1
kv_ctl show "$(id12 "$CLIENT_KEY")" >>"$T/kvctl.txt" 2>&1

# leaks FILE...: which secrets (by name) appear in the files.
leaks() {
	local f i found=
	for i in "${!SECRETS[@]}"; do
		for f in "$@"; do
			grep -aqF -- "${SECRETS[$i]}" "$f" 2>/dev/null &&
				found="$found ${f##*/}:${SECRET_NAMES[$i]}"
		done
	done
	echo "$found"
}
check_eq "no key in the responses or their headers (200, 402, 502, 401, 400)" \
	"$(leaks "$T"/*.json "$T"/*.head "$T/400.raw")" ""
check_eq "no key or token in /status.json, /metrics, the status page, admin answers" \
	"$(leaks "$T/status.json" "$T/metrics.txt" "$T/page.html" "$T/admin.json" "$T/admin-ok.json" \
	"$T/audit.jsonl")" ""
check_eq "no key in kvctl's output" "$(leaks "$T/kvctl.json" "$T/kvctl.txt")" ""
check_eq "no key in the ledger file" "$(leaks "$T/ledger")" ""

# The core-dump attempt: a worker aborts; nothing is dumped, it is respawned.
old=$(workers | head -n 1)
KV_KILLS_WORKERS=1	# on purpose: kv_finish must not count it
kill -ABRT "$old"
check "a worker that aborted is replaced" \
	kv_wait_for 20 eval "! kv_alive $old && test \"\$(workers | wc -l)\" = 2"
if [ $CORES = 1 ]; then
	check_eq "... and left no core dump" "$(ls "$T/cwd" | grep -c '^core')" 0
fi
check "the gateway still serves" eval "[ \"\$(kv_curl /v1/models -o /dev/null -w '%{http_code}' \
	-H 'Authorization: Bearer $CLIENT_KEY')\" = 200 ]"
kv_stop
check_eq "no key in the daemon's log" "$(leaks "$KV_LOG")" ""
check_eq "no key in the mock's log" "$(leaks "$MOCK_LOG")" ""

# ---- started as nobody directly: prctl(PR_SET_DUMPABLE) is what protects it ---

# A process that drops privileges is made non-dumpable by the kernel anyway;
# one started as a plain user is dumpable unless it says otherwise.
sed -e "s/^listen = .*/listen = 127.0.0.1:$(kv_free_port)/" -e '/^user = /d' \
	-e "s/^status_listen = .*/status_listen = off/" "$T/kilovolt.ini" >"$T/nobody.ini"
chmod 644 "$T/nobody.ini"
NB_PORT=$(sed -n 's/^listen = .*:\([0-9]*\)$/\1/p' "$T/nobody.ini")
# setpriv and env exec, so $! is the daemon itself (through the as_nobody
# function it was a subshell, and stopping that left the daemon running)
setpriv --reuid="$NB_UID" --regid="$NB_GID" --clear-groups \
	env KILOVOLT_LEDGER="$T/ledger" "$NB_DAEMON" -c "$T/nobody.ini" \
	</dev/null >>"$T/kilovoltd-nobody.log" 2>&1 &
NBPID=$!
kv_track $NBPID
nb_answers() { curl -s -o /dev/null -m 1 "http://127.0.0.1:$NB_PORT/"; }
check "kilovoltd started as $RUN_AS serves" kv_wait_for 20 nb_answers
for pid in $NBPID $(ps -o pid= --ppid $NBPID | tr -d ' '); do
	check_eq "pid $pid (started as $RUN_AS) is not dumpable: /proc/$pid/environ owned by root" \
		"$(owner "/proc/$pid/environ")" 0
	check "... so $RUN_AS's other processes cannot read its environment" \
		eval "! as_nobody cat /proc/$pid/environ >/dev/null 2>&1"
done
kv_kill $NBPID 15
wait $NBPID 2>/dev/null
check "the daemon started as $RUN_AS is gone after its stop" eval "! kill -0 $NBPID 2>/dev/null"

# ---- ledgers it must refuse ------------------------------------------------------

# refused DESC FILE PATTERN [as_nobody]: kilovoltd with FILE as its ledger
# exits 2 with a message matching PATTERN, and FILE is unchanged.
refused() {
	local desc=$1 file=$2 pat=$3 sum0 own0 rc
	shift 3
	sum0=$(sha256sum <"$file") own0=$(stat -c %u:%g:%a "$file")
	"$@" env KILOVOLT_LEDGER="$file" timeout 20 "$NB_DAEMON" -c "$T/kilovolt.ini" \
		</dev/null >"$T/refused.log" 2>&1
	rc=$?
	cat "$T/refused.log" >>"$T/kilovoltd-refused.log"
	check_eq "$desc: exit 2" "$rc" 2
	check "... with a clear message ($(grep -m1 -i ledger "$T/refused.log" | cut -c1-150))" \
		grep -qiE "$pat" "$T/refused.log"
	check_eq "... and the file unchanged" "$(sha256sum <"$file")" "$sum0"
	check_eq "... its owner and mode too" "$(stat -c %u:%g:%a "$file")" "$own0"
}
# The daemon must not even get as far as listening.
sed -i "s/^listen = .*/listen = 127.0.0.1:$(kv_free_port)/" "$T/kilovolt.ini"

cp "$T/ledger" "$T/ledger.root"
chown 0:0 "$T/ledger.root"
chmod 600 "$T/ledger.root"
refused "run as $RUN_AS, a ledger of root's (0600)" "$T/ledger.root" \
	"ledger.*(permission denied|not permitted)" as_nobody

OTHER=daemon
if OTHER_UID=$(id -u $OTHER 2>/dev/null) && [ "$OTHER_UID" != 0 ] && [ "$OTHER_UID" != "$NB_UID" ]; then
	cp "$T/ledger" "$T/ledger.other"
	chown "$OTHER_UID:$(id -g $OTHER)" "$T/ledger.other"
	chmod 600 "$T/ledger.other"
	refused "started as root for $RUN_AS, a ledger of $OTHER's (0600)" "$T/ledger.other" \
		"ledger.*owned by"
else
	echo "# no user '$OTHER' besides root and $RUN_AS: the foreign-owner check is skipped"
fi

cp "$T/ledger" "$T/ledger.short"
truncate -s $(($(stat -c %s "$T/ledger") / 2)) "$T/ledger.short"
chown "$NB_UID:$NB_GID" "$T/ledger.short"
refused "a truncated ledger" "$T/ledger.short" "ledger.*truncated"

cp "$T/ledger" "$T/ledger.v2"
chown "$NB_UID:$NB_GID" "$T/ledger.v2"
# The layout version is the uint32 after the 8-byte magic (shm/ledger-t.h).
ver=$(od -An -tu4 -j8 -N4 "$T/ledger.v2" | tr -d ' ')
want=$(sed -n 's/^#define KV_LEDGER_VERSION[[:space:]]*\([0-9]*\)u.*/\1/p' "$top_srcdir/shm/ledger-t.h")
check_eq "the ledger's layout version is at offset 8" "$ver" "$want"
printf "$(printf '\\%03o' $((ver + 1)) 0 0 0)" | dd of="$T/ledger.v2" bs=1 seek=8 conv=notrunc status=none
refused "a ledger of layout version $((ver + 1))" "$T/ledger.v2" "ledger.*version"

cp "$T/ledger" "$T/ledger.magic"
chown "$NB_UID:$NB_GID" "$T/ledger.magic"
printf 'NOTAKVLG' | dd of="$T/ledger.magic" bs=1 seek=0 conv=notrunc status=none
refused "a file that is not a ledger" "$T/ledger.magic" "ledger.*magic"

kv_finish
