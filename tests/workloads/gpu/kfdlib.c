// SPDX-License-Identifier: MIT
/* kfdlib: see kfdlib.h */
#include "kfdlib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define TOPO "/sys/class/kfd/kfd/topology/nodes"

static int xioctl(int fd, unsigned long req, void *arg)
{
	int rc;

	do
		rc = ioctl(fd, req, arg);
	while (rc == -1 && (errno == EINTR || errno == EAGAIN));
	return rc ? -errno : 0;
}

const char *kfdl_type_name(enum kfdl_bo_type t)
{
	static const char *const n[] = {"VRAM", "GTT", "USERPTR", "DOORBELL", "MMIO"};

	return (unsigned)t < 5 ? n[t] : "?";
}

int kfdl_read_prop(uint32_t node, const char *key, uint64_t *v)
{
	char p[128], k[64];
	unsigned long long x;
	FILE *f;
	int rc = -ENOENT;

	snprintf(p, sizeof(p), TOPO "/%u/properties", node);
	f = fopen(p, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%63s %llu", k, &x) == 2)
		if (!strcmp(k, key)) {
			*v = x;
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

/* CWSR BO size as KFD and ROCr compute it: (cwsr_size + debug memory) * xcc */
static uint64_t total_cwsr(uint32_t node, const struct kfdl_gpu *g)
{
	uint64_t simd = 0, spc = 1, arrays = 0, sape = 1;
	uint32_t cu, arr, waves, dbg;

	kfdl_read_prop(node, "simd_count", &simd);
	kfdl_read_prop(node, "simd_per_cu", &spc);
	kfdl_read_prop(node, "array_count", &arrays);
	kfdl_read_prop(node, "simd_arrays_per_engine", &sape);
	if (!spc)
		spc = 1;
	if (!sape)
		sape = 1;
	cu = simd / spc / g->num_xcc;
	arr = arrays / g->num_xcc;
	waves = g->gfx < 100100 ? (cu * 40 < arr / sape * 512 ? cu * 40 : arr / sape * 512)
				: cu * 32;
	dbg = (waves * 32 + 63) & ~63u;
	return ((uint64_t)(g->cwsr_size + dbg) * g->num_xcc + KFDL_PAGE - 1) & ~(KFDL_PAGE - 1);
}

static int discover(struct kfdl *k)
{
	char p[128];
	unsigned long long id;
	uint32_t n;
	FILE *f;

	for (n = 0; n < 1024 && k->n_gpus < KFDL_MAX_GPUS; n++) {
		struct kfdl_gpu *g = &k->gpu[k->n_gpus];
		uint64_t v;
		int r;

		snprintf(p, sizeof(p), TOPO "/%u/gpu_id", n);
		f = fopen(p, "r");
		if (!f) {
			if (errno == ENOENT)
				break;
			continue; /* not accessible (device cgroup) */
		}
		r = fscanf(f, "%llu", &id);
		fclose(f);
		if (r != 1 || !id)
			continue;
		memset(g, 0, sizeof(*g));
		g->gpu_id = id;
		g->node = n;
		g->render_fd = -1;
		if (kfdl_read_prop(n, "drm_render_minor", &v) || !v)
			continue;
		g->minor = v;
		g->gfx = kfdl_read_prop(n, "gfx_target_version", &v) ? 0 : v;
		g->num_xcc = kfdl_read_prop(n, "num_xcc", &v) || !v ? 1 : v;
		g->ctl_stack_size = kfdl_read_prop(n, "ctl_stack_size", &v) ? 0 : v;
		g->cwsr_size = kfdl_read_prop(n, "cwsr_size", &v) ? 0 : v;
		g->total_cwsr = total_cwsr(n, g);
		k->n_gpus++;
	}
	return k->n_gpus ? 0 : -ENODEV;
}

int kfdl_open(struct kfdl *k)
{
	return kfdl_open_sel(k, NULL, 0);
}

int kfdl_open_sel(struct kfdl *k, const int *sel, int n_sel)
{
	struct kfdl_gpu all[KFDL_MAX_GPUS];
	int i, rc;

	memset(k, 0, sizeof(*k));
	k->kfd = -1;
	k->next_va = 0x100000000ULL;
	rc = discover(k);
	if (rc)
		return rc;
	k->n_visible = k->n_gpus;
	for (i = 0; i < k->n_gpus; i++)
		k->visible_ids[i] = k->gpu[i].gpu_id;
	if (n_sel > 0) {
		memcpy(all, k->gpu, sizeof(all));
		for (i = 0; i < n_sel; i++) {
			if (sel[i] < 0 || sel[i] >= k->n_visible)
				return -ENODEV;
			k->gpu[i] = all[sel[i]];
		}
		k->n_gpus = n_sel;
	}
	k->kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (k->kfd < 0)
		return -errno;
	for (i = 0; i < k->n_gpus; i++) {
		struct kfd_ioctl_acquire_vm_args a = {.gpu_id = k->gpu[i].gpu_id};
		char p[64];

		snprintf(p, sizeof(p), "/dev/dri/renderD%u", k->gpu[i].minor);
		k->gpu[i].render_fd = open(p, O_RDWR | O_CLOEXEC);
		if (k->gpu[i].render_fd < 0)
			return -errno;
		a.drm_fd = k->gpu[i].render_fd;
		rc = xioctl(k->kfd, AMDKFD_IOC_ACQUIRE_VM, &a);
		if (rc)
			return rc;
	}
	return 0;
}

int kfdl_nodes(struct kfdl_node *out, int max)
{
	char p[128];
	unsigned long long id;
	uint32_t n;
	int cnt = 0;
	FILE *f;

	for (n = 0; n < 1024 && cnt < max; n++) {
		uint64_t v;
		int r;

		snprintf(p, sizeof(p), TOPO "/%u/gpu_id", n);
		f = fopen(p, "r");
		if (!f) {
			if (errno == ENOENT)
				break;
			continue;
		}
		r = fscanf(f, "%llu", &id);
		fclose(f);
		if (r != 1 || !id)
			continue;
		memset(&out[cnt], 0, sizeof(out[cnt]));
		out[cnt].node = n;
		out[cnt].gpu_id = id;
		if (!kfdl_read_prop(n, "drm_render_minor", &v))
			out[cnt].minor = v;
		kfdl_read_prop(n, "device_id", &out[cnt].device_id);
		kfdl_read_prop(n, "hive_id", &out[cnt].hive_id);
		cnt++;
	}
	return cnt;
}

int kfdl_available_memory(struct kfdl *k, uint32_t gpu_id, uint64_t *avail)
{
	struct kfd_ioctl_get_available_memory_args a = {.gpu_id = gpu_id};
	int rc = xioctl(k->kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);

	if (!rc)
		*avail = a.available;
	return rc;
}

/* the MMIO_REMAP BO's page (HDP flush), as the ROCm thunk maps it: /dev/kfd
 * at its mmap_offset */
int kfdl_mmap_mmio(struct kfdl *k, struct kfdl_bo *bo)
{
	void *p;

	if (bo->type != KFDL_MMIO)
		return -EINVAL;
	/* at the BO's own VA, MAP_FIXED, as the thunk maps it */
	p = mmap((void *)(uintptr_t)bo->va, KFDL_PAGE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, k->kfd, bo->mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	bo->io = p;
	return 0;
}

void kfdl_close(struct kfdl *k)
{
	int i;

	for (i = 0; i < k->n_gpus; i++)
		if (k->gpu[i].render_fd >= 0)
			close(k->gpu[i].render_fd);
	if (k->kfd >= 0)
		close(k->kfd);
	k->kfd = -1;
}

/* atomic: the threads of --parallel-setup allocate at the same time (two
 * BOs at one VA made MAP fail with EINVAL, 1 round in 6 on a fast VM) */
uint64_t kfdl_va(struct kfdl *k, uint64_t size)
{
	return __atomic_fetch_add(&k->next_va, (size + 0x1FFFFF) & ~0x1FFFFFULL, __ATOMIC_RELAXED);
}

int kfdl_alloc(struct kfdl *k, int gi, enum kfdl_bo_type t, uint64_t size, struct kfdl_bo *bo)
{
	return kfdl_alloc_flags(k, gi, t, size, 0, bo);
}

int kfdl_alloc_flags(struct kfdl *k, int gi, enum kfdl_bo_type t, uint64_t size,
		     uint32_t drop_flags, struct kfdl_bo *bo)
{
	static const uint32_t type_flags[] = {
		KFD_IOC_ALLOC_MEM_FLAGS_VRAM,	    KFD_IOC_ALLOC_MEM_FLAGS_GTT,
		KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,    KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
		KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP,
	};
	struct kfd_ioctl_alloc_memory_of_gpu_args a = {0};
	int rc;

	if (gi < 0 || gi >= k->n_gpus || (unsigned)t > KFDL_MMIO || !size)
		return -EINVAL;
	memset(bo, 0, sizeof(*bo));
	bo->type = t;
	bo->gi = gi;
	bo->size = size;
	bo->flags = (type_flags[t] | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
		     KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) & ~drop_flags;
	if (t == KFDL_USERPTR) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);

		if (p == MAP_FAILED)
			return -errno;
		bo->cpu = p;
		bo->va = (uintptr_t)p;
		a.mmap_offset = (uintptr_t)p; /* the user address */
	} else {
		bo->va = kfdl_va(k, size);
	}
	a.va_addr = bo->va;
	a.size = size;
	a.gpu_id = k->gpu[gi].gpu_id;
	a.flags = bo->flags;
	rc = xioctl(k->kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
	if (rc) {
		if (t == KFDL_USERPTR)
			munmap(bo->cpu, size);
		bo->cpu = NULL;
		return rc;
	}
	bo->handle = a.handle;
	bo->mmap_offset = a.mmap_offset;
	if (t == KFDL_VRAM || t == KFDL_GTT) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, k->gpu[gi].render_fd,
			       a.mmap_offset);

		if (p == MAP_FAILED)
			return -errno;
		bo->cpu = p;
	}
	return 0;
}

int kfdl_map(struct kfdl *k, struct kfdl_bo *bo, const uint32_t *gpu_ids, uint32_t n)
{
	struct kfd_ioctl_map_memory_to_gpu_args m = {
		.handle = bo->handle,
		.device_ids_array_ptr = (uintptr_t)gpu_ids,
		.n_devices = n,
	};
	int rc, tries = 100;
	uint32_t i;

	/* as ROCr: the same args again after an interruption; n_success says how far it got */
	do {
		rc = ioctl(k->kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m) ? -errno : 0;
	} while ((rc == -EINTR || rc == -EAGAIN || (!rc && m.n_success < n)) && --tries);
	if (rc)
		return rc;
	if (m.n_success != n)
		return -EIO;
	for (i = 0; i < n && bo->n_mapped < KFDL_MAX_GPUS; i++)
		bo->mapped[bo->n_mapped++] = gpu_ids[i];
	return 0;
}

int kfdl_export_dmabuf(struct kfdl *k, const struct kfdl_bo *bo, int *dmabuf_fd)
{
	struct kfd_ioctl_export_dmabuf_args a = {.handle = bo->handle,
						 .flags = O_RDWR | O_CLOEXEC};
	int rc = xioctl(k->kfd, AMDKFD_IOC_EXPORT_DMABUF, &a);

	if (!rc)
		*dmabuf_fd = (int)a.dmabuf_fd;
	return rc;
}

int kfdl_import_dmabuf(struct kfdl *k, int gi, int dmabuf_fd, uint64_t size, struct kfdl_bo *bo)
{
	struct kfd_ioctl_import_dmabuf_args a = {.va_addr = kfdl_va(k, size),
						 .gpu_id = k->gpu[gi].gpu_id,
						 .dmabuf_fd = (uint32_t)dmabuf_fd};
	int rc = xioctl(k->kfd, AMDKFD_IOC_IMPORT_DMABUF, &a);

	if (rc)
		return rc;
	memset(bo, 0, sizeof(*bo));
	*bo = (struct kfdl_bo){.type = KFDL_GTT, .gi = gi, .handle = a.handle, .va = a.va_addr,
			       .size = size};
	return 0;
}

/* raw UNMAP (no bookkeeping): e.g. to probe that a BO is not mapped on a GPU */
int kfdl_unmap(struct kfdl *k, struct kfdl_bo *bo, const uint32_t *gpu_ids, uint32_t n)
{
	struct kfd_ioctl_unmap_memory_from_gpu_args u = {
		.handle = bo->handle,
		.device_ids_array_ptr = (uintptr_t)gpu_ids,
		.n_devices = n,
	};

	return xioctl(k->kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &u);
}

int kfdl_unmap_all(struct kfdl *k, struct kfdl_bo *bo)
{
	struct kfd_ioctl_unmap_memory_from_gpu_args u = {
		.handle = bo->handle,
		.device_ids_array_ptr = (uintptr_t)bo->mapped,
		.n_devices = bo->n_mapped,
	};
	int rc;

	if (!bo->n_mapped)
		return 0;
	rc = xioctl(k->kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &u);
	if (!rc)
		bo->n_mapped = 0;
	return rc;
}

int kfdl_free(struct kfdl *k, struct kfdl_bo *bo)
{
	struct kfd_ioctl_free_memory_of_gpu_args f = {.handle = bo->handle};
	int rc = xioctl(k->kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);

	if (bo->cpu) {
		munmap(bo->cpu, bo->size);
		bo->cpu = NULL;
	}
	if (bo->io) {
		munmap(bo->io, KFDL_PAGE);
		bo->io = NULL;
	}
	return rc;
}

int kfdl_create_queue(struct kfdl *k, int gi, uint32_t type, struct kfdl_queue *q)
{
	struct kfdl_gpu *g = &k->gpu[gi];
	const uint64_t sizes[5] = {KFDL_PAGE, KFDL_PAGE, KFDL_PAGE, KFDL_PAGE, g->total_cwsr};
	const enum kfdl_bo_type types[5] = {KFDL_GTT, KFDL_GTT, KFDL_GTT, KFDL_VRAM, KFDL_VRAM};
	struct kfd_ioctl_create_queue_args a = {0};
	uint64_t db_va;
	int i, rc;
	void *p;

	memset(q, 0, sizeof(*q));
	q->gi = gi;
	for (i = 0; i < 5; i++) {
		rc = kfdl_alloc(k, gi, types[i], sizes[i], &q->bufs[i]);
		if (!rc)
			rc = kfdl_map(k, &q->bufs[i], &g->gpu_id, 1);
		if (rc)
			return rc;
	}
	a.ring_base_address = q->bufs[0].va;
	a.ring_size = KFDL_PAGE;
	a.read_pointer_address = q->bufs[1].va;
	a.write_pointer_address = q->bufs[2].va;
	a.gpu_id = g->gpu_id;
	a.queue_type = type;
	a.queue_percentage = 100;
	a.queue_priority = 7;
	if (type == KFD_IOC_QUEUE_TYPE_COMPUTE || type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) {
		a.eop_buffer_address = q->bufs[3].va;
		a.eop_buffer_size = KFDL_PAGE;
		a.ctx_save_restore_address = q->bufs[4].va;
		a.ctx_save_restore_size = g->cwsr_size;
		a.ctl_stack_size = g->ctl_stack_size;
	}
	rc = xioctl(k->kfd, AMDKFD_IOC_CREATE_QUEUE, &a);
	if (rc)
		return rc;
	q->queue_id = a.queue_id;
	q->doorbell_offset = a.doorbell_offset;
	db_va = __atomic_load_n(&g->doorbell_va, __ATOMIC_ACQUIRE);
	if (!db_va) {
		struct kfdl_bo db;

		rc = kfdl_alloc(k, gi, KFDL_DOORBELL, 2 * KFDL_PAGE, &db);
		if (rc)
			return rc;
		/* one doorbell BO per GPU, as the thunk keeps: a thread that
		 * lost the race to create it frees its own */
		if (__atomic_compare_exchange_n(&g->doorbell_va, &db_va, db.va, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			db_va = db.va;
		} else {
			rc = kfdl_free(k, &db);
			if (rc)
				return rc;
		}
	}
	p = mmap((void *)(uintptr_t)db_va, 2 * KFDL_PAGE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, k->kfd, a.doorbell_offset & ~(2 * KFDL_PAGE - 1));
	if (p == MAP_FAILED)
		return -errno;
	q->doorbell = p;
	return 0;
}

int kfdl_destroy_queue(struct kfdl *k, uint32_t queue_id)
{
	struct kfd_ioctl_destroy_queue_args d = {.queue_id = queue_id};

	return xioctl(k->kfd, AMDKFD_IOC_DESTROY_QUEUE, &d);
}

int kfdl_create_event(struct kfdl *k, uint32_t type, int auto_reset, uint32_t *id)
{
	struct kfd_ioctl_create_event_args e = {.event_type = type, .auto_reset = !!auto_reset};
	int rc = xioctl(k->kfd, AMDKFD_IOC_CREATE_EVENT, &e);

	if (!rc)
		*id = e.event_id;
	return rc;
}

int kfdl_set_event(struct kfdl *k, uint32_t id)
{
	struct kfd_ioctl_set_event_args s = {.event_id = id};

	return xioctl(k->kfd, AMDKFD_IOC_SET_EVENT, &s);
}

int kfdl_wait_event(struct kfdl *k, uint32_t id, uint32_t timeout_ms, uint32_t *result)
{
	struct kfd_event_data ed = {.event_id = id};
	struct kfd_ioctl_wait_events_args w = {
		.events_ptr = (uintptr_t)&ed,
		.num_events = 1,
		.wait_for_all = 1,
		.timeout = timeout_ms,
	};
	int rc = xioctl(k->kfd, AMDKFD_IOC_WAIT_EVENTS, &w);

	if (!rc)
		*result = w.wait_result;
	return rc;
}

int kfdl_destroy_event(struct kfdl *k, uint32_t id)
{
	struct kfd_ioctl_destroy_event_args d = {.event_id = id};

	return xioctl(k->kfd, AMDKFD_IOC_DESTROY_EVENT, &d);
}

int kfdl_apertures(struct kfdl *k, uint32_t *ids, uint32_t *n, uint32_t max)
{
	struct kfd_process_device_apertures pa[KFDL_MAX_GPUS];
	struct kfd_ioctl_get_process_apertures_new_args a = {0};
	uint32_t i;
	int rc;

	a.kfd_process_device_apertures_ptr = (uintptr_t)pa;
	a.num_of_nodes = 0; /* query the count */
	rc = xioctl(k->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
	if (rc)
		return rc;
	if (a.num_of_nodes > KFDL_MAX_GPUS)
		a.num_of_nodes = KFDL_MAX_GPUS;
	if (a.num_of_nodes) {
		rc = xioctl(k->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
		if (rc)
			return rc;
	}
	for (i = 0; i < a.num_of_nodes && i < max; i++)
		ids[i] = pa[i].gpu_id;
	*n = i;
	return 0;
}

int kfdl_svm(struct kfdl *k, uint64_t start, uint64_t size, uint32_t op,
	     struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr)
{
	/* the args and their attributes in one buffer: the cmd carries the real
	 * size (24 + 8 * nattr), which the kernel's size validator checks */
	uint64_t buf[(sizeof(struct kfd_ioctl_svm_args) +
		      KFDL_SVM_MAX_ATTRS * sizeof(struct kfd_ioctl_svm_attribute)) /
		     sizeof(uint64_t)];
	struct kfd_ioctl_svm_args *a = (struct kfd_ioctl_svm_args *)buf;
	size_t len = sizeof(*a) + nattr * sizeof(*attrs);
	int rc;

	if (nattr > KFDL_SVM_MAX_ATTRS)
		return -E2BIG;
	memset(buf, 0, sizeof(buf));
	a->start_addr = start;
	a->size = size;
	a->op = op;
	a->nattr = nattr;
	memcpy(a->attrs, attrs, nattr * sizeof(*attrs));
	rc = xioctl(k->kfd,
		    _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE, _IOC_NR(AMDKFD_IOC_SVM), len),
		    a);
	if (!rc)
		memcpy(attrs, a->attrs, nattr * sizeof(*attrs));
	return rc;
}

int kfdl_xnack(struct kfdl *k, int32_t *mode)
{
	struct kfd_ioctl_set_xnack_mode_args x = {.xnack_enabled = *mode};
	int rc = xioctl(k->kfd, AMDKFD_IOC_SET_XNACK_MODE, &x);

	if (!rc)
		*mode = x.xnack_enabled;
	return rc;
}
