#!/bin/sh
# Checkpoint/restore of SVM ranges and the XNACK mode (kfdsim, built-in
# machine: two gfx90a GPUs, which support XNACK).
#   svmx:  --svm --xnack on every GPU: XNACK on before any queue, three SVM
#          regions with varied attributes (locations, access per GPU, flags,
#          granularity; split ranges), next to BOs of every type, queues and
#          events (the workload's usual state).
#   svm1:  --svm on one GPU of the two (XNACK off): the unused GPU's pdd has
#          no access, and the restore must not turn XNACK on.
#   svmr:  --svm --xnack restored onto other GPUs: kfdsim reloaded as the
#          MI210 machine (two xGMI hives of 4), a device cgroup shows the
#          workload two GPUs of hive A, and after the dump two of hive B
#          instead (as test-cr-remap.sh). SVM attributes name GPUs by user
#          gpu_id: GET_ATTR must still answer the hive-A ids the
#          application set, while the apertures and render fds show hive B.
# Outside the workload: the image records the ranges and the mode
# (amdgpu-criu inspect), the restored KFD process has them (kfdsim debugfs:
# xnack=, as many SVM ranges as before the dump, none pending after RESUME).
# Inside (its self-check, also as a probe): GET_ATTR of every SVM page
# returns exactly what was set, with the user gpu_ids the application
# knows; every byte of every range; the XNACK query; then the usual checks.
# The negative controls (--sabotage svm, svm-byte, xnack) are in
# test-gpu-workload-options.sh.
# vm-boot: cr
# vm-timeout: 240
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"

# kfd_field PID KEY: one field of PID's line in kfdsim/processes
kfd_field() {
	sed -n "s/^pid=$1 .* $2=\([^ ]*\).*/\1/p" /sys/kernel/debug/kfdsim/processes
}

# inspect_has IMG REGEX: amdgpu-criu inspect's text output matches
inspect_has() {
	amdgpu-criu inspect "$1" >"$WORK/inspect.txt" 2>&1 || { diag "inspect: $(head -3 "$WORK/inspect.txt" | tr '\n' ';')"; return 1; }
	grep -qE "$2" "$WORK/inspect.txt" && return 0
	diag "inspect: $(grep -E 'xnack|objects' "$WORK/inspect.txt" | tr '\n' ';')"
	return 1
}

# cycle NAME XNACK OPTIONS...: start, check the state, dump/restore, check, finish
cycle() {
	local name=$1 xnack=$2 pid ranges img
	shift 2
	if ! gpu_start "$name" "$@"; then
		fail "$name: workload ready"
		return
	fi
	pid=$WL_PID
	img=$WORK/img-$name
	check "$name: three SVM regions listed" eval '[ "$(grep -c "^svm " "$R.ready")" = 3 ]'
	check "$name: READY says xnack $xnack" grep -qx "xnack $xnack" "$R.ready"
	check "$name: its KFD process has XNACK $xnack" eval '[ "$(kfd_field "$pid" xnack)" = "$xnack" ]'
	ranges=$(kfd_field "$pid" svm_ranges)
	check "$name: its KFD process has at least 5 SVM ranges (splits), has ${ranges:-none}" \
		eval '[ "${ranges:-0}" -ge 5 ]'
	check "$name: probe before the dump PASS" gpu_probe 1
	gpu_dump_restore "$name" "$img" "$pid"
	if [ -x /usr/bin/amdgpu-criu ]; then
		check "$name: amdgpu-criu inspect: the image has xnack $xnack" \
			inspect_has "$img" "pid $pid, xnack $([ "$xnack" = 1 ] && echo on || echo off)"
		check "$name: amdgpu-criu inspect: the image has $ranges SVM ranges" \
			inspect_has "$img" ", $ranges SVM range"
	fi
	check "$name: restored KFD process has XNACK $xnack" eval '[ "$(kfd_field "$pid" xnack)" = "$xnack" ]'
	check "$name: restored KFD process has the $ranges SVM ranges, none pending" \
		eval 'wait_until 10 eval "[ \"\$(kfd_field $pid svm_ranges) \$(kfd_field $pid svm_pending)\" = \"$ranges 0\" ]"'
	check "$name: probe after the restore PASS (SVM attributes, bytes, XNACK)" gpu_probe 2
	gpu_finish "$name" "$pid"
}

