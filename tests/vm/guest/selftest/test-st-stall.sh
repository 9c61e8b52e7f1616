#!/bin/sh
# selftest: the whole guest goes silent and idle for good, as a stuck
# kernel would: suspend-to-idle with no wake-up source freezes every task,
# /init's heartbeat included. The host's watchdog must call that a hang
# (no progress) and boot again for the tests after this one.
echo "ok 1 - before the stall"
grep -qw freeze /sys/power/state || echo "not ok 2 - /sys/power/state offers no freeze: $(cat /sys/power/state)"
echo freeze >/sys/power/state
echo "not ok 2 - the guest woke up from suspend-to-idle"
