// SPDX-License-Identifier: GPL-2.0
/*
 * Guest test of kfdsim's queues, events and AMDKFD_IOC_CRIU_OP, case by case
 * against docs/kfd-facts.md (sections 2.4-2.6, 3, 4, 5, 6.5, 7.6, 7.7,
 * 7.9, 8) and the fault injection of /sys/kernel/debug/kfdsim/inject.
 *
 * Processes: the test itself is "the dumper" (it ptrace-seizes the
 * application and uses the application's /dev/kfd fd received over a unix
 * socket) and "CRIU's main process" for RESUME (own /dev/kfd). An
 * application child A sets up BOs, queues and events; restore children R
 * restore A's checkpoint onto the other GPU. Every process prints TAP into
 * one shared numbering. Needs root, debugfs, the kfdsim module with at
 * least two GPUs (the built-in machine). Build with -I to the guest
 * kernel's uapi headers.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#ifndef __user
#define __user
#endif
#include <linux/kfd_ioctl.h>
#include <linux/capability.h>

#define TOPO		"/sys/class/kfd/kfd/topology/nodes"
#define DBG		"/sys/kernel/debug/kfdsim"
#define PARAM_BO	"/sys/module/amdgpu_kfdsim/parameters/bo_priv_size"
#define MAX_GPUS	8
#define PAGE		4096ULL
#define MMAP_DOORBELL	(3ULL << 62)
#define MMAP_EVENTS	(2ULL << 62)
#define MMAP_MMIO	0ULL
#define GPU_SHIFT	46
#define F_VRAM		KFD_IOC_ALLOC_MEM_FLAGS_VRAM
#define F_GTT		KFD_IOC_ALLOC_MEM_FLAGS_GTT
#define F_USERPTR	KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
#define F_DOORBELL	KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
#define F_MMIO		KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
#define F_RW		((uint32_t)(KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE))
#define USERPTR_ADDR	0x600000000000ULL
#define DATA_SIZE	(64 * 1024ULL)

/* ---- TAP shared by all processes -------------------------------------- */

struct shared {
	int n, failed;
	/* A -> dumper */
	uint64_t h_data, h_gtt, h_userptr, h_doorbell, h_mmio, h_evpage, h_nova;
	uint64_t off_data;
	uint32_t n_bos;
	uint32_t ctl_stack_size;
	/* restored process */
	uint64_t restored_data_offset;
	/* PID namespace test */
	pid_t ns_global_pid, ns_own_pid;
	int ns_resume_rc, ns_resume_errno;
	/* SVM restore */
	pid_t svm_pid;
};

static struct shared *sh;

static void vok(int cond, const char *fmt, va_list ap)
{
	sh->n++;
	if (!cond)
		sh->failed++;
	printf("%sok %d - ", cond ? "" : "not ", sh->n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 2, 3)))
static int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

__attribute__((format(printf, 3, 4)))
static int ok_errno(long rc, int want, const char *fmt, ...)
{
	int err = errno, cond = rc == -1 && err == want;
	va_list ap;

	va_start(ap, fmt);
	vok(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got rc %ld errno %d (%s), want errno %d (%s)\n", rc,
		       rc == -1 ? err : 0, rc == -1 ? strerror(err) : "-", want, strerror(want));
	fflush(stdout);
	return cond;
}

__attribute__((format(printf, 1, 2)))
static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- machine ---------------------------------------------------------- */

struct gpu {
	uint32_t id, minor, gfx, num_xcc, ctl_stack, cwsr, sdma;
	uint64_t total_cwsr;
};
static struct gpu gpus[MAX_GPUS];
static int n_gpus;

static int read_prop(int node, const char *key, unsigned long long *v)
{
	char p[128], k[64];
	unsigned long long x;
	FILE *f;
	int found = 0;

	snprintf(p, sizeof(p), TOPO "/%d/properties", node);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", k, &x) == 2)
		if (!strcmp(k, key)) {
			*v = x;
			found = 1;
			break;
		}
	fclose(f);
	return found ? 0 : -1;
}

static void read_machine(void)
{
	unsigned long long id, v[8];
	char p[128];
	FILE *f;
	int n;

	for (n = 0; n < 256 && n_gpus < MAX_GPUS; n++) {
		struct gpu *g = &gpus[n_gpus];
		uint32_t cu, arrays, waves, dbg;

		snprintf(p, sizeof(p), TOPO "/%d/gpu_id", n);
		f = fopen(p, "r");
		if (!f)
			break;
		if (fscanf(f, "%llu", &id) != 1)
			id = 0;
		fclose(f);
		if (!id)
			continue;
		g->id = id;
		read_prop(n, "drm_render_minor", &v[0]);
		read_prop(n, "gfx_target_version", &v[1]);
		read_prop(n, "num_xcc", &v[2]);
		read_prop(n, "ctl_stack_size", &v[3]);
		read_prop(n, "cwsr_size", &v[4]);
		read_prop(n, "simd_count", &v[5]);
		read_prop(n, "simd_per_cu", &v[6]);
		read_prop(n, "array_count", &v[7]);
		g->minor = v[0];
		g->gfx = v[1];
		g->num_xcc = v[2] ? v[2] : 1;
		g->ctl_stack = v[3];
		g->cwsr = v[4];
		/* debug_memory_size as KFD and ROCr compute it */
		cu = v[5] / v[6] / g->num_xcc;
		arrays = v[7] / g->num_xcc;
		read_prop(n, "simd_arrays_per_engine", &v[0]);
		waves = g->gfx < 100100 ? (cu * 40 < arrays / v[0] * 512 ? cu * 40 :
					   arrays / v[0] * 512) : cu * 32;
		dbg = (waves * 32 + 63) & ~63u;
		g->total_cwsr = ((uint64_t)(g->cwsr + dbg) * g->num_xcc + PAGE - 1) & ~(PAGE - 1);
		read_prop(n, "num_sdma_engines", &v[0]);
		g->sdma = v[0];
		n_gpus++;
	}
}

static int open_render(int i)
{
	char p[64];

	snprintf(p, sizeof(p), "/dev/dri/renderD%u", gpus[i].minor);
	return open(p, O_RDWR | O_CLOEXEC);
}

/* ---- debugfs ---------------------------------------------------------- */

static int inject(const char *rule)
{
	int fd = open(DBG "/inject", O_WRONLY), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, rule, strlen(rule)) == (ssize_t)strlen(rule) ? 0 : -1;
	close(fd);
	return rc;
}

/* A key of @pid's line in kfdsim/processes: number, or -1. */
static long proc_state(pid_t pid, const char *key)
{
	char line[512], want[32], *s;
	long v = -1;
	FILE *f = fopen(DBG "/processes", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "pid=%d ", pid);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		s = strstr(line, key);
		if (s && s[strlen(key)] == '=')
			v = strtol(s + strlen(key) + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static int proc_line(pid_t pid, char *out, size_t len)
{
	char want[32];
	FILE *f = fopen(DBG "/processes", "r");
	int found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "pid=%d ", pid);
	while (fgets(out, len, f))
		if (!strncmp(out, want, strlen(want))) {
			found = 1;
			break;
		}
	fclose(f);
	return found;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- KFD helpers ------------------------------------------------------ */

static int kfd_alloc(int kfd, uint32_t gpu, uint64_t va, uint64_t size, uint32_t flags,
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

static int kfd_map(int kfd, uint64_t handle, uint32_t *ids, uint32_t n)
{
	struct kfd_ioctl_map_memory_to_gpu_args m = {
		.handle = handle, .device_ids_array_ptr = (uintptr_t)ids, .n_devices = n,
	};

	return ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m);
}

static int acquire_all(int kfd, int *render)
{
	int i;

	for (i = 0; i < n_gpus; i++) {
		struct kfd_ioctl_acquire_vm_args a = { .gpu_id = gpus[i].id };

		render[i] = open_render(i);
		a.drm_fd = render[i];
		if (render[i] < 0 || ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a))
			return -1;
	}
	return 0;
}

/* Queue buffers of one GPU: ring, rptr, wptr (GTT), EOP, CWSR (VRAM) at @va. */
struct qbufs {
	uint64_t ring, rptr, wptr, eop, cwsr;
	uint64_t h[5];
};

static int make_qbufs(int kfd, int g, uint64_t va, struct qbufs *b)
{
	uint64_t sizes[5] = { PAGE, PAGE, PAGE, PAGE, gpus[g].total_cwsr };
	uint32_t flags[5] = { F_GTT, F_GTT, F_GTT, F_VRAM, F_VRAM };
	uint64_t *addr[5] = { &b->ring, &b->rptr, &b->wptr, &b->eop, &b->cwsr };
	int i;

	for (i = 0; i < 5; i++) {
		*addr[i] = va;
		if (kfd_alloc(kfd, gpus[g].id, va, sizes[i], flags[i] | F_RW, &b->h[i], NULL) ||
		    kfd_map(kfd, b->h[i], &gpus[g].id, 1))
			return -1;
		va += (sizes[i] + 0xFFFFF) & ~0xFFFFFULL;
	}
	return 0;
}

static void fill_queue_args(struct kfd_ioctl_create_queue_args *q, int g,
			    const struct qbufs *b, uint32_t type)
{
	memset(q, 0, sizeof(*q));
	q->ring_base_address = b->ring;
	q->ring_size = PAGE;
	q->read_pointer_address = b->rptr;
	q->write_pointer_address = b->wptr;
	q->gpu_id = gpus[g].id;
	q->queue_type = type;
	q->queue_percentage = 100;
	q->queue_priority = 7;
	if (type == KFD_IOC_QUEUE_TYPE_COMPUTE || type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) {
		q->eop_buffer_address = b->eop;
		q->eop_buffer_size = PAGE;
		q->ctx_save_restore_address = b->cwsr;
		q->ctx_save_restore_size = gpus[g].cwsr;
		q->ctl_stack_size = gpus[g].ctl_stack;
	}
}

static int criu(int kfd, struct kfd_ioctl_criu_args *a, uint32_t op)
{
	a->op = op;
	return ioctl(kfd, AMDKFD_IOC_CRIU_OP, a);
}

static int count_fds(void)
{
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void run_child(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		fn(arg);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		ok(0, "child ended normally (status 0x%x)", st);
}

/* a thread waiting (5 s at most) on one event; its wait_result, or -errno */
struct event_wait {
	int kfd;
	uint32_t id;
	int result;
	pid_t tid;
};

static void *wait_thread(void *arg)
{
	struct event_wait *a = arg;
	struct kfd_event_data ed = { .event_id = a->id };
	/* long: the main thread sets the event once both wait, however slow the guest */
	struct kfd_ioctl_wait_events_args w = { .events_ptr = (uintptr_t)&ed, .num_events = 1,
						.timeout = 120000 };

	a->tid = (pid_t)syscall(SYS_gettid);
	a->result = ioctl(a->kfd, AMDKFD_IOC_WAIT_EVENTS, &w) ? -errno : (int)w.wait_result;
	return NULL;
}

/* WAIT_EVENTS calls registered on event @id of this process (debugfs kfdsim/events), or -1 */
static long event_waiters(uint32_t id)
{
	char line[256], want[64], *s;
	long v = -1;
	FILE *f = fopen(DBG "/events", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "pid=%d event=%u ", (int)getpid(), id);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)) && (s = strstr(line, " waiters=")))
			v = strtol(s + strlen(" waiters="), NULL, 10);
	fclose(f);
	return v;
}

/*
 * Two threads wait on one auto-reset event: one SET_EVENT wakes both (KFD
 * activates every waiter registered on the event and leaves the event
 * unsignaled). ROCr's hsa_queue_destroy relies on it. The event is set
 * once kfdsim shows both waiters registered on it (debugfs), not after a
 * time that a loaded TCG guest may not have given the threads.
 */
static void test_two_waiters(int kfd, uint32_t id)
{
	struct event_wait a[2] = { { kfd, id, -1, 0 }, { kfd, id, -1, 0 } };
	struct kfd_event_data ed = { .event_id = id };
	struct kfd_ioctl_wait_events_args w = { .events_ptr = (uintptr_t)&ed, .num_events = 1,
						.timeout = 10 };
	struct kfd_ioctl_set_event_args se = { .event_id = id };
	pthread_t t[2];
	long waiters = -1;
	int i, n;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, wait_thread, &a[i]);
	/* 60 s at most: only reached if a thread never waits (then the check below fails) */
	for (n = 0; n < 6000 && (waiters = event_waiters(id)) < 2; n++)
		usleep(10000);
	ok(ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se) == 0 && waiters == 2,
	   "two threads wait on an auto-reset event (debugfs: %ld waiters): SET_EVENT", waiters);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ok(a[0].result == KFD_IOC_WAIT_RESULT_COMPLETE && a[1].result == KFD_IOC_WAIT_RESULT_COMPLETE,
	   "... wakes both waiters: COMPLETE, COMPLETE (got %d, %d)", a[0].result, a[1].result);
	ok(ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 && w.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT,
	   "... and leaves it unsignaled: a later wait times out");
}


/* ---- 1. queues, doorbells, events, xnack -------------------------------- */

