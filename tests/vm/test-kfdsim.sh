#!/bin/bash
# The kfdsim VM suite as one test program for tests/run-suite.sh.
# 5.5 GiB of guest RAM: test-cr-big-bo's process has a VRAM BO of 4 GiB +
# 64 MiB, which kfdsim backs with RAM (all of it at mmap), plus CRIU and the
# rest (MemAvailable is about 400 MiB below VM_MEM); its image is sparse.
# (test-cr-eight, 8 MI210 queues with 63.5 MB CWSR areas each, needed 2 GiB.)
# qemu allocates guest RAM as the guest first touches it and keeps it until
# the VM exits: the host pays for the big BO from that test on.
export VM_MEM=${VM_MEM:-5632}
exec "$(dirname "$0")/vm-suite.sh" kfdsim
