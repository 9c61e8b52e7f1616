#!/bin/bash
# The kfdsim VM suite, boot "cri": a GPU container of a Kubernetes pod
# checkpointed and restored through the CRI, as the kubelet drives it, by
# Debian testing's containerd 2.1 over Debian testing's runc 1.3 (trixie's
# runc 1.1.15 for one refused restore) (scripts/fetch-cri.sh),
# with the plugin installed from `make deb`'s package by dpkg and the GPUs
# given as CDI devices from `amdgpu-criu cdi` (guest tests with
# "# vm-boot: cri"), as one test program for tests/run-suite.sh. The CRI
# client is guest/cri/cri.py (python3-grpcio); images are built in the
# guest and pulled from a registry on 127.0.0.1 (guest/cri/oci.py). The
# guest's / is a tmpfs, so the initramfs is held twice while it is copied,
# and containerd's native snapshots are on it too.
# run-suite-timeout: 3600 (the VM harness enforces each guest test's own limit)
# run-suite-parallel: yes (each boot is its own VM, logs and work files; vm-suite.sh serialises the shared preparation)
export VM_MEM=${VM_MEM:-3072}
exec "$(dirname "$0")/vm-suite.sh" kfdsim cri