static void test_queues(__attribute__((unused)) void *unused)
{
	struct kfd_ioctl_create_queue_args q;
	struct kfd_ioctl_destroy_queue_args dq = { 0 };
	struct kfd_ioctl_set_xnack_mode_args x;
	struct kfd_ioctl_criu_args ca = { 0 };
	int render[MAX_GPUS], kfd, i, rc;
	struct qbufs b;
	uint64_t h = 0, dboff;
	void *m;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	fill_queue_args(&q, 0, &(struct qbufs){ 0 }, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), ESRCH, "CREATE_QUEUE without VM: ESRCH");
	if (!ok(acquire_all(kfd, render) == 0, "ACQUIRE_VM on every GPU"))
		return;
	ok(make_qbufs(kfd, 0, 0x100000000ULL, &b) == 0, "queue buffers allocated and mapped");

	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.queue_percentage = 101;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "queue_percentage 101: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.queue_priority = 16;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "queue_priority 16: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ring_size = 3000;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "ring_size not a power of 2: EINVAL");
	fill_queue_args(&q, 0, &b, 9);
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), 524, "queue_type 9: ENOTSUPP (524)");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.gpu_id = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "unknown gpu_id: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ring_base_address += PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "ring not at a mapping start: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ring_size = 2 * PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "ring_size != ring mapping size: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ctl_stack_size += PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "ctl_stack_size != sysfs value: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ctx_save_restore_size -= PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "ctx_save_restore_size < cwsr_size: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.eop_buffer_size = 2048;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "EOP buffer below the node's EOP size: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ctx_save_restore_address += PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "CWSR area not the mapped BO: EINVAL");

	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ring_size = 0;
	rc = ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	ok(rc == 0 && q.ring_size == 1024,
	   "ring_size 0 is raised to 1024 (written back); below one GPU page the ring size is not checked");
	dq.queue_id = q.queue_id;
	ok(rc == 0 && ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0, "DESTROY_QUEUE of it");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	rc = ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	dboff = MMAP_DOORBELL | (uint64_t)gpus[0].id << GPU_SHIFT;
	ok(rc == 0 && q.queue_id == 0 && q.doorbell_offset == dboff,
	   "AQL queue: id 0, doorbell offset DOORBELL|gpu (got %u 0x%llx)", q.queue_id,
	   (unsigned long long)q.doorbell_offset);
	rc = ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	ok(rc == 0 && q.queue_id == 1 && q.doorbell_offset == (dboff | 8),
	   "second queue on the same buffers: id 1, doorbell id 1 (offset +8)");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_SDMA);
	rc = ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	ok(rc == 0 && q.queue_id == 2 && (q.doorbell_offset & 0x1FFF) == 0x100 * 8,
	   "SDMA queue: id 2, fixed doorbell 0x100 (offset 0x%llx)",
	   (unsigned long long)(q.doorbell_offset & 0x1FFF));
	{
		struct kfd_ioctl_unmap_memory_from_gpu_args u = {
			.handle = b.h[0], .device_ids_array_ptr = (uintptr_t)&gpus[0].id,
			.n_devices = 1,
		};
		ok_errno(ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &u), EBUSY,
			 "UNMAP of a live queue's ring BO: EBUSY");
	}
	dq.queue_id = 1;
	ok(ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0, "DESTROY_QUEUE 1");
	ok_errno(ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq), EINVAL, "DESTROY_QUEUE 1 again: EINVAL");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE);
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0 && q.queue_id == 1,
	   "a new queue gets the smallest free id (1)");
	for (i = 3; i < 127; i++) {
		fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE);
		if (ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
			break;
	}
	ok(i == 127, "127 queues on one device (got %d)", i);
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE);
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), ENOSPC, "128th queue on one device: ENOSPC");
	for (dq.queue_id = 3; dq.queue_id < 127; dq.queue_id++)
		ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq);

	x.xnack_enabled = -1;
	ok(ioctl(kfd, AMDKFD_IOC_SET_XNACK_MODE, &x) == 0 && x.xnack_enabled == 0,
	   "SET_XNACK_MODE -1 queries: off");
	x.xnack_enabled = 1;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_XNACK_MODE, &x), EBUSY, "SET_XNACK_MODE with queues: EBUSY");

	/* doorbell and MMIO mmaps (section 8) */
	m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, kfd, dboff);
	ok(m != MAP_FAILED, "doorbell slice (8 KiB) mmap");
	if (m != MAP_FAILED) {
		((volatile uint64_t *)m)[0] = 42;	/* ring the doorbell */
		munmap(m, 8192);
	}
	ok(mmap(NULL, 4096, PROT_READ, MAP_SHARED, kfd, dboff) == MAP_FAILED && errno == EINVAL,
	   "doorbell mmap of 4 KiB: EINVAL");
	ok(mmap(NULL, 8192, PROT_READ, MAP_SHARED, kfd, MMAP_DOORBELL | 1ULL << GPU_SHIFT) ==
	   MAP_FAILED && errno == ENODEV, "doorbell mmap of an unknown gpu: ENODEV");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, kfd,
		 MMAP_MMIO | (uint64_t)gpus[0].id << GPU_SHIFT);
	ok(m != MAP_FAILED, "MMIO (HDP flush) page mmap");
	if (m != MAP_FAILED)
		munmap(m, 4096);
	ok(mmap(NULL, 8192, PROT_READ, MAP_SHARED, kfd, MMAP_MMIO | (uint64_t)gpus[0].id << GPU_SHIFT)
	   == MAP_FAILED && errno == EINVAL, "MMIO mmap of 8 KiB: EINVAL");
	ok(mmap(NULL, 4096, PROT_READ, MAP_SHARED, kfd, MMAP_EVENTS) == MAP_FAILED && errno == EINVAL,
	   "EVENTS mmap without an event page: EINVAL");

	/* events (7.7, 2.5) */
	{
		struct kfd_ioctl_create_event_args e = { .event_type = KFD_IOC_EVENT_SIGNAL,
							  .auto_reset = 1 };
		struct kfd_ioctl_set_event_args se;
		struct kfd_event_data ed = { 0 };
		struct kfd_ioctl_wait_events_args w = { .events_ptr = (uintptr_t)&ed,
							.num_events = 1 };
		uint32_t sig, mem;

		rc = ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e);
		sig = e.event_id;
		ok(rc == 0 && sig == 1 && e.event_slot_index == 1 && e.event_trigger_data == 1 &&
		   e.event_page_offset == MMAP_EVENTS,
		   "first signal event: id 1 (0 reserved), slot 1, EVENTS offset");
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, kfd, MMAP_EVENTS);
		ok(m != MAP_FAILED && ((uint64_t *)m)[1] == ~0ULL,
		   "kernel event page mmap: slot 1 is unsignaled (all ones)");
		ok(mmap(NULL, 65536, PROT_READ, MAP_SHARED, kfd, MMAP_EVENTS) == MAP_FAILED &&
		   errno == EINVAL, "EVENTS mmap above 32 KiB: EINVAL");
		ok(kfd_alloc(kfd, gpus[0].id, 0x180000000ULL, 32768, F_GTT | F_RW, &h, NULL) == 0,
		   "GTT BO for an event page");
		e.event_page_offset = h;
		ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e), EINVAL,
			 "event page handle after the kernel page exists: EINVAL");
		e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_MEMORY };
		rc = ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e);
		mem = e.event_id;
		ok(rc == 0 && mem == 0x40000000 && e.event_page_offset == 0,
		   "memory event: id 0x40000000 (got 0x%x)", mem);
		se.event_id = mem;
		ok_errno(ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se), EINVAL, "SET_EVENT of a memory event: EINVAL");
		se.event_id = 77;
		ok_errno(ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se), EINVAL, "SET_EVENT of an unknown id: EINVAL");
		ed.event_id = sig;
		ok(ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 &&
		   w.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT, "WAIT_EVENTS, unsignaled, timeout 0: TIMEOUT");
		se.event_id = sig;
		ok(ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se) == 0, "SET_EVENT");
		w.timeout = 1000;
		ok(ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 &&
		   w.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE, "WAIT_EVENTS after SET: COMPLETE");
		w.timeout = 10;
		ok(ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 &&
		   w.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT, "auto-reset event consumed: TIMEOUT");
		ok(ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se) == 0 &&
		   ioctl(kfd, AMDKFD_IOC_RESET_EVENT, &se) == 0 &&
		   ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 &&
		   w.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT, "RESET_EVENT clears the signal");
		test_two_waiters(kfd, sig);
		ok(ioctl(kfd, AMDKFD_IOC_DESTROY_EVENT, &se) == 0, "DESTROY_EVENT");
		ok_errno(ioctl(kfd, AMDKFD_IOC_DESTROY_EVENT, &se), EINVAL, "DESTROY_EVENT again: EINVAL");
		ok(inject("create_event entry ENOMEM") == 0, "inject: create_event entry ENOMEM");
		e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_SIGNAL };
		ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e), ENOMEM, "injected ENOMEM at CREATE_EVENT entry");
		ok(ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0 && e.event_id == 1,
		   "the rule fired once: next CREATE_EVENT reuses id 1");
	}

	/* an unsupported queue type for CRIU: SDMA by engine id (7.6, 3.3) */
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID);
	q.sdma_engine_id = 99;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL, "SDMA_BY_ENG_ID, engine 99: EINVAL");
	q.sdma_engine_id = 1;
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0, "SDMA_BY_ENG_ID queue on engine 1");
	ok_errno(criu(kfd, &ca, KFD_CRIU_OP_PROCESS_INFO), EOPNOTSUPP,
		 "PROCESS_INFO with an SDMA_BY_ENG_ID queue: EOPNOTSUPP");
	ok(proc_state(getpid(), "paused") == 0 && proc_state(getpid(), "queues_running") == 1,
	   "failed PROCESS_INFO: not paused, queues running again");
	ok_errno(criu(kfd, &ca, 7), EINVAL, "CRIU op 7: EINVAL");
	/* free the SDMA slots now, not when the process is released */
	for (dq.queue_id = 0; dq.queue_id < 127; dq.queue_id++)
		ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq);
}

/* ---- 2. the application ------------------------------------------------- */

static int sock[2], go_pipe[2];

static void send_fd(int s, int fd)
{
	char c = 0, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(s, &mh, 0) != 1)
		perror("sendmsg");
}

static int recv_fd(int s)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(s, &mh, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static uint8_t pattern(uint64_t i, int k)
{
	return (uint8_t)(i * 7 + k * 13 + (i >> 8));
}

/* App A: BOs on both GPUs, 2 queues and 3 events on GPU 0; then waits. */
static void app(__attribute__((unused)) void *unused)
{
	int render[MAX_GPUS], kfd, ok_all = 1;
	uint32_t ids[2] = { gpus[0].id, gpus[1].id };
	struct kfd_ioctl_create_queue_args q;
	struct kfd_ioctl_create_event_args e;
	struct kfd_ioctl_set_event_args se;
	struct qbufs b;
	uint64_t off, i;
	uint8_t *p;
	char c;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	ok_all &= kfd >= 0 && acquire_all(kfd, render) == 0;
	off = 0;
	ok_all &= kfd_alloc(kfd, ids[0], 0x200000000ULL, DATA_SIZE, F_VRAM | F_RW, &sh->h_data, &off) == 0;
	sh->off_data = off;
	p = mmap(NULL, DATA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, render[0], off);
	ok_all &= p != MAP_FAILED;
	if (p != MAP_FAILED) {
		for (i = 0; i < DATA_SIZE; i++)
			p[i] = pattern(i, 1);
		munmap(p, DATA_SIZE);
	}
	ok_all &= kfd_map(kfd, sh->h_data, ids, 2) == 0;
	ok_all &= kfd_alloc(kfd, ids[1], 0x210000000ULL, 16384, F_GTT | F_RW, &sh->h_gtt, NULL) == 0;
	ok_all &= kfd_map(kfd, sh->h_gtt, &ids[1], 1) == 0;
	p = mmap((void *)USERPTR_ADDR, 16384, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ok_all &= p == (void *)USERPTR_ADDR;
	off = USERPTR_ADDR;
	ok_all &= kfd_alloc(kfd, ids[0], USERPTR_ADDR, 16384, F_USERPTR | F_RW, &sh->h_userptr, &off) == 0;
	ok_all &= kfd_map(kfd, sh->h_userptr, ids, 1) == 0;
	ok_all &= kfd_alloc(kfd, ids[0], 0x220000000ULL, 8192, F_DOORBELL | F_RW, &sh->h_doorbell, NULL) == 0;
	ok_all &= kfd_map(kfd, sh->h_doorbell, ids, 1) == 0;
	ok_all &= kfd_alloc(kfd, ids[0], 0x230000000ULL, 4096, F_MMIO | F_RW, &sh->h_mmio, NULL) == 0;
	ok_all &= kfd_alloc(kfd, ids[0], 0x240000000ULL, 32768, F_GTT | F_RW, &sh->h_evpage, NULL) == 0;
	ok_all &= kfd_map(kfd, sh->h_evpage, ids, 1) == 0;
	ok_all &= kfd_alloc(kfd, ids[1], 0, 8192, F_VRAM, &sh->h_nova, NULL) == 0;
	ok_all &= make_qbufs(kfd, 0, 0x300000000ULL, &b) == 0;
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	ok_all &= ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0;
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_SDMA);
	ok_all &= ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0;
	{
		/* a CU mask, which CRIU does not save (5.7): the blob checks below */
		uint32_t mask[2] = { 0xFFFF0000, 0xFFFF };
		struct kfd_ioctl_set_cu_mask_args cm = { .queue_id = q.queue_id, .num_cu_mask = 64,
							 .cu_mask_ptr = (uintptr_t)mask };

		ok_all &= ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm) == 0;
	}
	e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_SIGNAL,
						  .event_page_offset = sh->h_evpage };
	ok_all &= ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0 && e.event_id == 1;
	e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_SIGNAL,
						  .auto_reset = 1 };
	ok_all &= ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0 && e.event_id == 2;
	se.event_id = 2;
	ok_all &= ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se) == 0;
	e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_MEMORY };
	ok_all &= ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0;
	{
		struct kfd_ioctl_free_memory_of_gpu_args f = { .handle = sh->h_evpage };

		ok_errno(ioctl(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f), EPERM,
			 "app: FREE of the event page BO: EPERM");
	}
	sh->n_bos = 7 + 5;	/* 7 BOs + 5 queue buffers */
	ok(ok_all, "app: BOs on both GPUs (VRAM, GTT, userptr, doorbell, MMIO, event page, no-VA), 2 queues, 3 events");
	send_fd(sock[1], kfd);
	if (read(go_pipe[0], &c, 1) != 1)
		_exit(1);
}

/* ---- 3. the dumper -------------------------------------------------------- */

static struct kfd_ioctl_criu_args ck;		/* from PROCESS_INFO */
static struct kfd_criu_device_bucket *ck_devs;
static struct kfd_criu_bo_bucket *ck_bos;
static uint8_t *ck_priv;
static uint32_t bo_rec = 272;

static struct kfd_criu_bo_bucket *bucket_of(uint64_t handle)
{
	uint32_t i, idr;

