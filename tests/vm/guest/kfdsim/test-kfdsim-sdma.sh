#!/bin/sh
# kfdsim's SDMA engines through libdrm_amdgpu: contexts, CS of SDMA IBs,
# WAIT_CS, HW_IP_INFO/COUNT, illegal packets and VM faults, every injected
# fault, a hung engine that times out, the rate limit
# (tests/kfdsim/tests/kfdsim-sdma.c, which prints its own plan). Needs the
# built-in machine (a gfx9 first GPU) and debugfs (kfdsim/inject).
# vm-timeout: 240
. /test/lib/guest.sh

BIN=/test/bin/kfdsim-sdma
if [ ! -x "$BIN" ] || [ ! -f /test/amdgpu_kfdsim.ko ]; then
	ok "kfdsim SDMA test # SKIP $BIN or amdgpu_kfdsim.ko not installed"
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
# Unloading runs kfdsim_cs_fini(), which WARNs (kernel log check) about
# any context, job or fence still alive; then the machine this boot had.
if kfdsim_unload; then
	echo "ok - SDMA test: kfdsim unloads afterwards"
else
	echo "not ok - SDMA test: kfdsim unloads afterwards"
	rc=1
fi
# HW_IP_COUNT/INFO on the captured machines (MI300X CPX, gfx906/gfx1032/gfx1102)
for m in mi308x workstation; do
	if kfdsim_load "machine=/test/kfdsim/machines/$m.desc"; then
		"$BIN" --hw-ip || rc=1
		kfdsim_unload || rc=1
	else
		echo "not ok - SDMA test: load the $m machine"
		rc=1
	fi
done
if [ -n "$reloaded" ]; then
	kfdsim_load || rc=1
else
	kfdsim_load_builtin || rc=1
fi
exit $rc
