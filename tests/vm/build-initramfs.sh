#!/bin/bash
# Assembles the test VM's initramfs:
#   /bin        static busybox (bookworm's busybox-static) and its applets
#   /usr        trixie's criu with its library closure (merged /usr, so criu
#               runs natively with trixie's ld.so), minus docs and headers
#   OVERLAY     copied on top: /init, /test/..., /usr/lib/criu/*.so, tools
#   CRIU42_ROOT optional, Debian testing's criu 4.2.x (scripts/fetch-criu-testing.sh):
#               its binary in /usr/libexec/criu-4.2/criu with the libraries it
#               needs but glibc's (trixie's glibc is new enough), run by the
#               wrapper /usr/sbin/criu-4.2 (the process is still named criu)
#   RUNTIMES_ROOT optional, trixie's runc, crun, libcriu2, GNU tar and gzip,
#               dpkg (scripts/fetch-runtimes.sh), copied on top of /usr, /etc
#               and /var (boot "ct", guest/kfdsim/test-ct-*.sh)
#   PODMAN_ROOT optional, trixie's podman, conmon, containers-common, netavark
#               (scripts/fetch-podman.sh), copied on top of RUNTIMES_ROOT
#               (boot "podman", guest/kfdsim/test-ct-podman.sh)
#   CRI_ROOT    optional, Debian testing's containerd 2.1 and runc 1.3 (as
#               /usr/sbin/runc-1.3), trixie's python3
#               and python3-grpcio (scripts/fetch-cri.sh), copied on top of
#               RUNTIMES_ROOT (boot "cri", guest/kfdsim/test-cri-*.sh)
#   ZDTM_ROOT   optional, trixie's python3, python3-pycriu, make, bash, ldd
#               (scripts/fetch-zdtm.sh), copied on top of /usr (boot "zdtm",
#               guest/kfdsim/test-zdtm.sh: CRIU's test/zdtm.py)
#   libraries   every shared library that an ELF file of OVERLAY (or of the
#               directory LIBS_FOR, e.g. a package unpacked for it) needs and
#               the trixie closure lacks (libdrm, libdrm_amdgpu, json-c, ...),
#               taken from the host, where those files were built
# and writes it as a zstd-compressed newc cpio.
#
# usage: build-initramfs.sh OUT.cpio.zst CRIU_ROOT OVERLAY_DIR [CRIU42_ROOT [RUNTIMES_ROOT [PODMAN_ROOT [CRI_ROOT [ZDTM_ROOT]]]]]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(realpath -m "$1") CRIU_ROOT=$(cd "$2" && pwd) OVERLAY=$(cd "$3" && pwd) CRIU42_ROOT=${4:-}
RUNTIMES_ROOT=${5:-} PODMAN_ROOT=${6:-} CRI_ROOT=${7:-} ZDTM_ROOT=${8:-}
LIBDIR=usr/lib/x86_64-linux-gnu
STAGE=

cleanup() { [ -z "$STAGE" ] || rm -rf "$STAGE"; }
trap cleanup EXIT

add_criu() {
	cp -a "$CRIU_ROOT/usr" "$STAGE/usr"
	rm -rf "${STAGE:?}/usr/share" "$STAGE/usr/include" "$STAGE/$LIBDIR/gconv" "$STAGE/$LIBDIR/pkgconfig"
	find "$STAGE/usr" -name '*.a' -delete
	ln -s usr/lib "$STAGE/lib"
	ln -s usr/lib64 "$STAGE/lib64"
}

add_busybox() {
	local a
	mkdir -p "$STAGE/bin" "$STAGE/sbin"
	cp /bin/busybox "$STAGE/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ -e "$STAGE/bin/$a" ] || ln -s busybox "$STAGE/bin/$a"
	done
}

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# Host libraries that the overlay's programs and plugins need, by soname,
# unless trixie's closure already has that soname.
add_missing_libs() {
	local f soname path
	while IFS= read -r f; do
		is_elf "$f" || continue
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
	done < <(find "$OVERLAY" ${LIBS_FOR:+"$LIBS_FOR"} -type f \( -name '*.so*' -o -perm -u+x \)) | sort -u |
		while read -r soname path; do
			[ -e "$STAGE/$LIBDIR/$soname" ] && continue
			vm_log "adding host library $soname"
			cp -L "$path" "$STAGE/$LIBDIR/$soname"
		done
}

# The 4.2 binary's library closure (DT_NEEDED, recursively, inside
# CRIU42_ROOT) without glibc's libraries: testing's glibc would need its own
# ld.so, and the guest's trixie glibc (2.41) covers what 4.2 asks (2.38).
add_criu42() {
	local src=$CRIU42_ROOT/$LIBDIR dst=$STAGE/usr/libexec/criu-4.2 so elf seen=" "
	local -a todo
	needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
	mkdir -p "$dst/lib"
	cp "$CRIU42_ROOT/usr/sbin/criu" "$dst/criu"
	mapfile -t todo < <(needed "$dst/criu")
	while [ ${#todo[@]} -gt 0 ]; do
		so=${todo[0]}
		todo=("${todo[@]:1}")
		case "$seen" in *" $so "*) continue ;; esac
		seen="$seen$so "
		case "$so" in ld-linux* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libmvec.so.*) continue ;; esac
		elf=$src/$so
		[ -e "$elf" ] || vm_die "criu 4.2 needs $so, not in $src"
		cp -L "$elf" "$dst/lib/$so"
		mapfile -t -O ${#todo[@]} todo < <(needed "$elf")
	done
	printf '#!/bin/sh\nLD_LIBRARY_PATH=/usr/libexec/criu-4.2/lib exec /usr/libexec/criu-4.2/criu "$@"\n' >"$STAGE/usr/sbin/criu-4.2"
	chmod 0755 "$STAGE/usr/sbin/criu-4.2"
	vm_log "adding criu 4.2 as /usr/sbin/criu-4.2 with $(cd "$dst/lib" && echo *)"
}

add_runtimes() {
	local d r
	for r in "$RUNTIMES_ROOT" ${PODMAN_ROOT:+"$PODMAN_ROOT"} ${CRI_ROOT:+"$CRI_ROOT"}; do
		for d in usr etc var; do
			[ ! -d "$r/$d" ] || cp -a "$r/$d" "$STAGE/"
		done
		vm_log "adding the container runtimes of $r"
	done
}

main() {
	STAGE=$(mktemp -d "${TMPDIR:-/tmp}/vm-initramfs.XXXXXX")
	add_criu
	[ -z "$RUNTIMES_ROOT" ] || add_runtimes
	if [ -n "$ZDTM_ROOT" ]; then
		cp -a "$ZDTM_ROOT/usr" "$STAGE/"
		vm_log "adding zdtm.py's python3, make and ldd of $ZDTM_ROOT"
	fi
	add_busybox
	mkdir -p "$STAGE"/{proc,sys,dev,tmp,run}
	cp -a "$OVERLAY"/. "$STAGE"/
	[ -x "$STAGE/init" ] || vm_die "the overlay has no executable /init"
	add_missing_libs
	[ -z "$CRIU42_ROOT" ] || add_criu42
	(cd "$STAGE" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | zstd -q -T0 -3 >"$OUT.tmp"
	mv "$OUT.tmp" "$OUT"
}
main "$@"