	for (i = 0; i < ck.num_bos; i++) {
		memcpy(&idr, ck_priv + 8 + 8 * ck.num_devices + (size_t)i * bo_rec + 8, 4);
		if (ck_bos[i].gpu_id == handle >> 32 && idr == (uint32_t)handle)
			return &ck_bos[i];
	}
	return NULL;
}

static uint8_t *bo_record(struct kfd_criu_bo_bucket *b)
{
	return ck_priv + 8 + 8 * ck.num_devices + (size_t)(b - ck_bos) * bo_rec;
}

static void checkpoint_args(struct kfd_ioctl_criu_args *a)
{
	*a = ck;
	a->devices = (uintptr_t)ck_devs;
	a->bos = (uintptr_t)ck_bos;
	a->priv_data = (uintptr_t)ck_priv;
}

static void test_dump(int kfd, pid_t app_pid)
{
	struct kfd_ioctl_criu_args a = { 0 };
	struct kfd_ioctl_get_version_args v;
	uint64_t expect, qsize;
	uint32_t u32, off;
	int rc, fds0, i, all;
	uint8_t *p;
	char line[512];

	ok_errno(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO), EBADF,
		 "PROCESS_INFO on the app's fd, not its ptracer: EBADF");
	rc = ptrace(PTRACE_SEIZE, app_pid, 0, 0);
	ok(rc == 0, "PTRACE_SEIZE the app");
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v), EBADF, "ptracer: GET_VERSION on the app's fd: EBADF");
	memset(&a, 0, sizeof(a));
	a.devices = a.bos = a.priv_data = 1;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT before PROCESS_INFO (not paused): EINVAL");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE), EINVAL, "UNPAUSE while not paused: EINVAL");
	ok(proc_state(app_pid, "queues_running") == 1 && proc_state(app_pid, "queues") == 2,
	   "debugfs: the app's 2 queues run");

	/* faults at PROCESS_INFO: rolled back */
	inject("process_info queue_type EOPNOTSUPP");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO), EOPNOTSUPP,
		 "injected unsupported queue type: PROCESS_INFO EOPNOTSUPP");
	ok(proc_state(app_pid, "paused") == 0 && proc_state(app_pid, "queues_running") == 1,
	   "after the failure: not paused, queues restarted");
	inject("evict gpu ETIME 1 1");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO), ETIME,
		 "injected eviction failure on the 2nd GPU: ETIME");
	proc_line(app_pid, line, sizeof(line));
	ok(proc_state(app_pid, "paused") == 0 && strstr(line, "evicted=0,0"),
	   "eviction of the 1st GPU rolled back (%s)", strtok(line, "\n"));

	memset(&a, 0, sizeof(a));
	rc = criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	ok(rc == 0, "PROCESS_INFO");
	ck = a;
	qsize = (120 + 2048 * gpus[0].num_xcc + gpus[0].ctl_stack * gpus[0].num_xcc) + (120 + 512);
	expect = 8 + 8 * 2 + (uint64_t)sh->n_bos * bo_rec + qsize + 3 * 64;
	ok(a.pid == (uint32_t)app_pid, "PROCESS_INFO pid is the app's (%u)", a.pid);
	ok(a.num_devices == 2 && a.num_bos == sh->n_bos && a.num_objects == 5,
	   "counts: 2 devices, %u BOs (VA-0 BO included), 5 objects (got %u, %u, %u)",
	   sh->n_bos, a.num_devices, a.num_bos, a.num_objects);
	ok(a.priv_data_size == expect, "priv_data_size per 5.10: %llu (got %llu)",
	   (unsigned long long)expect, (unsigned long long)a.priv_data_size);
	ok(proc_state(app_pid, "paused") == 1 && proc_state(app_pid, "running") == 0,
	   "debugfs: paused, no queue running");

	ck_devs = calloc(a.num_devices, sizeof(*ck_devs));
	ck_bos = calloc(a.num_bos, sizeof(*ck_bos));
	ck_priv = calloc(1, a.priv_data_size + 64);
	checkpoint_args(&a);
	a.devices = 0;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT devices NULL: EINVAL");
	checkpoint_args(&a);
	a.bos = 0;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT bos NULL: EINVAL");
	checkpoint_args(&a);
	a.priv_data = 0;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT priv_data NULL: EINVAL");
	checkpoint_args(&a);
	a.num_bos--;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT num_bos - 1: EINVAL");
	checkpoint_args(&a);
	a.num_objects++;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT num_objects + 1: EINVAL");
	checkpoint_args(&a);
	a.priv_data_size += 8;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL, "CHECKPOINT priv_data_size + 8: EINVAL");

	fds0 = count_fds();
	inject("checkpoint bo EIO 1 3");
	checkpoint_args(&a);
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT), EIO, "injected EIO at the 4th BO: CHECKPOINT EIO");
	ok(count_fds() == fds0, "no dma-buf fd left in the caller after the failure");

	checkpoint_args(&a);
	rc = criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT);
	ok(rc == 0, "CHECKPOINT");
	ok(count_fds() == fds0 + 9, "9 dma-buf fds (VRAM/GTT BOs) installed in the dumper (%d)",
	   count_fds() - fds0);
	ok(ck_devs[0].user_gpu_id == gpus[0].id && ck_devs[0].actual_gpu_id == gpus[0].id &&
	   ck_devs[1].user_gpu_id == gpus[1].id && ck_devs[1].actual_gpu_id == gpus[1].id &&
	   ck_devs[0].drm_fd == 0 && ck_devs[1].pad == 0, "device buckets: user = actual ids, pdd order, drm_fd 0");
	memcpy(&u32, ck_priv, 4);
	ok(u32 == 1 && !memcmp(ck_priv + 4, "\0\0\0\0", 4), "process record: version 1, xnack 0");
	ok(!memcmp(ck_priv + 8, (uint8_t[16]){ 0 }, 16), "device records: 8 zero bytes each");
	{
		struct kfd_criu_bo_bucket *d = bucket_of(sh->h_data), *g = bucket_of(sh->h_gtt),
					  *u = bucket_of(sh->h_userptr), *db = bucket_of(sh->h_doorbell),
					  *mm = bucket_of(sh->h_mmio), *nv = bucket_of(sh->h_nova);
		uint32_t gids[3];
		uint64_t ua;

		ok(d && g && u && db && mm && nv, "every BO has a bucket, found by (gpu_id, idr_handle)");
		if (!(d && g && u && db && mm && nv))
			return;
		memcpy(gids, bo_record(d) + 12, 12);
		ok(d->addr == 0x200000000ULL && d->size == DATA_SIZE && d->gpu_id == gpus[0].id &&
		   d->alloc_flags == (F_VRAM | F_RW) && d->offset == sh->off_data && d->restored_offset == 0,
		   "VRAM bucket: addr, size, user gpu, flags, offset = the app's mmap offset");
		ok(gids[0] == gpus[0].id && gids[1] == gpus[1].id && gids[2] == 0,
		   "VRAM BO record: mapped_gpuids = both GPUs, then 0");
		ok(fcntl(d->dmabuf_fd, F_GETFD) == 0 && (fcntl(d->dmabuf_fd, F_GETFL) & O_ACCMODE) == O_RDWR,
		   "VRAM dma-buf fd in the dumper, no FD_CLOEXEC, read-write (WRITABLE)");
		ok(fcntl(nv->dmabuf_fd, F_GETFD) == 0 && (fcntl(nv->dmabuf_fd, F_GETFL) & O_ACCMODE) == O_RDONLY &&
		   nv->addr == 0, "VA-0 VRAM BO (not WRITABLE): read-only dma-buf");
		p = mmap(NULL, DATA_SIZE, PROT_READ, MAP_SHARED, d->dmabuf_fd, 0);
		all = p != MAP_FAILED;
		for (i = 0; all && i < (int)DATA_SIZE; i++)
			all = p[i] == pattern(i, 1);
		ok(all, "VRAM contents readable through the checkpoint dma-buf");
		if (p != MAP_FAILED)
			munmap(p, DATA_SIZE);
		memcpy(&ua, bo_record(u), 8);
		ok(u->dmabuf_fd == 0xFFFFFFFF && ua == USERPTR_ADDR, "userptr: no dma-buf, record user_addr");
		ok(db->offset == (MMAP_DOORBELL | (uint64_t)gpus[0].id << GPU_SHIFT) &&
		   db->dmabuf_fd == 0xFFFFFFFF, "doorbell bucket: offset DOORBELL|actual gpu");
		ok(mm->offset == (MMAP_MMIO | (uint64_t)gpus[0].id << GPU_SHIFT),
		   "MMIO bucket: offset MMIO|actual gpu");
	}
	/* objects: queues of pdd 0 newest first (SDMA, then AQL), events by id */
	off = 8 + 16 + sh->n_bos * bo_rec;
	{
		uint32_t f[30];

		memcpy(f, ck_priv + off, 120);
		ok(f[0] == 0 && f[17] == 1 && f[19] == 1 && f[28] == 512 && f[27] == 0 &&
		   f[16] == gpus[0].id && f[22] == 0x100,
		   "1st object: the SDMA queue (type 1, q_id 1, doorbell 0x100, MQD 512, no ctl stack)");
		off += 120 + 512;
		memcpy(f, ck_priv + off, 120);
		ok(f[0] == 0 && f[17] == 0 && f[18] == 1 && f[19] == 0 &&
		   f[28] == 2048 * gpus[0].num_xcc && f[27] == gpus[0].ctl_stack * gpus[0].num_xcc,
		   "2nd object: the AQL queue (type 0, format 1, q_id 0, MQD and ctl stack sizes)");
		ok(!memcmp(ck_priv + off + 120, "KSMQ", 4) &&
		   !memcmp(ck_priv + off + 120 + f[28], "KSCS", 4),
		   "MQD image and saved control stack follow the fixed part");
		off += 120 + f[28] + f[27];
		memcpy(f, ck_priv + off, 64);
		ok(f[0] == 1 && ((uint64_t)f[3] << 32 | f[2]) == sh->h_evpage && f[4] == 1 && f[6] == 0,
		   "1st event: id 1, carries the event page handle");
		memcpy(f, ck_priv + off + 64, 64);
		ok(f[0] == 1 && f[2] == 0 && f[3] == 0 && f[4] == 2 && f[5] == 1 && f[7] == 1,
		   "2nd event: id 2, auto-reset, signaled, no handle");
		memcpy(f, ck_priv + off + 128, 64);
		ok(f[0] == 1 && f[4] == 0x40000000 && f[6] == 8, "3rd event: memory event 0x40000000");
		ok(off + 192 == ck.priv_data_size, "the blob ends after the last event");
	}
	{
		struct kfd_criu_bo_bucket *bb = calloc(ck.num_bos, sizeof(*bb));
		uint8_t *pp = calloc(1, ck.priv_data_size);

		checkpoint_args(&a);
		a.bos = (uintptr_t)bb;
		a.priv_data = (uintptr_t)pp;
		ok(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT) == 0 && count_fds() == fds0 + 18 &&
		   bb[0].dmabuf_fd != ck_bos[0].dmabuf_fd,
		   "CHECKPOINT again while paused: a new set of fds");
		for (i = 0; i < (int)ck.num_bos; i++)
			if (bb[i].dmabuf_fd != 0xFFFFFFFF)
				close(bb[i].dmabuf_fd);
		free(bb);
		free(pp);
	}

	inject("unpause restore EIO");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE), EIO, "injected UNPAUSE failure: EIO");
	ok(proc_state(app_pid, "paused") == 1, "still paused after the failed UNPAUSE");
	ok(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0, "UNPAUSE retried");
	ok(proc_state(app_pid, "paused") == 0 && proc_state(app_pid, "queues_running") == 1,
	   "queues run again");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE), EINVAL, "UNPAUSE twice: EINVAL");
}

/* PROCESS_INFO twice, one UNPAUSE (3.2): the queues stay stopped. */
static void test_double_info(int kfd, pid_t app_pid)
{
	struct kfd_ioctl_criu_args a = { 0 };

	ok(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO) == 0 &&
	   criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO) == 0, "PROCESS_INFO twice");
	ok(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0, "one UNPAUSE");
	ok(proc_state(app_pid, "paused") == 0 && proc_state(app_pid, "running") == 0,
	   "not paused, but the queues stay evicted (count 2 -> 1)");
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE), EINVAL, "second UNPAUSE: EINVAL");
}

/* ---- 4. restore ------------------------------------------------------------- */

enum restore_case {
	RC_GOOD, RC_NUM_DEVICES, RC_VERSION, RC_SIZE, RC_USER_ID0, RC_NO_ROLLBACK,
	RC_SAME_GPU_SDMA, RC_BO80, RC_INJECT_DEVICES,
};

static int rpipe[2], rgo[2];
static pid_t app_pid_of_dump;

static void fill_restore(int *render, int swap, struct kfd_ioctl_criu_args *a,
			 struct kfd_criu_device_bucket *devs, struct kfd_criu_bo_bucket *bos,
			 uint8_t *priv)
{
	int i;

	memcpy(bos, ck_bos, ck.num_bos * sizeof(*bos));
	memcpy(priv, ck_priv, ck.priv_data_size);
	for (i = 0; i < 2; i++) {
		int actual = swap ? 1 - i : i;

		devs[i].user_gpu_id = gpus[i].id;
		devs[i].actual_gpu_id = gpus[actual].id;
		devs[i].drm_fd = render[actual];
	}
	memset(a, 0, sizeof(*a));
	a->devices = (uintptr_t)devs;
	a->bos = (uintptr_t)bos;
	a->priv_data = (uintptr_t)priv;
	a->priv_data_size = ck.priv_data_size;
	a->num_devices = ck.num_devices;
	a->num_bos = ck.num_bos;
	a->num_objects = ck.num_objects;
}

static int do_restore(int kfd, int *render, int swap, struct kfd_ioctl_criu_args *a,
		      struct kfd_criu_device_bucket *devs, struct kfd_criu_bo_bucket *bos,
		      uint8_t *priv)
{
	fill_restore(render, swap, a, devs, bos, priv);
	return criu(kfd, a, KFD_CRIU_OP_RESTORE);
}

