// SPDX-License-Identifier: GPL-2.0
/*
 * Guest test of the kfdsim ABI, case by case against docs/kfd-facts.md:
 * the /dev/kfd dispatcher (1.2, 1.3), per-mm processes and pdds (1.1),
 * apertures (7.8), ACQUIRE_VM (7.2), ALLOC/FREE/MAP/UNMAP (7.3-7.5),
 * AVAILABLE_MEMORY (7.11), EXPORT_DMABUF (7.12), render-node mmap (8),
 * RUNTIME_ENABLE and GET_TILE_CONFIG (what ROCr 6.x asks at start).
 * Works on whatever machine is loaded (at least one GPU; some cases need
 * two). Prints TAP. Build with -I pointing at the guest kernel's uapi
 * (linux/kfd_ioctl.h, drm/drm.h).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
/* the kernel-tree uapi headers are not headers_install-ed */
#ifndef __user
#define __user
#endif
#include <linux/kfd_ioctl.h>
#include <drm/drm.h>
#include "tap.h"

#define TOPO "/sys/class/kfd/kfd/topology/nodes"
#define MAX_GPUS 64

static int kfd;
static int n_gpus;
static uint32_t gpu_ids[MAX_GPUS];	/* visible GPUs, pdd order */
static int minors[MAX_GPUS];

static int read_u64(const char *path, const char *key, unsigned long long *v)
{
	char k[64];
	unsigned long long x;
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return -1;
	if (!key) {
		found = fscanf(f, "%llu", v) == 1;
	} else {
		while (fscanf(f, "%63s %llu", k, &x) == 2)
			if (!strcmp(k, key)) {
				*v = x;
				found = 1;
				break;
			}
	}
	fclose(f);
	return found ? 0 : -1;
}

static int minor_of(uint32_t gpu_id)
{
	char p[128];
	unsigned long long id, m;
	int n;

	for (n = 0; n < 256; n++) {
		snprintf(p, sizeof(p), TOPO "/%d/gpu_id", n);
		if (read_u64(p, NULL, &id))
			continue;
		if (id != gpu_id)
			continue;
		snprintf(p, sizeof(p), TOPO "/%d/properties", n);
		if (read_u64(p, "drm_render_minor", &m))
			return -1;
		return m;
	}
	return -1;
}

static int open_render(int i)
{
	char p[64];

	snprintf(p, sizeof(p), "/dev/dri/renderD%d", minors[i]);
	return open(p, O_RDWR | O_CLOEXEC);
}

static int get_version(int fd, unsigned long cmd, void *buf)
{
	return ioctl(fd, cmd, buf);
}

static void test_dispatcher(void)
{
	struct kfd_ioctl_get_version_args v = { 0 };
	struct kfd_ioctl_get_available_memory_args am;
	unsigned char buf[32];
	int rc;

	rc = ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
	ok(rc == 0 && v.major_version == 1 && v.minor_version == 17,
	   "GET_VERSION reports 1.17 (got %u.%u)", v.major_version, v.minor_version);

	ok_errno(ioctl(kfd, _IOWR('K', 0x00, uint64_t), buf), ENOTTY, "nr 0x00: ENOTTY");
	ok_errno(ioctl(kfd, _IO('K', 0x27)), ENOTTY, "nr 0x27 (CREATE_PROCESS, KFD 1.19): ENOTTY");
	ok_errno(ioctl(kfd, _IOWR('K', 0xFF, uint64_t), buf), ENOTTY, "nr 0xFF: ENOTTY");

	/* the handler is chosen by _IOC_NR alone */
	memset(&v, 0, sizeof(v));
	rc = get_version(kfd, _IOC(_IOC_READ | _IOC_WRITE, 'Z', 0x01, 8), &v);
	ok(rc == 0 && v.major_version == 1, "type 'Z', RW, nr 1 still is GET_VERSION");

	/* a shorter caller struct: only the caller's size is copied back */
	memset(buf, 0xAA, sizeof(buf));
	rc = get_version(kfd, _IOC(_IOC_READ, 'K', 0x01, 4), buf);
	ok(rc == 0 && buf[0] == 1 && buf[4] == 0xAA && buf[7] == 0xAA,
	   "GET_VERSION with size 4 writes 4 bytes only");

	/* longer, OUT-only: the caller's extra bytes come back zeroed */
	memset(buf, 0x5A, sizeof(buf));
	rc = get_version(kfd, _IOC(_IOC_READ, 'K', 0x01, 16), buf);
	ok(rc == 0 && buf[0] == 1 && buf[8] == 0 && buf[15] == 0 && buf[16] == 0x5A,
	   "GET_VERSION with size 16: bytes 8..15 zeroed, 16.. untouched");

	/* longer, IN|OUT: the extra bytes are copied in and back unchanged */
	memset(buf, 0x5A, sizeof(buf));
	memcpy(buf, &(struct kfd_ioctl_get_available_memory_args){ .gpu_id = gpu_ids[0] },
	       sizeof(am));
	rc = ioctl(kfd, _IOC(_IOC_READ | _IOC_WRITE, 'K', 0x23, 24), buf);
	memcpy(&am, buf, sizeof(am));
	ok(rc == 0 && am.available > 0 && buf[16] == 0x5A && buf[23] == 0x5A,
	   "AVAILABLE_MEMORY with size 24: extra bytes come back unchanged");

	/* shorter IN: the rest is zero-filled (gpu_id at offset 8 left out: 0) */
	memset(buf, 0, sizeof(buf));
	ok_errno(ioctl(kfd, _IOC(_IOC_READ | _IOC_WRITE, 'K', 0x23, 8), buf), EINVAL,
		 "AVAILABLE_MEMORY with size 8: gpu_id zero-filled -> EINVAL");

	ok_errno(ioctl(kfd, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, buf), EPERM,
		 "DBG_REGISTER_DEPRECATED: EPERM");
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_VERSION, (void *)8), EFAULT,
		 "GET_VERSION to a bad pointer: EFAULT (copy-out)");
	ok_errno(ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY, (void *)8), EFAULT,
		 "AVAILABLE_MEMORY from a bad pointer: EFAULT (copy-in)");
}

