#!/bin/bash
# unit.sh IMAGE MOCK_PORT TMPDIR: the hardened systemd unit under a real
# systemd. No systemd runs as PID 1 on the test hosts, so boot one in a
# container made from IMAGE plus systemd and procps (ExecReload= runs
# /bin/kill, as on any full Debian host), install the unit from
# systemd/kilovolt.service.in, and check that kilovoltd serves a stream with
# every sandboxing option applied, reloads, and stops cleanly.
# Exit 0 pass, 1 fail. Uses $P, $top_srcdir and $top_builddir from run.sh.
set -u
image=$1 mock_port=$2 tmp=$3
: "${P:?}" "${top_srcdir:?}" "${top_builddir:?}"
name=kv-ctest-unit-$$ fail=0
say() { echo "unit: $*"; }
bad() { say "FAIL: $*"; fail=1; }
cx() { $P exec "$name" "$@"; }

mkdir -p "$tmp/unit" || exit 1
# The image is configured with --prefix=/usr --sysconfdir=/etc.
sed -e 's|@sbindir@|/usr/sbin|g' -e 's|@sysconfdir@|/etc|g' \
    "$top_srcdir/systemd/kilovolt.service.in" > "$tmp/unit/kilovolt.service"
# IMAGE has no shell or package manager: the image's own programs, config
# and libraries on a Debian base that has them, as on a full host.
cat > "$tmp/unit/Containerfile" <<CF
FROM $image AS kv
FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd procps \\
        libssl3 libinih1 libmicrohttpd12 ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --system --user-group --home-dir /var/lib/kilovolt --shell /usr/sbin/nologin kilovolt
COPY --from=kv /usr/sbin/kilovoltd /usr/sbin/kilovoltd
COPY --from=kv /usr/bin/kvctl /usr/bin/kvctl
COPY --from=kv /etc/kilovolt /etc/kilovolt
COPY --from=kv /usr/share/kilovolt /usr/share/kilovolt
COPY kilovolt.service /etc/systemd/system/kilovolt.service
RUN systemctl mask systemd-logind.service getty.target console-getty.service
STOPSIGNAL SIGRTMIN+3
CMD ["/lib/systemd/systemd"]
CF
timeout 900 $P build --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    -t "$image-systemd" "$tmp/unit" > "$tmp/unit/build.log" 2>&1 ||
    { tail -n 20 "$tmp/unit/build.log"; bad "image with systemd"; exit 1; }

# Namespaces for ProtectSystem= and friends need a privileged container.
$P run -d --name "$name" --privileged --systemd=always --network host \
    --ulimit nofile=4096:4096 --ulimit nproc=1024:1024 "$image-systemd" > "$tmp/unit/run.log" 2>&1 ||
    { cat "$tmp/unit/run.log"; bad "podman run"; exit 1; }
trap '$P rm -f -v -t 5 "$name" > /dev/null 2>&1' EXIT

port=$("$top_builddir/tests/mock_upstream" --free-port)
sport=$("$top_builddir/tests/mock_upstream" --free-port)
# run.sh left the image's own config, already pointed at the mock, here.
sed -e "s|^listen = [^ ;]*|listen = 127.0.0.1:$port|" -e "s|^status_listen = [^ ;]*|status_listen = 127.0.0.1:$sport|" \
    -e "s|^workers = [^ ;]*|workers = 2|" \
    -e "s|^request_log = [^ ;]*|request_log = /var/log/kilovolt/requests.log|" \
    "$tmp/kilovolt.ini" > "$tmp/unit/kilovolt.ini"
grep -q '^request_log = /var/log/kilovolt/' "$tmp/unit/kilovolt.ini" || bad "the test config has no request_log line to point"
for ((i = 0; i < 100; i++)); do
	st=$(cx systemctl is-system-running 2> /dev/null)
	case $st in running|degraded) break ;; esac
	sleep 0.2
done
$P cp "$tmp/unit/kilovolt.ini" "$name:/etc/kilovolt/kilovolt.ini" && cx chmod 0644 /etc/kilovolt/kilovolt.ini ||
    bad "cannot install the test config"
cx systemctl start kilovolt || { cx journalctl -u kilovolt --no-pager | tail -n 20; bad "systemctl start"; }
say "$(cx systemctl show -p ActiveState -p StatusText kilovolt | tr '\n' ' ')"

