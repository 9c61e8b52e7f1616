#!/bin/bash
# Host side of a VM test suite: builds everything the guest needs, boots one
# qemu TCG VM that runs every guest test of the suite, and prints the results
# as one TAP stream for tests/run-suite.sh.
#
#   kfdsim   the simulator suite: tests/vm/guest/{common,kfdsim}/test-*.sh,
#            with tests/kfdsim's module (when it exists) loaded at boot, its
#            guest tests (tests/kfdsim/tests) under /test/kfdsim, /test/bin,
#            and machine descriptions made from the KFD topology captures
#   amdgpu   real-driver smoke: tests/vm/guest/{common,amdgpu}/test-*.sh,
#            with the real amdgpu.ko loaded at boot (no GPU: CPU-only KFD)
#   selftest tests/vm/guest/selftest: broken on purpose, for selftest.sh,
#            which checks that this script reports each breakage
#
# Every guest TAP line is printed renumbered as "ok N - TEST: ...". Added
# failures: a guest test that crashed, timed out or reported fewer results
# than planned; an oops, BUG, WARNING or panic in the kernel log; a VM that
# did not reach the end of the suite (hang: run-vm.sh's time limit).
# Logs, kept for reading: $BUILD/vm-logs/SUITE/
#   console.log   the full serial console (kernel + all test output)
#   results.log   the results channel (markers and TAP only)
#   prepare.log   output of the preparation steps
#   guest/        the 9p share: each test's log, CRIU logs of failed steps
#
# Env: BUILD (build), CRIU (the criu wrapper of scripts/fetch-criu.sh; its
#      root/ is put into the guest), CRIU42 (the criu 4.2.x wrapper of
#      scripts/fetch-criu-testing.sh, default the cache's when there, empty
#      for none: its criu is put into the guest as /usr/sbin/criu-4.2),
#      KFDSIM_PARAMS (module parameters),
#      VM_ONLY ("test-a test-b": run only these guest tests), VM_KFDSIM_SRC
#      (module source dir instead of tests/kfdsim), KFD_FIXTURES (the
#      kfd-topologies captures; default ../shared/kfd-topologies),
#      VM_TIMEOUT (seconds for the whole VM run), VM_TEST_TIMEOUT (default
#      seconds per guest test, 120), VM_LOGS (log dir),
#      VM_FLAVOUR, VM_CACHE.
# usage: vm-suite.sh kfdsim|amdgpu|selftest
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

SUITE=${1:?usage: vm-suite.sh kfdsim|amdgpu|selftest}
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
CRIU_ROOT=$(dirname "${CRIU:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/criu/criu}")/root
CRIU42=${CRIU42-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/criu-4.2/criu}
CRIU42_ROOT=
if [ -n "$CRIU42" ] && [ -x "$(dirname "$CRIU42")/root/usr/sbin/criu" ]; then CRIU42_ROOT=$(dirname "$CRIU42")/root; fi
WORKDIR=$BUILD/vm/$SUITE
KFDSIM_SRC=${VM_KFDSIM_SRC:-$VM_ROOT/tests/kfdsim}
LOGS=${VM_LOGS:-$BUILD/vm-logs/$SUITE}
COMMON_MODS="unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
	9pnet_virtio 9p nf_tables? tun? veth?"

N=0 FAILED=0 STEP="start" DONE=0
ok() { N=$((N + 1)); echo "ok $N - $*"; }
fail() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - $*"; }

# A preparation step that fails (set -e) still ends the TAP stream properly.
finish() {
	local rc=$?
	if [ "$DONE" = 0 ]; then
		fail "$SUITE: $STEP failed (status $rc, see $LOGS/prepare.log)"
		tail -n 15 "$LOGS/prepare.log" 2>/dev/null | sed 's/^/# /'
	fi
	echo "1..$N"
	[ "$FAILED" -eq 0 ] && [ "$rc" -eq 0 ]
}

check_tools() {
	local t v
	for t in qemu-system-x86_64 busybox cpio zstd xz pahole objcopy flock; do
		command -v "$t" >/dev/null || vm_die "$t missing: run scripts/install-deps.sh vm"
	done
	v=$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
	[ "$v" -ge 10 ] || vm_die "qemu $v: need >= 10 (scripts/install-deps.sh vm)"
	[ -x "$CRIU_ROOT/usr/sbin/criu" ] || vm_die "no criu in $CRIU_ROOT: run scripts/fetch-criu.sh"
	[ -f "$BUILD/amdgpu_plugin.so" ] || vm_die "no $BUILD/amdgpu_plugin.so: build it first (make)"
}

