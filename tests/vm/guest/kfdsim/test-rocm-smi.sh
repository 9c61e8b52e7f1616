#!/bin/sh
# vm-boot: rocm
# vm-timeout: 1200
# Debian testing's rocm-smi 6.4 (python3 on librocm_smi64, unmodified;
# scripts/fetch-rocm-testing.sh; trixie's python3, scripts/fetch-python.sh;
# VM_SMI=0 leaves both out of the image and the test SKIPs)
# on kfdsim loaded under amdgpu's module name:
# it lists every simulated GPU, each with the PCI address of its KFD node
# (domain, location_id) and of `amdgpu-criu topology`, the unique id of its
# KFD node, the VRAM size of its memory bank as VRAM total, and a VRAM use
# that rises by exactly the size of the big VRAM BO a workload allocates
# and falls back when the workload ends, and each card's hwmon temperatures
# and power, its GPU use and its clock levels. Without kfdsim's amdgpu
# device files (amdgpu_sysfs.c, amdgpu_hwmon.c) rocm-smi still lists the
# GPUs from KFD's topology, but takes none for an AMD GPU ("No AMD GPUs
# specified": no device/vendor), shows N/A for device id, temperatures,
# power, clocks and use, and its VRAM use does not follow KFD's allocations.
# On the boot's machine and on the two-socket 8-GPU MI210 machine.
. /test/lib/guest.sh

# (not R: gpu_start's prefix of the workload's files)
SMI_R=/usr/lib/rocm-testing
if [ ! -e $SMI_R/bin/rocm-smi ] || [ ! -x /usr/bin/python3 ]; then
	ok "rocm-smi # SKIP no Debian testing rocm-smi or python3 in the image (make vm-deps: scripts/fetch-rocm-testing.sh, scripts/fetch-python.sh; VM_SMI=0 leaves them out)"
	tap_done
	exit
fi
if [ ! -f /test/kfdsim/amdgpu.ko ]; then
	ok "rocm-smi # SKIP no /test/kfdsim/amdgpu.ko (KFDSIM_MODNAME=amdgpu build)"
	tap_done
	exit
fi
TOPO=/sys/class/kfd/kfd/topology/nodes
BIG=$((64 << 20))

smi() { LD_LIBRARY_PATH=$SMI_R/lib timeout 180 $SMI_R/bin/rocm-smi "$@"; }

# "BUS UNIQUE_ID VRAM_BYTES" per GPU node of the topology, sorted:
# BUS as rocm-smi prints it (domain:bus:dev.fn, upper case), the unique id
# as python's hex(), VRAM the size of the node's FB memory bank
expected_gpus() {
	local n
	for n in "$TOPO"/*; do
		[ "$(cat "$n/gpu_id")" != 0 ] || continue
		awk -v banks="$(cat "$n"/mem_banks/*/properties | tr '\n' ' ')" '
			$1 == "location_id" { loc = $2 } $1 == "domain" { dom = $2 } $1 == "unique_id" { uid = $2 }
			END {
				k = split(banks, w, " ")
				for (i = 1; i < k; i++) {
					if (w[i] == "heap_type") ht = w[i + 1]
					if (w[i] == "size_in_bytes" && (ht == 1 || ht == 2) && vram == "") vram = w[i + 1]
				}
				printf "%04X:%02X:%02X.%X %s %s\n", dom, int(loc / 256), int(loc / 8) % 32, loc % 8, uid, vram
			}' "$n/properties"
	done | python3 -c '
import sys
for l in sys.stdin:
    bus, uid, vram = l.split()
    print(bus, hex(int(uid)), vram)' | sort
}

# rocm-smi --json FILE: the same per card, from its answers
smi_gpus() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for card, v in d.items():
    if card.startswith("card"):
        print(v.get("PCI Bus"), v.get("Unique ID"), v.get("VRAM Total Memory (B)"))' "$1" | sort
}

# "BUS EDGE JUNCTION MEM POWER USE" per AMD card in /sys/class/drm: its PCI
# address (the last one of its sysfs path), its hwmon temperatures (C) and
# average power (W), its gpu_busy_percent
card_sensors() {
	local c h
	for c in /sys/class/drm/card*; do
		[ "$(cat "$c/device/vendor" 2>/dev/null)" = 0x1002 ] || continue
		h=$(echo "$c"/device/hwmon/hwmon*)
		echo "$(readlink -f "$c" | grep -oE '[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]' | tail -1 | tr a-f A-F)" \
			"$(($(cat "$h/temp1_input") / 1000))" "$(($(cat "$h/temp2_input") / 1000))" \
			"$(($(cat "$h/temp3_input") / 1000))" "$(($(cat "$h/power1_average") / 1000000))" \
			"$(cat "$c/device/gpu_busy_percent")"
	done | sort
}

