# shellcheck shell=sh
# GPU pods under a Kubernetes CRI runtime (boot "cri", guest tests
# guest/kfdsim/test-cri-*.sh), sourced after /test/lib/guest.sh and
# /test/lib/ct.sh: Debian testing's containerd 2.1 (/etc/containerd/config.toml,
# vm-suite.sh's install_cri) over Debian testing's runc 1.3 (handler "runc",
# the default; trixie's runc 1.1.15 is the handler "runc-1.1"), driven by the CRI client
# /test/lib/cri/cri.py with the kubelet's calls. Images: a pause image (the
# guest's static busybox sleeping) and the workload image (ct.sh's empty
# rootfs; the guest's /usr, /bin, /test bound read-only and $CT/out as /out,
# as hostPath volumes), built as OCI layouts by /test/lib/cri/oci.py and
# pulled through CRI PullImage from oci.py's registry on 127.0.0.1:5000,
# which also serves the checkpoint images the tests build. Pods use the
# node's network (no CNI). GPUs are CDI devices of `amdgpu-criu cdi`'s spec
# in /etc/cdi.
CRI_PY=/test/lib/cri/cri.py
OCI_PY=/test/lib/cri/oci.py
REG=localhost:5000
CRI_GPU_IMAGE=$REG/gpu:1
CRI_MOUNTS="--mount /usr:/usr:ro --mount /bin:/bin:ro --mount /test:/test:ro --mount $CT/out:/out"

# cri_missing: true, with a SKIP result, when the boot lacks the cri boot's
# packages (Debian testing's containerd 2.1 and runc 1.3, python3: make
# vm-deps fetches them, a failed fetch only warns) or the container tests'
cri_missing() {
	local what
	for what in /usr/bin/containerd /usr/sbin/runc-1.3 python3; do
		command -v "$what" >/dev/null && continue
		ok "cri # SKIP $what missing: Debian testing's containerd 2.1 and runc 1.3 are fetched by make vm-deps (scripts/fetch-cri.sh)"
		return 0
	done
	ct_missing runc
}

# must DESCRIPTION COMMAND...: check, and its status (false: the test cannot go on)
must() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else fail "$d"; return 1; fi
}

# cri STEP ARGS...: cri.py ARGS (its own limit: --timeout, else 300 s), its
# output in $CT/cri-STEP.log, its first line in CRI_OUT; on failure its
# error line as diag and in CRI_ERR; its status
cri() {
	local step=$1 rc
	shift
	timeout -s KILL 600 python3 "$CRI_PY" "$@" </dev/null >"$CT/cri-$step.log" 2>"$CT/cri-$step.err"
	rc=$?
	CRI_OUT=$(head -1 "$CT/cri-$step.log")
	CRI_ERR=$(tail -1 "$CT/cri-$step.err" 2>/dev/null)
	[ "$rc" -eq 0 ] || diag "cri $step: ${CRI_ERR:-status $rc}"
	return "$rc"
}

# cri_containerd_start: containerd in the background (its log
# $CT/containerd.log), serving CRI within 120 s
cri_containerd_start() {
	mkdir -p "$CT"
	setsid containerd --config /etc/containerd/config.toml </dev/null >"$CT/containerd.log" 2>&1 &
	CTRD_PID=$!
	wait_until 120 cri version version || { keep "$CT/containerd.log"; tail -5 "$CT/containerd.log" | sed 's/^/# containerd: /'; return 1; }
}

# cri_registry_start: the images as OCI layouts under $CT/oci, served
# (the checkpoint images' layouts appear there later)
cri_registry_start() {
	mkdir -p "$CT/pause-root/bin" "$CT/oci" &&
		cp /bin/busybox "$CT/pause-root/bin/busybox" &&
		python3 "$OCI_PY" image "$CT/oci/pause" "$CT/pause-root" 1 -- /bin/busybox sleep 2147483647 >/dev/null &&
		ct_rootfs && python3 "$OCI_PY" image "$CT/oci/gpu" "$CT/rootfs" 1 >/dev/null || return 1
	setsid python3 "$OCI_PY" serve 5000 pause="$CT/oci/pause" gpu="$CT/oci/gpu" \
		gpu-ckpt="$CT/oci/gpu-ckpt" gpu-ckpt2="$CT/oci/gpu-ckpt2" </dev/null >"$CT/registry.log" 2>&1 &
	REG_PID=$!
	wait_until 30 grep -q serving "$CT/registry.log"
}

