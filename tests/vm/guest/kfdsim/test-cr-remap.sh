#!/bin/sh
# Restore onto other GPUs. kfdsim is reloaded as the MI210 machine (8 GPUs,
# two xGMI hives of 4); a cgroup v1 device cgroup "gpujob" hides hive B's
# render nodes, so the workload (started in it, --gpus 0-1 --render-fds)
# sees and gets pdds for hive A only, and uses two of its GPUs. After the
# dump the cgroup is switched to hive B (the job moved to the other hive)
# and CRIU restores inside it (so the plugin, CRIU and the restored task
# see hive B only; CRIU puts the task back into "gpujob", whose settings it
# does not touch as it did not create it).
# Checks after the restore (ABI 2.2): the KFD process keeps the original
# user gpu_ids (kfdsim debugfs: one per pdd, all of hive A), each pdd bound
# to a hive-B GPU (pdd order = topology order of the visible GPUs, so the
# i-th user id is behind the i-th hive-B gpu_id); TRIGGER carries that
# map, and the self-check verifies the render fds refer to those GPUs'
# nodes (and are the VM's DRM files), GET_PROCESS_APERTURES_NEW reports the
# actual (hive-B) ids, user ids still work in KFD calls, every byte, the
# doorbell and MMIO pages (rewritten to the new gpu_id) are usable.
# The module is reloaded with the boot's KFDSIM_PARAMS at the end.
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-boot: cr
# vm-timeout: 180
EXPECT=ok
. /test/lib/guest.sh

DESC=/test/kfdsim/machines/mi210.desc
CG=/tmp/cg-devices-remap
TOPO=/sys/class/kfd/kfd/topology/nodes
gpu_wl_missing && { tap_done; exit; }
if [ ! -f "$DESC" ] || [ ! -f /test/amdgpu_kfdsim.ko ]; then
	ok "remap # SKIP no $DESC or amdgpu_kfdsim.ko"
	tap_done
	exit
fi
mkdir -p "$CG"
if ! mount -t cgroup -o devices devices "$CG" 2>/dev/null; then
	ok "remap # SKIP no cgroup v1 devices controller"
	tap_done
	exit
fi

# plugin_says STEP LOG: the plugin's own account of a step (what it dumped or
# restored, the GPU mapping it chose, sizes, times), as TAP comments
plugin_says() {
	grep -E "amdgpu_plugin: (dumped|restored|pid [0-9]+ GPU|pid [0-9]+: the master's BO copier wrote|GPU [0-9]+ \(node|render.node file|resumed|unpaused)" "$2" |
		sed 's/^([^)]*) *//; s/^[0-9]*: //; s/amdgpu_plugin: //' | while read -r l; do diag "$1: $l"; done
}

# `make demo` boots with the kernel argument amdgpu_criu.demo_keep=1: the
# checkpoint and a copy of this machine's KFD topology then go to the host
# through the results share as $KEEP/ckpt.tar.lzo and $KEEP/topology.tar.lzo,
# where scripts/demo.sh unpacks them and shows amdgpu-criu inspect and check
# on them. Packed in the guest: 9p under TCG writes a few MB/s and has no
# holes, and the BO images are almost all holes (lzop: 123 MiB -> 0.6 MB);
# sysfs files are copied to tmpfs first (tar trusts st_size, 4096 in sysfs).
demo_keep_wanted() { grep -qw 'amdgpu_criu.demo_keep=1' /proc/cmdline; }
demo_keep() {
	rm -rf "$WORK/topology" && mkdir -p "$KEEP" &&
		cp -r /sys/class/kfd/kfd/topology "$WORK/topology" &&
		tar -cf - -C "$WORK" topology | lzop -c >"$KEEP/topology.tar.lzo" &&
		tar -cf - -C "$1" . | lzop -c >"$KEEP/ckpt.tar.lzo" &&
		rm -rf "$WORK/topology"
}

cleanup() {
	[ -z "${WL_PID:-}" ] || kill -9 "$WL_PID" 2>/dev/null
	[ -z "${WL_PID:-}" ] || gpu_gone "$WL_PID"
	rmdir "$CG/gpujob" 2>/dev/null
	umount "$CG"
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
}

