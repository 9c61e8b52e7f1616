#!/bin/bash
# Boots KERNEL + INITRAMFS under qemu TCG and waits for the guest to power
# off. Two limits, each reported by its own status:
#   STALL   seconds without progress: neither log grew (the guest's /init
#           writes a heartbeat to the results channel every 10 s while a
#           test runs, the console gets kernel and test output): the guest
#           is hung; qemu is killed, status 125
#           Until the guest's /init writes its first line to the results
#           channel, the limit is BOOT_STALL instead (VM_BOOT_STALL_TIMEOUT,
#           default the larger of STALL and 300): at loglevel=5 a booting
#           kernel prints a few lines only, and on a loaded host the gaps
#           between them grow past a short STALL
#   TIMEOUT seconds for the whole run, a backstop only (vm-suite.sh sets it
#           to the sum of the tests' own limits plus boot time): status 124
# A slow or busy machine makes a run longer, never "hung": only a guest that
# writes nothing at all for STALL seconds is.
#   ttyS0 (console)  -> CONSOLE_LOG
#   ttyS1 (results)  -> RESULTS_LOG
#   SHARE_DIR        -> 9p tag "results", read-write (guest logs)
# On a stall, one line on stderr says so, with qemu's CPU time over the
# stall (a guest spinning at 100% and one idle for good look different).
#
# TCG, never KVM: this machine's /dev/kvm is kvm_pvm, which runs no stock
# Debian kernel. qemu >= 10: bookworm's 7.2 corrupts 6.12 guests' memory.
# loglevel=5: the console shows kernel warnings (WARN()) and worse, not the
# boot chatter. The other kernel arguments make every failure end the VM at
# once rather than hang: an oops panics (oops=panic), so do a soft lockup and
# a task blocked for 60 s, and a panic reboots, which -no-reboot turns into
# qemu's exit.
# stdin is /dev/null: qemu fails on a closed stdin, as CI has.
# CPU "max" without ERMS and FSRM: TCG runs "rep stosb"/"rep movsb" a byte
# per pass of a translated loop, and with ERMS the guest kernel clears every
# new page that way. Measured in the guest (256 MiB, qemu 10.0): first-touch
# memset 54 MiB/s with ERMS, 864 MiB/s without; the kfdsim BOs and CRIU's
# page restore are all first touches.
# Env: VM_SMP (2), VM_MEM (MiB, 1024), VM_APPEND (extra kernel arguments),
#      VM_STALL_TIMEOUT (STALL, default 240), VM_BOOT_STALL_TIMEOUT
#      (BOOT_STALL), VM_DISK (a raw disk image: the guest's /dev/vda, on
#      virtio-blk), VM_CPU (qemu -cpu, default
#      max,-erms,-fsrm), VM_NUMA_NODES (1: guest NUMA nodes, the memory
#      split evenly, CPUs round-robin; a kfdsim machine with N CPU nodes
#      needs N, as libhsakmt matches CPU nodes with /sys/devices/system/node).
#
# usage: run-vm.sh KERNEL INITRAMFS CONSOLE_LOG RESULTS_LOG SHARE_DIR TIMEOUT
set -euo pipefail
KERNEL=$1 INITRD=$2 CONSOLE=$3 RESULTS=$4 SHARE=$5 LIMIT=$6
STALL=${VM_STALL_TIMEOUT:-240}
BOOT_STALL=${VM_BOOT_STALL_TIMEOUT:-$((STALL > 300 ? STALL : 300))}

APPEND="console=ttyS0 loglevel=5 panic=-1 oops=panic softlockup_panic=1"
APPEND+=" hung_task_panic=1 hung_task_timeout_secs=60 ${VM_APPEND:-}"

# -numa: memory-backend objects, as qemu no longer splits RAM by itself
NUMA=()
numa_args() {
	local n=${VM_NUMA_NODES:-1} smp=${VM_SMP:-2} mem=${VM_MEM:-1024} i c
	[ "$n" -gt 1 ] || return 0
	[ $((mem % n)) -eq 0 ] && [ "$smp" -ge "$n" ] ||
		{ echo "run-vm.sh: VM_NUMA_NODES=$n needs VM_MEM ($mem) divisible by it and VM_SMP ($smp) >= it" >&2; exit 2; }
	for ((i = 0; i < n; i++)); do
		NUMA+=(-object "memory-backend-ram,id=numa$i,size=$((mem / n))M" -numa "node,nodeid=$i,memdev=numa$i")
	done
	# one socket per CPU, so that each can be put on a node
	NUMA+=(-smp "$smp,sockets=$smp,cores=1,threads=1")
	for ((c = 0; c < smp; c++)); do NUMA+=(-numa "cpu,node-id=$((c % n)),socket-id=$c"); done
}
numa_args
DISK=()
[ -z "${VM_DISK:-}" ] || DISK=(-drive "file=$VM_DISK,format=raw,if=virtio")

: >"$CONSOLE"
: >"$RESULTS"
qemu-system-x86_64 \
	-nodefaults -display none -no-reboot \
	-accel tcg -cpu "${VM_CPU:-max,-erms,-fsrm}" -smp "${VM_SMP:-2}" -m "${VM_MEM:-1024}" \
	"${NUMA[@]}" "${DISK[@]}" \
	-kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
	-serial "file:$CONSOLE" -serial "file:$RESULTS" \
	-virtfs "local,path=$SHARE,mount_tag=results,security_model=none,id=results" \
	</dev/null &
QEMU=$!
trap 'kill -9 $QEMU 2>/dev/null || true' EXIT

# qemu's user+system CPU time in seconds (clock ticks of /proc/PID/stat)
cpu_secs() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) / hz }' \
		"/proc/$QEMU/stat" 2>/dev/null || echo 0
}
log_size() { echo $(($(stat -c %s "$CONSOLE" 2>/dev/null || echo 0) + $(stat -c %s "$RESULTS" 2>/dev/null || echo 0))); }

stop() { # STATUS MESSAGE
	echo "run-vm.sh: $2" >&2
	kill -TERM $QEMU 2>/dev/null || true
	sleep 2
	kill -9 $QEMU 2>/dev/null || true
	wait $QEMU 2>/dev/null || true
	exit "$1"
}

start=$SECONDS last_size=-1 last_change=$SECONDS cpu_at_change=0
while kill -0 $QEMU 2>/dev/null; do
	sleep 2
	size=$(log_size)
	if [ "$size" != "$last_size" ]; then
		last_size=$size last_change=$SECONDS cpu_at_change=$(cpu_secs)
	elif [ ! -s "$RESULTS" ] && [ $((SECONDS - last_change)) -ge "$BOOT_STALL" ]; then
		stop 125 "no progress for $BOOT_STALL s while booting (no console output, /init not reached; qemu used $(($(cpu_secs) - cpu_at_change)) s of CPU meanwhile): the guest kernel hung; raise VM_BOOT_STALL_TIMEOUT if it was only slow"
	elif [ -s "$RESULTS" ] && [ $((SECONDS - last_change)) -ge "$STALL" ]; then
		stop 125 "no progress for $STALL s (no console output, no heartbeat; qemu used $(($(cpu_secs) - cpu_at_change)) s of CPU meanwhile): the guest hung; raise VM_STALL_TIMEOUT if it was only slow"
	fi
	if [ $((SECONDS - start)) -ge "$LIMIT" ]; then
		stop 124 "the VM run reached its total limit of $LIMIT s while still making progress; raise VM_TIMEOUT (or VM_TIMEOUT_SCALE, which also raises each test's limit)"
	fi
done
trap - EXIT
rc=0
wait $QEMU || rc=$?
exit $rc