/* RESTORE cases that fail, each in a fresh process (RESTORE is not undone). */
static void restore_fail(void *arg)
{
	enum restore_case rc = (enum restore_case)(intptr_t)arg;
	struct kfd_criu_device_bucket devs[2];
	struct kfd_criu_bo_bucket *bos = calloc(ck.num_bos, sizeof(*bos));
	uint8_t *priv = calloc(1, ck.priv_data_size + 64);
	struct kfd_ioctl_criu_args a;
	int kfd, render[2], i;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	for (i = 0; i < 2; i++)
		render[i] = open_render(i);
	switch (rc) {
	case RC_NUM_DEVICES:
		/* a device count mismatch: the caller sees 2 GPUs, passes 1 */
		fill_restore(render, 1, &a, devs, bos, priv);
		break;
	case RC_VERSION:
		ck_priv[0] = 2;		/* our copy of the blob (we are a child) */
		ok_errno(do_restore(kfd, render, 1, &a, devs, bos, priv), EINVAL,
			 "RESTORE: process record version 2: EINVAL");
		return;
	case RC_SIZE:
		ck.priv_data_size -= 8;
		ok_errno(do_restore(kfd, render, 1, &a, devs, bos, priv), EINVAL,
			 "RESTORE: priv_data_size - 8 (last object does not fit): EINVAL");
		return;
	case RC_USER_ID0: {
		struct kfd_criu_device_bucket d0[2] = {
			{ 0, gpus[0].id, render[0], 0 }, { gpus[1].id, gpus[1].id, render[1], 0 },
		};

		memcpy(bos, ck_bos, ck.num_bos * sizeof(*bos));
		a = ck;
		a.devices = (uintptr_t)d0;
		a.bos = (uintptr_t)bos;
		a.priv_data = (uintptr_t)ck_priv;
		ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESTORE), EINVAL, "RESTORE: user_gpu_id 0: EINVAL");
		return;
	}
	case RC_NO_ROLLBACK:
		inject("restore bo ENOMEM 1 2");
		ok_errno(do_restore(kfd, render, 1, &a, devs, bos, priv), ENOMEM,
			 "RESTORE: injected ENOMEM at the 3rd BO");
		ok(proc_state(getpid(), "blocked") == 1 && proc_state(getpid(), "evicted_bos") == 0,
		   "no rollback: MMU notifications stay blocked");
		{
			char line[512];

			proc_line(getpid(), line, sizeof(line));
			ok(strstr(line, "evicted=1,1") != NULL, "no rollback: queues stay evicted");
		}
		ok_errno(do_restore(kfd, render, 1, &a, devs, bos, priv), EINVAL,
			 "a second RESTORE on the process: EINVAL (DRM files attached)");
		return;
	case RC_SAME_GPU_SDMA:
		ok_errno(do_restore(kfd, render, 0, &a, devs, bos, priv), EBUSY,
			 "RESTORE onto the same GPUs while the app holds SDMA slot 0: EBUSY");
		return;
	case RC_INJECT_DEVICES:
		inject("restore devices EINVAL");
		ok_errno(do_restore(kfd, render, 1, &a, devs, bos, priv), EINVAL,
			 "RESTORE: injected device-stage failure: EINVAL");
		return;
	case RC_BO80:
		i = do_restore(kfd, render, 1, &a, devs, bos, priv);
		ok(i == -1, "RESTORE of a 272-byte-record blob with bo_priv_size=80 fails (%s)",
		   strerror(errno));
		return;
	default:
		return;
	}
	/* RC_NUM_DEVICES continued */
	a.num_devices = 1;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESTORE), EINVAL, "RESTORE: num_devices 1 of 2 visible: EINVAL");
}

/* The good restore, onto the other GPU; waits for RESUME, maps the userptr range. */
static int wait_age(int kfd, uint32_t id, uint64_t *age, uint32_t timeout);

static void restore_good(__attribute__((unused)) void *unused)
{
	struct kfd_criu_device_bucket devs[2];
	struct kfd_criu_bo_bucket *bos = calloc(ck.num_bos, sizeof(*bos));
	uint8_t *priv = calloc(1, ck.priv_data_size + 64);
	struct kfd_ioctl_criu_args a;
	struct kfd_process_device_apertures ap[2];
	struct kfd_ioctl_get_process_apertures_new_args an = {
		.kfd_process_device_apertures_ptr = (uintptr_t)ap, .num_of_nodes = 2 };
	int kfd, render[2], i, all, rc, fds0;
	uint64_t h, idx, age;
	uint8_t *p;
	char c;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	for (i = 0; i < 2; i++)
		render[i] = open_render(i);
	memset(&a, 0, sizeof(a));
	a.num_devices = 2;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESTORE), EINVAL, "RESTORE with NULL pointers: EINVAL");
	fds0 = count_fds();
	rc = do_restore(kfd, render, 1, &a, devs, bos, priv);
	ok(rc == 0, "RESTORE in a fresh process onto the other GPUs (user ids kept)");
	if (rc)
		goto wait;
	ok(count_fds() == fds0 + 9, "9 dma-buf fds (VRAM/GTT BOs) installed in the restored task");
	for (i = 0, all = 1; i < (int)ck.num_bos; i++) {
		struct kfd_criu_bo_bucket *o = &ck_bos[i], *n = &bos[i];

		if (o->alloc_flags & (F_VRAM | F_GTT))
			all &= n->restored_offset != o->offset && n->restored_offset >= (1ULL << 32) &&
			       fcntl(n->dmabuf_fd, F_GETFD) == 0;
		else
			all &= n->dmabuf_fd == 0xFFFFFFFF;
		if (o->alloc_flags & F_DOORBELL)
			all &= n->restored_offset == (MMAP_DOORBELL | (uint64_t)gpus[1].id << GPU_SHIFT);
		if (o->alloc_flags & F_MMIO)
			all &= n->restored_offset == (MMAP_MMIO | (uint64_t)gpus[1].id << GPU_SHIFT);
		if (o->alloc_flags & F_USERPTR)
			all &= n->restored_offset == 0;
	}
	ok(all, "restored_offset: new fake offsets, DOORBELL/MMIO with the new actual gpu, userptr untouched");
	ok(ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &an) == 0 && ap[0].gpu_id == gpus[0].id &&
	   ap[1].gpu_id == gpus[1].id, "apertures report actual ids in pdd order");
	{
		char line[512], want[64];

		proc_line(getpid(), line, sizeof(line));
		snprintf(want, sizeof(want), "user_gpu_ids=%u,%u", gpus[1].id, gpus[0].id);
		ok(strstr(line, want) && strstr(line, "blocked=1") && strstr(line, "queues=2 running=0"),
		   "debugfs: pdds carry swapped user ids, blocked, 2 queues stopped");
	}
	/* contents: write through the restored dma-buf, read through the render node */
	for (i = 0; i < (int)ck.num_bos; i++)
		if (ck_bos[i].addr == 0x200000000ULL)
			break;
	p = mmap(NULL, DATA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, bos[i].dmabuf_fd, 0);
	ok(p != MAP_FAILED, "restored VRAM dma-buf mmap, read-write");
	if (p != MAP_FAILED) {
		for (idx = 0; idx < DATA_SIZE; idx++)
			p[idx] = pattern(idx, 2);
		munmap(p, DATA_SIZE);
	}
	/* the BO of user gpu 0 lives on actual gpu 1: its render fd was render[1] */
	p = mmap(NULL, DATA_SIZE, PROT_READ, MAP_SHARED, render[1], bos[i].restored_offset);
	all = p != MAP_FAILED;
	for (idx = 0; all && idx < DATA_SIZE; idx++)
		all = p[idx] == pattern(idx, 2);
	ok(all, "contents written via the dma-buf read back via renderD%u at restored_offset",
	   gpus[1].minor);
	if (p != MAP_FAILED)
		munmap(p, DATA_SIZE);
	for (i = 0; i < (int)ck.num_bos; i++)
		if (bos[i].dmabuf_fd != 0xFFFFFFFF)
			close(bos[i].dmabuf_fd);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, kfd,
		 MMAP_DOORBELL | (uint64_t)gpus[1].id << GPU_SHIFT);
	ok(p != MAP_FAILED, "doorbell mmap at the restored offset (new actual gpu)");
	rc = kfd_alloc(kfd, gpus[0].id, 0x400000000ULL, 4096, F_GTT | F_RW, &h, NULL);
	ok(rc == 0 && h >> 32 == gpus[0].id, "ALLOC with the old (user) gpu id works, handle has the user id");
	/* KFD restores events with age 0 and, as for any age, writes it back */
	age = 1;
	rc = wait_age(kfd, 1, &age, 0);
	ok(rc == KFD_IOC_WAIT_RESULT_COMPLETE && age == 0,
	   "restored signal event 1: a wait with the age it had (1) completes at once, age 0 written back (%d, %llu)",
	   rc, (unsigned long long)age);
	ok(wait_age(kfd, 1, &age, 0) == KFD_IOC_WAIT_RESULT_TIMEOUT,
	   "then a wait with age 0 (none) times out: the event was never set");
wait:
	c = 'r';
	if (write(rpipe[1], &c, 1) != 1)
		return;
	/* RESUME happens now; the userptr range is not mapped yet */
	if (read(rgo[0], &c, 1) != 1)
		return;
	p = mmap((void *)USERPTR_ADDR, 16384, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ok(p == (void *)USERPTR_ADDR, "restored task maps the userptr range");
	c = 'm';
	if (write(rpipe[1], &c, 1) != 1)
		return;
	if (read(rgo[0], &c, 1) != 1)
		return;
}

static void test_restore(int own_kfd)
{
	struct kfd_ioctl_criu_args a = { 0 };
	pid_t r;
	int i, st;
	char c;
	FILE *f;

	run_child(restore_fail, (void *)RC_NUM_DEVICES);
	run_child(restore_fail, (void *)RC_VERSION);
	run_child(restore_fail, (void *)RC_SIZE);
	run_child(restore_fail, (void *)RC_USER_ID0);
	run_child(restore_fail, (void *)RC_NO_ROLLBACK);
	run_child(restore_fail, (void *)RC_SAME_GPU_SDMA);
	run_child(restore_fail, (void *)RC_INJECT_DEVICES);
	f = fopen(PARAM_BO, "w");
	if (f) {
		fputs("80", f);
		fclose(f);
		run_child(restore_fail, (void *)RC_BO80);
		f = fopen(PARAM_BO, "w");
		if (f) {
			fputs("272", f);
			fclose(f);
		}
	} else {
		ok(0, "bo_priv_size parameter writable");
	}

	if (pipe(rpipe) || pipe(rgo))
		return;
	fflush(stdout);
	r = fork();
	if (r == 0) {
		restore_good(NULL);
		fflush(stdout);
		_exit(0);
	}
	if (read(rpipe[0], &c, 1) != 1)
		return;

	/* RESUME, as CRIU's main process: own fd, target by PID */
	a.pid = 999999;
	ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), ESRCH, "RESUME of an unknown PID: ESRCH");
	a.pid = getppid();
	ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), ESRCH, "RESUME of a task without KFD process: ESRCH");
	a.pid = getpid();
	ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), EINVAL, "RESUME of a process never restored: EINVAL");
	inject("resume lookup ESRCH");
	a.pid = r;
	ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), ESRCH, "injected RESUME failure: ESRCH");
	ok(criu(own_kfd, &a, KFD_CRIU_OP_RESUME) == 0, "RESUME of the restored task by PID");
	ok(proc_state(r, "blocked") == 0 && proc_state(r, "running") == 0,
	   "right after RESUME: notifications unblocked, queues not running yet");
	ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), EINVAL, "RESUME twice: EINVAL");
	msleep(1500);
	ok(proc_state(r, "running") == 0,
	   "1.5 s later: still stopped, the userptr range has no VMA yet (worker retries)");
	c = 'g';
	if (write(rgo[1], &c, 1) != 1 || read(rpipe[0], &c, 1) != 1)
		return;
	for (i = 0; i < 100 && proc_state(r, "queues_running") != 1; i++)
		msleep(100);
	ok(proc_state(app_pid_of_dump, "cu_masked") == 1 && proc_state(r, "cu_masked") == 0,
	   "CU mask: set on the app's SDMA queue, not restored (not in the blob)");
	ok(proc_state(r, "queues_running") == 1 && proc_state(r, "running") == 2,
	   "queues restart asynchronously once the userptr range exists (%d ms)", i * 100);
	c = 'x';
	if (write(rgo[1], &c, 1) != 1)
		return;
	waitpid(r, &st, 0);
}

static void test_map_eintr(int kfd)
{
	uint32_t ids[2] = { gpus[0].id, gpus[1].id };
	struct kfd_ioctl_map_memory_to_gpu_args m = { .device_ids_array_ptr = (uintptr_t)ids,
						      .n_devices = 2 };
	int render[MAX_GPUS];

	if (!ok(acquire_all(kfd, render) == 0, "dumper: ACQUIRE_VM on its own fd"))
		return;
	uint64_t h = 0;

	ok(kfd_alloc(kfd, gpus[0].id, 0x500000000ULL, 4096, F_GTT | F_RW, &h, NULL) == 0,
	   "GTT BO for the MAP test");
	m.handle = h;
	inject("map_memory_to_gpu gpu EINTR 1 1");
	ok_errno(ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m), EINTR, "MAP interrupted after 1 of 2 GPUs: EINTR");
	ok(m.n_success == 1, "n_success 1 written back");
	ok(ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m) == 0 && m.n_success == 2,
	   "MAP retried with the same struct: done, n_success 2");
}

/* 1.3: CRIU_OP needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN (capable()). */
static void caps_child(void *arg)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	struct kfd_ioctl_criu_args a = { 0 };
	int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

	if (arg) {	/* keep only CAP_CHECKPOINT_RESTORE (40) */
		d[1].effective = d[1].permitted = 1u << (40 - 32);
	}
	if (syscall(SYS_capset, &h, d)) {
		ok(0, "capset");
		return;
	}
	if (!arg) {
		ok_errno(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO), EACCES,
			 "CRIU_OP without CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN: EACCES");
		return;
	}
	ok(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO) == 0 && criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0,
	   "CRIU_OP with CAP_CHECKPOINT_RESTORE only: allowed");
}

/*
 * PIDs and namespaces: PROCESS_INFO reports the target's PID in its own
 * namespace (3.3), RESUME reads the PID in the caller's (3.7).
 */