# cri_cdi_spec: /etc/cdi/amdgpu.json from `amdgpu-criu cdi`; $CT/cdi-names:
# "minor name" per GPU device of it
cri_cdi_spec() {
	mkdir -p /etc/cdi && amdgpu-criu cdi --output /etc/cdi/amdgpu.json >"$CT/cdi.log" 2>&1 || return 1
	python3 -c '
import json, sys
spec = json.load(open(sys.argv[1]))
for d in spec["devices"]:
    nodes = [n["path"] for n in d["containerEdits"]["deviceNodes"] if "/dri/renderD" in n["path"]]
    if d["name"] != "all" and len(nodes) == 1:
        print(nodes[0].split("renderD")[1], spec["kind"] + "=" + d["name"])
' /etc/cdi/amdgpu.json >"$CT/cdi-names"
	[ -s "$CT/cdi-names" ]
}

# cri_cdi MINOR...: "--cdi NAME" for the CDI devices of these render nodes
cri_cdi() {
	local m
	for m in "$@"; do printf -- '--cdi %s ' "$(awk -v m="$m" '$1 == m { print $2 }' "$CT/cdi-names")"; done
}

# cri_pid CTR: the container's init pid (its workload), 0 when none
cri_pid() { python3 "$CRI_PY" status "$1" 2>/dev/null | awk '{ print $2 }'; }
# cri_state CTR: CREATED, RUNNING, EXITED or UNKNOWN
cri_state() { python3 "$CRI_PY" status "$1" 2>/dev/null | awk '{ print $1 }'; }

# cri_pod_gone POD_ID: the pod stopped and removed
cri_pod_gone() {
	cri "stopp-$1" stopp "$1" && cri "rmp-$1" rmp "$1"
}

# cri_none_listed: CRI lists no pod and no container (each named otherwise)
cri_none_listed() {
	python3 "$CRI_PY" pods >"$CT/pods.left" 2>&1 && python3 "$CRI_PY" ps >"$CT/ps.left" 2>&1 &&
		[ ! -s "$CT/pods.left" ] && [ ! -s "$CT/ps.left" ] && return 0
	diag "left: $(cat "$CT/pods.left" "$CT/ps.left" | tr '\n' ';')"
	return 1
}

# cri_nothing_left: no pod or container listed, no workload, criu or KFD
# process (each part checked and named, whatever the others say). The
# shims are containerd's: cri_shim_report
cri_nothing_left() {
	local rc=0
	cri_none_listed || rc=1
	gpu_no_strays || rc=1
	return "$rc"
}

# cri_gc_once POD_ID CTR_ID: one round of what a kubelet does for a pod it
# gave up (StopContainer, RemoveContainer, StopPodSandbox,
# RemovePodSandbox; each call's failure ignored: it is tried again), then
# cri_none_listed
cri_gc_once() {
	{
		[ -z "$2" ] || { python3 "$CRI_PY" --timeout 60 stop "$2"; python3 "$CRI_PY" --timeout 60 rm "$2"; }
		[ -z "$1" ] || { python3 "$CRI_PY" --timeout 60 stopp "$1"; python3 "$CRI_PY" --timeout 60 rmp "$1"; }
	} >>"$CT/gc.log" 2>&1
	cri_none_listed
}

# cri_kubelet_gc POD_ID CTR_ID: cri_gc_once again until CRI lists nothing
# (120 s of uptime at most: a kubelet's garbage collection tries again
# every minute); its status
cri_kubelet_gc() {
	: >"$CT/gc.log"
	cri_wait_until 120 cri_gc_once "$1" "$2"
}

# cri_shims: the pids of containerd-shim-runc-v2 processes, or nothing
cri_shims() { pidof containerd-shim-runc-v2; }

# cri_shim_report WHAT: once every pod is removed, containerd's shims should
# exit; one that still runs after 30 s (containerd's, not the plugin's) is
# reported as diag (its task directories, containerd's log lines about
# them, kept) and killed, so that the next step starts without it; always
# true
cri_shim_report() {
	local s t
	cri_wait_until 30 eval '[ -z "$(cri_shims)" ]' && return 0
	s=$(cri_shims)
	t=$(ls /run/containerd/io.containerd.runtime.v2.task/k8s.io 2>/dev/null | tr '\n' ' ')
	diag "$1: containerd-shim-runc-v2 $s still runs 30 s after its pod's removal (containerd's, not asserted); task directories: ${t:-none}"
	for t in $t; do
		grep -F "$t" "$CT/containerd.log" | grep -iE 'error|warn|shim|delete|exit' | tail -n 3 | cut -c1-300 | sed "s/^/# $1: containerd: /"
	done
	cp "$CT/containerd.log" "$CT/containerd-shim-left.log" && keep "$CT/containerd-shim-left.log"
	for t in $s; do kill -9 "$t" 2>/dev/null; done
	return 0
}

