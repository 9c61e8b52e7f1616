#!/bin/sh
# Render-node (GEM) BOs. Where the kernel cannot list them (Linux 6.12,
# kfdsim's default flavour) the plugin refuses the dump rather than lose
# them (plugin/dump/render_audit.h); where it can (Linux 6.18, kfdsim's
# drm_uapi=618) it saves and restores them (plugin/dump/gem_dump.h, plugin/restore/gem_restore.h).
# zdtm-gpu-gem holds a KFD VRAM BO and a GEM BO made with libdrm_amdgpu on
# the same render file, both filled with patterns; its self-check reads
# every byte of both, asks its GEM handle's size, compares the BO's GPU
# mapping with the one it had (6.18's GET_MAPPING_INFO) and writes the BO
# through its CPU mapping again.
# Refused on 6.12: CRIU fails with the plugin's line naming the pid, fd,
# GPU and bytes; no KFD process image is written; the process runs on (its
# KFD process not paused) and PASSes.
#   gem-vram   4 MiB VRAM GEM BO, not GPU-mapped: found by probing handles
#   gem-gtt    64 KiB GTT GEM BO in a process without /dev/kfd
#   gem-high   4 MiB GEM BO, mapped, at handle 4201 (4200 BOs made and freed
#              before it): beyond the probe (4096 handles); found in amdgpu's
#              debugfs amdgpu_gem_info (which kfdsim has too)
#   gem-high-fdinfo  the same with that census off
#              (AMDGPU_CRIU_GEM_CENSUS=probe): found by the fdinfo figures
#              against the KFD BOs
#   gem-beyond 64 KiB GEM BO, not mapped, at handle 4201: beyond the probe
#              and not in 6.12's fdinfo; found by amdgpu_gem_info alone
#   gem-no-census  no GEM BO, but amdgpu_gem_info cannot be read
#              (AMDGPU_CRIU_DEBUGFS elsewhere): the dump cannot know, refused
# Saved on 6.18:
#   gem-618       the gem-high process: dumped and restored, the GEM BO back
#                 at handle 4201 (GEM_CHANGE_HANDLE), same VA, same bytes
#   gem-618-nokfd 64 KiB GTT GEM BO, GPU-mapped, in a process without
#                 /dev/kfd: dumped and restored
#   gem-618-old   the gem-618 checkpoint restored on the 6.12 flavour (no
#                 GEM_CHANGE_HANDLE): refused with the plugin's line, nothing
#                 left behind
#   gem-618-bad   one byte of the GEM BO's saved contents changed: the
#                 restore refuses the damaged data, nothing left behind
#   gem-618-remap the same dumped on the boot's two GPUs, restored on two of
#                 the MI210 machine's eight (other gpu_ids, render minors)
#   gem-618-lost-va  negative control of the VA check: restored, then the
#                 workload drops its GEM BO's GPU mapping: its check FAILs
# Refused on 6.18:
#   gem-618-kfd-handle  the KFD BO's dma-buf kept as a GEM handle too (one
#                 BO, two names): refused when the render file is dumped
#   gem-618-foreign  a GEM handle of another GPU's BO (PRIME import):
#                 refused by the audit, before anything is dumped
# Controls: the same workload without a GEM BO is dumped and restored and
# PASSes (the refusals are the GEM BO's); with the probe and the census off
# (AMDGPU_CRIU_GEM_PROBE=0, AMDGPU_CRIU_GEM_CENSUS=probe) an unmapped GEM
# BO, which 6.12's fdinfo does not count, goes unseen, so that case proves
# the probe and the census are what find it: its dump must then succeed,
# and the restored process must FAIL its check of the GEM BO (or the
# restore fail): the loss the refusal prevents, and the proof that the
# workload's check sees a lost GEM BO.
# vm-boot: cr
# vm-timeout: 420
. /test/lib/guest.sh

GEM_WL=/test/bin/zdtm-gpu-gem
UAPI=/sys/module/amdgpu_kfdsim/parameters/drm_uapi
if [ ! -x "$GEM_WL" ] || [ ! -c /dev/kfd ]; then
	ok "gem # SKIP $GEM_WL or /dev/kfd missing"
	tap_done
	exit
fi

# gem_start NAME OPTIONS...: zdtm-gpu-gem with OPTIONS ready, pid=its pid;
# 1 (a failed check) if it is not
gem_start() {
	if ! GPU_WL=$GEM_WL gpu_start "$@"; then
		fail "$1: workload ready"
		return 1
	fi
	pid=$WL_PID
}

