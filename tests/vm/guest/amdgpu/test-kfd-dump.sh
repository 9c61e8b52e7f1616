#!/bin/sh
# Dump of a process holding the real /dev/kfd open, with our plugin loaded.
#
# EXPECT=fail: the plugin does not handle /dev/kfd yet, so no plugin claims
# the fd and CRIU must refuse cleanly ("Can't dump file ... chr"), leaving
# the process running untouched. When the plugin learns /dev/kfd, set
# EXPECT=ok: then dump and restore must succeed and the fd come back.
EXPECT=fail
. /test/lib/guest.sh

LOG=$WORK/counter.log
start_workload "$WORK/vmcounter.out" /test/bin/vmcounter "$LOG" /dev/kfd
pid=$WL_PID
check "workload holding /dev/kfd started" wait_until 10 ticking 5 "$LOG"
check "workload has /dev/kfd open" eval 'ls -l /proc/$pid/fd | grep -q " /dev/kfd$"'

img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "plugin took part in the dump" grep -q 'amdgpu_plugin: initialised for dump' "$img/dump.log"
if [ "$EXPECT" = fail ]; then
	check "dump refused (status $rc)" test $rc -ne 0
	check "CRIU names the unsupported chr fd" grep -q "Can't dump file .*chr" "$img/dump.log"
	grep -E "Error|Can't dump" "$img/dump.log" | head -3 | sed 's/^/# /'
	at=$(ticks "$LOG")
	check "process still alive after the refused dump" alive "$pid"
	check "process still counting (past $at)" wait_until 10 ticking $((at + 5)) "$LOG"
else
	check "dump" test $rc -eq 0
	at=$(ticks "$LOG")
	check "restore" criu_restore "$img"
	check "counting on after restore (past $at)" wait_until 10 ticking $((at + 5)) "$LOG"
	check "/dev/kfd open again after restore" eval 'ls -l /proc/$pid/fd | grep -q " /dev/kfd$"'
fi
check "no MISMATCH" eval '! grep MISMATCH "$LOG"'
[ "$TAP_FAILED" -eq 0 ] || keep "$LOG" "$WORK/vmcounter.out"
kill "$pid" 2>/dev/null
tap_done
