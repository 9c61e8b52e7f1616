#!/bin/bash
# `make demo`: the main job on the embedded default machine, told as a story.
# One qemu VM boots with kfdsim simulating a two-socket node with 8 MI210
# GPUs in two xGMI hives (machine description made from the capture
# tests/fixtures/kfd-topologies/k8sdp-mi210-8gpu-2hives-2socket). A ZDTM-style
# GPU workload runs on hive A (inside a device cgroup that shows it hive A
# only), fills VRAM/GTT/userptr BOs, queues and events, and is dumped with
# CRIU and our plugin. The cgroup is switched to hive B and the process is
# restored there: other gpu_ids, other render minors. The restored workload
# then re-checks every byte, its gpu_ids, mappings, doorbells and render
# fds. The guest test is tests/vm/guest/kfdsim/test-cr-remap.sh.
#
# The kernel argument amdgpu_criu.demo_keep=1 (VM_APPEND of run-vm.sh) makes
# that test pack its image directory and the VM's KFD topology into the
# results share; they are unpacked into $BUILD/demo/{ckpt,topology}
# (replaced on each run), and the demo ends with `amdgpu-criu inspect` and
# `check` on them, on the host.
#
# Every figure printed is read from this run: the guest test's TAP log
# (its checks, and as comments the plugin's own log lines from CRIU's
# dump.log/restore.log and the workload's self-check verdict) and the tool.
#
# usage: demo.sh   (from the repository root, after `make` built everything)
set -euo pipefail
BUILD=${BUILD:-build}
TOOL=$BUILD/amdgpu-criu
KEPT=$BUILD/demo
CAPTURE=k8sdp-mi210-8gpu-2hives-2socket
export VM_ONLY=test-cr-remap VM_LOGS=$BUILD/vm-logs/demo
export VM_APPEND="${VM_APPEND:-} amdgpu_criu.demo_keep=1"
GUEST=$VM_LOGS/guest/test-cr-remap # the share dir the test keeps files in
LOG=$GUEST.log                     # the test's own TAP output

