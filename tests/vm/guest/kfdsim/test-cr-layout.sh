#!/bin/sh
# The restore measures this KFD's private-blob layout (BO records of 80 or
# 272 bytes) instead of inferring it from the kernel release: kfdsim's
# bo_priv_size switch makes this 6.12 kernel take 80-byte records. The
# workload (--mmio) is dumped with 272-byte records; with bo_priv_size=80
# the restore must be refused by the CRIU master's init, before any task is
# forked, in one line of the plugin naming both sizes and that the local
# one was measured; nothing is left running or open and every image file is
# unchanged. A plugin that infers 272 from the release lets CRIU fork the
# task and fails only in KFD's RESTORE: this test fails then. With 272 back
# the same images restore and the self-check PASSes. bo_priv_size is set
# back to 272 in any case.
# vm-boot: cr
# vm-timeout: 240
. /test/lib/guest.sh

PARAM=/sys/module/amdgpu_kfdsim/parameters/bo_priv_size
gpu_wl_missing && { tap_done; exit; }
if [ ! -w "$PARAM" ]; then
	ok "layout # SKIP no writable $PARAM"
	tap_done
	exit
fi
trap 'echo 272 >"$PARAM"' EXIT
kfdsim_debugfs || diag "no kfdsim debugfs"
check "layout: bo_priv_size is 272 to start with" eval '[ "$(cat "$PARAM")" = 272 ]'
if ! gpu_start lay --mmio; then
	fail "lay: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "lay: dump (status $rc)" test "$rc" -eq 0
check "lay: the dumped process is gone" gpu_gone "$pid"
check "lay: no KFD process left after the dump" wait_until 10 kfd_no_processes
amdgpu-criu inspect "$img" >"$WORK/inspect.out" 2>&1
grep 'BO records of' "$WORK/inspect.out" | sed 's/^/# /'
check "lay: the images have 272-byte BO records" eval \
	'grep -q "BO records of 272 bytes" "$WORK/inspect.out" && ! grep "BO records of" "$WORK/inspect.out" | grep -qv "of 272 bytes"'
gpu_img_sums "$img" >"$img.sums"

echo 80 >"$PARAM"
check "layout: bo_priv_size is now 80" eval '[ "$(cat "$PARAM")" = 80 ]'
criu_restore "$img"
rc=$?
check "lay: restore with 80-byte records refused (status $rc)" test "$rc" -ne 0
grep 'amdgpu_plugin: Error: ' "$img/restore.log" >"$WORK/refusal"
sed 's/^/# /' "$WORK/refusal"
check "lay: the plugin says why in one line" test "$(wc -l <"$WORK/refusal")" -eq 1
check "lay: ... naming 272 (image) and 80 (measured)" grep -qE \
	'has 272-byte BO records; this kernel \([^)]*\) takes 80-byte records \(measured\)' "$WORK/refusal"
check "lay: the refusal came from the master's init" \
	grep -q 'amdgpu_plugin: initialised for restore (failed)' "$img/restore.log"
check "lay: ... before any task was forked" eval '! grep -q "Forking task" "$img/restore.log"'
check "lay: no restored task, criu or KFD process left" gpu_no_strays
check "lay: no file of /dev/kfd or a render node open" eval '[ -z "$(kfd_holders)" ]'
check "lay: every image file unchanged (sha256)" eval 'gpu_img_sums "$img" | cmp -s - "$img.sums"'

echo 272 >"$PARAM"
criu_restore "$img"
rc=$?
check "lay: restore with 272-byte records (status $rc)" test "$rc" -eq 0
grep 'BO records (measured' "$img/restore.log" | sed 's/^/# /'
check "lay: the plugin measured 272" grep -q 'takes 272-byte BO records (measured' "$img/restore.log"
check "lay: CRIU logs 'Forking task' when it forks (the check above can fail)" \
	grep -q "Forking task" "$img/restore.log"
gpu_restored lay "$pid" "$R.ready"
gpu_finish lay "$pid"
tap_done