static void test_pidns(void)
{
	struct kfd_ioctl_criu_args a = { 0 };
	int sp[2], go[2], rd[2], kfd, st;
	pid_t c, g;
	char ch = 'g';

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(go) || pipe(rd))
		return;
	fflush(stdout);
	c = fork();
	if (c == 0) {
		if (unshare(CLONE_NEWPID))
			_exit(2);
		g = fork();
		if (g == 0) {
			struct kfd_ioctl_criu_args r = { .pid = 1 };

			kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
			sh->ns_own_pid = getpid();
			send_fd(sp[1], kfd);
			if (read(go[0], &ch, 1) != 1)
				_exit(1);
			/* pid 1 in our namespace is ourselves: a KFD process, never restored */
			sh->ns_resume_rc = criu(kfd, &r, KFD_CRIU_OP_RESUME);
			sh->ns_resume_errno = errno;
			_exit(0);
		}
		sh->ns_global_pid = g;
		if (write(rd[1], &ch, 1) != 1)
			_exit(1);
		waitpid(g, &st, 0);
		_exit(0);
	}
	kfd = recv_fd(sp[0]);
	if (read(rd[0], &ch, 1) != 1)
		return;
	g = sh->ns_global_pid;
	ok(kfd >= 0 && g > 1 && sh->ns_own_pid == 1,
	   "a process that is PID 1 of a new PID namespace (global PID %d) opened /dev/kfd", g);
	ok(ptrace(PTRACE_SEIZE, g, 0, 0) == 0, "PTRACE_SEIZE it");
	st = criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	ok(st == 0 && a.pid == 1, "PROCESS_INFO pid is its PID in its own namespace (1, got %u)", a.pid);
	ok(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0, "UNPAUSE");
	a.pid = 1;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESUME), ESRCH,
		 "RESUME pid 1 from the initial namespace: our init, no KFD process: ESRCH");
	if (write(go[1], &ch, 1) != 1)
		return;
	waitpid(g, &st, __WALL);
	waitpid(c, &st, 0);
	ok(sh->ns_resume_rc == -1 && sh->ns_resume_errno == EINVAL,
	   "RESUME pid 1 inside the namespace is the caller itself: EINVAL (errno %d)",
	   sh->ns_resume_errno);
	close(kfd);
}

/* ---- 5. SVM (7.10, 5.9) ---------------------------------------------------- */

#define SVM_ADDR	0x700000000000ULL
#define SVM_CMD(n)	_IOC(_IOC_READ | _IOC_WRITE, 'K', 0x20, 24 + 8 * (n))
#define A_PREF		KFD_IOCTL_SVM_ATTR_PREFERRED_LOC
#define A_PREFETCH	KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
#define A_ACC		KFD_IOCTL_SVM_ATTR_ACCESS
#define A_AIP		KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
#define A_NOACC		KFD_IOCTL_SVM_ATTR_NO_ACCESS
#define A_SET		KFD_IOCTL_SVM_ATTR_SET_FLAGS
#define A_CLR		KFD_IOCTL_SVM_ATTR_CLR_FLAGS
#define A_GRAN		KFD_IOCTL_SVM_ATTR_GRANULARITY
#define UNDEF		0xFFFFFFFFu

struct svm_buf {
	struct kfd_ioctl_svm_args a;
	struct kfd_ioctl_svm_attribute at[16];
};

/* AMDKFD_IOC_SVM on pages [first, first + n) of SVM_ADDR, cmd size for @nattr */
static long svm_op(int kfd, uint64_t first, uint64_t n, uint32_t op, uint32_t nattr,
		   struct kfd_ioctl_svm_attribute *at)
{
	struct svm_buf b;
	long rc;

	memset(&b, 0, sizeof(b));
	b.a.start_addr = SVM_ADDR + first * PAGE;
	b.a.size = n * PAGE;
	b.a.op = op;
	b.a.nattr = nattr;
	memcpy(b.at, at, nattr * sizeof(*at));
	rc = ioctl(kfd, SVM_CMD(nattr), &b);
	memcpy(at, b.at, nattr * sizeof(*at));
	return rc;
}

#define SVM_SET(kfd, f, n, ...) ({						\
	struct kfd_ioctl_svm_attribute _a[] = { __VA_ARGS__ };			\
	svm_op(kfd, f, n, KFD_IOCTL_SVM_OP_SET_ATTR, sizeof(_a) / sizeof(_a[0]), _a); })

/* GET_ATTR of the 4 common attributes and the access of both GPUs */
struct svm_get {
	uint32_t pref, prefetch, set, clr, gran, acc0, acc1;
};

static long svm_get(int kfd, uint64_t f, uint64_t n, struct svm_get *g)
{
	struct kfd_ioctl_svm_attribute a[] = {
		{ A_PREF, 0 }, { A_PREFETCH, 0 }, { A_SET, 0 }, { A_CLR, 0 }, { A_GRAN, 0 },
		{ A_ACC, gpus[0].id }, { A_ACC, gpus[1].id },
	};
	long rc = svm_op(kfd, f, n, KFD_IOCTL_SVM_OP_GET_ATTR, 7, a);

	*g = (struct svm_get){ a[0].value, a[1].value, a[2].value, a[3].value, a[4].value,
			       a[5].type, a[6].type };
	return rc;
}

