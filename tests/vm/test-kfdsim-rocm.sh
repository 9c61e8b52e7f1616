#!/bin/bash
# The kfdsim VM suite, boot "rocm": Debian's own ROCm userspace (rocminfo,
# libhsakmt, ROCr) on the simulator, and processes using it dumped and
# restored (guest tests with "# vm-boot: rocm"), as one test program for
# tests/run-suite.sh. Two guest NUMA nodes, as the two-socket machine
# descriptions have two CPU nodes and libhsakmt matches them with
# /sys/devices/system/node.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-2048} VM_NUMA_NODES=${VM_NUMA_NODES:-2}
exec "$(dirname "$0")/vm-suite.sh" kfdsim rocm
