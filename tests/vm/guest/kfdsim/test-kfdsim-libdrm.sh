#!/bin/sh
# libdrm_amdgpu (the library CRIU's amdgpu plugin uses for its SDMA copies)
# initialises every render node of the loaded machine: DRM_AMDGPU_INFO
# answers agree with the KFD sysfs nodes (tests/kfdsim/tests/kfdsim-libdrm.c).
. /test/lib/guest.sh

BIN=/test/bin/kfdsim-libdrm
if [ ! -x "$BIN" ] || [ ! -f /test/amdgpu_kfdsim.ko ]; then
	ok "kfdsim libdrm_amdgpu test # SKIP $BIN or amdgpu_kfdsim.ko not installed"
	tap_done
	exit
fi
"$BIN"