static void test_open(void)
{
	struct stat st;
	int fd;

	ok(stat("/dev/kfd", &st) == 0 && S_ISCHR(st.st_mode) && minor(st.st_rdev) == 0,
	   "/dev/kfd is a char device, minor 0");
	if (mknod("/tmp/kfd1", S_IFCHR | 0600, makedev(major(st.st_rdev), 1)) == 0) {
		fd = open("/tmp/kfd1", O_RDWR);
		ok_errno(fd, ENODEV, "open of minor 1: ENODEV");
		unlink("/tmp/kfd1");
	} else {
		ok(0, "mknod of a minor-1 node: %s", strerror(errno));
	}
}

/* EBADF for a fork child; CRIU_OP passes the owner check for the ptracer. */
static void test_ownership(void)
{
	struct kfd_ioctl_criu_args criu = { .op = KFD_CRIU_OP_PROCESS_INFO };
	struct kfd_ioctl_get_version_args v;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	int sv[2], status, tfd = -1;
	char c = 0;
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v) == -1 && errno == EBADF ? 0 : 1);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "fork child using the parent's fd: EBADF");

	/* a child owns a KFD fd and passes it to us (SCM_RIGHTS) */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return;
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/kfd", O_RDWR);

		iov.iov_base = &c;
		iov.iov_len = 1;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		sendmsg(sv[1], &msg, 0);
		read(sv[1], &c, 1);	/* until the parent is done */
		_exit(0);
	}
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	if (recvmsg(sv[0], &msg, 0) == 1 && (cm = CMSG_FIRSTHDR(&msg)))
		memcpy(&tfd, CMSG_DATA(cm), sizeof(int));
	ok(tfd >= 0, "received a KFD fd of another process");
	ok_errno(ioctl(tfd, AMDKFD_IOC_GET_VERSION, &v), EBADF,
		 "GET_VERSION on another process's fd: EBADF");
	ok_errno(ioctl(tfd, AMDKFD_IOC_CRIU_OP, &criu), EBADF,
		 "CRIU_OP on another process's fd, not its ptracer: EBADF");
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
		errno = 0;
		ioctl(tfd, AMDKFD_IOC_CRIU_OP, &criu);
		ok(errno != EBADF, "CRIU_OP as the owner's ptracer passes the owner check (errno %d)",
		   errno);
		ok_errno(ioctl(tfd, AMDKFD_IOC_GET_VERSION, &v), EBADF,
			 "GET_VERSION as the ptracer: still EBADF");
		ptrace(PTRACE_DETACH, pid, 0, 0);
	} else {
		ok(0, "PTRACE_SEIZE: %s", strerror(errno));
	}
	write(sv[0], &c, 1);
	waitpid(pid, &status, 0);
	close(tfd);
	close(sv[0]);
	close(sv[1]);
}

