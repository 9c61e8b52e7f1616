# shellcheck shell=sh
# GPU pods under a Kubernetes CRI runtime (boot "cri", guest tests
# guest/kfdsim/test-cri-*.sh), sourced after /test/lib/guest.sh and
# /test/lib/ct.sh: Debian testing's containerd 2.1 (/etc/containerd/config.toml,
# vm-suite.sh's install_cri) over trixie's runc, driven by the CRI client
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

# cri_nothing_left: no pod, container, shim, workload, criu or KFD process
cri_nothing_left() {
	python3 "$CRI_PY" pods >"$CT/pods.left" 2>&1 && python3 "$CRI_PY" ps >"$CT/ps.left" 2>&1 &&
		[ ! -s "$CT/pods.left" ] && [ ! -s "$CT/ps.left" ] ||
		{ diag "left: $(cat "$CT/pods.left" "$CT/ps.left" | tr '\n' ';')"; return 1; }
	! pidof containerd-shim-runc-v2 >/dev/null || { diag "shim left: $(pidof containerd-shim-runc-v2)"; return 1; }
	gpu_no_strays
}

# cri_restore_log: the newest restore.log runc's restore left under
# containerd's state (CRIU's log of it), copied to $CT/restore.log
cri_restore_log() {
	local f
	f=$(find /run/containerd /var/lib/containerd -name restore.log 2>/dev/null | xargs -r ls -t 2>/dev/null | head -1)
	rm -f "$CT/restore.log"
	[ -n "$f" ] && cp "$f" "$CT/restore.log"
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
