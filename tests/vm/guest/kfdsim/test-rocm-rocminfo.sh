#!/bin/sh
# vm-boot: rocm
# vm-timeout: 240
# Debian's rocminfo (ROCm 5.2.3: libhsakmt and ROCr underneath, unmodified)
# on kfdsim lists every simulated GPU with the gfx target and compute-unit
# count its sysfs node gives, and every CPU node as a CPU agent: on the
# boot's machine and on the two-socket 8-GPU MI210 machine (2 CPU nodes; the
# guest has 2 NUMA nodes, as libhsakmt matches them).
. /test/lib/guest.sh

if [ ! -x /usr/bin/rocminfo ] || [ ! -c /dev/kfd ]; then
	ok "rocminfo # SKIP rocminfo or /dev/kfd missing"
	tap_done
	exit
fi
TOPO=/sys/class/kfd/kfd/topology/nodes

# expected AGENTS: "gpu gfxNNN CUS" per GPU node, "cpu" per CPU node, sorted
expected_agents() {
	local n p v
	for n in "$TOPO"/*; do
		p=$n/properties
		if [ "$(cat "$n/gpu_id")" = 0 ]; then
			echo cpu
			continue
		fi
		v=$(awk '$1 == "gfx_target_version" { print $2 }' "$p")
		awk -v v="$v" '$1 == "simd_count" { s = $2 } $1 == "simd_per_cu" { c = $2 }
			END { printf "gpu gfx%d%d%x %d\n", int(v / 10000), int(v / 100) % 100, v % 100, s / c }' "$p"
	done | sort
}

# rocminfo's agents, the same way
rocminfo_agents() {
	awk '/^Agent [0-9]+/ { if (t != "") print t, n, c; t = ""; n = ""; c = "" }
		/^  Name:/ { n = $2 } /^  Device Type:/ { t = $3 } /^  Compute Unit:/ { c = $3 }
		END { if (t != "") print t, n, c }' "$1" |
		awk '$1 == "CPU" { print "cpu"; next } $1 == "GPU" { print "gpu", $2, $3 }' | sort
}

run_rocminfo() { # NAME
	local out=$WORK/$1.rocminfo rc want have
	timeout 120 rocminfo >"$out" 2>&1
	rc=$?
	check "$1: rocminfo exits 0 (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { sed 's/^/# /' "$out" | tail -15; keep "$out"; }
	want=$(expected_agents | tr '\n' ';')
	have=$(rocminfo_agents "$out" | tr '\n' ';')
	diag "$1: sysfs: $want"
	diag "$1: rocminfo: $have"
	check "$1: rocminfo lists each node as an agent: GPUs with the gfx target and CU count of sysfs" \
		test -n "$have" -a "$want" = "$have"
	# libdrm names a GPU by device id and PCI revision (kfdsim's "pci" record)
	names=$(awk '/^  Name:/ { name = $0 } /Marketing Name:/ { m = $0; sub(/^ *Marketing Name: */, "", m); sub(/ *$/, "", m) }
		/Device Type: *GPU/ { print m }' "$out" | sort -u | tr '\n' ';')
	diag "$1: GPU marketing names: $names"
	check "$1: every GPU agent is named AMD Instinct MI210 (libdrm's amdgpu.ids)" \
		test "$names" = "AMD Instinct MI210;"
	[ "$names" = "AMD Instinct MI210;" ] || keep "$out"
	# ROCr keeps a GPU's caches of type DATA|HSACU only; without one it
	# asserts "GPU cache info missing" (caches of type 5 did that)
	check "$1: rocminfo shows an L1 cache for every GPU agent" \
		eval '[ "$(awk "/Device Type:/ { gpu = (\$3 == \"GPU\") } gpu && /L1:/ { n++ } END { print n + 0 }" "$out")" = \
			"$(echo "$want" | tr ";" "\n" | grep -c "^gpu")" ]'
}

run_rocminfo boot
if [ -f /test/kfdsim/machines/mi210.desc ]; then
	check "kfdsim reloaded as the 2-socket 8-GPU MI210 machine" \
		kfdsim_reload machine=/test/kfdsim/machines/mi210.desc
	diag "guest NUMA nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)"
	run_rocminfo mi210
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	ok "mi210 # SKIP no mi210 machine description"
fi
tap_done
