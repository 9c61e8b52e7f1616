#!/bin/sh
# selftest: hangs longer than the whole VM may run (selftest.sh sets
# VM_TIMEOUT low), as a stuck kernel would.
# vm-timeout: 600
echo "ok 1 - before the hang"
sleep 600
