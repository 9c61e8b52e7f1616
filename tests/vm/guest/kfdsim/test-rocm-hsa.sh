#!/bin/sh
# shellcheck disable=SC2034 # the ROCM_HSA* variables are read by /test/lib/rocm_cr.sh
# vm-boot: rocm
# vm-timeout: 420
# A process on Debian's ROCr 5.2.3 (tests/workloads/rocm/rocm-hsa: hsa_init,
# VRAM and system pools, memory locked for the GPU, signals, an AQL queue)
# dumped and restored with the plugin, then re-checked by itself (every
# filled byte, signal values, the queue; then signals stored and waited for,
# new allocations, a new queue, memory and signals freed); scenarios in
# /test/lib/rocm_cr.sh (tests/vm/guest/rocm_cr.sh). The workload creates
# queues after the restore but destroys none and skips hsa_shut_down: ROCr
# 5.2.3's queue destruction has a lost wake-up of its own
# (tests/workloads/rocm/rocm-hsa.c, exercise_gpu()).
. /test/lib/guest.sh
ROCM_HSA=/test/bin/rocm-hsa
ROCM_HSA_RUNTIME=disabled
. /test/lib/rocm_cr.sh
