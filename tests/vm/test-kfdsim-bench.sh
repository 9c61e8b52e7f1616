#!/bin/bash
# The kfdsim VM suite, boot "bench": benchmarks (guest tests with "# vm-boot:
# bench"), run by `make vm-bench`, not by make check. 4 GiB of guest RAM: a
# 1 GiB VRAM BO (kfdsim backs it with RAM) and its 1 GiB image in /tmp.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
export VM_MEM=${VM_MEM:-4096}
exec "$(dirname "$0")/vm-suite.sh" kfdsim bench
