#!/bin/bash
# `make demo`: the main job on the embedded default machine. One qemu VM
# boots with kfdsim simulating a two-socket node with 8 MI210 GPUs in two
# xGMI hives (a real capture from ../shared/kfd-topologies). A ZDTM-style
# GPU workload runs on hive A (inside a device cgroup that shows it hive A
# only), fills VRAM/GTT/userptr BOs, queues and events, and is dumped with
# CRIU and our plugin. The cgroup is switched to hive B and the process is
# restored there: other gpu_ids, other render minors. The restored workload
# then re-checks every byte, its gpu_ids, mappings, doorbells and render
# fds. The guest test is tests/vm/guest/kfdsim/test-cr-remap.sh; this
# script prints its story: the mapping the plugin chose, sizes and times.
#
# usage: demo.sh   (from the repository root, after `make` built everything)
set -euo pipefail
BUILD=${BUILD:-build}
export VM_ONLY=test-cr-remap VM_LOGS=$BUILD/vm-logs/demo

echo "== booting a VM: kfdsim as 8 x MI210 in two xGMI hives (qemu TCG; ~20 s once cached, the first run downloads a kernel)"
set +e
tests/vm/vm-suite.sh kfdsim >"$BUILD/demo.out" 2>&1
rc=$?
set -e
# the guest test's own lines, without the harness's prefixes
# The guest test's own lines, without the harness's prefixes and numbers;
# "plugin, dump:" / "plugin, restore:" lines are the plugin's log (CRIU's
# dump.log/restore.log): the GPU mapping it chose, sizes and times.
sed -n 's/^\(\[vm[^]]*\] \)\{0,1\}//; /test-cr-remap: /{s/^ok [0-9]* - test-cr-remap: /ok - /; s/^not ok [0-9]* - test-cr-remap: /NOT OK - /; s/^# test-cr-remap: \([0-9.]* s\)$/  (guest test time: \1)/; s/^# test-cr-remap: /  /; p}' \
	"$BUILD/demo.out"
echo "== $(grep -c '^\(\[vm[^]]*\] \)\{0,1\}ok ' "$BUILD/demo.out") checks passed, $(grep -c '^\(\[vm[^]]*\] \)\{0,1\}not ok ' "$BUILD/demo.out") failed (harness checks included)"
if [ $rc -eq 0 ] && ! grep -q 'ok [0-9]* - test-cr-remap: .*restore' "$BUILD/demo.out"; then
	echo "demo: the guest test test-cr-remap did not run a restore (missing or skipped)" >&2
	rc=1
fi
if [ $rc -ne 0 ]; then
	echo "demo FAILED (status $rc): full output in $BUILD/demo.out, logs in $VM_LOGS" >&2
	exit $rc
fi
echo "== done: the workload moved from hive A to hive B and verified itself (logs: $VM_LOGS)"
