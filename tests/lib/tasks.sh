# shellcheck shell=bash
# Host tests that run workloads under CRIU: waiting, the state of tasks, and
# cleaning up. The caller sets T (its scratch directory), KEEP (where T's
# files go when a check failed) and TRACKED (PIDs to kill on exit while they
# still run one of its commands, i.e. their cmdline names $T).

# tasks_cleanup: for `trap tasks_cleanup EXIT`
tasks_cleanup() {
	local p
	for p in "${TRACKED[@]}"; do
		if [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$T/"; then
			kill -KILL "$p" 2>/dev/null
		fi
	done
	if [ "$TAP_FAILED" -ne 0 ]; then
		mkdir -p "$KEEP"
		cp -a "$T/." "$KEEP/" 2>/dev/null
		find "$KEEP" -name 'pages-*.img' -delete 2>/dev/null
		echo "# artifacts kept in $KEEP"
	fi
	rm -rf "$T"
}

# wait_until SECONDS COMMAND...: poll every 50 ms; false on timeout
wait_until() {
	local n=$(($1 * 20))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}
# state PID: the state letter of /proc/PID/stat, empty if there is no such task
state() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	echo "${st%% *}"
}
# alive PID: exists and is not a zombie
alive() {
	local s
	s=$(state "$1")
	[ -n "$s" ] && [ "$s" != Z ]
}
dead() { ! alive "$1"; }
# start_time PID: field 22 of /proc/PID/stat, as seen from here
start_time() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $20 }'; }
# session_gone SID: no task is left in session SID (a PID used as a session or
# group ID cannot be restored; orphaned zombies wait for init, which may be slow)
session_gone() { ! ps -eo sid= | awk -v s="$1" '$1 == s { f = 1 } END { exit !f }'; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# field FILE KEY: value of KEY=value in a one-line file
field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

# The self-checking workloads' protocol (tests/workloads/selfcheck.c): a case's
# directory D with run/ and img/, CASE naming it, PID the workload,
# D/reaper.status written by tests/workloads/reaper.c.

# new_case NAME: work dir $T/NAME with run/ (the workload's) and img/
new_case() {
	D=$T/$1
	mkdir -p "$D/run" "$D/img"
}
# trigger EXPECT: asks the workload to check itself (atomic create), waits for the result
trigger() {
	echo "expect=$1" >"$D/run/.trigger.tmp" && mv "$D/run/.trigger.tmp" "$D/run/trigger"
	if wait_until 15 test -f "$D/run/result"; then
		RESULT=$(cat "$D/run/result")
	else
		RESULT="(no result file within 15 s)"
	fi
	diag "$CASE: workload says: $RESULT"
}
# exit status of the workload: a child of this shell, or adopted by the reaper
child_exit() {
	wait_until 10 dead "$PID" || {
		echo timeout
		return
	}
	wait "$PID"
	echo $?
}
orphan_exit() {
	if wait_until 10 grep -q "^orphan $PID " "$D/reaper.status"; then
		sed -n "s/^orphan $PID //p" "$D/reaper.status"
	else
		echo timeout
	fi
}
