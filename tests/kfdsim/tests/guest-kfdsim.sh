#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Guest test of kfdsim (busybox sh, root, in the test VM). Prints TAP.
#
# Expects (see tests/kfdsim/README.md, "VM harness"):
#   $KFDSIM_KO            the module (default /test/amdgpu_kfdsim.ko)
#   $KFDSIM_DIR/machines  NAME.desc made by mkdesc.sh on the host
#   $KFDSIM_DIR/captures  NAME/ the captures they were made from
#   $KFDSIM_DIR/cmp-topology.awk
#   $KFDSIM_BIN/kfdsim-abi
# and the module's dependencies (drm, drm_shmem_helper) loaded.
# Machines: mi308x, mi210, workstation (nodes 0-3 of the rocprofiler capture).
KFDSIM_KO=${KFDSIM_KO:-/test/amdgpu_kfdsim.ko}
KFDSIM_DIR=${KFDSIM_DIR:-/test/kfdsim}
KFDSIM_BIN=${KFDSIM_BIN:-/test/bin}
TOPO=/sys/class/kfd/kfd/topology
N=0 FAILED=0

ok() { N=$((N + 1)); echo "ok $N - $*"; }
fail() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - $*"; }
check() { d=$1; shift; if "$@" >/dev/null 2>&1; then ok "$d"; else fail "$d"; fi; }
diag() { echo "# $*"; }
now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

# waits (10 s at most) for the module to be free: a program that just ended
# may leave it in use for a moment (KFD process release)
unload() {
	grep -q '^amdgpu_kfdsim ' /proc/modules || return 0
	n=100
	while ! rmmod amdgpu_kfdsim 2>/dev/null; do
		n=$((n - 1))
		[ $n -gt 0 ] || { rmmod amdgpu_kfdsim; return; }
		usleep 100000
	done
}
load() { # [machine=...]
	t0=$(now_ms)
	insmod "$KFDSIM_KO" "$@" 2>/tmp/insmod.err
	rc=$?
	LOAD_MS=$(($(now_ms) - t0))
	return $rc
}

# The nested TAP of a C test, renumbered into ours.
run_c() { # NAME CMD...
	name=$1
	shift
	"$@" >/tmp/c.out 2>&1
	rc=$?
	while IFS= read -r l; do
		case "$l" in
		"ok "*) ok "$name: $(echo "$l" | sed 's/^ok [0-9]* - //')" ;;
		"not ok "*) fail "$name: $(echo "$l" | sed 's/^not ok [0-9]* - //')" ;;
		"#"*) echo "$l" ;;
		esac
	done </tmp/c.out
	[ $rc -eq 0 ] || diag "$name exited with $rc"
}

