#!/bin/bash
# Boots KERNEL + INITRAMFS under qemu TCG and waits for the guest to power
# off, at most TIMEOUT seconds (then qemu is killed and the status is 124).
#   ttyS0 (console)  -> CONSOLE_LOG
#   ttyS1 (results)  -> RESULTS_LOG
#   SHARE_DIR        -> 9p tag "results", read-write (guest logs)
#
# TCG, never KVM: this machine's /dev/kvm is kvm_pvm, which runs no stock
# Debian kernel. qemu >= 10: bookworm's 7.2 corrupts 6.12 guests' memory.
# loglevel=5: the console shows kernel warnings (WARN()) and worse, not the
# boot chatter. The other kernel arguments make every failure end the VM at
# once rather than hang: an oops panics (oops=panic), so do a soft lockup and
# a task blocked for 60 s, and a panic reboots, which -no-reboot turns into
# qemu's exit.
# stdin is /dev/null: qemu fails on a closed stdin, as CI has.
# Env: VM_SMP (2), VM_MEM (MiB, 1024), VM_APPEND (extra kernel arguments).
#
# usage: run-vm.sh KERNEL INITRAMFS CONSOLE_LOG RESULTS_LOG SHARE_DIR TIMEOUT
set -euo pipefail
KERNEL=$1 INITRD=$2 CONSOLE=$3 RESULTS=$4 SHARE=$5 LIMIT=$6

APPEND="console=ttyS0 loglevel=5 panic=-1 oops=panic softlockup_panic=1"
APPEND+=" hung_task_panic=1 hung_task_timeout_secs=60 ${VM_APPEND:-}"

exec timeout --kill-after=10 "$LIMIT" qemu-system-x86_64 \
	-nodefaults -display none -no-reboot \
	-accel tcg -cpu max -smp "${VM_SMP:-2}" -m "${VM_MEM:-1024}" \
	-kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
	-serial "file:$CONSOLE" -serial "file:$RESULTS" \
	-virtfs "local,path=$SHARE,mount_tag=results,security_model=none,id=results" \
	</dev/null
