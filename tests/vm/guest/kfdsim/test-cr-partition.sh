#!/bin/sh
# Partition move across PCI domains. kfdsim is reloaded as the MI308X
# machine (8 physical GPUs in CPX mode, 4 partitions each = 32 GPU nodes,
# one hive, render minors 128-131, 136-139, ... (8 per device), PCI
# domains 0 and 1). A device cgroup "partjob" exposes the 4 partitions of
# the first physical GPU (domain A); the workload (--mmio --render-fds) runs
# in it and uses all 4. After the dump, partjob exposes only the partitions
# of the first physical GPU of the other domain (B) and CRIU restores inside
# it. Then it is dumped again and restored onto the partitions of physical
# GPU C (domain A again) by a CRIU outside the container: the master sees
# all 32 partitions, the restored task only C's and matches onto them.
# Expected map, derived here from the topology alone: partitions of one
# physical GPU are interchangeable (same properties, same weight 13 between
# each pair, 41 to other GPUs), so the matcher must keep the four together
# on one physical GPU and, with nothing else to choose by, keep each
# partition's index (location_id & 7: partition i -> partition i).
# Checks: `amdgpu-criu check` in the container gives that map; restore.log
# logs it (the task's own map in step 2); the KFD process keeps the user
# gpu_ids of A; the restored process's render fds are the minors of the new
# partitions; the self-check (every byte, doorbells, MMIO pages, apertures
# = the new ids, each render fd the node of the GPU behind its user id,
# fresh BOs) PASSes with that map (a probe after step 1, the full check
# after step 2); negative control: a probe told a map with two partitions
# swapped FAILs.
# The module is reloaded with the boot's KFDSIM_PARAMS at the end.
# vm-boot: cr
# vm-timeout: 240
. /test/lib/guest.sh

DESC=/test/kfdsim/machines/mi308x.desc
CG=partjob
gpu_machines_missing partition "$DESC" && { tap_done; exit; }

finish() { gpu_machine_finish "$CG"; }

kfdsim_debugfs || diag "no kfdsim debugfs"
check "kfdsim reloaded as MI308X (32 CPX partitions)" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'
kfd_gpu_table >"$WORK/gpus"
# NODE GPU_ID MINOR HIVE_ID DOMAIN LOCATION_ID UNIQUE_ID
uid_a=$(awk 'NR == 1 { print $7 }' "$WORK/gpus")
dom_a=$(awk 'NR == 1 { print $5 }' "$WORK/gpus")
uid_b=$(awk -v d="$dom_a" '$5 != d { print $7; exit }' "$WORK/gpus")
awk -v u="$uid_a" '$7 == u' "$WORK/gpus" >"$WORK/a"
awk -v u="$uid_b" '$7 == u' "$WORK/gpus" >"$WORK/b"
uid_c=$(awk -v d="$dom_a" -v a="$uid_a" '$5 == d && $7 != a { print $7; exit }' "$WORK/gpus")
awk -v u="$uid_c" '$7 == u' "$WORK/gpus" >"$WORK/c"
c_min=$(col 3 <"$WORK/c")
sed 's/^/# A: node gpu_id minor hive domain location unique: /' "$WORK/a"
sed 's/^/# B: node gpu_id minor hive domain location unique: /' "$WORK/b"
a_ids=$(col 2 <"$WORK/a")
a_min=$(col 3 <"$WORK/a")
b_ids=$(col 2 <"$WORK/b")
b_min=$(col 3 <"$WORK/b")
if [ -z "$uid_b" ] || [ -z "$uid_c" ] || [ "$(wc -l <"$WORK/a")" != 4 ] || [ "$(wc -l <"$WORK/b")" != 4 ] ||
	[ "$(wc -l <"$WORK/c")" != 4 ] ||
	[ "$(col 5 <"$WORK/b" | tr ' ' '\n' | sort -u)" = "$dom_a" ] || [ "$uid_a" = 0 ]; then
	fail "partition: a physical GPU of 4 partitions in each PCI domain (A $uid_a: $a_ids; B $uid_b: $b_ids)"
	finish
fi
ok "partition: A = GPU $uid_a (domain $dom_a, nodes $(col 1 <"$WORK/a")), B = GPU $uid_b (domain $(awk 'NR == 1 { print $5 }' "$WORK/b"), nodes $(col 1 <"$WORK/b"))"
# expected: "map USER ACTUAL", partition index kept
awk 'NR == FNR { b[$6 % 8] = $2; next } { print "map", $2, (($6 % 8) in b) ? b[$6 % 8] : "none" }' \
	"$WORK/b" "$WORK/a" >"$WORK/expect"
sed 's/^/# expected: /' "$WORK/expect"
check "partition: each partition index of A is in B once" eval \
	'! grep -q none "$WORK/expect" && [ "$(awk "{ print \$3 }" "$WORK/expect" | sort -u | wc -l)" -eq 4 ]'

if ! gpu_cg_make "$CG"; then
	ok "partition # SKIP no cgroup v1 devices controller"
	finish
fi
gpu_cg_expose "$CG" "$WORK/gpus" $a_min
if ! GPU_WRAP="sh $WORK/cg-$CG.sh" gpu_start part --mmio --render-fds; then
	fail "partition: workload ready"
	finish