# said WHAT: the test's comment lines "# WHAT: ...", without the prefix
said() { sed -n "s/^# $1: //p" "$LOG"; }
indent() { sed 's/^/    /'; }
# ms_to_s MS: "1025" -> "1.03"
ms_to_s() { awk -v m="$1" 'BEGIN { printf "%.2f", m / 1000 }'; }
# short_hive 0x0aefdf829...: the hive's leading hex digits, as the tool's tables show them
short_hive() { sed 's/^0x0*//' <<<"$1" | cut -c1-8; }
# node_ranges: node numbers on stdin (ascending) -> "2-5" / "2,4"
node_ranges() { awk 'NR > 1 && $1 == p + 1 { p = $1; next }
	{ if (NR > 1) out = out (p > s ? s "-" p : s) ","; s = p = $1 }
	END { if (NR) print out (p > s ? s "-" p : s) }'; }

failed() {
	echo
	echo "demo FAILED: $*" >&2
	grep '^\(\[vm[^]]*\] \)\{0,1\}not ok ' "$BUILD/demo.out" | sed 's/^/  /' >&2 || true
	echo "  everything the VM printed: $BUILD/demo.out; logs: $VM_LOGS" >&2
	exit 1
}

echo "amdgpu-criu demo: a running GPU job moves from one xGMI hive to the other"
echo "  No GPU is needed: a qemu VM (TCG) runs the kfdsim module, which simulates the"
echo "  8 x MI210 node captured in tests/fixtures/kfd-topologies/$CAPTURE."
echo "  The first run also downloads the VM kernel; later runs take well under a minute."
echo
t0=$SECONDS
set +e
tests/vm/vm-suite.sh kfdsim >"$BUILD/demo.out" 2>&1
rc=$?
set -e
vm_secs=$((SECONDS - t0))
passed=$(grep -c '^\(\[vm[^]]*\] \)\{0,1\}ok ' "$BUILD/demo.out" || true)
nfailed=$(grep -c '^\(\[vm[^]]*\] \)\{0,1\}not ok ' "$BUILD/demo.out" || true)
if [ "$rc" -ne 0 ] || [ "$nfailed" -ne 0 ]; then
	failed "$nfailed of $((passed + nfailed)) checks failed (status $rc)"
fi
if ! grep -qs '^ok .*remap: restore inside gpujob' "$LOG"; then
	failed "the guest test test-cr-remap did not run a restore (missing or skipped)"
fi
# unpack NAME DIR: the guest's $GUEST/NAME.tar.lzo (busybox: lzop) into DIR
unpack() { mkdir -p "$2" && busybox lzop -dc "$GUEST/$1.tar.lzo" | tar -xf - -C "$2"; }
rm -rf "$KEPT"
unpack ckpt "$KEPT/ckpt" && unpack topology "$KEPT" ||
	failed "the VM did not hand over its checkpoint and topology ($GUEST/*.tar.lzo)"

# ---- 1. the machine -------------------------------------------------------------
topo_json=$("$TOOL" topology --sysfs "$KEPT/topology" --json)
hive_nodes() { # HIVE_ID -> GPU nodes of that hive, one a line
	jq -r --arg h "$1" '.nodes[] | select(.type == "gpu" and .hive_id == $h) | .node' <<<"$topo_json"
}
hive_a=$(jq -r '[.nodes[] | select(.type == "gpu")][0].hive_id' <<<"$topo_json")
hive_b=$(jq -r --arg a "$hive_a" '[.nodes[] | select(.type == "gpu" and .hive_id != $a)][0].hive_id' <<<"$topo_json")
a_nodes=$(hive_nodes "$hive_a" | node_ranges)
b_nodes=$(hive_nodes "$hive_b" | node_ranges)
echo "1. The machine, as \`amdgpu-criu topology\` shows the VM's KFD topology:"
"$TOOL" topology --sysfs "$KEPT/topology" | indent
echo "   Two xGMI hives: A = $(short_hive "$hive_a") (nodes $a_nodes) and B = $(short_hive "$hive_b") (nodes $b_nodes)."
echo

# ---- 2. the job -----------------------------------------------------------------
read -r used seen < <(said 'ready (parent)' | sed -n 's/^\([0-9]*\) GPUs of \([0-9]*\),.*/\1 \2/p') ||
	failed "no \"ready (parent): N GPUs of M\" line from the workload in $LOG"
echo "2. The job runs in a device cgroup that lets it open hive A's GPUs only."
echo "   KFD gives its process a handle on each GPU it can see ($seen); the job puts its"
echo "   buffers on $used of them. So the checkpoint records $seen GPUs, $used holding memory."
echo

# ---- 3. the checkpoint ----------------------------------------------------------
dumped=$(said 'plugin, dump' | grep '^dumped pid ' | head -1) || true
# "dumped pid 269 (file 24): 4 GPUs, 22 BOs, 5 objects, 121 MiB of contents in 1025 ms (119 MiB/s)"
read -r d_bos d_mib d_ms d_rate < <(sed -n 's/.*GPUs, \([0-9]*\) BOs, .* \([0-9]*\) MiB of contents in \([0-9]*\) ms (\([0-9]*\) MiB\/s).*/\1 \2 \3 \4/p' <<<"$dumped") ||
	failed "no \"dumped pid\" line of the plugin in $LOG"
per_gpu=$(said 'plugin, dump' | sed -n 's/^pid [0-9]* GPU \([0-9]*\): \([0-9]*\) of [0-9]* MiB of BO contents$/GPU \1: \2 MiB/p' | paste -sd, | sed 's/,/, /g')
echo "3. criu dump, with the amdgpu plugin: $d_bos buffer objects (BOs), $d_mib MiB of contents"
echo "   ($per_gpu), saved in $(ms_to_s "$d_ms") s ($d_rate MiB/s under TCG)."
echo "   The job is gone, and so is its KFD process."
echo

# ---- 4. the move ----------------------------------------------------------------
# parallel restore (the default): the CRIU master's copier wrote the contents
# "pid 269: the master's BO copier wrote 121 MiB in 1514 ms while CRIU restored the task";
# else the task did: "restored pid 269 (file 24): 4 GPUs, 22 BOs, 121 MiB in 1600 ms"
restored=$(said 'plugin, restore' | grep "^pid [0-9]*: the master's BO copier wrote " | head -1) || true
[ -n "$restored" ] || restored=$(said 'plugin, restore' | grep '^restored pid ' | head -1) || true
read -r r_mib r_ms < <(sed -n 's/.* \([0-9]*\) MiB in \([0-9]*\) ms.*/\1 \2/p' <<<"$restored") ||
	failed "no \"restored pid\" or copier line of the plugin in $LOG"
r_who="by the restored job's process"
grep -q "BO copier" <<<"$restored" && r_who="by the CRIU master while CRIU restored the job's memory"
echo "4. The job's cgroup now shows hive B only, and criu restore runs inside it."
echo "   The plugin maps each checkpointed GPU onto a GPU of hive B:"
# "GPU 63635 (node 2, renderD128) -> GPU 22770 (node 6, renderD132)"
said 'plugin, restore' | sed -n 's/^GPU \([0-9]*\) (node \([0-9]*\), \(renderD[0-9]*\)) -> GPU \([0-9]*\) (node \([0-9]*\), \(renderD[0-9]*\))$/\1 \2 \3 \4 \5 \6/p' |
	awk 'BEGIN { printf "%-24s      %s\n", "checkpointed on", "restored on"
		     printf "%6s %5s  %-10s    %6s %5s  %s\n", "GPU_ID", "NODE", "RENDER", "GPU_ID", "NODE", "RENDER" }
	     { printf "%6s %5s  %-10s -> %6s %5s  %s\n", $1, $2, $3, $4, $5, $6 }' | indent
