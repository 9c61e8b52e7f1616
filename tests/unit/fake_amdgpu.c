// SPDX-License-Identifier: MIT
/* A model GPU behind libdrm_amdgpu's calls (see fake_amdgpu.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "common/gpu_libs.h"
#include "fake_amdgpu.h"

#define PAGE	   4096ull
#define VA_START   0x100000000ull
#define MAX_MAPS   256
#define MAX_LIST   8
#define COUNT_MASK 0x3fffffu /* 22 bits: SDMA v4/v5 */
#define OP_NOP	   0u
#define OP_COPY	   1u
#define OP_FILL	   11u

struct fake_amdgpu fake_gpu;

struct amdgpu_device {
	uint64_t next_va;
};

struct amdgpu_context {
	struct amdgpu_device *dev;
	uint64_t seq;
	int fence_error; /* of the last submission */
	bool hung;
};

enum bo_kind { BO_GTT, BO_IMPORT, BO_USERPTR };

struct amdgpu_bo {
	struct amdgpu_device *dev; /* whose VM it can be mapped in */
	enum bo_kind kind;
	uint8_t *mem;
	uint64_t size;
};

struct amdgpu_bo_list {
	struct amdgpu_device *dev;
	uint32_t n;
	struct amdgpu_bo *bos[MAX_LIST];
};

struct amdgpu_va {
	uint64_t va, size;
};

