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

# vm_disk: puts $WORK on the boot's ext4 disk (/dev/vda, asked for with
# "# vm-disk: MiB" in the test), for what tmpfs cannot show (O_DIRECT, a
# block device's page cache); fails when there is none.
vm_disk() {
	[ -b /dev/vda ] || return 1
	mkdir -p /mnt/disk
	grep -q '^/dev/vda ' /proc/mounts || mount -t ext4 /dev/vda /mnt/disk || return 1
	WORK=/mnt/disk/$TEST
	mkdir -p "$WORK"
}

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
# step's log is kept. Return CRIU's status. CRIU_WRAP: command words that
# run the restore (e.g. a script that enters a cgroup and execs the rest).
# CRIU_BIN: the criu command (default criu, trixie's 4.1.1; criu-4.2 is
# Debian testing's when the initramfs has it).
criu_dump() {
	local dir=$1 pid=$2 rc
	shift 2
	mkdir -p "$dir"
	timeout -s KILL "$CRIU_TIMEOUT" "${CRIU_BIN:-criu}" dump -t "$pid" -D "$dir" -v4 -o dump.log "$@"
	rc=$?
	[ $rc -eq 0 ] || keep "$dir/dump.log"
	return $rc
}
# criu_why LOG STATUS: why a criu run failed, in 3 diag lines at most for
# the TAP line just printed (tests/run-suite.sh repeats a failure's first 4,
# and a CI log's tail may be all that is left of a run elsewhere): the status
# with the log's first error line (else its last line), its second error
# line, the kernel's last line from kfdsim or of a warning.
criu_why() {
	local st=$2 e
	[ "$st" != 137 ] || st="137 (killed after CRIU_TIMEOUT=${CRIU_TIMEOUT} s)"
	e=$(grep -E 'Error|error:' "$1" 2>/dev/null | head -2)
	[ -n "$e" ] || e=$(tail -n 1 "$1" 2>/dev/null)
	[ -n "$e" ] || e="(no log $1)"
	diag "criu status $st: $(echo "$e" | head -1 | cut -c1-250)"
	[ "$(echo "$e" | wc -l)" -lt 2 ] || diag "$(echo "$e" | sed -n 2p | cut -c1-250)"
	e=$(dmesg 2>/dev/null | grep -E 'kfdsim|amdgpu|BUG|WARN|hung' | tail -n 1 | cut -c1-250)
	[ -z "$e" ] || diag "kernel: $e"
}
criu_restore() {
	local dir=$1 rc
	shift
	# shellcheck disable=SC2086 # CRIU_WRAP: words of a wrapper (e.g. a cgroup)
	${CRIU_WRAP:-} timeout -s KILL "$CRIU_TIMEOUT" "${CRIU_BIN:-criu}" restore -D "$dir" -d -v4 -o restore.log "$@"
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
	insmod /test/amdgpu_kfdsim.ko "$@"
}
kfdsim_load_builtin() { insmod /test/amdgpu_kfdsim.ko; }
kfdsim_loaded() { grep -q '^amdgpu_kfdsim ' /proc/modules; }
# Unloading waits (10 s at most) for the module to be free: files of a
# program that just ended, KFD processes released by a workqueue. Not loaded
# is fine. On failure: the error, and who still has /dev/kfd or a render node.
kfdsim_unload() {
	local p
	kfdsim_loaded || return 0
	wait_until 10 eval 'rmmod amdgpu_kfdsim 2>/dev/null' && return 0
	rmmod amdgpu_kfdsim
	for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -qE '/dev/(kfd|dri/)' && echo "# holder: pid ${p#/proc/} $(cat "$p/comm")"
	done
	return 1
}
kfdsim_reload() { kfdsim_unload && kfdsim_load "$@"; }
# The simulator under the real driver's module name (/test/kfdsim/amdgpu.ko,
# the same sources built with KFDSIM_MODNAME=amdgpu), for tools that read
# /sys/module/amdgpu: kfdsim_as_amdgpu_load [PARAMS...] after kfdsim_unload,
# kfdsim_as_amdgpu_unload before kfdsim_load.
kfdsim_as_amdgpu_load() {
	# shellcheck disable=SC2086
	if [ $# -eq 0 ]; then set -- ${KFDSIM_PARAMS:-}; fi
	insmod /test/kfdsim/amdgpu.ko "$@"
}
kfdsim_as_amdgpu_unload() {
	grep -q '^amdgpu ' /proc/modules || return 0
	wait_until 10 eval 'rmmod amdgpu 2>/dev/null' && return 0
	rmmod amdgpu
}

# --- GPU checkpoint/restore tests (guest/kfdsim/test-cr-*.sh) ---
# The workload is tests/workloads/gpu/zdtm-gpu-basic (options and file
# formats in its header comment). Its files are $R.{out,ready,trigger,result}
# (+ .child for --fork, + .probe for probes); R=$WORK/NAME.
GPU_WL=/test/bin/zdtm-gpu-basic

# gpu_wl_missing: true, with a SKIP result, when the workload or /dev/kfd is not there.
gpu_wl_missing() {
	[ -x "$GPU_WL" ] && [ -c /dev/kfd ] && return 1
	ok "GPU workload # SKIP $GPU_WL or /dev/kfd missing"
	return 0
}

# gpu_start NAME [OPTIONS...]: starts the workload detached (start_workload;
# GPU_WRAP: command words put before it, e.g. "unshare -fp --mount-proc
# setsid"), pid in WL_PID, and waits (GPU_READY_SECS, 60) for READY.
gpu_start() {
	local name=$1
	R=$WORK/$1
	shift
	rm -f "$R".*
	# shellcheck disable=SC2086
	start_workload "$R.out" ${GPU_WRAP:-} "$GPU_WL" "$@" "$R.ready" "$R.trigger" "$R.result"
	if wait_until "${GPU_READY_SECS:-60}" test -f "$R.ready"; then
		sed 's/^/# /' "$R.out" 2>/dev/null | head -3
		return 0
	fi
	diag "$name: not ready: $(tail -3 "$R.out" 2>/dev/null | tr '\n' ';')"
	return 1
}

# gpu_trigger [TEXT]: TRIGGER (with TEXT, e.g. "map USER ACTUAL" lines), atomically
gpu_trigger() {
	printf '%s' "${1:-}" >"$R.trigger.tmp" && mv "$R.trigger.tmp" "$R.trigger"
}

# gpu_result [PID]: waits (120 s) for RESULT; RESULT is its first line (PASS or
# FAIL ...), the whole file goes to diag; none from PID: where its threads sleep
gpu_result() {
	wait_until 120 test -s "$R.result" || { [ -z "${1:-}" ] || threads_report "$1"; }
	RESULT=$(head -1 "$R.result" 2>/dev/null)
	diag "result: $(tr '\n' ';' <"$R.result" 2>/dev/null || echo none)"
	[ "$RESULT" = PASS ] || keep "$R.out" "$R.ready" "$R.result" 2>/dev/null
}
gpu_passed() { [ "$RESULT" = PASS ]; }

# threads_report PID: where each thread of PID sleeps (wchan, kernel stack,
# syscall), as diag lines: why a workload gave no result
threads_report() {
	local t
	for t in /proc/"$1"/task/*; do
		[ -d "$t" ] || continue
		diag "thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): wchan $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1-3 "$t/syscall" 2>/dev/null)"
		sed -n '1,6s/^/#     /p' "$t/stack" 2>/dev/null
	done
	grep -e "^pid=$1 " -e '^trace ' /sys/kernel/debug/kfdsim/events 2>/dev/null | sed 's/^/# kfdsim: /'
}

# gpu_probe N [TEXT]: asks the waiting workload (and its --fork child) to run
# its non-destructive checks now; true if "PASS N" came back from all.
gpu_probe() {
	local f ok=0
	rm -f "$R.result.probe" "$R.result.child.probe"
	printf '%s\n%s' "$1" "${2:-}" >"$R.trigger.probe.tmp" && mv "$R.trigger.probe.tmp" "$R.trigger.probe"
	for f in "$R.result.probe" ${GPU_CHILD:+"$R.result.child.probe"}; do
		wait_until 60 test -s "$f" || true
		PROBE=$(cat "$f" 2>/dev/null)
		diag "probe $1 (${f##*.result}): ${PROBE:-none}"
		[ "$PROBE" = "PASS $1" ] || ok=1
	done
	return $ok
}

# gpu_child_pid: the --fork child's pid, from READY
gpu_child_pid() { sed -n 's/^child //p' "$R.ready"; }

# gpu_refusal_named LOG PID: CRIU's refusal names a GPU file: an fd of
# /dev/kfd or a render node ("Can't dump file ... chr"), or, as CRIU
# collects mappings before files, a mapping of one of them ("Can't handle
# non-regular mapping on PID's map ADDR", ADDR a /dev/kfd or /dev/dri
# mapping of some process of the tree).
gpu_refusal_named() {
	local a m
	grep -q "Can't dump file .*chr" "$1" && return 0
	a=$(sed -n "s/.*Can't handle non-regular mapping on \([0-9]*\)'s map \([0-9a-f]*\).*/\1 \2/p" "$1" | head -1)
	[ -n "$a" ] || return 1
	m=$(grep "^${a#* }-" "/proc/${2:-${a%% *}}/maps" 2>/dev/null || grep "^${a#* }-" "/proc/${a%% *}/maps" 2>/dev/null)
	diag "refused mapping: $m"
	echo "$m" | grep -qE ' /dev/(kfd|dri/renderD[0-9]+)$'
}

# gpu_expect_refusal NAME RC IMG PID...: TAP checks of a refused dump (EXPECT=fail):
# the plugin took part, CRIU failed (RC), named a GPU file or mapping, and
# every PID is still alive.
gpu_expect_refusal() {
	local name=$1 rc=$2 img=$3 p
	shift 3
	check "$name: the plugin took part in the dump" grep -q 'amdgpu_plugin: initialised for dump' "$img/dump.log"
	check "$name: dump refused (status $rc)" test "$rc" -ne 0
	check "$name: CRIU names a /dev/kfd or render-node fd or mapping" gpu_refusal_named "$img/dump.log" "$1"
	grep -E "Error|Can't dump" "$img/dump.log" | head -3 | sed 's/^/# /'
	for p in "$@"; do
		check "$name: pid $p still alive after the refused dump" alive "$p"
	done
	[ "$rc" -ne 0 ] || keep "$img/dump.log"
}

# gpu_fds_ok PID READY: /proc/PID/fd holds exactly the fds READY lists
# ("fd N TARGET"), with the same targets (a render node may change minor, a
# socket or pipe its inode number).
gpu_fds_ok() {
	local want have f norm='s|/dev/dri/renderD[0-9]*$|/dev/dri/renderD*|; s/^\([0-9]* \)\(socket\|pipe\):\[[0-9]*\]$/\1\2:[*]/'
	want=$(sed -n 's/^fd //p' "$2" | sed "$norm" | sort)
	have=$(for f in /proc/"$1"/fd/*; do echo "${f##*/} $(readlink "$f")"; done | sed "$norm" | sort)
	[ -n "$want" ] && [ "$want" = "$have" ] && return 0
	diag "fds of $1: want: $(echo "$want" | tr '\n' ';')"
	diag "fds of $1: have: $(echo "$have" | tr '\n' ';')"
	return 1
}

# kfdsim_debugfs: debugfs mounted (kfdsim/processes, kfdsim/inject)
kfdsim_debugfs() {
	grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
	test -r /sys/kernel/debug/kfdsim/processes
}
# kfd_user_ids PID: the user gpu_ids of PID's KFD process, one per pdd (kfdsim debugfs)
kfd_user_ids() {
	sed -n "s/^pid=$1 .* user_gpu_ids=\([0-9,]*\).*/\1/p" /sys/kernel/debug/kfdsim/processes | tr ',' ' '
}
kfd_no_processes() { ! grep -q . /sys/kernel/debug/kfdsim/processes; }

# --- kfdsim fault injection (guest/kfdsim/test-cr-*-faults.sh) ---
KFDSIM_INJECT=/sys/kernel/debug/kfdsim/inject
# kfd_inject RULE...: arms each "POINT STAGE ERRNO [COUNT [SKIP]]" (tests/kfdsim/inject.c)
kfd_inject() {
	local r
	for r in "$@"; do echo "$r" >"$KFDSIM_INJECT" || return 1; done
}
# kfd_inject_take: prints the rules still armed ("POINT STAGE ERRNO COUNT
# SKIP HITS"; a COUNT-1 rule that was hit is gone) and clears them all
kfd_inject_take() {
	cat "$KFDSIM_INJECT"
	echo clear >"$KFDSIM_INJECT"
}
# kfd_state PID: PID's line of kfdsim/processes
kfd_state() { grep "^pid=$1 " /sys/kernel/debug/kfdsim/processes; }
# kfd_running PID: PID's KFD process is not paused, no GPU of it evicted,
# every queue active
kfd_running() { kfd_state "$1" | grep -qE "^pid=$1 paused=0 .* queues_running=1 evicted=(0,)*0 "; }
# kfdsim_idle: (10 s) no file of kfdsim is open anywhere: /dev/kfd, render
# nodes, dma-bufs of its BOs all hold a module reference
kfdsim_idle() {
	wait_until 10 eval '[ "$(cat /sys/module/amdgpu_kfdsim/refcnt)" = 0 ]' && return 0
	diag "kfdsim refcnt $(cat /sys/module/amdgpu_kfdsim/refcnt), holders:$(for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -qE '/dev/(kfd|dri/)|dmabuf' && printf ' %s(%s)' "${p#/proc/}" "$(cat "$p/comm")"
	done)"
	return 1
}
# no_criu: no criu process is left
no_criu() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = criu ] && alive "${p#/proc/}" && { diag "criu ${p#/proc/} still runs"; return 1; }
	done
	return 0
}

