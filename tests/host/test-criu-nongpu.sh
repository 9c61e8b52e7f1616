#!/bin/bash
# Host test: with our plugin loaded, CRIU dumps and restores process trees that
# use no GPU exactly as often as without it. Each case runs with --libdir of a
# dir holding only amdgpu_plugin.so and with --libdir of an empty dir:
#  1. fork-server: a parent with SIGCHLD ignored forks children that live
#     0-2 ms (tests/workloads/forkserver.c); 40 --leave-running dumps each
#     way, alternating. Every one must succeed, with and without the plugin:
#     a task that vanishes while the plugin looks at it is no error.
#  2. threads-zombies: a workload with threads and zombie children
#     (tests/workloads/threadzombie.c) is dumped, restored and checks itself:
#     threads still counting, memory intact, the zombies still its zombies
#     with their exit codes. Same outcome with and without the plugin.
#  3. exiting-children: a parent whose children exit on their own after
#     1-30 ms, some caught as zombies, some mid-seize; 10 --leave-running dumps
#     each way, the same number must succeed.
#  4. options-file: AMDGPU_CRIU_CONFIG names a file with an unknown option on
#     line 2. The plugin warns once per log naming the file and line, and the
#     dump and restore of a non-GPU process (tests/workloads/selfcheck.c)
#     succeed: a typo must not stop checkpoints of processes that use no GPU.
# Outcomes are asserted, never timings; the mean dump time of case 1 each way
# is printed for information.
#
# Environment: BUILD (absolute build dir with amdgpu_plugin.so and tests/bin),
# CRIU (criu command, 4.1.x). Runs as root on the host (no VM), no GPU needed.
# Failure artifacts: $BUILD/test-logs/host.test-criu-nongpu/
# shellcheck disable=SC2016 # single-quoted bash -c bodies get their arguments as $1
# run-suite-parallel: yes (its own workloads and image directories under mktemp; CRIU on the host)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$HERE/../lib/tap.sh"

BUILD=${BUILD:?BUILD must be the absolute build directory}
CRIU=${CRIU:?CRIU must name the criu command}
BIN=$BUILD/tests/bin
PLUGIN=$BUILD/amdgpu_plugin.so
KEEP=$BUILD/test-logs/host.test-criu-nongpu
FORK_DUMPS=40 # per way in case 1: a plugin that fails 1 dump in 10 fails here with p > 0.98
EXIT_DUMPS=10 # per way in case 3
rm -rf "$KEEP"
T=$(mktemp -d -t criu-nongpu.XXXXXX)
TRACKED=() # PIDs to kill on exit if they still run one of our commands (their cmdline names $T)

# shellcheck source=tests/lib/tasks.sh
. "$HERE/../lib/tasks.sh"
trap tasks_cleanup EXIT
trap 'exit 130' INT TERM

# libdir WAY: the --libdir for "with" (only our plugin) or "without" (empty) the plugin
libdir() { if [ "$1" = with ]; then echo "$T/plugins"; else echo "$T/noplugins"; fi; }

# start_workload PROGRAM [ARGS...]: runs it with $D/run as a session leader; sets PID
start_workload() {
	local prog=$1
	shift
	setsid "$BIN/$prog" "$D/run" "$@" </dev/null >"$D/out.log" 2>&1 &
	PID=$!
	TRACKED+=("$PID")
	if ! wait_until 10 test -f "$D/run/ready"; then
		fail "$CASE: $prog wrote its ready marker"
		return 1
	fi
	if [ "$(field "$D/run/ready" pid)" != "$PID" ]; then
		fail "$CASE: $prog runs as the PID we started ($PID, ready says $(cat "$D/run/ready"))"
		return 1
	fi
}

# log_errors LOG: the plugin's lines and CRIU's errors, but the harmless rlimit
# one (root lacks CAP_SYS_RESOURCE here)
log_errors() {
	grep -E 'amdgpu_plugin: |^\([0-9. ]+\) Error' "$1" 2>/dev/null |
		grep -v 'rlimit: Can.t setup RLIMIT_NOFILE' | head -20
}

