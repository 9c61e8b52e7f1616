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
WANT="runc crun libcriu2 tar gzip dpkg libc-bin"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"
debs_fresh "$DEST" "$WANT" usr/sbin/runc && exit 0
closure=$(for p in $WANT; do
	echo "$p"
	"${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances "$p/$DEBS_SUITE" 2>/dev/null |
		sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | grep -E '^(lib|zlib1g$)' | grep -v -e '-dev$' -e '^libc6$'
done | sort -u) # libc6: the criu closure's, which the guest runs everything with
# shellcheck disable=SC2086
debs_unpack "$DEST" .status-runtimes $closure
debs_verify fetch-runtimes "$DEST" "$CRIU_ROOT"
debs_done fetch-runtimes "$DEST" "$WANT"
