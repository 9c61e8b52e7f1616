#!/bin/sh
# shellcheck disable=SC2034 # the ROCM_HSA* variables are read by /test/lib/rocm_cr.sh
# vm-boot: rocm
# vm-timeout: 900
# test-rocm6-hsa's scenarios (/test/lib/rocm_cr.sh) with a HIP program:
# rocm-hip (tests/workloads/rocm) on Debian testing's HIP 6.4, only in
# images made with VM_HIP=1 (scripts/fetch-hip-testing.sh): VRAM filled
# through hipMemcpy, pinned and registered host memory, a stream and an
# event, on every device; dumped with --leave-running and again, and dumped
# on the boot's 2 GPUs and restored on 2 of the MI210 machine's 8; after
# each restore every byte re-read through the runtime (hipMemcpy back), the
# old stream and event used, new VRAM allocated, copied and freed, a new
# stream created.
# Today only the plain scenario passes (VM_HIP=1 run: plain PASS, every
# dump refused): HIP's hipMemcpy runs on ROCr 6.4's SDMA queues by engine
# id, which KFD's CRIU does not handle, so PROCESS_INFO is refused with
# EOPNOTSUPP and the plugin says so (README "Known limits").
. /test/lib/guest.sh
if [ ! -x /usr/lib/rocm-testing/bin/rocm-hip ]; then
	ok "rocm-hip-cr # SKIP no HIP in the image (VM_HIP=1 make vm-check VM_ONLY=test-rocm-hip-cr; scripts/fetch-hip-testing.sh)"
	tap_done
	exit
fi
ROCM_HSA=/usr/lib/rocm-testing/bin/rocm-hip
ROCM_HSA_ARGS="--size 1048576"
ROCM_HSA_RUNTIME=enabled
# HIP builds its blit kernels with comgr at start: about 20 s under TCG
GPU_READY_SECS=150
export HSA_ENABLE_IPC_MODE_LEGACY=0 HSAKMT_DEBUG_LEVEL=4
. /test/lib/rocm_cr.sh
