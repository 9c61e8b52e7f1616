#!/bin/bash
# Builds an out-of-tree kernel module (a Kbuild source dir) against the
# headers unpacked by fetch-kernel.sh. The sources are copied to OUTDIR first:
# kbuild writes its objects next to the sources, and several work trees (own
# BUILD dirs) may build the same source dir at once.
# Needs the kernel's compiler (gcc-12 for bookworm-backports kernels, the
# host's) and pahole (BTF for 6.12 modules).
#
# usage: build-kmod.sh KERNEL_ROOT SRC_DIR OUTDIR     -> OUTDIR/*.ko
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
ROOT=$(cd "$1" && pwd) SRC=$(cd "$2" && pwd) OUT=$3

headers_dir() {
	local h
	for h in "$ROOT"/usr/src/linux-headers-*-"$VM_FLAVOUR"; do [ -f "$h/Makefile" ] && echo "$h"; done | head -1
}

main() {
	local h
	h=$(headers_dir)
	[ -n "$h" ] || vm_die "no linux-headers-*-$VM_FLAVOUR in $ROOT"
	rm -rf "$OUT" && mkdir -p "$OUT"
	cp -r "$SRC"/. "$OUT"/
	# Builds from the source tree may have left objects; start clean.
	find "$OUT" \( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' \
		-o -name Module.symvers -o -name modules.order \) -delete
	timeout 600 make -s -C "$h" M="$OUT" -j"$(nproc)" modules
	ls "$OUT"/*.ko >/dev/null 2>&1 || vm_die "no module built from $SRC"
}
main "$@"
