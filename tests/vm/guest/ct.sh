# shellcheck shell=sh
# GPU containers under Debian trixie's runc and crun (boot "ct", guest tests
# guest/kfdsim/test-ct-*.sh), sourced after /test/lib/guest.sh. The plugin
# comes from `make deb`'s package, installed here by dpkg; runc and crun run
# CRIU (`criu swrk`) themselves and CRIU finds the plugin in /usr/lib/criu.
#
# A container: rootfs $CT/rootfs (the guest's /usr, /bin and /test bound
# read-only, $CT/out bound read-write as /out for the workload's files), a
# tmpfs /dev where the runtime mknods /dev/kfd and the render nodes the
# bundle lists, allowed by cgroup v2 device rules (a BPF program) as a
# Kubernetes device plugin would give them; pid, ipc, uts, mount namespaces
# (no network namespace: CRIU's network lock would want iptables).
# (busybox sh runs its own applets first, whatever PATH says: Debian's dpkg,
# which busybox also has as an applet, is called by its path)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
DPKG=/usr/bin/dpkg
CT=$WORK/ct
DEB=$(ls /test/deb/amdgpu-criu_*.deb 2>/dev/null | head -1)

# ct_missing RUNTIME: true, with a SKIP result, when the boot lacks it
ct_missing() {
	local what
	for what in "$1" criu /usr/bin/tar /usr/bin/dpkg "$DEB" /test/amdgpu_kfdsim.ko "$GPU_WL"; do
		[ -n "$what" ] && { [ -e "$what" ] || command -v "$what" >/dev/null; } && continue
		ok "$1 # SKIP ${what:-the package (/test/deb)} missing"
		return 0
	done
	return 1
}

# ct_setup: cgroup v2 at /sys/fs/cgroup (as systemd mounts it), the package
# installed by dpkg (the first test of the boot installs it), as TAP
ct_setup() {
	grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || mount -t cgroup2 cgroup2 /sys/fs/cgroup
	check "cgroup v2 at /sys/fs/cgroup" grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts
	if ! $DPKG -s amdgpu-criu >/dev/null 2>&1; then
		check "dpkg -i $(basename "$DEB") (its Depends met by the guest's packages)" \
			eval '$DPKG -i "$DEB" >"$WORK/dpkg.log" 2>&1 || { sed "s/^/# dpkg: /" "$WORK/dpkg.log"; false; }'
	fi
	check "the package is installed" eval '$DPKG -s amdgpu-criu | grep -q "^Status: install ok installed"'
	check "its plugin is where criu looks without --libdir" \
		eval '[ "$($DPKG -S /usr/lib/criu/amdgpu_plugin.so 2>/dev/null)" = "amdgpu-criu: /usr/lib/criu/amdgpu_plugin.so" ]'
	check "its tool runs" amdgpu-criu --version
}

# ct_rootfs: $CT/rootfs, its mount points and the /lib links of merged /usr
ct_rootfs() {
	mkdir -p "$CT/rootfs" "$CT/out" &&
		(cd "$CT/rootfs" && mkdir -p usr bin test out proc sys dev tmp etc &&
			ln -sfn usr/lib lib && ln -sfn usr/lib64 lib64 && ln -sfn bin sbin)
}

