#!/bin/bash
# Picks kernel modules with everything they need out of an unpacked Debian
# kernel, decompressed (busybox insmod takes plain .ko files), into OUTDIR,
# and writes OUTDIR/load-order: one "FILE.ko required|optional" per line,
# dependencies first.
#
# Dependencies come from each module's own depends= field (the .deb ships no
# modules.dep); soft "pre:" dependencies (softdep=, e.g. libcrc32c wants the
# crc32c algorithm) are resolved through modules.alias and are optional.
#
# usage: pick-modules.sh MODULES_DIR OUTDIR SPEC...
#   SPEC  name      a module that must load
#         name?     a module that may fail to load (with its dependencies)
#         FILE.ko   an out-of-tree module: only its dependencies are picked
#                   (required); loading it is left to its tests
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
MD=$1 OUT=$2
shift 2

declare -A FILE   # module name (with _) -> path of its .ko[.xz|.zst]
declare -A STATE  # module name -> required|optional, once picked

norm() { echo "${1//-/_}"; }

index_modules() {
	local f n
	while IFS= read -r f; do
		n=${f##*/}
		n=${n%%.ko*}
		FILE[${n//-/_}]=$f
	done < <(find "$MD/kernel" -name '*.ko*')
}

# The .modinfo section of a .ko, one "key=value" a line (only that section:
# a whole amdgpu.ko is 30 MB).
modinfo_of() { # KO
	objcopy -O binary -j .modinfo "$1" /dev/stdout | tr '\0' '\n'
}

# Decompressed copies are kept next to the modules (MODULES_DIR/.plain/,
# inside the download cache): amdgpu.ko alone takes seconds to unxz. Written
# under a temporary name and renamed, as other runs may read them at once.
decompress() { # SRC DEST
	local plain=$MD/.plain/${2##*/}
	if [ ! -f "$plain" ]; then
		mkdir -p "$MD/.plain"
		case "$1" in
		*.xz) xz -dc "$1" >"$plain.$$" ;;
		*.zst) zstd -qdc "$1" >"$plain.$$" ;;
		*) cp "$1" "$plain.$$" ;;
		esac
		mv "$plain.$$" "$plain"
	fi
	cp "$plain" "$2"
}

# Modules that provide ALIAS (e.g. crc32c -> crc32c_intel crc32c_generic).
by_alias() {
	awk -v a="$1" '$1 == "alias" && $2 == a { print $3 }' "$MD/modules.alias"
}

add() { # NAME required|optional
	local n m dep want=$2 ko
	n=$(norm "$1")
	# Already picked: a required request upgrades an optional pick.
	if [ -n "${STATE[$n]:-}" ]; then
		if [ "$want" = required ] && [ "${STATE[$n]}" = optional ]; then
			STATE[$n]=required
			sed -i "s/^$n.ko optional\$/$n.ko required/" "$OUT/load-order"
		fi
		return 0
	fi
	if [ -z "${FILE[$n]:-}" ]; then
		if grep -qE "/${1//_/[-_]}\.ko\$" "$MD/modules.builtin"; then return 0; fi
		[ "$want" = optional ] && { vm_log "warning: module $1 not found"; return 0; }
		vm_die "module $1 not found in $MD"
	fi
	STATE[$n]=$want
	ko=$OUT/$n.ko
	decompress "${FILE[$n]}" "$ko"
	add_deps_of "$ko" "$want"
	echo "$n.ko $want" >>"$OUT/load-order"
}

add_deps_of() { # KO required|optional
	local dep m info
	info=$(modinfo_of "$1")
	for dep in $(echo "$info" | sed -n 's/^depends=//p' | tr ',' ' '); do add "$dep" "$2"; done
	for dep in $(echo "$info" | sed -n 's/^softdep=.*pre: *\([^:]*\)\( post:.*\)\?$/\1/p'); do
		if [ -n "${FILE[$(norm "$dep")]:-}" ]; then
			add "$dep" optional
		else
			for m in $(by_alias "$dep"); do add "$m" optional; done
		fi
	done
}

main() {
	local spec
	[ -d "$MD/kernel" ] || vm_die "no modules in $MD"
	rm -rf "$OUT" && mkdir -p "$OUT"
	: >"$OUT/load-order"
	index_modules
	for spec in "$@"; do
		case "$spec" in
		*.ko) add_deps_of "$spec" required ;;
		*\?) add "${spec%\?}" optional ;;
		*) add "$spec" required ;;
		esac
	done
}
main "$@"
