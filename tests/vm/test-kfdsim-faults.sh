#!/bin/bash
# The kfdsim VM suite, boot "faults": failures injected at every dump and
# restore stage, corrupted images and full GPUs (guest tests with
# "# vm-boot: faults"), as one test program for tests/run-suite.sh.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-3072}
exec "$(dirname "$0")/vm-suite.sh" kfdsim faults
