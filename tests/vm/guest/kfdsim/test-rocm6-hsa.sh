#!/bin/sh
# shellcheck disable=SC2034 # the ROCM_HSA* variables are read by /test/lib/rocm_cr.sh
# vm-boot: rocm
# vm-timeout: 600
# test-rocm-hsa's scenarios (/test/lib/rocm_cr.sh) with today's ROCr: the same workload
# (tests/workloads/rocm/rocm-hsa) built against Debian testing's ROCr 6.4,
# whose thunk is built in (scripts/fetch-rocm-testing.sh), run unmodified:
# a process dumped with --leave-running and restored, and one dumped on the
# boot's 2 GPUs and restored on 2 of the MI210 machine's 8, each re-checking
# every filled byte, its signals and its queue, then allocating, signalling
# and creating queues again; with ROCr 6.4 also destroying 3 new queues per
# GPU (--churn 3), which ROCr 5.2.3 cannot do reliably (test-rocm-hsa).
# ROCr 6.4 enables KFD's debug runtime at hsa_init; KFD's CRIU data does not
# carry it, so the restored process has it disabled and works on.
. /test/lib/guest.sh
if [ ! -x /usr/lib/rocm-testing/bin/rocm-hsa ]; then
	ok "rocm6-hsa # SKIP no Debian testing ROCm in the image (make vm-deps: scripts/fetch-rocm-testing.sh)"
	tap_done
	exit
fi
ROCM_HSA=/usr/lib/rocm-testing/bin/rocm-hsa
ROCM_HSA_ARGS="--churn 3"
ROCM_HSA_RUNTIME=enabled
# the thunk's warnings go to the workload's output: which KFD call failed
export HSAKMT_DEBUG_LEVEL=4
. /test/lib/rocm_cr.sh