# GPU node minors of the loaded machine
gpu_minors() {
	for n in $TOPO/nodes/*; do
		[ "$(cat $n/gpu_id)" = 0 ] && continue
		awk '$1 == "drm_render_minor" { print $2 }' $n/properties
	done
}

test_machine() { # NAME [NODES(count to compare) [IGNORED_KEYS]]
	m=$1
	desc=$KFDSIM_DIR/machines/$m.desc
	cap=$KFDSIM_DIR/captures/$m
	unload
	if ! load machine="$desc"; then
		fail "$m: insmod machine=$desc: $(cat /tmp/insmod.err)"
		dmesg | tail -5 | sed 's/^/# /'
		return
	fi
	ok "$m: loaded in $LOAD_MS ms"
	nodes=$(ls $TOPO/nodes | wc -l)
	want=$(ls "$cap/nodes" | wc -l)
	[ -n "$2" ] && want=$2
	check "$m: $want nodes" test "$nodes" -eq "$want"
	res=$( (cd "$cap" && find . -type f ! -name used_memory ! -name '*.md' | sed 's|^\./||' |
		awk -v n="$want" '{ split($0, p, "/"); if (p[1] != "nodes" || p[2] < n) print }' |
		awk -v cap="$cap" -v live="$TOPO" -v ignore="${3:-}" -f "$KFDSIM_DIR/cmp-topology.awk") )
	echo "$res" | grep '^#'
	last=$(echo "$res" | tail -1)
	check "$m: sysfs identical to the capture ($last)" test "${last##* }" = 0
	# the keys 6.12 adds, at their 6.12 place
	g=$(for n in $TOPO/nodes/*; do [ "$(cat $n/gpu_id)" != 0 ] && echo $n && break; done)
	check "$m: GPU node shows num_cp_queues, cwsr_size, ctl_stack_size, max_engine_clk_fcompute in order" \
		sh -c "awk '{print \$1}' $g/properties | grep -A3 '^num_cp_queues\$' | tr '\n' ' ' | grep -q 'num_cp_queues cwsr_size ctl_stack_size max_engine_clk_fcompute'"
	bad=""
	for mi in $(gpu_minors); do
		[ -c /dev/dri/renderD$mi ] && [ "$(cat /sys/class/drm/renderD$mi/dev)" = "226:$mi" ] || bad="$bad $mi"
	done
	check "$m: /dev/dri/renderD<drm_render_minor> for every GPU (bad:${bad:- none})" test -z "$bad"
}

[ -f "$KFDSIM_KO" ] || { echo "1..0 # SKIP no $KFDSIM_KO"; exit 0; }

# --- the built-in machine: ABI cases ---
unload
check "insmod without parameters (built-in machine)" load
diag "insmod: $LOAD_MS ms"
check "/sys/class/kfd/kfd/topology/generation_id is 3" test "$(cat $TOPO/generation_id)" = 3
check "renderD128 and renderD129" test -c /dev/dri/renderD128 -a -c /dev/dri/renderD129
run_c abi "$KFDSIM_BIN/kfdsim-abi"

# --- visibility through the device cgroup (v1 devices controller) ---
cg=/tmp/cg-devices
mkdir -p $cg
if mount -t cgroup -o devices devices $cg 2>/dev/null; then
	mkdir -p $cg/deny129
	echo 'c 226:129 rwm' >$cg/deny129/devices.deny
	out=$(sh -c "echo \$\$ >$cg/deny129/tasks; cat $TOPO/nodes/2/gpu_id 2>&1; cat $TOPO/nodes/2/properties >/dev/null 2>&1 && echo props-readable; cat $TOPO/nodes/2/io_links/0/properties >/dev/null 2>&1 && echo link-readable; cat $TOPO/nodes/1/gpu_id; $KFDSIM_BIN/kfdsim-abi --pdds")
	echo "$out" | sed 's/^/#   /'
	check "hidden GPU: gpu_id read fails (EPERM)" sh -c "echo '$out' | grep -q 'Operation not permitted'"
	check "hidden GPU: properties and links unreadable" sh -c "! echo '$out' | grep -q readable"
	check "visible GPU: gpu_id readable" sh -c "echo '$out' | grep -qx 51342"
	check "a process in that cgroup gets one pdd" sh -c "echo '$out' | grep -qx 'pdds 1 51342'"
	umount $cg
else
	ok "device cgroup # SKIP no cgroup v1 devices controller"
fi

# --- real captures: reload as another machine ---
test_machine mi308x
test_machine mi210
test_machine workstation 4 drm_render_minor
unload
load machine="$KFDSIM_DIR/machines/mi308x.desc"
check "mi308x: renderD132..135 are placeholders (no GPU node, DRM device present)" \
	sh -c "! gpu_minors | grep -qx 132 && test -c /dev/dri/renderD132 -a -c /dev/dri/renderD135"
run_c abi-mi308x "$KFDSIM_BIN/kfdsim-abi"

# --- strict description parsing ---
unload
good=$KFDSIM_DIR/machines/mi210.desc
bad=/tmp/bad.desc
try_bad() { # NAME SED-EXPR
	sed "$2" "$good" >$bad
	if load machine=$bad; then
		fail "rejects $1"
		unload
	else
		ok "rejects $1: $(dmesg | grep kfdsim | tail -1 | sed 's/^\[[^]]*\] //')"
	fi
}
try_bad "a truncated description" '/^end$/d'
try_bad "an unknown key" 's/ simd_count=/ simd_kount=/'
try_bad "a repeated key" 's/ simd_count=\([0-9]*\)/ simd_count=\1 simd_count=\1/'
try_bad "a bad number" 's/ device_id=[0-9]*/ device_id=12x/'
try_bad "a duplicate gpu_id" 's/^node \([23]\) gpu_id=[0-9]*/node \1 gpu_id=4242/'
try_bad "nodes out of order" 's/^node 3 /node 7 /'
try_bad "a link to a missing node" 's/node_to=1 /node_to=99 /'
try_bad "a sibling_map that is not a multiple of 8" 's/sibling_map=1,0,0,0,0,0,0,0$/sibling_map=1,0,0/'
check "loads again after the rejections" load
# a process whose mm still has a KFD process but no file: unload tears it down
"$KFDSIM_BIN/kfdsim-abi" --open-close-sleep >/tmp/holder.out &
holder=$!
n=100
while ! grep -q . /tmp/holder.out && [ $n -gt 0 ]; do usleep 100000; n=$((n - 1)); done
check "a process opened and closed /dev/kfd ($(cat /tmp/holder.out))" grep -qx closed /tmp/holder.out
check "rmmod with a live KFD process that has no file open" rmmod amdgpu_kfdsim
kill $holder
wait $holder 2>/dev/null
check "reload, and rmmod again" sh -c "insmod $KFDSIM_KO && rmmod amdgpu_kfdsim"
check "nothing left: no /dev/kfd, no render nodes" sh -c "! test -e /dev/kfd && ! ls /dev/dri/renderD* 2>/dev/null | grep -q ."
load
echo "1..$N"
[ $FAILED -eq 0 ]
