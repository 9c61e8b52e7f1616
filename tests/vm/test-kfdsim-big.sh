#!/bin/bash
# The kfdsim VM suite, boot "big": the tests with multi-GiB BOs (guest tests
# with "# vm-boot: big": test-cr-big-bo, test-cr-interrupt), as one test
# program for tests/run-suite.sh.
# 5.5 GiB of guest RAM: test-cr-big-bo's process has a VRAM BO of 4 GiB +
# 64 MiB, which kfdsim backs with RAM (all of it at mmap), plus CRIU and the
# rest (MemAvailable is about 400 MiB below VM_MEM); its image is sparse.
# qemu allocates guest RAM as the guest first touches it and keeps it until
# the VM exits: the host pays for the big BO from that test on.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-5632}
exec "$(dirname "$0")/vm-suite.sh" kfdsim big
