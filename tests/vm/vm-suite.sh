#!/bin/bash
# Host side of a VM test suite: builds everything the guest needs, boots a
# qemu TCG VM that runs the guest tests of one boot of the suite, and prints
# the results as one TAP stream for tests/run-suite.sh.
#
# Boots: a guest test names its boot with a line "# vm-boot: NAME" (none:
# "main"); `vm-suite.sh SUITE BOOT` runs the tests of that boot only, so that
# no boot's work grows without bound (tests/vm/test-kfdsim-BOOT.sh, one host
# program per boot); without BOOT, all tests of the suite run in one boot.
# VM_ONLY="test-a test-b" runs only those (a boot none of them belongs to
# SKIPs without booting). Limits: each guest test has its own ("# vm-timeout: SECONDS",
# default 120, times VM_TIMEOUT_SCALE), enforced in the guest: a test past
# it is killed and fails alone, by name, and the next test runs. The host
# kills a VM that makes no progress for VM_STALL_TIMEOUT s (run-vm.sh: no
# console output and no heartbeat) and, as a backstop only, one that runs
# longer than the sum of its tests' limits plus boot time (VM_TIMEOUT
# overrides). A guest that died in a test (panic, stall) is booted again for
# the tests after that one (twice at most). A test that needs a block
# device names its size ("# vm-disk: MiB"): the boot gets a fresh ext4
# image as /dev/vda (virtio-blk), which the guest's vm_disk mounts.
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
#      ROCM_TESTING (scripts/fetch-rocm-testing.sh's DEST, default the
#      cache's: Debian testing's ROCm for test-rocm-testing),
#      IMAGE_STREAMER (criu-image-streamer, make image-streamer; put into
#      the guest as /test/bin/criu-image-streamer for test-cr-stream),
#      KFDSIM_PARAMS (module parameters), BENCH_MIB (the bench's BO size),
#      VM_ONLY ("test-a test-b": run only these guest tests), VM_KFDSIM_SRC
#      (module source dir instead of tests/kfdsim), KFD_FIXTURES (the
#      kfd-topologies captures; default tests/fixtures/kfd-topologies),
#      VM_TIMEOUT (seconds for the whole VM run), VM_TEST_TIMEOUT (default
#      seconds per guest test, 120), VM_LOGS (log dir),
#      VM_FLAVOUR, VM_CACHE.
# usage: vm-suite.sh kfdsim|amdgpu|selftest [BOOT]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

SUITE=${1:?usage: vm-suite.sh kfdsim|amdgpu|selftest [BOOT]}
BOOT=${2:-}
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
CRIU_ROOT=$(dirname "${CRIU:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/criu/criu}")/root
CRIU42=${CRIU42-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/criu-4.2/criu}
CRIU42_ROOT=
RUNTIMES_ROOT=${RUNTIMES_ROOT:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/runtimes/root}
PODMAN_ROOT=${PODMAN_ROOT:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/podman/root} # boot "podman" (install_podman)
CRI_ROOT=${CRI_ROOT:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/cri/root} # boot "cri" (install_cri)
ZDTM_DIR=${ZDTM_DIR:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/zdtm} # boot "zdtm" (install_zdtm)
# Debian testing's ROCm (scripts/fetch-rocm-testing.sh; install_rocm_testing)
ROCM_TESTING=${ROCM_TESTING:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/rocm-testing}
# and its HIP runtime (scripts/fetch-hip-testing.sh; install_hip_testing, left out with VM_HIP=0)
HIP_TESTING=${HIP_TESTING:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/hip-testing}
# trixie's python3 for rocm-smi (scripts/fetch-python.sh; install_rocm_smi, left out with VM_SMI=0)
PYTHON_ROOT=${PYTHON_ROOT:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/python/root}
if [ -n "$CRIU42" ] && [ -x "$(dirname "$CRIU42")/root/usr/sbin/criu" ]; then CRIU42_ROOT=$(dirname "$CRIU42")/root; fi
WORKDIR=$BUILD/vm/$SUITE
KFDSIM_SRC=${VM_KFDSIM_SRC:-$VM_ROOT/tests/kfdsim}
LOGS=${VM_LOGS:-$BUILD/vm-logs/$SUITE${BOOT:+-$BOOT}}
# the guest files of this boot (WORKDIR keeps what all boots share: the
# module build, the machine descriptions)
OVERLAY=$WORKDIR/overlay${BOOT:+-$BOOT}
INITRAMFS=$WORKDIR/initramfs${BOOT:+-$BOOT}.cpio.zst
TNAME=$SUITE${BOOT:+-$BOOT} # names this run in its result lines
COMMON_MODS="unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
	9pnet_virtio 9p nf_tables? tun? veth?"