# The guest kernel's uapi KFD header (with the DRM headers it includes), so
# probes speak the interface of the kernel they run on. The kernel's own
# headers_install.sh turns them into userspace headers (drops __user etc.).
uapi_includes() { # KROOT DEST
	local common kbuild h
	common=$(ls -d "$1"/usr/src/linux-headers-*-common | head -1)
	kbuild=$(ls -d "$1"/usr/lib/linux-kbuild-* | head -1) # has scripts/unifdef
	for h in linux/kfd_ioctl.h drm/drm.h drm/drm_mode.h; do
		mkdir -p "$(dirname "$2/$h")"
		(cd "$kbuild" && sh "$common/scripts/headers_install.sh" "$common/include/uapi/$h" "$2/$h")
	done
}

build_guest_bins() { # KROOT DEST
	local cflags=(-std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror)
	mkdir -p "$2"
	uapi_includes "$1" "$WORKDIR/include"
	gcc "${cflags[@]}" -o "$2/vmcounter" "$HERE/guest/vmcounter.c"
	gcc "${cflags[@]}" -o "$2/sigdfl" "$HERE/guest/sigdfl.c"
	gcc "${cflags[@]}" -I "$WORKDIR/include" -o "$2/kfdprobe" "$HERE/guest/kfdprobe.c"
}

# The simulator module, tests/kfdsim (or VM_KFDSIM_SRC: a work-in-progress
# copy), when it has a Kbuild file.
# build-kmod.sh rebuilds it whenever the sources differ from the last build's.
build_kfdsim() { # KROOT
	if [ ! -f "$KFDSIM_SRC/Kbuild" ] && [ ! -f "$KFDSIM_SRC/Makefile" ]; then
		rm -rf "$WORKDIR/kmod" # never boot a module of an earlier run
		return 0
	fi
	"$HERE/build-kmod.sh" "$1" "$KFDSIM_SRC" "$WORKDIR/kmod"
}

have_kfdsim_tests() { [ -f "$WORKDIR/kmod/kfdsim.ko" ] && [ -f "$KFDSIM_SRC/tests/guest-kfdsim.sh" ]; }

# Its machine descriptions (mkdesc.sh on the captures), cached in WORKDIR.
make_kfdsim_machines() {
	have_kfdsim_tests || return 0
	"$HERE/kfdsim-machines.sh" "$KFDSIM_SRC/mkdesc.sh" \
		"${KFD_FIXTURES:-$VM_ROOT/../shared/kfd-topologies}" "$WORKDIR/machines"
}

# Its guest tests: /test/kfdsim/{guest-kfdsim.sh,cmp-topology.awk,machines,
# captures.tar} (/init unpacks captures/), /test/bin/kfdsim-abi (built
# against the guest kernel's uapi).
install_kfdsim_tests() { # OVERLAY
	local t=$KFDSIM_SRC/tests
	have_kfdsim_tests || return 0
	mkdir -p "$1/test/kfdsim"
	cp "$t/guest-kfdsim.sh" "$t/cmp-topology.awk" "$1/test/kfdsim/"
	cp -r "$WORKDIR/machines/machines" "$WORKDIR/machines/captures.tar" "$1/test/kfdsim/"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" \
		-o "$1/test/bin/kfdsim-abi" "$t/kfdsim-abi.c"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" -o "$1/test/bin/kfdsim-criu" "$t/kfdsim-criu.c"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I /usr/include/libdrm -o "$1/test/bin/kfdsim-libdrm" "$t/kfdsim-libdrm.c" -ldrm_amdgpu -ldrm
	# ZDTM-style GPU workloads (tests/workloads/gpu: kfdlib + one program each)
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" \
		-o "$1/test/bin/zdtm-gpu-basic" "$VM_ROOT/tests/workloads/gpu/zdtm-gpu-basic.c" "$VM_ROOT/tests/workloads/gpu/kfdlib.c"
}