# dump WAY DIR [ARGS...]: dumps $PID into DIR with or without the plugin; sets
# DUMP_RC and DUMP_MS. EXTRA_ENV (NAME=VALUE words) is CRIU's extra environment.
EXTRA_ENV=()
dump() {
	local way=$1 dir=$2 t0
	shift 2
	mkdir -p "$dir"
	t0=$(now_ms)
	env "${EXTRA_ENV[@]}" timeout 60 "$CRIU" dump -t "$PID" -D "$dir" --libdir "$(libdir "$way")" \
		-v4 -o dump.log "$@"
	DUMP_RC=$?
	DUMP_MS=$(($(now_ms) - t0))
}

# restore WAY: detached restore from $D/img under a subreaper (tests/workloads/reaper.c),
# which adopts the restored task and records its exit status; sets RESTORE_RC
restore() {
	local way=$1 t0
	# pid_max may be small (32768 here): another process can take the PID meanwhile
	[ -e "/proc/$PID" ] && diag "$CASE: PID $PID already taken by '$(cat "/proc/$PID/comm" 2>/dev/null)':" \
		"CRIU cannot restore it under the same PID"
	t0=$(now_ms)
	env "${EXTRA_ENV[@]}" "$BIN/reaper" "$D/reaper.status" timeout 60 "$CRIU" restore -D "$D/img" \
		--libdir "$(libdir "$way")" -d -v4 -o restore.log --pidfile "$D/restored.pid" &
	TRACKED+=("$!")
	if wait_until 70 grep -q '^cmd ' "$D/reaper.status" 2>/dev/null; then
		RESTORE_RC=$(sed -n 's/^cmd [0-9]* exit //p' "$D/reaper.status")
		RESTORE_RC=${RESTORE_RC:-signal}
	else
		RESTORE_RC=timeout
	fi
	diag "$CASE: restore rc $RESTORE_RC in $(($(now_ms) - t0)) ms"
}

# loads_plugin LOG: CRIU loaded our plugin for this run
loads_plugin() { grep -q 'Plugin "amdgpu_plugin" (version' "$1"; }

# leave_running_dumps N: N --leave-running dumps of $PID each way, alternating,
# each into a fresh dir $D/WAY-I. Sets OK_<way>, MS_<way> (total time), LOADED_<way>.
leave_running_dumps() {
	local n=$1 i way dir
	OK_with=0 OK_without=0 MS_with=0 MS_without=0 LOADED_with=0 LOADED_without=0
	for i in $(seq 1 "$n"); do
		for way in without with; do
			dir=$D/$way-$i
			dump "$way" "$dir" --leave-running
			eval "MS_$way=\$((MS_$way + DUMP_MS))"
			loads_plugin "$dir/dump.log" && eval "LOADED_$way=\$((LOADED_$way + 1))"
			if [ "$DUMP_RC" = 0 ]; then
				eval "OK_$way=\$((OK_$way + 1))"
				# a dump that worked leaves its log only
				find "$dir" -mindepth 1 ! -name dump.log -delete
			else
				diag "$CASE: dump $i $way the plugin failed: rc $DUMP_RC in $DUMP_MS ms ($dir/dump.log):"
				log_errors "$dir/dump.log" | sed 's/^/#   /'
			fi
		done
	done
}

