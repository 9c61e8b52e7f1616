#!/bin/sh
# Debian trixie's podman (5.4.2: rootful, cgroupfs, no systemd, vfs storage,
# conmon; runc, then crun) checkpoints a GPU container into an exported
# archive and restores it from that archive onto the same GPUs, with the plugin
# installed from `make deb`'s package (guest/ct.sh's ct_setup). kfdsim is
# reloaded as the MI210 machine; the container is given A0 A1 (hive A) with
# `--device` (podman adds the device rules), an image imported offline
# (the empty rootfs of ct.sh, the guest's /usr, /bin, /test bound read-only
# and $CT/out as /out), --network none. Then
#   podman container checkpoint --export X.tar.gz: the archive holds the
#     plugin's images in checkpoint/;
#   podman rm; podman container restore --import X.tar.gz: the workload is
#     alive on the same GPUs, its self-check PASSes after its TRIGGER;
#   nothing left: no container, image, conmon, workload, criu or KFD process.
# podman restores with the checkpoint's device list (no option changes
# it), so the same-GPUs case is the one there is. runc moves CRIU into the
# container's device cgroup (guest/ct.sh), so nothing names the GPUs; crun
# installs the device rules only after the restore (test-ct-crun.sh), so
# the restore names them in AMDGPU_CRIU_GPUS, in the environment of
# `podman container restore`, which podman passes on to conmon and crun
# (its checkpoint does not pass its environment on: none is needed there).
# --network none still gives the container a network namespace (lo only):
# CRIU's network lock would want iptables(-restore), so CRIU's global config
# file says `network-lock skip` for this test. Not runc's own
# /etc/criu/runc.conf: criu 4.1.1 `swrk` dies of SIGSEGV on a network-lock
# line in an RPC config file (parse_options() reads argv[optind] with argv
# NULL, criu/config.c:1059; criu-dev and 4.2 have the same line).
# vm-boot: podman
# vm-timeout: 600
. /test/lib/guest.sh
. /test/lib/ct.sh
PODMAN=/usr/bin/podman
ct_missing runc && { tap_done; exit; }
ct_missing "$PODMAN" && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
IMAGE=localhost/gpu:1
CRIU_CONF=/etc/criu/default.conf

# must DESCRIPTION COMMAND...: check, and its status (false: the test cannot go on)
must() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else fail "$d"; return 1; fi
}
# pm STEP ARGS...: podman ARGS (limit 300 s), its output in $CT/pm-STEP.log
# (kept, and its last lines as diag, when it fails); its status
pm() {
	local step=$1 rc
	shift
	timeout -s KILL 300 "$PODMAN" "$@" </dev/null >"$CT/pm-$step.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		keep "$CT/pm-$step.log"
		tail -n 8 "$CT/pm-$step.log" | sed "s/^/# podman $step: /"
	fi
	return "$rc"
}
# pm_pid: the container's init pid (the workload), 0 when not running
pm_pid() { "$PODMAN" inspect -f '{{.State.Pid}}' "$NAME" 2>/dev/null; }
# pm_bundle: the container's bundle dir (userdata: config.json, dump.log, ...)
pm_bundle() { "$PODMAN" inspect -f '{{.StaticDir}}' "$NAME" 2>/dev/null; }
# pm_nothing_left: no container, conmon, workload, criu or KFD process
pm_nothing_left() {
	[ -z "$("$PODMAN" ps -aq 2>/dev/null)" ] || { diag "containers left: $("$PODMAN" ps -a 2>&1 | tr '\n' ';')"; return 1; }
	! pidof conmon >/dev/null || { diag "conmon left: $(pidof conmon)"; return 1; }
	gpu_no_strays
}
# pm_rules MINOR...: the container's config.json allows these render nodes
pm_rules() {
	local m
	for m in "$@"; do
		tr -d ' \n' <"$(pm_bundle)/config.json" |
			grep -q "{\"allow\":true,\"type\":\"c\",\"major\":226,\"minor\":$m,\"access\":\"rwm\"}" || return 1
	done
}
# pm_ckpt_why: after a failed checkpoint, `runc checkpoint` once more by
# hand, with CRIU's stderr (runc drops it) kept
pm_ckpt_why() {
	[ "$RT" = runc ] || return 0
	local id conf
	id=$("$PODMAN" inspect -f '{{.ID}}' "$NAME" 2>/dev/null)
	mkdir -p "$CT/why-$NAME/bin"
	printf '#!/bin/sh\necho "criu $*" >>%s/criu.err\n/usr/sbin/criu "$@" 2>>%s/criu.err\necho "criu status $?" >>%s/criu.err\n' \
		"$CT/why-$NAME" "$CT/why-$NAME" "$CT/why-$NAME" >"$CT/why-$NAME/bin/criu"
	chmod +x "$CT/why-$NAME/bin/criu"
	rm -rf "$CT/why-$NAME/img" && mkdir -p "$CT/why-$NAME/img"
	PATH=$CT/why-$NAME/bin:$PATH timeout -s KILL 120 runc --debug checkpoint --leave-running --image-path "$CT/why-$NAME/img" \
		--work-path "$CT/why-$NAME" "$id" >"$CT/why-$NAME/runc.log" 2>&1
	diag "runc checkpoint by hand: status $?"
	grep -v 'CRIU option' "$CT/why-$NAME/runc.log" | tail -n 5 | sed 's/^/# runc: /'
	tail -n 5 "$CT/why-$NAME/criu.err" 2>/dev/null | sed 's/^/# criu stderr: /'
	grep -a 'Error' "$CT/why-$NAME/dump.log" 2>/dev/null | tail -n 10 | sed 's/^/# dump.log: /'
	keep "$CT/why-$NAME"
}
pm_cleanup() {
	"$PODMAN" rm -a -f -t 0 >/dev/null 2>&1
	"$PODMAN" rmi -f "$IMAGE" >/dev/null 2>&1
	rm -f "$CRIU_CONF"
}
# pm_finish: ends the test: kfdsim loaded again as the boot loaded it
pm_finish() {
	pm_cleanup
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
	tap_done
	exit
}

