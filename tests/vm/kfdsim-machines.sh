#!/bin/bash
# The kfdsim machine descriptions of the guest tests, made from the read-only
# KFD topology captures with the module's mkdesc.sh, and the captures they
# come from (the guest compares its sysfs tree with them):
#   OUTDIR/machines/NAME.desc
#   OUTDIR/captures.tar         captures/NAME/..., unpacked in the guest: one
#                               file instead of thousands to copy on each run
# Cached: OUTDIR/key is a hash of mkdesc.sh, this script (the machine table)
# and every file of the captures; the set is made again only when it changes.
# Made in a temporary dir and renamed, so a failed run leaves nothing half made.
#
# usage: kfdsim-machines.sh MKDESC FIXTURES OUTDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
MKDESC=$(realpath "$1") FIXTURES=$2 OUT=$3
TMPSET=

cleanup() { [ -z "$TMPSET" ] || rm -rf "$TMPSET"; }
trap cleanup EXIT

# NAME CAPTURE [MKDESC OPTIONS]: the machines guest-kfdsim.sh expects.
MACHINES="mi308x k8sdp-mi308x-8gpu-cpx-32part-2socket
mi210 k8sdp-mi210-8gpu-2hives-2socket --add-gpu-ids
workstation rocprofsdk-testdata-workstation-3gpu-plus-3-foreign-nodes --add-gpu-ids --nodes 0-3"

captures() { echo "$MACHINES" | awk '{ print $2 }'; }

check_fixtures() {
	local c
	[ -d "$FIXTURES" ] || vm_die "no KFD topology captures at $FIXTURES (set KFD_FIXTURES; make passes tests/fixtures/kfd-topologies)"
	for c in $(captures); do
		[ -d "$FIXTURES/$c/nodes" ] || vm_die "no capture $FIXTURES/$c"
	done
}

# Hash of everything the output depends on: paths and contents.
inputs_key() {
	{
		sha256sum "$MKDESC" "${BASH_SOURCE[0]}" | awk '{ print $1 }'
		# shellcheck disable=SC2046 # capture names have no spaces
		(cd "$FIXTURES" && find $(captures) -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
	} | sha256sum | awk '{ print $1 }'
}

make_descriptions() { # DIR
	local name cap opts
	mkdir -p "$1/machines"
	while read -r name cap opts; do
		# shellcheck disable=SC2086 # opts: separate words
		"$MKDESC" "$FIXTURES/$cap" $opts >"$1/machines/$name.desc"
	done <<<"$MACHINES"
}

# captures/NAME/... (the fixtures are read-only: u+w, so that the guest's
# copies behave like any other file)
pack_captures() { # TARFILE
	local name cap opts rename=()
	while read -r name cap opts; do
		rename+=(--transform "s|^$cap|captures/$name|")
	done <<<"$MACHINES"
	# shellcheck disable=SC2046 # capture names have no spaces
	tar -cf "$1" -C "$FIXTURES" --format=ustar --sort=name --owner=0 --group=0 \
		--numeric-owner --mode=u+w "${rename[@]}" $(captures)
}

main() {
	local key
	check_fixtures
	key=$(inputs_key)
	if [ "$(cat "$OUT/key" 2>/dev/null)" = "$key" ]; then
		vm_log "machine descriptions up to date ($OUT)"
		return 0
	fi
	TMPSET=$OUT.tmp.$$
	rm -rf "$TMPSET" && mkdir -p "$TMPSET"
	make_descriptions "$TMPSET"
	pack_captures "$TMPSET/captures.tar"
	echo "$key" >"$TMPSET/key"
	rm -rf "$OUT"
	mv "$TMPSET" "$OUT"
	vm_log "machine descriptions made: $(ls "$OUT/machines" | tr '\n' ' ')"
}
main "$@"
