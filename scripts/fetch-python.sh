#!/bin/bash
# Fetches trixie's python3.13 (the interpreter and its standard library,
# without tests, GUI and installer parts) with its library closure in
# trixie, and unpacks it under DEST without installing anything:
#   DEST/root/usr/bin/python3            (a link to python3.13)
#   DEST/root/usr/lib/python3.13/
#   DEST/root/usr/lib/x86_64-linux-gnu/  the libraries its modules load
#                                        that CRIU_ROOT lacks (verified)
# The VM's boot "rocm" runs Debian testing's rocm-smi with it
# (tests/vm/vm-suite.sh: install_rocm_smi): the guest's python is trixie's,
# as its glibc and the python of the zdtm and cri boots, whatever python
# the host has (a fresh Debian machine may have none).
#
# usage: fetch-python.sh DEST CRIU_ROOT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
CRIU_ROOT=$(cd "${2:?usage: fetch-python.sh DEST CRIU_ROOT}" && pwd)
WANT="python3.13-minimal libpython3.13-minimal libpython3.13-stdlib"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
# shellcheck source=scripts/unpack-debs.sh
. "$HERE/unpack-debs.sh"

debs_fresh "$DEST" "$WANT" usr/bin/python3 && exit 0
have=" $(ls "$(dirname "$CRIU_ROOT")/debs" | sed -n 's/_.*//p' | tr '\n' ' ') "
# shellcheck disable=SC2086 # a list of package names
closure=$(debs_closure "$have" $WANT)
# shellcheck disable=SC2086
debs_unpack "$DEST" .status-python $closure
debs_trim_python "$DEST"
debs_verify fetch-python "$DEST" "$CRIU_ROOT"
debs_done fetch-python "$DEST" "$WANT"
echo "fetch-python: $(du -sh "$DEST/root" | cut -f1) unpacked in $DEST/root"