# secs_since T0: seconds since uptime T0, one decimal
secs_since() { awk -v a="$1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }'; }

# pm_case RUNTIME "VAR=VALUE..." ...: one container under `podman --runtime
# RUNTIME`: run, checkpoint --export, rm, restore --import (with these
# variables in the restore's environment), checked, removed; as TAP
pm_case() {
	local e=$2 rc t0
	RT=$1 NAME=gpu-podman-$1
	ARCHIVE=$CT/$NAME.tar.gz R=$CT/out/$NAME
	rm -f "$R".*
	t0=$(cut -d' ' -f1 /proc/uptime)
	must "$RT: podman run: the GPU container runs with --device /dev/kfd, renderD$a0, renderD$a1" \
		pm "run-$RT" --runtime "$RT" run -d --name "$NAME" --network none \
		--device /dev/kfd --device "/dev/dri/renderD$a0" --device "/dev/dri/renderD$a1" \
		-v /usr:/usr:ro -v /bin:/bin:ro -v /test:/test:ro -v "$CT/out:/out" "$IMAGE" \
		/bin/sh -c "exec /test/bin/zdtm-gpu-basic --render-fds /out/$NAME.ready /out/$NAME.trigger /out/$NAME.result </dev/null >/out/$NAME.out 2>&1" ||
		return
	if ! must "$RT: the workload is READY" wait_until 120 test -f "$R.ready"; then
		diag "not ready: $(tail -3 "$R.out" 2>/dev/null | tr '\n' ';'); $("$PODMAN" logs "$NAME" 2>&1 | tail -3 | tr '\n' ';')"
		return
	fi
	diag "podman run: $(secs_since "$t0") s to READY"
	WL_PID=$(pm_pid)
	check "$RT: podman says its runtime is $RT" eval '[ "$("$PODMAN" inspect -f "{{.OCIRuntime}}" "$NAME")" = "$RT" ]'
	check "$RT: the workload sees exactly the container's GPUs ($a_ids)" \
		eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$a_ids" ]'
	check "$RT: podman gave it device rules for renderD$a0 and renderD$a1 (config.json)" pm_rules "$a0" "$a1"
	ids=$(kfd_user_ids "$WL_PID")

	t0=$(cut -d' ' -f1 /proc/uptime)
	BUNDLE=$(pm_bundle)
	pm "checkpoint-$RT" container checkpoint --export "$ARCHIVE" --compress gzip --keep "$NAME"
	rc=$?
	diag "podman checkpoint: $(secs_since "$t0") s"
	[ ! -f "$BUNDLE/dump.log" ] || cp "$BUNDLE/dump.log" "$CT/dump-$RT.log"
	if ! must "$RT: podman container checkpoint --export (status $rc)" test "$rc" -eq 0; then
		keep "$CT/dump-$RT.log"
		pm_ckpt_why
		return
	fi
	ct_plugin_says "$CT/dump-$RT.log"
	cp "$R.out" "$CT/$NAME.out.ckpt"
	check "$RT: the checkpointed container stopped, no KFD process left" \
		eval '! alive "$WL_PID" && gpu_no_strays'
	/usr/bin/tar -tzf "$ARCHIVE" >"$CT/archive-$RT.list" 2>&1
	diag "archive: $(wc -c <"$ARCHIVE") bytes, $(grep -c . "$CT/archive-$RT.list") entries: $(grep -v '^checkpoint/.' "$CT/archive-$RT.list" | tr '\n' ' ')"
	check "$RT: the archive holds the plugin's images in checkpoint/ ($(grep -E '^(\./)?checkpoint/amdgpu-' "$CT/archive-$RT.list" | sed 's|.*/||' | tr '\n' ' '))" \
		grep -qE '^(\./)?checkpoint/amdgpu-' "$CT/archive-$RT.list"
	must "$RT: podman rm: the checkpointed container removed" pm "rm-$RT" rm "$NAME" || return

	cp "$CT/$NAME.out.ckpt" "$R.out" && rm -f "$R.trigger" "$R.result" "$R.trigger.tmp"
	t0=$(cut -d' ' -f1 /proc/uptime)
	# shellcheck disable=SC2086
	(if [ -n "$e" ]; then export $e; fi; pm "restore-$RT" container restore --import "$ARCHIVE" --keep)
	rc=$?
	diag "podman restore${e:+ with $e}: $(secs_since "$t0") s"
	BUNDLE=$(pm_bundle)
	[ ! -f "$BUNDLE/restore.log" ] || cp "$BUNDLE/restore.log" "$CT/restore-$RT.log"
	if ! must "$RT: podman container restore --import (status $rc): the same GPUs" test "$rc" -eq 0; then
		keep "$CT/restore-$RT.log"
		return
	fi
	ct_plugin_says "$CT/restore-$RT.log"
	WL_PID=$(pm_pid)
	check "$RT: podman says it is running" eval '[ "$("$PODMAN" inspect -f "{{.State.Status}}" "$NAME")" = running ]'
	ct_restored_checks "$RT" "$a0 $a1" "$ids"
	gpu_trigger ""
	gpu_result "$WL_PID"
	check "$RT: self-check PASS (every byte, ids, doorbells, fds)" gpu_passed
	check "$RT: podman rm -f: container removed" pm "rm-f-$RT" rm -f -t 0 "$NAME"
	check "$RT: nothing left (no container, conmon, workload, criu or KFD process)" wait_until 10 pm_nothing_left
}

ct_setup
mkdir -p "$CT"
check "podman runs ($($PODMAN --version 2>&1))" pm version version
check "podman: rootful, cgroupfs, vfs, runc by default" eval '
	pm info info && grep -q "cgroupManager: cgroupfs" "$CT/pm-info.log" &&
	grep -q "graphDriverName: vfs" "$CT/pm-info.log" && grep -A3 "ociRuntime:" "$CT/pm-info.log" | grep -q "name: runc"'
check "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine=/test/kfdsim/machines/mi210.desc'
kfd_gpu_table >"$WORK/gpus"
hive_a=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
awk -v h="$hive_a" '$4 == h' "$WORK/gpus" | head -2 >"$WORK/a"
a0=$(sed -n 1p "$WORK/a" | col 3) a1=$(sed -n 2p "$WORK/a" | col 3)
a_ids=$(col 2 <"$WORK/a")
diag "A: renderD$a0 renderD$a1 ($a_ids)"
mkdir -p /etc/criu && printf '# test-ct-podman: no iptables in the VM (the container has only lo)\nnetwork-lock skip\n' >"$CRIU_CONF"
ct_rootfs
must "podman import of an offline rootfs as $IMAGE" \
	eval '/usr/bin/tar -C "$CT/rootfs" -c . | timeout -s KILL 300 "$PODMAN" import - "$IMAGE" >"$CT/pm-import.log" 2>&1 ||
		{ tail -5 "$CT/pm-import.log" | sed "s/^/# /"; false; }' || pm_finish
pm_case runc ""
"$PODMAN" rm -a -f -t 0 >/dev/null 2>&1
if [ -x /usr/bin/crun ]; then
	pm_case crun "AMDGPU_CRIU_GPUS=renderD$a0,renderD$a1"
	check "crun: the plugin opened /dev/kfd for the GPUs the restore's environment names" \
		grep -q "opened for renderD$a0,renderD$a1 only" "$CT/restore-crun.log"
else
	ok "crun # SKIP no /usr/bin/crun"
fi
check "podman rmi: image removed" pm rmi rmi "$IMAGE"
diag "guest memory: $(awk '/^(MemTotal|MemAvailable|Shmem):/ { printf "%s %d MiB ", $1, $2 / 1024 }' /proc/meminfo)"
pm_finish