# cri_files_snap FILE: the node's files that a restore's plugin or CRIU
# could leave outside the container (/dev/shm, /dev/dri, /tmp, /run, the
# criu options directory), one path a line, without containerd's own state,
# the tests' work files and CRIU's kept logs (/var/log/criu)
cri_files_snap() {
	find /dev/shm /dev/dri /tmp /etc/criu /run -xdev 2>/dev/null |
		grep -vE '^(/run/containerd|/tmp/work|/tmp/keep)(/|$)' | sort >"$1"
}

# cri_files_left BEFORE: no file the restore's plugin or CRIU created is
# left: the node's files as in BEFORE (cri_files_snap)
cri_files_left() {
	local new
	cri_files_snap "$CT/files.after"
	new=$(grep -vxF -f "$1" "$CT/files.after" | tr '\n' ' ')
	[ -z "$new" ] || { diag "files left: $new"; return 1; }
}

# cri_state_left WHAT POD_ID CTR_ID: containerd's and runc's state and mounts
# named after the pod or the container, as diag (runc killed in a cancelled
# restore leaves its state directory: theirs, not the plugin's)
cri_state_left() {
	local ids="$2${3:+|$3}" left
	[ -n "$ids" ] || return 0
	left=$(find /run/containerd /var/lib/containerd 2>/dev/null | grep -E "$ids" | head -5 | tr '\n' ' ')
	[ -z "$left" ] || diag "$1: containerd's or runc's state left: $left"
	left=$(grep -E "$ids" /proc/mounts | awk '{ print $2 }' | tr '\n' ' ')
	[ -z "$left" ] || diag "$1: mounts left: $left"
	return 0
}

# cri_restore_log: CRIU's log of the last restore (runc's --work-path,
# containerd's CriuWorkPath: /var/log/criu), copied to $CT/restore.log
cri_restore_log() {
	rm -f "$CT/restore.log"
	[ -f /var/log/criu/restore.log ] && cp /var/log/criu/restore.log "$CT/restore.log" &&
		rm -f /var/log/criu/restore.log
}

# cri_cleanup: every pod removed, containerd and the registry stopped
cri_cleanup() {
	local p
	for p in $(python3 "$CRI_PY" pods 2>/dev/null | awk '{ print $1 }'); do
		python3 "$CRI_PY" stopp "$p" >/dev/null 2>&1
		python3 "$CRI_PY" rmp "$p" >/dev/null 2>&1
	done
	[ -z "${CTRD_PID:-}" ] || { kill "$CTRD_PID" 2>/dev/null; wait_until 30 eval '! alive "$CTRD_PID"'; }
	[ -z "${REG_PID:-}" ] || kill "$REG_PID" 2>/dev/null
	for p in $(pidof containerd-shim-runc-v2); do kill -9 "$p"; done
	grep ' /run/containerd/\| /var/lib/containerd/' /proc/mounts | awk '{ print $2 }' | sort -r | xargs -r -n1 umount -l 2>/dev/null
	return 0
}

# secs_since T0: seconds since uptime T0, one decimal; now: uptime
secs_since() { awk -v a="$1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }'; }
now() { cut -d' ' -f1 /proc/uptime; }

# cri_wait_until SECS COMMAND...: COMMAND until it succeeds, for SECS seconds
# of uptime at most (wait_until counts tries, and each try of a CRI
# predicate takes seconds: python3 and gRPC); its status
cri_wait_until() {
	local end
	end=$(awk -v a="$(now)" -v s="$1" 'BEGIN { print a + s }')
	shift
	while ! "$@"; do
		awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n < e) }' || return 1
		usleep 500000
	done
}

