#!/bin/sh
# The simulator's own guest test (tests/kfdsim/tests/guest-kfdsim.sh, with
# its plan): the ABI cases on the built-in machine and on MI308X, sysfs
# against the captures, device-cgroup visibility, description parsing,
# unload. It reloads the module many times and leaves the built-in machine;
# afterwards the module is loaded again as at boot (KFDSIM_PARAMS), which the
# tests that follow expect (/init checks it).
# vm-timeout: 240
. /test/lib/guest.sh

if [ ! -f /test/kfdsim/guest-kfdsim.sh ]; then
	ok "kfdsim guest test # SKIP not installed (no module or no tests/kfdsim/tests)"
	tap_done
	exit
fi
sh /test/kfdsim/guest-kfdsim.sh
rc=$?
if [ -n "${KFDSIM_PARAMS:-}" ] && ! kfdsim_reload; then
	diag "reloading kfdsim with KFDSIM_PARAMS ($KFDSIM_PARAMS) failed"
	rc=1
fi
exit $rc