struct vm_map {
	struct amdgpu_bo *bo;
	uint64_t va, size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vm_map maps[MAX_MAPS];

void fake_amdgpu_reset(void)
{
	memset(&fake_gpu, 0, sizeof(fake_gpu));
	memset(maps, 0, sizeof(maps));
	fake_gpu.dma_engines = 2;
}

bool fake_amdgpu_all_released(void)
{
	return !fake_gpu.live_devices && !fake_gpu.live_contexts && !fake_gpu.live_bos &&
	       !fake_gpu.live_maps && !fake_gpu.live_ranges && !fake_gpu.live_lists;
}

__attribute__((format(printf, 1, 2))) static int gpu_fault(const char *fmt, ...)
{
	va_list ap;

	if (!fake_gpu.fault[0]) {
		va_start(ap, fmt);
		vsnprintf(fake_gpu.fault, sizeof(fake_gpu.fault), fmt, ap);
		va_end(ap);
	}
	return -EFAULT;
}

/* ---- device, context -------------------------------------------------------------------- */

int amdgpu_device_initialize(int fd, uint32_t *major, uint32_t *minor, amdgpu_device_handle *dev)
{
	struct stat st;

	if (fstat(fd, &st))
		return -EBADF;
	*dev = calloc(1, sizeof(**dev));
	if (!*dev)
		return -ENOMEM;
	(*dev)->next_va = VA_START;
	*major = 3;
	*minor = 59;
	__atomic_add_fetch(&fake_gpu.live_devices, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_device_deinitialize(amdgpu_device_handle dev)
{
	free(dev);
	__atomic_sub_fetch(&fake_gpu.live_devices, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_query_hw_ip_count(amdgpu_device_handle dev, unsigned type, uint32_t *count)
{
	(void)dev;
	*count = type == AMDGPU_HW_IP_DMA ? fake_gpu.dma_engines : 0;
	return 0;
}

int amdgpu_cs_ctx_create(amdgpu_device_handle dev, amdgpu_context_handle *ctx)
{
	*ctx = calloc(1, sizeof(**ctx));
	if (!*ctx)
		return -ENOMEM;
	(*ctx)->dev = dev;
	__atomic_add_fetch(&fake_gpu.live_contexts, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_cs_ctx_free(amdgpu_context_handle ctx)
{
	free(ctx);
	__atomic_sub_fetch(&fake_gpu.live_contexts, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* ---- BOs -------------------------------------------------------------------------------- */

static int new_bo(struct amdgpu_device *dev, enum bo_kind kind, uint8_t *mem, uint64_t size,
		  amdgpu_bo_handle *out)
{
	struct amdgpu_bo *bo = calloc(1, sizeof(*bo));

	if (!bo)
		return -ENOMEM;
	*bo = (struct amdgpu_bo){.dev = dev, .kind = kind, .mem = mem, .size = size};
	*out = bo;
	__atomic_add_fetch(&fake_gpu.live_bos, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_bo_alloc(amdgpu_device_handle dev, struct amdgpu_bo_alloc_request *req,
		    amdgpu_bo_handle *bo)
{
	void *mem;

	if (!req->alloc_size || req->preferred_heap != AMDGPU_GEM_DOMAIN_GTT ||
	    posix_memalign(&mem, PAGE, req->alloc_size))
		return -EINVAL;
	memset(mem, 0, req->alloc_size);
	return new_bo(dev, BO_GTT, mem, req->alloc_size, bo);
}

int amdgpu_bo_import(amdgpu_device_handle dev, enum amdgpu_bo_handle_type type, uint32_t fd,
		     struct amdgpu_bo_import_result *out)
{
	struct stat st;
	void *mem;
	int ret;

	if (type != amdgpu_bo_handle_type_dma_buf_fd || fstat((int)fd, &st) || !st.st_size)
		return -EINVAL;
	mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	ret = new_bo(dev, BO_IMPORT, mem, (uint64_t)st.st_size, &out->buf_handle);
	if (ret) {
		munmap(mem, (size_t)st.st_size);
		return ret;
	}
	out->alloc_size = (uint64_t)st.st_size;
	__atomic_add_fetch(&fake_gpu.imports, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* The kernel's rules: page-aligned address and size. */
int amdgpu_create_bo_from_user_mem(amdgpu_device_handle dev, void *cpu, uint64_t size,
				   amdgpu_bo_handle *bo)
{
	if ((uintptr_t)cpu % PAGE || !size || size % PAGE)
		return -EINVAL;
	__atomic_add_fetch(&fake_gpu.userptr_bos, 1, __ATOMIC_SEQ_CST);
	return new_bo(dev, BO_USERPTR, cpu, size, bo);
}

int amdgpu_bo_cpu_map(amdgpu_bo_handle bo, void **cpu)
{
	if (bo->kind == BO_USERPTR)
		return -EPERM;
	*cpu = bo->mem;
	return 0;
}

int amdgpu_bo_cpu_unmap(amdgpu_bo_handle bo)
{
	(void)bo;
	return 0;
}

static bool bo_mapped(const struct amdgpu_bo *bo)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].bo == bo)
			return true;
	return false;
}

int amdgpu_bo_free(amdgpu_bo_handle bo)
{
	pthread_mutex_lock(&lock);
	if (bo_mapped(bo)) /* the kernel would unmap it; the engine must have */
		gpu_fault("a BO was freed while still mapped in the GPU VM");
	pthread_mutex_unlock(&lock);
	if (bo->kind == BO_GTT)
		free(bo->mem);
	else if (bo->kind == BO_IMPORT)
		munmap(bo->mem, bo->size);
	free(bo);
	__atomic_sub_fetch(&fake_gpu.live_bos, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* ---- GPU VM ------------------------------------------------------------------------------ */

int amdgpu_va_range_alloc(amdgpu_device_handle dev, enum amdgpu_gpu_va_range type, uint64_t size,
			  uint64_t align, uint64_t required, uint64_t *va, amdgpu_va_handle *handle,
			  uint64_t flags)
{
	struct amdgpu_va *r;

	if (type != amdgpu_gpu_va_range_general || !size || required || flags || align % PAGE)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	r->va = dev->next_va;
	r->size = (size + PAGE - 1) & ~(PAGE - 1);
	dev->next_va += r->size + PAGE; /* a hole after every range */
	pthread_mutex_unlock(&lock);
	*va = r->va;
	*handle = r;
	__atomic_add_fetch(&fake_gpu.live_ranges, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_va_range_free(amdgpu_va_handle handle)
{
	free(handle);
	__atomic_sub_fetch(&fake_gpu.live_ranges, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int va_map(amdgpu_bo_handle bo, uint64_t offset, uint64_t size, uint64_t va)
{
	int i, free_slot = -1;

	if (offset || va % PAGE || !size || size % PAGE ||
	    size > ((bo->size + PAGE - 1) & ~(PAGE - 1)))
		return -EINVAL;
	for (i = 0; i < MAX_MAPS; i++) {
		if (!maps[i].bo) {
			free_slot = free_slot < 0 ? i : free_slot;
			continue;
		}
		if (maps[i].bo->dev == bo->dev && va < maps[i].va + maps[i].size &&
		    maps[i].va < va + size)
			return -EINVAL; /* the kernel: "va ... conflict with ..." */
	}
	if (free_slot < 0)
		return -ENOMEM;
	maps[free_slot] = (struct vm_map){.bo = bo, .va = va, .size = size};
	fake_gpu.live_maps++;
	return 0;
}

static int va_unmap(amdgpu_bo_handle bo, uint64_t va)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++)
		if (maps[i].bo == bo && maps[i].va == va) {
			memset(&maps[i], 0, sizeof(maps[i]));
			fake_gpu.live_maps--;
			return 0;
		}
	return -ENOENT;
}

int amdgpu_bo_va_op(amdgpu_bo_handle bo, uint64_t offset, uint64_t size, uint64_t va,
		    uint64_t flags, uint32_t op)
{
	int ret = -EINVAL;

	(void)flags;
	pthread_mutex_lock(&lock);
	if (op == AMDGPU_VA_OP_MAP)
		ret = va_map(bo, offset, size, va);
	else if (op == AMDGPU_VA_OP_UNMAP)
		ret = va_unmap(bo, va);
	pthread_mutex_unlock(&lock);
	return ret;
}

/* ---- BO lists, submission, fences -------------------------------------------------------- */

int amdgpu_bo_list_create(amdgpu_device_handle dev, uint32_t n, amdgpu_bo_handle *bos,
			  uint8_t *prios, amdgpu_bo_list_handle *list)
{
	if (!n || n > MAX_LIST || prios)
		return -EINVAL;
	*list = calloc(1, sizeof(**list));
	if (!*list)
		return -ENOMEM;
	(*list)->dev = dev;
	(*list)->n = n;
	memcpy((*list)->bos, bos, n * sizeof(*bos));
	__atomic_add_fetch(&fake_gpu.live_lists, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int amdgpu_bo_list_destroy(amdgpu_bo_list_handle list)
{
	free(list);
	__atomic_sub_fetch(&fake_gpu.live_lists, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* CPU address of [va, va + len), which must lie in one mapping of a listed BO. */
static uint8_t *gpu_addr(const struct amdgpu_bo_list *list, uint64_t va, uint64_t len)
{
	uint32_t j;
	int i;

	for (i = 0; i < MAX_MAPS; i++) {
		const struct vm_map *m = &maps[i];

		if (!m->bo || m->bo->dev != list->dev || va < m->va || va >= m->va + m->size)
			continue;
		if (len > m->va + m->size - va || va - m->va + len > m->bo->size) {
			gpu_fault("access 0x%" PRIx64 "+0x%" PRIx64 " runs past its mapping", va,
				  len);
			return NULL;
		}
		for (j = 0; j < list->n; j++)
			if (list->bos[j] == m->bo)
				return m->bo->mem + (va - m->va);
		gpu_fault("VA 0x%" PRIx64 " belongs to a BO missing from the BO list", va);
		return NULL;
	}
	gpu_fault("VA 0x%" PRIx64 " is not mapped", va);
	return NULL;
}

static uint64_t qword(const uint32_t *dw)
{
	return dw[0] | (uint64_t)dw[1] << 32;
}

/* Runs one IB: 0, or -EFAULT (the fault recorded) as a VM fault would end the job. */
static int run_ib(const struct amdgpu_bo_list *list, const uint32_t *ib, uint32_t n)
{
	uint32_t i = 0, op;
	uint8_t *src, *dst;
	uint64_t len;

	while (i < n) {
		op = ib[i] & 0xff;
		if (op == OP_NOP && !(ib[i] >> 8)) {
			i++;
		} else if (op == OP_COPY && !((ib[i] >> 8) & 0xff) && n - i >= 7) {
			len = (uint64_t)(ib[i + 1] & COUNT_MASK) + 1;
			src = gpu_addr(list, qword(&ib[i + 3]), len);
			dst = gpu_addr(list, qword(&ib[i + 5]), len);
			if (!src || !dst)
				return -EFAULT;
			memmove(dst, src, len);
			fake_gpu.copy_packets++;
			fake_gpu.copy_bytes += len;
			i += 7;
		} else if (op == OP_FILL && n - i >= 5) {
			len = (uint64_t)(ib[i + 4] & COUNT_MASK) + 1;
			dst = gpu_addr(list, qword(&ib[i + 1]), len);
			if (!dst)
				return -EFAULT;
			memset(dst, (int)(ib[i + 3] & 0xff), len);
			fake_gpu.fill_packets++;
			fake_gpu.fill_bytes += len;
			i += 5;
		} else {
			return gpu_fault("IB dword %" PRIu32 ": unknown or cut packet 0x%08" PRIx32,
					 i, ib[i]);
		}
	}
	return 0;
}

int amdgpu_cs_submit(amdgpu_context_handle ctx, uint64_t flags, struct amdgpu_cs_request *req,
		     uint32_t n_req)
{
	const struct amdgpu_cs_ib_info *ib;
	const uint32_t *cpu;
	uint64_t nr;

	if (flags || n_req != 1 || req->ip_type != AMDGPU_HW_IP_DMA || req->ring >= 2 ||
	    req->number_of_ibs != 1 || !req->resources)
		return -EINVAL;
	ib = req->ibs;
	pthread_mutex_lock(&lock);
	nr = ++fake_gpu.submissions;
	if (nr == fake_gpu.fail_at && fake_gpu.submit_error) {
		pthread_mutex_unlock(&lock);
		return fake_gpu.submit_error;
	}
	ctx->hung = nr == fake_gpu.fail_at && fake_gpu.hang;
	ctx->fence_error = 0;
	if (ib->ib_mc_address % 256)
		ctx->fence_error =
			gpu_fault("IB at 0x%" PRIx64 " not 256-byte aligned", ib->ib_mc_address);
	cpu = (const uint32_t *)gpu_addr(req->resources, ib->ib_mc_address, ib->size * 4ull);
	if (!ctx->fence_error && !cpu)
		ctx->fence_error = -EFAULT;
	if (!ctx->fence_error && !ctx->hung)
		ctx->fence_error = run_ib(req->resources, cpu, ib->size);
	if (!ctx->fence_error && nr == fake_gpu.fail_at)
		ctx->fence_error = fake_gpu.fence_error;
	pthread_mutex_unlock(&lock);
	req->seq_no = ++ctx->seq;
	return 0;
}

int amdgpu_cs_query_fence_status(struct amdgpu_cs_fence *fence, uint64_t timeout_ns, uint64_t flags,
				 uint32_t *expired)
{
	struct amdgpu_context *ctx = fence->context;

	(void)timeout_ns;
	if (flags || fence->ip_type != AMDGPU_HW_IP_DMA || fence->fence != ctx->seq)
		return -EINVAL;
	*expired = !ctx->hung;
	return ctx->hung ? 0 : ctx->fence_error;
}

/*
 * The unit tests' GPU libraries (common/gpu_libs.h): these models for
 * libdrm_amdgpu's functions, the linked libdrm and ISA-L for the others,
 * before main() runs.
 */
__attribute__((constructor)) static void use_fake_amdgpu(void)
{
#define FAKE_OR_LINKED(lib, fn) .fn = fn,
	static const struct gpu_libs fns = {GPU_LIBS_FUNCTIONS(FAKE_OR_LINKED)};
#undef FAKE_OR_LINKED

	gpu_libs_use(&fns);
}
