#!/bin/sh
# Checkpoint/restore of a GPU process that is the init of its own PID
# namespace (unshare -fp, then setsid WORKLOAD; see MOUNT_PROC): CRIU dumps the
# namespace by its init (KFD reports the target's own-namespace PID in
# PROCESS_INFO, RESUME takes the caller's). After the restore (--pidfile:
# the init's pid outside changes) it must be pid 1 of a new namespace, have
# exactly its fds and its user gpu_ids, and PASS its self-check.
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-boot: cr
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
# MOUNT_PROC=1: unshare -fp --mount-proc, a mount namespace too. In this VM
# CRIU then dumps (tmpfs mounts external: their contents would need GNU tar)
# but its restore stops at "mnt: BUG at criu/mount.c:48" (a namespace whose
# root is the initramfs rootfs), so the default is a PID namespace alone.
MOUNT_PROC=0
if [ "$MOUNT_PROC" = 1 ]; then UNSHARE="unshare -fp --mount-proc"; else UNSHARE="unshare -fp"; fi
if ! $UNSHARE true 2>/dev/null; then
	ok "pidns # SKIP $UNSHARE does not work here"
	tap_done
	exit
fi
# the namespace's init: CRIU cannot dump the VM's 9p mount (/results) in a
# mount namespace of its own, so it goes there first; stdio opened again in
# the new mount namespace (files of the parent's mounts cannot be dumped
# with it); then a session of its own
cat >"$WORK/nsinit.sh" <<EOS
#!/bin/sh
[ "$MOUNT_PROC" = 1 ] && umount -l /results 2>/dev/null
exec </dev/null >>"$WORK/pidns.out" 2>&1 setsid "\$@"
EOS
if ! GPU_WRAP="$UNSHARE sh $WORK/nsinit.sh" gpu_start pidns --mmio --render-fds; then
	fail "pidns: workload ready"
	tap_done
	exit
fi
outer=$WL_PID
pid=$(cat /proc/"$outer"/task/"$outer"/children 2>/dev/null | awk '{ print $1 }')
nspid() { sed -n 's/^NSpid:[[:space:]]*//p' "/proc/$1/status" | tr -s '\t ' ' '; }
diag "unshare $outer, namespace init $pid (NSpid: $(nspid "$pid"))"
check "pidns: the workload is pid 1 of its namespace" eval '[ "$(nspid "$pid")" = "$pid 1" ]'
check "pidns: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
ids=$(kfd_user_ids "$pid")
# tmpfs and devtmpfs mounts of the namespace: external (CRIU would dump
# their contents with GNU tar, which the VM does not have); the restore
# binds the same paths of ours in their place
ext_dump= ext_restore= i=0
[ "$MOUNT_PROC" = 1 ] || MNTS=
for mp in ${MNTS-$(awk '{ for (f = 7; f < NF; f++) if ($f == "-") break; if ($(f + 1) ~ /^(dev)?tmpfs$/) print $5 }' "/proc/$pid/mountinfo")}; do
	ext_dump="$ext_dump --external mnt[$mp]:m$i"
	ext_restore="$ext_restore --external mnt[m$i]:$mp"
	i=$((i + 1))
done
diag "external mounts:$ext_dump"
img=$WORK/img
# shellcheck disable=SC2086
criu_dump "$img" "$pid" $ext_dump
rc=$?
if [ "$EXPECT" = fail ]; then
	gpu_expect_refusal pidns "$rc" "$img" "$pid"
else
	check "pidns: dump (status $rc)" test "$rc" -eq 0
	check "pidns: the dumped namespace is gone" gpu_gone "$pid" "$outer"
	check "pidns: no KFD process left after the dump" wait_until 10 kfd_no_processes
	# shellcheck disable=SC2086
	criu_restore "$img" --pidfile "$WORK/pidfile" $ext_restore
	rc=$?
	check "pidns: restore (status $rc)" test "$rc" -eq 0
	pid=$(cat "$WORK/pidfile" 2>/dev/null)
	diag "restored namespace init: $pid (NSpid: $(nspid "$pid"))"
	gpu_restored pidns "$pid" "$R.ready"
	check "pidns: the restored process is pid 1 of its namespace" eval '[ "$(nspid "$pid" | cut -d" " -f2)" = 1 ]'
	check "pidns: user gpu_ids of the restored process ($ids)" eval '[ -n "$ids" ] && [ "$(kfd_user_ids "$pid")" = "$ids" ]'
fi
gpu_finish pidns "$pid"
tap_done