smi_sensors() { # FILE: the same from rocm-smi --json
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for card, v in d.items():
    if not card.startswith("card"):
        continue
    power = [x for k, x in v.items() if k.endswith("Graphics Package Power (W)")]
    print(v.get("PCI Bus"), *(int(float(v.get("Temperature (Sensor %s) (C)" % s, "-1"))) for s in ("edge", "junction", "memory")),
          int(float(power[0])) if power else None, v.get("GPU use (%)"))' "$1" | sort
}

# VRAM used (B) of all cards together, from rocm-smi --json (the workload's
# first GPU is KFD's first node, not rocm-smi's first card by address)
vram_used() {
	smi --showmeminfo vram --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(int(v["VRAM Total Used Memory (B)"]) for k, v in d.items() if k.startswith("card")))'
}

# WL_USED: VRAM used while the workload runs on the first GPU (READY once
# its BOs exist; TRIGGER ends it)
wl_used() { # NAME [OPTIONS...]
	local name=$1
	shift
	WL_USED=
	gpu_start "$name" --gpus 1 "$@" || return 1
	WL_USED=$(vram_used)
	gpu_trigger
	gpu_result "$WL_PID"
	wait "$WL_PID" 2>/dev/null
	check "$name: the workload passes" gpu_passed
}

reload_mi210() {
	kfdsim_as_amdgpu_unload && kfdsim_as_amdgpu_load machine=/test/kfdsim/machines/mi210.desc
}

run_smi() { # NAME
	local out=$WORK/$1.smi rc want have idle base big after plain
	smi --showproductname --showuniqueid --showbus --showmeminfo vram gtt vis_vram --json >"$out" 2>"$out.err"
	rc=$?
	check "$1: rocm-smi --json exits 0 (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { sed 's/^/# /' "$out.err" | tail -15; keep "$out" "$out.err"; }
	want=$(expected_gpus | tr '\n' ';')
	have=$(smi_gpus "$out" 2>/dev/null | tr '\n' ';')
	diag "$1: topology: $want"
	diag "$1: rocm-smi: $have"
	check "$1: rocm-smi lists every GPU node with its PCI address, unique id and VRAM size" \
		test -n "$have" -a "$want" = "$have"
	[ "$want" = "$have" ] || keep "$out"
	if [ -x /usr/bin/amdgpu-criu ]; then
		want=$(amdgpu-criu topology 2>/dev/null | grep -oE '[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]' | sort -u | tr '\n' ';')
		have=$(smi_gpus "$out" 2>/dev/null | awk '{ print tolower($1) }' | sort -u | tr '\n' ';')
		check "$1: rocm-smi's PCI buses are amdgpu-criu topology's ($want)" test -n "$have" -a "$want" = "$have"
	fi
	smi >"$out.plain" 2>&1
	rc=$?
	plain=$(grep -cE '^[0-9]+ +[0-9]+ +0x[0-9a-f]+' "$out.plain")
	check "$1: plain rocm-smi exits 0 (status $rc) with a row per GPU ($plain of $(expected_gpus | wc -l))" \
		test "$rc" -eq 0 -a "$plain" -eq "$(expected_gpus | wc -l)"
	[ "$rc" -eq 0 ] || { sed 's/^/# /' "$out.plain" | tail -15; keep "$out.plain"; }
	sed 's/^/# /' "$out.plain" | head -14
	check "$1: rocm-smi takes every card for an AMD GPU (device/vendor; no \"No AMD GPUs specified\")" \
		sh -c "! grep -q 'No AMD GPUs specified' '$out.plain'"
	smi --showbus --showtemp --showpower --showuse --json >"$out.sensors" 2>"$out.sensors.err"
	rc=$?
	check "$1: rocm-smi --showtemp --showpower --showuse exits 0 (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { sed 's/^/# /' "$out.sensors.err" | tail -15; keep "$out.sensors" "$out.sensors.err"; }
	want=$(card_sensors | tr '\n' ';')
	have=$(smi_sensors "$out.sensors" 2>/dev/null | tr '\n' ';')
	diag "$1: hwmon: $want"
	diag "$1: rocm-smi: $have"
	check "$1: rocm-smi's edge, junction and memory temperatures, power and GPU use are each card's hwmon and gpu_busy_percent" \
		test -n "$have" -a "$want" = "$have"
	[ "$want" = "$have" ] || keep "$out.sensors"
	smi --showclocks >"$out.clocks" 2>&1
	rc=$?
	sed 's/^/# /' "$out.clocks" | grep -E 'GPU\[0\]' | head -8
	check "$1: rocm-smi --showclocks exits 0 (status $rc) and gives every GPU's sclk and mclk" \
		test "$rc" -eq 0 -a "$(grep -c 'sclk clock level' "$out.clocks")" -eq "$(expected_gpus | wc -l)" \
		-a "$(grep -c 'mclk clock level' "$out.clocks")" -eq "$(expected_gpus | wc -l)"

	# VRAM used with the workload without and with a big VRAM BO differ by
	# the BO's size
	idle=$(vram_used)
	wl_used "$1-base" --bos 1
	base=$WL_USED
	wl_used "$1-big" --bos 1 --big-bo $BIG
	big=$WL_USED
	after=$(vram_used)
	diag "$1: VRAM used on all GPUs: idle $idle, workload $base, with the big BO $big, after $after"
	check "$1: VRAM used rises while the workload holds its BOs ($idle -> $base)" \
		test -n "$base" -a "${base:-0}" -gt "${idle:-0}"
	check "$1: VRAM used rises by the big BO's $BIG bytes ($base -> $big)" \
		test -n "$big" -a "$((${big:-0} - ${base:-0}))" -eq "$BIG"
	check "$1: VRAM used falls back when the workload ends ($after = $idle)" \
		test -n "$after" -a "$after" = "$idle"
}

