#!/bin/sh
# BO contents moved by SDMA (datapath/bo_copy_sdma.c through the real
# libdrm_amdgpu on kfdsim's render nodes and SDMA engine), then the engine
# choice (plugin/copy_engines.h):
# - sdma: a two-GPU process with every BO type, a 64 MiB VRAM BO (one
#   chunk of it all zero: restored by CONST_FILL) and a VRAM BO that is not
#   WRITABLE (its restored dma-buf is read-only: SDMA writes it through a
#   mapping of our own GPU VM) is dumped and restored with
#   AMDGPU_CRIU_COPY_ENGINE=sdma; both logs say, per GPU, that SDMA moved
#   its bytes, none that the CPU did; the self-check PASSes;
# - cpu: the same with AMDGPU_CRIU_COPY_ENGINE=cpu: the CPU moved them,
#   the dump read its GTT BOs in place (no staging copy);
# - the images of an SDMA dump and of a CPU dump (GTT BOs in place) of one process (dumped
#   twice, --leave-running, the workload idle) are the same bytes; with the
#   BAR's cost modelled (bar_read_mbps 17), the CPU's dump takes at least
#   what 64 MiB at 17 MiB/s takes, SDMA's less than half of it (both shown);
# - a bad AMDGPU_CRIU_COPY_ENGINE is refused in one line, the process keeps
#   running.
# vm-boot: main
# vm-timeout: 300
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"

# moved IMG LOG WHAT N: LOG of IMG says N times that WHAT (SDMA or the CPU) moved a GPU's BOs
moved() {
	local n
	case "$3" in
	SDMA) n=$(grep -c 'amdgpu_plugin: .* GPU [0-9]*: SDMA moved [0-9]* MiB' "$1/$2") ;;
	CPU) n=$(grep -c 'amdgpu_plugin: .* GPU [0-9]*: BO contents moved by the CPU' "$1/$2") ;;
	esac
	grep -E 'SDMA moved|moved by the CPU' "$1/$2" | sed 's/^/# /'
	[ "$n" -eq "$4" ]
}

# with_engine ENGINE CMD...: CMD with AMDGPU_CRIU_COPY_ENGINE=ENGINE exported
with_engine() {
	local rc
	export AMDGPU_CRIU_COPY_ENGINE="$1"
	shift
	"$@"
	rc=$?
	unset AMDGPU_CRIU_COPY_ENGINE
	return $rc
}

for engine in sdma cpu; do
	if ! gpu_start "$engine" --gpus 2 --big-bo 64M --render-fds --ro-bo; then
		fail "$engine: workload ready"
		continue
	fi
	pid=$WL_PID
	img=$WORK/img-$engine
	if with_engine "$engine" gpu_dump_restore "$engine" "$img" "$pid"; then
		if [ "$engine" = sdma ]; then
			check "sdma: the dump says SDMA moved both GPUs' BOs" moved "$img" dump.log SDMA 2
			check "sdma: the restore says SDMA moved both GPUs' BOs" moved "$img" restore.log SDMA 2
			check "sdma: no GPU copied by the CPU" eval '! grep -q "moved by the CPU" "$img"/*.log'
			check "sdma: no SDMA warning or error" eval '! grep -E "amdgpu_plugin: (Warn|Error)" "$img"/*.log | grep -qi sdma'
		else
			check "cpu: the dump says the CPU moved both GPUs' BOs" moved "$img" dump.log CPU 2
			check "cpu: the dump read both GPUs' GTT BOs in place" \
				test "$(grep -c 'GPU [0-9]*: BO contents moved by the CPU, [1-9][0-9]* KiB of GTT BOs read in place' "$img/dump.log")" -eq 2
			check "cpu: no SDMA used" eval '! grep -q "SDMA moved" "$img"/*.log'
		fi
	fi
	gpu_finish "$engine" "$pid"
done

# One process dumped twice, by each engine: the same image bytes. Under the
# cost of CPU reads of VRAM through the BAR (kfdsim bar_read_mbps, as AMD
# measured: 17 MiB/s; the workload's own checks read VRAM too, so it is on
# for these two dumps only), the CPU's dump of the 64 MiB VRAM BO takes at
# least 64/17 s, and SDMA's far less: both times are printed.
BAR=/sys/module/amdgpu_kfdsim/parameters/bar_read_mbps
# ms: milliseconds since boot, from /proc/uptime (busybox date has no %N)
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
# copying_ms LOG: the copy engines' busy time of a dump, all GPUs ("copying C ms")
copying_ms() { sed -n 's/.* MiB in [0-9]* ms ([0-9]* MiB\/s): copying \([0-9]*\) ms.*/\1/p' "$1" | awk '{ t += $1 } END { print t + 0 }'; }
if gpu_start same --gpus 2 --big-bo 64M; then
	pid=$WL_PID
	echo 17 >"$BAR"
	t0=$(ms)
	with_engine cpu criu_dump "$WORK/img-a" "$pid" --leave-running
	rc_a=$?
	t1=$(ms)
	with_engine sdma criu_dump "$WORK/img-b" "$pid" --leave-running
	rc_b=$?
	t2=$(ms)
	echo 0 >"$BAR"
	# the plugin's own copying time, summed over the GPUs (its log line per GPU)
	cpu_copy=$(copying_ms "$WORK/img-a/dump.log") sdma_copy=$(copying_ms "$WORK/img-b/dump.log")
	diag "BAR model 17 MiB/s: copying BO contents took the CPU $cpu_copy ms, SDMA $sdma_copy ms (whole dumps: $((t1 - t0)) ms, $((t2 - t1)) ms; a 64 MiB VRAM BO and the workload's others, 2 GPUs)"
	grep -h 'MiB in [0-9]* ms' "$WORK/img-a/dump.log" "$WORK/img-b/dump.log" | sed 's/^.*amdgpu_plugin: /# /'
	check "same: both dumps (status $rc_a, $rc_b)" test "$rc_a" -eq 0 -a "$rc_b" -eq 0
	check "same: the second dump was SDMA's" moved "$WORK/img-b" dump.log SDMA 2
	check "bar: the CPU paid the BAR (64 MiB at 17 MiB/s: 3.7 s or more; $cpu_copy ms)" test "${cpu_copy:-0}" -ge 3700
	check "bar: SDMA copied in under half the CPU's time ($sdma_copy ms vs $cpu_copy ms)" \
		test $((2 * ${sdma_copy:-999999})) -lt "${cpu_copy:-0}"
	check "same: every BO contents file and index is the same bytes" eval \
		'(cd "$WORK/img-a" && sha256sum amdgpu-bo-*) >"$WORK/a.sum" &&
		 (cd "$WORK/img-b" && sha256sum amdgpu-bo-*) >"$WORK/b.sum" &&
		 test -s "$WORK/a.sum" && cmp -s "$WORK/a.sum" "$WORK/b.sum"'
	with_engine gpu criu_dump "$WORK/img-c" "$pid" --leave-running
	rc=$?
	check "bad engine name: dump refused (status $rc)" test "$rc" -ne 0
	check "bad engine name: one line saying what to use" \
		grep -q 'amdgpu_plugin: Error: AMDGPU_CRIU_COPY_ENGINE=gpu: unknown copy engine; use auto (the default), sdma or cpu' "$WORK/img-c/dump.log"
	check "bad engine name: the process still runs, queues unpaused" wait_until 10 kfd_running "$pid"
	gpu_finish same "$pid"
else
	fail "same: workload ready"
fi
tap_done