# gpu_gone PID...: all ended (zombies count as ended), within 30 s
gpu_gone() {
	local p
	for p in "$@"; do wait_until 30 eval "! alive $p" || return 1; done
}

# gpu_no_strays: no workload or criu process is left, and (10 s) no KFD process
gpu_no_strays() {
	local p c bad=
	for p in /proc/[0-9]*; do
		c=$(cat "$p/comm" 2>/dev/null)
		case "$c" in zdtm-gpu-basic | zdtm-gpu-gem | zdtm-gpu-share | rocm-hsakmt | rocm-hsa | criu) alive "${p#/proc/}" && bad="$bad ${p#/proc/}($c)" ;; esac
	done
	[ -z "$bad" ] || { diag "left running:$bad"; return 1; }
	if kfdsim_debugfs; then
		wait_until 10 kfd_no_processes || { diag "KFD processes left: $(cat /sys/kernel/debug/kfdsim/processes)"; return 1; }
	fi
}

# gpu_restored NAME PID READY...: TAP checks after a restore: the process
# (and its children, one READY each) alive with exactly the fds they had
gpu_restored() {
	local name=$1 pid=$2 ready
	shift 2
	check "$name: restored process $pid alive" alive "$pid"
	check "$name: restored $pid has exactly its own fds (no fd of the plugin or CRIU)" gpu_fds_ok "$pid" "$1"
	if [ -f "$1.child" ]; then
		ready=$(sed -n 's/^child //p' "$1")
		check "$name: restored child $ready alive" alive "$ready"
		check "$name: restored child $ready has exactly its own fds" gpu_fds_ok "$ready" "$1.child"
	fi
}

