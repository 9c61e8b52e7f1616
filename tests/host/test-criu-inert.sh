#!/bin/bash
# Host test: CRIU loads our plugin from --libdir, and the plugin is inert for a
# process that uses no GPU. An ordinary self-verifying workload
# (tests/workloads/selfcheck.c) is dumped and restored with only
# amdgpu_plugin.so in the plugin dir; the test then asks the workload to check
# its own state (memory patterns, pipe contents, counter thread, that it was
# really restored) and asserts on its verdict and exit status, not only on
# CRIU's exit code. Negative controls prove the verdict can be FAIL.
#
# Environment: BUILD (absolute build dir with amdgpu_plugin.so and tests/bin),
# CRIU (criu command, 4.1.x), optional CRIU42 (criu 4.2.x: the dump/restore
# cycle is repeated with it, loading the same plugin built with the 4.1 header).
# Runs as root on the host (no VM). Failure artifacts: $BUILD/test-logs/host.test-criu-inert/
# shellcheck disable=SC2016 # single-quoted bash -c bodies get their arguments as $1
# run-suite-parallel: yes (its own workload and image directory under mktemp; CRIU on the host)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$HERE/../lib/tap.sh"

BUILD=${BUILD:?BUILD must be the absolute build directory}
CRIU=${CRIU:?CRIU must name the criu command}
BIN=$BUILD/tests/bin
PLUGIN=$BUILD/amdgpu_plugin.so
KEEP=$BUILD/test-logs/host.test-criu-inert
PAUSE_MS=300 # between dump and restore: the workload must see this wall-clock gap
rm -rf "$KEEP"
T=$(mktemp -d -t criu-inert.XXXXXX)
TRACKED=() # PIDs to kill on exit if they still run one of our commands (their cmdline names $T)

# shellcheck source=tests/lib/tasks.sh
. "$HERE/../lib/tasks.sh"
trap tasks_cleanup EXIT
trap 'exit 130' INT TERM

# start_workload: runs selfcheck in $D/run as a session leader; sets PID
start_workload() {
	setsid "$BIN/selfcheck" "$D/run" </dev/null >"$D/out.log" 2>&1 &
	PID=$!
	TRACKED+=("$PID")
	if ! wait_until 10 test -f "$D/run/ready"; then
		fail "$CASE: workload wrote its ready marker"
		return 1
	fi
	if [ "$(field "$D/run/ready" pid)" != "$PID" ]; then
		fail "$CASE: workload runs as the PID we started ($PID, ready says $(cat "$D/run/ready"))"
		return 1
	fi
}

# dump CRIU [ARGS...]: dumps $PID into $D/img with only our plugin; sets DUMP_RC
dump() {
	local criu=$1 t0
	shift
	t0=$(now_ms)
	timeout 60 "$criu" dump -t "$PID" -D "$D/img" --libdir "$T/plugins" -v4 -o dump.log "$@"
	DUMP_RC=$?
	diag "$CASE: dump rc $DUMP_RC in $(($(now_ms) - t0)) ms"
}

# restore CRIU: detached restore from $D/img under a subreaper (tests/workloads/reaper.c),
# which adopts the restored task and records its exit status; sets RESTORE_RC
restore() {
	local criu=$1 t0
	# pid_max may be small (32768 here): another process can take the PID meanwhile
	[ -e "/proc/$PID" ] && diag "$CASE: PID $PID already taken by '$(cat "/proc/$PID/comm" 2>/dev/null)':" \
		"CRIU cannot restore it under the same PID"
	t0=$(now_ms)
	"$BIN/reaper" "$D/reaper.status" timeout 60 "$criu" restore -D "$D/img" --libdir "$T/plugins" \
		-d -v4 -o restore.log --pidfile "$D/restored.pid" &
	TRACKED+=("$!")
	if wait_until 70 grep -q '^cmd ' "$D/reaper.status" 2>/dev/null; then
		RESTORE_RC=$(sed -n 's/^cmd [0-9]* exit //p' "$D/reaper.status")
		RESTORE_RC=${RESTORE_RC:-signal}
	else
		RESTORE_RC=timeout
	fi
	diag "$CASE: restore rc $RESTORE_RC in $(($(now_ms) - t0)) ms"
}

