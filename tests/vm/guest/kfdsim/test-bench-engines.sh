#!/bin/sh
# Benchmark (make vm-bench, not make check): one GPU's 1 GiB VRAM BO, every
# byte data (--big-bo-fill: no holes), dumped and restored by each copy
# engine under kfdsim's cost model, each figure printed next to the model's
# limit for its engine:
# - the engine's limit: the CPU reads VRAM through the BAR at
#   bar_read_mbps (17 MiB/s, as AMD measured; writes are not charged, so
#   the CPU's restore has no such limit), SDMA runs at sdma_mbps per engine;
# - beside it, the image directory's filesystem written (dump) and read
#   (restore) in 4 MiB requests by a separate process (guest/filebench.c),
#   shown but not a limit (see file_limits);
# - how much of the copying the pipeline hid behind the file I/O (the
#   plugin's own "H% of the shorter hidden behind the other");
# - the CPU time of the plugin's data-path threads per GiB (the plugin's
#   "CPU U ms (V ms/GiB)"), for SDMA beside CPU_LIMIT, and how the restore
#   read the image (O_DIRECT or the page cache, and why); beside the
#   hardware target, one checksum pass of the same run (the plugin's
#   "checksums" time per GiB), the closest a TCG guest has to it;
# - the page cache the SDMA dump and restore leave (Cached less Shmem in
#   /proc/meminfo, caches dropped before each);
# - the SDMA dump twice: through the page cache (AMDGPU_CRIU_DIRECT_IO=0,
#   row dump-pc) and as by default (O_DIRECT on the disk), each saying how
#   it wrote its image.
# The images go to an ext4 disk (/dev/vda, virtio-blk), where O_DIRECT is
# real; tmpfs takes it as a buffered copy.
# Checks only that every step worked and the self-check PASSes.
# vm-boot: bench
# vm-timeout: 1800
# vm-disk: 4096
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
if vm_disk; then diag "bench: images on /dev/vda (ext4, virtio-blk)"; else diag "bench: no disk: images on tmpfs"; fi
kfdsim_debugfs || diag "no kfdsim debugfs"
P=/sys/module/amdgpu_kfdsim/parameters
SIZE_MIB=${BENCH_MIB:-1024}
# the CPU's dump of 1 GiB at 17 MiB/s takes over a minute (criu_dump's default limit)
export CRIU_TIMEOUT=900
BAR_MIBS=17
# CPU-s per GiB of the SDMA path's data-path threads: about one CRC-64 pass
CPU_LIMIT=0.15
# ms: milliseconds since boot, from /proc/uptime (busybox date has no %N)
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

# file_limits: MiB/s writing then reading SIZE_MIB on $WORK as bo_stream
# does (guest/filebench.c: 4 MiB pwrite()s of data, fdatasync, 4 MiB
# pread()s), right before each step. Shown, not used as a limit: under TCG
# this separate process wrote 36-38 MiB/s where the pipeline's own file side
# wrote 170-186 in the same boot (busybox dd: 25), a figure beating its
# limit, so no limit; why is not known (docs/measurements.md).
file_limits() {
	local out
	out=$(/test/bin/filebench "$WORK/limit" "$SIZE_MIB")
	check "file limits measured ($out)" test -n "$out"
	FILE_W=$(echo "$out" | awk '{ print $2 }') FILE_R=$(echo "$out" | awk '{ print $4 }')
}

# figures LOG OP ENGINE LIMIT: the plugin's line for the GPU, as a table row,
# with the CPU time of the GPU's data-path threads per GiB beside its limit
# (SDMA: CPU_LIMIT, about one checksum pass; the CPU engine: none, it copies)
# and how a restore read the image
figures() {
	local line cpu_limit=none
	[ "$3" = sdma ] && cpu_limit=$CPU_LIMIT
	line=$(grep -h 'MiB in [0-9]* ms ([0-9]* MiB/s): copying' "$1" | grep "GPU $GPU:" | tail -1)
	echo "$line" | sed -n "s/.*: \([0-9]*\) MiB in \([0-9]*\) ms (\([0-9]*\) MiB\/s): copying \([0-9]*\) ms, files \([0-9]*\) ms, \([0-9]*\)% .*; CPU \([0-9]*\) ms (\([0-9]*\) ms\/GiB), checksums \([0-9]*\) ms.*/\1 \2 \3 \4 \5 \6 \7 \8 \9/p" |
		while read -r mib wall rate copy files hidden cpu cpu_gib sums; do
			printf '# bench: %-4s %-7s %5s MiB %7s ms %5s MiB/s | copying %6s ms, files %6s ms, %3s%% hidden | engine limit %s | filebench %s MiB/s\n' \
				"$3" "$2" "$mib" "$wall" "$rate" "$copy" "$files" "$hidden" "$4" "$5"
			printf '# bench: %-4s %-7s CPU %s ms: %s CPU-s/GiB (limit %s CPU-s/GiB on hardware; one checksum pass here: %s CPU-s/GiB); checksums %s ms of it\n' \
				"$3" "$2" "$cpu" "$(awk -v v="$cpu_gib" 'BEGIN { printf "%.3f", v / 1000 }')" "$cpu_limit" \
				"$(awk -v s="$sums" -v m="$mib" 'BEGIN { printf "%.3f", s / 1000 / (m / 1024) }')" "$sums"
		done
	grep -h "GPU $GPU: image read " "$1" | tail -1 | sed "s/.*GPU $GPU: /# bench: $3 $2: /"
	check "$3 $2: the plugin's line has the CPU time" grep -q "GPU $GPU: .*; CPU [0-9]* ms" "$1"
}