# gpu_dump_restore NAME IMG PID [DUMP_ARGS...]: one checkpoint/restore cycle
# of the running workload ($R, PID; its --fork child from READY), as TAP.
# EXPECT=fail: the dump must be refused cleanly (gpu_expect_refusal) and
# the tree keep running; returns 1 then (nothing restored). EXPECT=ok: the
# dump succeeds, the tree is gone and so is its KFD process, the restore
# succeeds, the restored tree has its pids, exactly its fds, and its KFD
# process the user gpu_ids it had (kfdsim debugfs). Restore arguments:
# GPU_RESTORE_ARGS (words).
gpu_dump_restore() {
	local name=$1 img=$2 pid=$3 rc child ids
	shift 3
	child=$(gpu_child_pid)
	ids=$(kfd_user_ids "$pid" 2>/dev/null)
	gpu_drop_images # earlier cycles' images: /tmp is RAM
	criu_dump "$img" "$pid" "$@"
	rc=$?
	if [ "${EXPECT:-fail}" = fail ]; then
		gpu_expect_refusal "$name" "$rc" "$img" "$pid" $child
		return 1
	fi
	check "$name: dump (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$img/dump.log" "$rc"
	check "$name: the dumped tree is gone" gpu_gone "$pid" $child
	check "$name: no KFD process left after the dump" eval 'kfdsim_debugfs && wait_until 10 kfd_no_processes'
	# shellcheck disable=SC2086
	criu_restore "$img" ${GPU_RESTORE_ARGS:-}
	rc=$?
	check "$name: restore (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$img/restore.log" "$rc"
	gpu_restored "$name" "$pid" "$R.ready"
	check "$name: the restored KFD process has the user gpu_ids it had ($ids)" \
		eval '[ -n "$ids" ] && [ "$(kfd_user_ids "$pid")" = "$ids" ]'
	return 0
}

