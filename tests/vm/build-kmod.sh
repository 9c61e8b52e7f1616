#!/bin/bash
# Builds an out-of-tree kernel module (a Kbuild source dir) against the
# headers unpacked by fetch-kernel.sh. The sources are copied to OUTDIR first:
# kbuild writes its objects next to the sources, and several work trees (own
# BUILD dirs) may build the same source dir at once.
# Needs the kernel's compiler (gcc-12 for bookworm-backports kernels, the
# host's) and pahole (BTF for 6.12 modules).
# Cached: OUTDIR/.key is a hash of the sources (all files but build products
# and tests/), the headers, the compiler and this script; a build with the
# same key is not done again. The key is written last: a failed build is
# never taken for a good one.
#
# usage: build-kmod.sh KERNEL_ROOT SRC_DIR OUTDIR [VAR=VALUE...]   -> OUTDIR/*.ko
#        (VAR=VALUE: kbuild variables, e.g. KFDSIM_MODNAME=amdgpu)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
ROOT=$(cd "$1" && pwd) SRC=$(cd "$2" && pwd) OUT=$(realpath -m "$3")
shift 3
VARS=("$@")

headers_dir() {
	local h
	for h in "$ROOT"/usr/src/linux-headers-*-"$VM_FLAVOUR"; do [ -f "$h/Makefile" ] && echo "$h"; done | head -1
}

# Build products, as kbuild leaves them next to the sources.
PRODUCTS=(\( -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd'
	-o -name Module.symvers -o -name modules.order \))

inputs_key() { # HEADERS
	{
		echo "$1" "${VARS[@]}"
		gcc --version | head -1
		sha256sum "${BASH_SOURCE[0]}" | awk '{ print $1 }'
		(cd "$SRC" && find . -path ./tests -prune -o -type f ! "${PRODUCTS[@]}" -print0 |
			LC_ALL=C sort -z | xargs -0 sha256sum)
	} | sha256sum | awk '{ print $1 }'
}

main() {
	local h key
	h=$(headers_dir)
	[ -n "$h" ] || vm_die "no linux-headers-*-$VM_FLAVOUR in $ROOT"
	key=$(inputs_key "$h")
	if [ "$(cat "$OUT/.key" 2>/dev/null)" = "$key" ] && ls "$OUT"/*.ko >/dev/null 2>&1; then
		vm_log "$(cd "$OUT" && ls ./*.ko | tr '\n' ' ')up to date"
		return 0
	fi
	rm -rf "$OUT" && mkdir -p "$OUT"
	cp -r "$SRC"/. "$OUT"/
	# Builds from the source tree may have left objects; start clean.
	find "$OUT" "${PRODUCTS[@]}" -delete
	timeout 600 make -s -C "$h" M="$OUT" -j"$(nproc)" "${VARS[@]}" modules
	ls "$OUT"/*.ko >/dev/null 2>&1 || vm_die "no module built from $SRC"
	echo "$key" >"$OUT/.key"
}
main "$@"
