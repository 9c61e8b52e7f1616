#!/bin/sh
# Dump and restore of a process holding the real /dev/kfd open (amdgpu.ko,
# no GPU: KFD gives it no GPU, PROCESS_INFO says ENODEV), with our plugin.
# The plugin records the file only (no private data, nothing to pause) and
# the restore opens /dev/kfd again in the task without RESTORE or RESUME
# (KFD would refuse a RESUME of a process that never RESTOREd).
#
# EXPECT=ok: the dump succeeds (a no-GPU image validates, and the plugin's
# own failures are never EOPNOTSUPP, which CRIU takes for "not my file").
# EXPECT=fail: CRIU must refuse cleanly ("Can't dump file ... chr"),
# leaving the process running untouched.
EXPECT=ok
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
	check "the plugin recorded the file only" grep -q "amdgpu_plugin: file [0-9]*: /dev/kfd without GPUs" "$img/dump.log"
	check "the dumped process is gone" wait_until 10 eval '! alive $pid'
	at=$(ticks "$LOG")
	check "restore" criu_restore "$img"
	check "no RESUME asked of KFD (nothing was restored in it)" eval '! grep -q "resumed the GPU queues\|RESUME of pid" "$img/restore.log"'
	[ "$TAP_FAILED" -eq 0 ] || keep "$img/dump.log" "$img/restore.log"
	check "counting on after restore (past $at)" wait_until 10 ticking $((at + 5)) "$LOG"
	check "/dev/kfd open again after restore" eval 'ls -l /proc/$pid/fd | grep -q " /dev/kfd$"'
fi
check "no MISMATCH" eval '! grep MISMATCH "$LOG"'
[ "$TAP_FAILED" -eq 0 ] || keep "$LOG" "$WORK/vmcounter.out"
kill "$pid" 2>/dev/null
tap_done