# gem_refused NAME PATTERN KFD|NOKFD|KFD-DUMPED -- OPTIONS...: the
# workload with OPTIONS, its dump refused with the plugin's line "pid P fd
# N (renderD.., GPU ..): PATTERN" (ERE; a PATTERN starting with ^: the
# whole line after "amdgpu_plugin: "); KFD-DUMPED: refused when the render
# file is dumped, after /dev/kfd (whose image CRIU leaves in the failed
# dump's directory)
gem_refused() {
	local name=$1 why=$2 kfd=$3 rc img line
	shift 4
	img=$WORK/img-$name
	gem_start "$name" "$@" || return
	for f in /proc/"$pid"/fd/*; do
		case "$(readlink "$f")" in /dev/dri/renderD*) ;; *) continue ;; esac
		diag "$name: fdinfo of fd ${f##*/}: $(grep -E '^drm-(memory|total)-(vram|gtt)' "/proc/$pid/fdinfo/${f##*/}" | tr '\t\n' ' ;')"
		break
	done
	criu_dump "$img" "$pid"
	rc=$?
	check "$name: dump refused (status $rc)" test "$rc" -ne 0
	grep -m2 -E 'amdgpu_plugin: Error: ' "$img/dump.log" | cut -c1-300 | sed 's/^/# /'
	case $why in
	^*) line="amdgpu_plugin: (Error: )?${why#^}" ;;
	*) line="amdgpu_plugin: (Error: )?pid $pid fd [0-9]+ \(renderD[0-9]+, GPU [0-9]+\): $why" ;;
	esac
	check "$name: the plugin's line says why" grep -qE "$line" "$img/dump.log"
	[ "$kfd" = kfd-dumped ] ||
		check "$name: no KFD process image written" eval '! ls "$img"/amdgpu-kfd-*.img >/dev/null 2>&1'
	check "$name: no GEM BO contents left" eval '! ls "$img"/amdgpu-bo-*.i* >/dev/null 2>&1 || [ "$kfd" = kfd-dumped ]'
	check "$name: the process runs on" alive "$pid"
	[ "$kfd" = nokfd ] || check "$name: its KFD process is not paused" eval 'kfd_state "$pid" | grep -q " paused=0 "'
	gpu_finish "$name" "$pid"
}

# gem_saved NAME KFD|NOKFD KIB -- OPTIONS...: the workload with OPTIONS
# (one GEM BO of KIB KiB) dumped and restored on the 6.18 flavour, PASS
gem_saved() {
	local name=$1 kfd=$2 kib=$3 img handle
	shift 4
	img=$WORK/img-$name
	gem_start "$name" "$@" || return
	handle=$(sed -n 's/^gem_handle //p' "$R.ready")
	diag "$name: GEM handle $handle, GPU VA $(sed -n 's/^gem_va //p' "$R.ready")"
	if [ "$kfd" = kfd ]; then
		EXPECT=ok gpu_dump_restore "$name" "$img" "$pid"
	else
		gpu_drop_images
		gpu_dump_ok "$name" "$img" "$pid"
		gpu_restore_ok "$name" "$img"
		gpu_restored "$name" "$pid" "$R.ready"
	fi
	grep -m2 -E 'amdgpu_plugin: (render node file|render-node file) [0-9]+.*GEM' "$img/dump.log" "$img/restore.log" | cut -c1-200 | sed 's/^/# /'
	check "$name: the dump saved 1 GEM BO of $kib KiB" \
		grep -qE "render node file [0-9]+: renderD[0-9]+ \(GPU [0-9]+\), 1 GEM BOs of $kib KiB" "$img/dump.log"
	check "$name: the restore restored it" \
		grep -qE "render-node file [0-9]+: 1 GEM BOs restored on renderD[0-9]+" "$img/restore.log"
	gpu_finish "$name" "$pid"
}

# gem_dump_only NAME -- OPTIONS...: a 6.18 dump that must succeed; $IMG
gem_dump_only() {
	local name=$1
	shift 2
	IMG=$WORK/img-$name
	gem_start "$name" "$@" || return
	gpu_drop_images
	gpu_dump_ok "$name" "$IMG" "$pid"
}

# gem_restore_refused NAME PATTERN: the restore of $IMG fails with the
# plugin's line matching PATTERN (ERE) and leaves nothing behind
gem_restore_refused() {
	local name=$1 why=$2 rc
	criu_restore "$IMG"
	rc=$?
	check "$name: restore refused (status $rc)" test "$rc" -ne 0
	grep -m2 -E 'amdgpu_plugin: (Error: )?.*(GEM|damaged)' "$IMG/restore.log" | cut -c1-300 | sed 's/^/# /'
	check "$name: the plugin's line says why" grep -qE "$why" "$IMG/restore.log"
	check "$name: the process is not left half-restored" gpu_gone "$pid"
	check "$name: no workload, criu or KFD process left" gpu_no_strays
	gpu_drop_images
}

