#!/bin/bash
# tests/run-suite.sh, the runner of `make check`, on small made-up programs:
# scripts marked "# run-suite-parallel: yes" and programs listed after
# "--parallel" overlap in RUN_SUITE_JOBS lanes, an unmarked program runs
# alone, each program's end is announced with its times, results come out in the order
# given whatever the order of ending, and a crash, a short plan and a
# program killed at its limit each count as a failure, by name. Each
# program writes when it started and ended (ns), so overlap is measured,
# not assumed; two programs that must overlap wait for each other's marks
# (15 s at most, only reached if the runner failed to overlap them), so a
# busy machine cannot pull them apart. No check depends on how fast the
# machine is. Prints TAP.
# run-suite-parallel: yes (its programs wait for each other's marks, not for time; own BUILD under mktemp)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runner=$PWD/tests/run-suite.sh

# prog NAME PARALLEL WAIT [BODY]: a TAP program recording its start and end.
# WAIT: seconds to sleep, "for:X" (until program X has started) or
# "after:X" (until X has ended), polling 15 s at most: a program that waits
# for one that the runner wrongly holds back ends all the same, and the
# check of their overlap fails.
prog() {
	local f=$tmp/$1.sh
	{
		echo '#!/bin/bash'
		[ "$2" = par ] && echo '# run-suite-parallel: yes'
		echo "echo \"\$(date +%s%N)\" >$tmp/$1.start"
		case "$3" in
		for:*) echo "n=150; until [ -s $tmp/${3#for:}.start ] || [ \$n -eq 0 ]; do sleep 0.1; n=\$((n - 1)); done" ;;
		after:*) echo "n=150; until [ -s $tmp/${3#after:}.end ] || [ \$n -eq 0 ]; do sleep 0.1; n=\$((n - 1)); done" ;;
		*) echo "sleep $3" ;;
		esac
		echo "${4:-echo 'ok 1 - $1'; echo 1..1}"
		echo "echo \"\$(date +%s%N)\" >$tmp/$1.end"
	} >"$f"
	chmod +x "$f"
	echo "$f"
}
started() { cat "$tmp/$1.start"; }
ended() { cat "$tmp/$1.end"; }
# overlap A B: A and B ran at the same time for a while
overlap() { [ "$(started "$2")" -lt "$(ended "$1")" ] && [ "$(started "$1")" -lt "$(ended "$2")" ]; }
# before A B: A had ended when B started
before() { [ "$(ended "$1")" -le "$(started "$2")" ]; }

