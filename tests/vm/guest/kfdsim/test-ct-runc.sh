#!/bin/sh
# Debian trixie's runc (1.1.15) checkpoints and restores a GPU container
# with the plugin installed by `make deb`'s package (guest/ct.sh, ct_cases):
# (a) onto the same GPUs, (b) into a container given other GPUs, (c) into
# one given too few: refused, nothing left, the checkpoint restorable after.
# runc moves CRIU into the container's cgroup and installs its device rules
# before the restore, so the plugin (master and tasks) sees the container's
# GPUs only: nothing to name.
# vm-boot: ct
# vm-timeout: 360
. /test/lib/guest.sh
. /test/lib/ct.sh
ct_missing runc && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
ct_gpus_for() { :; }
ct_cases runc
check "kfdsim loaded again as the boot loaded it" kfdsim_reload
tap_done
