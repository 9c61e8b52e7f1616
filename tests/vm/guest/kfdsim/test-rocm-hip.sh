#!/bin/sh
# vm-boot: rocm
# vm-timeout: 900
# Debian testing's HIP 6.4 (libamdhip64-6, comgr; scripts/fetch-hip-testing.sh)
# on kfdsim, only in images made with VM_HIP=1 (about 150 MB more): the
# probe rocm-hip-basic (tests/workloads/rocm) runs each HIP host call of
# ours with a watchdog and says which works, fails or hangs; then a
# device-to-device hipMemcpy, a blit kernel, must end in ROCr's queue
# error (HIP aborts naming HSA_STATUS_ERROR_INVALID_PACKET_FORMAT) with
# kfdsim's dmesg line naming the kernel: never a silent success, never a
# hang. Every output line is kept in the log.
. /test/lib/guest.sh

R=/usr/lib/rocm-testing
if [ ! -x $R/bin/rocm-hip-basic ]; then
	ok "rocm-hip # SKIP no HIP in the image (VM_HIP=1 make vm-check VM_ONLY=test-rocm-hip; scripts/fetch-hip-testing.sh)"
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
check "HIP 6.4: the blit kernel ends in a queue error (HIP aborts: invalid packet format)" \
	grep -q 'HSA_STATUS_ERROR_INVALID_PACKET_FORMAT' "$res"
check "kfdsim names the dispatched kernel in dmesg" \
	sh -c "dmesg | tail -n +$((mark + 1)) | grep -q 'kernel dispatch of'"
check "amdgpu-named simulator unloaded" kfdsim_as_amdgpu_unload
check "kfdsim loaded again as the boot loaded it" kfdsim_load
tap_done