# the gem-618 checkpoint on a kernel without GEM_CHANGE_HANDLE
gem_old_kernel() {
	gem_dump_only gem-618-old -- --gem 4194304 --gem-map --skip-handles 4200 || return
	check "gem-618-old: kfdsim switched to 6.12 for the restore" eval 'echo 612 >"$UAPI"'
	gem_restore_refused gem-618-old "GEM handle 4201 came back as 1 and this kernel cannot renumber GEM handles"
	check "gem-618-old: kfdsim back to 6.18" eval 'echo 618 >"$UAPI"'
}

# one byte of the saved GEM contents changed (only the GEM BO has contents:
# no /dev/kfd)
gem_bad_contents() {
	local f
	gem_dump_only gem-618-bad -- --no-kfd --gem 65536 --gtt || return
	f=$(ls "$IMG"/amdgpu-bo-*.img 2>/dev/null | head -1)
	check "gem-618-bad: the GEM BO's contents file is there ($f)" test -s "$f"
	amdgpu-criu inspect --verify "$IMG" >"$WORK/inspect.out" 2>&1
	sed -n '/^render-node files/,$p' "$WORK/inspect.out" | sed 's/^/# /'
	check "gem-618-bad: inspect lists the render file's GEM BO (1, 64.0 KiB)" \
		grep -qE '^amdgpu-render-[0-9]+\.img +renderD[0-9]+ .* 1 +64\.0 KiB$' "$WORK/inspect.out"
	check "gem-618-bad: inspect --verify finds it intact first" \
		grep -qE '^verify: amdgpu-render-[0-9]+\.img: GEM BOs ok$' "$WORK/inspect.out"
	printf 'Z' | dd of="$f" bs=1 seek=8191 conv=notrunc 2>/dev/null
	check "gem-618-bad: inspect --verify fails on the damage" eval '! amdgpu-criu inspect --verify "$IMG" >"$WORK/inspect.out" 2>&1'
	grep 'DAMAGED' "$WORK/inspect.out" | sed 's/^/# /'
	check "gem-618-bad: ... naming the GEM handle" \
		grep -qE '^verify: amdgpu-render-[0-9]+\.img: DAMAGED: GEM handle 1, byte offset 0: ' "$WORK/inspect.out"
	gem_restore_refused gem-618-bad "checkpoint's data is damaged"
}

# negative control of the self-check's VA check: a restore that lost the
# GEM BO's GPU mapping (the workload drops it itself) must FAIL
gem_lost_va() {
	gem_start gem-618-lost-va --gem 65536 --gem-map --drop-va || return
	EXPECT=ok gpu_dump_restore gem-618-lost-va "$WORK/img-lost-va" "$pid"
	gpu_trigger
	gpu_result "$pid"
	check "gem-618-lost-va: the self-check FAILs on the missing GPU mapping ($RESULT)" \
		eval 'echo "$RESULT" | grep -q "^FAIL GEM BO VA"'
	gpu_gone "$pid" || kill -9 "$pid"
	check "gem-618-lost-va: nothing left" gpu_no_strays
	gpu_drop_images
}

# the gem-618 process (handle 21 here) dumped on the boot's two GPUs and
# restored on two of the MI210 machine's eight, 6.18 flavour: other gpu_ids
# and render minors
gem_remap() {
	local desc=/test/kfdsim/machines/mi210.desc ids img=$WORK/img-gem-remap
	if [ ! -f "$desc" ]; then
		ok "gem-618-remap # SKIP no $desc"
		return
	fi
	if ! gpu_cg_make gem; then
		ok "gem-618-remap # SKIP no cgroup v1 devices controller"
		return
	fi
	if ! GPU_WL=$GEM_WL GPU_WRAP="sh $WORK/cg-gem.sh" gpu_start gem-618-remap \
		--gem 4194304 --gem-map --skip-handles 20; then
		fail "gem-618-remap: workload ready"
		gpu_cg_remove gem
		return
	fi
	pid=$WL_PID
	ids=$(kfd_user_ids "$pid")
	gpu_drop_images
	gpu_dump_ok gem-618-remap "$img" "$pid"
	gpu_restore_on_machine gem-618-remap "$img" "$pid" "$ids" "$desc" gem drm_uapi=618
	sed -n 's/.*amdgpu_plugin: \(render-node file .*\)/# restore: \1/p' "$img/restore.log"
	check "gem-618-remap: the GEM BO restored on another render node" \
		grep -qE "render-node file [0-9]+: 1 GEM BOs restored on renderD(129|1[3-9][0-9])" "$img/restore.log"
	gpu_finish gem-618-remap "$pid"
	gpu_cg_remove gem
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
}

