#!/bin/bash
# Fetches Debian testing's ROCm userspace (rocminfo 7.x, libhsa-runtime64-1
# 6.4.x: ROCr with the thunk built in, its headers; rocm-smi 6.4.x: a python3
# program on librocm-smi64-1) and the libraries they need from the same
# suite, and unpacks them under DEST without installing anything:
#   DEST/root/usr/bin/rocminfo
#   DEST/root/usr/libexec/rocm_smi/          rocm-smi (rocm_smi.py, its ctypes bindings)
#   DEST/root/usr/lib/x86_64-linux-gnu/      libhsa-runtime64, libdrm_amdgpu,
#                                            libstdc++, librocm_smi64, ... (testing's)
#   DEST/root/usr/include/hsa/               ROCr's headers (libhsa-runtime-dev)
# The kfdsim VM's "rocm" boot runs them unmodified next to bookworm's ROCm
# 5.2.3 (tests/vm/vm-suite.sh: install_rocm_testing). The closure is resolved
# from the Depends of the three packages (library packages only: rocminfo's
# python3/kmod/pciutils serve rocm_agent_enumerator, not rocminfo; rocm-smi's
# python3 is the guest's, see vm-suite.sh's install_rocm_testing), without
# glibc: the guest's trixie glibc covers what they ask (checked below).
#
# usage: fetch-rocm-testing.sh DEST [SUITE]      SUITE defaults to "testing"
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
SUITE=${2:-testing}
LIBDIR=$DEST/root/usr/lib/x86_64-linux-gnu
# the newest glibc symbol version the guest's glibc (trixie, 2.41) provides
GUEST_GLIBC=41
if [ -x "$DEST/root/usr/bin/rocminfo" ] && [ -f "$DEST/root/usr/include/hsa/hsa.h" ] &&
	[ -f "$DEST/root/usr/libexec/rocm_smi/rocm_smi.py" ] && [ -f "$DEST/.complete" ]; then
	exit 0
fi
rm -rf "$DEST/debs" "$DEST/root" "$DEST/.complete"
mkdir -p "$DEST/debs" "$DEST/root"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
apt_private "$DEST/apt" "$SUITE"
"${APTP[@]}" update >/dev/null
closure=$("${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "rocminfo/$SUITE" "libhsa-runtime64-1/$SUITE" "librocm-smi64-1/$SUITE" 2>/dev/null |
	sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | grep -E '^(lib|zlib1g$)' | grep -vE -- '-dev$|^libc6$|^libc-|^libpython|^libkmod|^libpci' | sort -u)
PKGS="rocminfo rocm-smi $closure libhsa-runtime-dev libdrm-common"
# shellcheck disable=SC2046
(cd "$DEST/debs" && "${APTP[@]}" download $(for p in $PKGS; do echo "$p/$SUITE"; done) >/dev/null)
for d in "$DEST"/debs/*.deb; do dpkg -x "$d" "$DEST/root"; done
# The libraries rocminfo, ROCr and librocm_smi64 load (DT_NEEDED, recursively), glibc's
# aside: each must be in the tree, none may ask a glibc newer than the
# guest's. The list (DEST/closure) is what the VM image takes.
missing="" newest=0 seen=" " todo="$DEST/root/usr/bin/rocminfo $LIBDIR/libhsa-runtime64.so.1 $LIBDIR/librocm_smi64.so.1"
while [ -n "$todo" ]; do
	# shellcheck disable=SC2086 # a list of paths without blanks
	set -- $todo
	elf=$1; shift; todo="$*"
	v=$(objdump -T "$elf" 2>/dev/null | sed -n 's/.*GLIBC_2\.\([0-9]*\).*/\1/p' | sort -n | tail -1)
	[ -z "$v" ] || [ "$v" -le "$newest" ] || newest=$v
	for so in $(readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case "$so" in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux-*) continue ;; esac
		case "$seen" in *" $so "*) continue ;; esac
		seen="$seen$so "
		if [ -e "$LIBDIR/$so" ]; then todo="$todo $LIBDIR/$so"; else missing="$missing $so(${elf##*/})"; fi
	done
done
[ -z "$missing" ] || { echo "fetch-rocm-testing: unresolved libraries:$missing" >&2; exit 1; }
[ "$newest" -le "$GUEST_GLIBC" ] ||
	{ echo "fetch-rocm-testing: needs GLIBC_2.$newest, the guest has 2.$GUEST_GLIBC" >&2; exit 1; }
echo "$seen librocm_smi64.so.1" | tr ' ' '\n' | sed '/^$/d' >"$DEST/closure"
touch "$DEST/.complete"
echo "fetch-rocm-testing: $(cd "$DEST/debs" && ls rocminfo_* libhsa-runtime64-1_* rocm-smi_* | tr '\n' ' ')($SUITE, GLIBC_2.$newest) in $DEST"