renders=$(said 'plugin, restore' | sed -n 's/^render-node file [0-9]*: \(renderD[0-9]*\) -> \(renderD[0-9]*\)$/\1 -> \2/p' | paste -sd, | sed 's/,/, /g')
echo "   Restored $r_mib MiB in $(ms_to_s "$r_ms") s ($r_who);"
echo "   the job's render-node files moved: $renders."
echo

# ---- 5. the job checks itself ---------------------------------------------------
verdict=$(said result | cut -d';' -f1)
user_ids=$(sed -n 's/^ok .*remap: the KFD process keeps the hive-A user gpu_ids (\(.*\))$/\1/p' "$LOG")
echo "5. The job still calls its GPUs by their old gpu_ids ($user_ids); KFD now sends"
echo "   them to hive B. Told which new GPU is behind each, the job re-checked every byte of"
echo "   its BOs, its gpu_ids, mappings, doorbells, queues, events and render-node files."
echo "   Its own verdict: $verdict"
[ "$verdict" = PASS ] || failed "the restored job's self-check says: $(said result)"
echo

# ---- 6. on the host -------------------------------------------------------------
echo "6. On the host. The checkpoint is kept in $KEPT/ckpt:"
echo "   \$ $TOOL inspect --verify $KEPT/ckpt"
"$TOOL" inspect --verify "$KEPT/ckpt" | indent || failed "amdgpu-criu inspect --verify $KEPT/ckpt"
echo "   Could it be restored on hive B? $KEPT/topology is the VM's /sys/class/kfd/kfd/topology,"
echo "   copied in the VM (the capture itself has no gpu_id files; kfdsim gives every GPU one)."
echo "   \$ $TOOL check $KEPT/ckpt --sysfs $KEPT/topology --to-nodes $b_nodes"
check_out=$("$TOOL" check "$KEPT/ckpt" --sysfs "$KEPT/topology" --to-nodes "$b_nodes") ||
	failed "amdgpu-criu check: $check_out"
indent <<<"$check_out"
tool_map=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $2, $5 }' <<<"$check_out")
plugin_map=$(said 'plugin, restore' | sed -n 's/^GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*)$/\1 \2/p')
[ "$tool_map" = "$plugin_map" ] || failed "check's map differs from the plugin's in step 4"
echo "   The same map as the plugin chose in the VM (step 4)."
echo
echo "Done: $passed checks passed, none failed. The VM part took $vm_secs s."
echo "Logs: $VM_LOGS (the guest test's log: $LOG); everything the VM printed: $BUILD/demo.out"