N=0 FAILED=0 STEP="start" DONE=0
ok() { N=$((N + 1)); echo "ok $N - $*"; }
fail() { N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - $*"; }

# A preparation step that fails (set -e) still ends the TAP stream properly.
finish() {
	local rc=$?
	if [ "$DONE" = 0 ]; then
		fail "$TNAME: $STEP failed (status $rc, see $LOGS/prepare.log)"
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
	gcc "${cflags[@]}" -o "$2/filebench" "$HERE/guest/filebench.c"
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
	# the same module under the real driver's name (/test/kfdsim/amdgpu.ko:
	# test-rocm-testing); a module source without that Kbuild knob builds
	# amdgpu_kfdsim.ko there, which is not taken
	"$HERE/build-kmod.sh" "$1" "$KFDSIM_SRC" "$WORKDIR/kmod-amdgpu" KFDSIM_MODNAME=amdgpu
}

have_kfdsim_tests() { [ -f "$WORKDIR/kmod/amdgpu_kfdsim.ko" ] && [ -f "$KFDSIM_SRC/tests/guest-kfdsim.sh" ]; }

# Its machine descriptions (mkdesc.sh on the captures), cached in WORKDIR.
make_kfdsim_machines() {
	have_kfdsim_tests || return 0
	"$HERE/kfdsim-machines.sh" "$KFDSIM_SRC/mkdesc.sh" \
		"${KFD_FIXTURES:-$VM_ROOT/tests/fixtures/kfd-topologies}" "$WORKDIR/machines"
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
	[ ! -f "$WORKDIR/kmod-amdgpu/amdgpu.ko" ] || cp "$WORKDIR/kmod-amdgpu/amdgpu.ko" "$1/test/kfdsim/"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" \
		-o "$1/test/bin/kfdsim-abi" "$t/kfdsim-abi.c"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" -o "$1/test/bin/kfdsim-criu" "$t/kfdsim-criu.c"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I /usr/include/libdrm -o "$1/test/bin/kfdsim-libdrm" "$t/kfdsim-libdrm.c" -ldrm_amdgpu -ldrm
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I /usr/include/libdrm -o "$1/test/bin/kfdsim-sdma" "$t/kfdsim-sdma.c" -ldrm_amdgpu -ldrm
	# ZDTM-style GPU workloads (tests/workloads/gpu: kfdlib + one program each)
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" \
		-o "$1/test/bin/zdtm-gpu-basic" "$VM_ROOT/tests/workloads/gpu/zdtm-gpu-basic.c" "$VM_ROOT/tests/workloads/gpu/kfdlib.c"
	# kfdlib's kernel uapi headers first; gemlib.c finds libdrm's own drm.h beside amdgpu.h
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" -I /usr/include/libdrm \
		-o "$1/test/bin/zdtm-gpu-gem" "$VM_ROOT/tests/workloads/gpu/zdtm-gpu-gem.c" \
		"$VM_ROOT/tests/workloads/gpu/kfdlib.c" "$VM_ROOT/tests/workloads/gpu/gemlib.c" \
		"$VM_ROOT/tests/workloads/gpu/zdtm_util.c" -ldrm_amdgpu -ldrm
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$WORKDIR/include" -I /usr/include/libdrm \
		-o "$1/test/bin/zdtm-gpu-share" "$VM_ROOT/tests/workloads/gpu/zdtm-gpu-share.c" \
		"$VM_ROOT/tests/workloads/gpu/kfdlib.c" "$VM_ROOT/tests/workloads/gpu/gemlib.c" \
		"$VM_ROOT/tests/workloads/gpu/zdtm_util.c" -ldrm_amdgpu -ldrm
}

# Debian's ROCm userspace (tests/workloads/rocm/README.md): rocminfo as the
# host has it and our programs built against Debian's libhsakmt and ROCr
# headers; build-initramfs.sh brings their libraries from the host.
install_rocm() { # OVERLAY
	local w=$VM_ROOT/tests/workloads/rocm
	[ -x /usr/bin/rocminfo ] && [ -f /usr/include/hsakmt.h ] && [ -f /usr/include/hsa/hsa.h ] ||
		vm_die "Debian's ROCm userspace missing: run scripts/install-deps.sh vm"
	cp /usr/bin/rocminfo "$1/usr/bin/"
	# libdrm names GPUs from it (libdrm-common)
	mkdir -p "$1/usr/share/libdrm" && cp /usr/share/libdrm/amdgpu.ids "$1/usr/share/libdrm/"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$1/test/bin/rocm-hsakmt" \
		"$w/rocm-hsakmt.c" "$w/rocm_common.c" -lhsakmt
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$1/test/bin/rocm-hsa" \
		"$w/rocm-hsa.c" "$w/rocm_common.c" -lhsa-runtime64
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$1/test/bin/rocm-ipc" \
		"$w/rocm-ipc.c" -lhsa-runtime64
	# test-rocm-ipc traces ROCr's KFD ioctls with it when the host has it
	[ ! -x /usr/bin/strace ] || cp /usr/bin/strace "$1/usr/bin/"
}

# Debian testing's ROCm next to bookworm's (guest/kfdsim/test-rocm-testing.sh):
# rocminfo 7.x and ROCr 6.4 (libhsakmt built in) with the libraries they
# load from testing (ROCM_TESTING/closure: libdrm, libstdc++, ...), kept
# under /usr/lib/rocm-testing so that bookworm's ROCm 5.2.3 keeps its own;
# the guest's glibc serves both. Nothing is put there when the cache lacks
# it: the test SKIPs, saying how to fetch it.
install_rocm_testing() { # OVERLAY
	local r=$ROCM_TESTING/root d=$1/usr/lib/rocm-testing so
	[ -f "$ROCM_TESTING/closure" ] || { vm_log "no Debian testing ROCm in $ROCM_TESTING (make vm-deps)"; return 0; }
	mkdir -p "$d/bin" "$d/lib"
	cp "$r/usr/bin/rocminfo" "$d/bin/"
	while read -r so; do cp -L "$r/usr/lib/x86_64-linux-gnu/$so" "$d/lib/"; done <"$ROCM_TESTING/closure"
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$r/usr/include" -o "$d/bin/rocm-hsa-basic" \
		"$VM_ROOT/tests/workloads/rocm/rocm-hsa-basic.c" -L"$r/usr/lib/x86_64-linux-gnu" -lhsa-runtime64 \
		-Wl,-rpath-link,"$r/usr/lib/x86_64-linux-gnu" -Wl,--allow-shlib-undefined
	# the checkpointed workload of test-rocm-hsa built against ROCr 6.4; an
	# RPATH (not RUNPATH) so that ROCr's own libraries come from testing too,
	# without an LD_LIBRARY_PATH that a restored process would not need
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$r/usr/include" -o "$d/bin/rocm-hsa" \
		"$VM_ROOT/tests/workloads/rocm/rocm-hsa.c" "$VM_ROOT/tests/workloads/rocm/rocm_common.c" \
		-L"$r/usr/lib/x86_64-linux-gnu" -lhsa-runtime64 -Wl,--disable-new-dtags,-rpath,/usr/lib/rocm-testing/lib \
		-Wl,-rpath-link,"$r/usr/lib/x86_64-linux-gnu" -Wl,--allow-shlib-undefined
	# kfdsim's model of ROCclr's blit kernels, through ROCr 6.4 alone (test-rocm-blit)
	gcc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$r/usr/include" -o "$d/bin/rocm-hsa-blit" \
		"$VM_ROOT/tests/workloads/rocm/rocm-hsa-blit.c" \
		-L"$r/usr/lib/x86_64-linux-gnu" -lhsa-runtime64 -Wl,--disable-new-dtags,-rpath,/usr/lib/rocm-testing/lib \
		-Wl,-rpath-link,"$r/usr/lib/x86_64-linux-gnu" -Wl,--allow-shlib-undefined
	! grep -q '^test-rocm-smi' "$1/test/vm/order" || install_rocm_smi "$1"
}

# Debian testing's rocm-smi 6.4 (guest/kfdsim/test-rocm-smi.sh), unmodified:
# its python files in ROCM_TESTING's layout under /usr/lib/rocm-testing
# (libexec/rocm_smi; the program finds librocm_smi64.so.1 in
# ../../lib/x86_64-linux-gnu of its own path, here a link to lib), run by
# trixie's python3 (scripts/fetch-python.sh, PYTHON_ROOT: the interpreter,
# its standard library and the libraries its modules load, about 35 MB
# unpacked), whatever python the host has. VM_SMI=0 leaves both out (the
# test SKIPs). Nothing is put there when the cache lacks them (make vm-deps
# warned): the test SKIPs, naming the fix.
install_rocm_smi() { # OVERLAY
	local r=$ROCM_TESTING/root d=$1/usr/lib/rocm-testing
	[ "${VM_SMI:-1}" = 1 ] || return 0
	[ -f "$r/usr/libexec/rocm_smi/rocm_smi.py" ] || { vm_log "no rocm-smi in $ROCM_TESTING (make vm-deps)"; return 0; }
	[ -x "$PYTHON_ROOT/usr/bin/python3" ] || { vm_log "no python3 in $PYTHON_ROOT (make vm-deps: scripts/fetch-python.sh)"; return 0; }
	mkdir -p "$d/libexec" "$1/usr"
	cp -a "$r/usr/libexec/rocm_smi" "$d/libexec/"
	ln -sfn ../libexec/rocm_smi/rocm_smi.py "$d/bin/rocm-smi"
	ln -sfn . "$d/lib/x86_64-linux-gnu"
	cp -a "$PYTHON_ROOT/usr" "$1/"
	# rocm_smi.py starts with "#!/usr/bin/env python3": busybox's env
	[ -e "$1/usr/bin/env" ] || ln -s /bin/busybox "$1/usr/bin/env"
}

# Debian testing's HIP 6.4 (guest/kfdsim/test-rocm-hip*.sh) beside ROCr 6.4:
# libamdhip64, comgr and its LLVM (about 150 MB more initramfs; VM_HIP=0
# leaves it out and the tests SKIP); rocm-hip-basic, rocm-hip and
# rocm-hip-ipc built with gcc against HIP's headers.
install_hip_testing() { # OVERLAY
	local h=$HIP_TESTING/root d=$1/usr/lib/rocm-testing so
	[ "${VM_HIP:-1}" = 1 ] || return 0
	[ -f "$HIP_TESTING/closure" ] || { vm_log "no Debian testing HIP in $HIP_TESTING (make vm-deps: scripts/fetch-hip-testing.sh)"; return 0; }
	mkdir -p "$d/bin" "$d/lib"
	while read -r so; do cp -L "$h/usr/lib/x86_64-linux-gnu/$so" "$d/lib/"; done <"$HIP_TESTING/closure"
	hip_build "$d/bin/rocm-hip-basic" rocm-hip-basic.c
	hip_build "$d/bin/rocm-hip" rocm-hip.c rocm_common.c
	hip_build "$d/bin/rocm-hip-ipc" rocm-hip-ipc.c rocm_common.c
}

# a HIP program of tests/workloads/rocm (SRC...) built with gcc against
# HIP's and ROCr's headers; an RPATH to /usr/lib/rocm-testing/lib (ROCr's
# own libraries come from testing too, without an LD_LIBRARY_PATH)
hip_build() { # OUT SRC...
	local out=$1 h=$HIP_TESTING/root r=$ROCM_TESTING/root f src=()
	shift
	for f in "$@"; do src+=("$VM_ROOT/tests/workloads/rocm/$f"); done
	gcc -std=gnu11 -D_GNU_SOURCE -D__HIP_PLATFORM_AMD__ -O2 -Wall -Wextra -Werror -I"$h/usr/include" \
		-I"$r/usr/include" -o "$out" "${src[@]}" \
		-L"$h/usr/lib/x86_64-linux-gnu" -lamdhip64 -Wl,--disable-new-dtags,-rpath,/usr/lib/rocm-testing/lib \
		-Wl,-rpath-link,"$h/usr/lib/x86_64-linux-gnu:$r/usr/lib/x86_64-linux-gnu" -Wl,--allow-shlib-undefined
}

# Container tests (guest/kfdsim/test-ct-*.sh): trixie's runc, crun, GNU tar
# and dpkg (scripts/fetch-runtimes.sh, RUNTIMES_ROOT), and `make deb`'s
# package in /test/deb, which the tests install with dpkg: the plugin and the
# tool are not copied in. The guest's dpkg database lists what the guest
# has: trixie's packages (criu's closure and the runtimes') and, for the
# libraries the initramfs takes from this host (libdrm, ISA-L, ...), this
# host's packages (without their own Depends: the guest holds their files,
# not every package they name; the package's Depends are what dpkg checks).
# The guest's / moves to a tmpfs at boot (ROOT_TMPFS).
install_containers() { # OVERLAY
	local ov=$1 deb pkg
	[ -x "$RUNTIMES_ROOT/usr/sbin/runc" ] || vm_die "no runc in $RUNTIMES_ROOT: run make vm-deps (scripts/fetch-runtimes.sh)"
	rm -rf "$ov/usr/lib/criu" "$ov/usr/bin/amdgpu-criu" "$WORKDIR/deb" "$WORKDIR/deb-root"
	deb=$("$VM_ROOT/scripts/build-deb.sh" "$BUILD" "$WORKDIR/deb")
	mkdir -p "$ov/test/deb" "$ov/var/lib/dpkg/info" "$ov/var/lib/dpkg/updates" "$ov/var/lib/dpkg/triggers"
	cp "$deb" "$ov/test/deb/"
	dpkg-deb -x "$deb" "$WORKDIR/deb-root"
	{
		for pkg in "$(dirname "$CRIU_ROOT")"/debs/*.deb; do
			dpkg-deb -f "$pkg" Package Version Architecture Multi-Arch Provides Maintainer Description
			echo "Status: install ok installed"
			echo
		done
		awk 'NF == 0 { print "Status: install ok installed" } { print }' "$RUNTIMES_ROOT/.status-runtimes"
		for pkg in $(dpkg-deb -f "$deb" Depends | tr ',' '
' | sed 's/^ *//; s/[ (].*//' | grep .); do
			grep -q "^Package: $pkg\$" "$RUNTIMES_ROOT/.status-runtimes" && continue
			ls "$(dirname "$CRIU_ROOT")"/debs/"${pkg}"_*.deb >/dev/null 2>&1 && continue
			dpkg-query -W -f='Package: ${Package}\nVersion: ${Version}\nArchitecture: ${Architecture}\nMulti-Arch: ${Multi-Arch}\nMaintainer: ${Maintainer}\nDescription: ${binary:Summary}\nStatus: install ok installed\n\n' "$pkg"
		done
	} | grep -v '^[A-Za-z-]*: *$' >"$ov/var/lib/dpkg/status"
	: >"$ov/var/lib/dpkg/available"
	echo "ROOT_TMPFS=1" >>"$ov/test/config"
	LIBS_FOR=$WORKDIR/deb-root
}

# --- podman hook (boot "podman", guest/kfdsim/test-ct-podman.sh) ---
# Trixie's podman, conmon, containers-common, netavark, iproute2 (CRIU's `ip`)
# (scripts/fetch-podman.sh, PODMAN_ROOT; build-initramfs.sh copies it over
# the runtimes), configured as a rootful podman without systemd: cgroupfs,
# file events, vfs storage on the guest's tmpfs root, runc by default (the
# test also runs --runtime crun). Needs install_containers (runc, crun,
# criu, GNU tar, dpkg, the package).
install_podman() { # OVERLAY
	local ov=$1
	[ -x "$PODMAN_ROOT/usr/bin/podman" ] || vm_die "no podman in $PODMAN_ROOT: run make vm-deps (scripts/fetch-podman.sh)"
	mkdir -p "$ov/etc/containers" "$ov/var/lib/containers/storage" "$ov/var/tmp"
	printf '[storage]\ndriver = "vfs"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
		>"$ov/etc/containers/storage.conf"
	printf '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "runc"\n[containers]\nlog_driver = "k8s-file"\n' \
		>"$ov/etc/containers/containers.conf"
	awk 'NF == 0 { print "Status: install ok installed" } { print }' "$PODMAN_ROOT/.status-podman" >>"$ov/var/lib/dpkg/status"
	# --network none gives the container a network namespace; runc dumps it
	# as an empty one, and CRIU still dumps its conntrack table over
	# nfnetlink (EINVAL without this module)
	COMMON_MODS="$COMMON_MODS nf_conntrack_netlink"
}
# --- end of the podman hook ---

# --- zdtm hook (boot "zdtm", guest/kfdsim/test-zdtm.sh) ---
# CRIU's own test runner, test/zdtm.py of CRIU's source of the guest's
# criu version, with the GPU tests of tests/zdtm as test/zdtm/gpu/
# (scripts/zdtm-tree.sh, built here against the guest kernel's uapi) and
# the plugin as plugins/amdgpu/amdgpu_plugin.so (--criu-plugin amdgpu), in
# /test/criu; trixie's python3, python3-yaml, python3-protobuf,
# python3-pycriu, make, bash and ldd (scripts/fetch-zdtm.sh, ZDTM_DIR;
# build-initramfs.sh copies its root over /usr). The source tree's
# test/pycriu (a link to lib/pycriu, whose protobuf modules only CRIU's
# build makes) goes: python3-pycriu's is the same version. The tests'
# sources go too (the guest has no compiler). IMAGE_STREAMER,
# when given, else the stand-in tests/workloads/imgstream.c, as
# test/criu/criu-image-streamer/criu-image-streamer (zdtm.py --stream). / is a
# tmpfs (ROOT_TMPFS): the ns flavour's restore pivot_root()s. Nothing is
# put there when the cache lacks them (make vm-deps warned): the test SKIPs.
install_zdtm() { # OVERLAY
	local ov=$1 src tree=$WORKDIR/zdtm-tree
	src=$(ls -d "$ZDTM_DIR"/criu-*/ 2>/dev/null | head -1)
	[ -n "$src" ] && [ -x "$ZDTM_DIR/root/usr/bin/python3" ] || {
		vm_log "no CRIU source or python3 in $ZDTM_DIR (make vm-deps: scripts/fetch-zdtm.sh): the zdtm tests SKIP"
		return 0
	}
	rm -rf "$tree" && mkdir -p "$tree"
	cp -a "$src" "$tree/criu"
	"$VM_ROOT/scripts/zdtm-tree.sh" "$tree/criu" "$BUILD/amdgpu_plugin.so" "$WORKDIR/include"
	mkdir -p "$ov/test/criu/plugins" "$ov/bin"
	cp -a "$tree/criu/test" "$ov/test/criu/"
	cp -a "$tree/criu/plugins/amdgpu" "$ov/test/criu/plugins/"
	rm -f "$ov/test/criu/test/pycriu"
	# the guest has no compiler: the built tests without their sources and
	# make's dependency files (which name this host's headers)
	rm -f "$ov"/test/criu/test/zdtm/gpu/*.[cho] "$ov"/test/criu/test/zdtm/gpu/*.d
	mkdir -p "$ov/test/criu/criu-image-streamer"
	if [ -x "${IMAGE_STREAMER:-}" ]; then
		cp "$IMAGE_STREAMER" "$ov/test/criu/criu-image-streamer/criu-image-streamer"
	else
		cp "$BUILD/tests/bin/imgstream" "$ov/test/criu/criu-image-streamer/criu-image-streamer"
	fi
	ln -s /usr/bin/bash "$ov/bin/bash" # ldd's interpreter
	mkdir -p "$ov/usr/bin"
	ln -s /bin/busybox "$ov/usr/bin/env" # zdtm.py's "#!/usr/bin/env python3" (zdtm_ct execs it)
	# zdtm_ct, which runs each test's zdtm.py in new namespaces, mounts binfmt_misc
	COMMON_MODS="$COMMON_MODS binfmt_misc"
	echo "ROOT_TMPFS=1" >>"$ov/test/config"
	ZDTM_CT_ROOT=$ZDTM_DIR/root
}
# --- end of the zdtm hook ---

# --- cri hook (boot "cri", guest/kfdsim/test-cri-*.sh) ---
# Debian testing's containerd 2.1 (CRI plugin, CDI, CheckpointContainer) and
# runc 1.3, and trixie's python3 with python3-grpcio for the CRI client
# guest/cri/cri.py and guest/cri/oci.py (images built in the guest, served
# by a registry on 127.0.0.1) (scripts/fetch-cri.sh, CRI_ROOT;
# build-initramfs.sh copies it over the runtimes). containerd's config:
# native snapshotter on the guest's tmpfs root, pulled by the CRI plugin
# itself (the transfer service unpacks for overlayfs only: "no unpack
# platforms defined"), Debian testing's runc 1.3 (/usr/sbin/runc-1.3, the
# default handler "runc") with cgroupfs, trixie's runc 1.1.15 as the
# handler "runc-1.1" (on cgroup v2 it gives CRIU no cgroup root on restore:
# the restored task lands outside its container's device filter), CDI specs
# in /etc/cdi, the sandbox image the test serves, CRIU's restore.log kept in
# /var/log/criu (else it goes with the container's state). Needs
# install_containers. Nothing is put there when the cache lacks them (make
# vm-deps warned): the tests SKIP, naming what is missing. Its status: 0
# when installed.
install_cri() { # OVERLAY
	local ov=$1
	mkdir -p "$ov/test/lib/cri"
	cp "$HERE/guest/cri/cri.py" "$HERE/guest/cri/oci.py" "$ov/test/lib/cri/"
	cp "$HERE/guest/cri.sh" "$ov/test/lib/cri.sh"
	[ -x "$CRI_ROOT/usr/bin/containerd" ] && [ -x "$CRI_ROOT/usr/sbin/runc-1.3" ] || {
		vm_log "no containerd or runc-1.3 in $CRI_ROOT (make vm-deps: scripts/fetch-cri.sh): the cri tests SKIP"
		return 1
	}
	mkdir -p "$ov/etc/containerd" "$ov/etc/cdi" "$ov/var/lib/containerd" "$ov/var/log/criu"
	cat >"$ov/etc/containerd/config.toml" <<-'EOC'
		version = 3
		root = "/var/lib/containerd"
		state = "/run/containerd"
		[grpc]
		  address = "/run/containerd/containerd.sock"
		[plugins.'io.containerd.cri.v1.images']
		  snapshotter = "native"
		  use_local_image_pull = true
		  [plugins.'io.containerd.cri.v1.images'.registry]
		    config_path = "/etc/containerd/certs.d"
		  [plugins.'io.containerd.cri.v1.images'.pinned_images]
		    sandbox = "localhost:5000/pause:1"
		[plugins.'io.containerd.cri.v1.runtime']
		  enable_cdi = true
		  cdi_spec_dirs = ["/etc/cdi"]
		  [plugins.'io.containerd.cri.v1.runtime'.containerd]
		    default_runtime_name = "runc"
		    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
		        BinaryName = "/usr/sbin/runc-1.3"
		        SystemdCgroup = false
		        CriuWorkPath = "/var/log/criu"
		    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'runc-1.1']
		      runtime_type = "io.containerd.runc.v2"
		      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'runc-1.1'.options]
		        BinaryName = "/usr/sbin/runc"
		        SystemdCgroup = false
		        CriuWorkPath = "/var/log/criu"
	EOC
	# the registry the test serves: plain HTTP (containerd tries HTTPS first
	# for a localhost registry with a port, and does not fall back)
	mkdir -p "$ov/etc/containerd/certs.d/localhost:5000"
	printf 'server = "http://localhost:5000"\n[host."http://localhost:5000"]\n  capabilities = ["pull", "resolve"]\n' \
		>"$ov/etc/containerd/certs.d/localhost:5000/hosts.toml"
	awk 'NF == 0 { print "Status: install ok installed" } { print }' "$CRI_ROOT/.status-cri" >>"$ov/var/lib/dpkg/status"
}
# --- end of the cri hook ---

# test_boot FILE: the boot a guest test belongs to ("# vm-boot: NAME", else main)
test_boot() { sed -n 's/^# vm-boot: *\([a-z0-9-]*\).*/\1/p' "$1" | head -1 | grep . || echo main; }
# test_disk FILE: the MiB of disk it asks for ("# vm-disk: MiB"), else nothing
test_disk() { sed -n 's/^# vm-disk: *\([0-9][0-9]*\).*/\1/p' "$1" | head -1; }
# test_limit FILE: its time limit in seconds, as the guest's /init computes it
test_limit() {
	local s
	s=$(sed -n 's/^# vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$1" | head -1 | grep . || echo "${VM_TEST_TIMEOUT:-120}")
	awk -v s="$s" -v k="${VM_TIMEOUT_SCALE:-1}" 'BEGIN { printf "%d\n", s * k + 0.5 }'
}

# The guest tests of this suite (and boot), in run order: common first, then
# the suite's. A test whose boot no host program runs would never run: that
# stops the suite (every boot checks all tests).
guest_tests() {
	local d f n b dirs=(common "$SUITE")
	[ "$SUITE" != selftest ] || dirs=(selftest)
	for d in "${dirs[@]}"; do
		for f in "$HERE/guest/$d"/test-*.sh; do
			[ -f "$f" ] || continue
			n=$(basename "$f" .sh)
			b=$(test_boot "$f")
			if [ -n "$BOOT" ] && [ ! -f "$HERE/test-$SUITE-$b.sh" ]; then
				vm_die "$f: boot '$b' (its '# vm-boot:' line) is run by no tests/vm/test-$SUITE-$b.sh"
			fi
			if [ -n "${VM_ONLY:-}" ] && ! echo " $VM_ONLY " | grep -q " $n "; then continue; fi
			[ -z "$BOOT" ] || [ "$b" = "$BOOT" ] || continue
			echo "$f"
		done
	done
}

suite_modules() { # KROOT -> specs for pick-modules.sh
	local ko
	echo "$COMMON_MODS"
	[ -z "$DISK_MIB" ] || echo "virtio_blk ext4"
	# zdtm's ns flavour: CRIU dumps the test's net namespace's conntrack
	# tables through ctnetlink (nfnetlink answers EINVAL without it)
	[ "$BOOT" != zdtm ] || echo "nf_conntrack_netlink"
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
	cp "$HERE/guest/ct.sh" "$ov/test/lib/ct.sh"
	cp "$HERE/guest/rocm_cr.sh" "$ov/test/lib/rocm_cr.sh"
	: >"$ov/test/vm/order"
	guest_tests >"$WORKDIR/tests${BOOT:+-$BOOT}"
	TESTS_LIMIT=0 DISK_MIB=
	while IFS= read -r f; do
		[ ! -e "$ov/test/vm/${f##*/}" ] || vm_die "two guest tests named ${f##*/}"
		cp "$f" "$ov/test/vm/"
		echo "${f##*/}" >>"$ov/test/vm/order"
		TESTS_LIMIT=$((TESTS_LIMIT + $(test_limit "$f") + 15)) # + cleanup after it
		DISK_MIB=$(test_disk "$f" | grep . || echo "$DISK_MIB")
	done <"$WORKDIR/tests${BOOT:+-$BOOT}"
	cat >"$ov/test/config" <<-EOC
		SUITE=$SUITE
		KREL=$2
		TEST_TIMEOUT=${VM_TEST_TIMEOUT:-120}
		TEST_TIMEOUT_SCALE=${VM_TIMEOUT_SCALE:-1}
		KFDSIM_PARAMS="${KFDSIM_PARAMS:-}"
		BENCH_MIB=$(printf %s "${BENCH_MIB:-}" | tr -cd 0-9)
	EOC
	for f in "$BUILD"/tests/bin/*; do [ ! -f "$f" ] || cp "$f" "$ov/test/bin/"; done
	build_guest_bins "$1" "$ov/test/bin"
	[ ! -x "${IMAGE_STREAMER:-}" ] || ! grep -q '^test-cr-stream' "$ov/test/vm/order" ||
		cp "$IMAGE_STREAMER" "$ov/test/bin/criu-image-streamer"
	[ "$SUITE" != kfdsim ] || install_kfdsim_tests "$ov"
	# only where a ROCm test runs: ROCr and libstdc++ grow the initramfs
	! grep -q '^test-rocm-' "$ov/test/vm/order" || install_rocm "$ov"
	! grep -qE '^test-rocm(-testing|6-|-hip|-blit|-smi)' "$ov/test/vm/order" || install_rocm_testing "$ov"
	! grep -q '^test-rocm-hip' "$ov/test/vm/order" || install_hip_testing "$ov"
	cp "$BUILD/amdgpu_plugin.so" "$ov/usr/lib/criu/"
	[ ! -x "$BUILD/amdgpu-criu" ] || cp "$BUILD/amdgpu-criu" "$ov/usr/bin/"
	LIBS_FOR= CT_ROOT= PODMAN_CT_ROOT= CRI_CT_ROOT= ZDTM_CT_ROOT=
	if grep -qE '^test-(ct|cri)-' "$ov/test/vm/order"; then
		install_containers "$ov"
		CT_ROOT=$RUNTIMES_ROOT
	fi
	# podman hook: test-ct-podman also has install_containers (above)
	if grep -q '^test-ct-podman' "$ov/test/vm/order"; then
		install_podman "$ov"
		PODMAN_CT_ROOT=$PODMAN_ROOT
	fi
	# cri hook: test-cri-* also have install_containers (above)
	if grep -q '^test-cri-' "$ov/test/vm/order" && install_cri "$ov"; then
		CRI_CT_ROOT=$CRI_ROOT
	fi
	! grep -q '^test-zdtm' "$ov/test/vm/order" || install_zdtm "$ov"
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
	# Boots of one suite share $WORKDIR (module build, machines, headers)
	# and may run at once (run-suite.sh): one prepares at a time.
	step "waiting for another boot's preparation"
	mkdir -p "$WORKDIR"
	exec 8>"$WORKDIR/prepare.lock"
	flock -w 1200 8 || vm_die "timed out waiting for $WORKDIR/prepare.lock (another boot's preparation)"
	if [ "$SUITE" = kfdsim ]; then
		step "kfdsim build"; build_kfdsim "$kroot"
		step "kfdsim machines"; make_kfdsim_machines
	fi
	step "guest files"; make_overlay "$kroot" "$krel" "$OVERLAY"
	exec 8>&- # the shared files are ready: other boots may prepare
	[ -s "$OVERLAY/test/vm/order" ] || vm_die "no guest test to run (suite $SUITE, boot ${BOOT:-any}, VM_ONLY '${VM_ONLY:-}')"
	step "initramfs"; LIBS_FOR=$LIBS_FOR "$HERE/build-initramfs.sh" "$INITRAMFS" "$CRIU_ROOT" "$OVERLAY" "$CRIU42_ROOT" "$CT_ROOT" "$PODMAN_CT_ROOT" "$CRI_CT_ROOT" "$ZDTM_CT_ROOT"
	step "VM run"
	KERNEL=$kroot/boot/vmlinuz-$krel
	KREL=$krel
}


# boot RUN SKIP: one VM run (RUN 1, 2, ...: reboots after a guest that died)
# that skips the first SKIP tests; its logs are console[.RUN].log and
# results[.RUN].log. Sets QEMU_RC.
boot() {
	local sfx=
	[ "$1" = 1 ] || sfx=.$1
	CONSOLE=$LOGS/console$sfx.log RESULTS=$LOGS/results$sfx.log
	QEMU_RC=0
	VM_DISK=$DISK VM_APPEND="${VM_APPEND:-} vmtests.skip=$2" "$HERE/run-vm.sh" "$KERNEL" "$INITRAMFS" \
		"$CONSOLE" "$RESULTS" "$LOGS/guest" "$TOTAL_LIMIT" 2>>"$LOGS/run-vm.log" || QEMU_RC=$?
}

# make_disk: a fresh, sparse ext4 image of DISK_MIB for the guest's
# /dev/vda when a test of this boot asks for one ("# vm-disk: MiB"; the
# guest's lib.sh mounts it: vm_disk). Sets DISK (empty: none).
make_disk() {
	DISK=
	[ -n "$DISK_MIB" ] || return 0
	command -v mkfs.ext4 >/dev/null || vm_die "mkfs.ext4 missing (e2fsprogs): a test of this boot asks for a disk"
	DISK=$WORKDIR/disk${BOOT:+-$BOOT}.img
	rm -f "$DISK"
	truncate -s "${DISK_MIB}M" "$DISK"
	mkfs.ext4 -q -F -L vmdisk "$DISK"
}

# why_unfinished: why the test that was running when the VM ended did not
# finish, with what to do, from run-vm.sh's status.
why_unfinished() {
	case "$QEMU_RC" in
	125)
		if [ -s "$RESULTS" ]; then
			echo "the guest made no progress for ${VM_STALL_TIMEOUT:-240} s (no output, no heartbeat): hung; see $CONSOLE, raise VM_STALL_TIMEOUT if it was only slow"
		else
			echo "the guest kernel made no progress while booting (run-vm.sh: $(tail -n 1 "$LOGS/run-vm.log" 2>/dev/null)); see $CONSOLE"
		fi
		;;
	124) echo "the VM run reached its total limit of $TOTAL_LIMIT s (raise VM_TIMEOUT, or VM_TIMEOUT_SCALE for every limit)" ;;
	*) echo "the guest kernel crashed or powered off (qemu status $QEMU_RC; see $CONSOLE)" ;;
	esac
}

# Results channel -> TAP. Per guest test: its results, renumbered and named;
# plus a failure when it ended badly without reporting one itself. Sets
# ENDED (the suite's end marker came) and UNFINISHED (the test running when
# the VM ended).
report_tests() {
	local line name="" p=0 f=0 plan="" rc desc why limit
	ENDED=0 UNFINISHED=
	while IFS= read -r line; do
		case "$line" in
		"@@ test "*" begin") name=${line#@@ test }; name=${name% begin}; p=0 f=0 plan="" ;;
		"@@ test "*" end "*)
			rc=$(echo "$line" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
			limit=$(echo "$line" | sed -n 's/.* limit=\([0-9]*\).*/\1/p')
			echo "# $name: $(echo "$line" | sed -n 's/.* secs=\([0-9.]*\).*/\1/p') s$([ "${limit:-0}" = 0 ] || echo " of its $limit s limit")"
			if [ "$f" -eq 0 ] && { [ "$rc" != 0 ] || [ "$p" -eq 0 ] || { [ -n "$plan" ] && [ "$p" -lt "$plan" ]; }; }; then
				why="ended with status $rc"
				[ "$rc" != 137 ] || why="ended with status 137 (killed at its time limit of ${limit:-?} s: raise its '# vm-timeout:' line, or VM_TIMEOUT_SCALE)"
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
	done < <(tr -d '\r' <"$RESULTS" 2>/dev/null)
	[ -z "$name" ] || fail "$name: did not finish: $(why_unfinished)"
	UNFINISHED=$name
}

# test_index NAME: its position (1-based) in this boot's run order
test_index() { grep -n -x "$1.sh" "$OVERLAY/test/vm/order" | cut -d: -f1; }

# Kernel trouble in the console log fails the suite, even when every test
# passed: a WARNING or BUG in a driver is a bug of ours or a real issue. Only
# kernel lines count (they carry a "[seconds]" stamp); test output, which is
# on the console too, may quote such words.
KERNEL_TROUBLE='Kernel panic|Oops|BUG:|WARNING:|general protection fault|Call Trace:|blocked for more than|watchdog: '
report_kernel() {
	local bad
	bad=$(cat "$LOGS"/console*.log 2>/dev/null | tr -d '\r' |
		grep -a -m 5 -E "\[ *[0-9]+\.[0-9]+\] .*($KERNEL_TROUBLE)") || true
	if [ -n "$bad" ]; then
		fail "$TNAME: kernel log clean (see $LOGS/console*.log)"
		echo "$bad" | sed 's/^/# /'
	else
		ok "$TNAME: kernel log clean (no oops, BUG, WARNING or panic)"
	fi
}

# run_boots: boots until every test of the order has run, booting again
# (twice at most) after a guest that died in a test, for the tests after it,
# or that never reached userspace, for the same tests.
run_boots() {
	local run=1 skip=0 total idx
	total=$(wc -l <"$OVERLAY/test/vm/order")
	while :; do
		boot "$run" "$skip"
		echo "# $TNAME: VM run $run (from test $((skip + 1)) of $total): $(vm_since "$BOOT_T0") s so far (qemu status $QEMU_RC)"
		report_tests
		if [ "$ENDED" = 1 ]; then
			ok "$TNAME: VM ran the whole suite and powered off$([ "$run" = 1 ] || echo " (in $run boots)")"
			return
		fi
		if [ "$QEMU_RC" = 124 ]; then
			fail "$TNAME: VM finished within $TOTAL_LIMIT s (killed at its total limit: raise VM_TIMEOUT or VM_TIMEOUT_SCALE)"
			return
		fi
		# a guest that never reached its /init (a TCG kernel that stalled
		# while booting, once on a loaded CI machine): the same tests again
		if ! grep -q '^@@ suite ' "$RESULTS" 2>/dev/null && [ "$run" -lt 3 ]; then
			echo "# $TNAME: the guest never reached userspace ($(why_unfinished)): booting again"
			run=$((run + 1))
			continue
		fi
		idx=$([ -z "$UNFINISHED" ] || test_index "$UNFINISHED")
		if [ -z "$idx" ] || [ "$idx" -ge "$total" ] || [ "$run" -ge 3 ]; then
			fail "$TNAME: VM ran the whole suite (it stopped early: $(why_unfinished))"
			return
		fi
		echo "# $TNAME: booting again for the $((total - idx)) tests after $UNFINISHED"
		run=$((run + 1)) skip=$idx
	done
}

main() {
	local t0
	case "$SUITE" in
	kfdsim | amdgpu | selftest) ;;
	*) echo "usage: vm-suite.sh kfdsim|amdgpu|selftest [BOOT]" >&2; exit 2 ;;
	esac
	mkdir -p "$LOGS" "$WORKDIR"
	if [ -n "${VM_ONLY:-}" ] && [ -n "$BOOT" ] && [ -z "$(guest_tests)" ]; then
		echo "ok 1 - $TNAME: none of VM_ONLY ($VM_ONLY) is in this boot # SKIP"
		echo "1..1"
		exit 0
	fi
	trap finish EXIT
	t0=$(vm_now)
	prepare >"$LOGS/prepare.log" 2>&1
	# The backstop: the tests' own limits (and cleanup after each) plus
	# 240 s for a boot under load; each test's limit is the real one.
	TOTAL_LIMIT=${VM_TIMEOUT:-$((TESTS_LIMIT + 240))}
	BOOT_T0=$(vm_now)
	rm -f "$LOGS"/console*.log "$LOGS"/results*.log "$LOGS/run-vm.log"
	rm -rf "$LOGS/guest" && mkdir -p "$LOGS/guest"
	make_disk
	DONE=1
	echo "# $TNAME: kernel $KREL; prepare $(vm_since "$t0" "$BOOT_T0") s; $(wc -l <"$OVERLAY/test/vm/order") guest tests, limits: each its own, VM without progress ${VM_STALL_TIMEOUT:-240} s, VM total $TOTAL_LIMIT s"
	run_boots
	report_kernel
}
# One line, read whole before it runs: an edit of this file during a run
# (a shared work tree) cannot make bash read on into changed text.
main "$@"; exit
