#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Turns a KFD sysfs topology capture (a copy of /sys/class/kfd/kfd/topology,
# e.g. tests/fixtures/kfd-topologies/<machine>) into a kfdsim machine description
# (format: desc.c, README.md) on stdout.
#
# usage: mkdesc.sh CAPTURE_DIR [--add-gpu-ids] [--nodes FIRST-LAST]
#   --add-gpu-ids   GPU nodes without a gpu_id file get one, computed like
#                   KFD's (CRC16 over PCI location, device id, VRAM size and
#                   XCC count; +1 on a collision); without the option a
#                   missing gpu_id is an error
#   --nodes A-B     keep nodes A..B only (renumbered from 0; links to other
#                   nodes dropped), e.g. the real part of a composite capture
#
# What a capture lacks is completed the way KFD would show it, each with a
# "# mkdesc:" comment in the output:
#   - keys KFD 6.12 does not print (capability2, ...) are dropped; keys it
#     prints but the capture lacks (cwsr_size, ...) are left to the module;
#   - a name file missing on a GPU node: the ASIC name by gfx_target_version;
#   - mem_banks missing but counted: one FB bank (public if a CPU node links
#     to the GPU, i.e. large BAR) of a known size for the device id;
#   - caches missing but counted: that many placeholder L1 entries, of type
#     9 (DATA|HSACU) as real GPU L1 data caches are (ROCr keeps only those);
#   - io/p2p links missing but counted: the count is dropped;
#   - drm_render_minor 0 on a GPU (anonymised captures): 128 + GPU index.
set -euo pipefail

die() { echo "mkdesc.sh: $*" >&2; exit 1; }

CAP=${1:?usage: mkdesc.sh CAPTURE_DIR [--add-gpu-ids] [--nodes A-B]}
shift
ADD_IDS=0 FIRST=0 LAST=-1
while [ $# -gt 0 ]; do
	case "$1" in
	--add-gpu-ids) ADD_IDS=1 ;;
	--nodes) FIRST=${2%-*} LAST=${2#*-}; shift ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
[ -d "$CAP/nodes" ] || die "$CAP/nodes: not a topology capture"

# Keys of nodes/N/properties that KFD 6.12 prints (kfdsim_node_props).
NODE_KEYS=" cpu_cores_count simd_count mem_banks_count caches_count io_links_count
p2p_links_count cpu_core_id_base simd_id_base max_waves_per_simd lds_size_in_kb
gds_size_in_kb num_gws wave_front_size array_count simd_arrays_per_engine
cu_per_simd_array simd_per_cu max_slots_scratch_cu gfx_target_version vendor_id
device_id location_id domain drm_render_minor hive_id num_sdma_engines
num_sdma_xgmi_engines num_sdma_queues_per_engine num_cp_queues cwsr_size
ctl_stack_size max_engine_clk_fcompute local_mem_size fw_version capability
debug_prop sdma_fw_version unique_id num_xcc max_engine_clk_ccompute "
NODE_KEYS=$(echo $NODE_KEYS)" "
NODE_KEYS=" $NODE_KEYS"

declare -A P	# properties of the current node

read_props() { # FILE -> P
	local k v
	P=()
	while read -r k v; do
		[ -n "$k" ] || continue
		[[ "$v" =~ ^[0-9]+$ ]] || die "$1: bad line \"$k $v\""
		P[$k]=$v
	done <"$1"
}

# CRC-16 (poly 0xA001, the kernel's crc16()) over little-endian u32 words.
crc16_words() {
	local crc=0 w b i
	for w in "$@"; do
		for b in 0 1 2 3; do
			crc=$((crc ^ ((w >> (8 * b)) & 0xFF)))
			for i in 1 2 3 4 5 6 7 8; do
				if ((crc & 1)); then crc=$(((crc >> 1) ^ 0xA001)); else crc=$((crc >> 1)); fi
			done
		done
	done
	echo $crc
}

asic_name() { # gfx_target_version -> name KFD shows (amdgpu_asic_name)
	case "$1" in
	80001) echo carrizo ;; 80002) echo tonga ;; 80003) echo fiji ;;
	80100) echo stoney ;; 80300) echo polaris10 ;; 80301) echo polaris11 ;;
	90000) echo vega10 ;; 90002) echo raven ;; 90004) echo vega12 ;;
	90006) echo vega20 ;; 90008) echo arcturus ;; 90010) echo aldebaran ;;
	90012) echo renoir ;; 100100) echo navi10 ;; 100101) echo navi12 ;;
	100102) echo navi14 ;; 100300) echo sienna_cichlid ;; 100301) echo navy_flounder ;;
	100302) echo dimgrey_cavefish ;; 100303) echo vangogh ;; 100304) echo beige_goby ;;
	100305) echo yellow_carp ;; 100306) echo cyan_skillfish ;;
	*) echo "ip discovery" ;;	# GFX 9.4.3+ / 10.3.6+ / 11+: IP discovery
	esac
}

