#!/bin/sh
# Dump and restore of a plain self-checking process (no device), twice: the
# second time from the restored process. Asserts the workload's invariants,
# not only CRIU's exit code: it keeps counting, with no MISMATCH.
. /test/lib/guest.sh

LOG=$WORK/counter.log
start_workload "$WORK/vmcounter.out" /test/bin/vmcounter "$LOG"
pid=$WL_PID
check "workload started" wait_until 10 ticking 5 "$LOG"

for round in 1 2; do
	img=$WORK/img$round
	if criu_dump "$img" "$pid"; then ok "round $round: dump"; else fail "round $round: dump"; fi
	check "round $round: plugin took part in the dump" grep -q 'amdgpu_plugin: initialised for dump' "$img/dump.log"
	check "round $round: process gone after dump" wait_until 5 eval '! alive $pid'
	at=$(ticks "$LOG")
	if criu_restore "$img"; then ok "round $round: restore"; else fail "round $round: restore"; fi
	check "round $round: same pid after restore" alive "$pid"
	check "round $round: counting on after restore (past $at)" wait_until 10 ticking $((at + 5)) "$LOG"
	check "round $round: no MISMATCH" eval '! grep MISMATCH "$LOG"'
done
[ "$TAP_FAILED" -eq 0 ] || keep "$LOG" "$WORK/vmcounter.out"
kill "$pid" 2>/dev/null
tap_done
