#!/bin/sh
# A container's GPU subset restored onto another subset. kfdsim is reloaded
# as the MI210 machine (8 GPUs, two xGMI hives of 4, one per socket; every
# pair in a hive linked by xGMI, weight 15; no link across hives). A device
# cgroup "subjob" exposes 3 GPUs of hive A (A0 A1 A2, not the whole hive);
# the workload (--mmio --render-fds) runs in it and uses all 3; its fd 3 is
# a render node of A0 opened before /dev/kfd (CRIU restores it first). One
# dump, then subjob is changed and CRIU restores inside it:
#   1. 2 GPUs of hive B (B1 B2): refused, too few GPUs, by the CRIU master;
#      1b. the same with CRIU outside subjob: refused by the restored task;
#   2. B1 B2 A3 (3 GPUs, but no 3 linked by xGMI nor on one CPU node):
#      refused, the three shared a CPU node (NUMA check); 2b. with
#      KFD_NUMA_CHECK=0, refused as the xGMI triangle has nowhere to go;
#   3. A1 A2 A3: restored; A1 and A2 stay where they were (the matcher
#      prefers the same GPU), A0 moves to A3;
#   then a second dump (of the moved process) and
#   4. B1 B2 B3, CRIU outside subjob (as a container runtime runs it; the
#      master sees all 8 GPUs, the task matches onto its own 3): restored,
#      the three onto hive B in node order (all bijections keep the
#      weights; the matcher takes the lowest nodes in order).
# Each refusal: `amdgpu-criu check` in subjob says no, CRIU fails with one
# line of the plugin naming the reason, nothing is left running or open,
# every image file unchanged (sha256, after 1 and 1b: 2 and 2b take the
# master's path of 1, and hashing the CWSR-sized images takes seconds).
# Each restore: `amdgpu-criu check` in subjob and restore.log give the
# expected map, the KFD process keeps the user gpu_ids of A0 A1 A2, its
# render fds (fd 3 too) are the new GPUs' minors, and the self-check (probe
# after 3, final after 4) PASSes with that map; negative control: a probe
# told the map of step 3 after step 4 FAILs.
# The module is reloaded with the boot's KFDSIM_PARAMS at the end.
# vm-boot: cr
# vm-timeout: 600
. /test/lib/guest.sh

DESC=/test/kfdsim/machines/mi210.desc
CG=subjob
gpu_machines_missing subset "$DESC" && { tap_done; exit; }

finish() { gpu_machine_finish "$CG"; }
# NODE GPU_ID MINOR HIVE_ID ... of the K-th GPU (0-based) of hive H ("a" or "b")
gpu_of() { awk -v h="$1" -v k="$2" '$4 == h { if (n++ == k) print }' "$WORK/gpus"; }
id_of() { gpu_of "$1" "$2" | awk '{ print $2 }'; }
minor_of() { gpu_of "$1" "$2" | awk '{ print $3 }'; }