static void test_svm(__attribute__((unused)) void *unused)
{
	const uint32_t def = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;
	uint32_t g0 = gpus[0].id, g1 = gpus[1].id;
	struct kfd_ioctl_svm_attribute at[2];
	struct kfd_ioctl_set_xnack_mode_args x;
	struct svm_buf b;
	struct svm_get g;
	int render[MAX_GPUS], kfd;
	uint64_t h, off;
	pid_t me = getpid();
	void *m;
	long rc;
	int n;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (!ok(kfd >= 0 && acquire_all(kfd, render) == 0, "SVM: /dev/kfd, ACQUIRE_VM"))
		return;
	m = mmap((void *)SVM_ADDR, 128 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ok(m == (void *)SVM_ADDR, "SVM: 128 pages of anonymous memory at 0x%llx", SVM_ADDR);

	memset(&b, 0, sizeof(b));
	b.a.start_addr = SVM_ADDR;
	b.a.size = PAGE + 1;
	ok_errno(ioctl(kfd, SVM_CMD(0), &b), EINVAL, "SVM: size not page aligned: EINVAL");
	b.a.size = 0;
	ok_errno(ioctl(kfd, SVM_CMD(0), &b), EINVAL, "SVM: size 0: EINVAL");
	b.a.size = PAGE;
	b.a.start_addr = 0;
	ok_errno(ioctl(kfd, SVM_CMD(0), &b), EINVAL, "SVM: start 0: EINVAL");
	b.a.start_addr = SVM_ADDR;
	b.a.nattr = 1;
	b.at[0] = (struct kfd_ioctl_svm_attribute){ A_GRAN, 3 };
	ok_errno(ioctl(kfd, AMDKFD_IOC_SVM, &b), EINVAL,
		 "SVM: cmd size 24 with nattr 1 (size validator): EINVAL");
	b.a.op = 2;
	errno = 0;
	rc = ioctl(kfd, SVM_CMD(1), &b);
	ok(rc == EINVAL && errno == 0, "SVM: op 2 returns a positive EINVAL (22), as svm_ioctl() (rc %ld)", rc);
	ok_errno(SVM_SET(kfd, 0, 1, { 8, 0 }), EINVAL, "SVM SET: attribute type 8: EINVAL");
	ok_errno(SVM_SET(kfd, 0, 1, { A_PREF, 1 }), EINVAL, "SVM SET: PREFERRED_LOC unknown gpu: EINVAL");
	ok_errno(SVM_SET(kfd, 0, 1, { A_PREFETCH, UNDEF }), EINVAL,
		 "SVM SET: PREFETCH_LOC undefined: EINVAL");
	ok_errno(SVM_SET(kfd, 0, 1, { A_NOACC, 1 }), EINVAL, "SVM SET: NO_ACCESS unknown gpu: EINVAL");
	ok_errno(SVM_SET(kfd, 1000, 1, { A_GRAN, 1 }), EFAULT, "SVM SET: memory without VMA: EFAULT");
	ok_errno(svm_get(kfd, 1000, 1, &g), EFAULT, "SVM GET: memory without VMA: EFAULT");
	at[0] = (struct kfd_ioctl_svm_attribute){ A_AIP, g0 };
	ok_errno(svm_op(kfd, 0, 1, KFD_IOCTL_SVM_OP_GET_ATTR, 1, at), EINVAL,
		 "SVM GET: ACCESS_IN_PLACE as query: EINVAL");
	at[0] = (struct kfd_ioctl_svm_attribute){ A_ACC, 1 };
	ok_errno(svm_op(kfd, 0, 1, KFD_IOCTL_SVM_OP_GET_ATTR, 1, at), EINVAL,
		 "SVM GET: ACCESS of an unknown gpu: EINVAL");
	ok(svm_get(kfd, 0, 64, &g) == 0 && g.pref == UNDEF && g.prefetch == UNDEF && g.set == def &&
	   g.clr == ~def && g.gran == 9 && g.acc0 == A_NOACC && g.acc1 == A_NOACC,
	   "SVM GET without ranges: defaults (undefined locations, HOST_ACCESS|COHERENT, granularity 9, no access)");

	ok(SVM_SET(kfd, 0, 64, { A_PREF, g0 }, { A_ACC, g0 }, { A_AIP, g1 },
		   { A_SET, KFD_IOCTL_SVM_FLAG_GPU_RO }, { A_GRAN, 100 }) == 0 &&
	   proc_state(me, "svm_ranges") == 1, "SVM SET pages 0-63: one range");
	ok(svm_get(kfd, 0, 64, &g) == 0 && g.pref == g0 && g.prefetch == UNDEF &&
	   g.set == (def | KFD_IOCTL_SVM_FLAG_GPU_RO) && g.gran == 63 && g.acc0 == A_ACC && g.acc1 == A_AIP,
	   "SVM GET: the attributes (granularity 100 stored as 63, access per GPU)");
	ok(SVM_SET(kfd, 16, 16, { A_PREF, 0 }, { A_NOACC, g1 }, { A_CLR, KFD_IOCTL_SVM_FLAG_HOST_ACCESS }) == 0 &&
	   proc_state(me, "svm_ranges") == 3, "SVM SET pages 16-31: the range is split in 3");
	ok(svm_get(kfd, 16, 16, &g) == 0 && g.pref == 0 && g.acc1 == A_NOACC && g.acc0 == A_ACC &&
	   g.set == (KFD_IOCTL_SVM_FLAG_COHERENT | KFD_IOCTL_SVM_FLAG_GPU_RO),
	   "SVM GET pages 16-31: the new attributes");
	ok(svm_get(kfd, 0, 64, &g) == 0 && g.pref == UNDEF && g.acc0 == A_ACC && g.acc1 == A_NOACC &&
	   g.set == (KFD_IOCTL_SVM_FLAG_COHERENT | KFD_IOCTL_SVM_FLAG_GPU_RO) &&
	   g.clr == ~(def | KFD_IOCTL_SVM_FLAG_GPU_RO),
	   "SVM GET pages 0-63: preferred differs (undefined), flags AND / complement of OR");
	ok(SVM_SET(kfd, 48, 32, { A_PREF, g1 }) == 0 && proc_state(me, "svm_ranges") == 5,
	   "SVM SET pages 48-79: tail split, new range for 64-79 (5 ranges)");
	ok(SVM_SET(kfd, 0, 8, { A_ACC, g0 }) == 0 && proc_state(me, "svm_ranges") == 5,
	   "SVM SET of unchanged attributes on a mapped range: no split");
	ok(SVM_SET(kfd, 64, 8, { A_PREF, g1 }) == 0 && proc_state(me, "svm_ranges") == 6,
	   "SVM SET of unchanged attributes on a range never mapped: split (as svm_range_add)");
	ok(svm_get(kfd, 100, 4, &g) == 0 && g.gran == 9 && g.pref == UNDEF,
	   "SVM GET of pages outside every range: defaults");

	off = 0;
	ok_errno(kfd_alloc(kfd, g0, SVM_ADDR + 4 * PAGE, PAGE, F_GTT | F_RW, &h, &off), EADDRINUSE,
		 "ALLOC at a VA inside an SVM range: EADDRINUSE");
	off = SVM_ADDR;
	ok_errno(kfd_alloc(kfd, g0, 0x7f0000000000ULL, PAGE, F_USERPTR | F_RW, &h, &off), EADDRINUSE,
		 "ALLOC userptr of memory inside an SVM range: EADDRINUSE");
	ok(kfd_alloc(kfd, g0, SVM_ADDR + 120 * PAGE, 2 * PAGE, F_GTT | F_RW, &h, NULL) == 0 &&
	   kfd_map(kfd, h, &g0, 1) == 0, "GTT BO mapped at the GPU VA of pages 120-121");
	ok_errno(SVM_SET(kfd, 118, 4, { A_GRAN, 2 }), EADDRINUSE,
		 "SVM SET over a BO mapping of a GPU VM: EADDRINUSE");
	ok_errno(svm_get(kfd, 121, 1, &g), EADDRINUSE, "SVM GET over a BO mapping: EADDRINUSE");

	x.xnack_enabled = 1;
	if (ioctl(kfd, AMDKFD_IOC_SET_XNACK_MODE, &x) == 0) {
		ok(SVM_SET(kfd, 96, 8, { A_GRAN, 5 }) == 0 && svm_get(kfd, 96, 8, &g) == 0 &&
		   g.acc0 == A_ACC && g.acc1 == A_ACC && g.gran == 5,
		   "XNACK on: a new range is accessible by every GPU");
		x.xnack_enabled = 0;
		ok(ioctl(kfd, AMDKFD_IOC_SET_XNACK_MODE, &x) == 0, "XNACK off again (ranges reserve memory)");
	} else {
		ok(1, "XNACK on: a new range is accessible by every GPU # SKIP XNACK not supported");
		ok(1, "XNACK off again # SKIP");
	}

	/* CPU unmaps take their pages out of the ranges (svm_range_unmap_from_cpu) */
	n = proc_state(me, "svm_ranges");
	ok(munmap((void *)(SVM_ADDR + 20 * PAGE), 8 * PAGE) == 0 &&
	   proc_state(me, "svm_ranges") == n + 1,
	   "munmap of pages 20-27: the range of pages 16-31 is cut in two (%d ranges)", n + 1);
	ok(munmap((void *)(SVM_ADDR + 64 * PAGE), 16 * PAGE) == 0 &&
	   proc_state(me, "svm_ranges") == n - 1,
	   "munmap of pages 64-79: their two ranges are gone (%d ranges)", n - 1);
	m = mmap((void *)(SVM_ADDR + 20 * PAGE), 8 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ok(m == (void *)(SVM_ADDR + 20 * PAGE) && svm_get(kfd, 20, 8, &g) == 0 &&
	   g.pref == UNDEF && g.gran == 9 && svm_get(kfd, 16, 4, &g) == 0 && g.pref == 0,
	   "pages 20-27 mapped again: no range (defaults); pages 16-19 keep theirs");
	off = SVM_ADDR + 20 * PAGE;
	ok(kfd_alloc(kfd, g0, 0x7f0000000000ULL, 8 * PAGE, F_USERPTR | F_RW, &h, &off) == 0,
	   "ALLOC userptr of the memory mapped again there: no longer EADDRINUSE");
}

/* App S: SVM ranges only; the dumper checkpoints it */
static int ssock[2], sgo[2];

static void svm_app(__attribute__((unused)) void *unused)
{
	uint32_t g0 = gpus[0].id, g1 = gpus[1].id;
	int kfd, ok_all = 1;
	char c;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	ok_all &= mmap((void *)SVM_ADDR, 32 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == (void *)SVM_ADDR;
	ok_all &= SVM_SET(kfd, 0, 32, { A_PREF, g0 }, { A_ACC, g0 }, { A_AIP, g1 },
			  { A_SET, KFD_IOCTL_SVM_FLAG_GPU_RO }, { A_GRAN, 4 }) == 0;
	ok_all &= SVM_SET(kfd, 8, 8, { A_PREFETCH, g1 }, { A_CLR, KFD_IOCTL_SVM_FLAG_COHERENT }) == 0;
	ok(ok_all, "SVM app: pages 0-31 with attributes, pages 8-15 prefetched to GPU 1 and not COHERENT");
	send_fd(ssock[1], kfd);
	if (read(sgo[0], &c, 1) != 1)
		_exit(1);
}

struct svm_ck {
	struct kfd_ioctl_criu_args a;
	struct kfd_criu_device_bucket devs[2];
	uint8_t priv[1024];
};

static struct svm_ck *sck;	/* shared */

static void svm_restore_child(void *arg)
{
	int mapped = arg != NULL, kfd, render[2], i, ok_all;
	struct kfd_criu_device_bucket devs[2];
	struct kfd_ioctl_criu_args a;
	struct svm_get g;
	char c = 'r';

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	for (i = 0; i < 2; i++) {
		render[i] = open_render(i);
		devs[i] = (struct kfd_criu_device_bucket){ gpus[i].id, gpus[1 - i].id, 0, 0 };
	}
	devs[0].drm_fd = render[1];
	devs[1].drm_fd = render[0];
	if (mapped)
		mmap((void *)SVM_ADDR, 32 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	a = sck->a;
	a.devices = (uintptr_t)devs;
	a.bos = 0;
	a.priv_data = (uintptr_t)sck->priv;
	a.priv_data_size -= 8;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESTORE), EINVAL,
		 "SVM RESTORE: last range object does not fit (priv_data_size - 8): EINVAL");
	close(kfd);
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);	/* the same process: not restorable again */
	a.priv_data_size += 8;
	ok_errno(criu(kfd, &a, KFD_CRIU_OP_RESTORE), EINVAL, "SVM RESTORE again on that process: EINVAL");
	/* a fresh process for the good restore */
	if (fork() == 0) {
		int k = open("/dev/kfd", O_RDWR | O_CLOEXEC), r[2];

		for (i = 0; i < 2; i++)
			r[i] = open_render(i);
		devs[0].drm_fd = r[1];
		devs[1].drm_fd = r[0];
		ok(criu(k, &a, KFD_CRIU_OP_RESTORE) == 0, "SVM RESTORE onto the swapped GPUs%s",
		   mapped ? "" : " (memory not mapped)");
		ok(proc_state(getpid(), "svm_pending") == 3 && proc_state(getpid(), "svm_ranges") == 0,
		   "after RESTORE: 3 ranges pending, none applied");
		sh->svm_pid = getpid();
		if (write(rpipe[1], &c, 1) != 1 || read(rgo[0], &c, 1) != 1)
			_exit(1);
		if (mapped) {
			ok_all = proc_state(getpid(), "svm_ranges") == 3 &&
				 proc_state(getpid(), "svm_pending") == 0;
			ok(ok_all, "after RESUME: 3 ranges applied, none pending");
			ok(svm_get(k, 16, 16, &g) == 0 && g.pref == gpus[0].id &&
			   g.set == (KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT |
				     KFD_IOCTL_SVM_FLAG_GPU_RO) &&
			   g.gran == 4 && g.acc0 == A_ACC && g.acc1 == A_AIP && g.prefetch == UNDEF,
			   "restored pages 16-31: preferred GPU 0 (user id), flags, granularity, access, prefetch undefined");
			ok(svm_get(k, 8, 8, &g) == 0 && g.prefetch == gpus[1].id &&
			   g.set == (KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_GPU_RO),
			   "restored pages 8-15: prefetch GPU 1, COHERENT cleared by the appended CLR_FLAGS");
		} else {
			ok(proc_state(getpid(), "svm_ranges") == 0 &&
			   proc_state(getpid(), "svm_pending") == 0,
			   "after the failed RESUME: no ranges, pending list emptied");
		}
		fflush(stdout);
		_exit(0);
	}
	wait(NULL);
}

static void test_svm_criu(int own_kfd)
{
	uint32_t g0 = gpus[0].id, g1 = gpus[1].id, type, u32;
	uint64_t rec = 24 + 8 * (4 + 2), want[3][2] = { { 16, 16 }, { 0, 8 }, { 8, 8 } }, u64;
	struct kfd_ioctl_criu_args a = { 0 };
	struct kfd_criu_bo_bucket dummy;
	pid_t app, r;
	int kfd, i, all, st;
	uint8_t *o;
	char c = 'x';

	sck = mmap(NULL, sizeof(*sck), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, ssock) || pipe(sgo))
		return;
	fflush(stdout);
	app = fork();
	if (app == 0) {
		svm_app(NULL);
		fflush(stdout);
		_exit(0);
	}
	kfd = recv_fd(ssock[0]);
	ok(kfd >= 0 && ptrace(PTRACE_SEIZE, app, 0, 0) == 0, "SVM dump: the app's fd, PTRACE_SEIZE");
	ok(criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO) == 0 && a.num_objects == 3 && a.num_bos == 0 &&
	   a.priv_data_size == 8 + 16 + 3 * rec,
	   "PROCESS_INFO: 3 SVM objects, priv_data_size 8 + 16 + 3 * (24 + 8 * (4 + 2)) (%llu)",
	   (unsigned long long)a.priv_data_size);
	sck->a = a;
	a.devices = (uintptr_t)sck->devs;
	a.bos = (uintptr_t)&dummy;
	a.priv_data = (uintptr_t)sck->priv;
	ok(a.priv_data_size <= sizeof(sck->priv) && criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT) == 0,
	   "CHECKPOINT of the SVM app");
	all = 1;
	for (i = 0; i < 3; i++) {
		o = sck->priv + 24 + i * rec;
		memcpy(&type, o, 4);
		memcpy(&u64, o + 8, 8);
		all &= type == 2 && u64 == (SVM_ADDR >> 12) + want[i][0];
		memcpy(&u64, o + 16, 8);
		all &= u64 == want[i][1];
	}
	ok(all, "SVM objects: type 2, start and size in pages, in the kernel's list order (16-31, 0-7, 8-15)");
	o = sck->priv + 24 + 2 * rec + 24;
	{
		uint32_t w[12] = { A_PREF, g0, A_PREFETCH, g1, A_SET,
				   KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_GPU_RO,
				   A_GRAN, 4, A_ACC, g0, A_AIP, g1 };

		all = 1;
		for (i = 0; i < 12; i++) {
			memcpy(&u32, o + 4 * i, 4);
			all &= u32 == w[i];
		}
	}
	ok(all, "SVM object 8-15: PREFERRED, PREFETCH, SET_FLAGS, GRANULARITY, then ACCESS/ACCESS_IN_PLACE per pdd with user ids");
	o = sck->priv + 24 + 24;
	memcpy(&u32, o + 12, 4);
	ok(u32 == UNDEF, "SVM object 16-31: PREFETCH_LOC undefined");
	ok(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0, "UNPAUSE the SVM app");
	ptrace(PTRACE_DETACH, app, 0, 0);
	if (write(sgo[1], &c, 1) != 1)
		kill(app, SIGKILL);
	waitpid(app, &st, 0);
	close(kfd);

	/* restore twice: memory not mapped at RESUME (EFAULT), then mapped */
	for (i = 0; i < 2; i++) {
		if (pipe(rpipe) || pipe(rgo))
			return;
		fflush(stdout);
		r = fork();
		if (r == 0) {
			svm_restore_child(i ? (void *)1 : NULL);
			fflush(stdout);
			_exit(0);
		}
		if (read(rpipe[0], &c, 1) != 1)
			return;
		/* the grandchild is the restored process: find it by its pipe */
		memset(&a, 0, sizeof(a));
		a.pid = sh->svm_pid;
		if (i == 0) {
			ok_errno(criu(own_kfd, &a, KFD_CRIU_OP_RESUME), EFAULT,
				 "RESUME: SVM range without memory: EFAULT");
			ok(criu(own_kfd, &a, KFD_CRIU_OP_RESUME) == 0,
			   "RESUME again: the pending list was dropped, the rest of RESUME runs");
		} else {
			ok(criu(own_kfd, &a, KFD_CRIU_OP_RESUME) == 0, "RESUME applies the SVM ranges");
		}
		c = 'g';
		if (write(rgo[1], &c, 1) != 1)
			return;
		waitpid(r, &st, 0);
	}
}

/* ---- 6. dma-buf import (7.12) ------------------------------------------------ */

static int dsock[2], dgo[2];

static int fill_dmabuf(int fd, uint64_t size, char c, int check)
{
	char *m = mmap(NULL, size, PROT_READ | (check ? 0 : PROT_WRITE), MAP_SHARED, fd, 0);
	uint64_t i;
	int good = m != MAP_FAILED;

	for (i = 0; good && i < size; i++) {
		if (check)
			good = m[i] == c;
		else
			m[i] = c;
	}
	if (m != MAP_FAILED)
		munmap(m, size);
	return good;
}

static int export_bo(int kfd, uint64_t h, uint32_t flags)
{
	struct kfd_ioctl_export_dmabuf_args e = { .handle = h, .flags = flags };

	return ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &e) ? -1 : (int)e.dmabuf_fd;
}

static int import_fd(int kfd, uint32_t gpu, uint64_t va, int fd, uint64_t *h)
{
	struct kfd_ioctl_import_dmabuf_args a = { .va_addr = va, .gpu_id = gpu, .dmabuf_fd = fd };
	int rc = ioctl(kfd, AMDKFD_IOC_IMPORT_DMABUF, &a);

	*h = a.handle;
	return rc;
}

/* Another process: a GTT BO on GPU 1 filled with 'X', exported, then it exits */
static void dmabuf_exporter(__attribute__((unused)) void *unused)
{
	int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC), render[MAX_GPUS], fd;
	uint64_t h, off = 0;
	char *m;

	if (kfd < 0 || acquire_all(kfd, render) ||
	    kfd_alloc(kfd, gpus[1].id, 0x900000000ULL, PAGE, F_GTT | F_RW, &h, &off))
		_exit(1);
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, render[1], off);
	if (m == MAP_FAILED)
		_exit(1);
	memset(m, 'X', PAGE);
	fd = export_bo(kfd, h, O_RDWR);
	send_fd(dsock[1], fd);
}

static void dmabuf_app(__attribute__((unused)) void *unused)
{
	uint32_t g0 = gpus[0].id, g1 = gpus[1].id;
	struct kfd_ioctl_get_dmabuf_info_args gi;
	int kfd, render[MAX_GPUS], e0, ex, pfd[2];
	uint64_t h0, h, off = 0;
	char meta[16], *m, c;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (!ok(kfd >= 0 && acquire_all(kfd, render) == 0, "dma-buf app: /dev/kfd, ACQUIRE_VM"))
		_exit(1);
	ok(kfd_alloc(kfd, g0, 0x800000000ULL, 2 * PAGE,
		     F_VRAM | F_RW | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, &h0, &off) == 0,
	   "dma-buf app: public VRAM BO on GPU 0");
	m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, render[0], off);
	if (m != MAP_FAILED) {
		memset(m, 'A', 2 * PAGE);
		munmap(m, 2 * PAGE);
	}
	e0 = export_bo(kfd, h0, O_RDWR);
	run_child(dmabuf_exporter, NULL);
	ex = recv_fd(dsock[0]);
	ok(e0 >= 0 && ex >= 0, "dma-bufs: own VRAM BO, and a GTT BO of another process that exited");

	memset(&gi, 0, sizeof(gi));
	gi.dmabuf_fd = e0;
	gi.metadata_ptr = (uintptr_t)meta;
	gi.metadata_size = sizeof(meta);
	ok(ioctl(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &gi) == 0 && gi.size == 2 * PAGE &&
	   gi.flags == (F_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) && gi.gpu_id == g0 &&
	   gi.metadata_size == 0,
	   "GET_DMABUF_INFO: size, VRAM|PUBLIC, exporter gpu_id, no metadata");
	memset(&gi, 0, sizeof(gi));
	gi.dmabuf_fd = ex;
	ok(ioctl(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &gi) == 0 && gi.size == PAGE &&
	   gi.flags == F_GTT && gi.gpu_id == g1,
	   "GET_DMABUF_INFO of the other process's dma-buf: GTT on GPU 1");
	gi.dmabuf_fd = 999;
	ok_errno(ioctl(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &gi), EBADF, "GET_DMABUF_INFO of a closed fd: EBADF");
	if (pipe(pfd) == 0) {
		gi.dmabuf_fd = pfd[0];
		ok_errno(ioctl(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &gi), EINVAL,
			 "GET_DMABUF_INFO of a pipe: EINVAL");
		ok_errno(import_fd(kfd, g0, 0x840000000ULL, pfd[0], &h), EINVAL, "IMPORT of a pipe: EINVAL");
	}
	ok_errno(import_fd(kfd, 1, 0x840000000ULL, e0, &h), EINVAL, "IMPORT on an unknown gpu: EINVAL");
	ok_errno(import_fd(kfd, g0, 0x840000000ULL, 999, &h), EBADF, "IMPORT of a closed fd: EBADF");
	ok(import_fd(kfd, g0, 0x810000000ULL, e0, &h) == 0 && h == (((uint64_t)g0 << 32) | 1) &&
	   kfd_map(kfd, h, &g0, 1) == 0,
	   "IMPORT of the own VRAM dma-buf on GPU 0: handle index 1, mapped");
	ok(import_fd(kfd, g1, 0x820000000ULL, e0, &h) == 0 && h == ((uint64_t)g1 << 32) &&
	   kfd_map(kfd, h, &g1, 1) == 0, "IMPORT of it on GPU 1 (another device)");
	ok(import_fd(kfd, g0, 0x830000000ULL, ex, &h) == 0 && h == (((uint64_t)g0 << 32) | 2),
	   "IMPORT of the other process's dma-buf on GPU 0");
	close(ex);
	send_fd(sock[1], kfd);
	send_fd(sock[1], e0);
	if (read(dgo[0], &c, 1) != 1)
		_exit(1);
}

