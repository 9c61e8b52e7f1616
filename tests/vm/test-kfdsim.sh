#!/bin/bash
# The kfdsim VM suite as one test program for tests/run-suite.sh.
# 2 GiB of guest RAM: test-cr-eight's process has 8 MI210 queues whose CWSR
# areas are 63.5 MB of VRAM each (kfdsim backs VRAM with RAM), and its
# images hold them again (~1.3 GB at the peak, OOM at 1 GiB).
export VM_MEM=${VM_MEM:-2048}
exec "$(dirname "$0")/vm-suite.sh" kfdsim