# expose "H K ..." pairs: subjob may open these GPUs only
expose() {
	local m=
	while [ $# -ge 2 ]; do
		m="$m $(minor_of "$1" "$2")"
		shift 2
	done
	# shellcheck disable=SC2086
	gpu_cg_expose "$CG" "$WORK/gpus" $m
}

# restored NAME IMG EXPECT MINORS FD3: checks of a restore that must
# succeed onto the "map USER ACTUAL" lines of file EXPECT, render minors
# MINORS, fd 3 the render node of minor FD3 (OUTSIDE: CRIU runs outside the
# cgroup, only the restored task is in it)
restored() {
	local name=$1 img=$2 expect=$3 minors=$4 fd3=$5 rc
	sh "$WORK/cg-$CG.sh" amdgpu-criu check "$img" >"$WORK/check.out" 2>&1
	rc=$?
	sed 's/^/# check: /' "$WORK/check.out"
	check "$name: amdgpu-criu check in $CG says compatible (status $rc)" test "$rc" -eq 0
	# rows SRC_NODE SRC_GPU_ID SRC_RENDER DST_NODE DST_GPU_ID DST_RENDER: the
	# sources are the GPUs at dump time (actual ids), EXPECT has user ids:
	# compare the destinations in user-id order via the dump's actual ids
	awk 'NF == 6 && $1 ~ /^[0-9]+$/ { print $2, $5 }' "$WORK/check.out" >"$WORK/check.pairs"
	if [ "${OUTSIDE:-}" ]; then
		criu_restore "$img"
	else
		CRIU_WRAP="sh $WORK/cg-$CG.sh" criu_restore "$img"
	fi
	rc=$?
	check "$name: restore ${OUTSIDE:+by a CRIU outside $CG, the task }inside $CG (status $rc)" test "$rc" -eq 0
	gpu_restored "$name" "$pid" "$R.ready"
	# "GPU 63635 (node 2, renderD128) -> GPU 53435 (node 4, renderD130)":
	# the master's map; the task's own ("pid N: GPU ...") when it sees others
	if [ "${OUTSIDE:-}" ]; then
		check "$name: the restored task matched onto the GPUs it sees itself" \
			grep -q "amdgpu_plugin: pid $pid sees other GPUs than the CRIU master" "$img/restore.log"
		sed -n "s/.*amdgpu_plugin: pid $pid: GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*/\1 \2/p" \
			"$img/restore.log" >"$WORK/log.pairs"
	else
		sed -n 's/.*amdgpu_plugin: GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*/\1 \2/p' \
			"$img/restore.log" >"$WORK/log.pairs"
	fi
	check "$name: amdgpu-criu check and restore.log agree" eval '[ -s "$WORK/log.pairs" ] && [ "$(sort "$WORK/log.pairs")" = "$(sort "$WORK/check.pairs")" ]'
	# the dump-time actual id behind each user id: $WORK/actual ("USER ACTUAL")
	check "$name: restore.log maps each GPU as expected" eval \
		'[ "$(awk '\''NR == FNR { a[$2] = $1; next } { print "map", a[$1], $2 }'\'' "$WORK/actual" "$WORK/log.pairs" | sort)" = "$(sort "$expect")" ]'
	check "$name: the KFD process keeps the user gpu_ids of A0 A1 A2 ($user_ids)" eval \
		'[ "$(kfd_user_ids "$pid" | tr " " "\n" | sort)" = "$(echo $user_ids | tr " " "\n" | sort)" ]'
	check "$name: its render fds are the minors $minors" eval '[ "$(kfd_fd_minors "$pid")" = "$minors" ]'
	check "$name: its fd 3 (renderD of A0 before the dump) is renderD$fd3 now" eval \
		'[ "$(readlink /proc/$pid/fd/3)" = /dev/dri/renderD$fd3 ]'
	awk '{ print $2, $3 }' "$expect" >"$WORK/actual"
}

kfdsim_debugfs || diag "no kfdsim debugfs"
check "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'
kfd_gpu_table >"$WORK/gpus"
ha=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
hb=$(awk -v a="$ha" '$4 != a { print $4; exit }' "$WORK/gpus")
sed -i -e "s/ $ha / a /" -e "s/ $hb / b /" "$WORK/gpus"
sed 's/^/# node gpu_id minor hive ...: /' "$WORK/gpus"
if [ "$ha" = 0 ] || [ -z "$hb" ] || [ "$(grep -c ' a ' "$WORK/gpus")" != 4 ] || [ "$(grep -c ' b ' "$WORK/gpus")" != 4 ]; then
	fail "subset: two hives of 4 GPUs (A $ha, B $hb)"
	finish
fi
if ! gpu_cg_make "$CG"; then
	ok "subset # SKIP no cgroup v1 devices controller"
	finish
fi

expose a 0 a 1 a 2
user_ids="$(id_of a 0) $(id_of a 1) $(id_of a 2)"
# fd 3: a render node of A0 the process opened before /dev/kfd (as a
# program that probed the GPUs through libdrm first): CRIU restores it
# before the /dev/kfd file
printf '#!/bin/sh\nexec 3<>/dev/dri/renderD%s\nexec "$@"\n' "$(minor_of a 0)" >"$WORK/fd3.sh"
if ! GPU_WRAP="sh $WORK/cg-$CG.sh sh $WORK/fd3.sh" gpu_start subset --mmio --render-fds; then
	fail "subset: workload ready"
	finish
fi
pid=$WL_PID
check "subset: the workload sees A0 A1 A2 only ($user_ids)" eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$user_ids" ]'
check "subset: it uses all three" grep -q '^gpus 3 ' "$R.ready"
check "subset: its fd 3 is A0's render node, /dev/kfd comes after" eval \
	'[ "$(readlink /proc/$pid/fd/3)" = /dev/dri/renderD$(minor_of a 0) ] && grep -q "^fd [4-9] /dev/kfd$" "$R.ready"'
