#!/bin/bash
# Checks that vm-suite.sh turns each kind of breakage into a visible failure
# and still ends its TAP stream: a failing result, a short plan, a test past
# its time limit, a kernel panic and a guest that goes silent (each followed
# by a boot that runs the tests after it), and a VM still alive at its
# total limit (the heartbeat of a long test is progress, not a stall).
# Six boots of the guest tests in tests/vm/guest/selftest. Prints TAP.
#
# run-suite-parallel: yes (its own suite directory build/vm/selftest and logs; the runs that test no limit keep the default ones; the stall run's 20 s of silence counts only after the guest's /init started, a boot has its own 300 s; the hang run's total of 150 s is ten times an idle boot, its 40 s of silence four heartbeats)
# usage: selftest.sh          (env: BUILD, CRIU as for vm-suite.sh)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
export BUILD
N=0 FAILED=0

# expect RUN OUTPUT REGEX DESCRIPTION: a line of the run's TAP matches. On
# a failure, what each VM run ended with comes first (a summary of a log
# keeps the first lines of a failure), then the run's last lines.
expect() {
	N=$((N + 1))
	if grep -qE "$3" <<<"$2"; then echo "ok $N - $1: $4"; else
		FAILED=$((FAILED + 1))
		echo "not ok $N - $1: $4"
		echo "# expected a line matching: $3"
		grep -E 'VM run [0-9]|booting again|did not finish|run-vm\.sh:|^vm-suite status' <<<"$2" | sed 's/^/#   /'
		sed 's/^/#   /' <<<"$2" | tail -n 15
	fi
}

# run NAME VM_ONLY [VM_TIMEOUT [VM_STALL_TIMEOUT]]: one suite run; prints
# its output, what run-vm.sh said, and its status. Without limits, the
# suite's own (the sum of the tests' limits, 240 s of silence).
run() {
	local rc=0 logs=$BUILD/vm-logs/selftest-$1
	VM_ONLY=$2 VM_TIMEOUT=${3:-} VM_STALL_TIMEOUT=${4:-} VM_LOGS=$logs \
		"$HERE/vm-suite.sh" selftest || rc=$?
	sed 's/^/# /' "$logs/run-vm.log" 2>/dev/null || true
	echo "vm-suite status $rc"
}

main() {
	local out
	out=$(run results "test-st-fail test-st-short test-st-timeout" 2>&1)
	expect results "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect results "$out" '^ok [0-9]+ - test-st-fail: passes$' "a passing result is passed on"
	expect results "$out" '^not ok [0-9]+ - test-st-fail: fails on purpose$' "a failing result is passed on"
	expect results "$out" '^not ok [0-9]+ - test-st-short: ended with status 0 after 1 of 3' "a short plan fails"
	expect results "$out" '^not ok [0-9]+ - test-st-timeout: ended with status 137 \(killed at its time limit of 3 s' "a test past its limit is killed and fails"
	expect results "$out" '^ok [0-9]+ - selftest: VM ran the whole suite' "the suite goes on after a failed test"
	expect results "$out" '^1\.\.[0-9]+$' "the TAP stream ends with a plan"

	out=$(run panic "test-st-panic test-st-tail" 2>&1)
	expect panic "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect panic "$out" '^not ok [0-9]+ - test-st-panic: did not finish: the guest kernel crashed' "the test cut short by a panic fails, saying why"
	expect panic "$out" '^ok [0-9]+ - test-st-tail: a test after' "a second boot runs the tests after it"
	expect panic "$out" '^ok [0-9]+ - selftest: VM ran the whole suite and powered off \(in 2 boots\)' "the suite ends in the second boot"
	expect panic "$out" '^not ok [0-9]+ - selftest: kernel log clean' "the panic in the kernel log fails"

	out=$(run stall "test-st-stall test-st-tail" "" 20 2>&1)
	expect stall "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect stall "$out" '^not ok [0-9]+ - test-st-stall: did not finish: the guest made no progress for 20 s' "a silent guest is a hang, named by its test and limit"
	expect stall "$out" '^ok [0-9]+ - test-st-tail: a test after' "a second boot runs the tests after it"

	out=$(run hang "test-st-hang" 150 40 2>&1)
	expect hang "$out" '^vm-suite status 1$' "vm-suite.sh fails"
	expect hang "$out" '^not ok [0-9]+ - test-st-hang: did not finish: the VM run reached its total limit of 150 s' "the long test fails, naming the total limit"
	expect hang "$out" '^not ok [0-9]+ - selftest: VM finished within 150 s' "the VM is killed at its total limit, not as stalled (its heartbeat is progress)"
	echo "1..$N"
	[ "$FAILED" -eq 0 ]
}
# One line, read whole before it runs: an edit of this file during a run
# (a shared work tree) cannot make bash read on into changed text.
main "$@"; exit
