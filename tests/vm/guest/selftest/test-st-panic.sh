#!/bin/sh
# selftest: crashes the kernel (sysrq c) in the middle of a test.
echo "ok 1 - before the crash"
echo c >/proc/sysrq-trigger
sleep 10
