#!/bin/sh
# vm-boot: rocm
# vm-timeout: 600
# test-rocm-hsa's dumps and restores with today's ROCr: the same workload
# (tests/workloads/rocm/rocm-hsa) built against Debian testing's ROCr 6.4,
# whose thunk is built in (scripts/fetch-rocm-testing.sh), run unmodified:
# a process dumped with --leave-running and restored, and one dumped on the
# boot's 2 GPUs and restored on 2 of the MI210 machine's 8, each re-checking
# every filled byte, its signals and its queue, then allocating, signalling
# and creating queues again; with ROCr 6.4 also destroying 3 new queues per
# GPU (--churn 3), which ROCr 5.2.3 cannot do reliably (test-rocm-hsa).
# ROCr 6.4 enables KFD's debug runtime at hsa_init; KFD's CRIU data does not
# carry it, so the restored process has it disabled and works on.
if [ ! -x /usr/lib/rocm-testing/bin/rocm-hsa ]; then
	. /test/lib/guest.sh
	ok "rocm6-hsa # SKIP no Debian testing ROCm in the image (make vm-deps: scripts/fetch-rocm-testing.sh)"
	tap_done
	exit
fi
# shellcheck disable=SC2034 # read by test-rocm-hsa.sh
ROCM_HSA=/usr/lib/rocm-testing/bin/rocm-hsa
# shellcheck disable=SC2034
ROCM_HSA_ARGS="--churn 3"
# shellcheck disable=SC2034
ROCM_HSA_RUNTIME=enabled
. /test/vm/test-rocm-hsa.sh