kfdsim_debugfs || true
check "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'
# "gpu_id minor hive_id node" of every GPU node, in topology order
gpus() {
	local n=0 id
	while [ -d "$TOPO/$n" ]; do
		id=$(cat "$TOPO/$n/gpu_id")
		[ "$id" = 0 ] || echo "$id $(awk '$1 == "drm_render_minor" || $1 == "hive_id" { v[$1] = $2 } END { print v["drm_render_minor"], v["hive_id"] }' "$TOPO/$n/properties") $n"
		n=$((n + 1))
	done
}
gpus >"$WORK/gpus"
sed 's/^/# gpu_id minor hive node: /' "$WORK/gpus"
hive_a=$(awk 'NR == 1 { print $3 }' "$WORK/gpus")
hive_b=$(awk -v a="$hive_a" '$3 != a { print $3; exit }' "$WORK/gpus")
a_ids=$(awk -v h="$hive_a" '$3 == h { printf "%s ", $1 }' "$WORK/gpus")
b_ids=$(awk -v h="$hive_b" '$3 == h { printf "%s ", $1 }' "$WORK/gpus")
a_min=$(awk -v h="$hive_a" '$3 == h { print $2 }' "$WORK/gpus")
b_min=$(awk -v h="$hive_b" '$3 == h { print $2 }' "$WORK/gpus")
if [ -z "$hive_b" ] || [ "$hive_a" = 0 ] || [ "$(echo $a_ids | wc -w)" != "$(echo $b_ids | wc -w)" ]; then
	fail "remap: two hives of equal size (hive A $hive_a: $a_ids; hive B $hive_b: $b_ids)"
	cleanup
	tap_done
	exit
fi
diag "hive A $hive_a: $a_ids; hive B $hive_b: $b_ids"

mkdir -p "$CG/gpujob"
for m in $b_min; do echo "c 226:$m rwm" >"$CG/gpujob/devices.deny"; done
cat >"$WORK/incg.sh" <<EOS
#!/bin/sh
echo \$\$ >$CG/gpujob/tasks || exit 1
exec "\$@"
EOS
if ! GPU_WRAP="sh $WORK/incg.sh" gpu_start remap --mmio --gpus 0-1 --render-fds; then
	fail "remap: workload ready"
	cleanup
	tap_done
	exit
fi
pid=$WL_PID
check "remap: the workload sees hive A only ($a_ids)" eval '[ "$(sed -n "s/^visible //p" "$R.ready") " = "$a_ids" ]'
check "remap: it uses two GPUs" grep -q '^gpus 2 ' "$R.ready"
check "remap: its KFD process has a pdd per hive-A GPU" eval '[ "$(kfd_user_ids "$pid") " = "$a_ids" ]'
check "remap: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
if [ "$EXPECT" = fail ]; then
	gpu_expect_refusal remap "$rc" "$img" "$pid"
	gpu_finish remap "$pid"
else
	check "remap: dump (status $rc)" test "$rc" -eq 0
	plugin_says "plugin, dump" "$img/dump.log"
	check "remap: the dumped process is gone" gpu_gone "$pid"
	check "remap: no KFD process left after the dump" wait_until 10 kfd_no_processes
	for m in $b_min; do echo "c 226:$m rwm" >"$CG/gpujob/devices.allow"; done
	for m in $a_min; do echo "c 226:$m rwm" >"$CG/gpujob/devices.deny"; done
	a0=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
	b0=$(awk -v h="$hive_b" '$3 == h { print $4; exit }' "$WORK/gpus")
	check "remap: gpujob now hides hive A (node $a0), shows hive B (node $b0)" \
		eval '! sh "$WORK/incg.sh" cat "$TOPO/$a0/gpu_id" >/dev/null 2>&1 && sh "$WORK/incg.sh" cat "$TOPO/$b0/gpu_id" >/dev/null'
	CRIU_WRAP="sh $WORK/incg.sh" criu_restore "$img"
	rc=$?
	check "remap: restore inside gpujob (status $rc)" test "$rc" -eq 0
	plugin_says "plugin, restore" "$img/restore.log"
	if demo_keep_wanted; then
		t0=$(cut -d' ' -f1 /proc/uptime)
		check "remap: checkpoint and topology copied to the host" demo_keep "$img"
		diag "copied in $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }') s: $(du -sk "$img" | cut -f1) KiB packed into $(cat "$KEEP"/*.tar.lzo | wc -c) bytes"
	fi
	gpu_restored remap "$pid" "$R.ready"
	check "remap: the restored process is in gpujob" grep -q ":devices:/gpujob$" "/proc/$pid/cgroup"
	uids=$(kfd_user_ids "$pid")
	check "remap: the KFD process keeps the hive-A user gpu_ids ($uids)" \
		eval '[ "$(echo $uids | tr " " "\n" | sort | tr "\n" " ")" = "$(echo $a_ids | tr " " "\n" | sort | tr "\n" " ")" ]'
	# pdd i: user id uids[i], bound to the i-th visible (hive-B) GPU
	map=$(echo "$uids" | awk -v b="$b_ids" '{ split(b, B, " "); for (i = 1; i <= NF; i++) print "map", $i, B[i] }')
	diag "expected map: $(echo "$map" | tr '\n' ';')"
	check "remap: every user gpu_id now behind a hive-B GPU" eval '[ "$(echo "$map" | grep -c "^map [0-9]* [0-9]*$")" = "$(echo $b_ids | wc -w)" ]'
	GPU_TRIGGER_TEXT="$map" gpu_finish remap "$pid"
fi
cleanup
tap_done