# The guest tests of this suite, in run order: common first, then the suite's.
guest_tests() {
	local d f n dirs=(common "$SUITE")
	[ "$SUITE" != selftest ] || dirs=(selftest)
	for d in "${dirs[@]}"; do
		for f in "$HERE/guest/$d"/test-*.sh; do
			[ -f "$f" ] || continue
			n=$(basename "$f" .sh)
			if [ -n "${VM_ONLY:-}" ] && ! echo " $VM_ONLY " | grep -q " $n "; then continue; fi
			echo "$f"
		done
	done
}

suite_modules() { # KROOT -> specs for pick-modules.sh
	local ko
	echo "$COMMON_MODS"
	case "$SUITE" in
	amdgpu) echo amdgpu ;;
	kfdsim) for ko in "$WORKDIR"/kmod/*.ko; do [ -f "$ko" ] && echo "$ko"; done ;;
	esac
	return 0
}

make_overlay() { # KROOT KREL OVERLAY
	local ov=$3 f specs
	rm -rf "$ov" && mkdir -p "$ov"/{test/lib,test/vm,test/bin,usr/lib/criu,usr/bin}
	install -m 0755 "$HERE/guest/init" "$ov/init"
	cp "$VM_ROOT/tests/lib/tap.sh" "$ov/test/lib/tap.sh"
	cp "$HERE/guest/lib.sh" "$ov/test/lib/guest.sh"
	: >"$ov/test/vm/order"
	while IFS= read -r f; do
		[ ! -e "$ov/test/vm/${f##*/}" ] || vm_die "two guest tests named ${f##*/}"
		cp "$f" "$ov/test/vm/"
		echo "${f##*/}" >>"$ov/test/vm/order"
	done < <(guest_tests)
	cat >"$ov/test/config" <<-EOC
		SUITE=$SUITE
		KREL=$2
		TEST_TIMEOUT=${VM_TEST_TIMEOUT:-120}
		KFDSIM_PARAMS="${KFDSIM_PARAMS:-}"
	EOC
	for f in "$BUILD"/tests/bin/*; do [ ! -f "$f" ] || cp "$f" "$ov/test/bin/"; done
	build_guest_bins "$1" "$ov/test/bin"
	[ "$SUITE" != kfdsim ] || install_kfdsim_tests "$ov"
	cp "$BUILD/amdgpu_plugin.so" "$ov/usr/lib/criu/"
	[ ! -x "$BUILD/amdgpu-criu" ] || cp "$BUILD/amdgpu-criu" "$ov/usr/bin/"
	for f in "$WORKDIR"/kmod/*.ko; do [ -f "$f" ] && cp "$f" "$ov/test/"; done
	# read, not an unquoted expansion: "name?" specs are no globs
	read -ra specs <<<"$(suite_modules | tr '\n' ' ')"
	"$HERE/pick-modules.sh" "$1/lib/modules/$2" "$ov/test/mods" "${specs[@]}"
}

# step NAME: names the step that runs next (for failures and timings).
step() {
	[ -z "${STEP_T0:-}" ] || echo "# step $STEP: $(vm_since "$STEP_T0") s"
	STEP=$1 STEP_T0=$(vm_now)
}

prepare() {
	local kroot krel
	step "tool check"; check_tools
	step "kernel fetch"; kroot=$("$HERE/fetch-kernel.sh")
	krel=$(basename "$(dirname "$kroot")")
	echo "# $SUITE: kernel $krel"
	if [ "$SUITE" = kfdsim ]; then
		step "kfdsim build"; build_kfdsim "$kroot"
		step "kfdsim machines"; make_kfdsim_machines
	fi
	step "guest files"; make_overlay "$kroot" "$krel" "$WORKDIR/overlay"
	step "initramfs"; "$HERE/build-initramfs.sh" "$WORKDIR/initramfs.cpio.zst" "$CRIU_ROOT" "$WORKDIR/overlay" "$CRIU42_ROOT"
	step "VM run"
	KERNEL=$kroot/boot/vmlinuz-$krel
	KREL=$krel
}

boot() {
	local rc=0
	rm -f "$LOGS/console.log" "$LOGS/results.log"
	rm -rf "$LOGS/guest" && mkdir -p "$LOGS/guest"
	"$HERE/run-vm.sh" "$KERNEL" "$WORKDIR/initramfs.cpio.zst" "$LOGS/console.log" "$LOGS/results.log" \
		"$LOGS/guest" "${VM_TIMEOUT:-$DEFAULT_TIMEOUT}" || rc=$?
	return $rc
}

# Results channel -> TAP. Per guest test: its results, renumbered and named;
# plus a failure when it ended badly without reporting one itself.
report_tests() {
	local line name="" p=0 f=0 plan="" rc desc why
	ENDED=0
	while IFS= read -r line; do
		case "$line" in
		"@@ test "*" begin") name=${line#@@ test }; name=${name% begin}; p=0 f=0 plan="" ;;
		"@@ test "*" end "*)
			rc=$(echo "$line" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
			echo "# $name: $(echo "$line" | sed -n 's/.* secs=\([0-9.]*\).*/\1/p') s"
			if [ "$f" -eq 0 ] && { [ "$rc" != 0 ] || [ "$p" -eq 0 ] || { [ -n "$plan" ] && [ "$p" -lt "$plan" ]; }; }; then
				why="ended with status $rc"
				[ "$rc" != 137 ] || why="ended with status 137 (killed at its time limit)"
				fail "$name: $why after $p of ${plan:-?} results (see $LOGS/guest/$name.log)"
			fi
			name=""
			;;
		"ok "* | "not ok "*)
			desc=$(echo "$line" | sed 's/^\(not \)\{0,1\}ok *[0-9]* *-\{0,1\} *//')
			case "$line" in
			ok*) p=$((p + 1)); ok "$name: $desc" ;;
			*) f=$((f + 1)); fail "$name: $desc" ;;
			esac
			;;
		"1.."*) plan=${line#1..}; plan=${plan%% *} ;;
		"# "*) echo "# $name: ${line#\# }" ;;
		"@@ suite end") ENDED=1 ;;
		esac
	done < <(tr -d '\r' <"$LOGS/results.log" 2>/dev/null)
	[ -z "$name" ] || fail "$name: did not finish: the guest crashed or hung (see $LOGS/console.log)"
}

