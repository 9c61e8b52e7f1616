#!/bin/bash
# The repository alone runs its main job: a clone of the committed tree into
# an empty directory, with nothing beside it (no ../shared), runs `make demo`
# there. The demo's own checks (the workload re-checks every byte after its
# move to the other hive; the tool's inspect and check on the kept images)
# must pass, and nothing may be read from outside the clone: the clone's
# parent holds the clone and nothing else.
#
# Downloads (criu, the VM kernel, qemu's packages) come from the cache make
# uses (AMDGPU_CRIU_CACHE), so that a clone does not fetch them again.
# Environment: none required; ROOT is this repository.
# Runs one VM boot: not in parallel with others.
# run-suite-timeout: 2400
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d -t standalone.XXXXXX)
KEEP=${BUILD:-$ROOT/build}/test-logs/host.test-standalone
trap 'rm -rf "$T"' EXIT
rm -rf "$KEEP"

check "the committed tree clones into an empty directory" git clone -q "$ROOT" "$T/alone/repo"
check "the clone's parent holds nothing but the clone" test "$(ls -A "$T/alone")" = repo
if [ -d "$T/alone/repo" ]; then
	(cd "$T/alone/repo" && timeout 2300 make demo </dev/null) >"$T/demo.out" 2>&1
	rc=$?
	check "make demo in the clone exits 0 (rc $rc)" test "$rc" = 0
	check "the job's own verdict after the move is PASS" grep -q '^   Its own verdict: PASS' "$T/demo.out"
	check "the demo ends with its checks passed, none failed" \
		grep -Eq '^Done: [1-9][0-9]* checks passed, none failed' "$T/demo.out"
	check "the clone's parent still holds nothing but the clone" test "$(ls -A "$T/alone")" = repo
	if [ "$TAP_FAILED" -ne 0 ]; then
		mkdir -p "$KEEP" && cp "$T/demo.out" "$KEEP/"
		tail -30 "$T/demo.out" | sed 's/^/# /'
	fi
fi
tap_done