static void test_apertures(void)
{
	struct kfd_process_device_apertures pa[MAX_GPUS];
	struct kfd_ioctl_get_process_apertures_new_args an = { 0 };
	struct kfd_ioctl_get_process_apertures_args ao;
	int i, good = 1;

	an.kfd_process_device_apertures_ptr = (uintptr_t)pa;
	an.num_of_nodes = 1000;
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an), EINVAL,
		 "APERTURES_NEW for more nodes than the topology has: EINVAL");
	an.num_of_nodes = 0;
	i = ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an);
	ok(i == 0 && an.num_of_nodes > 0,
	   "APERTURES_NEW with 0 nodes returns the pdd count (%u)", an.num_of_nodes);
	n_gpus = an.num_of_nodes > MAX_GPUS ? MAX_GPUS : an.num_of_nodes;
	ok(ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an) == 0 &&
	   (int)an.num_of_nodes == n_gpus, "APERTURES_NEW fills %d entries", n_gpus);
	for (i = 0; i < n_gpus; i++) {
		gpu_ids[i] = pa[i].gpu_id;
		minors[i] = minor_of(pa[i].gpu_id);
		if (minors[i] < 128 || pa[i].gpuvm_base != 0x10000 ||
		    pa[i].gpuvm_limit != 0x7FFFFFFFFFFFULL || pa[i].lds_base != 1ULL << 48 ||
		    pa[i].scratch_base != 2ULL << 48)
			good = 0;
		diag("pdd %d: gpu_id %u render minor %d", i, gpu_ids[i], minors[i]);
	}
	ok(good, "apertures: GFX9 values, every gpu_id in sysfs with a render minor");
	ok(ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES, &ao) == 0 &&
	   ao.num_of_nodes == (unsigned int)(n_gpus < 7 ? n_gpus : 7) &&
	   ao.process_apertures[0].gpu_id == gpu_ids[0],
	   "old GET_PROCESS_APERTURES: up to 7 entries");
}

static void test_drm_version(void)
{
	struct drm_version dv;
	char name[32];
	int i, fd, good = 1;

	for (i = 0; i < n_gpus; i++) {
		fd = open_render(i);
		memset(&dv, 0, sizeof(dv));
		memset(name, 0, sizeof(name));
		dv.name = name;
		dv.name_len = sizeof(name) - 1;
		if (fd < 0 || ioctl(fd, DRM_IOCTL_VERSION, &dv) || strcmp(name, "amdgpu") ||
		    dv.version_major != 3)
			good = 0;
		if (fd >= 0)
			close(fd);
	}
	ok(good, "every GPU's renderD<drm_render_minor> is an amdgpu DRM device (v3)");
}

static int alloc_bo(uint32_t gpu, uint64_t va, uint64_t size, uint32_t flags,
		    uint64_t *handle, uint64_t *offset)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args a = {
		.va_addr = va, .size = size, .gpu_id = gpu, .flags = flags,
		.mmap_offset = offset ? *offset : 0,
	};
	int rc = ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);

	if (!rc) {
		*handle = a.handle;
		if (offset)
			*offset = a.mmap_offset;
	}
	return rc;
}

static int free_bo(uint64_t handle)
{
	struct kfd_ioctl_free_memory_of_gpu_args f = { .handle = handle };

	return ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
}

static int map_bo(unsigned long cmd, uint64_t handle, uint32_t *ids, uint32_t n,
		  uint32_t *n_success)
{
	struct kfd_ioctl_map_memory_to_gpu_args m = {
		.handle = handle, .device_ids_array_ptr = (uintptr_t)ids,
		.n_devices = n, .n_success = *n_success,
	};
	int rc = ioctl(kfd, cmd, &m);

	*n_success = m.n_success;
	return rc;
}

/* 0 or -1 with errno, for ok_errno() */
static long mmap_rc(void *p)
{
	return p == MAP_FAILED ? -1 : 0;
}

static uint64_t available(uint32_t gpu)
{
	struct kfd_ioctl_get_available_memory_args a = { .gpu_id = gpu };

	return ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a) ? 0 : a.available;
}

#define VRAM_W (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
#define MB (1ULL << 20)

