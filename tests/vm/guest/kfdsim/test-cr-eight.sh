#!/bin/sh
# Eight GPUs: kfdsim is reloaded as the MI210 machine (8 GPUs, two xGMI
# hives of 4) and one process uses all eight (--gpus 8 --bos 8 --mmio
# --render-fds: on every GPU VRAM, GTT, USERPTR, doorbell and MMIO BOs, a
# queue, events; VRAM BOs mapped on all GPUs, GTT on their GPU and the
# next, the --bos ones on none/own/own+next/all). Dumped and restored on
# the same node: the plugin must keep every GPU where it was (identity map,
# logged in restore.log), write one BO-contents image per GPU, give the
# process back its render fds of the same eight minors, and the self-check
# (every byte of every BO on all eight GPUs, doorbells, MMIO pages, fds,
# apertures, render fds, events, queues, mapping sets) must PASS.
# Negative control: one byte of a USERPTR BO of the eighth GPU flipped in
# the restored process makes a probe FAIL; flipped back, it PASSes.
# The module is reloaded with the boot's KFDSIM_PARAMS at the end.
# vm-boot: cr
# vm-timeout: 240
EXPECT=ok
. /test/lib/guest.sh

DESC=/test/kfdsim/machines/mi210.desc
gpu_machines_missing eight "$DESC" && { tap_done; exit; }

finish() { gpu_machine_finish; }

kfdsim_debugfs || diag "no kfdsim debugfs"
check "kfdsim reloaded as MI210 (8 GPUs)" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'
kfd_gpu_table >"$WORK/gpus"
ids=$(awk '{ print $2 }' "$WORK/gpus" | tr '\n' ' ' | sed 's/ $//')
minors=$(awk '{ print $3 }' "$WORK/gpus" | tr '\n' ' ' | sed 's/ $//')
diag "GPUs: $ids (minors $minors)"
check "eight: the machine has 8 GPUs" test "$(wc -l <"$WORK/gpus")" -eq 8

if ! gpu_start eight --mmio --gpus 8 --bos 8 --render-fds; then
	fail "eight: workload ready"
	finish
fi
pid=$WL_PID
check "eight: the workload uses 8 GPUs" grep -q '^gpus 8 ' "$R.ready"
check "eight: its KFD process has a pdd per GPU ($ids)" eval '[ "$(kfd_user_ids "$pid" | tr " " "\n" | sort -n | tr "\n" " ")" = "$(echo $ids | tr " " "\n" | sort -n | tr "\n" " ")" ]'
# bo TYPE GPU CPUADDR SIZE: CPU-mapped BOs of every type on every GPU
for t in VRAM GTT USERPTR; do
	check "eight: $t BOs on all 8 GPUs" eval '[ "$(awk -v t=$t '\''$1 == "bo" && $2 == t { print $3 }'\'' "$R.ready" | sort -u | wc -l)" -eq 8 ]'
done
check "eight: it has render fds of all 8 minors ($minors)" eval '[ "$(kfd_fd_minors "$pid")" = "$minors" ]'
check "eight: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"

img=$WORK/img
if gpu_dump_restore eight "$img" "$pid"; then
	n_img=0
	for id in $ids; do
		ls "$img"/amdgpu-bo-*-"$id".img >/dev/null 2>&1 && n_img=$((n_img + 1))
	done
	check "eight: one BO-contents image per GPU ($n_img of 8)" test "$n_img" -eq 8
	diag "images: $(du -sk "$img" | cut -f1) KiB; MemAvailable now $(sed -n 's/^MemAvailable: *//p' /proc/meminfo)"
	# "GPU 63635 (node 2, renderD128) -> GPU 63635 (node 2, renderD128)"
	sed -n 's/.*amdgpu_plugin: \(GPU [0-9]* (node .*) -> GPU .*\)/\1/p' "$img/restore.log" >"$WORK/map"
	sed 's/^/# restore: /' "$WORK/map"
	check "eight: the plugin kept every GPU where it was (8 identity pairs)" eval \
		'[ "$(awk '\''$2 == $8 && $4 == $10 { n++ } END { print n + 0 }'\'' "$WORK/map")" -eq 8 ] && [ "$(wc -l <"$WORK/map")" -eq 8 ]'
	check "eight: the restored process has render fds of the same 8 minors" eval '[ "$(kfd_fd_minors "$pid")" = "$minors" ]'
	last=$(awk 'END { print $2 }' "$WORK/gpus")
	addr=$(awk -v g="$last" '$1 == "bo" && $2 == "USERPTR" && $3 == g { print $4; exit }' "$R.ready")
	check "eight: probe of the restored process PASS" gpu_probe 1
	if [ -n "$addr" ] && "$GPU_WL" --poke "$pid" "$addr" >"$WORK/poke.out" 2>&1; then
		check "eight: negative control: a byte of a USERPTR BO of GPU $last flipped: probe FAILs" eval '! gpu_probe 2'
		check "eight: ... naming that BO's first byte" eval 'echo "$PROBE" | grep -q "USERPTR BO [0-9]* of gpu $last at $addr: byte 0 "'
		check "eight: byte flipped back" "$GPU_WL" --poke "$pid" "$addr"
		check "eight: probe PASS again" gpu_probe 3
	else
		fail "eight: negative control: flip a byte of GPU $last's USERPTR BO at ${addr:-?}: $(cat "$WORK/poke.out" 2>/dev/null)"
	fi
fi
rm -f "$R.trigger.probe"
gpu_finish eight "$pid"
finish