# Kernel trouble in the console log fails the suite, even when every test
# passed: a WARNING or BUG in a driver is a bug of ours or a real issue. Only
# kernel lines count (they carry a "[seconds]" stamp); test output, which is
# on the console too, may quote such words.
KERNEL_TROUBLE='Kernel panic|Oops|BUG:|WARNING:|general protection fault|Call Trace:|blocked for more than|watchdog: '
report_kernel() {
	local bad
	bad=$(tr -d '\r' <"$LOGS/console.log" 2>/dev/null |
		grep -a -m 5 -E "\[ *[0-9]+\.[0-9]+\] .*($KERNEL_TROUBLE)") || true
	if [ -n "$bad" ]; then
		fail "$SUITE: kernel log clean (see $LOGS/console.log)"
		echo "$bad" | sed 's/^/# /'
	else
		ok "$SUITE: kernel log clean (no oops, BUG, WARNING or panic)"
	fi
}

main() {
	local t0 t1 rc=0
	case "$SUITE" in
	# kfdsim: about 500 s of guest tests on a loaded 2-vCPU machine;
	# below run-suite.sh's 900 s for the whole program (preparation included)
	kfdsim) DEFAULT_TIMEOUT=780 ;;
	amdgpu) DEFAULT_TIMEOUT=420 ;;
	selftest) DEFAULT_TIMEOUT=120 ;;
	*) echo "usage: vm-suite.sh kfdsim|amdgpu|selftest" >&2; exit 2 ;;
	esac
	mkdir -p "$LOGS" "$WORKDIR"
	trap finish EXIT
	t0=$(vm_now)
	prepare >"$LOGS/prepare.log" 2>&1
	t1=$(vm_now)
	boot || rc=$?
	DONE=1
	echo "# $SUITE: kernel $KREL; prepare $(vm_since "$t0" "$t1") s; VM $(vm_since "$t1") s (qemu status $rc)"
	report_tests
	if [ "$rc" = 124 ]; then
		fail "$SUITE: VM finished within ${VM_TIMEOUT:-$DEFAULT_TIMEOUT} s (killed: hung)"
	elif [ "$ENDED" = 1 ]; then
		ok "$SUITE: VM ran the whole suite and powered off"
	else
		fail "$SUITE: VM ran the whole suite (it stopped early: qemu status $rc, see $LOGS/console.log)"
	fi
	report_kernel
}
# One line, read whole before it runs: an edit of this file during a run
# (a shared work tree) cannot make bash read on into changed text.
main "$@"; exit