/*
 * SET_MEMORY_POLICY, GET_CLOCK_COUNTERS, SET_SCRATCH_BACKING_VA,
 * SET_TRAP_HANDLER (what libhsakmt and ROCr call once per GPU), before
 * (bound = 0) and after ACQUIRE_VM on the first GPU.
 */
static void test_settings(int bound)
{
	struct kfd_ioctl_set_memory_policy_args mp = {
		.gpu_id = gpu_ids[0], .default_policy = KFD_IOC_CACHE_POLICY_NONCOHERENT,
		.alternate_policy = KFD_IOC_CACHE_POLICY_COHERENT,
		.alternate_aperture_base = 1ULL << 32, .alternate_aperture_size = 1ULL << 32,
	};
	struct kfd_ioctl_set_scratch_backing_va_args sb = { .gpu_id = gpu_ids[0], .va_addr = 0x12345 };
	struct kfd_ioctl_set_trap_handler_args th = { .gpu_id = gpu_ids[0], .tba_addr = 1 << 20,
						      .tma_addr = 2 << 20 };
	struct kfd_ioctl_get_clock_counters_args cc = { .gpu_id = gpu_ids[0] }, cc2;
	const char *when = bound ? "with a VM" : "before ACQUIRE_VM";

	ok(ioctl(kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &cc) == 0 && cc.gpu_clock_counter &&
	   cc.system_clock_freq == 1000000000 && cc.cpu_clock_counter && cc.system_clock_counter,
	   "GET_CLOCK_COUNTERS %s: GPU counter, CPU and system counters, 1 GHz", when);
	cc2 = cc;
	ok(ioctl(kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &cc2) == 0 &&
	   cc2.gpu_clock_counter >= cc.gpu_clock_counter &&
	   cc2.system_clock_counter >= cc.system_clock_counter, "the counters do not go back");
	cc2 = (struct kfd_ioctl_get_clock_counters_args){ .gpu_id = 1 };
	ok(ioctl(kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &cc2) == 0 && !cc2.gpu_clock_counter &&
	   cc2.cpu_clock_counter, "GET_CLOCK_COUNTERS of an unknown gpu_id: 0, GPU counter 0");
	if (!bound) {
		ok_errno(ioctl(kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &mp), ESRCH,
			 "SET_MEMORY_POLICY before ACQUIRE_VM: ESRCH");
		ok_errno(ioctl(kfd, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &sb), ENODEV,
			 "SET_SCRATCH_BACKING_VA before ACQUIRE_VM: ENODEV");
		ok_errno(ioctl(kfd, AMDKFD_IOC_SET_TRAP_HANDLER, &th), ESRCH,
			 "SET_TRAP_HANDLER before ACQUIRE_VM: ESRCH");
		return;
	}
	ok(ioctl(kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &mp) == 0, "SET_MEMORY_POLICY %s", when);
	mp.default_policy = 2;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &mp), EINVAL,
		 "SET_MEMORY_POLICY with policy 2: EINVAL");
	mp.default_policy = KFD_IOC_CACHE_POLICY_COHERENT;
	mp.gpu_id = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &mp), EINVAL,
		 "SET_MEMORY_POLICY of an unknown gpu_id: EINVAL");
	ok(ioctl(kfd, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &sb) == 0, "SET_SCRATCH_BACKING_VA %s", when);
	sb.gpu_id = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &sb), EINVAL,
		 "SET_SCRATCH_BACKING_VA of an unknown gpu_id: EINVAL");
	ok(ioctl(kfd, AMDKFD_IOC_SET_TRAP_HANDLER, &th) == 0, "SET_TRAP_HANDLER %s", when);
	th.gpu_id = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_TRAP_HANDLER, &th), EINVAL,
		 "SET_TRAP_HANDLER of an unknown gpu_id: EINVAL");
}

/* kfd_ioctl_runtime_enable() without a debugger (queues: kfdsim-criu) */
static void test_runtime_enable(void)
{
	struct kfd_ioctl_runtime_enable_args re = {
		.r_debug = 0x7f0000001000ULL,
		.mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK | KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK,
	};
	struct kfd_ioctl_runtime_enable_args off = { .mode_mask = 0 };

	ok(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &re) == 0, "RUNTIME_ENABLE enable (TTMP save)");
	ok_errno(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &re), EBUSY,
		 "RUNTIME_ENABLE enable again: EBUSY");
	ok(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &off) == 0, "RUNTIME_ENABLE disable");
	ok(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &off) == 0, "RUNTIME_ENABLE disable again: 0");
	re.mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK;
	ok(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &re) == 0 &&
	   ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &off) == 0,
	   "RUNTIME_ENABLE enable after a disable, then disable");
}

