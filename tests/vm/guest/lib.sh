# shellcheck shell=sh
# Helpers for guest tests (busybox sh). A guest test is a shell script
# tests/vm/guest/<suite>/test-NAME.sh that sources this file and prints TAP:
#
#   . /test/lib/guest.sh          # also brings ok/fail/check/diag/tap_done
#   check "criu is there" test -x /usr/sbin/criu
#   tap_done
#
# Each test runs with its own scratch dir $WORK; files worth reading after a
# failure go to $KEEP (on the host: $BUILD/vm-logs/<suite>/guest/<test>/).
# What /init left: /test/bin (workloads, probes), /usr/lib/criu (the plugin,
# CRIU's default plugin dir), /usr/bin/amdgpu-criu when built, /test/config.
. /test/lib/tap.sh
[ -f /test/config ] && . /test/config
TEST=${TEST:-$(basename "$0" .sh)}
WORK=/tmp/work/$TEST
if grep -q ' /results 9p ' /proc/mounts 2>/dev/null; then KEEP=/results/$TEST; else KEEP=/tmp/keep/$TEST; fi
mkdir -p "$WORK"
CRIU_TIMEOUT=${CRIU_TIMEOUT:-60}

# keep FILE...: save files for the host (e.g. CRIU logs of a failed step).
keep() { mkdir -p "$KEEP" && cp -r "$@" "$KEEP"/ 2>/dev/null; }

# wait_until SECONDS COMMAND...: polls COMMAND every 0.1 s; fails on timeout.
wait_until() {
	local n=$(($1 * 10))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		usleep 100000
	done
}

# start_workload OUT COMMAND...: starts COMMAND detached, as a session leader
# (criu dumps a tree whose root leads its session), stdout and stderr into
# the file OUT, with no other fd of ours; its pid is in WL_PID.
start_workload() {
	local out=$1
	shift
	setsid "$@" </dev/null >"$out" 2>&1 &
	WL_PID=$!
}

alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# ticks LOG: the last counter a vmcounter wrote; 0 if none yet.
ticks() { sed -n 's/^tick //p' "$1" 2>/dev/null | tail -1 | grep . || echo 0; }
ticking() { [ "$(ticks "$2")" -gt "$1" ]; }  # ticking N LOG: past N?

# criu_dump IMGDIR PID [ARGS...] / criu_restore IMGDIR [ARGS...]: run CRIU
# with a time limit and full logs (IMGDIR/dump.log, restore.log); a failed
# step's log is kept. Return CRIU's status.
criu_dump() {
	local dir=$1 pid=$2 rc
	shift 2
	mkdir -p "$dir"
	timeout -s KILL "$CRIU_TIMEOUT" criu dump -t "$pid" -D "$dir" -v4 -o dump.log "$@"
	rc=$?
	[ $rc -eq 0 ] || keep "$dir/dump.log"
	return $rc
}
criu_restore() {
	local dir=$1 rc
	shift
	timeout -s KILL "$CRIU_TIMEOUT" criu restore -D "$dir" -d -v4 -o restore.log "$@"
	rc=$?
	[ $rc -eq 0 ] || keep "$dir/restore.log"
	return $rc
}

# kfdsim_load [PARAMS...] / kfdsim_unload: the simulator module, with
# KFDSIM_PARAMS (from the host's environment) when no params are given. Its
# DRM dependencies are loaded at boot. kfdsim_load_builtin: the built-in
# machine, whatever KFDSIM_PARAMS says. Every test must leave the module as
# the boot loaded it (/init checks): kfdsim_reload after loading another.
kfdsim_load() {
	# shellcheck disable=SC2086
	if [ $# -eq 0 ]; then set -- ${KFDSIM_PARAMS:-}; fi
	insmod /test/kfdsim.ko "$@"
}
kfdsim_load_builtin() { insmod /test/kfdsim.ko; }
kfdsim_loaded() { grep -q '^kfdsim ' /proc/modules; }
# Unloading waits (10 s at most) for the module to be free: files of a
# program that just ended, KFD processes released by a workqueue. Not loaded
# is fine. On failure: the error, and who still has /dev/kfd or a render node.
kfdsim_unload() {
	local p
	kfdsim_loaded || return 0
	wait_until 10 eval 'rmmod kfdsim 2>/dev/null' && return 0
	rmmod kfdsim
	for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -qE '/dev/(kfd|dri/)' && echo "# holder: pid ${p#/proc/} $(cat "$p/comm")"
	done
	return 1
}
kfdsim_reload() { kfdsim_unload && kfdsim_load "$@"; }