# cached_kib: the page cache's size (KiB) without shared memory: kfdsim backs
# BOs with shmem, which counts as Cached, and a restore allocates them anew
cached_kib() { awk '/^Cached:/ { c = $2 } /^Shmem:/ { s = $2 } END { print c - s }' /proc/meminfo; }
# cache_from NAME KIB: the page cache grown since KIB (caches dropped then)
cache_from() { diag "bench: $1: page cache +$((($(cached_kib) - $2) / 1024)) MiB"; }

# step NAME ENGINE CMD...: CMD with that engine, checked
step() {
	local name=$1 engine=$2 rc
	shift 2
	export AMDGPU_CRIU_COPY_ENGINE=$engine
	"$@"
	rc=$?
	unset AMDGPU_CRIU_COPY_ENGINE
	check "$name (status $rc)" test "$rc" -eq 0
}

if ! GPU_READY_SECS=600 gpu_start bench --gpus 1 --big-bo "${SIZE_MIB}M" --big-bo-fill; then
	fail "bench: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
GPU=$(kfd_user_ids "$pid" | cut -d' ' -f1)
sdma=$(cat $P/sdma_mbps)
sdma_mibs=$((sdma * 1000000 / 1048576))

file_limits
echo $BAR_MIBS >$P/bar_read_mbps
step "cpu dump" cpu criu_dump "$WORK/img-cpu" "$pid" --leave-running
echo 0 >$P/bar_read_mbps
figures "$WORK/img-cpu/dump.log" dump cpu "$BAR_MIBS (BAR)" "$FILE_W"
rm -rf "$WORK/img-cpu"

# the SDMA dump through the page cache first (AMDGPU_CRIU_DIRECT_IO=0), for
# its CPU time and page cache beside the default's (O_DIRECT on the disk)
file_limits
echo $BAR_MIBS >$P/bar_read_mbps
sync && echo 3 >/proc/sys/vm/drop_caches && c0=$(cached_kib)
export AMDGPU_CRIU_DIRECT_IO=0
step "sdma dump, buffered" sdma criu_dump "$WORK/img-buffered" "$pid" --leave-running
unset AMDGPU_CRIU_DIRECT_IO
cache_from "sdma dump, buffered" "$c0"
echo 0 >$P/bar_read_mbps
figures "$WORK/img-buffered/dump.log" dump-pc sdma "$sdma_mibs (sdma_mbps)" "$FILE_W"
grep -h "GPU $GPU: image written " "$WORK/img-buffered/dump.log" | tail -1 | sed "s/.*GPU $GPU: /# bench: sdma dump-pc: /"
rm -rf "$WORK/img-buffered"

file_limits
echo $BAR_MIBS >$P/bar_read_mbps
sync && echo 3 >/proc/sys/vm/drop_caches && c0=$(cached_kib)
step "sdma dump" sdma criu_dump "$WORK/img" "$pid"
cache_from "sdma dump" "$c0"
echo 0 >$P/bar_read_mbps
figures "$WORK/img/dump.log" dump sdma "$sdma_mibs (sdma_mbps)" "$FILE_W"
grep -h "GPU $GPU: image written " "$WORK/img/dump.log" | tail -1 | sed "s/.*GPU $GPU: /# bench: sdma dump: /"
file_limits
sync && echo 3 >/proc/sys/vm/drop_caches && c0=$(cached_kib)
step "sdma restore" sdma criu_restore "$WORK/img"
cache_from "sdma restore" "$c0"
figures "$WORK/img/restore.log" restore sdma "$sdma_mibs (sdma_mbps)" "$FILE_R"
rm -rf "$WORK/img"

step "cpu dump (for the restore)" cpu criu_dump "$WORK/img" "$pid"
file_limits
step "cpu restore" cpu criu_restore "$WORK/img"
figures "$WORK/img/restore.log" restore cpu "none (writes are not charged)" "$FILE_R"
rm -rf "$WORK/img"
gpu_finish bench "$pid"
tap_done
