#!/bin/sh
# Dump and restore of tests/workloads/selfcheck (anonymous and memfd
# patterns, unread pipe data, a counter thread), which checks itself after
# the restore and says PASS or FAIL with the first difference.
. /test/lib/guest.sh

if [ ! -x /test/bin/selfcheck ]; then
	ok "selfcheck # SKIP tests/workloads/selfcheck not built"
	tap_done
	exit
fi
dir=$WORK/sc
mkdir -p "$dir"
start_workload "$WORK/selfcheck.out" /test/bin/selfcheck "$dir"
pid=$WL_PID
check "selfcheck ready" wait_until 10 test -f "$dir/ready"
if criu_dump "$WORK/img" "$pid"; then ok "dump"; else fail "dump"; fi
if criu_restore "$WORK/img"; then ok "restore"; else fail "restore"; fi
# written whole and renamed: the workload polls for the file and reads it once
echo "expect=restored" >"$dir/trigger.tmp" && mv "$dir/trigger.tmp" "$dir/trigger"
check "selfcheck reported" wait_until 20 test -f "$dir/result"
result=$(cat "$dir/result" 2>/dev/null)
diag "$result"
check "selfcheck PASS after restore" eval 'echo "$result" | grep -q ^PASS'
[ "$TAP_FAILED" -eq 0 ] || keep "$dir" "$WORK/selfcheck.out"
kill "$pid" 2>/dev/null
tap_done