# svm_remap: the svmr cycle (see the top); reloads kfdsim back at the end
DESC=/test/kfdsim/machines/mi210.desc
CG=/tmp/cg-devices-svm
svm_remap() {
	if [ ! -f "$DESC" ]; then
		ok "svmr # SKIP no $DESC"
		return
	fi
	mkdir -p "$CG"
	if ! mount -t cgroup -o devices devices "$CG" 2>/dev/null; then
		ok "svmr # SKIP no cgroup v1 devices controller"
		return
	fi
	if check "svmr: kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine="$DESC"'; then
		svm_remap_run
	fi
	[ -z "${WL_PID:-}" ] || { kill -9 "$WL_PID" 2>/dev/null; gpu_gone "$WL_PID"; }
	rmdir "$CG/svmjob" 2>/dev/null
	umount "$CG"
	check "svmr: kfdsim loaded again as the boot loaded it" kfdsim_reload
}

svm_remap_run() {
	local n=0 id pid img a_ids a_min b_ids b_min all_min map rc
	# "gpu_id minor hive_id" of every GPU node, in topology order
	while [ -d "$TOPO/$n" ]; do
		id=$(cat "$TOPO/$n/gpu_id")
		[ "$id" = 0 ] || echo "$id $(awk '$1 == "drm_render_minor" || $1 == "hive_id" { v[$1] = $2 } END { print v["drm_render_minor"], v["hive_id"] }' "$TOPO/$n/properties")"
		n=$((n + 1))
	done >"$WORK/gpus"
	# the first two GPUs of the first hive (A) and of the other (B)
	a_ids=$(awk 'NR == 1 { h = $3 } $3 == h && c++ < 2 { printf "%s ", $1 }' "$WORK/gpus")
	a_min=$(awk 'NR == 1 { h = $3 } $3 == h && c++ < 2 { printf "%s ", $2 }' "$WORK/gpus")
	b_ids=$(awk 'NR == 1 { h = $3 } $3 != h && c++ < 2 { printf "%s ", $1 }' "$WORK/gpus")
	b_min=$(awk 'NR == 1 { h = $3 } $3 != h && c++ < 2 { printf "%s ", $2 }' "$WORK/gpus")
	all_min=$(awk '{ printf "%s ", $2 }' "$WORK/gpus")
	if [ "$(echo $a_ids | wc -w)" != 2 ] || [ "$(echo $b_ids | wc -w)" != 2 ]; then
		fail "svmr: two GPUs in each of two hives (A: $a_ids; B: $b_ids)"
		return
	fi
	diag "svmr: hive A GPUs $a_ids(minors $a_min), hive B GPUs $b_ids(minors $b_min)"
	mkdir -p "$CG/svmjob"
	for m in $all_min; do
		case " $a_min" in *" $m "*) ;; *) echo "c 226:$m rwm" >"$CG/svmjob/devices.deny" ;; esac
	done
	printf '#!/bin/sh\necho $$ >%s/tasks || exit 1\nexec "$@"\n' "$CG/svmjob" >"$WORK/incg.sh"
	if ! GPU_WRAP="sh $WORK/incg.sh" gpu_start svmr --svm --xnack --render-fds; then
		fail "svmr: workload ready"
		return
	fi
	pid=$WL_PID
	img=$WORK/img-svmr
	check "svmr: the workload sees the two hive-A GPUs ($a_ids)" eval '[ "$(sed -n "s/^visible //p" "$R.ready") " = "$a_ids" ]'
	criu_dump "$img" "$pid"
	rc=$?
	check "svmr: dump (status $rc)" test "$rc" -eq 0
	check "svmr: the dumped process is gone" gpu_gone "$pid"
	for m in $b_min; do echo "c 226:$m rwm" >"$CG/svmjob/devices.allow"; done
	for m in $a_min; do echo "c 226:$m rwm" >"$CG/svmjob/devices.deny"; done
	CRIU_WRAP="sh $WORK/incg.sh" criu_restore "$img"
	rc=$?
	check "svmr: restore inside the cgroup, onto hive B (status $rc)" test "$rc" -eq 0
	gpu_restored svmr "$pid" "$R.ready"
	check "svmr: the KFD process keeps the hive-A user gpu_ids" eval '[ "$(kfd_user_ids "$pid") " = "$a_ids" ]'
	check "svmr: restored KFD process has XNACK 1" eval '[ "$(kfd_field "$pid" xnack)" = 1 ]'
	# pdd i: user id a[i], now on the i-th hive-B GPU
	map=$(echo "$a_ids" | awk -v b="$b_ids" '{ split(b, B, " "); for (i = 1; i <= NF; i++) print "map", $i, B[i] }')
	diag "svmr: expected map: $(echo "$map" | tr '\n' ';')"
	check "svmr: probe after the restore PASS (SVM attributes with hive-A ids, render fds on hive B)" gpu_probe 2 "$map"
	GPU_TRIGGER_TEXT="$map" gpu_finish svmr "$pid"
	WL_PID=
}

TOPO=/sys/class/kfd/kfd/topology/nodes
cycle svmx 1 --svm --xnack --render-fds --mmio
cycle svm1 0 --svm --gpus 1 --render-fds
svm_remap
tap_done
