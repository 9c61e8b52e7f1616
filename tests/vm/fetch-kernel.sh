#!/bin/bash
# Fetches the current Debian bookworm-backports kernel of VM_FLAVOUR (default
# the generic "amd64") with its headers and kbuild, and unpacks them (dpkg -x,
# nothing is installed) into VM_CACHE/<KREL>/root. Prints that directory.
#
# The version is resolved at run time from the linux-image-<flavour>
# metapackage: old kernel ABIs leave the archive when a new one is uploaded, so
# a pinned version would break. If the archive cannot be reached, the newest
# kernel already in the cache is used. KREL=... in the environment pins one.
#
# The unpacked tree is made ready for use once, under a lock:
#  - the flavour headers' Makefile includes the -common tree by absolute
#    /usr/src path; it is rewritten to the unpacked copy (out-of-tree builds);
#  - busybox depmod writes modules.alias (the .deb ships none), so that
#    pick-modules.sh can resolve soft dependencies given by alias (libcrc32c
#    wants "crc32c"). busybox rather than kmod: busybox-static is needed anyway.
#
# usage: fetch-kernel.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

# The newest version of linux-image-$VM_FLAVOUR's dependency, e.g. 6.12.95+deb12.
resolve_kv() {
	"${APTC[@]}" show "linux-image-$VM_FLAVOUR" 2>/dev/null |
		sed -n "s/^Depends: .*linux-image-\([^ ,]*\)-$VM_FLAVOUR\( .*\)\?$/\1/p" | sort -V | tail -1
}

newest_cached() {
	local d
	for d in "$VM_CACHE"/*-"$VM_FLAVOUR"/ok; do [ -e "$d" ] && basename "$(dirname "$d")"; done | sort -V | tail -1
}

download() { # KV DIR
	local kv=$1 dir=$2 krel=$1-$VM_FLAVOUR
	(cd "$dir" && timeout 600 "${APTP[@]}" download "linux-image-$krel" "linux-headers-$krel" \
		"linux-headers-$kv-common" "linux-kbuild-$kv" >/dev/null)
}

# Point the flavour headers at the unpacked -common tree instead of /usr/src.
fix_headers_makefile() { # ROOT KREL
	local mk=$1/usr/src/linux-headers-$2/Makefile
	sed -i "s|^include /usr/src/|include $1/usr/src/|" "$mk" &&
		grep -q "^include $1/usr/src/" "$mk" && return 0
	vm_log "unexpected $mk: no include of the -common tree"
	return 1
}

# Every step checked explicitly: this runs in an "||" list, where set -e is off.
unpack() { # KV DIR
	local kv=$1 dir=$2 krel=$1-$VM_FLAVOUR d
	rm -rf "$dir/root"
	for d in "$dir"/*.deb; do dpkg -x "$d" "$dir/root" || return 1; done
	fix_headers_makefile "$dir/root" "$krel" || return 1
	busybox depmod -b "$dir/root" "$krel" || return 1
	[ -s "$dir/root/lib/modules/$krel/modules.alias" ] || { vm_log "depmod wrote no modules.alias"; return 1; }
	rm -f "$dir"/*.deb # the unpacked tree is the cache
	touch "$dir/ok"
}

# Older unpacked kernels (about 250 MB each) are never used again.
prune_old() { # KEEP_KREL
	local d
	for d in "$VM_CACHE"/*-"$VM_FLAVOUR"; do
		[ -d "$d" ] && [ "$(basename "$d")" != "$1" ] && rm -rf "$d"
	done
	return 0
}

main() {
	local krel=${KREL:-} kv
	mkdir -p "$VM_CACHE"
	# Several work trees may run the VM tests at once; one fetch at a time.
	exec 9>"$VM_CACHE/lock"
	flock -w 600 9 || vm_die "timed out waiting for $VM_CACHE/lock"

	if [ -z "$krel" ] || [ ! -e "$VM_CACHE/$krel/ok" ]; then
		. "$VM_ROOT/scripts/apt-private.sh"
		apt_private "$VM_CACHE/apt" "bookworm-backports"
		if ! timeout 120 "${APTP[@]}" update >/dev/null 2>&1; then
			[ -z "$krel" ] || vm_die "$krel is not cached and the archive is unreachable"
			krel=$(newest_cached)
			[ -n "$krel" ] || vm_die "the archive is unreachable and no kernel is cached"
			vm_log "archive unreachable, using cached $krel"
		elif [ -z "$krel" ]; then
			kv=$(resolve_kv)
			[ -n "$kv" ] || vm_die "cannot resolve linux-image-$VM_FLAVOUR in bookworm-backports"
			krel=$kv-$VM_FLAVOUR
		fi
	fi
	local dir=$VM_CACHE/$krel
	if [ ! -e "$dir/ok" ]; then
		kv=${krel%-"$VM_FLAVOUR"}
		vm_log "fetching kernel $krel"
		rm -rf "$dir" && mkdir -p "$dir"
		download "$kv" "$dir" || { rm -rf "$dir"; vm_die "download of $krel failed"; }
		unpack "$kv" "$dir" || { rm -rf "$dir"; vm_die "unpacking $krel failed"; }
		prune_old "$krel"
	fi
	echo "$dir/root"
}
main "$@"