# ct_bundle DIR NAME MINOR...: DIR/config.json of container NAME running the
# GPU workload on all its GPUs ($CT/out/NAME.*), with /dev/kfd and these
# render nodes, and device rules that allow exactly those (and the usual
# null, zero, ... as runc's defaults do)
ct_bundle() {
	local dir=$1 name=$2 kfd devs="" rules="" m sep=""
	shift 2
	kfd=$(cat /sys/class/kfd/kfd/dev)
	for m in "$@"; do
		devs="$devs$sep{\"path\": \"/dev/dri/renderD$m\", \"type\": \"c\", \"major\": 226, \"minor\": $m, \"fileMode\": 438, \"uid\": 0, \"gid\": 0}"
		rules="$rules, {\"allow\": true, \"type\": \"c\", \"major\": 226, \"minor\": $m, \"access\": \"rwm\"}"
		sep=", "
	done
	mkdir -p "$dir"
	cat >"$dir/config.json" <<EOF
{
  "ociVersion": "1.0.2",
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": ["/bin/sh", "-c", "exec /test/bin/zdtm-gpu-basic --render-fds /out/$name.ready /out/$name.trigger /out/$name.result </dev/null >/out/$name.out 2>&1"],
    "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"]},
    "noNewPrivileges": true
  },
  "root": {"path": "$CT/rootfs", "readonly": false},
  "hostname": "gpu",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]},
    {"destination": "/bin", "type": "bind", "source": "/bin", "options": ["rbind", "ro"]},
    {"destination": "/test", "type": "bind", "source": "/test", "options": ["rbind", "ro"]},
    {"destination": "/out", "type": "bind", "source": "$CT/out", "options": ["rbind", "rw"]}
  ],
  "linux": {
    "devices": [
      {"path": "/dev/kfd", "type": "c", "major": ${kfd%%:*}, "minor": ${kfd##*:}, "fileMode": 438, "uid": 0, "gid": 0}${devs:+, $devs}
    ],
    "resources": {"devices": [
      {"allow": false, "access": "rwm"},
      {"allow": true, "type": "c", "major": ${kfd%%:*}, "minor": ${kfd##*:}, "access": "rwm"}$rules
    ]},
    "cgroupsPath": "/ct-$name",
    "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
    "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
    "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
  }
}
EOF
}

# ct_pid RUNTIME NAME: the container's init pid (the workload), from `state`
ct_pid() { "$1" state "$2" 2>/dev/null | sed -n 's/.*"pid": *\([0-9][0-9]*\).*/\1/p'; }

# ct_run RUNTIME NAME BUNDLE: starts it detached; WL_PID, R as gpu_start sets
# them; waits for READY
ct_run() {
	local rt=$1 name=$2 bundle=$3
	R=$CT/out/$name
	rm -f "$R".*
	(cd "$bundle" && "$rt" run -d "$name" </dev/null >"$CT/$rt-run.log" 2>&1) || {
		diag "$rt run: $(tr '\n' ';' <"$CT/$rt-run.log")"
		return 1
	}
	WL_PID=$(ct_pid "$rt" "$name")
	wait_until 60 test -f "$R.ready" || { diag "not ready: $(tail -3 "$R.out" 2>/dev/null | tr '\n' ';')"; return 1; }
}

# ct_checkpoint RUNTIME NAME IMG: `RUNTIME checkpoint`; its status
ct_checkpoint() {
	local rt=$1 name=$2 img=$3 rc
	rm -rf "$img" "$img.work" && mkdir -p "$img" "$img.work"
	timeout -s KILL 300 "$rt" checkpoint --image-path "$img" --work-path "$img.work" "$name" \
		</dev/null >"$img.work/$rt.log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || { keep "$img.work"; sed 's/^/# /' "$img.work/$rt.log" | tail -5; }
	cp "$R.out" "$img.out"
	return "$rc"
}

# ct_restore RUNTIME NAME IMG BUNDLE: `RUNTIME restore -d` into the bundle's
# container (its devices and device rules); its status; WL_PID the new init.
# The workload's files are as at the checkpoint (its stdout file, which CRIU
# checks by size: runc and crun do not save the container's files; no
# TRIGGER or RESULT of an earlier restore).
ct_restore() {
	local rt=$1 name=$2 img=$3 bundle=$4 rc
	cp "$img.out" "$R.out" && rm -f "$R.trigger" "$R.result" "$R.trigger.tmp"
	rm -rf "$img.rwork" && mkdir -p "$img.rwork"
	(cd "$bundle" && timeout -s KILL 300 "$rt" restore -d -b "$bundle" --image-path "$img" \
		--work-path "$img.rwork" "$name" </dev/null >"$img.rwork/$rt.log" 2>&1)
	rc=$?
	WL_PID=$(ct_pid "$rt" "$name")
	[ "$rc" -eq 0 ] || { mkdir -p "$KEEP/$rt-$(basename "$bundle")" && cp -r "$img.rwork"/. "$KEEP/$rt-$(basename "$bundle")/"; }
	return "$rc"
}

# ct_gone RUNTIME NAME: no such container any more, and (10 s) no KFD process
ct_gone() {
	! "$1" state "$2" >/dev/null 2>&1 && { ! kfdsim_debugfs || wait_until 10 kfd_no_processes; }
}

# ct_delete RUNTIME NAME: the container killed and deleted, whatever its state
ct_delete() {
	"$1" kill "$2" KILL >/dev/null 2>&1
	wait_until 10 eval '! "$1" state "$2" 2>/dev/null | grep -q "\"status\": \"running\""'
	"$1" delete -f "$2" >/dev/null 2>&1
	return 0
}

# kfd_prop_of MINOR: "DOMAIN LOCATION_ID UNIQUE_ID" of the KFD node with that render minor
kfd_prop_of() {
	local f
	for f in /sys/class/kfd/kfd/topology/nodes/*/properties; do
		awk -v m="$1" '$1 == "drm_render_minor" && $2 == m { mine = 1 }
			$1 == "domain" { d = $2 } $1 == "location_id" { l = $2 } $1 == "unique_id" { u = $2 }
			END { if (mine) print d, l, u }' "$f"
	done
}
# pci_of MINOR: "0000:63:00.0" of that GPU
pci_of() {
	kfd_prop_of "$1" | awk '{ printf "%04x:%02x:%02x.%x\n", $1, int($2 / 256) % 256, int($2 / 8) % 32, $2 % 8 }'
}
# ct_plugin_says LOG: the plugin's lines about GPUs, nodes and the restore, as diag
ct_plugin_says() {
	grep -aE "amdgpu_plugin: .*(GPU [0-9]+ \(node|created /dev|replaced /dev|opened for|restored pid|not usable|checkpointed with)" "$1" 2>/dev/null |
		sed 's/^([^)]*) *//; s/^[0-9]*: //; s/amdgpu_plugin: //' | cut -c1-400 | while read -r l; do diag "$l"; done
}

# ct_cases RUNTIME: the container cases for one runtime, as TAP.
# kfdsim is reloaded as the MI210 machine (8 GPUs, two xGMI hives of 4); the
# container "gpu-RUNTIME" is given GPUs A0 A1 (hive A), runs the workload on
# both, and is checkpointed once. That checkpoint is then restored
#   (c) into a container given one GPU (B0): refused in one line, nothing
#       left running, the images unchanged;
#   (b) into a container given other GPUs (B0 B1: other gpu_ids, render
#       minors, hive): restored onto them, their nodes created in the
#       restored /dev (it holds A's nodes, from the checkpoint), every byte
#       and the remapped ids checked by the workload;
#   (a) into a container given the same GPUs: restored, checked.
# CT_RESTORE_ENV: "VAR=VALUE" words for each restore (crun needs the
# container's GPUs named: AMDGPU_CRIU_GPUS, kfd_confine.h). CT_GPUS_FOR
# MINORS...: prints the AMDGPU_CRIU_GPUS value for a bundle's GPUs, or
# nothing (runc: its device cgroup shows CRIU the container's GPUs).
ct_cases() {
	local rt=$1 name=gpu-$1 img gpus a0 a1 b0 b1 ids a_ids b_ids map sums rc env
	ct_setup
	check "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine=/test/kfdsim/machines/mi210.desc'
	kfd_gpu_table >"$WORK/gpus"
	sed 's/^/# node gpu_id minor hive ...: /' "$WORK/gpus"
	hive_a=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
	awk -v h="$hive_a" '$4 == h' "$WORK/gpus" | head -2 >"$WORK/a"
	awk -v h="$hive_a" '$4 != h' "$WORK/gpus" | head -2 >"$WORK/b"
	a0=$(sed -n 1p "$WORK/a" | col 3) a1=$(sed -n 2p "$WORK/a" | col 3)
	b0=$(sed -n 1p "$WORK/b" | col 3) b1=$(sed -n 2p "$WORK/b" | col 3)
	a_ids=$(col 2 <"$WORK/a") b_ids=$(col 2 <"$WORK/b")
	diag "A: renderD$a0 renderD$a1 ($a_ids); B: renderD$b0 renderD$b1 ($b_ids)"
	ct_rootfs
	ct_bundle "$CT/bundle-a" "$name" "$a0" "$a1"
	ct_bundle "$CT/bundle-b" "$name" "$b0" "$b1"
	ct_bundle "$CT/bundle-c" "$name" "$b0"
	img=$CT/img
	if ! ct_run "$rt" "$name" "$CT/bundle-a"; then
		fail "$rt: the GPU container runs"
		ct_delete "$rt" "$name"
		return
	fi
	ok "$rt: the GPU container runs (init pid $WL_PID)"
	check "$rt: the workload sees exactly the container's GPUs ($a_ids)" \
		eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$a_ids" ]'
	ids=$(kfd_user_ids "$WL_PID")
	ct_checkpoint "$rt" "$name" "$img"
	rc=$?
	check "$rt checkpoint (status $rc)" test "$rc" -eq 0
	ct_plugin_says "$img.work/dump.log"
	check "$rt: the checkpointed container is gone, no KFD process left" ct_gone "$rt" "$name"
	check "$rt: the plugin's images are in the image directory" eval 'ls "$img" | grep -q "^amdgpu-"'
	check "$rt: the checkpoint's /dev made another host's (its kfd node 1:3)" ct_stale_kfd "$img"
	sums=$(gpu_img_sums "$img")

	# (c) too few GPUs
	CT_CASE=c; env=$(ct_gpus_for "$b0")
	ct_restore_env "$env" "$rt" "$name" "$img" "$CT/bundle-c"
	rc=$?
	check "$rt (c): restore into a container given one GPU refused (status $rc)" test "$rc" -ne 0
	ct_plugin_says "$img.rwork/restore.log"
	check "$rt (c): the plugin says why in one line" \
		grep -qE "amdgpu_plugin: (Error: )?.*(cannot be restored on this node|checkpointed with 2 GPUs)" "$img.rwork/restore.log"
	ct_delete "$rt" "$name"
	check "$rt (c): nothing left running (no container, workload, criu or KFD process)" \
		eval 'ct_gone "$rt" "$name" && gpu_no_strays'
	check "$rt (c): the images are unchanged" eval '[ "$(gpu_img_sums "$img")" = "$sums" ]'

	[ "$rt" != crun ] || ct_crun_unnamed "$name" "$img" "$sums"

	# (b) other GPUs; (a) the same
	map=$(echo "$ids" | awk -v b="$b_ids" '{ split(b, B, " "); for (i = 1; i <= NF; i++) print "map", $i, B[i] }')
	ct_restore_case b "given B's GPUs" "$b0 $b1" "$map"
	ct_restore_case a "given the same GPUs" "$a0 $a1" ""
}

# ct_restore_case CASE WHAT "MINOR MINOR" TRIGGER: ct_cases' restore of its
# checkpoint into bundle-CASE, the restored container's checks, and the
# workload's self-check with TRIGGER ("map USER ACTUAL" lines)
ct_restore_case() {
	local rc
	CT_CASE=$1
	env=$(ct_gpus_for $3)
	ct_restore_env "$env" "$rt" "$name" "$img" "$CT/bundle-$1"
	rc=$?
	check "$rt ($1): restore into a container $2 (status $rc)" test "$rc" -eq 0
	ct_plugin_says "$img.rwork/restore.log"
	ct_restored_checks "$rt ($1)" "$3" "$ids"
	GPU_TRIGGER_TEXT="$4" ct_finish "$rt ($1)" "$rt" "$name"
}

# ct_crun_unnamed NAME IMG SUMS: crun restores with no device filter in
# place, so the task may use all 8 GPUs; without AMDGPU_CRIU_GPUS the plugin
# cannot tell the container's two: refused in one line that says so
ct_crun_unnamed() {
	local name=$1 img=$2 sums=$3 rc
	ct_restore_env "" crun "$name" "$img" "$CT/bundle-b"
	rc=$?
	check "crun: restore into B's container without naming its GPUs refused (status $rc)" test "$rc" -ne 0
	ct_plugin_says "$img.rwork/restore.log"
	check "crun: the plugin's line says to name them in AMDGPU_CRIU_GPUS" \
		grep -qE "amdgpu_plugin: (Error: )?.*checkpointed with 2 GPUs but its restored task can use 8.*crun.*AMDGPU_CRIU_GPUS" "$img.rwork/restore.log"
	ct_delete crun "$name"
	check "crun: nothing left running, the images unchanged" \
		eval 'ct_gone crun "$name" && gpu_no_strays && [ "$(gpu_img_sums "$img")" = "$sums" ]'
}

# ct_stale_kfd IMG: the checkpoint's /dev (the tmpfs-dev-*.tar.gz.img holding
# ./kfd) rewritten with kfd as 1:3, as a checkpoint from a host whose KFD
# got another (dynamic) major holds it: the restore must not open it, and
# must leave the container a /dev/kfd that is this host's
ct_stale_kfd() {
	local t f
	for f in "$1"/tmpfs-dev-*.tar.gz.img; do
		/usr/bin/tar -tzf "$f" 2>/dev/null | grep -qx './kfd' && t=$f
	done
	if [ -z "${t:-}" ]; then
		diag "no tmpfs-dev-*.tar.gz with ./kfd in $1: $(ls "$1" | grep -v '^amdgpu-' | tr '\n' ' ')"
		for f in "$1"/tmpfs-dev-*.tar.gz.img; do diag "$f: $(/usr/bin/tar -tzf "$f" 2>&1 | head -5 | tr '\n' ' ')"; done
		return 1
	fi
	rm -rf "$CT/devtar" && mkdir -p "$CT/devtar" &&
		/usr/bin/tar -xzf "$t" -C "$CT/devtar" --numeric-owner &&
		rm "$CT/devtar/kfd" && mknod -m 0666 "$CT/devtar/kfd" c 1 3 &&
		/usr/bin/tar -czf "$t" -C "$CT/devtar" --numeric-owner . && rm -rf "$CT/devtar" &&
		CT_STALE_KFD=1
}

# ct_restore_env "VAR=VALUE..." ARGS...: ct_restore ARGS with those variables
ct_restore_env() {
	local e=$1 rc
	shift
	# shellcheck disable=SC2086
	(if [ -n "$e" ]; then export $e; fi; ct_restore "$@")
	rc=$?
	WL_PID=$(ct_pid "$1" "$2")
	return "$rc"
}

# ct_restored_checks WHAT "MINOR MINOR" IDS: the restored container's
# workload alive with exactly its fds, its render fds on these GPUs' nodes,
# those nodes in its /dev with the right numbers, its KFD user ids kept
ct_restored_checks() {
	local what=$1 minors=$2 ids=$3 m kd
	check "$what: the restored workload ($WL_PID) is alive" eval '[ -n "$WL_PID" ] && alive "$WL_PID"'
	check "$what: it has exactly its own fds" gpu_fds_ok "$WL_PID" "$R.ready"
	check "$what: its render fds are renderD$(echo "$minors" | sed 's/ /, renderD/')" \
		eval '[ "$(kfd_fd_minors "$WL_PID")" = "$minors" ]'
	for m in $minors; do
		check "$what: its /dev/dri/renderD$m is 226:$m" \
			eval '[ "$(stat -c "%t:%T" "/proc/$WL_PID/root/dev/dri/renderD$m")" = "$(printf "e2:%x" "$m")" ]'
	done
	check "$what: its KFD process keeps its user gpu_ids ($ids)" eval '[ "$(kfd_user_ids "$WL_PID")" = "$ids" ]'
	kd=$(cat /sys/class/kfd/kfd/dev)
	[ "${CT_STALE_KFD:-0}" = 1 ] || return 0
	check "$what: its /dev/kfd is this host's KFD again ($kd), as the plugin says" eval '
		[ "$(stat -c "%t:%T" "/proc/$WL_PID/root/dev/kfd")" = "$(printf "%x:%x" "${kd%%:*}" "${kd##*:}")" ] &&
		grep -q "amdgpu_plugin: replaced /dev/kfd (1:3" "$img.rwork/restore.log"'
}

# ct_finish WHAT RUNTIME NAME: the workload's self-check PASSes (GPU_TRIGGER_TEXT),
# the container is deleted, nothing is left
ct_finish() {
	gpu_trigger "${GPU_TRIGGER_TEXT:-}"
	gpu_result "$WL_PID"
	check "$1: self-check PASS (every byte, ids, doorbells, fds)" gpu_passed
	ct_delete "$2" "$3"
	check "$1: container deleted, nothing left" eval 'ct_gone "$2" "$3" && gpu_no_strays'
}