# check_log LOG STAGE: CRIU loaded our plugin, the plugin ran and claimed nothing
check_log() {
	local log=$1 stage=$2 unexpected
	check "$CASE: $stage log: CRIU loaded the plugin" grep -q 'Plugin "amdgpu_plugin" (version' "$log"
	check "$CASE: $stage log: plugin initialised for $stage" grep -q "amdgpu_plugin: initialised for $stage\$" "$log"
	check "$CASE: $stage log: plugin finished $stage with ret 0" \
		grep -q "amdgpu_plugin: finished $stage (ret 0)\$" "$log"
	check "$CASE: $stage log: no plugin errors or warnings" \
		bash -c '! grep -E "amdgpu_plugin: (Error|Warn)" "$1"' _ "$log"
	# root lacks CAP_SYS_RESOURCE here: CRIU logs a harmless rlimit error
	unexpected=$(grep -E '^\([0-9. ]+\) Error' "$log" | grep -v 'rlimit: Can.t setup RLIMIT_NOFILE')
	if [ -z "$unexpected" ]; then
		ok "$CASE: $stage log: no unexpected CRIU errors"
	else
		fail "$CASE: $stage log: no unexpected CRIU errors"
		diag "$unexpected"
	fi
}

# poke PID ADDR: inverts the byte at ADDR in PID's memory; prints nothing, fails if it did not stick
poke() {
	local pid=$1 addr=$2 old new
	old=$(dd if="/proc/$pid/mem" bs=1 skip="$addr" count=1 status=none | od -An -tu1 | tr -d ' ')
	[ -n "$old" ] || return 1
	new=$((old ^ 0xff))
	# shellcheck disable=SC2059
	printf "\\$(printf %03o "$new")" | dd of="/proc/$pid/mem" bs=1 seek="$addr" count=1 conv=notrunc status=none
	[ "$(dd if="/proc/$pid/mem" bs=1 skip="$addr" count=1 status=none | od -An -tu1 | tr -d ' ')" = "$new" ]
}

# ---- the dump/restore cycle: used for CRIU and, when set, CRIU42 ----------------
cycle() {
	local criu=$1 start0 result
	start_workload || return
	start0=$(field "$D/run/ready" start)
	dump "$criu"
	check "$CASE: dump exits 0" test "$DUMP_RC" = 0
	check_log "$D/img/dump.log" dump
	[ "$DUMP_RC" = 0 ] || return
	check "$CASE: dumped process is gone (killed by CRIU: status 137)" test "$(child_exit)" = 137
	check "$CASE: no GPU images written" \
		bash -c '! ls "$1" | grep -Eiq "amdgpu|kfd|render"' _ "$D/img"
	sleep "0.$PAUSE_MS"
	restore "$criu"
	check "$CASE: restore exits 0" test "$RESTORE_RC" = 0
	[ "$RESTORE_RC" = 0 ] || return
	check_log "$D/img/restore.log" restore
	check "$CASE: restored with the same PID $PID" test "$(cat "$D/restored.pid" 2>/dev/null)" = "$PID"
	check "$CASE: restored process runs" alive "$PID"
	check "$CASE: it is a new task (start time $start0 changed)" test "$(start_time "$PID")" != "$start0"
	trigger restored
	result=$RESULT
	check "$CASE: workload self-check passes after restore" test "${result%% *}" = PASS
	check "$CASE: workload saw itself restored" grep -q '^PASS restored ' "$D/run/result"
	check "$CASE: workload saw a wall-clock stop >= $PAUSE_MS ms" \
		test "$(field "$D/run/result" max_gap_ms || echo 0)" -ge "$PAUSE_MS"
	check "$CASE: restored workload exited 0" test "$(orphan_exit)" = "exit 0"
}

# ---- preconditions ----------------------------------------------------------------
if [ ! -x "$BIN/selfcheck" ] || [ ! -x "$BIN/reaper" ] || [ ! -f "$PLUGIN" ]; then
	fail "build products present (make all $BUILD/tests/bin): $PLUGIN $BIN/selfcheck $BIN/reaper"
	tap_done
	exit
fi
mkdir -p "$T/plugins"
cp "$PLUGIN" "$T/plugins/amdgpu_plugin.so" # the plugin dir holds our plugin and nothing else
diag "criu: $("$CRIU" --version 2>&1 | head -1)"