# gpu_dump_ok NAME IMG PID [ARGS...]: a dump that must succeed, as TAP (why
# on failure); the dumped process is gone
gpu_dump_ok() {
	local name=$1 img=$2 pid=$3 rc
	shift 3
	criu_dump "$img" "$pid" "$@"
	rc=$?
	check "$name: dump (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$img/dump.log" "$rc"
	check "$name: the dumped process is gone" gpu_gone "$pid"
}
# gpu_restore_ok NAME IMG [ARGS...]: a restore (CRIU_WRAP as set) that must
# succeed, as TAP (why on failure)
gpu_restore_ok() {
	local name=$1 img=$2 rc
	shift 2
	criu_restore "$img" "$@"
	rc=$?
	check "$name: restore (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$img/restore.log" "$rc"
}
# gpu_restore_on_machine NAME IMG PID IDS DESC GROUP [PARAMS]: the dumped PID ($R,
# user gpu_ids IDS) restored on kfdsim reloaded as DESC, inside the device
# cgroup GROUP (gpu_cg_make), which then shows the machine's last two GPUs
# only (KFD restores onto as many GPUs as the process had: two). TAP: the
# reload, the restore, the restored process and its fds, the user gpu_ids
# unchanged; the plugin's GPU map as diag. The caller finishes the workload
# and loads kfdsim back (kfdsim_reload). PARAMS: more module parameters
# (words, e.g. drm_uapi=618); GPU_RESTORE_ARGS: more words for criu restore.
gpu_restore_on_machine() {
	local name=$1 img=$2 pid=$3 ids=$4 desc=$5 group=$6 params=${7:-}
	# shellcheck disable=SC2086
	check "$name: kfdsim reloaded as $(basename "$desc" .desc) $params" eval 'kfdsim_unload && kfdsim_load machine="$desc" $params'
	kfd_gpu_table >"$WORK/gpus-$name"
	gpu_cg_expose "$group" "$WORK/gpus-$name" $(tail -n 2 "$WORK/gpus-$name" | awk '{ print $3 }')
	# shellcheck disable=SC2086 # GPU_RESTORE_ARGS: more words for criu restore
	CRIU_WRAP="sh $WORK/cg-$group.sh" gpu_restore_ok "$name" "$img" ${GPU_RESTORE_ARGS:-}
	sed -n 's/.*amdgpu_plugin: \(GPU [0-9]* (node .*) -> GPU .*\)/# restore: \1/p' "$img/restore.log"
	gpu_restored "$name" "$pid" "$R.ready"
	check "$name: the KFD process keeps its user gpu_ids ($ids)" eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
}

