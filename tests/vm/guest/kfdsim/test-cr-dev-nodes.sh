#!/bin/sh
# GPUs are found through sysfs and their render nodes checked by device
# number, not trusted by name (plugin/restore/render_fds.h), as a container's /dev
# restored from its checkpoint may hold the old GPUs' nodes (criu #2872).
# A process on both GPUs is dumped; /dev/dri/renderD<second> is then
# replaced by a node of another device (1:3, /dev/null's numbers). The
# restore must fail before any task runs GPU code, with the plugin's lines
# saying that GPU is not usable (its node is another device, what to give
# the process) and that the process needs 2 GPUs; nothing is left running.
# The real node put back, the same checkpoint restores and PASSes.
# vm-boot: cr
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
minors=$(kfd_gpu_table | awk '{ print $3 }')
second=$(echo "$minors" | sed -n 2p)
if [ -z "$second" ]; then
	ok "dev-nodes # SKIP one GPU in this boot"
	tap_done
	exit
fi
node=/dev/dri/renderD$second
if ! gpu_start dev-nodes --gpus 2; then
	fail "dev-nodes: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
gpu_dump_ok dev-nodes "$WORK/img" "$pid"
mv "$node" "$WORK/real-node"
check "dev-nodes: $node replaced by another device's node (1:3)" mknod -m 0666 "$node" c 1 3
criu_restore "$WORK/img"
rc=$?
check "dev-nodes: restore refused (status $rc)" test "$rc" -ne 0
grep -E 'amdgpu_plugin: .*(not usable|GPUs)' "$WORK/img/restore.log" | cut -c1-300 | sed 's/^/# /'
check "dev-nodes: the plugin says the node is another device" \
	grep -qE "amdgpu_plugin: GPU [0-9]+ \(node [0-9]+\) is not usable here: $node: No such device or address: the node of that name is another device" "$WORK/img/restore.log"
check "dev-nodes: ... and that the process needs its 2 GPUs" \
	grep -qE "amdgpu_plugin: (Error: )?.*2 GPUs" "$WORK/img/restore.log"
check "dev-nodes: nothing restored runs" eval '! alive "$pid"'
check "dev-nodes: no KFD process left" eval 'wait_until 10 kfd_no_processes'
rm -f "$node"
check "dev-nodes: the real node put back" mv "$WORK/real-node" "$node"
gpu_restore_ok dev-nodes "$WORK/img"
gpu_restored dev-nodes "$pid" "$R.ready"
gpu_finish dev-nodes "$pid"
tap_done