CASE=so
check "$CASE: plugin is an ELF shared object" bash -c 'readelf -h "$1" | grep -q "Type: *DYN"' _ "$PLUGIN"
syms=$(readelf -W --dyn-syms "$PLUGIN" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' | sort -u | tr '\n' ' ')
check "$CASE: plugin exports exactly CR_PLUGIN_DESC (got: $syms)" test "$syms" = "CR_PLUGIN_DESC "

# 1. dump, restore, self-check with CRIU 4.1
CASE=cycle
new_case "$CASE"
cycle "$CRIU"

# 2. dump --leave-running: the original carries on and checks out; later the
#    images of the running process restore too
CASE=leave-running
new_case "$CASE"
if start_workload; then
	dump "$CRIU" --leave-running
	check "$CASE: dump exits 0" test "$DUMP_RC" = 0
	check_log "$D/img/dump.log" dump
	check "$CASE: original still runs" alive "$PID"
	st=$(sed 's/^.*) //' "/proc/$PID/stat" 2>/dev/null)
	check "$CASE: original is not left stopped (state ${st%% *})" test "${st%% *}" != T -a "${st%% *}" != t
	trigger original
	check "$CASE: original's self-check passes" grep -q '^PASS original ' "$D/run/result"
	check "$CASE: original exited 0" test "$(child_exit)" = 0
	if [ "$DUMP_RC" = 0 ]; then
		rm -f "$D/run/trigger" "$D/run/result"
		restore "$CRIU"
		check "$CASE: restore of the running process's images exits 0" test "$RESTORE_RC" = 0
		check_log "$D/img/restore.log" restore
		trigger restored
		check "$CASE: restored copy's self-check passes" grep -q '^PASS restored ' "$D/run/result"
		check "$CASE: restored copy exited 0" test "$(orphan_exit)" = "exit 0"
	fi
fi

# 3. negative controls: each must make the self-check FAIL for its own reason
CASE=damage-after-restore
new_case "$CASE"
if start_workload; then
	dump "$CRIU"
	RESTORE_RC=skipped
	if [ "$DUMP_RC" = 0 ]; then
		child_exit >/dev/null
		restore "$CRIU"
	fi
	if [ "$DUMP_RC" = 0 ] && [ "$RESTORE_RC" = 0 ]; then
		off=$((5 * 4096 + 123))
		check "$CASE: byte anon+$(printf 0x%x $off) inverted via /proc/PID/mem" \
			poke "$PID" $(($(field "$D/run/ready" anon) + off))
		trigger restored
		check "$CASE: self-check reports the damaged byte" \
			grep -q "^FAIL anon+$(printf 0x%x $off): " "$D/run/result"
		check "$CASE: workload exited 1" test "$(orphan_exit)" = "exit 1"
	else
		fail "$CASE: dump ($DUMP_RC) and restore ($RESTORE_RC) succeed"
	fi
fi

CASE=not-restored
new_case "$CASE"
if start_workload; then
	trigger restored
	check "$CASE: self-check notices it was never restored" \
		grep -q '^FAIL expected restored, but .* says not restored' "$D/run/result"
	check "$CASE: workload exited 1" test "$(child_exit)" = 1
fi

CASE=damage-memfd
new_case "$CASE"
if start_workload; then
	off=$((3 * 4096 + 7))
	check "$CASE: byte memfd+$(printf 0x%x $off) inverted via /proc/PID/mem" \
		poke "$PID" $(($(field "$D/run/ready" memfd) + off))
	trigger original
	check "$CASE: self-check reports the damaged byte" grep -q "^FAIL memfd+$(printf 0x%x $off): " "$D/run/result"
	check "$CASE: workload exited 1" test "$(child_exit)" = 1
fi

CASE=drain-pipe
new_case "$CASE"
if start_workload; then
	pfd=$(for f in /proc/"$PID"/fd/*; do
		[[ $(readlink "$f") == pipe:* ]] && echo "${f##*/}"
	done | head -1) # the lower-numbered end is the read end (pipe2)
	check "$CASE: one byte read out of the workload's pipe" \
		test "$(dd if="/proc/$PID/fd/$pfd" bs=1 count=1 iflag=nonblock status=none | wc -c)" = 1
	trigger original
	check "$CASE: self-check reports the missing byte" grep -q '^FAIL pipe holds 4095 bytes' "$D/run/result"
	check "$CASE: workload exited 1" test "$(child_exit)" = 1
fi

# 4. the same cycle with CRIU 4.2.x, same plugin binary (built with the 4.1 header)
if [ -n "${CRIU42:-}" ]; then
	CASE=cycle-4.2
	new_case "$CASE"
	diag "criu42: $("$CRIU42" --version 2>&1 | head -1)"
	if "$CRIU42" --version 2>/dev/null | grep -q 'Version: 4\.2'; then
		cycle "$CRIU42"
	else
		fail "$CASE: CRIU42=$CRIU42 runs and is 4.2.x"
	fi
else
	diag "CRIU42 not set: the CRIU 4.2 cycle is skipped (scripts/fetch-criu-testing.sh provides one)"
fi

tap_done
