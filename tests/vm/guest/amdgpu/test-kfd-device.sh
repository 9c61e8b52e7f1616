#!/bin/sh
# The real amdgpu KFD without a GPU: a /dev/kfd that answers GET_VERSION with
# 1.x (x >= 17, the CRIU interface), no GPU node for this process, and a
# topology of exactly one CPU node (gpu_id 0), which our tool parses.
. /test/lib/guest.sh
TOPO=/sys/class/kfd/kfd/topology

check "amdgpu loaded" grep -q '^amdgpu ' /proc/modules
check "/dev/kfd is a character device" test -c /dev/kfd

out=$(/test/bin/kfdprobe)
rc=$?
echo "$out" | sed 's/^/# kfdprobe: /'
check "kfdprobe ran" test $rc -eq 0
ver=$(echo "$out" | sed -n 's/^version //p')
major=${ver%%.*} minor=${ver#*.}
check "KFD interface 1.x with x >= 17 (got ${ver:-nothing})" test "${major:-0}" -eq 1 -a "${minor:-0}" -ge 17
check "no GPU node for this process" test "$(echo "$out" | sed -n 's/^gpu_nodes //p')" = 0

check "topology has exactly one node" test "$(ls $TOPO/nodes | wc -l)" -eq 1
check "node 0 is a CPU node (gpu_id 0)" test "$(cat $TOPO/nodes/0/gpu_id 2>/dev/null)" = 0
cores=$(sed -n 's/^cpu_cores_count //p' $TOPO/nodes/0/properties 2>/dev/null)
check "node 0 has CPU cores ($cores) and no SIMDs" test "${cores:-0}" -gt 0 -a \
	"$(sed -n 's/^simd_count //p' $TOPO/nodes/0/properties)" = 0
if [ -x /usr/bin/amdgpu-criu ]; then
	out=$(amdgpu-criu topology --sysfs $TOPO 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# amdgpu-criu: /'
	check "amdgpu-criu topology parses the real tree" test $rc -eq 0
else
	ok "amdgpu-criu topology # SKIP amdgpu-criu not built"
fi
tap_done
