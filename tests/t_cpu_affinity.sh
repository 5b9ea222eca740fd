#!/bin/bash
# t_cpu_affinity: [server] worker_cpu_affinity. auto (the default) pins each
# worker to a CPU of its own, read back from /proc/PID/status (and nothing
# with fewer workers than CPUs); a worker
# killed with -9 comes back on the CPU it left, and a reload's workers take
# one each again; none leaves them to the kernel; a listed set is taken in
# turn, and a CPU the process may not use is refused with a warning, not a
# failed start. auto pins nothing when the daemon may run on one CPU only
# (taskset), nor inside a cgroup with a CPU quota (made here, v1 or v2;
# skipped without one). Bad values fail the config check with the key's
# name. Requests are served in every case.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in curl taskset; do
	command -v $tool >/dev/null || skip "$tool not installed"
done
KV_KILLS_WORKERS=1
allowed() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$1/status"; }
# A CPU list ("0-2,5") as one number a line.
expand() {
	local r
	for r in ${1//,/ }; do seq "${r%-*}" "${r#*-}"; done
}
MASTER_SET=$(allowed $$)
read -r C0 C1 <<<"$(expand "$MASTER_SET" | head -n 2 | tr '\n' ' ')"
[ -n "$C1" ] || skip "one CPU allowed: nothing to spread workers over"
workers() { ps -o pid= --ppid "$KV_PID" | tr -d ' '; }
# The workers' CPU lists, sorted, space-separated.
worker_cpus() {
	local p
	for p in $(workers); do allowed "$p"; done | sort -n | tr '\n' ' ' | sed 's/ $//'
}
nworkers() { [ "$(workers | wc -l)" = "$1" ]; }
serves() {
	[ "$(kv_curl /v1/chat/completions -o /dev/null -w '%{http_code}' \
		-H 'Authorization: Bearer sk-cpu-test' \
		-d '{"model":"gpt-4o-mini","max_tokens":5}')" = 200 ]
}

kv_start_mock
kv_write_config <<EOF
[server]
workers = 2
EOF

# ---- auto, the default -----------------------------------------------------

kv_start
kv_wait_for 10 nworkers 2
check_eq "auto (the default): the two workers run on CPUs $C0 and $C1, one each" "$(worker_cpus)" "$C0 $C1"
check_eq "... the master is left where it was" "$(allowed "$KV_PID")" "$MASTER_SET"
check_eq "... said once in the log" \
	"$(grep -c "workers pinned to CPUs $C0 $C1 (worker_cpu_affinity = auto)" "$KV_LOG")" 1
check "... and requests are served" serves

victim=$(workers | head -n 1)
victim_cpu=$(allowed "$victim")
kill -KILL "$victim"
back() { nworkers 2 && ! workers | grep -qx "$victim"; }
if ! kv_wait_for 15 back; then	# what the master did, to read a failure by
	echo "---- $KV_LOG; children of $KV_PID; killed $victim"
	cat "$KV_LOG"
	ps -o pid=,stat=,args= --ppid "$KV_PID"
fi
check "a worker killed with -9 is respawned" back
check_eq "... on the CPU it left: the two are on CPUs $C0 and $C1 still (it had $victim_cpu)" \
	"$(worker_cpus)" "$C0 $C1"

old=$(workers)
kill -HUP "$KV_PID"
replaced() {
	local p
	nworkers 2 || return 1
	for p in $old; do workers | grep -qx "$p" && return 1; done
	return 0
}
kv_wait_for 20 replaced
check "a reload replaces both workers" replaced
check_eq "... and its workers take a CPU each too" "$(worker_cpus)" "$C0 $C1"
check_eq "... with nothing new said about them (the plan did not change)" \
	"$(grep -c 'workers pinned to CPUs' "$KV_LOG")" 1
check "... serving" serves
kv_stop

# ---- auto with fewer workers than CPUs ----------------------------------------

sed -i 's/^workers = 2$/workers = 1/' "$T/kilovolt.ini"
kv_start
kv_wait_for 10 nworkers 1
check_eq "auto with one worker for $(expand "$MASTER_SET" | wc -l) CPUs: not pinned (it does not own them)" \
	"$(worker_cpus)" "$MASTER_SET"
check "... said so" grep -q "workers not pinned to CPUs: 1 for $(expand "$MASTER_SET" | wc -l) CPUs" "$KV_LOG"
kv_stop
sed -i 's/^workers = 1$/workers = 2/' "$T/kilovolt.ini"

# ---- a listed set, and a CPU not allowed ------------------------------------

sed -i "s/^workers = 2\$/workers = 2\nworker_cpu_affinity = $C1 $C0/" "$T/kilovolt.ini"
kv_start
kv_wait_for 10 nworkers 2
check_eq "a listed set ($C1 $C0): a worker on each" "$(worker_cpus)" "$C0 $C1"
check "... said so" grep -q "workers pinned to CPUs $C1 $C0 (worker_cpu_affinity = listed)" "$KV_LOG"
kv_stop

sed -i 's/^worker_cpu_affinity = .*/worker_cpu_affinity = 1023/' "$T/kilovolt.ini"
kv_start
kv_wait_for 10 nworkers 2
check "a listed CPU this process may not run on is refused with a warning (KV0133)" \
	grep -q 'KV0133: worker_cpu_affinity: CPU 1023 is not one kilovoltd may run on' "$KV_LOG"
check_eq "... the workers run unpinned" "$(worker_cpus)" "$MASTER_SET $MASTER_SET"
check "... and serve" serves
kv_stop

# ---- none --------------------------------------------------------------------

sed -i 's/^worker_cpu_affinity = .*/worker_cpu_affinity = none/' "$T/kilovolt.ini"
kv_start
kv_wait_for 10 nworkers 2
check_eq "none: the workers may run on every CPU the master may" \
	"$(worker_cpus)" "$MASTER_SET $MASTER_SET"
check "... said so" grep -q 'workers not pinned to CPUs (worker_cpu_affinity = none)' "$KV_LOG"
check "... serving" serves
kv_stop
sed -i '/^worker_cpu_affinity = /d' "$T/kilovolt.ini"

# ---- auto with one CPU allowed (taskset) ---------------------------------------

cat >"$T/on-cpu1.sh" <<EOF
#!/bin/sh
exec taskset -c $C1 "$KV_DAEMON_BIN" "\$@"
EOF
chmod +x "$T/on-cpu1.sh"
REAL_DAEMON=$KV_DAEMON_BIN
KV_DAEMON_BIN=$T/on-cpu1.sh
kv_start
KV_DAEMON_BIN=$REAL_DAEMON
kv_wait_for 10 nworkers 2
check_eq "auto under taskset -c $C1: both workers on CPU $C1, the only one allowed" \
	"$(worker_cpus)" "$C1 $C1"
check "... said: one CPU to run on" grep -q 'workers not pinned to CPUs: one CPU to run on' "$KV_LOG"
check "... serving" serves
kv_stop

# ---- auto under a CPU quota ------------------------------------------------------

CG=
if [ -w /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
	CG=/sys/fs/cgroup/cpu/kv-cpu-$$
	mkdir "$CG" && echo 100000 >"$CG/cpu.cfs_period_us" && echo 150000 >"$CG/cpu.cfs_quota_us" ||
		CG=
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ] &&
	grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	CG=/sys/fs/cgroup/kv-cpu-$$
	mkdir "$CG" && echo "150000 100000" >"$CG/cpu.max" || CG=
fi
if [ -n "$CG" ]; then
	trap 'rc=$?; cg_remove; (exit $rc); kv_cleanup' EXIT
	kv_start_in_cg
	kv_wait_for 10 nworkers 2
	check "a cgroup with a CPU quota (1.5 CPUs): the daemon runs in it" \
		grep -qx "$KV_PID" "$CG/cgroup.procs"
	check_eq "... auto pins nothing" "$(worker_cpus)" "$MASTER_SET $MASTER_SET"
	check "... and says why, naming the quota" \
		grep -q 'workers not pinned to CPUs: a CPU quota is set (.*150000.*) (worker_cpu_affinity = auto)' "$KV_LOG"
	check "... serving" serves
	kv_stop
	cg_remove
else
	echo "# no writable cpu cgroup (v1 or v2): the quota case is not checked"
fi

# ---- bad values ----------------------------------------------------------------------

for bad in "two" "-1" "1024" "0 x" "0,1"; do
	sed "s/^workers = 2$/workers = 2\nworker_cpu_affinity = $bad/" "$T/kilovolt.ini" >"$T/bad.ini"
	out=$("$KV_DAEMON_BIN" -t -c "$T/bad.ini" 2>&1)
	rc=$?
	check_eq "worker_cpu_affinity = $bad: the config check fails (exit 2)" "$rc" 2
	check "... naming the key" eval 'printf "%s" "$out" | grep -q "worker_cpu_affinity: "'
done
sed "s/^workers = 2$/workers = 2\nworker_cpu_affinity =   3 1   /" "$T/kilovolt.ini" >"$T/ok.ini"
check_eq "-T prints a listed set as read" \
	"$("$KV_DAEMON_BIN" -T -c "$T/ok.ini" 2>/dev/null | grep '^worker_cpu_affinity')" \
	"worker_cpu_affinity = 3 1"
check_eq "-T prints the default" \
	"$("$KV_DAEMON_BIN" -T -c "$T/kilovolt.ini" 2>/dev/null | grep '^worker_cpu_affinity')" \
	"worker_cpu_affinity = auto"

kv_finish
