#!/bin/sh
# vm-boot: rocm
# vm-timeout: 300
# kfdsim carries out ROCclr's copy and fill blit kernels (tests/kfdsim/blit.c)
# exactly as their work-items would: rocm-hsa-blit (tests/workloads/rocm) puts
# a code object of its own making (descriptors __amd_rocclr_copyBuffer.kd and
# __amd_rocclr_fillBufferAligned.kd, no code) in GPU-visible memory and
# dispatches them through Debian testing's ROCr 6.4 with kernarg segments of
# ROCclr's layout; every byte of source and destination must be what the
# host's run of each work-item's loop leaves (remainders, misaligned ends,
# strides the grid does not cover, tiled and strided fills), and a
# dispatch on a 2-D grid (not modelled) must end in ROCr's queue error
# callback with the destination untouched. No HIP needed.
. /test/lib/guest.sh

R=/usr/lib/rocm-testing
if [ ! -x $R/bin/rocm-hsa-blit ]; then
	ok "rocm-blit # SKIP no Debian testing ROCm in the image (make vm-deps: scripts/fetch-rocm-testing.sh)"
	tap_done
	exit
fi
kfdsim_debugfs || true
BLIT=/sys/kernel/debug/kfdsim/blit
before=$(cat $BLIT 2>/dev/null)
mark=$(dmesg | wc -l)
res=$WORK/rocm-hsa-blit.out
gpus=$(grep -l . /sys/class/kfd/kfd/topology/nodes/*/gpu_id 2>/dev/null | xargs cat | grep -vcx 0)
HSAKMT_DEBUG_LEVEL=4 timeout 240 $R/bin/rocm-hsa-blit >"$res" 2>&1
rc=$?
sed 's/^/# /' "$res"
dmesg | tail -n +$((mark + 1)) | grep -i kfdsim | tail -12 | sed 's/^/# dmesg: /'
keep "$res"
diag "kfdsim/blit before: $before; after: $(cat $BLIT 2>/dev/null)"
check "rocm-hsa-blit exits 0 (status $rc)" test "$rc" -eq 0
check "every GPU ($gpus) exercised, every check passed" grep -qx "RESULT PASS gpus $gpus" "$res"
for what in "copyBuffer 16-byte aligned" "copyBuffer misaligned" "copyBuffer grid above the elements" \
	"copyBuffer next_chunk 8 over a grid of 3" "copyBuffer next_chunk 100 over a grid of 30" \
	"fillBufferAligned 3-byte pattern tiled" "fillBufferAligned 16-byte elements" \
	"fillBufferAligned 8-byte elements in strides"; do
	check "$what: done and every byte as the work-items leave it, on every GPU" \
		test "$(grep -A1 "^STEP ok $what" "$res" | grep -c '^STEP ok   bytes as the work-items leave them')" -eq "$gpus"
done
check "a 2-D grid ends in the queue error, destination and signal untouched, on every GPU" \
	test "$(grep -c -e '^STEP ok copyBuffer on a 2-D grid' -e '^STEP ok   the destination untouched' \
		-e '^STEP ok   its completion signal untouched' "$res")" -eq $((3 * gpus))
check "kfdsim names the kernel and why it did not run it" \
	sh -c "dmesg | tail -n +$((mark + 1)) | grep -q 'kernel dispatch of __amd_rocclr_copyBuffer.kd .*more than one dimension'"
check "kfdsim/blit counts the copies and fills" \
	eval 'set -- $(cat $BLIT); [ "$2" -ge $((5 * gpus)) ] && [ "$4" -ge $((3 * gpus)) ]'
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
