#!/bin/bash
# The kfdsim VM suite, boot "cr": checkpoint/restore of GPU workloads by
# CRIU with the plugin (guest tests with "# vm-boot: cr"), as one test
# program for tests/run-suite.sh. 3 GiB of guest RAM: test-cr-eight's 8 MI210
# queues have 63.5 MB CWSR areas each (it needed 2 GiB).
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-3072}
exec "$(dirname "$0")/vm-suite.sh" kfdsim cr
