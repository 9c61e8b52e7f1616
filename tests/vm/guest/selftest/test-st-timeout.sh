#!/bin/sh
# selftest: outlives its own time limit.
# vm-timeout: 3
echo "ok 1 - before the hang"
sleep 60
echo "ok 2 - never reached"
echo "1..2"