check "subset: its KFD process has a pdd per GPU it sees" eval '[ "$(kfd_user_ids "$pid")" = "$user_ids" ]'
for u in $user_ids; do echo "$u $u"; done >"$WORK/actual"
img=$WORK/img1
criu_dump "$img" "$pid"
rc=$?
check "subset: dump (status $rc)" test "$rc" -eq 0
check "subset: the dumped process is gone" gpu_gone "$pid"
check "subset: no KFD process left after the dump" wait_until 10 kfd_no_processes
gpu_img_sums "$img" >"$img.sums"

expose b 1 b 2
CRIU_WRAP="sh $WORK/cg-$CG.sh" gpu_restore_refused "1. onto B1 B2" "$img" \
	"cannot be restored on this node: checkpoint has 3 GPUs, only 2 destination GPUs are usable"
GPU_CHECK_WRAP="sh $WORK/cg-$CG.sh" gpu_restore_refused "1. onto B1 B2, CRIU outside $CG" "$img" \
	"pid [0-9]+ was checkpointed with 3 GPUs but its restored task can use 2"
# "node 2 (gpu_id 63635), node 3 (gpu_id 8330), node 4 (gpu_id 53435)"
src_names=$(for k in 0 1 2; do gpu_of a $k | awk '{ printf "node %s \\(gpu_id %s\\)", $1, $2 }'; [ $k = 2 ] || printf ', '; done)
expose b 1 b 2 a 3
GPU_REFUSED_SUMS=no CRIU_WRAP="sh $WORK/cg-$CG.sh" gpu_restore_refused "2. onto B1 B2 A3" "$img" \
	"cannot be restored on this node: source GPUs $src_names share CPU node 0; no destination CPU node"
GPU_REFUSED_SUMS=no KFD_NUMA_CHECK=0 CRIU_WRAP="sh $WORK/cg-$CG.sh" gpu_restore_refused "2. onto B1 B2 A3, KFD_NUMA_CHECK=0" "$img" \
	"cannot be restored on this node: source GPUs $src_names are connected by xGMI; no destination xGMI hive"

expose a 1 a 2 a 3
printf 'map %s %s\n' "$(id_of a 0)" "$(id_of a 3)" "$(id_of a 1)" "$(id_of a 1)" \
	"$(id_of a 2)" "$(id_of a 2)" >"$WORK/expect3"
restored "3. onto A1 A2 A3" "$img" "$WORK/expect3" "$(minor_of a 1) $(minor_of a 2) $(minor_of a 3) $(minor_of a 3)" "$(minor_of a 3)"
rm -f "$R.trigger.probe"
check "3. onto A1 A2 A3: probe with that map PASS" gpu_probe 1 "$(cat "$WORK/expect3")"
rm -f "$R.trigger.probe"

img=$WORK/img2
criu_dump "$img" "$pid"
rc=$?
check "subset: second dump (status $rc)" test "$rc" -eq 0
check "subset: the dumped process is gone" gpu_gone "$pid"
check "subset: no KFD process left after the dump" wait_until 10 kfd_no_processes
expose b 1 b 2 b 3
# dump-time GPUs A3 A1 A2 (user A0 A1 A2) in node order A1 A2 A3 -> B1 B2 B3
printf 'map %s %s\n' "$(id_of a 1)" "$(id_of b 1)" "$(id_of a 2)" "$(id_of b 2)" \
	"$(id_of a 0)" "$(id_of b 3)" >"$WORK/expect4"
OUTSIDE=1 restored "4. onto B1 B2 B3" "$img" "$WORK/expect4" "$(minor_of b 1) $(minor_of b 2) $(minor_of b 3) $(minor_of b 3)" "$(minor_of b 3)"
rm -f "$R.trigger.probe"
check "4. onto B1 B2 B3: negative control: a probe told step 3's map FAILs" eval '! gpu_probe 2 "$(cat "$WORK/expect3")"'
rm -f "$R.trigger.probe"
GPU_TRIGGER_TEXT=$(cat "$WORK/expect4") gpu_finish subset "$pid"
finish
