#!/bin/bash
# `make CACHE=DIR` (and AMDGPU_CRIU_CACHE=DIR in the environment) reaches
# every consumer of the download cache: make itself, the scripts it runs
# (install-deps.sh, fetch-criu*.sh read AMDGPU_CRIU_CACHE) and the VM
# harness (tests/vm/lib.sh: kernels, apt lists). Before the fix the scripts
# and the VM harness still used ~/.cache/amdgpu-criu. Prints TAP.
# run-suite-parallel: yes (only `make cache-paths`, which prints paths, with a temporary CACHE or HOME)
set -uo pipefail
# a make of its own: not a job of the make that runs the suite (make -jN check)
unset MAKEFLAGS MFLAGS MAKELEVEL
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# all_under OUTPUT DIR: every "consumer path" line names DIR
all_under() {
	local line n=0
	while read -r _ path; do
		n=$((n + 1))
		case "$path" in "$2" | "$2"/*) ;; *) diag "not under $2: $path"; return 1 ;; esac
	done <<<"$1"
	[ "$n" -eq 3 ]
}

out=$(env -u AMDGPU_CRIU_CACHE make -s --no-print-directory CACHE="$tmp/a" cache-paths 2>&1)
diag "$(echo "$out" | tr '\n' ';')"
check "make CACHE=DIR: make, the scripts and the VM harness all use DIR" all_under "$out" "$tmp/a"

out=$(AMDGPU_CRIU_CACHE="$tmp/b" make -s --no-print-directory cache-paths 2>&1)
check "AMDGPU_CRIU_CACHE=DIR: all use DIR" all_under "$out" "$tmp/b"

out=$(env -u AMDGPU_CRIU_CACHE HOME="$tmp/home" make -s --no-print-directory cache-paths 2>&1)
check "neither: all use ~/.cache/amdgpu-criu" all_under "$out" "$tmp/home/.cache/amdgpu-criu"
tap_done