# cri_setup TEST: the package installed, kfdsim as the MI210 machine (a0 a1:
# two GPUs of hive A; b0..b3: hive B; a_ids, b_ids, b23_ids their gpu_ids),
# the CDI spec, containerd, the registry, the pause and workload images
# pulled; as TAP; false when the test cannot go on
cri_setup() {
	ct_setup
	mkdir -p "$CT"
	must "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine=/test/kfdsim/machines/mi210.desc' || return 1
	kfd_gpu_table >"$WORK/gpus"
	hive_a=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
	awk -v h="$hive_a" '$4 == h' "$WORK/gpus" >"$WORK/a"
	awk -v h="$hive_a" '$4 != h' "$WORK/gpus" >"$WORK/b"
	a0=$(sed -n 1p "$WORK/a" | col 3) a1=$(sed -n 2p "$WORK/a" | col 3)
	b0=$(sed -n 1p "$WORK/b" | col 3) b1=$(sed -n 2p "$WORK/b" | col 3)
	b2=$(sed -n 3p "$WORK/b" | col 3) b3=$(sed -n 4p "$WORK/b" | col 3)
	a_ids=$(head -2 "$WORK/a" | col 2) b_ids=$(head -2 "$WORK/b" | col 2) b23_ids=$(sed -n 3,4p "$WORK/b" | col 2)
	diag "A: renderD$a0 renderD$a1 ($a_ids); B: renderD$b0 renderD$b1 ($b_ids), renderD$b2 renderD$b3 ($b23_ids)"
	must "amdgpu-criu cdi: the CDI spec names the machine's 8 GPUs" eval 'cri_cdi_spec && [ "$(wc -l <"$CT/cdi-names")" = 8 ]' || return 1
	diag "CDI: $(tr '\n' ' ' <"$CT/cdi-names")"
	# host-network pods: CRIU's network lock would want iptables, and there
	# is no network namespace of the pod's to lock
	# containerd copies the node's /etc/hosts into each pod
	[ -f /etc/hosts ] || printf '127.0.0.1 localhost\n' >/etc/hosts
	mkdir -p /etc/criu && printf '# %s: pods on the node network, no iptables in the VM\nnetwork-lock skip\n' "$1" >/etc/criu/default.conf
	must "containerd serves CRI" cri_containerd_start || return 1
	diag "CRI: $CRI_OUT"
	must "the registry on $REG serves the pause and workload images" cri_registry_start || return 1
	must "PullImage $REG/pause:1 (the sandbox image)" cri pull-pause pull "$REG/pause:1" || return 1
	must "PullImage $CRI_GPU_IMAGE" cri pull-gpu pull "$CRI_GPU_IMAGE"
}

# cri_teardown: cri_cleanup, the files cri_setup wrote; after a failure
# containerd's and the registry's logs are kept
cri_teardown() {
	cri_cleanup
	[ "$TAP_FAILED" -eq 0 ] || keep "$CT/containerd.log" "$CT/registry.log" "$CT"/cri-*.err
	rm -f /etc/criu/default.conf /etc/cdi/amdgpu.json
}

# cri_wl_cmd NAME: the container's command line (sh -c): the GPU workload
# on all its GPUs, its files /out/NAME.*. The restore's CreateContainer
# names it too, as the pod spec of a restored pod does: containerd builds
# the restored container's spec from that request and the base image, and
# refuses one without a command ("no command specified")
cri_wl_cmd() {
	echo "exec /test/bin/zdtm-gpu-basic --render-fds /out/$1.ready /out/$1.trigger /out/$1.result </dev/null >/out/$1.out 2>&1"
}

# cri_pod_a NAME: pod "pod-a" given A0 A1 as CDI devices, its container NAME
# running the GPU workload ($CT/out/NAME.*: R) until READY; POD_A, CTR_A,
# WL_PID, ids (its KFD user gpu_ids); as TAP; false when it does not run
cri_pod_a() {
	local name=$1
	R=$CT/out/$name
	rm -f "$R".*
	must "pod-a: RunPodSandbox (host network)" cri runp-a runp pod-a || return 1
	POD_A=$CRI_OUT
	# shellcheck disable=SC2046,SC2086
	must "pod-a: CreateContainer with CDI devices for renderD$a0, renderD$a1" \
		cri create-a create "$POD_A" pod-a "$CRI_GPU_IMAGE" "$name" $(cri_cdi "$a0" "$a1") $CRI_MOUNTS -- \
		/bin/sh -c "$(cri_wl_cmd "$name")" || return 1
	CTR_A=$CRI_OUT
	must "pod-a: StartContainer" cri start-a start "$CTR_A" || return 1
	if ! must "pod-a: the workload is READY" wait_until 120 test -f "$R.ready"; then
		diag "not ready: $(tail -3 "$R.out" 2>/dev/null | tr '\n' ';')"
		keep "$CT/containerd.log"
		return 1
	fi
	WL_PID=$(cri_pid "$CTR_A")
	check "pod-a: the workload sees exactly the pod's GPUs ($a_ids)" \
		eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$a_ids" ]'
	ids=$(kfd_user_ids "$WL_PID")
}