# ---- preconditions ----------------------------------------------------------------
missing=
for f in "$PLUGIN" "$BIN/forkserver" "$BIN/threadzombie" "$BIN/selfcheck" "$BIN/reaper"; do
	[ -e "$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
	fail "build products present (make all $BUILD/tests/bin):$missing"
	tap_done
	exit
fi
mkdir -p "$T/plugins" "$T/noplugins"
cp "$PLUGIN" "$T/plugins/amdgpu_plugin.so" # the plugin dir holds our plugin and nothing else
diag "criu: $("$CRIU" --version 2>&1 | head -1)"

# 1. a forking server: children appear and vanish (auto-reaped) during every dump
CASE=fork-server
new_case "$CASE"
if start_workload forkserver ignore; then
	leave_running_dumps "$FORK_DUMPS"
	FORK_MS_with=$MS_with FORK_MS_without=$MS_without
	check "$CASE: CRIU loaded the plugin in all $FORK_DUMPS dumps with it, in none without" \
		test "$LOADED_with/$LOADED_without" = "$FORK_DUMPS/0"
	check "$CASE: all $FORK_DUMPS dumps with the plugin succeed ($OK_with with, $OK_without without)" \
		test "$OK_with" = "$FORK_DUMPS"
	check "$CASE: as many dumps succeed with the plugin as without ($OK_with with, $OK_without without)" \
		test "$OK_with" = "$OK_without"
	s=$(state "$PID")
	check "$CASE: the server still runs, not left stopped (state '$s')" \
		test -n "$s" -a "$s" != Z -a "$s" != T -a "$s" != t
	trigger original
	check "$CASE: the server's check passes (it still forks, nothing left to reap)" \
		test "${RESULT%% *}" = PASS
	check "$CASE: the server exited 0" test "$(child_exit)" = 0
fi

# 2. threads and zombie children: dump, restore and self-check, each way
tz_cycle() {
	local way=$1
	CASE=threads-zombies-$way
	new_case "$CASE"
	OUTCOME_tz="no workload"
	start_workload threadzombie || return
	diag "$CASE: $(cat "$D/run/ready")"
	dump "$way" "$D/img"
	diag "$CASE: dump rc $DUMP_RC in $DUMP_MS ms"
	check "$CASE: dump exits 0" test "$DUMP_RC" = 0
	if [ "$way" = with ]; then
		check "$CASE: dump log: CRIU loaded the plugin" loads_plugin "$D/img/dump.log"
	else
		check "$CASE: dump log: CRIU loaded no plugin" bash -c '! grep -q "amdgpu_plugin" "$1"' _ "$D/img/dump.log"
	fi
	check "$CASE: dump log: no plugin errors" bash -c '! grep -q "amdgpu_plugin: Error" "$1"' _ "$D/img/dump.log"
	OUTCOME_tz="dump $DUMP_RC"
	if [ "$DUMP_RC" != 0 ]; then
		log_errors "$D/img/dump.log" | sed 's/^/#   /'
		return
	fi
	check "$CASE: dumped process is gone (killed by CRIU: status 137)" test "$(child_exit)" = 137
	check "$CASE: its zombies are gone too (reaped by init)" wait_until 20 session_gone "$PID"
	restore "$way"
	check "$CASE: restore exits 0" test "$RESTORE_RC" = 0
	check "$CASE: restore log: no plugin errors" \
		bash -c '! grep -q "amdgpu_plugin: Error" "$1"' _ "$D/img/restore.log"
	OUTCOME_tz="$OUTCOME_tz, restore $RESTORE_RC"
	if [ "$RESTORE_RC" != 0 ]; then
		log_errors "$D/img/restore.log" | sed 's/^/#   /'
		return
	fi
	check "$CASE: restored with the same PID $PID" test "$(cat "$D/restored.pid" 2>/dev/null)" = "$PID"
	trigger restored
	check "$CASE: self-check passes after restore (threads, memory, zombies)" \
		grep -q '^PASS restored ' "$D/run/result"
	check "$CASE: restored workload exited 0" test "$(orphan_exit)" = "exit 0"
	OUTCOME_tz="$OUTCOME_tz, verdict ${RESULT%% *}"
}
tz_cycle without
OUTCOME_without=$OUTCOME_tz
tz_cycle with
OUTCOME_with=$OUTCOME_tz
CASE=threads-zombies
check "$CASE: same outcome with the plugin ($OUTCOME_with) as without ($OUTCOME_without)" \
	test "$OUTCOME_with" = "$OUTCOME_without"

# negative control: the verdict can be FAIL (never dumped, so never restored)
CASE=threads-zombies-not-restored
new_case "$CASE"
if start_workload threadzombie; then
	trigger restored
	check "$CASE: self-check notices it was never restored" \
		grep -q '^FAIL expected restored, but .* says not restored' "$D/run/result"
	check "$CASE: workload exited 1" test "$(child_exit)" = 1
fi

# 3. children exit on their own while CRIU seizes the tree
CASE=exiting-children
new_case "$CASE"
if start_workload forkserver reap; then
	leave_running_dumps "$EXIT_DUMPS"
	diag "$CASE: $OK_with/$EXIT_DUMPS dumps succeed with the plugin, $OK_without/$EXIT_DUMPS without"
	# information only: how often a child had exited when CRIU reached it
	diag "$CASE: $(grep -l 'Obtaining zombie stat' "$D"/*/dump.log 2>/dev/null | wc -l) of" \
		"$((2 * EXIT_DUMPS)) dumps found a child that had exited (a zombie)"
	check "$CASE: CRIU loaded the plugin in all $EXIT_DUMPS dumps with it, in none without" \
		test "$LOADED_with/$LOADED_without" = "$EXIT_DUMPS/0"
	check "$CASE: as many dumps succeed with the plugin as without ($OK_with with, $OK_without without)" \
		test "$OK_with" = "$OK_without"
	trigger original
	check "$CASE: the parent's check passes (every child exited 0 and was reaped)" \
		test "${RESULT%% *}" = PASS
	check "$CASE: the parent exited 0" test "$(child_exit)" = 0
fi

# 4. an options file with a typo: one warning naming file and line, no failure
CASE=options-file
new_case "$CASE"
CONF=$D/amdgpu_plugin.conf
printf '# copy engine for this node\nAMDGPU_CRIU_COPY_ENGNE=cpu\n' >"$CONF"
# check_conf_log LOG STAGE: the one warning, no plugin error
check_conf_log() {
	local log=$1 stage=$2 warns n
	warns=$(grep 'amdgpu_plugin: Warn: ' "$log")
	[ -n "$warns" ] && diag "$CASE: $stage log: $warns"
	n=$(grep -F -- "$CONF" <<<"$warns" | grep -cE 'line 2([^0-9]|$)')
	check "$CASE: $stage log: exactly one plugin warning naming $CONF line 2 (found $n)" test "$n" = 1
	check "$CASE: $stage log: no plugin errors" bash -c '! grep -q "amdgpu_plugin: Error" "$1"' _ "$log"
}
if start_workload selfcheck; then
	EXTRA_ENV=("AMDGPU_CRIU_CONFIG=$CONF")
	dump with "$D/img"
	diag "$CASE: dump rc $DUMP_RC in $DUMP_MS ms"
	check "$CASE: dump exits 0" test "$DUMP_RC" = 0
	check_conf_log "$D/img/dump.log" dump
	if [ "$DUMP_RC" = 0 ]; then
		check "$CASE: dumped process is gone (killed by CRIU: status 137)" test "$(child_exit)" = 137
		restore with
		check "$CASE: restore exits 0" test "$RESTORE_RC" = 0
		check_conf_log "$D/img/restore.log" restore
		if [ "$RESTORE_RC" = 0 ]; then
			trigger restored
			check "$CASE: workload self-check passes after restore" grep -q '^PASS restored ' "$D/run/result"
			check "$CASE: restored workload exited 0" test "$(orphan_exit)" = "exit 0"
		fi
	else
		log_errors "$D/img/dump.log" | sed 's/^/#   /'
	fi
	EXTRA_ENV=()
fi

if [ -n "${FORK_MS_with:-}" ]; then
	diag "fork-server: mean dump wall time without the plugin $((FORK_MS_without / FORK_DUMPS)) ms," \
		"with it $((FORK_MS_with / FORK_DUMPS)) ms (information only; the machine may be loaded)"
fi

tap_done
