#!/bin/sh
# vm-boot: rocm
# vm-timeout: 360
# Debian testing's ROCm (rocminfo 7.x, ROCr 6.4 with the thunk built in,
# libdrm 2.4.12x+; scripts/fetch-rocm-testing.sh), unmodified, on kfdsim:
# rocminfo lists every simulated GPU with its gfx target and node id, and
# rocm-hsa-basic (tests/workloads/rocm) initialises ROCr, allocates memory and
# reads it back, makes a signal and an AQL queue and destroys them, and on
# the boot's machine copies host -> VRAM -> host and VRAM -> VRAM with
# hsa_amd_memory_async_copy, which ROCr runs on user-mode SDMA queues that
# kfdsim executes (TRAP packets signal the completion signal's KFD event),
# and runs AQL packets on a compute queue (kfdsim's aql.c): a barrier-AND
# completes only after its dependency, a barrier-OR with one dependency
# met, a kernel dispatch ends in ROCr's queue error callback (invalid
# packet format) with a kfdsim dmesg line naming the kernel object.
# Not on the 8-GPU MI210 machine: there its 16 SDMA queues made the run
# fail for resources and overrun the time limit.
# rocminfo 7 asks /sys/module/amdgpu/initstate whether the driver is live, as
# on a real node: the simulator is loaded under amdgpu's module name for it.
. /test/lib/guest.sh

R=/usr/lib/rocm-testing
if [ ! -x $R/bin/rocminfo ] || [ ! -x $R/bin/rocm-hsa-basic ]; then
	ok "rocm-testing # SKIP no Debian testing ROCm in the image (make vm-deps: scripts/fetch-rocm-testing.sh)"
	tap_done
	exit
fi
if [ ! -f /test/kfdsim/amdgpu.ko ]; then
	ok "rocm-testing # SKIP no /test/kfdsim/amdgpu.ko (KFDSIM_MODNAME=amdgpu build)"
	tap_done
	exit
fi
TOPO=/sys/class/kfd/kfd/topology/nodes

# "gpu gfxNNN node N" per GPU node, "cpu node N" per CPU node, sorted
expected_agents() {
	local n v
	for n in "$TOPO"/*; do
		if [ "$(cat "$n/gpu_id")" = 0 ]; then
			echo "cpu node ${n##*/}"
			continue
		fi
		v=$(awk '$1 == "gfx_target_version" { print $2 }' "$n/properties")
		awk -v v="$v" -v id="${n##*/}" 'BEGIN { printf "gpu gfx%d%d%x node %d\n", int(v / 10000), int(v / 100) % 100, v % 100, id }'
	done | sort
}

# rocminfo's agents, the same way ("Node:" is the KFD node id; a CPU's name
# may be empty)
rocminfo_agents() {
	awk '/^Agent [0-9]+/ { if (t != "") print t, d, n; t = ""; n = ""; d = "" }
		/^  Name:/ { n = $2 } /^  Device Type:/ { t = $3 } /^  Node:/ { d = $2 }
		END { if (t != "") print t, d, n }' "$1" |
		awk '$1 == "CPU" { print "cpu node", $2; next } $1 == "GPU" { print "gpu", $3, "node", $2 }' | sort
}

# on a failure: the program again under strace, its failed ioctls kept
strace_failures() { # NAME COMMAND...
	local name="$1"
	shift
	[ -x /usr/bin/strace ] || return 0
	LD_LIBRARY_PATH=$R/lib timeout 150 strace -f -e trace=ioctl -o "$WORK/$name.strace" "$@" >/dev/null 2>&1
	grep -E '= -1 ' "$WORK/$name.strace" | sed 's/^/# strace: /' | sort | uniq -c | sort -rn | head -12
	keep "$WORK/$name.strace"
}

# what a failed run said: its failed steps first, then what else it printed
# (ROCr's exceptions, the thunk's warnings) and the kernel's lines since MARK
failure_report() { # NAME OUTPUT MARK
	grep '^STEP FAIL' "$2" | sed 's/^/# /'
	grep -v '^STEP \|^agent ' "$2" | sed 's/^/# /' | tail -15
	dmesg | tail -n +$(($3 + 1)) | grep -i kfdsim | tail -10 | sed 's/^/# dmesg: /'
	keep "$2"
}

