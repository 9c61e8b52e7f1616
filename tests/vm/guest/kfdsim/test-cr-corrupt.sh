#!/bin/sh
# Damaged BO contents are detected on restore. A GPU process (--mmio
# --render-fds --bos 4: BOs filled with patterns) is dumped; one byte in
# the middle of its largest BO contents file (amdgpu-bo-*.img) is flipped:
# the restore must fail before the application runs again (the workload
# writes nothing; CRIU never reaches its late device hook, or, in parallel
# restore, the master's copier found it and the plugin killed the still
# stopped task at that hook), the plugin's
# error must name the file, the BO, the chunk holding that byte and both
# CRC-64s, and nothing may be left (process, KFD process, kfdsim file).
# A byte of its index (amdgpu-bo-*.idx): refused by the CRIU master before
# any task exists ("index checksum mismatch"). Each byte flipped back, the
# images are as dumped (sha256), the restore succeeds, the restored
# process's queues run and its self-check PASSes.
# vm-boot: faults
# vm-timeout: 240
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
if ! gpu_start cor --mmio --render-fds --bos 4; then
	fail "cor: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "cor: dump (status $rc)" test "$rc" -eq 0
check "cor: the dumped process is gone" gpu_gone "$pid"
check "cor: no KFD process left" wait_until 10 kfd_no_processes
sums() { (cd "$img" && for f in *; do case "$f" in *.log | stats-*) ;; *) sha256sum "$f" ;; esac; done); }
sums >"$WORK/sums"
out_size=$(wc -c <"$R.out")

# flip FILE OFFSET: inverts the bits of one byte
flip() {
	local v
	v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059 # the format is the byte
	printf "\\$(printf %o $((v ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# nothing_left NAME: no process, no KFD process, no kfdsim file, the pid free
nothing_left() {
	check "$1: no workload, criu or KFD process left" gpu_no_strays
	check "$1: the pid is free again" wait_until 10 eval '[ ! -d /proc/$pid ]'
	check "$1: no file of kfdsim open anywhere" kfdsim_idle
}

bo=$(cd "$img" && for f in amdgpu-bo-*.img; do echo "$(du -k "$f" | cut -f1) $f"; done | sort -n | tail -1 | cut -d' ' -f2)
size=$(wc -c <"$img/$bo")
off=$((size / 2))
flip "$img/$bo" "$off"
check "data: byte $off of $bo ($size bytes) flipped" eval '[ "$(sums)" != "$(cat "$WORK/sums")" ]'
rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
log=$img/restore.log
check "data: restore refused (status $rc)" test "$rc" -ne 0
line=$(grep -E "amdgpu_plugin: Error: .*checksum mismatch in $bo" "$log" | head -1)
diag "${line:-no checksum error in the log}"
check "data: the plugin names the file, the BO and both checksums" eval \
	'echo "$line" | grep -qE "gpu [0-9]+: BO [0-9]+ offset 0x[0-9a-f]+: checksum mismatch in $bo \(chunk at 0x[0-9a-f]+, crc64 0x[0-9a-f]{16}, expected 0x[0-9a-f]{16}\)"'
chunk=$(echo "$line" | sed -n 's/.*(chunk at 0x\([0-9a-f]*\),.*/\1/p')
check "data: the chunk it names holds byte $off (chunk at 0x${chunk:-?})" \
	eval '[ -n "$chunk" ] && [ $((0x$chunk)) -le "$off" ] && [ "$off" -lt $((0x$chunk + 4194304)) ]'
check "data: the application never ran again (its output unchanged, no result file)" \
	eval '[ "$(wc -c <"$R.out")" = "$out_size" ] && [ ! -e "$R.result" ]'
check "data: stopped in the task, or at the late device hook by the copier's failure" \
	eval '! grep -q "Run late stage hook" "$log" || grep -q "the BO contents write (the master.s copier) of pid [0-9]* failed" "$log"'
nothing_left data
flip "$img/$bo" "$off"

idx=${bo%.img}.idx
flip "$img/$idx" 70
rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
check "index: restore refused (status $rc)" test "$rc" -ne 0
check "index: by the master, before any task exists" grep -q 'amdgpu_plugin: initialised for restore (failed)' "$log"
check "index: the plugin names the index file" grep -qE "amdgpu_plugin: Error: .*$idx: index checksum mismatch" "$log"
grep 'amdgpu_plugin: Error' "$log" | head -2 | sed 's/^/# /'
nothing_left index
flip "$img/$idx" 70

check "undamaged: every image file as dumped again" eval '[ "$(sums)" = "$(cat "$WORK/sums")" ]'
rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
check "undamaged: restore (status $rc)" test "$rc" -eq 0
gpu_restored undamaged "$pid" "$R.ready"
check "undamaged: the restored process's queues run" wait_until 10 kfd_running "$pid"
gpu_finish undamaged "$pid"
tap_done