# cri_checkpoint_a NAME ARCHIVE: CheckpointContainer of pod A's container
# into ARCHIVE (its stdout file as then: $CT/NAME.out.ckpt), the archive's
# checks, the container still running; as TAP; CKPT_SECS; false when there
# is no archive
cri_checkpoint_a() {
	local name=$1 archive=$2 t0 rc
	t0=$(now)
	cri checkpoint-a checkpoint "$CTR_A" "$archive"
	rc=$?
	CKPT_SECS=$(secs_since "$t0")
	diag "CheckpointContainer: $CKPT_SECS s"
	cp "$R.out" "$CT/$name.out.ckpt"
	must "pod-a: CheckpointContainer (status $rc)" test "$rc" -eq 0 || { keep "$CT/containerd.log"; return 1; }
	/usr/bin/tar -tf "$archive" >"$CT/ckpt.list" 2>&1
	diag "archive: $(wc -c <"$archive") bytes: $(grep -v '^checkpoint/.' "$CT/ckpt.list" | tr '\n' ' ')"
	check "the archive holds the plugin's images in checkpoint/ ($(grep -E '^(\./)?checkpoint/amdgpu-' "$CT/ckpt.list" | sed 's|.*/||' | tr '\n' ' '))" \
		grep -qE '^(\./)?checkpoint/amdgpu-' "$CT/ckpt.list"
	check "the archive holds config.dump, spec.dump, status.dump, dump.log" eval '
		for f in config.dump spec.dump status.dump dump.log; do grep -qE "^(\./)?$f\$" "$CT/ckpt.list" || exit 1; done'
	/usr/bin/tar -xOf "$archive" dump.log >"$CT/dump.log" 2>/dev/null
	ct_plugin_says "$CT/dump.log"
	check "pod-a: the container still runs after the checkpoint (KEP-2008 leaves it running)" \
		eval '[ "$(cri_state "$CTR_A")" = RUNNING ] && alive "$WL_PID"'
}

# cri_pod_a_gone: pod A's container stopped (unless it is already) and
# removed, pod A stopped and removed, nothing left; as TAP
cri_pod_a_gone() {
	check "pod-a: StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox" \
		eval 'cri stop-a stop "$CTR_A" && cri rm-a rm "$CTR_A" && cri_pod_gone "$POD_A"'
	check "pod-a: nothing left (no pod, container, workload, criu or KFD process)" cri_wait_until 60 cri_nothing_left
	cri_shim_report pod-a
}

# cri_ckpt_image LAYOUT TAG NAME ARCHIVE: the archive as an OCI checkpoint
# image (as checkpointctl builds one), pulled with PullImage as REG/LAYOUT:TAG
cri_ckpt_image() {
	local layout=$1 tag=$2 name=$3 archive=$4
	check "the checkpoint archive as an OCI checkpoint image" \
		eval 'python3 "$OCI_PY" checkpoint "$CT/oci/$layout" "$archive" "$tag" "$name" pod-a >"$CT/oci-$layout.log" 2>&1 ||
			{ tail -3 "$CT/oci-$layout.log" | sed "s/^/# oci.py: /"; false; }'
	check "PullImage $REG/$layout:$tag" cri "pull-$layout" pull "$REG/$layout:$tag"
}

# cri_cgroup_diag POD: where the restored task landed, as diag: its
# /proc/PID/cgroup next to its container's cgroupsPath (the OCI spec runc
# was given), and CRIU's cgroup lines ("cg:") of the restore; that log kept
# as restore-POD.log; CG_TASK, CG_SPEC
cri_cgroup_diag() {
	local pid cfg
	CG_TASK= CG_SPEC=
	pid=$(cri_pid "$CTR_ID")
	[ -z "$pid" ] || [ "$pid" = 0 ] || CG_TASK=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
	for cfg in /run/containerd/io.containerd.runtime.v2.task/k8s.io/"$CTR_ID"/config.json; do
		[ -f "$cfg" ] && CG_SPEC=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["linux"]["cgroupsPath"])' "$cfg" 2>/dev/null)
	done
	diag "$1: the restored task's cgroup: ${CG_TASK:-(no task)}; its container's cgroupsPath: ${CG_SPEC:-(no spec)}"
	grep -a ' cg: ' "$CT/restore.log" 2>/dev/null | grep -aiE 'root|yard|kubepods|set|move|criu' |
		grep -av 'Restoring cgroup property' | head -n 16 | sed "s/^/# $1 restore.log: /"
	[ ! -f "$CT/restore.log" ] || { cp "$CT/restore.log" "$CT/restore-$1.log" && keep "$CT/restore-$1.log"; }
}

