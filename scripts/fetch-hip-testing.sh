#!/bin/bash
# Fetches Debian testing's HIP runtime (libamdhip64-6 6.4.x, its headers in
# libamdhip64-dev) and the libraries it loads that fetch-rocm-testing.sh's
# tree lacks (comgr, which builds HIP's blit kernels at start, and its LLVM),
# and unpacks them under DEST without installing anything:
#   DEST/root/usr/lib/x86_64-linux-gnu/      libamdhip64.so.6, libamd_comgr, libLLVM, ...
#   DEST/root/usr/include/hip/               HIP's headers (host API, -D__HIP_PLATFORM_AMD__)
#   DEST/closure                             the libraries (file names) HIP loads
# ROCr itself and the libraries it loads come from fetch-rocm-testing.sh's
# DEST (ROCM_TESTING, resolved first against it): HIP programs of ours are
# built with gcc/g++ against both trees (no device code).
#
# usage: fetch-hip-testing.sh DEST ROCM_TESTING [SUITE]   SUITE defaults to "testing"
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
ROCM=$(cd "${2:?usage: fetch-hip-testing.sh DEST ROCM_TESTING [SUITE]}" && pwd)
SUITE=${3:-testing}
LIBDIR=$DEST/root/usr/lib/x86_64-linux-gnu
GUEST_GLIBC=41 # trixie's glibc 2.41, as fetch-rocm-testing.sh
if [ -f "$DEST/.complete" ] && [ -f "$DEST/root/usr/include/hip/hip_runtime_api.h" ]; then
	exit 0
fi
[ -f "$ROCM/closure" ] || { echo "fetch-hip-testing: no ROCr tree in $ROCM (scripts/fetch-rocm-testing.sh first)" >&2; exit 1; }
rm -rf "$DEST/debs" "$DEST/debs-trixie" "$DEST/root" "$DEST/.complete"
mkdir -p "$DEST/debs" "$DEST/root"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
apt_private "$DEST/apt" "$SUITE"
"${APTP[@]}" update >/dev/null
closure=$("${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "libamdhip64-6/$SUITE" 2>/dev/null |
	sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | grep -E '^(lib|zlib1g$)' |
	grep -vE -- '-dev$|^libc6$|^libc-|^libhsa-runtime' | sort -u)
PKGS="$closure libamdhip64-dev"
# shellcheck disable=SC2046
(cd "$DEST/debs" && "${APTP[@]}" download $(for p in $PKGS; do echo "$p/$SUITE"; done) >/dev/null)
for d in "$DEST"/debs/*.deb; do dpkg -x "$d" "$DEST/root"; done
# A library of SUITE that asks a glibc newer than the guest's (testing's
# libedit2 asks 2.42 for LLVM) is taken from the guest's suite, trixie, with
# the same soname.
too_new() { # ELF
	local v
	v=$(objdump -T "$1" 2>/dev/null | sed -n 's/.*GLIBC_2\.\([0-9]*\).*/\1/p' | sort -n | tail -1)
	[ -n "$v" ] && [ "$v" -gt "$GUEST_GLIBC" ]
}
older=""
for d in "$DEST"/debs/*.deb; do
	for f in $(dpkg-deb -c "$d" | awk '$1 ~ /^-/ && $NF ~ /\.so[.0-9]*$/ { print $NF }'); do
		if too_new "$DEST/root/$f"; then older="$older $(dpkg-deb -f "$d" Package)"; break; fi
	done
done
if [ -n "$older" ]; then
	apt_private "$DEST/apt-trixie" trixie
	"${APTP[@]}" update >/dev/null
	mkdir -p "$DEST/debs-trixie"
	# shellcheck disable=SC2046
	(cd "$DEST/debs-trixie" && "${APTP[@]}" download $(for p in $older; do echo "$p/trixie"; done) >/dev/null)
	for d in "$DEST"/debs-trixie/*.deb; do dpkg -x "$d" "$DEST/root"; done
fi
# DT_NEEDED of libamdhip64 and of comgr (which HIP dlopen()s), recursively: each in this tree or in ROCr's,
# none asking a glibc newer than the guest's; DEST/closure lists this tree's.
missing="" newest=0 seen=" " todo="$LIBDIR/libamdhip64.so.6 $LIBDIR/libamd_comgr.so.3" own=" libamd_comgr.so.3"
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
		if grep -qx "$so" "$ROCM/closure"; then continue; fi
		if [ -e "$LIBDIR/$so" ]; then todo="$todo $LIBDIR/$so"; own="$own $so"; else missing="$missing $so(${elf##*/})"; fi
	done
done
[ -z "$missing" ] || { echo "fetch-hip-testing: unresolved libraries:$missing" >&2; exit 1; }
[ "$newest" -le "$GUEST_GLIBC" ] ||
	{ echo "fetch-hip-testing: needs GLIBC_2.$newest, the guest has 2.$GUEST_GLIBC" >&2; exit 1; }
{ echo libamdhip64.so.6; echo "$own" | tr ' ' '\n' | sed '/^$/d'; } >"$DEST/closure"
touch "$DEST/.complete"
echo "fetch-hip-testing: $(cd "$DEST/debs" && ls libamdhip64-6_* libamd-comgr*_* | tr '\n' ' ')($SUITE, GLIBC_2.$newest) in $DEST"
