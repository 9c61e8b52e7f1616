#!/bin/bash
# Installs what building and testing need on a fresh Debian bookworm machine.
# Idempotent and quick when everything is already there.
#
#   scripts/install-deps.sh build      compilers' libraries, protobuf-c, libdrm, json-c, cmocka,
#                                      clang with libFuzzer (tests/fuzz), dpkg-dev and lintian
#                                      (make deb, tests/host/test-deb.sh)
#   scripts/install-deps.sh vm         + qemu 10 (bookworm-backports), busybox, cpio, pahole,
#                                      Debian's ROCm userspace (rocminfo, libhsakmt, ROCr and
#                                      their headers), strace (test-rocm-ipc) for the kfdsim VM image
#
# System packages come from the system's own sources. qemu comes from
# bookworm-backports through a private apt list (bookworm's qemu 7.2 corrupts
# memory of 6.12 guests under TCG); the system's sources are left unchanged.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}
what=${1:-build}

BUILD_PKGS="gcc make pkg-config libprotobuf-c-dev protobuf-c-compiler libdrm-dev
	libjson-c-dev libisal-dev liburing-dev zlib1g-dev libcmocka-dev jq util-linux procps bc
	clang libclang-rt-14-dev dpkg-dev lintian"
VM_PKGS="busybox-static cpio pahole xz-utils zstd libelf1 binutils
	rocminfo libhsakmt-dev libhsa-runtime-dev strace"

missing() {
	local p out=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || out="$out $p"
	done
	echo "$out"
}

apt_install() {
	local need
	need=$(missing "$@")
	[ -n "$need" ] || return 0
	echo "install-deps: installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need >/dev/null
}

qemu_ok() {
	command -v qemu-system-x86_64 >/dev/null &&
		[ "$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')" -ge 10 ]
}

install_qemu() {
	qemu_ok && return 0
	echo "install-deps: installing qemu-system-x86 from bookworm-backports"
	. "$HERE/apt-private.sh"
	apt_private "$CACHE/apt-bpo" "bookworm bookworm-updates bookworm-security bookworm-backports"
	"${APTP[@]}" update >/dev/null
	DEBIAN_FRONTEND=noninteractive "${APTP[@]}" install -y --no-install-recommends \
		-t bookworm-backports qemu-system-x86 >/dev/null
	qemu_ok || { echo "install-deps: qemu >= 10 could not be installed" >&2; exit 1; }
}

# shellcheck disable=SC2086
case "$what" in
build) apt_install $BUILD_PKGS ;;
vm) apt_install $BUILD_PKGS $VM_PKGS; install_qemu ;;
*) echo "usage: $0 build|vm" >&2; exit 2 ;;
esac
