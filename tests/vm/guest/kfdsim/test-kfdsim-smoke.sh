#!/bin/sh
# The simulator is loaded (at boot, with KFDSIM_PARAMS) and shows a KFD:
# /dev/kfd and a topology tree that our topology tool parses.
# A template for kfdsim tests: source the guest lib, print TAP, tap_done.
. /test/lib/guest.sh

if [ ! -f /test/amdgpu_kfdsim.ko ]; then
	ok "kfdsim # SKIP tests/kfdsim is not there yet"
	tap_done
	exit
fi
check "kfdsim module loaded" grep -q '^amdgpu_kfdsim ' /proc/modules
check "/dev/kfd is a character device" test -c /dev/kfd
check "KFD topology in sysfs" test -d /sys/class/kfd/kfd/topology/nodes
if [ -x /usr/bin/amdgpu-criu ]; then
	out=$(amdgpu-criu topology 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	check "amdgpu-criu topology parses the simulated tree" test $rc -eq 0
else
	ok "amdgpu-criu topology # SKIP amdgpu-criu not built"
fi
tap_done
