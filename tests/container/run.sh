#!/bin/bash
# The container test (make check-container): build the image from
# docker/Dockerfile with podman, run it under the compose file's 30 MB memory
# limit, push 500 concurrent slow streams and 50 long fast streams through it
# to a mock provider, and check that every stream completed, the container
# was not OOM-killed, and the ledger's spend survives a new container on the
# same named volume. Prints the cgroup's measured memory peak.
# How podman runs in this sandbox: /work/shared/CONTAINERS.md.
# Exit 0 pass, 1 fail, 77 skip.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
NSLOW=${NSLOW:-500} NFAST=${NFAST:-50}
# The memory limit is the compose file's, so this tests what users deploy.
MEMORY=${KV_CONTAINER_MEMORY:-}
[ -n "$MEMORY" ] || MEMORY=$(sed -n 's/^ *memory: *\([0-9][0-9]*\)M *$/\1m/p' "$top_srcdir/docker/docker-compose.yml")
IMAGE=kilovolt:test
BASE=docker.io/library/debian:bookworm-slim
P="podman --runtime runc --cgroup-manager=cgroupfs"
name=kv-ctest-$$ vol=kv-ctest-ledger-$$
mock_pid=

say() { echo "container: $*"; }
skip() { say "SKIP: $*"; exit 77; }

cleanup() {
	$P rm -f -v -t 0 "$name" "$name-2" > /dev/null 2>&1
	$P volume rm -f "$vol" > /dev/null 2>&1
	[ -n "$mock_pid" ] && kill "$mock_pid" 2> /dev/null
	rm -rf "$tmp"
}

install_tools() {
	local missing=
	command -v podman > /dev/null || missing="$missing podman"
	command -v runc > /dev/null || missing="$missing runc"
	command -v debootstrap > /dev/null || missing="$missing debootstrap"
	command -v jq > /dev/null || missing="$missing jq"
	command -v curl > /dev/null || missing="$missing curl"
	[ -z "$missing" ] && return 0
	say "installing$missing"
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get -o DPkg::Lock::Timeout=300 install -y $missing > "$tmp/apt.log" 2>&1 ||
	    { tail -n 5 "$tmp/apt.log"; skip "cannot install$missing"; }
}

# The Debian mirror apt already uses (deb822 .sources first, then .list).
debian_mirror() {
	local m
	m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2> /dev/null |
	    grep -v security | grep debian | head -n 1)
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2> /dev/null |
	    awk '$1 == "deb" && !/security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:.*debian/) { print $i; exit } }')
	echo "${m:-http://deb.debian.org/debian}"
}

# No registry is reachable: make bookworm-slim from Debian's own packages, once.
base_image() {
	$P image exists "$BASE" && return 0
	local mirror rootfs=$tmp/rootfs
	mirror=$(debian_mirror)
	say "making $BASE with debootstrap from $mirror"
	timeout 900 debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$tmp/debootstrap.log" 2>&1 ||
	    { tail -n 5 "$tmp/debootstrap.log"; say "FAIL: debootstrap"; exit 1; }
	tar -C "$rootfs" -c . | $P import - "$BASE" > /dev/null || { say "FAIL: podman import"; exit 1; }
	rm -rf "$rootfs"
}

build_image() {
	local t0=$SECONDS
	# --format docker keeps HEALTHCHECK (the OCI format has no such field).
	if ! timeout 1800 $P build --format docker --network host \
	    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
	    -f "$top_srcdir/docker/Dockerfile" -t "$IMAGE" "$top_srcdir" > "$tmp/build.log" 2>&1; then
		tail -n 30 "$tmp/build.log"
		say "FAIL: image build"
		exit 1
	fi
	say "image built in $((SECONDS - t0)) s, $($P image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.1f MB", $1 / 1e6 }')"
}

start_mock() {
	local i
	"$top_builddir/tests/mock_upstream" -p 0 -P "$tmp/mock.port" > "$tmp/mock.log" 2>&1 &
	mock_pid=$!
	for ((i = 0; i < 50; i++)); do
		[ -s "$tmp/mock.port" ] && break
		sleep 0.1
	done
	mock_port=$(cat "$tmp/mock.port" 2> /dev/null)
	[ -n "$mock_port" ] || { say "FAIL: mock_upstream did not start"; exit 1; }
}

