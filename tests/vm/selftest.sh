#!/bin/bash
# Checks that vm-suite.sh turns each kind of breakage into a visible failure
# and still ends its TAP stream: a failing result, a short plan, a test past
# its time limit, a kernel panic, and a VM that hangs past VM_TIMEOUT.
# Three boots of the guest tests in tests/vm/guest/selftest. Prints TAP.
#
# usage: selftest.sh          (env: BUILD, CRIU as for vm-suite.sh)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
export BUILD
N=0 FAILED=0

# expect RUN OUTPUT REGEX DESCRIPTION: a line of the run's TAP matches.
expect() {
	N=$((N + 1))
	if grep -qE "$3" <<<"$2"; then echo "ok $N - $1: $4"; else
		FAILED=$((FAILED + 1))
		echo "not ok $N - $1: $4"
		echo "# expected a line matching: $3"
		sed 's/^/#   /' <<<"$2" | tail -n 15
	fi
}

# run NAME VM_ONLY [VM_TIMEOUT]: one boot; prints its output and status.
run() {
	local rc=0
	VM_ONLY=$2 VM_TIMEOUT=${3:-120} VM_LOGS=$BUILD/vm-logs/selftest-$1 "$HERE/vm-suite.sh" selftest || rc=$?
	echo "vm-suite status $rc"
}

main() {
	local out
	out=$(run results "test-st-fail test-st-short test-st-timeout" 2>&1)
	expect results "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect results "$out" '^ok [0-9]+ - test-st-fail: passes$' "a passing result is passed on"
	expect results "$out" '^not ok [0-9]+ - test-st-fail: fails on purpose$' "a failing result is passed on"
	expect results "$out" '^not ok [0-9]+ - test-st-short: ended with status 0 after 1 of 3' "a short plan fails"
	expect results "$out" '^not ok [0-9]+ - test-st-timeout: ended with status 137' "a test past its limit is killed and fails"
	expect results "$out" '^ok [0-9]+ - selftest: VM ran the whole suite' "the suite goes on after a failed test"
	expect results "$out" '^1\.\.[0-9]+$' "the TAP stream ends with a plan"

	out=$(run panic "test-st-panic" 2>&1)
	expect panic "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect panic "$out" '^not ok [0-9]+ - test-st-panic: did not finish' "the test cut short by a panic fails"
	expect panic "$out" '^not ok [0-9]+ - selftest: VM ran the whole suite' "the missing end of the suite fails"
	expect panic "$out" '^not ok [0-9]+ - selftest: kernel log clean' "the panic in the kernel log fails"

	out=$(run hang "test-st-hang" 20 2>&1)
	expect hang "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect hang "$out" '^not ok [0-9]+ - test-st-hang: did not finish' "the hung test fails"
	expect hang "$out" '^not ok [0-9]+ - selftest: VM finished within 20 s' "the VM is killed at its limit"
	echo "1..$N"
	[ "$FAILED" -eq 0 ]
}
# One line, read whole before it runs: an edit of this file during a run
# (a shared work tree) cannot make bash read on into changed text.
main "$@"; exit
