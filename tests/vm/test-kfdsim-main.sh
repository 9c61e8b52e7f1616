#!/bin/bash
# The kfdsim VM suite, boot "main": the simulator's own tests and the GPU
# workload's (guest tests without a "# vm-boot:" line, and guest/common), as
# one test program for tests/run-suite.sh. Boots "cr" and "faults" are
# test-kfdsim-cr.sh and test-kfdsim-faults.sh.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-2048}
exec "$(dirname "$0")/vm-suite.sh" kfdsim main