# gpu_finish NAME PID...: triggers the final self-check: PASS, every PID
# ends, nothing stays behind (workload, criu, KFD processes).
gpu_finish() {
	local name=$1
	shift
	gpu_trigger "${GPU_TRIGGER_TEXT:-}"
	gpu_result "$1"
	check "$name: self-check PASS" gpu_passed
	check "$name: the workload ended" gpu_gone "$@"
	check "$name: no workload, criu or KFD process left" gpu_no_strays
	gpu_drop_images
}

# gpu_drop_images: the image dirs $WORK/img* go (their logs are kept after a
# failure): /tmp is RAM, the tests after this one need it
gpu_drop_images() {
	local d
	for d in "$WORK"/img*; do
		[ -d "$d" ] || continue
		[ "$TAP_FAILED" -eq 0 ] || { mkdir -p "$KEEP/${d##*/}" && cp "$d"/*.log "$KEEP/${d##*/}/"; } 2>/dev/null
		rm -rf "$d"
	done
}

# --- the loaded machine's GPUs, device cgroups (guest/kfdsim/test-cr-*.sh) ---
KFD_NODES=/sys/class/kfd/kfd/topology/nodes

# kfd_gpu_table: one line per GPU node this process may read (a device
# cgroup hides the others), in node order:
#   NODE GPU_ID MINOR HIVE_ID DOMAIN LOCATION_ID UNIQUE_ID
kfd_gpu_table() {
	local n=0 id
	while [ -d "$KFD_NODES/$n" ]; do
		id=$(cat "$KFD_NODES/$n/gpu_id" 2>/dev/null)
		[ -z "$id" ] || [ "$id" = 0 ] || echo "$n $id $(awk '{ v[$1] = $2 }
			END { split("drm_render_minor hive_id domain location_id unique_id", k, " ")
			      for (i = 1; i <= 5; i++) printf "%s%s", (k[i] in v) ? v[k[i]] : 0, i < 5 ? " " : "" }' \
			"$KFD_NODES/$n/properties")"
		n=$((n + 1))
	done
}

