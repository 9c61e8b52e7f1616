#!/bin/bash
# Fetches a Kubernetes CRI runtime and what the VM's CRI client needs besides
# the container runtimes of scripts/fetch-runtimes.sh (runc, GNU tar, gzip,
# dpkg) and trixie's criu, and unpacks them under DEST/root without
# installing anything (the VM's "cri" boot puts DEST/root on top of the
# runtimes, see tests/vm/build-initramfs.sh):
#   containerd (Debian testing)  2.1.x: the daemon with its CRI plugin (CDI,
#                                CheckpointContainer, restore from a checkpoint
#                                image) and containerd-shim-runc-v2; a Go
#                                program whose only library is libc. Its ctr,
#                                test shims and CNI test plugins are dropped
#                                (unused: images come through CRI PullImage,
#                                pods use the host's network).
#   runc (Debian testing)        1.3.x, as /usr/sbin/runc-1.3: what the cri
#                                boot's containerd runs (its BinaryName); the
#                                other boots keep trixie's runc 1.1.15 as
#                                /usr/sbin/runc. runc < 1.2 on cgroup v2
#                                gives CRIU no cgroup root on restore, so CRIU
#                                puts the restored task into a copy of the
#                                checkpointed container's cgroup path, outside
#                                the new container's device filter. Links
#                                libc and libseccomp (trixie's, RUNTIMES_ROOT).
#   python3.13 (trixie)          the interpreter and standard library
#   python3-grpcio (trixie)      gRPC for the CRI client (tests/vm/guest/cri:
#                                its own protobuf encoding of the messages it
#                                sends, so no python3-protobuf)
#   libre2-11                    grpcio's libre2.so.11: its Depends names the
#                                virtual libre2-11-absl20240722, which apt-cache
#                                does not resolve to this package
# plus their library closure in trixie (Depends, recursively, library
# packages only), verified: every DT_NEEDED of every unpacked ELF resolves
# inside DEST, RUNTIMES_ROOT or trixie's criu closure (CRIU_ROOT).
# trixie has containerd 1.7, which has no CheckpointContainer: the daemon
# and runc come from testing, everything they link with from trixie.
#
# usage: fetch-cri.sh DEST CRIU_ROOT RUNTIMES_ROOT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
CRIU_ROOT=$(cd "$2" && pwd)
RUNTIMES_ROOT=$(cd "$3" && pwd)
WANT="containerd/testing runc/testing python3.13-minimal libpython3.13-minimal libpython3.13-stdlib python3-grpcio libre2-11"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"
debs_fresh "$DEST" "$WANT" usr/sbin/runc-1.3 && exit 0
apt_private "$DEST/apt" "$DEBS_SUITE testing"
"${APTP[@]}" update >/dev/null
have=" $(ls "$RUNTIMES_ROOT/../debs" "$(dirname "$CRIU_ROOT")/debs" 2>/dev/null | sed -n 's/_.*//p' | tr '\n' ' ') "
todo=""
for p in $WANT; do
	case "$p" in */testing) ;; *) todo="$todo $p" ;; esac
done
# shellcheck disable=SC2086 # a list of package names
closure=$(debs_closure "$have" $todo)
# shellcheck disable=SC2086
debs_unpack "$DEST" .status-cri $closure
(cd "$DEST/debs" && "${APTP[@]}" download containerd/testing runc/testing >/dev/null)
dpkg -x "$DEST"/debs/containerd_*.deb "$DEST/root"
{
	dpkg-deb -f "$DEST"/debs/containerd_*.deb Package Version Architecture Multi-Arch Provides Maintainer Description
	echo
} >>"$DEST/root/.status-cri"
# testing's runc beside trixie's (not in the dpkg status: trixie's runc
# package stays the installed one)
mkdir -p "$DEST/runc" "$DEST/root/usr/sbin"
dpkg -x "$DEST"/debs/runc_*.deb "$DEST/runc"
install -m 0755 "$DEST/runc/usr/sbin/runc" "$DEST/root/usr/sbin/runc-1.3"
rm -rf "$DEST/runc"
v=$(dpkg-deb -f "$DEST"/debs/runc_*.deb Version)
case "$v" in 1.3.*) ;; *) echo "fetch-cri: testing's runc is $v, not 1.3.x: see runc-1.3's comment above" >&2; exit 1 ;; esac
rm -rf "$DEST/root/usr/share/doc" "$DEST/root/usr/share/man" "$DEST/root/usr/lib/containerd" \
	"$DEST/root/usr/lib/cni" "$DEST/root/usr/bin/ctr" "$DEST/root/usr/bin/containerd-stress" \
	"$DEST/root/lib/systemd" "$DEST/root/usr/lib/systemd"
debs_trim_python "$DEST"
debs_verify fetch-cri "$DEST" "$RUNTIMES_ROOT" "$CRIU_ROOT"
debs_done fetch-cri "$DEST" "$WANT"
echo "fetch-cri: $(du -sh "$DEST/root" | cut -f1) unpacked in $DEST/root"
