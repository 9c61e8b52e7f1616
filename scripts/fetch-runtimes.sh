#!/bin/bash
# Fetches Debian trixie's container runtimes and what a CRIU checkpoint of a
# container needs besides criu, and unpacks them under DEST without
# installing anything (the VM's "ct" boot puts DEST/root on top of trixie's
# criu closure, see tests/vm/build-initramfs.sh):
#   runc                1.1.15: runs `criu swrk` itself
#   crun + libcriu2     1.21: dlopen()s libcriu.so.2, which runs `criu swrk`
#   tar, gzip           GNU: CRIU dumps and restores a container's tmpfs /dev
#                       with GNU tar options busybox's tar refuses
#   dpkg, libc-bin      the guest installs `make deb`'s package with dpkg,
#                       which wants ldconfig (libc-bin) in PATH
# plus their library closure in trixie (Depends, recursively, library
# packages only), verified: every DT_NEEDED of every unpacked ELF resolves
# inside DEST or in trixie's criu closure (CRIU_ROOT).
#
# usage: fetch-runtimes.sh DEST CRIU_ROOT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
CRIU_ROOT=$(cd "$2" && pwd)
SUITE=trixie
WANT="runc crun libcriu2 tar gzip dpkg libc-bin"
STAMP="$DEST/root/.fetched"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$DEST/root/usr/sbin/runc" ]; then
	exit 0
fi
rm -rf "$DEST/debs" "$DEST/root"
mkdir -p "$DEST/debs" "$DEST/root"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"
apt_private "$DEST/apt" "$SUITE"
"${APTP[@]}" update >/dev/null
closure=$(for p in $WANT; do
	echo "$p"
	"${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$p/$SUITE" 2>/dev/null |
		sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | grep -E '^(lib|zlib1g$)' | grep -v -e '-dev$' -e '^libc6$'
done | sort -u) # libc6: the criu closure's, which the guest runs everything with
# shellcheck disable=SC2086
debs_unpack "$DEST" .status-runtimes $closure
debs_verify fetch-runtimes "$DEST" "$CRIU_ROOT"
echo "$WANT" >"$STAMP"
echo "fetch-runtimes: $(ls "$DEST/debs" | sed 's/_amd64.deb\|_all.deb//' | tr '\n' ' ')"