free_port() {
	local p i
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null || { echo "$p"; return; }
	done
	echo 18080
}

# The image's own config, with the upstreams pointed at the mock.
write_config() {
	$P run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$IMAGE" \
	    cat /etc/kilovolt/kilovolt.ini > "$tmp/image.ini" 2> /dev/null ||
	    { say "FAIL: no /etc/kilovolt/kilovolt.ini in the image"; exit 1; }
	grep -q '^ledger = /var/lib/kilovolt/ledger' "$tmp/image.ini" ||
	    { say "FAIL: the image's config does not keep its ledger on the volume"; exit 1; }
	sed -e "s|^url = https://api.openai.com|url = http://127.0.0.1:$mock_port|" \
	    -e "s|^url = https://api.anthropic.com|url = http://127.0.0.1:$mock_port|" \
	    -e "s|^status_listen = [^ ;]*|status_listen = 127.0.0.1:$status_port|" \
	    "$tmp/image.ini" > "$tmp/kilovolt.ini"
	chmod 0644 "$tmp/kilovolt.ini"
	grep -q "127.0.0.1:$mock_port" "$tmp/kilovolt.ini" || { say "FAIL: cannot point the config at the mock"; exit 1; }
}

# run NAME: the compose service's settings, on the host network.
run() {
	$P run -d --name "$1" --network host --memory "$MEMORY" --memory-swap "$MEMORY" \
	    --read-only --cap-drop ALL --security-opt no-new-privileges \
	    --ulimit nofile=4096:4096 --ulimit nproc=1024:1024 \
	    -e KILOVOLT_PORT="$port" -e KILOVOLT_DEFAULT_BUDGET=2.00 -e KILOVOLT_ADMIN_TOKEN=ctest \
	    -v "$vol:/var/lib/kilovolt" -v "$tmp/kilovolt.ini:/etc/kilovolt/kilovolt.ini:ro" \
	    "$IMAGE" > "$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; say "FAIL: podman run $1"; exit 1; }
	local i code
	for ((i = 0; i < 100; i++)); do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/v1/models")
		[ "$code" != 000 ] && return 0
		[ "$($P inspect --format '{{.State.Running}}' "$1")" = true ] || break
		sleep 0.2
	done
	$P logs "$1" 2>&1 | tail -n 20
	say "FAIL: $1 is not answering on port $port"
	exit 1
}

# Memory figures of NAME's cgroup (v1 memory controller), in bytes.
cgroup_file() {
	local path
	path=$($P inspect --format '{{.State.CgroupPath}}' "$1")
	echo "/sys/fs/cgroup/memory$path/$2"
}

state() { $P inspect --format '{{.State.Status}} oom={{.State.OOMKilled}} exit={{.State.ExitCode}}' "$1"; }

spend() {	# the ledger as kvctl sees it inside the container
	$P exec "$1" kvctl keys --json | jq -S -c '[.keys[] | {id, spent_nusd, requests, output_tokens}] | sort_by(.id)'
}

key_id() { printf '%s' "$1" | sha256sum | cut -c1-12; }