static void dmabuf_restore(void *arg)
{
	struct kfd_ioctl_criu_args *ca = arg;
	struct kfd_criu_device_bucket devs[2];
	struct kfd_criu_bo_bucket *bos = (void *)(uintptr_t)ca->bos;
	struct kfd_ioctl_criu_args a = *ca;
	int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC), i;

	for (i = 0; i < 2; i++)
		devs[i] = (struct kfd_criu_device_bucket){ gpus[i].id, gpus[i].id, open_render(i), 0 };
	a.devices = (uintptr_t)devs;
	ok(criu(kfd, &a, KFD_CRIU_OP_RESTORE) == 0, "RESTORE of the importing process");
	ok(fill_dmabuf(bos[1].dmabuf_fd, 2 * PAGE, 'A', 0) && fill_dmabuf(bos[1].dmabuf_fd, 2 * PAGE, 'B', 0),
	   "restored import: written through its new dma-buf");
}

static void test_dmabuf(void)
{
	struct kfd_ioctl_criu_args a = { 0 };
	struct kfd_criu_device_bucket devs[2];
	struct kfd_criu_bo_bucket bos[8];
	uint8_t priv[4096];
	uint32_t want[4][2] = {
		{ F_VRAM | F_RW | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, 2 * PAGE },
		{ F_VRAM | F_RW, 2 * PAGE }, { F_GTT | F_RW, PAGE }, { F_GTT | F_RW, 2 * PAGE },
	};
	int kfd, e0, i, all, st;
	pid_t app;
	char c = 'x';

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, dsock) || pipe(dgo))
		return;
	fflush(stdout);
	app = fork();
	if (app == 0) {
		dmabuf_app(NULL);
		fflush(stdout);
		_exit(0);
	}
	kfd = recv_fd(sock[0]);
	e0 = recv_fd(sock[0]);
	ok(kfd >= 0 && ptrace(PTRACE_SEIZE, app, 0, 0) == 0 &&
	   criu(kfd, &a, KFD_CRIU_OP_PROCESS_INFO) == 0 && a.num_bos == 4 &&
	   a.priv_data_size <= sizeof(priv),
	   "PROCESS_INFO of the importing process: 4 BOs (%u)", a.num_bos);
	a.devices = (uintptr_t)devs;
	a.bos = (uintptr_t)bos;
	a.priv_data = (uintptr_t)priv;
	ok(criu(kfd, &a, KFD_CRIU_OP_CHECKPOINT) == 0, "CHECKPOINT of the importing process");
	all = 1;
	for (i = 0; i < 4; i++)
		all &= bos[i].alloc_flags == want[i][0] && bos[i].size == want[i][1] &&
		       bos[i].dmabuf_fd != KFD_INVALID_FD;
	ok(all, "imported BOs checkpointed like own ones: VRAM or GTT by exporter domain (GTT across devices) + WRITABLE|EXECUTABLE, dma-buf fds");
	ok(fill_dmabuf(bos[1].dmabuf_fd, 2 * PAGE, 'A', 1) && fill_dmabuf(bos[2].dmabuf_fd, PAGE, 'X', 1) &&
	   fill_dmabuf(bos[3].dmabuf_fd, 2 * PAGE, 'A', 1),
	   "their dma-bufs show the exporters' contents");
	ok(criu(kfd, &a, KFD_CRIU_OP_UNPAUSE) == 0, "UNPAUSE");
	run_child(dmabuf_restore, &a);
	ok(fill_dmabuf(e0, 2 * PAGE, 'A', 1), "the exporter's BO is unchanged: the restored import is a private copy");
	for (i = 0; i < 4; i++)
		close(bos[i].dmabuf_fd);
	ptrace(PTRACE_DETACH, app, 0, 0);
	if (write(dgo[1], &c, 1) != 1)
		kill(app, SIGKILL);
	waitpid(app, &st, 0);
	close(kfd);
	close(e0);
}

/* ---- 7. UPDATE_QUEUE, SET_CU_MASK ------------------------------------------- */

static void test_update_queue(__attribute__((unused)) void *unused)
{
	struct kfd_ioctl_create_queue_args q;
	struct kfd_ioctl_update_queue_args u;
	struct kfd_ioctl_set_cu_mask_args cm;
	struct kfd_ioctl_unmap_memory_from_gpu_args um;
	uint32_t g0 = gpus[0].id, mask[64];
	int render[MAX_GPUS], kfd;
	pid_t me = getpid();
	struct qbufs b;
	uint64_t h2 = 0;
	char *pg;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (!ok(kfd >= 0 && acquire_all(kfd, render) == 0 &&
		make_qbufs(kfd, 0, 0x100000000ULL, &b) == 0, "UPDATE_QUEUE: queue buffers"))
		return;
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0 && proc_state(me, "running") == 1,
	   "an AQL queue runs");
#define UQ(ring_, size_, pct, prio) (u = (struct kfd_ioctl_update_queue_args){ \
	.ring_base_address = (ring_), .queue_id = q.queue_id, .ring_size = (size_), \
	.queue_percentage = (pct), .queue_priority = (prio) }, ioctl(kfd, AMDKFD_IOC_UPDATE_QUEUE, &u))
	ok_errno(UQ(b.ring, PAGE, 101, 7), EINVAL, "UPDATE_QUEUE percentage 101: EINVAL");
	ok_errno(UQ(b.ring, PAGE, 100, 16), EINVAL, "UPDATE_QUEUE priority 16: EINVAL");
	ok_errno(UQ(b.ring, 3000, 100, 7), EINVAL, "UPDATE_QUEUE ring size not a power of 2: EINVAL");
	u.queue_id = 999;
	ok_errno((u.ring_size = PAGE, ioctl(kfd, AMDKFD_IOC_UPDATE_QUEUE, &u)), EFAULT,
		 "UPDATE_QUEUE of an unknown queue: EFAULT");
	ok_errno(UQ(0x7000000000ULL, PAGE, 100, 7), EFAULT, "UPDATE_QUEUE ring not mapped on the GPU: EFAULT");
	ok_errno(UQ(b.ring, 2 * PAGE, 100, 7), EFAULT, "UPDATE_QUEUE ring size != its mapping: EFAULT");
	ok(UQ(b.ring, PAGE, 0, 7) == 0 && proc_state(me, "running") == 0,
	   "UPDATE_QUEUE percentage 0: the queue stops");
	ok(UQ(0, 0, 100, 3) == 0 && proc_state(me, "running") == 0 && u.ring_size == 0,
	   "UPDATE_QUEUE ring 0 disables it; ring_size raised inside but not written back (write-only ioctl)");
	ok(kfd_alloc(kfd, g0, 0x180000000ULL, 2 * PAGE, F_GTT | F_RW, &h2, NULL) == 0 &&
	   kfd_map(kfd, h2, &g0, 1) == 0, "a new 8 KiB ring BO");
	ok(UQ(0x180000000ULL, 2 * PAGE, 50, 3) == 0 && proc_state(me, "running") == 1,
	   "UPDATE_QUEUE onto the new ring: runs again");
	um = (struct kfd_ioctl_unmap_memory_from_gpu_args){ .handle = h2,
		.device_ids_array_ptr = (uintptr_t)&g0, .n_devices = 1 };
	ok_errno(ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &um), EBUSY, "UNMAP of the new ring: EBUSY");
	um.handle = b.h[0];
	um.n_success = 0;
	ok(ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &um) == 0,
	   "UNMAP of the old ring: allowed (the queue let it go)");

	memset(mask, 0xFF, sizeof(mask));
	cm = (struct kfd_ioctl_set_cu_mask_args){ .queue_id = q.queue_id, .num_cu_mask = 0,
						  .cu_mask_ptr = (uintptr_t)mask };
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm), EINVAL, "SET_CU_MASK of 0 bits: EINVAL");
	cm.num_cu_mask = 33;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm), EINVAL, "SET_CU_MASK of 33 bits: EINVAL");
	cm.num_cu_mask = 64;
	cm.cu_mask_ptr = 8;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm), EFAULT, "SET_CU_MASK bad pointer: EFAULT");
	cm.cu_mask_ptr = (uintptr_t)mask;
	cm.queue_id = 999;
	ok_errno(ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm), EFAULT, "SET_CU_MASK unknown queue: EFAULT");
	pg = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pg != MAP_FAILED && !mprotect(pg + PAGE, PAGE, PROT_NONE)) {
		cm.queue_id = q.queue_id;
		cm.num_cu_mask = 4096;
		cm.cu_mask_ptr = (uintptr_t)(pg + PAGE - 128);
		ok(ioctl(kfd, AMDKFD_IOC_SET_CU_MASK, &cm) == 0 && proc_state(me, "cu_masked") == 1,
		   "SET_CU_MASK of 4096 bits reads only the first 1024 (128 bytes before a PROT_NONE page)");
	} else {
		ok(0, "mmap/mprotect for the CU mask test");
	}
#undef UQ
}


/* ---- 8. what ROCr 6.x adds: event age, RUNTIME_ENABLE, SVM CWSR areas ---- */

#define CWSR_SVM_ADDR	0x710000000000ULL

/* WAIT_EVENTS on one event with @age as last_event_age; wait_result or -errno */
static int wait_age(int kfd, uint32_t id, uint64_t *age, uint32_t timeout)
{
	struct kfd_event_data ed = { .event_id = id };
	struct kfd_ioctl_wait_events_args w = { .events_ptr = (uintptr_t)&ed, .num_events = 1,
						.timeout = timeout };

	ed.signal_event_data.last_event_age = *age;
	if (ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w))
		return -errno;
	*age = ed.signal_event_data.last_event_age;
	return (int)w.wait_result;
}

static void test_event_age(int kfd)
{
	struct kfd_ioctl_create_event_args e = { .event_type = KFD_IOC_EVENT_SIGNAL, .auto_reset = 1 };
	struct kfd_ioctl_set_event_args se;
	uint64_t age, none = 0;
	int r;

	if (!ok(ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0, "event age: auto-reset signal event"))
		return;
	se.event_id = e.event_id;
	age = 1;
	r = wait_age(kfd, e.event_id, &age, 0);
	ok(r == KFD_IOC_WAIT_RESULT_TIMEOUT && age == 1,
	   "a new event's age is 1: waiting with age 1 times out, age kept (%d, %llu)", r,
	   (unsigned long long)age);
	r = ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se);
	age = 1;
	r = r ? -errno : wait_age(kfd, e.event_id, &age, 0);
	ok(r == KFD_IOC_WAIT_RESULT_COMPLETE && age == 2,
	   "SET_EVENT, then a wait with age 1: COMPLETE, age 2 written back (%d, %llu)", r,
	   (unsigned long long)age);
	r = wait_age(kfd, e.event_id, &age, 0);
	ok(r == KFD_IOC_WAIT_RESULT_TIMEOUT && age == 2,
	   "a wait with the age just seen times out (the signal was consumed)");
	/* the signal goes to a waiter without age: one with the old age still wakes */
	r = ioctl(kfd, AMDKFD_IOC_SET_EVENT, &se);
	r = r ? -errno : wait_age(kfd, e.event_id, &none, 0);
	ok(r == KFD_IOC_WAIT_RESULT_COMPLETE && none == 0,
	   "SET_EVENT taken by a wait without age (0): COMPLETE, nothing written back");
	age = 2;
	r = wait_age(kfd, e.event_id, &age, 120000);
	ok(r == KFD_IOC_WAIT_RESULT_COMPLETE && age == 3,
	   "a wait with the older age 2 completes at once, age 3 (%d, %llu)", r,
	   (unsigned long long)age);
	none = 0;
	ok(wait_age(kfd, e.event_id, &none, 0) == KFD_IOC_WAIT_RESULT_TIMEOUT,
	   "without age the consumed signal is gone: TIMEOUT");
	age = 5;
	r = ioctl(kfd, AMDKFD_IOC_RESET_EVENT, &se);
	r = r ? -errno : wait_age(kfd, e.event_id, &age, 0);
	ok(r == KFD_IOC_WAIT_RESULT_COMPLETE && age == 3,
	   "RESET_EVENT does not age it: a wait with age 5 completes, age 3 (%d, %llu)", r,
	   (unsigned long long)age);
	ioctl(kfd, AMDKFD_IOC_DESTROY_EVENT, &se);

	e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_MEMORY };
	if (ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0) {
		age = 7;
		r = wait_age(kfd, e.event_id, &age, 0);
		ok(r == KFD_IOC_WAIT_RESULT_TIMEOUT && age == 7,
		   "a memory event has no age: TIMEOUT, last_event_age left (%d, %llu)", r,
		   (unsigned long long)age);
		se.event_id = e.event_id;
		ioctl(kfd, AMDKFD_IOC_DESTROY_EVENT, &se);
	} else {
		ok(0, "memory event created");
	}
}