body='{"model":"gpt-4o-mini","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'
last=$(curl -sS -N --max-time 30 -H 'Authorization: Bearer sk-container-unit' -H 'x-mock-tokens: 20' \
    -H 'Content-Type: application/json' --data "$body" "http://127.0.0.1:$port/v1/chat/completions" |
    tr -d '\r' | sed '/^$/d' | tail -n 1)
[ "$last" = "data: [DONE]" ] && say "ok a stream through the sandboxed service" || bad "stream ended with '$last'"

# The sandbox is really on: no new privileges, a seccomp filter, and one capability.
pid=$(cx systemctl show -p MainPID --value kilovolt)
status=$(cx cat "/proc/$pid/status")
echo "$status" | grep -q '^NoNewPrivs:[[:space:]]*1$' || bad "NoNewPrivs is not set"
echo "$status" | grep -q '^Seccomp:[[:space:]]*2$' || bad "no seccomp filter"
echo "$status" | grep -q '^CapBnd:[[:space:]]*0000000000000400$' || bad "bounding set is not CAP_NET_BIND_SERVICE alone"
echo "$status" | grep -q '^Uid:[[:space:]]*0[[:space:]]' && bad "runs as root"
say "main pid $pid: $(echo "$status" | grep -E '^(NoNewPrivs|Seccomp|CapBnd):' | tr -s '\t\n' '  ')"

# worker_cpu_affinity = auto under the unit's seccomp filter: with a worker
# for each of the master's CPUs, each worker on one of them, none shared.
cpus() { cx cat "/proc/$1/status" | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p'; }
ncpus() { echo "$1" | tr ',' '\n' | awk -F- '{ n += ($2 == "" ? 1 : $2 - $1 + 1) } END { print n }'; }
mset=$(cpus "$pid")
wsets=$(for w in $(cx pgrep -P "$pid"); do cpus "$w"; done | sort | tr '\n' ' ')
if [ "$(ncpus "$mset")" = 2 ]; then
	[ "$(echo $wsets | tr ' ' '\n' | sort -u | grep -c '^[0-9]*$')" = 2 ] &&
	    say "ok workers pinned to CPUs $wsets(master: $mset)" ||
	    bad "workers not pinned one to a CPU: '$wsets' (master: $mset)"
else
	say "master may use CPUs $mset: auto leaves 2 workers unpinned ($wsets)"
fi
ledger=$(cx stat -c '%U %a' /var/lib/kilovolt/ledger)
[ "$ledger" = "kilovolt 600" ] && say "ok ledger /var/lib/kilovolt/ledger ($ledger)" || bad "ledger is '$ledger'"
cx runuser -u kilovolt -- kvctl keys --json | jq -e '.keys | map(.requests) | add == 1' > /dev/null ||
    bad "kvctl does not see the request in the service's ledger"

# ProtectSystem=strict leaves only the state and logs directories writable.
for ((i = 0; i < 50; i++)); do
	cx test -s /var/log/kilovolt/requests.log && break
	sleep 0.1
done
cx grep -q '"status":200' /var/log/kilovolt/requests.log &&
    say "ok request_log /var/log/kilovolt/requests.log written under the sandbox" ||
    bad "request_log under /var/log/kilovolt was not written"

cx systemctl reload kilovolt || bad "systemctl reload"
[ "$(cx systemctl is-active kilovolt)" = active ] || bad "not active after reload"
[ "$(cx systemctl show -p MainPID --value kilovolt)" = "$pid" ] && say "ok reload kept master $pid" ||
    bad "reload restarted the master"
cx systemctl stop kilovolt
res=$(cx systemctl show -p Result -p ExecMainStatus kilovolt | tr '\n' ' ')
[ "$res" = "Result=success ExecMainStatus=0 " ] && say "ok clean stop ($res)" || bad "stop: $res"
if cx journalctl -u kilovolt --no-pager | grep -E 'Operation not permitted|Permission denied|Read-only file system|\[fatal\]|SIGSYS'; then
	bad "the sandbox got in the daemon's way (journal above)"
fi
[ $fail = 0 ] && say "PASS"
exit $fail