main() {
	[ "$(id -u)" = 0 ] || skip "needs root for podman with cgroupfs here"
	[ -n "$MEMORY" ] || { say "FAIL: no 'memory: NM' limit in docker-compose.yml"; exit 1; }
	tmp=$(mktemp -d /tmp/kv-container.XXXXXX) || exit 1
	trap cleanup EXIT
	install_tools
	[ -x "$top_builddir/tests/mock_upstream" ] || { say "FAIL: build tests/mock_upstream first (make check-container does)"; exit 1; }
	base_image
	build_image
	start_mock
	port=$(free_port) status_port=$(free_port)
	write_config
	$P volume create "$vol" > /dev/null || { say "FAIL: volume create"; exit 1; }

	run "$name"
	say "started: $(state "$name"), port $port, limit $MEMORY"
	$P healthcheck run "$name" > /dev/null 2>&1 && say "ok HEALTHCHECK passes" ||
	    { say "FAIL: HEALTHCHECK (kvctl status) fails in a running container"; fail=1; }
	memfile=$(cgroup_file "$name" memory.max_usage_in_bytes)
	[ -r "$memfile" ] || { say "FAIL: no cgroup memory file $memfile"; exit 1; }
	idle=$(cat "$(cgroup_file "$name" memory.usage_in_bytes)")

	t0=$SECONDS
	bash "$top_srcdir/tests/container/load.sh" "http://127.0.0.1:$port" "$tmp/load" "$NSLOW" "$NFAST" > "$tmp/load.out" &
	load_pid=$!
	# Streams open at once, from the status service (from outside the
	# container, so the sampling costs the cgroup nothing).
	max_active=0
	for ((i = 0; i < 600; i++)); do
		kill -0 "$load_pid" 2> /dev/null || break
		n=$(curl -s --max-time 2 "http://127.0.0.1:$status_port/status.json" | jq -r '.active_streams // 0' 2> /dev/null)
		[ "${n:-0}" -gt "$max_active" ] 2> /dev/null && max_active=$n
		sleep 0.5
	done
	wait "$load_pid" || fail=1
	cat "$tmp/load.out"
	say "most streams open at once: $max_active"
	[ "$max_active" -ge "$NSLOW" ] || { say "FAIL: the $NSLOW slow streams were never all open together"; fail=1; }
	peak=$(cat "$memfile")
	# A worker killed by the OOM killer is respawned and the container lives
	# on, so OOMKilled alone would miss it: count the cgroup's kills.
	oom_kills=$(awk '$1 == "oom_kill" { print $2 }' "$(cgroup_file "$name" memory.oom_control)")
	say "$NSLOW slow + $NFAST fast streams in $((SECONDS - t0)) s"
	say "memory: idle $((idle / 1024)) KiB, peak $((peak / 1024)) KiB ($(awk -v p="$peak" 'BEGIN { printf "%.1f", p / 1048576 }') MiB) of $MEMORY, OOM kills ${oom_kills:-?}"
	[ "${oom_kills:-0}" = 0 ] || { say "FAIL: the OOM killer killed $oom_kills processes in the container"; fail=1; }

	st=$(state "$name")
	say "after load: $st"
	[ "$st" = "running oom=false exit=0" ] || { say "FAIL: container did not survive the load"; $P logs "$name" 2>&1 | tail -n 20; fail=1; }

	before=$(spend "$name")
	say "ledger before restart: $before"
	fast=$(echo "$before" | jq --arg id "$(key_id sk-container-fast)" '.[] | select(.id == $id) | .output_tokens')
	want=$((NFAST * ${FAST_TOKENS:-20000}))
	[ "${fast:-0}" = "$want" ] || { say "FAIL: fast key has ${fast:-no} output tokens, want $want"; fail=1; }

	$P stop -t 45 "$name" > /dev/null 2>&1
	st=$(state "$name")
	say "after SIGTERM: $st"
	[ "$st" = "exited oom=false exit=0" ] || { say "FAIL: no clean stop"; fail=1; }
	$P logs "$name" > "$tmp/kilovoltd.log" 2>&1
	if grep -E 'AddressSanitizer|runtime error|\[fatal\]' "$tmp/kilovoltd.log" | head -n 5 | grep .; then
		say "FAIL: the daemon's log has errors"; fail=1
	fi
	$P rm "$name" > /dev/null 2>&1

	run "$name-2"
	after=$(spend "$name-2")
	say "ledger in a new container: $after"
	[ "$before" = "$after" ] && [ "$before" != "[]" ] || { say "FAIL: spend did not survive on the volume"; fail=1; }

	# The systemd unit, under a real systemd booted in a container.
	if [ "${KV_CONTAINER_UNIT:-1}" = 1 ]; then
		P=$P top_srcdir=$top_srcdir top_builddir=$top_builddir \
		    bash "$top_srcdir/tests/container/unit.sh" "$IMAGE" "$mock_port" "$tmp" || fail=1
	fi

	[ "$fail" = 0 ] && say "PASS (peak $((peak / 1024)) KiB under $MEMORY)"
	exit "$fail"
}

fail=0
main "$@"