# Device cgroup (v1 "devices" controller) GROUP, mounted at $GPU_CG: a
# container that may open some render nodes only. CRIU puts a restored task
# back into the group it was dumped in and leaves the settings of a group it
# did not create alone: a test changes what GROUP exposes between the dump
# and the restore. gpu_cg_make GROUP: false if there is no v1 devices
# controller. $WORK/cg-GROUP.sh CMD...: runs CMD inside GROUP.
GPU_CG=/tmp/cg-devices
gpu_cg_make() {
	mkdir -p "$GPU_CG" || return 1
	grep -q " $GPU_CG cgroup " /proc/mounts || mount -t cgroup -o devices devices "$GPU_CG" 2>/dev/null || return 1
	mkdir -p "$GPU_CG/$1" || return 1
	echo a >"$GPU_CG/$1/devices.allow" || return 1 # a group left by an earlier test: allow all again
	printf '#!/bin/sh\necho $$ >%s/tasks || exit 1\nexec "$@"\n' "$GPU_CG/$1" >"$WORK/cg-$1.sh"
}
# gpu_cg_expose GROUP TABLE MINOR...: GROUP may open the render nodes of
# these minors and of no other GPU of TABLE (kfd_gpu_table output)
gpu_cg_expose() {
	local g=$GPU_CG/$1 t=$2 m
	shift 2
	for m in $(awk '{ print $3 }' "$t"); do
		case " $* " in
		*" $m "*) echo "c 226:$m rwm" >"$g/devices.allow" ;;
		*) echo "c 226:$m rwm" >"$g/devices.deny" ;;
		esac || return 1
	done
}
# gpu_cg_remove GROUP: the group goes (its tasks must have ended), the
# controller is unmounted when no group is left
gpu_cg_remove() {
	rmdir "$GPU_CG/$1" 2>/dev/null
	ls -d "$GPU_CG"/*/ >/dev/null 2>&1 || umount "$GPU_CG" 2>/dev/null
}

# --- tests that reload kfdsim as another machine (test-cr-eight, -partition,
# -subset, -refuse) ---
# gpu_machines_missing NAME DESC...: true, with a SKIP result, when the
# workload, /dev/kfd, amdgpu_kfdsim.ko or one of the machine descriptions is missing
gpu_machines_missing() {
	local name=$1 f
	shift
	gpu_wl_missing && return 0
	for f in "$@" /test/amdgpu_kfdsim.ko; do
		[ -f "$f" ] && continue
		ok "$name # SKIP no $f"
		return 0
	done
	return 1
}
# gpu_machine_finish [CG]: ends such a test: the workload ($WL_PID) killed,
# the device cgroup CG removed, kfdsim loaded again as the boot loaded it
gpu_machine_finish() {
	[ -z "${WL_PID:-}" ] || kill -9 "$WL_PID" 2>/dev/null
	[ -z "${WL_PID:-}" ] || gpu_gone "$WL_PID"
	[ -z "${1:-}" ] || gpu_cg_remove "$1"
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
	tap_done
	exit
}
# col C: column C of stdin, on one line
col() { awk -v c="$1" '{ print $c }' | tr '\n' ' ' | sed 's/ $//'; }

# kfd_fd_minors PID: the render minors PID has fds of, sorted, one line
kfd_fd_minors() {
	local f
	for f in /proc/"$1"/fd/*; do readlink "$f"; done 2>/dev/null |
		sed -n 's|^/dev/dri/renderD\([0-9]*\)$|\1|p' | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# kfd_holders: "PID COMM" of every process with /dev/kfd or a render node open
kfd_holders() {
	local p
	for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -qE '/dev/(kfd|dri/)' && echo "${p#/proc/} $(cat "$p/comm" 2>/dev/null)"
	done
}

# gpu_img_sums IMG: "SUM NAME" of every file of IMG but CRIU's logs and
# stats files (each CRIU run writes its own)
gpu_img_sums() { (cd "$1" && ls | grep -v -e '\.log$' -e '^stats-' | xargs sha256sum); }

# gpu_restore_refused NAME IMG REASON: TAP checks of a restore that must be
# refused (CRIU_WRAP runs it, as for criu_restore): `amdgpu-criu check IMG`
# there (or run by GPU_CHECK_WRAP: where the restored task would be) says
# not compatible; CRIU fails; restore.log has one error line of the plugin,
# matching the extended regex REASON; nothing is left (no restored task,
# criu, KFD process, no file of /dev/kfd or a render node open); every image
# file is byte for byte what it was: what IMG.sums says (gpu_img_sums after
# the dump; made now if missing; hashing a GPU's CWSR-sized images takes
# seconds in the VM), unless GPU_REFUSED_SUMS=no.
gpu_restore_refused() {
	local name=$1 img=$2 reason=$3 rc
	[ -s "$img.sums" ] || gpu_img_sums "$img" >"$img.sums"
	# shellcheck disable=SC2086 # words of a wrapper
	${GPU_CHECK_WRAP:-${CRIU_WRAP:-}} amdgpu-criu check "$img" >"$WORK/check.out" 2>&1
	rc=$?
	sed 's/^/# check: /' "$WORK/check.out"
	check "$name: amdgpu-criu check says not compatible (status $rc)" eval \
		'[ "$rc" -eq 1 ] && grep -q "^not compatible: " "$WORK/check.out"'
	criu_restore "$img"
	rc=$?
	check "$name: restore refused (status $rc)" test "$rc" -ne 0
	grep 'amdgpu_plugin: Error: ' "$img/restore.log" >"$WORK/refusal"
	sed 's/^/# /' "$WORK/refusal"
	check "$name: the plugin says why in one line" test "$(wc -l <"$WORK/refusal")" -eq 1
	check "$name: ... matching '$reason'" grep -qE "$reason" "$WORK/refusal"
	check "$name: no restored task, criu or KFD process left" gpu_no_strays
	check "$name: no file of /dev/kfd or a render node open" eval '[ -z "$(kfd_holders)" ]'
	[ "${GPU_REFUSED_SUMS:-yes}" = no ] ||
		check "$name: every image file unchanged (sha256)" eval 'gpu_img_sums "$img" | cmp -s - "$img.sums"'
}