static void test_rocm6(__attribute__((unused)) void *unused)
{
	struct kfd_ioctl_runtime_enable_args re = { .mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK };
	struct kfd_ioctl_runtime_enable_args off = { .mode_mask = 0 };
	struct kfd_ioctl_destroy_queue_args dq = { 0 };
	struct kfd_ioctl_create_queue_args q;
	uint64_t size = gpus[0].total_cwsr, half = (size / PAGE / 2);
	uint32_t g0 = gpus[0].id, g1 = gpus[1].id;
	int render[MAX_GPUS], kfd;
	struct qbufs b;
	void *m;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (!ok(kfd >= 0 && acquire_all(kfd, render) == 0, "ROCr 6: /dev/kfd, ACQUIRE_VM"))
		return;
	test_event_age(kfd);

	ok(make_qbufs(kfd, 0, 0x100000000ULL, &b) == 0, "queue buffers allocated and mapped");
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0, "a queue on GPU 0");
	ok_errno(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &re), EEXIST,
		 "RUNTIME_ENABLE while a GPU has queues: EEXIST");
	dq.queue_id = q.queue_id;
	ok(ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0 &&
	   ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &re) == 0,
	   "RUNTIME_ENABLE once the queue is gone: 0");
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0 && (dq.queue_id = q.queue_id, 1) &&
	   ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0,
	   "queues come and go with the runtime enabled");
	ok(ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &off) == 0, "RUNTIME_ENABLE disable");

	/* libhsakmt 6.x: the CWSR area in anonymous memory, an always-mapped SVM range */
	m = mmap((void *)CWSR_SVM_ADDR, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (!ok(m == (void *)CWSR_SVM_ADDR, "anonymous memory for a CWSR area (%llu bytes)",
		(unsigned long long)size))
		return;
	fill_queue_args(&q, 0, &b, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	q.ctx_save_restore_address = CWSR_SVM_ADDR;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
		 "CWSR area in memory without an SVM range: EINVAL");
#define CWSR_SVM_SET(...) ({							\
	struct kfd_ioctl_svm_attribute _a[] = { __VA_ARGS__ };			\
	struct svm_buf _b;							\
	memset(&_b, 0, sizeof(_b));						\
	_b.a.start_addr = CWSR_SVM_ADDR;					\
	_b.a.size = size;							\
	_b.a.op = KFD_IOCTL_SVM_OP_SET_ATTR;					\
	_b.a.nattr = sizeof(_a) / sizeof(_a[0]);				\
	memcpy(_b.at, _a, sizeof(_a));						\
	ioctl(kfd, SVM_CMD(sizeof(_a) / sizeof(_a[0])), &_b); })
	ok(CWSR_SVM_SET({ A_ACC, g0 }) == 0, "SVM range with GPU 0 access, not always mapped");
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
		 "CWSR area in an SVM range without GPU_ALWAYS_MAPPED: EINVAL");
	ok(CWSR_SVM_SET({ A_NOACC, g0 }, { A_ACC, g1 },
			{ A_SET, KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED }) == 0,
	   "the range always mapped, accessible by GPU 1 only");
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
		 "a GPU 0 queue with its CWSR area there: EINVAL");
	ok(CWSR_SVM_SET({ A_ACC, g0 }) == 0, "GPU 0 access too");
	ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0,
	   "CWSR area in an always-mapped SVM range GPU 0 reaches: queue created");
	dq.queue_id = q.queue_id;
	ok(ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0, "... and destroyed");
	/* three ranges (a split) cover it just as well; one page beyond them does not */
	{
		struct svm_buf sb;

		memset(&sb, 0, sizeof(sb));
		sb.a.start_addr = CWSR_SVM_ADDR + half * PAGE;
		sb.a.size = PAGE;
		sb.a.op = KFD_IOCTL_SVM_OP_SET_ATTR;
		sb.a.nattr = 1;
		sb.at[0] = (struct kfd_ioctl_svm_attribute){ A_GRAN, 3 };
		ok(ioctl(kfd, SVM_CMD(1), &sb) == 0 && ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0 &&
		   (dq.queue_id = q.queue_id, 1) && ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq) == 0,
		   "the range split in three: the queue is still accepted");
	}
	q.ctx_save_restore_address = CWSR_SVM_ADDR + PAGE;
	ok_errno(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
		 "an area that runs one page past the ranges: EINVAL");
}

/* ---- user-mode SDMA queues execute ------------------------------------------ */

#define SQ_VA		0x500000000ULL
#define SQ_BYTES	8192

/* a GTT or VRAM BO of GPU 0 at @va, mapped there; CPU-mapped if @cpu */
static void *sq_bo(int kfd, int render, uint64_t va, uint64_t size, uint32_t flags,
		   uint64_t *handle)
{
	uint64_t off = 0;
	void *p;

	if (kfd_alloc(kfd, gpus[0].id, va, size, flags | F_RW, handle, &off) ||
	    kfd_map(kfd, *handle, &gpus[0].id, 1))
		return NULL;
	if (flags & F_VRAM)
		return (void *)1;	/* not read by the CPU */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, render, off);
	return p == MAP_FAILED ? NULL : p;
}

static uint32_t *sq_copy(uint32_t *p, uint64_t dst, uint64_t src, uint32_t bytes)
{
	*p++ = 1;			/* COPY, LINEAR */
	*p++ = bytes - 1;		/* SDMA v4: bytes - 1 */
	*p++ = 0;
	*p++ = (uint32_t)src;
	*p++ = src >> 32;
	*p++ = (uint32_t)dst;
	*p++ = dst >> 32;
	return p;
}

static uint32_t *sq_fence(uint32_t *p, uint64_t va, uint32_t v)
{
	*p++ = 5;
	*p++ = (uint32_t)va;
	*p++ = va >> 32;
	*p++ = v;
	return p;
}

/* waits up to @ms for *@v == @want */
static int sq_wait64(volatile uint64_t *v, uint64_t want, int ms)
{
	for (; ms > 0 && *v != want; ms -= 5)
		msleep(5);
	return *v == want;
}

/*
 * ROCr's BlitSdma sequence on a KFD SDMA queue, without ROCr: copies
 * GTT -> VRAM -> GTT, ATOMIC ADD64 -1 of a signal, FENCE of the event id
 * into its event-page slot, TRAP with the event id; WAIT_EVENTS returns.
 * Then an unknown opcode stops the queue: the read pointer stays there and
 * what follows is not run.
 */
static void test_sdma_queue(__attribute__((unused)) void *unused)
{
	struct kfd_ioctl_create_queue_args q;
	struct kfd_ioctl_create_event_args e;
	struct kfd_event_data ed = { 0 };
	struct kfd_ioctl_wait_events_args w = {
		.events_ptr = (uintptr_t)&ed, .num_events = 1, .wait_for_all = 1, .timeout = 5000,
	};
	volatile uint64_t *rptr, *wptr, *sig, *evslots;
	uint64_t h, h_ev, src_va = SQ_VA + 0x100000, vram_va = SQ_VA + 0x200000;
	uint64_t back_va = SQ_VA + 0x300000, sig_va = SQ_VA + 0x400000;
	uint64_t ev_va = SQ_VA + 0x500000, ring_va = SQ_VA, rp_va = SQ_VA + 0x600000;
	uint64_t wp_va = SQ_VA + 0x700000;
	int render[MAX_GPUS], kfd, i, bad;
	uint32_t *ring, *p, stop_at;
	uint8_t *src, *back;

	if (gpus[0].gfx < 90000) {
		ok(1, "# SKIP user-mode SDMA queue test: written for SDMA v4+ (gfx9+)");
		return;
	}
	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (!ok(kfd >= 0 && acquire_all(kfd, render) == 0, "sdma queue: /dev/kfd and VMs"))
		return;
	ring = sq_bo(kfd, render[0], ring_va, PAGE, F_GTT, &h);
	rptr = sq_bo(kfd, render[0], rp_va, PAGE, F_GTT, &h);
	wptr = sq_bo(kfd, render[0], wp_va, PAGE, F_GTT, &h);
	src = sq_bo(kfd, render[0], src_va, SQ_BYTES, F_GTT, &h);
	back = sq_bo(kfd, render[0], back_va, SQ_BYTES, F_GTT, &h);
	sig = sq_bo(kfd, render[0], sig_va, PAGE, F_GTT, &h);
	evslots = sq_bo(kfd, render[0], ev_va, 32768, F_GTT, &h_ev);
	if (!ok(ring && rptr && wptr && src && back && sig && evslots &&
		sq_bo(kfd, render[0], vram_va, SQ_BYTES, F_VRAM, &h),
		"sdma queue: ring, pointers, GTT and VRAM buffers, event page mapped on GPU 0"))
		return;
	e = (struct kfd_ioctl_create_event_args){ .event_type = KFD_IOC_EVENT_SIGNAL,
						  .auto_reset = 1, .event_page_offset = h_ev };
	if (!ok(ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e) == 0, "sdma queue: a signal event"))
		return;
	ed.event_id = e.event_id;
	for (i = 0; i < SQ_BYTES; i++) {
		src[i] = pattern(i, 5);
		back[i] = 0;
	}
	*sig = 1;
	memset(&q, 0, sizeof(q));
	q.ring_base_address = ring_va;
	q.ring_size = PAGE;
	q.read_pointer_address = rp_va;
	q.write_pointer_address = wp_va;
	q.gpu_id = gpus[0].id;
	q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
	q.queue_percentage = 100;
	q.queue_priority = 15;
	if (!ok(ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q) == 0, "sdma queue: CREATE_QUEUE SDMA"))
		return;

	p = sq_copy(ring, vram_va, src_va, SQ_BYTES);
	p = sq_copy(p, back_va, vram_va, SQ_BYTES);
	*p++ = 10 | 47u << 25;		/* ATOMIC ADD64 */
	*p++ = (uint32_t)sig_va;
	*p++ = sig_va >> 32;
	*p++ = 0xffffffff;		/* -1 */
	*p++ = 0xffffffff;
	*p++ = 0;
	*p++ = 0;
	*p++ = 0;
	p = sq_fence(p, ev_va + 8 * e.event_id, e.event_id);
	*p++ = 6;			/* TRAP */
	*p++ = e.event_id;
	__sync_synchronize();
	*wptr = (uint8_t *)p - (uint8_t *)ring;
	ok(ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w) == 0 && w.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE,
	   "sdma queue: the TRAP signals the event (WAIT_EVENTS result %u)", w.wait_result);
	ok(sq_wait64(rptr, *wptr, 2000), "sdma queue: read pointer written back (0x%llx, wptr 0x%llx)",
	   (unsigned long long)*rptr, (unsigned long long)*wptr);
	for (bad = 0, i = 0; i < SQ_BYTES; i++)
		bad += back[i] != pattern(i, 5);
	ok(!bad, "sdma queue: GTT -> VRAM -> GTT copies keep the bytes (%d wrong)", bad);
	ok(*sig == 0, "sdma queue: ATOMIC ADD64 -1: signal %llu", (unsigned long long)*sig);
	ok(evslots[e.event_id] == ~0ULL, "sdma queue: the event's slot is acknowledged (all ones)");

	/* an unknown opcode: the queue stops there */
	stop_at = *wptr;
	p = ring + stop_at / 4;
	*p++ = 0x7f;
	p = sq_fence(p, sig_va, 77);
	__sync_synchronize();
	*wptr = (uint8_t *)p - (uint8_t *)ring;
	msleep(200);
	ok(*rptr == stop_at && *sig == 0,
	   "sdma queue: an unknown opcode stops the queue (rptr 0x%llx at 0x%x), the FENCE after it not run",
	   (unsigned long long)*rptr, stop_at);
	close(kfd);
}

int main(void)
{
	pid_t app_pid;
	int kfd, app_kfd, st;
	char c = 'x';
	FILE *f;

	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	read_machine();
	if (n_gpus < 2 || access(DBG "/inject", W_OK)) {
		printf("1..0 # SKIP needs 2 GPUs and %s\n", DBG);
		return 0;
	}
	inject("clear");
	f = fopen(PARAM_BO, "r");
	if (f) {
		if (fscanf(f, "%u", &bo_rec) != 1)
			bo_rec = 272;
		fclose(f);
	}
	diag("GPUs %u (renderD%u) and %u (renderD%u); ctl_stack_size %u, cwsr_size %u",
	     gpus[0].id, gpus[0].minor, gpus[1].id, gpus[1].minor, gpus[0].ctl_stack, gpus[0].cwsr);

	run_child(test_queues, NULL);

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	ok(kfd >= 0, "dumper opens its own /dev/kfd");
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock) || pipe(go_pipe))
		return 1;
	fflush(stdout);
	app_pid = fork();
	if (app_pid == 0) {
		app(NULL);
		fflush(stdout);
		_exit(0);
	}
	app_kfd = recv_fd(sock[0]);
	app_pid_of_dump = app_pid;
	ok(app_kfd >= 0, "received the app's /dev/kfd fd");
	test_dump(app_kfd, app_pid);
	test_restore(kfd);
	test_double_info(app_kfd, app_pid);
	test_map_eintr(kfd);
	run_child(caps_child, NULL);
	run_child(caps_child, (void *)1);
	test_pidns();
	run_child(test_svm, NULL);
	test_svm_criu(kfd);
	test_dmabuf();
	run_child(test_update_queue, NULL);
	run_child(test_rocm6, NULL);
	run_child(test_sdma_queue, NULL);

	ptrace(PTRACE_DETACH, app_pid, 0, 0);
	if (write(go_pipe[1], &c, 1) != 1)
		kill(app_pid, SIGKILL);
	waitpid(app_pid, &st, 0);
	inject("clear");
	printf("1..%d\n", sh->n);
	return sh->failed ? 1 : 0;
}
