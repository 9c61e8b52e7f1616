# shellcheck shell=bash
# Sourced helper of fetch-runtimes.sh, fetch-podman.sh, fetch-cri.sh and fetch-zdtm.sh: Debian packages
# downloaded with the private apt configuration (apt-private.sh, APTP set)
# and unpacked into a root for the VM, never installed.
#
#   debs_fresh DEST WANT PROGRAM     true when DEST/root already holds WANT
#                                    (its stamp) and PROGRAM; else empties DEST
#                                    and sets APTP/APTC up for trixie there
#   debs_done NAME DEST WANT         the stamp, and one line naming the packages
#   debs_deps_of PKG                 PKG's Depends and Pre-Depends (trixie):
#                                    the first of each alternative, a virtual
#                                    package as its first provider
#   debs_closure HAVE PKG...         PKG... and, recursively, the library
#                                    packages they depend on (debs_deps_of),
#                                    without libc6, -dev packages and those in
#                                    HAVE (" a b ", already in another root)
#   debs_unpack DEST STATUS PKG...   downloads PKG... (trixie) into DEST/debs,
#                                    unpacks them into DEST/root, writes their
#                                    dpkg status stanzas (without Status: and
#                                    Depends, see vm-suite.sh) to DEST/root/STATUS,
#                                    and drops docs, manuals, locales, headers
#   debs_verify NAME DEST ROOT...    every DT_NEEDED of every ELF file in
#                                    DEST/root resolves in DEST/root or a ROOT;
#                                    else one line naming the missing ones
#   debs_trim_python DEST            python3.13 in DEST/root without tests,
#                                    GUI, installer parts and byte code, as
#                                    usr/bin/python3
DEBS_SUITE=trixie
DEBS_LIBDIR=usr/lib/x86_64-linux-gnu

debs_fresh() {
	local dest=$1 want=$2 program=$3
	if [ -f "$dest/root/.fetched" ] && [ "$(cat "$dest/root/.fetched")" = "$want" ] &&
		[ -x "$dest/root/$program" ]; then
		return 0
	fi
	rm -rf "$dest/debs" "$dest/root"
	mkdir -p "$dest/debs" "$dest/root"
	apt_private "$dest/apt" "$DEBS_SUITE"
	"${APTP[@]}" update >/dev/null
	return 1
}

debs_done() {
	echo "$3" >"$2/root/.fetched"
	echo "$1: $(ls "$2/debs" | sed 's/_amd64.deb\|_all.deb//' | tr '\n' ' ')"
}

debs_deps_of() {
	"${APTC[@]}" depends --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances "$1/$DEBS_SUITE" 2>/dev/null |
		awk 'virt && /^    [^ ]/ { print $1; virt = 0; next }
			{ virt = 0 }
			/^ *\|?(Pre)?Depends:/ { first = !alt; alt = ($1 ~ /^\|/) }
			/^ *\|?(Pre)?Depends:/ && first { if ($2 ~ /^</) virt = 1; else print $2 }'
}

debs_closure() {
	local have=$1 closure=" " todo p d
	shift
	todo="$*"
	while [ -n "$todo" ]; do
		# shellcheck disable=SC2086 # a list of package names
		set -- $todo
		p=$1
		shift
		todo="$*"
		case "$closure$have" in *" $p "*) continue ;; esac
		closure="$closure$p "
		for d in $(debs_deps_of "$p"); do
			case "$d" in libc6 | *-dev) continue ;; lib* | zlib1g) todo="$todo $d" ;; esac
		done
	done
	echo "$closure"
}

debs_unpack() {
	local dest=$1 status=$2 d
	shift 2
	# shellcheck disable=SC2046
	(cd "$dest/debs" && "${APTP[@]}" download $(for d in "$@"; do echo "$d/$DEBS_SUITE"; done) >/dev/null)
	for d in "$dest"/debs/*.deb; do dpkg -x "$d" "$dest/root"; done
	for d in "$dest"/debs/*.deb; do
		dpkg-deb -f "$d" Package Version Architecture Multi-Arch Provides Maintainer Description
		echo
	done >"$dest/root/$status"
	rm -rf "$dest/root/usr/share/doc" "$dest/root/usr/share/man" "$dest/root/usr/share/locale" \
		"$dest/root/usr/share/info" "$dest/root/usr/share/lintian" "$dest/root/usr/include" \
		"$dest/root/usr/share/zsh" "$dest/root/usr/share/fish" "$dest/root/usr/share/bash-completion" \
		"$dest/root/$DEBS_LIBDIR/gconv"
}

debs_verify() {
	local name=$1 dest=$2 elf so r found missing=""
	shift 2
	while IFS= read -r elf; do
		for so in $(readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			found=0
			for r in "$dest/root" "$@"; do
				if [ -e "$r/$DEBS_LIBDIR/$so" ] || [ -e "$r/usr/lib64/$so" ]; then found=1; break; fi
			done
			[ "$found" = 1 ] || missing="$missing $so(${elf##*/})"
		done
	done < <(find "$dest/root" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
		'head -c 4 "$1" | od -An -c | tr -d " " | grep -q "^177ELF$" && echo "$1"' _ {} \;)
	if [ -n "$missing" ]; then
		echo "$name: unresolved libraries:$missing" >&2
		return 1
	fi
}

# debs_trim_python DEST: trixie's python3.13 unpacked in DEST/root without
# its standard library's tests, GUI and installer parts and its byte code,
# and named python3
debs_trim_python() {
	rm -rf "$1"/root/usr/lib/python3.13/{test,idlelib,tkinter,turtledemo,ensurepip,lib2to3,pydoc_data} \
		"$1"/root/usr/lib/python3.13/config-*
	find "$1/root" -name __pycache__ -prune -exec rm -rf {} +
	ln -sfn python3.13 "$1/root/usr/bin/python3"
}
