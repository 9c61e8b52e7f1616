#!/bin/bash
# The kfdsim VM suite, boot "ct": GPU containers checkpointed and restored
# by Debian trixie's runc and crun, with the plugin installed from `make
# deb`'s package by dpkg (guest tests with "# vm-boot: ct"), as one test
# program for tests/run-suite.sh. The guest's / is a tmpfs (runc, crun and
# CRIU pivot_root), so the initramfs (65 MiB unpacked) is held twice while
# it is copied.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-2048}
exec "$(dirname "$0")/vm-suite.sh" kfdsim ct
