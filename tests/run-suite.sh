#!/bin/bash
# Runs test programs that speak TAP (cmocka unit tests with
# CMOCKA_MESSAGE_OUTPUT=TAP, shell tests through tests/lib/tap.sh), prints
# their results, and ends with the failures listed again (so that the tail of
# a log names them) and the line "N passed, N failed".
# A program that exits non-zero without reporting a failure, or reports fewer
# results than its plan, counts as one more failure: a crash is never a pass.
# Full output of each program: $BUILD/test-logs/<name>.log
# Each program has its own time limit: TEST_TIMEOUT (900 s), or what a script
# asks for with a line "# run-suite-timeout: SECONDS" (the VM suites, whose
# harness enforces each guest test's own, finer limit). A program killed at
# its limit fails alone, saying so; the next one runs.
# A script with the line "# run-suite-parallel: yes" (the VM boots: each
# keeps about one core of this machine busy, measured 112 %) may run next to
# other such scripts, RUN_SUITE_JOBS (2) at a time; every other program runs
# alone. Results are printed in the order given, each program's once it ended.
#
# usage: run-suite.sh PROGRAM...
set -uo pipefail
logs=${BUILD:-build}/test-logs
mkdir -p "$logs"
export CMOCKA_MESSAGE_OUTPUT=TAP
jobs_max=${RUN_SUITE_JOBS:-2}
pass=0 fail=0
failures=() # "[name] not ok ..." lines, repeated above the summary: a CI log's tail shows them
progs=() parallel=()
listed=no
for arg in "$@"; do
	case "$arg" in
	--parallel) listed=yes ;;
	--) listed=no ;;
	*) progs+=("$arg") parallel+=("$listed") ;;
	esac
done

name_of() { echo "$1" | sed 's|^.*build/||; s|^tests/||; s|/|.|g; s|\.sh$||'; }
is_parallel() { # INDEX
	[ "${parallel[$1]}" = yes ] || grep -q '^# run-suite-parallel: *yes' "${progs[$1]}" 2>/dev/null
}
# cpu_secs FILE: user+system CPU seconds on the last line of the output of
# "times" (which must run in the shell itself: a fork's counts start at 0)
cpu_secs() { awk 'END { gsub(/[ms]/, " "); printf "%.0f\n", $1 * 60 + $2 + $3 * 60 + $4 }' "$1"; }

# Runs one program into its log, in a subshell of its own (for its CPU
# time); its exit status goes to LOG.rc, last.
run_one() ( # PROG
	local prog=$1 name log limit rc start=$SECONDS
	name=$(name_of "$prog")
	log=$logs/$name.log
	limit=$(sed -n 's/^# run-suite-timeout: *\([0-9][0-9]*\).*/\1/p' "$prog" 2>/dev/null | head -1)
	limit=${limit:-${TEST_TIMEOUT:-900}}
	timeout -k 10 "$limit" "$prog" </dev/null >"$log" 2>&1
	rc=$?
	[ $rc -ne 124 ] || echo "not ok - $name: killed at its time limit of $limit s (TEST_TIMEOUT, or its '# run-suite-timeout:' line)" >>"$log"
	times >"$log.times"
	echo "# run-suite: $name ended, status $rc, $((SECONDS - start)) s, CPU $(cpu_secs "$log.times") s"
	rm -f "$log.times"
	echo "$rc" >"$log.rc"
)

report() { # PROG
	local name log rc p f plan line said=9
	name=$(name_of "$1")
	log=$logs/$name.log
	rc=$(cat "$log.rc")
	rm -f "$log.rc"
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$log" | tail -1)
	while IFS= read -r line; do
		case "$line" in
		"ok "*)
			echo "[$name] $line"
			said=9
			;;
		"not ok "*)
			echo "[$name] $line"
			failures+=("[$name] $line")
			said=0
			;;
		"# "*)
			[ "$f" -gt 0 ] && echo "[$name] $line"
			# the first lines of a failure's diagnostics go into the list too
			[ "$said" -lt 4 ] && failures+=("[$name]   $line") && said=$((said + 1))
			;;
		esac
	done <"$log"
	if [ "$f" -eq 0 ] && { [ "$rc" -ne 0 ] || { [ -n "$plan" ] && [ "$p" -lt "$plan" ]; } || [ "$p" -eq 0 ]; }; then
		line="[$name] not ok - exited with status $rc after $p of ${plan:-?} results (see $log)"
		echo "$line"
		failures+=("$line")
		tail -n 20 "$log" | sed "s/^/[$name] # /"
		while IFS= read -r line; do failures+=("[$name]   # $line"); done < <(tail -n 4 "$log")
		f=$((f + 1))
	fi
	pass=$((pass + p))
	fail=$((fail + f))
}

# Reports, in order, every program that has ended; stops at the first still running.
next=0
report_ended() {
	while [ "$next" -lt "${#progs[@]}" ] && [ -f "$logs/$(name_of "${progs[$next]}").log.rc" ]; do
		report "${progs[$next]}"
		next=$((next + 1))
	done
}

for prog in "${progs[@]}"; do rm -f "$logs/$(name_of "$prog").log.rc"; done # an earlier run's
for i in "${!progs[@]}"; do
	prog=${progs[$i]}
	if [ "$jobs_max" -gt 1 ] && is_parallel "$i"; then
		while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
			wait -n
			report_ended
		done
		run_one "$prog" &
	else
		wait
		report_ended
		run_one "$prog"
	fi
	report_ended
done
wait
report_ended
if [ "${#failures[@]}" -gt 0 ]; then
	echo "# run-suite: what failed (each program's log is in $logs/):"
	printf '%s\n' "${failures[@]}"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