/* kfd_ioctl_get_tile_config(): gfx9+ tables, no VM needed */
static void test_tile_config(void)
{
	uint32_t tile[40], macro[20];
	struct kfd_ioctl_get_tile_config_args tc = {
		.tile_config_ptr = (uintptr_t)tile, .macro_tile_config_ptr = (uintptr_t)macro,
		.num_tile_configs = 40, .num_macro_tile_configs = 20, .gpu_id = gpu_ids[0],
		.num_banks = 77, .num_ranks = 77,
	};
	int i, rc, zero = 1;

	memset(tile, 0xAB, sizeof(tile));
	memset(macro, 0xAB, sizeof(macro));
	rc = ioctl(kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc);
	ok(rc == 0 && tc.num_tile_configs == 32 &&
	   tc.num_macro_tile_configs == 16 && tc.gb_addr_config && !tc.num_banks && !tc.num_ranks,
	   "GET_TILE_CONFIG: 32 tile and 16 macro-tile modes, GB_ADDR_CONFIG %#x, banks/ranks 0",
	   tc.gb_addr_config);
	for (i = 0; i < 32; i++)
		zero &= tile[i] == 0;
	for (i = 0; i < 16; i++)
		zero &= macro[i] == 0;
	ok(zero && tile[32] == 0xABABABAB && macro[16] == 0xABABABAB,
	   "... the modes written (0: linear), nothing past them");
	tc.num_tile_configs = 4;
	tc.num_macro_tile_configs = 0;
	tc.macro_tile_config_ptr = 0;
	ok(ioctl(kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc) == 0 && tc.num_tile_configs == 4 &&
	   tc.num_macro_tile_configs == 0, "GET_TILE_CONFIG with smaller counts keeps them");
	tc.num_tile_configs = 32;
	tc.tile_config_ptr = 8;
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc), EFAULT,
		 "GET_TILE_CONFIG to a bad pointer: EFAULT");
	tc.gpu_id = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc), EINVAL,
		 "GET_TILE_CONFIG of an unknown gpu_id: EINVAL");
}

