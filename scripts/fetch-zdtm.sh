#!/bin/bash
# Fetches what CRIU's own test runner, test/zdtm.py, needs to run the GPU
# tests (tests/zdtm) in the VM's boot "zdtm", without installing anything:
#   DEST/criu-VERSION/          CRIU's source of the same version as trixie's
#                               criu in CRIU_ROOT (Debian's upstream tarball,
#                               criu_VERSION.orig.tar.xz, from trixie's
#                               deb-src), unpacked and untouched
#   DEST/root/                  trixie's python3.13, python3-yaml,
#                               python3-protobuf, python3-pycriu (zdtm.py's
#                               imports: pycriu with its generated protobuf
#                               modules, which the source tree lacks), GNU
#                               make (zdtm.py starts each test with make),
#                               bash and libc-bin (ldd: the ns flavour copies
#                               each test's libraries into its root), GNU
#                               tar (CRIU dumps the ns flavour's tmpfs
#                               mounts with it; busybox's tar lacks options),
#                               iproute2 and iptables (CRIU saves a net
#                               namespace's addresses, routes and rules with
#                               ip and iptables-save),
#                               util-linux's flock alone (zdtm.py serialises
#                               its cgroup set-up with it; busybox has none;
#                               it needs only libc) and coreutils' rm alone
#                               (zdtm's Makefile.inc runs rm --one-file-system,
#                               which busybox's rm refuses), with
#                               their library closure in trixie, verified:
#                               every DT_NEEDED of every unpacked ELF resolves
#                               inside DEST/root or CRIU_ROOT
#
# usage: fetch-zdtm.sh DEST CRIU_ROOT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
CRIU_ROOT=$(cd "$2" && pwd)
WANT="python3.13-minimal libpython3.13-minimal libpython3.13-stdlib python3-yaml python3-protobuf python3-pycriu make bash libc-bin tar iproute2 iptables"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"

# the criu version of CRIU_ROOT's package, without its Debian revision
criu_deb=$(ls "$(dirname "$CRIU_ROOT")"/debs/criu_*.deb 2>/dev/null | head -1)
[ -n "$criu_deb" ] || { echo "fetch-zdtm: no criu_*.deb beside $CRIU_ROOT: run scripts/fetch-criu.sh" >&2; exit 1; }
version=$(dpkg-deb -f "$criu_deb" Version)
upstream=${version%-*}

fetch_source() {
	local uri sha line
	[ -f "$DEST/criu-$upstream/test/zdtm.py" ] && return 0
	apt_private "$DEST/apt-src" "$DEBS_SUITE"
	sed 's/^deb /deb-src /' "$DEST/apt-src/sources.list" >"$DEST/apt-src/sources.list.src"
	cat "$DEST/apt-src/sources.list.src" >>"$DEST/apt-src/sources.list"
	"${APTP[@]}" update >/dev/null
	# 'URI' criu_V.orig.tar.xz SIZE SHA256:HEX
	line=$("${APTP[@]}" source --print-uris "criu=$version" 2>/dev/null | grep "criu_$upstream.orig.tar")
	uri=$(echo "$line" | awk '{ print $1 }' | tr -d "'")
	sha=$(echo "$line" | sed -n 's/.*SHA256:\([0-9a-f]*\).*/\1/p')
	[ -n "$uri" ] && [ -n "$sha" ] || { echo "fetch-zdtm: trixie's deb-src lists no criu_$upstream.orig.tar (criu $version)" >&2; return 1; }
	curl -fsSL -o "$DEST/criu.orig.tar.tmp" "$uri"
	echo "$sha  $DEST/criu.orig.tar.tmp" | sha256sum -c --quiet ||
		{ echo "fetch-zdtm: $uri: SHA256 differs from trixie's Sources" >&2; return 1; }
	rm -rf "$DEST/criu-$upstream"
	tar -xf "$DEST/criu.orig.tar.tmp" -C "$DEST"
	rm -f "$DEST/criu.orig.tar.tmp"
	[ -f "$DEST/criu-$upstream/test/zdtm.py" ] || { echo "fetch-zdtm: the tarball has no criu-$upstream/test/zdtm.py" >&2; return 1; }
	echo "fetch-zdtm: CRIU $upstream source in $DEST/criu-$upstream"
}

fetch_root() {
	local have closure
	debs_fresh "$DEST" "$WANT flock rm" usr/bin/python3 && return 0
	have=" $(ls "$(dirname "$CRIU_ROOT")/debs" | sed -n 's/_.*//p' | tr '\n' ' ') "
	# shellcheck disable=SC2086 # a list of package names
	closure=$(debs_closure "$have" $WANT)
	# shellcheck disable=SC2086
	debs_unpack "$DEST" .status-zdtm $closure
	debs_trim_python "$DEST"
	mkdir -p "$DEST/one"
	(cd "$DEST/one" && "${APTP[@]}" download "util-linux/$DEBS_SUITE" "coreutils/$DEBS_SUITE" >/dev/null)
	dpkg-deb --fsys-tarfile "$DEST"/one/util-linux_*.deb | tar -x -C "$DEST/root" ./usr/bin/flock
	dpkg-deb --fsys-tarfile "$DEST"/one/coreutils_*.deb | tar -x -C "$DEST/root" ./usr/bin/rm
	rm -rf "$DEST/one"
	debs_verify fetch-zdtm "$DEST" "$CRIU_ROOT"
	debs_done fetch-zdtm "$DEST" "$WANT flock rm"
	echo "fetch-zdtm: $(du -sh "$DEST/root" | cut -f1) unpacked in $DEST/root"
}

fetch_source
fetch_root