# The PCI revision is not in sysfs; libdrm names a GPU by (device id,
# revision) from amdgpu.ids. A device id listed there with one revision only
# gets that revision ("pci ID rev=N"); otherwise the line is left out (rev 0).
AMDGPU_IDS=${AMDGPU_IDS:-/usr/share/libdrm/amdgpu.ids}
pci_rev_line() { # node device_id(decimal)
	local hex revs
	[ "$2" -gt 0 ] && [ -r "$AMDGPU_IDS" ] || return 0
	hex=$(printf '%04X' "$2")
	revs=$(awk -F',[ \t]*' -v d="$hex" 'toupper($1) == d { print $2 }' "$AMDGPU_IDS" | sort -u)
	if [ "$(echo "$revs" | grep -c .)" = 1 ]; then
		echo "# mkdesc: node $1: PCI revision 0x$revs, the only one amdgpu.ids lists for 0x$hex"
		echo "pci $1 rev=$((16#$revs))"
	fi
}

vram_of_device() { # device_id -> bytes of a typical board (synthetic)
	case "$1" in
	29711) echo 68702699520 ;;	# 0x740F MI210, 64 GiB
	29708 | 29704) echo 137438953472 ;;	# MI250(X) GCD pair, 128 GiB
	*) echo 17179869184 ;;
	esac
}

NODES=()
for d in "$CAP"/nodes/*/; do d=${d%/}; NODES+=("${d##*/}"); done
mapfile -t NODES < <(printf '%s\n' "${NODES[@]}" | sort -n)
[ "$LAST" -ge 0 ] || LAST=${NODES[-1]}
in_range() { [ "$1" -ge "$FIRST" ] && [ "$1" -le "$LAST" ]; }

echo "kfdsim-machine 1"
echo "# mkdesc: from $(basename "$(cd "$CAP" && pwd)")${FIRST:+, nodes $FIRST-$LAST}"
if [ -f "$CAP/system_properties" ]; then
	read_props "$CAP/system_properties"
	echo "system platform_oem=${P[platform_oem]:-0} platform_id=${P[platform_id]:-0} platform_rev=${P[platform_rev]:-0}"
else
	echo "# mkdesc: no system_properties in the capture"
	echo "system platform_oem=0 platform_id=0 platform_rev=0"
fi
if [ -f "$CAP/generation_id" ] && [ "$FIRST" -eq 0 ] && [ "$LAST" -eq "${NODES[-1]}" ]; then
	echo "generation_id $(cat "$CAP/generation_id")"
fi