run_testing_rocm() { # NAME ["--copies --aql"]
	local out=$WORK/$1.rocminfo res=$WORK/$1.hsa rc want have gpus mark refused copies=${2:-} what
	mark=$(dmesg | wc -l)
	check "$1: /sys/module/amdgpu/initstate is live" \
		test "$(cat /sys/module/amdgpu/initstate 2>/dev/null)" = live
	LD_LIBRARY_PATH=$R/lib timeout 120 $R/bin/rocminfo >"$out" 2>&1
	rc=$?
	check "$1: rocminfo 7 exits 0 (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { sed 's/^/# /' "$out" | tail -15; keep "$out"; strace_failures "$1-rocminfo" $R/bin/rocminfo; }
	check "$1: rocminfo 7 finds the driver (\"ROCk module ... is loaded\")" \
		grep -qE 'ROCk module (version .* )?is loaded' "$out"
	want=$(expected_agents | tr '\n' ';')
	have=$(rocminfo_agents "$out" | tr '\n' ';')
	diag "$1: sysfs: $want"
	diag "$1: rocminfo: $have"
	check "$1: rocminfo 7 lists each node as an agent, GPUs with the gfx target and node id of sysfs" \
		test -n "$have" -a "$want" = "$have"
	[ "$want" = "$have" ] || keep "$out"

	gpus=$(expected_agents | grep -c '^gpu')
	# the thunk's warnings too: on a failure they say which KFD call failed
	HSAKMT_DEBUG_LEVEL=4 LD_LIBRARY_PATH=$R/lib timeout 150 $R/bin/rocm-hsa-basic --size 65536 $copies >"$res" 2>&1
	rc=$?
	check "$1: rocm-hsa-basic (ROCr 6.4) exits 0 (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { failure_report "$1" "$res" "$mark"
		strace_failures "$1-hsa" $R/bin/rocm-hsa-basic --size 65536 $copies; }
	check "$1: hsa_init succeeds" grep -q '^STEP ok hsa_init$' "$res"
	check "$1: ROCr sees every GPU node ($gpus) and exercises each" \
		grep -qx "RESULT PASS gpus $gpus" "$res"
	# kfdsim logs every KFD ioctl, AMDGPU_INFO query and IP type it does
	# not model ("... is not modelled yet"): ROCm 6.4 must need none, but
	# for the debugger interface (DBG_TRAP) that ROCr's GPU core dump asks
	# after --aql's queue error ("GPU core dump failed", then the callback)
	refused=$(dmesg | tail -n +$((mark + 1)) | grep 'not modelled yet' | grep -v 'AMDKFD_IOC_DBG_TRAP is' |
		sed 's/^\[[^]]*\] //' | sort -u)
	[ -z "$refused" ] || echo "$refused" | sed 's/^/# dmesg: /'
	check "$1: rocminfo 7 and ROCr 6.4 ask kfdsim nothing it does not model (dmesg)" test -z "$refused"
	diag "$1: VRAM filled and read back on $(grep -c '^STEP ok fill and read back vram' "$res") GPUs" \
		"(skipped where ROCr lets the CPU not reach the pool: $(grep -c '^STEP skip fill vram' "$res"))"
	for what in "fill and read back system memory for" "allocate vram of" "signal stored and waited for on" \
		"signal destroy on" "queue create on" "queue destroy on"; do
		check "$1: $what every GPU" test "$(grep -c "^STEP ok $what gpu" "$res")" -eq "$gpus"
	done
	case "$copies" in *--aql*)
		for what in "aql queue create on" "barrier-and waits for its dependency on" \
			"barrier-and completes after its dependency on" "barrier-and slot released on" \
			"barrier-or completes with one dependency met on" "barrier-or slot released on" \
			"kernel dispatch ends in a queue error (invalid packet format) on" \
			"kernel dispatch's completion signal untouched on" "aql queue destroy on"; do
			check "$1: $what every GPU" test "$(grep -c "^STEP ok $what gpu" "$res")" -eq "$gpus"
		done
		check "$1: kfdsim names the dispatched kernel object in dmesg" \
			sh -c "dmesg | tail -n +$((mark + 1)) | grep -q 'kernel dispatch of an unnamed kernel (kernel object 0x7f0000001000'"
		;;
	esac
	case "$copies" in *--copies*) ;; *) return 0 ;; esac
	for what in "host to vram" "vram to host" "vram to vram"; do
		check "$1: async copy $what (SDMA) completes on every GPU" \
			test "$(grep -c "^STEP ok async copy $what on gpu.* completes$" "$res")" -eq "$gpus"
	done
	for what in "host to vram to host copies keep the bytes on" "vram to vram copy keeps the bytes on"; do
		check "$1: $what every GPU" test "$(grep -c "^STEP ok $what gpu" "$res")" -eq "$gpus"
	done
}

reload_mi210() {
	kfdsim_as_amdgpu_unload && kfdsim_as_amdgpu_load machine=/test/kfdsim/machines/mi210.desc
}

kfdsim_unload
check "kfdsim loaded under amdgpu's module name" kfdsim_as_amdgpu_load
run_testing_rocm boot "--copies --aql"
# which KFD and render-node ioctls ROCr 6.4 saw fail (diagnostics only: a
# refusal ROCr handles is no failure)
strace_failures boot-hsa $R/bin/rocm-hsa-basic --size 65536 --copies
if [ -f /test/kfdsim/machines/mi210.desc ]; then
	check "reloaded as the 2-socket 8-GPU MI210 machine" reload_mi210
	run_testing_rocm mi210
else
	ok "mi210 # SKIP no mi210 machine description"
fi
check "amdgpu-named simulator unloaded" kfdsim_as_amdgpu_unload
check "kfdsim loaded again as the boot loaded it" kfdsim_load
tap_done
