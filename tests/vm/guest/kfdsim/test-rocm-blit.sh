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
# callback with the destination untouched. Then with one byte of the first
# modelled dispatch flipped (fault injection "blit corrupt") the byte check
# must fail there and only there. No HIP needed.
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

# a wrong result is caught: the first copy's first byte flipped
res=$WORK/rocm-hsa-blit-corrupt.out
check "corrupt: fault injection armed (blit corrupt)" kfd_inject "blit corrupt EIO 1"
HSAKMT_DEBUG_LEVEL=4 timeout 240 $R/bin/rocm-hsa-blit >"$res" 2>&1
rc=$?
grep -e '^STEP FAIL' -e '^# byte' -e '^RESULT' "$res" | sed 's/^/# corrupt: /'
keep "$res"
left=$(kfd_inject_take)
check "corrupt: the rule was hit" test -z "$left"
check "corrupt: the first copy's byte check fails, and no other check" \
	eval '[ "$(grep -c "^STEP FAIL" "$res")" -eq 1 ] && grep -A2 "^STEP ok copyBuffer 16-byte aligned.* on gpu0" "$res" | grep -q "^STEP FAIL   bytes as the work-items leave them on gpu0"'
check "corrupt: it names the flipped byte, the destination's first" grep -q '^# byte 16384 of the buffers' "$res"
check "corrupt: RESULT FAIL 1, exit status 1" eval 'grep -qx "RESULT FAIL 1" "$res" && [ "$rc" -eq 1 ]'
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