static void test_memory(void)
{
	struct kfd_ioctl_acquire_vm_args acq;
	struct kfd_ioctl_export_dmabuf_args ex;
	uint64_t h0, h1, h2, off0, off1, off, hu, before;
	uint32_t g0 = gpu_ids[0], ids[2], ns;
	int r0, r0b, nullfd, status, rc;
	volatile uint32_t *p, *q;
	void *ubuf;
	pid_t pid;

	ok_errno(ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY,
		       &(struct kfd_ioctl_get_available_memory_args){ .gpu_id = 1 }),
		 EINVAL, "AVAILABLE_MEMORY of an unknown gpu: EINVAL");
	before = available(g0);
	ok(before > 0, "AVAILABLE_MEMORY without a VM: %llu bytes", (unsigned long long)before);
	ok_errno(alloc_bo(g0, 1ULL << 32, MB, VRAM_W, &h0, NULL), ENODEV,
		 "ALLOC before ACQUIRE_VM: ENODEV");
	ok_errno(alloc_bo(g0, 1ULL << 32, 0, VRAM_W, &h0, NULL), EINVAL, "ALLOC of size 0: EINVAL");

	r0 = open_render(0);
	r0b = open_render(0);
	nullfd = open("/dev/null", O_RDWR);
	acq = (struct kfd_ioctl_acquire_vm_args){ .drm_fd = 9999, .gpu_id = g0 };
	ok_errno(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq), EINVAL, "ACQUIRE_VM of a bad fd: EINVAL");
	acq.drm_fd = nullfd;
	ok_errno(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq), EINVAL,
		 "ACQUIRE_VM of a non-amdgpu file: EINVAL");
	acq = (struct kfd_ioctl_acquire_vm_args){ .drm_fd = r0, .gpu_id = 1 };
	ok_errno(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq), EINVAL,
		 "ACQUIRE_VM for an unknown gpu: EINVAL");
	acq.gpu_id = g0;
	ok(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq) == 0, "ACQUIRE_VM with the render node");
	ok(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq) == 0, "ACQUIRE_VM again with the same file: 0");
	acq.drm_fd = r0b;
	ok_errno(ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq), EBUSY,
		 "ACQUIRE_VM with another file: EBUSY");

	/* another KFD process cannot take a VM that is already a compute VM */
	pid = fork();
	if (pid == 0) {
		int k = open("/dev/kfd", O_RDWR);
		struct kfd_ioctl_acquire_vm_args a = { .drm_fd = r0, .gpu_id = g0 };

		_exit(k >= 0 && ioctl(k, AMDKFD_IOC_ACQUIRE_VM, &a) == -1 && errno == EINVAL ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "a child's KFD process acquiring the same DRM file: EINVAL");

	/* handles, smallest free index */
	rc = alloc_bo(g0, 1ULL << 32, 2 * MB, VRAM_W, &h0, &off0);
	ok(rc == 0 && h0 == ((uint64_t)g0 << 32), "first VRAM BO: handle (gpu_id << 32) | 0");
	rc = alloc_bo(g0, (1ULL << 32) + 2 * MB, MB, VRAM_W, &h1, &off1);
	ok(rc == 0 && h1 == (((uint64_t)g0 << 32) | 1), "second BO: index 1");
	ok(off0 >= 1ULL << 32 && !(off0 & 4095) && off1 != off0,
	   "mmap offsets are DRM fake offsets (>= 4 GiB, page aligned): 0x%llx",
	   (unsigned long long)off0);
	ok(available(g0) <= before - 3 * MB, "AVAILABLE_MEMORY went down by the VRAM allocated");
	ok(free_bo(h0) == 0, "FREE of an unmapped BO");
	ok_errno(free_bo(h0), EINVAL, "FREE again: EINVAL");
	rc = alloc_bo(g0, 1ULL << 32, 2 * MB, VRAM_W, &h0, &off0);
	ok(rc == 0 && (uint32_t)h0 == 0, "a new BO reuses the smallest free index 0");

	/* CPU access through the render node */
	p = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_SHARED, r0, off0);
	ok(p != MAP_FAILED, "mmap of a VRAM BO through the VM's render fd");
	if (p != MAP_FAILED) {
		p[0] = 0x12345678;
		p[2 * MB / 4 - 1] = 0x9abcdef0;
	}
	ok_errno(mmap_rc(mmap(NULL, 2 * MB, PROT_READ, MAP_SHARED, r0b, off0)),
		 EACCES, "mmap through another file of the same render node: EACCES");
	ok_errno(mmap_rc(mmap(NULL, 2 * MB, PROT_READ, MAP_PRIVATE, r0, off0)),
		 EINVAL, "MAP_PRIVATE mmap of a BO: EINVAL");
	/* amdgpu's workaround for libhsakmt: PROT_NONE private maps, never writable */
	q = mmap(NULL, 2 * MB, PROT_NONE, MAP_PRIVATE, r0, off0);
	ok(q != MAP_FAILED, "PROT_NONE MAP_PRIVATE mmap of a BO (as libhsakmt does)");
	if (q != MAP_FAILED) {
		ok_errno(mprotect((void *)q, 2 * MB, PROT_READ | PROT_WRITE), EACCES,
			 "that mapping cannot become writable: EACCES");
		munmap((void *)q, 2 * MB);
	}
	/* drm_gem_mmap() looks the offset up exactly: no mapping from inside a BO */
	ok_errno(mmap_rc(mmap(NULL, MB, PROT_READ, MAP_SHARED, r0, off0 + MB)), EINVAL,
		 "render-node mmap starting inside the BO: EINVAL");
	q = mmap(NULL, MB, PROT_READ, MAP_SHARED, r0, off0);
	ok(q != MAP_FAILED && p != MAP_FAILED && q[0] == 0x12345678,
	   "a shorter mapping of the BO start sees the same memory");
	if (q != MAP_FAILED)
		munmap((void *)q, MB);

	/* dma-buf */
	ex = (struct kfd_ioctl_export_dmabuf_args){ .handle = h0, .flags = O_CLOEXEC };
	rc = ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &ex);
	ok(rc == 0 && ex.dmabuf_fd > 2, "EXPORT_DMABUF of a writable VRAM BO");
	q = rc ? MAP_FAILED : mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_SHARED,
				   ex.dmabuf_fd, 0);
	ok(q != MAP_FAILED && p != MAP_FAILED && q[0] == 0x12345678,
	   "the dma-buf maps read-write and shows the BO contents");
	if (q != MAP_FAILED) {
		q[1] = 0xfeedf00d;
		ok(p != MAP_FAILED && p[1] == 0xfeedf00d, "a write through the dma-buf shows in the BO");
		munmap((void *)q, 2 * MB);
	}
	q = rc ? MAP_FAILED : mmap(NULL, MB, PROT_READ, MAP_SHARED, ex.dmabuf_fd, MB);
	ok(q != MAP_FAILED && q[MB / 4 - 1] == 0x9abcdef0,
	   "a dma-buf mapping at offset 1 MiB shows the second MiB of the BO");
	if (q != MAP_FAILED)
		munmap((void *)q, MB);
	if (!rc)
		close(ex.dmabuf_fd);
	if (p != MAP_FAILED)
		munmap((void *)p, 2 * MB);
	rc = alloc_bo(g0, 1ULL << 33, MB, KFD_IOC_ALLOC_MEM_FLAGS_GTT, &h2, &off);
	ok(rc == 0, "GTT BO (not writable)");
	ex = (struct kfd_ioctl_export_dmabuf_args){ .handle = h2 };
	rc = ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &ex);
	ok(rc == 0 && (fcntl(ex.dmabuf_fd, F_GETFL) & O_ACCMODE) == O_RDONLY,
	   "its dma-buf is read-only");
	ok_errno(mmap_rc(mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_SHARED, ex.dmabuf_fd, 0)), EACCES, "writable mmap of the read-only dma-buf: EACCES");
	close(ex.dmabuf_fd);
	ex = (struct kfd_ioctl_export_dmabuf_args){ .handle = h2 + 77 };
	ok_errno(ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &ex), EINVAL,
		 "EXPORT_DMABUF of an unknown handle: EINVAL");
	free_bo(h2);

	/* other BO types */
	ok_errno(alloc_bo(g0, 1ULL << 34, MB, 0, &h2, NULL), EINVAL, "ALLOC without a type bit: EINVAL");
	off = 0;
	ok_errno(alloc_bo(g0, 1ULL << 34, MB, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &h2, &off), EINVAL,
		 "USERPTR with address 0: EINVAL");
	off = 0x10000;
	ok_errno(alloc_bo(g0, 1ULL << 34, MB, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &h2, &off), EFAULT,
		 "USERPTR of unmapped memory: EFAULT");
	ubuf = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	off = (uintptr_t)ubuf;
	rc = alloc_bo(g0, 1ULL << 34, MB, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR |
		      KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, &hu, &off);
	ok(rc == 0 && off >= 1ULL << 32, "USERPTR BO; its mmap_offset is a DRM fake offset");
	ok_errno(mmap_rc(mmap(NULL, MB, PROT_READ, MAP_SHARED, r0, off)),
		 EPERM, "mmap of a USERPTR BO through the render node: EPERM");
	ex = (struct kfd_ioctl_export_dmabuf_args){ .handle = hu };
	ok_errno(ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &ex), EPERM,
		 "EXPORT_DMABUF of a USERPTR BO: EPERM");
	ok(free_bo(hu) == 0, "FREE of the USERPTR BO");
	ok_errno(alloc_bo(g0, 1ULL << 35, 4096, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, &h2, NULL),
		 EINVAL, "DOORBELL BO of a wrong size: EINVAL");
	rc = alloc_bo(g0, 1ULL << 35, 8192, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, &h2, NULL);
	ok(rc == 0, "DOORBELL BO of the slice size (8 KiB)");
	if (!rc)
		free_bo(h2);
	ok_errno(alloc_bo(g0, 1ULL << 35, 8192, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, &h2, NULL),
		 EINVAL, "MMIO_REMAP BO of 8 KiB: EINVAL");
	off = 0;
	rc = alloc_bo(g0, 1ULL << 35, 4096, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, &h2, &off);
	ok(rc == 0 && off == (uint64_t)g0 << 46, "MMIO_REMAP BO: mmap_offset MMIO | gpu_id << 46");
	if (!rc)
		free_bo(h2);

	/* MAP / UNMAP */
	ids[0] = g0;
	ns = 0;
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0, ids, 0, &ns), EINVAL, "MAP to 0 devices: EINVAL");
	ns = 2;
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0, ids, 1, &ns), EINVAL,
		 "MAP with n_success > n_devices: EINVAL");
	ns = 0;
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0, (uint32_t *)8, 1, &ns), EFAULT,
		 "MAP with a bad device array: EFAULT");
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0 + 100, ids, 1, &ns), ENOMEM,
		 "MAP of an unknown handle index: ENOMEM");
	ok(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0, ids, 1, &ns) == 0 && ns == 1, "MAP on one GPU");
	ns = 0;
	ok(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h0, ids, 1, &ns) == 0 && ns == 1,
	   "MAP again: a no-op");
	ok_errno(free_bo(h0), EBUSY, "FREE of a mapped BO: EBUSY");
	rc = alloc_bo(g0, (1ULL << 32) + MB, MB, VRAM_W, &h2, NULL);
	ns = 0;
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h2, ids, 1, &ns), EINVAL,
		 "MAP of a BO whose VA overlaps a mapped one: EINVAL");
	free_bo(h2);
	ids[1] = 1;
	ns = 0;
	ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h1, ids, 2, &ns), EINVAL,
		 "MAP with an unknown second gpu: EINVAL ...");
	ok(ns == 1, "... and n_success 1 is copied back (%u)", ns);
	ns = 0;
	ok(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, h0, ids, 1, &ns) == 0 && ns == 1, "UNMAP");
	ns = 0;
	ok_errno(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, h0, ids, 1, &ns), EINVAL,
		 "UNMAP of a GPU it is not mapped on: EINVAL");
	ok(free_bo(h0) == 0, "FREE after UNMAP");
	if (n_gpus > 1) {
		ids[0] = g0;
		ids[1] = gpu_ids[1];
		ns = 0;
		ok_errno(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, h1, ids, 2, &ns), ENODEV,
			 "MAP on a second GPU without a VM: ENODEV ...");
		ok(ns == 1, "... after the first GPU succeeded (n_success %u)", ns);
		ns = 0;
		ok(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, h1, ids, 1, &ns) == 0, "UNMAP it");
	}
	ok(free_bo(h1) == 0, "FREE the second BO");

	/* the process belongs to the mm, not to the file */
	rc = alloc_bo(g0, 1ULL << 36, MB, VRAM_W, &h0, &off0);
	close(kfd);
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	ok(kfd >= 0 && free_bo(h0) == 0,
	   "after close and reopen of /dev/kfd the process and its BO are still there");
	{
		int k2 = open("/dev/kfd", O_RDWR | O_CLOEXEC);
		struct kfd_ioctl_free_memory_of_gpu_args f;

		rc = alloc_bo(g0, 1ULL << 36, MB, VRAM_W, &h0, NULL);
		f.handle = h0;
		ok(k2 >= 0 && rc == 0 && ioctl(k2, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f) == 0,
		   "a second open of /dev/kfd shares the process");
		close(k2);
	}
	close(r0b);
	close(nullfd);
	/* r0 stays with the pdd */
}