# "dddd:bb:dd.f" per distinct PCI address of the loaded machine's GPU nodes
# (domain, location_id), and the same of the AMD cards in /sys/class/drm
# (the address in each card's sysfs path)
topology_addresses() {
	local n
	for n in "$TOPO"/*; do
		[ "$(cat "$n/gpu_id")" != 0 ] || continue
		awk '$1 == "location_id" { loc = $2 } $1 == "domain" { dom = $2 }
			END { printf "%04x:%02x:%02x.%x\n", dom % 65536, int(loc / 256) % 256, int(loc / 8) % 32, loc % 8 }' "$n/properties"
	done | sort -u
}
card_addresses() {
	local c
	for c in /sys/class/drm/card*; do
		[ "$(cat "$c/device/vendor" 2>/dev/null)" = 0x1002 ] || continue
		readlink -f "$c" | grep -oE '[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]' | tail -1
	done | sort -u
}

# every machine description loads, with one amdgpu device directory per PCI
# address of its GPU nodes (compute partitions of one address share it)
every_machine() {
	local d want have rc
	for d in /test/kfdsim/machines/*.desc; do
		[ -f "$d" ] || continue
		kfdsim_as_amdgpu_unload
		kfdsim_as_amdgpu_load machine="$d"
		rc=$?
		check "${d##*/}: loaded under amdgpu's module name (status $rc)" test "$rc" -eq 0
		[ "$rc" -eq 0 ] || continue
		want=$(topology_addresses | tr '\n' ' ')
		have=$(card_addresses | tr '\n' ' ')
		check "${d##*/}: an AMD card under each PCI address of the topology ($(echo "$want" | wc -w))" \
			test -n "$have" -a "$want" = "$have"
		[ "$want" = "$have" ] || diag "${d##*/}: topology: $want; cards: $have"
	done
}

kfdsim_unload
every_machine
kfdsim_as_amdgpu_unload
check "kfdsim loaded under amdgpu's module name" kfdsim_as_amdgpu_load
run_smi boot
if [ -f /test/kfdsim/machines/mi210.desc ]; then
	check "reloaded as the 2-socket 8-GPU MI210 machine" reload_mi210
	run_smi mi210
else
	ok "mi210 # SKIP no mi210 machine description"
fi
check "amdgpu-named simulator unloaded" kfdsim_as_amdgpu_unload
check "kfdsim loaded again as the boot loaded it" kfdsim_load
tap_done
