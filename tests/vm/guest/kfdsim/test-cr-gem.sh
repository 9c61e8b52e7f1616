#!/bin/sh
# GPU memory the plugin cannot save yet, render-node (GEM) BOs, makes it
# refuse the dump (plugin/render_audit.h), never write a checkpoint without
# it. zdtm-gpu-gem holds a KFD VRAM BO and a GEM BO made with libdrm_amdgpu
# on the same render file, both filled with patterns. Each refused dump:
# CRIU fails with the plugin's line naming the pid, fd, GPU and bytes; no
# KFD process image is written; the process runs on (its KFD process not
# paused) and its self-check of every byte of both BOs PASSes.
#   gem-vram   4 MiB VRAM GEM BO, not GPU-mapped: found by probing handles
#   gem-gtt    64 KiB GTT GEM BO in a process without /dev/kfd
#   gem-high   4 MiB GEM BO, mapped, at handle 4201 (4200 BOs made and freed
#              before it): beyond the probe (4096 handles); found by the
#              fdinfo figures against the KFD BOs
#   gem-618    the same on kfdsim's Linux 6.18 flavour (drm_uapi=618):
#              GEM_LIST_HANDLES lists it exactly
# Controls: the same workload without a GEM BO is dumped and restored and
# PASSes (the refusals are the GEM BO's); with the probe off
# (AMDGPU_CRIU_GEM_PROBE=0) an unmapped GEM BO, which 6.12's fdinfo does
# not count, goes unseen, so that case proves the probe is what finds it:
# its dump must then succeed, and the restored process must FAIL its check
# of the GEM BO (or the restore fail): the loss the refusal prevents.
# vm-boot: cr
# vm-timeout: 300
. /test/lib/guest.sh

GEM_WL=/test/bin/zdtm-gpu-gem
UAPI=/sys/module/amdgpu_kfdsim/parameters/drm_uapi
if [ ! -x "$GEM_WL" ] || [ ! -c /dev/kfd ]; then
	ok "gem # SKIP $GEM_WL or /dev/kfd missing"
	tap_done
	exit
fi

# gem_refused NAME PATTERN [KFD] -- OPTIONS...: the workload with OPTIONS,
# its dump refused with the plugin's line matching PATTERN (ERE)
gem_refused() {
	local name=$1 why=$2 kfd=$3 rc img
	shift 4
	img=$WORK/img-$name
	if ! GPU_WL=$GEM_WL gpu_start "$name" "$@"; then
		fail "$name: workload ready"
		return
	fi
	pid=$WL_PID
	for f in /proc/"$pid"/fd/*; do
		case "$(readlink "$f")" in /dev/dri/renderD*) ;; *) continue ;; esac
		diag "$name: fdinfo of fd ${f##*/}: $(grep -E '^drm-(memory|total)-(vram|gtt)' "/proc/$pid/fdinfo/${f##*/}" | tr '\t\n' ' ;')"
		break
	done
	criu_dump "$img" "$pid"
	rc=$?
	check "$name: dump refused (status $rc)" test "$rc" -ne 0
	grep -m2 -E 'amdgpu_plugin: (Error: )?pid' "$img/dump.log" | cut -c1-300 | sed 's/^/# /'
	check "$name: the plugin's line names pid $pid and says why" \
		grep -qE "amdgpu_plugin: (Error: )?pid $pid fd [0-9]+ \(renderD[0-9]+, GPU [0-9]+\): $why" "$img/dump.log"
	check "$name: no KFD process image written" eval '! ls "$img"/amdgpu-kfd-*.img >/dev/null 2>&1'
	check "$name: the process runs on" alive "$pid"
	[ "$kfd" != kfd ] || check "$name: its KFD process is not paused" eval 'kfd_state "$pid" | grep -q " paused=0 "'
	gpu_finish "$name" "$pid"
}

kfdsim_debugfs || diag "no kfdsim debugfs"
gem_refused gem-vram "1 GEM buffer object of 4096 KiB made through the render node" kfd -- --gem 4194304
gem_refused gem-gtt "1 GEM buffer object of 64 KiB" nokfd -- --no-kfd --gem 65536 --gtt
gem_refused gem-high "its GPU VM holds [0-9]+ KiB \(fdinfo\), the process's KFD BOs 1024 KiB .*: [0-9]+ KiB of GPU memory the dump would lose \(GEM handles above 4096\?\)" kfd -- \
	--gem 4194304 --gem-map --skip-handles 4200
if check "kfdsim switched to its Linux 6.18 flavour" eval 'echo 618 >"$UAPI"'; then
	gem_refused gem-618 "1 GEM buffer object of 4096 KiB" kfd -- --gem 4194304 --gem-map --skip-handles 4200
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
	export AMDGPU_CRIU_GEM_PROBE=0
	criu_dump "$WORK/img" "$pid"
	rc=$?
	unset AMDGPU_CRIU_GEM_PROBE
	check "unseen: with the probe off the dump goes through (status $rc)" test "$rc" -eq 0
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