/* --pdds: print "pdds N GPU_ID..." (the GPUs this process sees) */
static int print_pdds(void)
{
	struct kfd_process_device_apertures pa[MAX_GPUS];
	struct kfd_ioctl_get_process_apertures_new_args an = {
		.kfd_process_device_apertures_ptr = (uintptr_t)pa, .num_of_nodes = MAX_GPUS,
	};
	unsigned int i;

	an.num_of_nodes = 0;
	if (kfd < 0 || ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an))
		return 1;
	if (an.num_of_nodes > MAX_GPUS)
		an.num_of_nodes = MAX_GPUS;
	if (an.num_of_nodes && ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an))
		return 1;
	printf("pdds %u", an.num_of_nodes);
	for (i = 0; i < an.num_of_nodes; i++)
		printf(" %u", pa[i].gpu_id);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (argc > 1 && !strcmp(argv[1], "--pdds"))
		return print_pdds();
	/*
	 * --open-close-sleep: a KFD process that outlives its last file; says
	 * "closed" (or "no-kfd") once it is so, for the caller to wait on
	 */
	if (argc > 1 && !strcmp(argv[1], "--open-close-sleep")) {
		close(kfd);
		printf("%s\n", kfd >= 0 ? "closed" : "no-kfd");
		fflush(stdout);
		pause();
		return 0;
	}
	if (!ok(kfd >= 0, "open /dev/kfd")) {
		diag("%s", strerror(errno));
		return tap_done();
	}
	test_open();
	test_apertures();
	if (!n_gpus) {
		diag("no GPU visible: skipping the rest");
		return tap_done();
	}
	test_dispatcher();
	test_ownership();
	test_drm_version();
	test_settings(0);
	test_runtime_enable();
	test_tile_config();
	test_memory();
	test_settings(1);
	return tap_done();
}
