#!/bin/sh
# vm-boot: rocm
# vm-timeout: 1500
# Debian testing's HIP 6.4 (libamdhip64-6, comgr; scripts/fetch-hip-testing.sh)
# on kfdsim (about 150 MB more image; VM_HIP=0 leaves it out): the
# probe rocm-hip-basic (tests/workloads/rocm) runs each HIP host call of
# ours with a watchdog and says which works, fails or hangs; then a
# device-to-device hipMemcpy2D, ROCclr's rectangle blit kernel, which
# kfdsim does not model, must end in ROCr's queue error (HIP aborts naming
# HSA_STATUS_ERROR_INVALID_PACKET_FORMAT) with kfdsim's dmesg line naming
# the kernel: never a silent success, never a hang. Then HIP without SDMA queues (HSA_ENABLE_SDMA=0, and
# GPU_FORCE_BLIT_COPY_SIZE so that ROCclr copies with its own blit kernels
# rather than ROCr's): kfdsim carries out ROCclr's copy and fill kernels
# (tests/kfdsim/blit.c), so every copy, device-to-device ones, aligned and
# not, and hipMemset/hipMemsetD32 give the bytes they must; and with one
# byte of the first blit flipped (fault injection "blit corrupt") the
# workload's byte check fails. Every output line is kept in the log.
. /test/lib/guest.sh

R=/usr/lib/rocm-testing
if [ ! -x $R/bin/rocm-hip-basic ]; then
	ok "rocm-hip # SKIP no HIP in the image (make vm-deps: scripts/fetch-hip-testing.sh; VM_HIP=0 leaves it out)"
	tap_done
	exit
fi
if [ ! -f /test/kfdsim/amdgpu.ko ]; then
	ok "rocm-hip # SKIP no /test/kfdsim/amdgpu.ko (KFDSIM_MODNAME=amdgpu build)"
	tap_done
	exit
fi
kfdsim_unload
check "kfdsim loaded under amdgpu's module name" kfdsim_as_amdgpu_load
mark=$(dmesg | wc -l)
res=$WORK/hip.out
AMD_LOG_LEVEL=1 timeout 800 $R/bin/rocm-hip-basic --size 65536 --step-timeout 300 --blit >"$res" 2>&1
rc=$?
sed 's/^/# /' "$res"
dmesg | tail -n +$((mark + 1)) | grep -i kfdsim | tail -20 | sed 's/^/# dmesg: /'
keep "$res"
diag "rocm-hip-basic exit status $rc"
for what in hipGetDeviceCount "hipMalloc vram" "hipHostMalloc pinned" hipHostRegister hipStreamCreate \
	hipEventCreate "hipMemcpy pinned host to vram" "hipMemcpy vram to registered host" \
	"bytes back from vram equal" "hipMemcpyAsync vram to registered host on a stream" \
	hipEventRecord hipEventSynchronize "async bytes back from vram equal" hipStreamSynchronize \
	hipIpcGetMemHandle; do
	check "HIP 6.4: $what" grep -qx "STEP ok $what" "$res"
done
check "HIP 6.4: no call hangs" sh -c "! grep -q '^STEP HANG' '$res'"
check "HIP 6.4: the rectangle blit kernel ends in a queue error (HIP aborts: invalid packet format)" \
	grep -q 'HSA_STATUS_ERROR_INVALID_PACKET_FORMAT' "$res"
check "kfdsim names the dispatched kernel, one of ROCclr's, in dmesg" \
	sh -c "dmesg | tail -n +$((mark + 1)) | grep -q 'kernel dispatch of __amd_rocclr_copyBufferRect'"

# --- HIP without SDMA queues: ROCclr's blit kernels carried out ---
BLIT=/sys/kernel/debug/kfdsim/blit
blits() { sed -n 's/^copies \([0-9]*\) fills \([0-9]*\) .* corrupted \([0-9]*\)$/\1 \2 \3/p' $BLIT; }
kfdsim_debugfs || true
before=$(blits)
mark=$(dmesg | wc -l)
res=$WORK/hip-kernels.out
HSA_ENABLE_SDMA=0 GPU_FORCE_BLIT_COPY_SIZE=1048576 AMD_LOG_LEVEL=1 \
	timeout 800 $R/bin/rocm-hip-basic --size 65536 --step-timeout 300 --kernels >"$res" 2>&1
rc=$?
sed 's/^/# kernels: /' "$res"
dmesg | tail -n +$((mark + 1)) | grep -i kfdsim | tail -20 | sed 's/^/# dmesg: /'
keep "$res"
after=$(blits)
diag "kernels: exit status $rc, kfdsim/blit copies fills corrupted: before $before, after $after"
for what in "hipMemcpy pinned host to vram" "bytes back from vram equal" \
	"async bytes back from vram equal" "hipMemcpy vram to vram (blit kernel)" \
	"vram to vram: bytes equal" "misaligned vram to vram: bytes equal" \
	"aligned vram to vram with a remainder: bytes equal" "hipMemset: bytes equal" \
	"misaligned hipMemset: bytes equal" "hipMemsetD32: bytes equal"; do
	check "no SDMA: $what" grep -qx "STEP ok $what" "$res"
done
check "no SDMA: every step ok, RESULT PASS" eval 'grep -qx "RESULT PASS" "$res" && ! grep -q "^STEP [FH]" "$res"'
check "no SDMA: no kernel dispatch ended in a queue error" \
	sh -c "! dmesg | tail -n +$((mark + 1)) | grep -q 'kernel dispatch of'"
check "no SDMA: kfdsim carried out copies and fills (kfdsim/blit)" \
	eval 'set -- $before $after; [ "$4" -gt "$1" ] && [ "$5" -gt "$2" ]'

# --- a wrong result is caught: the first blit's first byte flipped ---
mark=$(dmesg | wc -l)
res=$WORK/hip-corrupt.out
check "corrupt: fault injection armed (blit corrupt)" kfd_inject "blit corrupt EIO 1"
HSA_ENABLE_SDMA=0 GPU_FORCE_BLIT_COPY_SIZE=1048576 AMD_LOG_LEVEL=1 \
	timeout 800 $R/bin/rocm-hip-basic --size 65536 --step-timeout 300 >"$res" 2>&1
rc=$?
sed 's/^/# corrupt: /' "$res"
keep "$res"
left=$(kfd_inject_take)
diag "corrupt: exit status $rc; rules left: ${left:-none}; kfdsim/blit: $(cat $BLIT)"
check "corrupt: the rule was hit" test -z "$left"
check "corrupt: kfdsim says which byte it flipped" \
	sh -c "dmesg | tail -n +$((mark + 1)) | grep -q 'blit: byte at 0x[0-9a-f]* flipped'"
check "corrupt: the workload's byte check fails" grep -q '^STEP FAIL bytes back from vram equal' "$res"
check "corrupt: RESULT FAIL, exit status 1" eval 'grep -q "^RESULT FAIL" "$res" && [ "$rc" -eq 1 ]'

check "amdgpu-named simulator unloaded" kfdsim_as_amdgpu_unload
check "kfdsim loaded again as the boot loaded it" kfdsim_load
tap_done
