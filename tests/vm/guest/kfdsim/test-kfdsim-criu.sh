#!/bin/sh
# kfdsim slice 2: queues, doorbell/MMIO/event mmaps, events, SET_XNACK_MODE,
# AMDKFD_IOC_CRIU_OP (all five ops, checkpoint on one GPU and restore onto
# the other) and fault injection, case by case against the ABI document
# (tests/kfdsim/tests/kfdsim-criu.c, which prints its own plan). Needs the
# built-in machine (two GPUs) and debugfs (kfdsim/inject, kfdsim/processes).
# vm-timeout: 180
. /test/lib/guest.sh

BIN=/test/bin/kfdsim-criu
if [ ! -x "$BIN" ] || [ ! -f /test/amdgpu_kfdsim.ko ]; then
	ok "kfdsim CRIU_OP test # SKIP $BIN or amdgpu_kfdsim.ko not installed"
	tap_done
	exit
fi
grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
reloaded=
if [ -n "${KFDSIM_PARAMS:-}" ]; then
	# another machine was loaded at boot: this test wants the built-in one
	kfdsim_unload && kfdsim_load_builtin && reloaded=1
fi
"$BIN"
rc=$?
if [ -n "$reloaded" ]; then
	kfdsim_reload || rc=1
fi
exit $rc