kfdsim_debugfs || diag "no kfdsim debugfs"
gem_refused gem-vram "1 GEM buffer object of 4096 KiB made through the render node" kfd -- --gem 4194304
gem_refused gem-gtt "1 GEM buffer object of 64 KiB" nokfd -- --no-kfd --gem 65536 --gtt
gem_refused gem-high "amdgpu_gem_info lists 1 GEM buffer object of 4096 KiB in the dumped tasks' render files, beyond the probe's 4096 handles" kfd -- \
	--gem 4194304 --gem-map --skip-handles 4200
AMDGPU_CRIU_GEM_CENSUS=probe gem_refused gem-high-fdinfo "its GPU VM holds [0-9]+ KiB \(fdinfo\), the process's KFD BOs 1024 KiB .*: [0-9]+ KiB of GPU memory the dump would lose \(GEM handles above 4096\?\)" kfd -- \
	--gem 4194304 --gem-map --skip-handles 4200
gem_refused gem-beyond "amdgpu_gem_info lists 1 GEM buffer object of 64 KiB" kfd -- \
	--gem 65536 --skip-handles 4200
AMDGPU_CRIU_DEBUGFS=/nonexistent gem_refused gem-no-census "cannot read /nonexistent/dri/[0-9]+/amdgpu_gem_info .*AMDGPU_CRIU_GEM_CENSUS=probe" kfd --
if check "kfdsim switched to its Linux 6.18 flavour" eval 'echo 618 >"$UAPI"'; then
	gem_saved gem-618 kfd 4096 -- --gem 4194304 --gem-map --skip-handles 4200
	gem_saved gem-618-nokfd nokfd 64 -- --no-kfd --gem 65536 --gtt --gem-map
	gem_old_kernel
	gem_bad_contents
	gem_lost_va
	gem_refused gem-618-kfd-handle "^(render file [0-9]+ \(renderD[0-9]+, GPU [0-9]+\): GEM handle 1 is pid [0-9]+'s KFD BO at 0x[0-9a-f]+|pid [0-9]+'s KFD BO at 0x[0-9a-f]+ is GEM handle 1 of render file [0-9]+).*refused" kfd-dumped -- --kfd-handle
	gem_refused gem-618-foreign "1 of its GEM buffer objects are PRIME imports of another device's buffers" kfd -- --foreign
	gem_remap # last: it reloads kfdsim as the boot loaded it
fi
check "kfdsim back to 6.12" eval 'echo 612 >"$UAPI"'

# control: no GEM BO, dumped and restored
if GPU_WL=$GEM_WL gpu_start control; then
	pid=$WL_PID
	EXPECT=ok
	gpu_dump_restore control "$WORK/img" "$pid"
	gpu_finish control "$pid"
else
	fail "control: workload ready"
fi

# control: the probe off, an unmapped GEM BO is not seen, and is lost
if GPU_WL=$GEM_WL gpu_start unseen --gem 4194304; then
	pid=$WL_PID
	export AMDGPU_CRIU_GEM_PROBE=0 AMDGPU_CRIU_GEM_CENSUS=probe
	criu_dump "$WORK/img" "$pid"
	rc=$?
	unset AMDGPU_CRIU_GEM_PROBE AMDGPU_CRIU_GEM_CENSUS
	check "unseen: with the probe and the census off the dump goes through (status $rc)" test "$rc" -eq 0
	criu_restore "$WORK/img"
	rc=$?
	diag "unseen: restore status $rc"
	if [ "$rc" -eq 0 ]; then
		gpu_trigger
		gpu_result "$pid"
		check "unseen: the restored process finds its GEM BO lost (FAIL GEM BO ...)" \
			eval 'echo "$RESULT" | grep -q "^FAIL GEM BO"'
		gpu_gone "$pid" || kill -9 "$pid"
	else
		ok "unseen: the restore of a checkpoint without the GEM BO fails"
	fi
	gpu_drop_images
	check "unseen: nothing left" gpu_no_strays
else
	fail "unseen: workload ready"
fi
tap_done
