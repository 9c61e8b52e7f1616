#!/bin/sh
# A small-BAR machine: the built-in two MI210s with their VRAM heap
# FB_PRIVATE (not all VRAM CPU-visible: KFD refuses PUBLIC VRAM, and the
# workload's VRAM BOs are not PUBLIC). Only SDMA may copy them:
# - cpu: AMDGPU_CRIU_COPY_ENGINE=cpu refuses the dump in one line naming the
#   GPU and why, the application runs on, unpaused;
# - auto: SDMA dumps and restores it, the self-check PASSes;
# - a restore with the CPU is refused too: nothing left, images untouched,
#   and SDMA then restores the same images.
# vm-boot: main
# vm-timeout: 240
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
DESC=$WORK/small-bar.desc
GPU_LINE='simd_count=416 simd_id_base=2147487744 max_waves_per_simd=8 lds_size_in_kb=64 num_gws=64 wave_front_size=64 array_count=8 simd_arrays_per_engine=1 cu_per_simd_array=14 simd_per_cu=4 max_slots_scratch_cu=32 gfx_target_version=90010 vendor_id=4098 device_id=29711 domain=0 num_sdma_engines=2 num_sdma_xgmi_engines=3 num_sdma_queues_per_engine=8 num_cp_queues=24 max_engine_clk_fcompute=1700 fw_version=92 capability=746037888 debug_prop=470 sdma_fw_version=9 num_xcc=1 max_engine_clk_ccompute=2450'
{
	echo "kfdsim-machine 1"
	echo "system platform_oem=0 platform_id=0 platform_rev=0"
	echo "node 0 gpu_id=0 cpu_cores_count=2 cpu_core_id_base=0 max_engine_clk_ccompute=2450"
	echo "mem 0 0 heap_type=0 size_in_bytes=1073741824 flags=0 width=64 mem_clk_max=3200"
	echo "iolink 0 0 type=2 node_from=0 node_to=1 weight=20 min_bandwidth=312 max_bandwidth=32000 flags=1"
	echo "iolink 0 1 type=2 node_from=0 node_to=2 weight=20 min_bandwidth=312 max_bandwidth=32000 flags=1"
	for n in 1 2; do
		echo "node $n gpu_id=$((n * 1111)) $GPU_LINE location_id=$((n * 256)) drm_render_minor=$((127 + n)) unique_id=$((1000 + n))"
		echo "name $n aldebaran"
		echo "mem $n 0 heap_type=2 size_in_bytes=68702699520 flags=0 width=4096 mem_clk_max=1600"
		echo "iolink $n 0 type=2 node_from=$n node_to=0 weight=20 min_bandwidth=312 max_bandwidth=32000 flags=1"
	done
	echo "end"
} >"$DESC"
if ! check "kfdsim reloaded as a small-BAR machine" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'; then
	kfdsim_reload
	tap_done
	exit
fi
check "small BAR: the KFD topology says FB_PRIVATE" grep -q '^heap_type 2$' /sys/class/kfd/kfd/topology/nodes/1/mem_banks/0/properties

if gpu_start sb --gpus 2 --big-bo 16M --render-fds; then
	pid=$WL_PID
	export AMDGPU_CRIU_COPY_ENGINE=cpu
	criu_dump "$WORK/img-cpu" "$pid"
	rc=$?
	unset AMDGPU_CRIU_COPY_ENGINE
	check "cpu: dump refused (status $rc)" test "$rc" -ne 0
	check "cpu: the plugin says why, naming the GPU" \
		grep -qE 'amdgpu_plugin: Error: GPU [0-9]+: [0-9]+ VRAM BOs that the CPU may not see \(a small-BAR GPU.*AMDGPU_CRIU_COPY_ENGINE=cpu' "$WORK/img-cpu/dump.log"
	grep 'amdgpu_plugin: Error' "$WORK/img-cpu/dump.log" | head -2 | sed 's/^/# /'
	check "cpu: the application runs on, unpaused" wait_until 10 kfd_running "$pid"
	img=$WORK/img
	criu_dump "$img" "$pid"
	rc=$?
	check "auto: dump (status $rc)" test "$rc" -eq 0
	check "auto: SDMA moved both GPUs' BOs" eval '[ "$(grep -c "SDMA moved" "$img/dump.log")" -eq 2 ]'
	check "auto: the dumped process is gone" gpu_gone "$pid"
	sums=$(gpu_img_sums "$img")
	export AMDGPU_CRIU_COPY_ENGINE=cpu
	criu_restore "$img"
	rc=$?
	unset AMDGPU_CRIU_COPY_ENGINE
	check "cpu restore: refused (status $rc)" test "$rc" -ne 0
	check "cpu restore: the plugin says why" grep -qE 'amdgpu_plugin: Error: GPU [0-9]+: [0-9]+ VRAM BOs that the CPU may not see' "$img/restore.log"
	check "cpu restore: nothing left" gpu_no_strays
	check "cpu restore: the pid is free again" wait_until 10 eval '[ ! -d /proc/$pid ]'
	check "cpu restore: every image file as dumped" eval '[ "$(gpu_img_sums "$img")" = "$sums" ]'
	rm -f "$img/restore.log"
	criu_restore "$img"
	rc=$?
	check "auto: restore of the same images (status $rc)" test "$rc" -eq 0
	gpu_restored auto "$pid" "$R.ready"
	check "auto: SDMA wrote both GPUs' BOs" eval '[ "$(grep -c "SDMA moved" "$img/restore.log")" -eq 2 ]'
	gpu_finish auto "$pid"
else
	fail "sb: workload ready"
fi
kfdsim_reload
check "kfdsim back to the boot's machine" kfdsim_loaded
tap_done