# CPU nodes that link to a GPU (large-BAR GPUs get a CPU -> GPU io_link)
declare -A CPU_LINKED
for n in "${NODES[@]}"; do
	for f in "$CAP"/nodes/"$n"/io_links/*/properties; do
		[ -f "$f" ] || continue
		read_props "$f"
		CPU_LINKED[${P[node_to]}]=1
	done
done

declare -A USED_IDS
GPU_INDEX=0
emit_items() { # NODE NEWID KIND DIR
	local n=$1 id=$2 kind=$3 dir=$4 i=0 f line k
	[ -d "$CAP/nodes/$n/$dir" ] || return 0
	for f in $(ls "$CAP/nodes/$n/$dir" | sort -n); do
		f=$CAP/nodes/$n/$dir/$f/properties
		[ -f "$f" ] || continue
		if [ "$kind" = iolink ] || [ "$kind" = p2plink ]; then
			read_props "$f"
			if ! in_range "${P[node_to]}"; then
				echo "# mkdesc: dropped $dir link to node ${P[node_to]} (outside the kept nodes)"
				continue
			fi
		fi
		line="$kind $id $i"
		while read -r k v; do
			[ -n "$k" ] || continue
			case "$kind:$k" in
			cache:sibling_map) line+=" sibling_map=$v" ;;
			iolink:node_from | p2plink:node_from) line+=" node_from=$id" ;;
			iolink:node_to | p2plink:node_to) line+=" node_to=$((v - FIRST))" ;;
			*) line+=" $k=$v" ;;
			esac
		done <"$f"
		echo "$line"
		i=$((i + 1))
	done
	COUNT=$i
}

for n in "${NODES[@]}"; do
	in_range "$n" || continue
	id=$((n - FIRST))
	nd=$CAP/nodes/$n
	read_props "$nd/properties"
	declare -A NP=()
	for k in "${!P[@]}"; do NP[$k]=${P[$k]}; done
	gpu=0
	if [ -f "$nd/gpu_id" ]; then
		gpu_id=$(cat "$nd/gpu_id")
		[ "$gpu_id" -ne 0 ] && gpu=1
	elif [ "${NP[simd_count]:-0}" -gt 0 ] && [ "${NP[cpu_cores_count]:-0}" -eq 0 ]; then
		gpu=1
		[ "$ADD_IDS" = 1 ] || die "node $n: GPU without a gpu_id file (use --add-gpu-ids)"
		loc=${NP[location_id]:-0} xcc=${NP[num_xcc]:-1}
		vram=$(vram_of_device "${NP[device_id]:-0}")
		[ -f "$nd/mem_banks/0/properties" ] && { read_props "$nd/mem_banks/0/properties"; vram=${P[size_in_bytes]}; }
		gpu_id=$(crc16_words $((loc & 0xFF)) 0 "${NP[domain]:-0}" "${NP[device_id]:-0}" \
			$((loc >> 8)) $((vram & 0xFFFFFFFF)) $((vram >> 32)) $((xcc << 16)))
		while [ "$gpu_id" -eq 0 ] || [ -n "${USED_IDS[$gpu_id]:-}" ]; do gpu_id=$(((gpu_id + 1) & 0xFFFF)); done
		echo "# mkdesc: node $id: generated gpu_id $gpu_id"
	else
		gpu_id=0
	fi
	[ "$gpu" = 0 ] || USED_IDS[$gpu_id]=1

	dropped=""
	for k in "${!NP[@]}"; do
		case "$NODE_KEYS" in *" $k "*) ;; *) dropped+=" $k"; unset "NP[$k]" ;; esac
	done
	[ -z "$dropped" ] || echo "# mkdesc: node $id: dropped keys not shown by KFD 6.12:$dropped"
	if [ "$gpu" = 1 ] && [ "${NP[drm_render_minor]:-0}" -eq 0 ]; then
		NP[drm_render_minor]=$((128 + GPU_INDEX))
		echo "# mkdesc: node $id: drm_render_minor 0 in the capture, using ${NP[drm_render_minor]}"
	fi

	# entries first (into a buffer), so that counts can be fixed up
	items=$(
		COUNT=0
		emit_items "$n" "$id" mem mem_banks
		if [ "$COUNT" -eq 0 ] && [ "${NP[mem_banks_count]:-0}" -gt 0 ] && [ "$gpu" = 1 ]; then
			ht=2; [ -n "${CPU_LINKED[$n]:-}" ] && ht=1
			echo "# mkdesc: synthetic VRAM bank (not in the capture)"
			echo "mem $id 0 heap_type=$ht size_in_bytes=$(vram_of_device "${NP[device_id]:-0}") flags=0 width=4096 mem_clk_max=1600"
		elif [ "$COUNT" -eq 0 ] && [ "${NP[mem_banks_count]:-0}" -gt 0 ]; then
			echo "# mkdesc: synthetic system memory bank, size unknown (not in the capture)"
			echo "mem $id 0 heap_type=0 size_in_bytes=0 flags=0 width=0 mem_clk_max=0"
		fi
		emit_items "$n" "$id" cache caches
		want=${NP[caches_count]:-0}
		if [ "$COUNT" -eq 0 ] && [ "$want" -gt 0 ]; then
			echo "# mkdesc: $want placeholder caches (not in the capture)"
			for ((i = 0; i < want; i++)); do
				echo "cache $id $i processor_id_low=${NP[simd_id_base]:-0} level=1 size=16 cache_line_size=64 cache_lines_per_tag=1 association=4 latency=1 type=9 sibling_map=1,0,0,0,0,0,0,0"
			done
		fi
		emit_items "$n" "$id" iolink io_links
		emit_items "$n" "$id" p2plink p2p_links
	)
	# counts: the module derives them from the entries
	for k in mem_banks_count caches_count io_links_count p2p_links_count; do unset "NP[$k]"; done
	line="node $id gpu_id=$gpu_id"
	for k in $NODE_KEYS; do
		[ -z "${NP[$k]:-}" ] || line+=" $k=${NP[$k]}"
	done
	echo "$line"
	if [ -f "$nd/name" ]; then
		name=$(head -1 "$nd/name"); echo "name $id${name:+ $name}"
	elif [ "$gpu" = 1 ]; then
		echo "# mkdesc: node $id: no name file, ASIC name by gfx_target_version"
		echo "name $id $(asic_name "${NP[gfx_target_version]:-0}")"
	fi
	[ "$gpu" = 0 ] || pci_rev_line "$id" "${NP[device_id]:-0}"
	[ -z "$items" ] || echo "$items"
	[ "$gpu" = 0 ] || GPU_INDEX=$((GPU_INDEX + 1))
	unset NP
done
echo "end"