# cri_restore_into POD IMAGE NAME MINOR...: a new pod given these GPUs
# (its runtime handler: CRI_HANDLER, else containerd's default), the
# container NAME created from checkpoint IMAGE (its stdout file as at the
# checkpoint) and started (cri.py's --timeout: CRI_TIMEOUT); where the
# restored task landed as diag (cri_cgroup_diag); POD_ID, CTR_ID,
# RESTORE_SECS (StartContainer); its status (CreateContainer's failure: 2)
cri_restore_into() {
	local pod=$1 image=$2 name=$3 rc t0
	shift 3
	POD_ID= CTR_ID=
	cp "$CT/$name.out.ckpt" "$R.out" && rm -f "$R.trigger" "$R.result" "$R.trigger.tmp"
	cri "runp-$pod" runp "$pod" ${CRI_HANDLER:+"$CRI_HANDLER"} || return 2
	POD_ID=$CRI_OUT
	# shellcheck disable=SC2046,SC2086
	cri "create-$pod" create "$POD_ID" "$pod" "$image" "$name" $(cri_cdi "$@") $CRI_MOUNTS -- \
		/bin/sh -c "$(cri_wl_cmd "$name")" || return 2
	CTR_ID=$CRI_OUT
	# CRI_NAME_GPUS: the restoring node's options file names the pod's GPUs
	[ -z "${CRI_NAME_GPUS:-}" ] || printf 'AMDGPU_CRIU_GPUS=%s\n' \
		"$(for m in "$@"; do printf 'renderD%s,' "$m"; done | sed 's/,$//')" >/etc/criu/amdgpu_plugin.conf
	t0=$(now)
	cri "start-$pod" --timeout "${CRI_TIMEOUT:-300}" start "$CTR_ID"
	rc=$?
	rm -f /etc/criu/amdgpu_plugin.conf
	RESTORE_SECS=$(secs_since "$t0")
	diag "$pod: StartContainer (the restore): $RESTORE_SECS s"
	cri_restore_log
	cri_cgroup_diag "$pod"
	return "$rc"
}

# cri_restored POD WHAT "MINOR MINOR" IDS: the restored pod's checks, the
# workload's self-check with its ids mapped onto IDS, the pod removed; as TAP
cri_restored() {
	local pod=$1 what=$2 minors=$3 to_ids=$4 map
	ct_plugin_says "$CT/restore.log"
	check "$pod: CRI says the restored container is RUNNING" eval '[ "$(cri_state "$CTR_ID")" = RUNNING ]'
	WL_PID=$(cri_pid "$CTR_ID")
	check "$pod: the restored task is in its container's cgroup, the one with the pod's device filter (${CG_SPEC:-none})" \
		eval '[ -n "$CG_SPEC" ] && [ "$CG_TASK" = "$CG_SPEC" ]'
	ct_restored_checks "$pod" "$minors" "$ids"
	map=$(echo "$ids" | awk -v b="$to_ids" '{ split(b, B, " "); for (i = 1; i <= NF; i++) print "map", $i, B[i] }')
	gpu_trigger "$map"
	gpu_result "$WL_PID"
	check "$pod: self-check PASS on $what (every byte, ids, doorbells, fds)" gpu_passed
	check "$pod: StopContainer, RemoveContainer" eval 'cri "stop-$pod" stop "$CTR_ID" && cri "rm-$pod" rm "$CTR_ID"'
	check "$pod: StopPodSandbox, RemovePodSandbox" cri_pod_gone "$POD_ID"
	check "$pod: nothing left (no pod, container, workload, criu or KFD process)" cri_wait_until 60 cri_nothing_left
	cri_shim_report "$pod"
}

# cri_restore_failed POD: after a failed restore, CRIU's errors as diag, the pod removed
cri_restore_failed() {
	grep -a 'Error' "$CT/restore.log" 2>/dev/null | tail -n 5 | sed "s/^/# $1 restore.log: /"
	keep "$CT/containerd.log" "$CT/restore.log"
	[ -z "${CTR_ID:-}" ] || python3 "$CRI_PY" rm "$CTR_ID" >/dev/null 2>&1
	[ -z "${POD_ID:-}" ] || cri_pod_gone "$POD_ID"
}