run() { # JOBS PROG...: output in $tmp/out, status in $rc
	local jobs=$1
	shift
	rm -f "$tmp"/*.start "$tmp"/*.end
	RUN_SUITE_JOBS=$jobs BUILD=$tmp/build TEST_TIMEOUT=20 "$runner" "$@" >"$tmp/out" 2>&1
	rc=$?
}

# p1 ends after p2 (it waits for p2's end, p2 for p1's start: they overlap
# whatever the load): the output must still be in order.
p1=$(prog p1 par after:p2)
p2=$(prog p2 par for:p1)
s1=$(prog s1 seq 1)
p3=$(prog p3 par for:p4)
p4=$(prog p4 par for:p3)
run 2 "$p1" "$p2" "$s1" "$p3" "$p4"
check "two marked programs run at the same time" overlap p1 p2
check "an unmarked program waits for the running marked ones" before p1 s1
check "... and the next marked one waits for it" before s1 p3
check "the marked ones after it overlap again" overlap p3 p4
order=$(grep -o '^\[[^]]*\]' "$tmp/out" | tr -d '[]' | sed 's/.*\.//' | tr '\n' ' ')
check "results in the order given, not the order of ending ($order)" [ "$order" = "p1 p2 s1 p3 p4 " ]
check "final line counts every result, status 0" \
	[ "$(tail -1 "$tmp/out")" = "5 passed, 0 failed" ] && [ "$rc" -eq 0 ]

a=$(prog a par 1)
b=$(prog b par 1)
c=$(prog c par 1)
run 1 "$a" "$b" "$c"
check "RUN_SUITE_JOBS=1: one at a time" eval 'before a b && before b c'
run 2 "$a" "$b" "$c"
check "RUN_SUITE_JOBS=2: never three at once" eval '! { overlap a c && overlap b c && overlap a b; }'

crash=$(prog crash par 0 'echo "ok 1 - half"; echo 1..2; exit 3')
slow=$(prog slow par 30)
sed -i '2a # run-suite-timeout: 2' "$slow"
good=$(prog good par 0)
run 2 "$crash" "$slow" "$good"
check "a parallel program that crashes short of its plan fails, by name" \
	grep -q '^\[.*crash\] not ok - exited with status 3 after 1 of 2 results' "$tmp/out"
check "a parallel program killed at its own limit fails, saying so" \
	grep -q '^\[.*slow\] not ok - .*slow: killed at its time limit of 2 s' "$tmp/out"
check "the others still pass; status non-zero" \
	eval 'grep -q "^\[.*good\] ok 1 - good" "$tmp/out" && [ "$(tail -1 "$tmp/out")" = "2 passed, 2 failed" ] && [ "$rc" -ne 0 ]'

# The tail of the output names every failure, with its first diagnostics:
# that tail is often all a CI log keeps.
bad=$(prog bad seq 0 'echo "ok 1 - fine"; echo "not ok 2 - broke"; echo "# why: a reason"; echo "# more"; echo 1..2')
run 1 "$bad" "$crash" "$good"
check "the last lines list each failure and its first diagnostic lines" eval \
	'sed -n "/^# run-suite: what failed/,\$p" "$tmp/out" >"$tmp/tail" &&
	 grep -q "^\[.*bad\] not ok 2 - broke" "$tmp/tail" &&
	 grep -q "^\[.*bad\]   # why: a reason" "$tmp/tail" &&
	 grep -q "^\[.*crash\] not ok - exited with status 3" "$tmp/tail" &&
	 ! grep -q "good" "$tmp/tail" && [ "$(wc -l <"$tmp/tail")" -le 12 ] &&
	 [ "$(tail -1 "$tmp/out")" = "3 passed, 2 failed" ]'

# Unmarked programs listed after --parallel (up to --) run in lanes too.
u1=$(prog u1 seq for:u2)
u2=$(prog u2 seq for:u1)
u3=$(prog u3 seq 1)
run 2 --parallel "$u1" "$u2" -- "$u3"
check "--parallel: unmarked programs listed after it overlap" overlap u1 u2
check "... and one after -- runs alone again" eval 'before u1 u3 && before u2 u3'
check "... in order, all counted" eval '[ "$(grep -o "^\[[^]]*\]" "$tmp/out" | tr -d "[]" | sed "s/.*\.//" | tr "\n" " ")" = "u1 u2 u3 " ] && [ "$(tail -1 "$tmp/out")" = "3 passed, 0 failed" ]'
check "each program's end is announced with status, wall and CPU seconds" \
	eval '[ "$(grep -c "^# run-suite: .*u[123] ended, status 0, [0-9]* s, CPU [0-9]* s$" "$tmp/out")" -eq 3 ]'
# burn: busy until its own CPU time (utime + stime, /proc/PID/stat fields
# 14 and 15, read without forking) is 2 s, however long a busy machine
# takes to give it that; the runner must report that time, not its own.
burn=$(prog burn seq 0 'limit=$((2 * $(getconf CLK_TCK))); while read -r -a f </proc/$BASHPID/stat && [ $((f[13] + f[14])) -lt "$limit" ]; do :; done; echo "ok 1 - burn"; echo 1..1')
sed -i '2a # run-suite-timeout: 300' "$burn" # 2 s of CPU, on a busy machine
run 1 "$burn"
check "the CPU time is the program's (busy until its own CPU time is 2 s: 1 s or more)" \
	grep -Eq '^# run-suite: .*burn ended, status 0, [0-9]+ s, CPU ([1-9]|[1-9][0-9]+) s$' "$tmp/out"

# A result file of an earlier run must not be taken for this run's.
mkdir -p "$tmp/build/test-logs"
early=$(prog early par 1)
late=$(prog late par 2 "echo 'not ok 1 - late'; echo 1..1")
name=$(echo "$late" | sed 's|^.*build/||; s|^tests/||; s|/|.|g; s|\.sh$||')
printf 'ok 1 - stale\n1..1\n' >"$tmp/build/test-logs/$name.log"
echo 0 >"$tmp/build/test-logs/$name.log.rc"
run 2 "$early" "$late"
check "a stale log of an earlier run is not reported" \
	eval '! grep -q stale "$tmp/out" && grep -q "not ok 1 - late" "$tmp/out"'

tap_done
