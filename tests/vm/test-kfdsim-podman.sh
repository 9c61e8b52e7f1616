#!/bin/bash
# The kfdsim VM suite, boot "podman": a GPU container checkpointed into an
# exported archive and restored from it by Debian trixie's podman (runc and crun,
# conmon; scripts/fetch-podman.sh), with the plugin installed from `make
# deb`'s package by dpkg (guest tests with "# vm-boot: podman"), as one test
# program for tests/run-suite.sh. The guest's / is a tmpfs (runc, crun and
# CRIU pivot_root), so the initramfs (157 MB unpacked, 57 MB as zstd: the ct
# boot's 68 MB plus podman's 85 MB) is held twice while it is copied;
# podman's vfs storage is on it too (measured after the test: 159 MiB of
# shmem, 2.6 GiB of 2.9 GiB available with 3072 MiB).
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-2048}
exec "$(dirname "$0")/vm-suite.sh" kfdsim podman
