#!/bin/bash
# The kfdsim VM suite, boot "zdtm": CRIU's own test runner, test/zdtm.py of
# CRIU's source of the guest criu's version, runs the plugin's GPU tests
# (tests/zdtm, as test/zdtm/gpu/) with `--criu-plugin amdgpu`, in the h and
# ns flavours and with --iters, --pre, --snaps, --stream and --lazy-pages
# (guest test test-zdtm.sh, "# vm-boot: zdtm"). Python 3, make and the
# source come from scripts/fetch-zdtm.sh (make vm-deps). `make zdtm`.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-2048}
exec "$(dirname "$0")/vm-suite.sh" kfdsim zdtm
