#!/bin/bash
# Fetches Debian trixie's podman and what it needs besides the container
# runtimes of scripts/fetch-runtimes.sh (runc, crun, libcriu2, GNU tar,
# gzip, dpkg) and trixie's criu, and unpacks them under DEST/root without
# installing anything (the VM's "podman" boot puts DEST/root on top of the
# runtimes, see tests/vm/build-initramfs.sh):
#   podman                          5.4.2: the CLI and engine (rootful, cgroupfs,
#                                   no systemd: its compiled defaults)
#   conmon                          runs `<runtime> run|restore` for podman
#   golang-github-containers-common containers.conf, seccomp.json, policy.json
#   golang-github-containers-image  registries.conf, policy files
#   netavark                        a hard Depends (unused: --network none)
#   catatonit                       podman's --init (unused, small)
#   iproute2                        `ip`: CRIU saves and restores a container's
#                                   network namespace with `ip addr|route|rule
#                                   save|restore` (crun dumps it whole; runc
#                                   asks for an empty one); busybox's ip cannot
# plus their library closure in trixie (Depends, recursively, library
# packages only), verified: every DT_NEEDED of every unpacked ELF resolves
# inside DEST, RUNTIMES_ROOT or trixie's criu closure (CRIU_ROOT).
#
# usage: fetch-podman.sh DEST CRIU_ROOT RUNTIMES_ROOT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
CRIU_ROOT=$(cd "$2" && pwd)
RUNTIMES_ROOT=$(cd "$3" && pwd)
WANT="podman conmon golang-github-containers-common golang-github-containers-image netavark catatonit iproute2"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"
debs_fresh "$DEST" "$WANT" usr/bin/podman && exit 0
# Library packages the runtimes' or criu's closure already holds are not
# fetched again (their files are in the guest).
have=" $(ls "$RUNTIMES_ROOT/../debs" "$(dirname "$CRIU_ROOT")/debs" 2>/dev/null | sed -n 's/_.*//p' | tr '\n' ' ') "
# shellcheck disable=SC2086 # a list of package names
closure=$(debs_closure "$have" $WANT)
# shellcheck disable=SC2086
debs_unpack "$DEST" .status-podman $closure
# podman's own test helper (36 MB) and netavark's DHCP client: not for --network none
rm -f "$DEST/root/usr/libexec/podman/podman-testing" "$DEST/root/usr/lib/podman/netavark-dhcp-proxy-client"
debs_verify fetch-podman "$DEST" "$RUNTIMES_ROOT" "$CRIU_ROOT"
debs_done fetch-podman "$DEST" "$WANT"
echo "fetch-podman: $(du -sh "$DEST/root" | cut -f1) unpacked in $DEST/root"