fi
pid=$WL_PID
check "partition: the workload sees A's partitions only ($a_ids)" eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$a_ids" ]'
check "partition: it uses all four" grep -q '^gpus 4 ' "$R.ready"
check "partition: its KFD process has a pdd per partition of A" eval '[ "$(kfd_user_ids "$pid")" = "$a_ids" ]'
check "partition: its render fds are A's minors ($a_min)" eval '[ "$(kfd_fd_minors "$pid")" = "$a_min" ]'
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "partition: dump (status $rc)" test "$rc" -eq 0
check "partition: the dumped process is gone" gpu_gone "$pid"
check "partition: no KFD process left after the dump" wait_until 10 kfd_no_processes

gpu_cg_expose "$CG" "$WORK/gpus" $b_min
TEST=$TEST sh "$WORK/cg-$CG.sh" sh -c '. /test/lib/guest.sh; kfd_gpu_table' >"$WORK/gpus-in"
check "partition: $CG now shows B's partitions only" eval '[ "$(col 2 <"$WORK/gpus-in")" = "$b_ids" ]'
sh "$WORK/cg-$CG.sh" amdgpu-criu check "$img" >"$WORK/check.out" 2>&1
rc=$?
sed 's/^/# check: /' "$WORK/check.out"
check "partition: amdgpu-criu check in $CG says compatible (status $rc)" test "$rc" -eq 0
# SRC_NODE SRC_GPU_ID SRC_RENDER DST_NODE DST_GPU_ID DST_RENDER rows, as "map SRC DST"
awk 'NF == 6 && $1 ~ /^[0-9]+$/ { print "map", $2, $5 }' "$WORK/check.out" | sort >"$WORK/check.map"
check "partition: ... with the expected map" eval '[ "$(sort "$WORK/expect")" = "$(cat "$WORK/check.map")" ]'

CRIU_WRAP="sh $WORK/cg-$CG.sh" criu_restore "$img"
rc=$?
check "partition: restore inside $CG (status $rc)" test "$rc" -eq 0
gpu_restored partition "$pid" "$R.ready"
# "GPU 24248 (node 2, renderD128) -> GPU 23332 (node 18, renderD160)"
sed -n 's/.*amdgpu_plugin: GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*/map \1 \2/p' \
	"$img/restore.log" | sort >"$WORK/log.map"
check "partition: restore.log maps each partition of A onto the expected one of B" \
	eval '[ "$(sort "$WORK/expect")" = "$(cat "$WORK/log.map")" ]'
check "partition: the KFD process keeps A's user gpu_ids ($a_ids)" eval '[ "$(kfd_user_ids "$pid" | tr " " "\n" | sort)" = "$(echo $a_ids | tr " " "\n" | sort)" ]'
check "partition: its render fds are now B's minors ($b_min)" eval '[ "$(kfd_fd_minors "$pid")" = "$b_min" ]'
# negative control: the map with the first two partitions swapped
awk 'NR == 1 { u1 = $2; a1 = $3; next } NR == 2 { print "map", $2, a1; print "map", u1, $3; next } { print }' \
	"$WORK/expect" >"$WORK/swapped"
rm -f "$R.trigger.probe"
check "partition: negative control: a probe told two partitions swapped FAILs" eval '! gpu_probe 1 "$(cat "$WORK/swapped")"'
check "partition: a probe with the expected map PASSes" gpu_probe 2 "$(cat "$WORK/expect")"
rm -f "$R.trigger.probe"

# 2. back to domain A, onto the partitions of physical GPU C, by a CRIU
# outside the container (as a container runtime runs it): the master sees
# all 32 partitions, the restored task only C's and matches onto them
img=$WORK/img2
criu_dump "$img" "$pid"
rc=$?
check "partition 2: dump of the moved process (status $rc)" test "$rc" -eq 0
check "partition 2: the dumped process is gone" gpu_gone "$pid"
check "partition 2: no KFD process left after the dump" wait_until 10 kfd_no_processes
gpu_cg_expose "$CG" "$WORK/gpus" $c_min
awk 'NR == FNR { c[$6 % 8] = $2; next } { print "map", $2, (($6 % 8) in c) ? c[$6 % 8] : "none" }' \
	"$WORK/c" "$WORK/a" >"$WORK/expect2"
sed 's/^/# expected: /' "$WORK/expect2"
criu_restore "$img"
rc=$?
check "partition 2: restore by a CRIU outside $CG (status $rc)" test "$rc" -eq 0
gpu_restored "partition 2" "$pid" "$R.ready"
check "partition 2: the restored task matched onto the partitions it sees" \
	grep -q "amdgpu_plugin: pid $pid sees other GPUs than the CRIU master" "$img/restore.log"
# the task's "pid N: GPU B_i ... -> GPU C_i ...", as "map USER C_i" via step 1's map
sed -n "s/.*amdgpu_plugin: pid $pid: GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*/\1 \2/p" \
	"$img/restore.log" | awk 'NR == FNR { u[$3] = $2; next } { print "map", u[$1], $2 }' "$WORK/expect" - |
	sort >"$WORK/log.map"
check "partition 2: restore.log maps each partition onto the expected one of C" \
	eval '[ "$(sort "$WORK/expect2")" = "$(cat "$WORK/log.map")" ]'
check "partition 2: the KFD process keeps A's user gpu_ids" eval '[ "$(kfd_user_ids "$pid" | tr " " "\n" | sort)" = "$(echo $a_ids | tr " " "\n" | sort)" ]'
check "partition 2: its render fds are now C's minors ($c_min)" eval '[ "$(kfd_fd_minors "$pid")" = "$c_min" ]'
GPU_TRIGGER_TEXT=$(cat "$WORK/expect2") gpu_finish partition "$pid"
finish
