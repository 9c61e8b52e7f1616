#!/bin/sh
# Refusal onto an incompatible node, the images still restorable on a good
# one. kfdsim is reloaded as the MI210 machine; a device cgroup "refjob"
# exposes two GPUs of one hive (A0 A1, linked by xGMI); the workload
# (--mmio --render-fds) runs in it and uses both; it is dumped. kfdsim is
# then reloaded as the workstation (Radeon VII, Navi33, Navi23: other GPU
# models) and each restore must be refused: by a CRIU that sees all three
# GPUs, and by one inside refjob (which now shows two of them). Each time:
# `amdgpu-criu check` says not compatible, CRIU fails with one line of the
# plugin naming the checkpointed GPU (node, gpu_id), a local GPU and the
# property that differs, nothing is left running or open, every image file
# is byte for byte what it was. kfdsim is then reloaded as the MI210 again
# (which also proves nothing holds the module): `amdgpu-criu check` says
# compatible with both GPUs where they were, the restore succeeds and the
# self-check PASSes.
# The module is reloaded with the boot's KFDSIM_PARAMS at the end.
# vm-boot: cr
# vm-timeout: 240
. /test/lib/guest.sh

MI210=/test/kfdsim/machines/mi210.desc
WS=/test/kfdsim/machines/workstation.desc
CG=refjob
gpu_machines_missing refuse "$MI210" "$WS" && { tap_done; exit; }

finish() { gpu_machine_finish "$CG"; }

kfdsim_debugfs || diag "no kfdsim debugfs"
check "kfdsim reloaded as MI210" eval 'kfdsim_unload && kfdsim_load machine="$MI210"'
kfd_gpu_table >"$WORK/gpus"
head -2 "$WORK/gpus" >"$WORK/used"
ids=$(col 2 <"$WORK/used")
minors=$(col 3 <"$WORK/used")
check "refuse: A0 and A1 are in one hive" eval '[ "$(col 4 <"$WORK/used" | tr " " "\n" | sort -u | wc -l)" -eq 1 ]'
if ! gpu_cg_make "$CG"; then
	ok "refuse # SKIP no cgroup v1 devices controller"
	finish
fi
# shellcheck disable=SC2086
gpu_cg_expose "$CG" "$WORK/gpus" $minors
if ! GPU_WRAP="sh $WORK/cg-$CG.sh" gpu_start refuse --mmio --render-fds; then
	fail "refuse: workload ready"
	finish
fi
pid=$WL_PID
check "refuse: the workload uses A0 A1 ($ids)" eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$ids" ] && grep -q "^gpus 2 " "$R.ready"'
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "refuse: dump (status $rc)" test "$rc" -eq 0
check "refuse: the dumped process is gone" gpu_gone "$pid"
check "refuse: no KFD process left after the dump" wait_until 10 kfd_no_processes
gpu_img_sums "$img" >"$img.sums"

check "kfdsim reloaded as the workstation" eval 'kfdsim_unload && kfdsim_load machine="$WS"'
kfd_gpu_table >"$WORK/ws"
sed 's/^/# workstation: node gpu_id minor ...: /' "$WORK/ws"
check "refuse: the workstation has 3 GPUs" test "$(wc -l <"$WORK/ws")" -eq 3
# "source GPU node 2 (gpu_id 63635): no compatible destination; best
# candidate node 1 (gpu_id 28598): device_id: source 29711, destination 26287 ..."
a0=$(head -1 "$WORK/used" | awk '{ printf "node %s \\(gpu_id %s\\)", $1, $2 }')
ws=$(awk '{ printf "%s%s", (NR > 1 ? "|" : ""), $2 }' "$WORK/ws") # a workstation GPU's gpu_id
why="cannot be restored on this node: source GPU $a0: no compatible destination; best candidate node [0-9]+ \(gpu_id ($ws)\): [a-z_]+: source [0-9]+, destination [0-9]+"
gpu_restore_refused "on the workstation" "$img" "$why"
CRIU_WRAP="sh $WORK/cg-$CG.sh" gpu_restore_refused "on the workstation, inside $CG" "$img" "$why"

check "kfdsim reloaded as MI210 again (nothing holds the module)" eval 'kfdsim_unload && kfdsim_load machine="$MI210"'
check "refuse: every image file still what the dump wrote (sha256)" eval 'gpu_img_sums "$img" | cmp -s - "$img.sums"'
amdgpu-criu check "$img" >"$WORK/check.out" 2>&1
rc=$?
sed 's/^/# check: /' "$WORK/check.out"
check "refuse: amdgpu-criu check on the MI210 says compatible (status $rc)" test "$rc" -eq 0
check "refuse: ... with A0 and A1 where they were" eval \
	'[ "$(awk '\''NF == 6 && $1 ~ /^[0-9]+$/ && $1 == $4 && $2 == $5 { print $2 }'\'' "$WORK/check.out" | tr "\n" " " | sed "s/ $//")" = "$ids" ]'
criu_restore "$img"
rc=$?
check "refuse: restore on the MI210 (status $rc)" test "$rc" -eq 0
gpu_restored refuse "$pid" "$R.ready"
check "refuse: the restored process is in $CG" grep -q ":devices:/$CG$" "/proc/$pid/cgroup"
check "refuse: the KFD process has the user gpu_ids it had ($ids)" eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
check "refuse: its render fds are A0's and A1's ($minors)" eval '[ "$(kfd_fd_minors "$pid")" = "$minors" ]'
gpu_finish refuse "$pid"
finish
