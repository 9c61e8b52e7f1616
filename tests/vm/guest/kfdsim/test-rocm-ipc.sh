#!/bin/sh
# vm-boot: rocm
# vm-timeout: 300
# What Debian's ROCr 5.2.3 IPC does on kfdsim, an upstream-like KFD
# (tests/workloads/rocm/rocm-ipc: 2 MiB from the first GPU's VRAM pool,
# hsa_amd_ipc_memory_create, then hsa_amd_ipc_memory_attach in a re-executed
# child, of the handle, or when create failed of one shaped as libhsakmt
# fills it with share token zero), under `strace -f -y -e trace=ioctl,write`:
# the program's stdout lines (writes) mark which KFD ioctls each call made.
# As docs/gem-dmabuf-facts.md section 4 read in ROCr/libhsakmt 5.2 and this
# measures: create's one KFD ioctl is AMDKFD_IOC_IPC_EXPORT_HANDLE (nr 0x81),
# attach's AMDKFD_IOC_IPC_IMPORT_HANDLE (nr 0x80), both only in AMD's DKMS
# driver; upstream KFD (and kfdsim: tests/kfdsim/chardev.c) answers ENOTTY,
# and both calls return HSA_STATUS_ERROR_INVALID_ARGUMENT (4097). kfdsim logs
# no unknown ioctl: without strace in the initramfs (vm-suite.sh copies the
# host's) the ioctl checks are skipped.
. /test/lib/guest.sh

IPC=/test/bin/rocm-ipc
if [ ! -x "$IPC" ] || [ ! -c /dev/kfd ]; then
	ok "rocm-ipc # SKIP $IPC or /dev/kfd missing"
	tap_done
	exit
fi
OUT=$WORK/ipc.out TRACE=$WORK/ipc.strace
klog=$(dmesg | wc -l)
if command -v strace >/dev/null; then
	timeout 120 strace -f -y -s 80 -o "$TRACE" -e trace=ioctl,write "$IPC" "$WORK/handle" >"$OUT" 2>&1
else
	rm -f "$TRACE"
	timeout 120 "$IPC" "$WORK/handle" >"$OUT" 2>&1
fi
rc=$?
sed 's/^/# /' "$OUT"
keep "$OUT" "$TRACE"
check "rocm-ipc ran to its end (status $rc)" eval '[ "$rc" -eq 0 ] && grep -q "^done$" "$OUT"'

# status STEP: the hsa_status_t the program printed for STEP
status() { sed -n "s/^$1 status \([0-9]*\):.*/\1/p" "$OUT" | head -1; }
check "hsa_init and the VRAM allocation succeed" \
	test "$(status hsa_init)/$(status memory_pool_allocate)" = 0/0
st=$(status ipc_memory_create)
check "hsa_amd_ipc_memory_create fails: status ${st:-none}, not HSA_STATUS_SUCCESS (0)" \
	test -n "$st" -a "$st" != 0
check "it is HSA_STATUS_ERROR_INVALID_ARGUMENT (4097), as ROCr turns any hsaKmtShareMemory failure" \
	test "$st" = 4097
ast=$(status ipc_memory_attach)
check "hsa_amd_ipc_memory_attach (of the shaped handle) fails too: status ${ast:-none}" \
	test -n "$ast" -a "$ast" != 0
check "the attach child ran to its end" grep -q '^attach child exit 0$' "$OUT"

# kfd_ioctls FROM TO: the /dev/kfd ioctls a thread made between its write
# of a line starting FROM and its next write of a line starting TO (the
# last such span), as "NR RESULT" (NR the ioctl's _IOC_NR, hex; strace
# names the upstream ones)
kfd_ioctls() {
	awk -v from="\"$1" -v to="\"$2" '
		/ write\(1</ && index($0, from) { tid = $1; buf = ""; next }
		$1 != tid { next }
		/ write\(1</ && index($0, to) { last = buf; tid = "" }
		/ ioctl\([0-9]+<\/dev\/kfd>/ { buf = buf $0 "\n" }
		END { printf "%s", last }' "$TRACE" |
		sed -n 's/.*_IOC([^,]*, 0x4b, \(0x[0-9a-f]*\), [^)]*).* = \(.*\)$/\1 \2/p;
			s/.*ioctl([0-9]*<\/dev\/kfd>, \(AMDKFD_IOC_[A-Z_]*\).* = \(.*\)$/\1 \2/p'
}
if [ ! -s "$TRACE" ]; then
	ok "ioctls # SKIP no strace in the initramfs (kfdsim logs no unknown ioctl)"
else
	grep -c 'ioctl(.*/dev/kfd' "$TRACE" | sed 's/^/# KFD ioctls traced: /'
	c=$(kfd_ioctls allocated ipc_memory_create)
	diag "create's KFD ioctls (nr result): $(echo "$c" | tr '\n' ';')"
	check "create's KFD ioctls: one, nr 0x81 (AMDKFD_IOC_IPC_EXPORT_HANDLE), answered ENOTTY" \
		eval 'echo "$c" | grep -q "^0x81 -1 ENOTTY" && [ "$(echo "$c" | grep -c .)" = 1 ]'
	a=$(kfd_ioctls gpu: ipc_memory_attach)
	diag "attach's KFD ioctls (nr result): $(echo "$a" | tr '\n' ';')"
	check "attach's KFD ioctls: one, nr 0x80 (AMDKFD_IOC_IPC_IMPORT_HANDLE), answered ENOTTY" \
		eval 'echo "$a" | grep -q "^0x80 -1 ENOTTY" && [ "$(echo "$a" | grep -c .)" = 1 ]'
	# libhsakmt 5.2's non-upstream numbers: 0x80 IPC_IMPORT_HANDLE,
	# 0x81 IPC_EXPORT_HANDLE, 0x82 DBG_TRAP (in hsa_init and hsa_shut_down)
	diag "all KFD ioctls answered ENOTTY (count nr):$(sed -n 's/.*ioctl([0-9]*<\/dev\/kfd>, _IOC([^,]*, 0x4b, \(0x[0-9a-f]*\),.* = -1 ENOTTY.*/\1/p' "$TRACE" | sort | uniq -c | tr -s ' \n' ' ')"
fi
dmesg | tail -n +$((klog + 1)) | grep -i kfdsim | tail -n 5 | sed 's/^/# kernel meanwhile: /'
check "no KFD process left" eval 'kfdsim_debugfs && wait_until 10 kfd_no_processes'
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
