#!/bin/bash
# The kfdsim VM suite, boot "bench": benchmarks (guest tests with "# vm-boot:
# bench"), run by `make vm-bench`, not by make check. 5.5 GiB of guest RAM:
# a 1 GiB VRAM BO (kfdsim backs it with RAM), its 1 GiB image in /tmp and
# the file limit's 1 GiB file beside it. BENCH_MIB=N: a BO of N MiB instead.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
export VM_MEM=${VM_MEM:-5632}
exec "$(dirname "$0")/vm-suite.sh" kfdsim bench
