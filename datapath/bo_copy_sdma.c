// SPDX-License-Identifier: MIT
/* The SDMA copy engine (see bo_copy_sdma.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "common/errmsg.h"
#include "common/gpu_libs.h"
#include "common/stderr_capture.h"
#include "datapath/bo_copy_sdma.h"
#include "datapath/sdma_ib.h"

#define GPU_PAGE  4096u
#define IB_BYTES  (16u << 10) /* 584 COPY_LINEAR packets: over 2 GiB per submission */
#define NS_PER_MS 1000000ull

/* A BO mapped into the engine's GPU VM. */
struct vm_map {
	amdgpu_bo_handle bo;
	amdgpu_va_handle va_handle;
	uint64_t va;
	uint64_t size;
};

/* A host buffer registered as a userptr BO. */
struct staging {
	uint8_t *cpu;
	struct vm_map map;
};

struct bo_sdma_engine {
	struct bo_copy_engine engine;
	uint32_t gpu_id;
	uint64_t timeout_ns;
	amdgpu_device_handle dev;
	amdgpu_context_handle ctx;
	struct vm_map ib;
	uint32_t *ib_cpu;
	struct staging staging[BO_SDMA_MAX_STAGING];
	uint32_t n_staging;
	int error;	       /* the first failure of a submission: the engine is done */
	char libdrm_said[256]; /* what libdrm printed while the engine was opened */
	struct bo_sdma_stats stats;
};

struct sdma_bo {
	struct bo_sdma_engine *e;
	struct vm_map map;
	uint64_t size;
};

static uint64_t round_page(uint64_t n)
{
	return (n + GPU_PAGE - 1) & ~(uint64_t)(GPU_PAGE - 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Gives bo (whose reference it takes) a VA range of its own and maps it there. */
static int vm_map_bo(amdgpu_device_handle dev, amdgpu_bo_handle bo, uint64_t size, struct vm_map *m)
{
	int ret;

	m->bo = bo;
	m->size = round_page(size);
	ret = gpu_libs()->amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, m->size, GPU_PAGE,
						0, &m->va, &m->va_handle, 0);
	if (ret) {
		m->va_handle = NULL;
		return ret;
	}
	ret = gpu_libs()->amdgpu_bo_va_op(bo, 0, m->size, m->va, 0, AMDGPU_VA_OP_MAP);
	if (ret) {
		gpu_libs()->amdgpu_va_range_free(m->va_handle);
		m->va_handle = NULL;
	}
	return ret;
}

/* Unmaps and frees what vm_map_bo() was given, also after it failed. */
static void vm_unmap_bo(struct vm_map *m)
{
	if (m->va_handle) {
		gpu_libs()->amdgpu_bo_va_op(m->bo, 0, m->size, m->va, 0, AMDGPU_VA_OP_UNMAP);
		gpu_libs()->amdgpu_va_range_free(m->va_handle);
	}
	if (m->bo)
		gpu_libs()->amdgpu_bo_free(m->bo);
	memset(m, 0, sizeof(*m));
}

/* ---- submission ------------------------------------------------------------------------ */

/*
 * Waits for the fence until our own deadline, in slices of at most a
 * second: libdrm turns a timeout into an absolute CLOCK_MONOTONIC time of
 * the calling task, which the kernel reads as its own; in a time namespace
 * (a restored task may be in one) the two differ, and one long wait could
 * end at once or far too late. A slice that ends early is not trusted: the
 * deadline is ours, and a pause keeps the loop from spinning. The fence is
 * always looked at once more at or after the deadline before it counts as
 * late.
 */
static int wait_fence(struct bo_sdma_engine *e, struct amdgpu_cs_fence *fence, uint64_t deadline)
{
	const struct timespec pause = {.tv_nsec = 1000000};
	uint64_t now, slice;
	uint32_t expired = 0;
	int ret;

	for (;;) {
		now = now_ns();
		slice = now < deadline ? deadline - now : 0;
		if (slice > 1000000000ull)
			slice = 1000000000ull;
		ret = gpu_libs()->amdgpu_cs_query_fence_status(fence, slice, 0, &expired);
		if (ret || expired)
			return ret;
		/* only a look at the fence after the deadline says it is late: a
		 * thread descheduled past the deadline (a busy machine) is not */
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now_ns() - now < slice / 2) {
			e->stats.early_waits++;
			nanosleep(&pause, NULL);
		}
	}
}

/* Runs the IB's first `dwords` (padded) with bos[] resident; waits for the fence. */
static int submit_and_wait(struct bo_sdma_engine *e, amdgpu_bo_handle *bos, uint32_t n_bos,
			   uint32_t dwords)
{
	struct amdgpu_cs_ib_info ib = {.ib_mc_address = e->ib.va, .size = dwords};
	struct amdgpu_cs_request req = {
		.ip_type = AMDGPU_HW_IP_DMA, .ring = 0, .number_of_ibs = 1, .ibs = &ib};
	struct amdgpu_cs_fence fence = {.context = e->ctx, .ip_type = AMDGPU_HW_IP_DMA};
	uint64_t start = now_ns();
	int ret;

	bos[n_bos++] = e->ib.bo;
	ret = gpu_libs()->amdgpu_bo_list_create(e->dev, n_bos, bos, NULL, &req.resources);
	if (ret)
		return ret;
	ret = gpu_libs()->amdgpu_cs_submit(e->ctx, 0, &req, 1);
	gpu_libs()->amdgpu_bo_list_destroy(req.resources);
	if (ret)
		return ret;
	fence.fence = req.seq_no;
	ret = wait_fence(e, &fence, start + e->timeout_ns);
	e->stats.busy_ns += now_ns() - start;
	e->stats.submissions++;
	return ret;
}

/*
 * Copies or zeroes `bytes`, as many IBs as it takes. dst/src are GPU VAs;
 * src 0 means zero-fill. bos: what the packets touch (one free slot after).
 */
static int sdma_move(struct bo_sdma_engine *e, uint64_t dst, uint64_t src, uint64_t bytes,
		     amdgpu_bo_handle *bos, uint32_t n_bos)
{
	uint64_t per_ib = (uint64_t)((IB_BYTES / 4 - SDMA_IB_ALIGN_DWORDS) /
				     (src ? SDMA_COPY_LINEAR_DWORDS : SDMA_CONST_FILL_DWORDS)) *
			  SDMA_MAX_BYTES;
	struct sdma_ib ib;
	int ret;

	if (e->error)
		return e->error;
	while (bytes) {
		uint64_t n = bytes < per_ib ? bytes : per_ib;

		sdma_ib_init(&ib, e->ib_cpu, IB_BYTES / 4);
		ret = src ? sdma_ib_copy(&ib, dst, src, n) : sdma_ib_zero(&ib, dst, n);
		if (!ret)
			ret = sdma_ib_pad(&ib);
		if (!ret)
			ret = submit_and_wait(e, bos, n_bos, ib.len);
		if (ret) {
			/* the job may still be running on a hung engine: nothing more goes to it */
			e->error = ret;
			return ret;
		}
		e->stats.bytes += n;
		dst += n;
		src += src ? n : 0;
		bytes -= n;
	}
	return 0;
}

/* ---- staging buffers ------------------------------------------------------------------- */

static void staging_drop(struct bo_sdma_engine *e, uint32_t i)
{
	vm_unmap_bo(&e->staging[i].map);
	e->staging[i] = e->staging[--e->n_staging];
}

/* The userptr mapping of host buffer buf covering at least len bytes. */
static int staging_get(struct bo_sdma_engine *e, void *buf, size_t len, struct staging **out)
{
	uint64_t need = round_page(len);
	amdgpu_bo_handle bo;
	struct staging *s;
	uint32_t i;
	int ret;

	if ((uintptr_t)buf % GPU_PAGE)
		return -EINVAL;
	for (i = 0; i < e->n_staging; i++) {
		if (e->staging[i].cpu != buf)
			continue;
		if (e->staging[i].map.size >= need) {
			*out = &e->staging[i];
			return 0;
		}
		staging_drop(e, i); /* registered for a shorter chunk: register again */
		break;
	}
	if (e->n_staging == BO_SDMA_MAX_STAGING)
		staging_drop(e, 0);
	ret = gpu_libs()->amdgpu_create_bo_from_user_mem(e->dev, buf, need, &bo);
	if (ret)
		return ret;
	s = &e->staging[e->n_staging];
	ret = vm_map_bo(e->dev, bo, need, &s->map);
	if (ret) {
		vm_unmap_bo(&s->map);
		return ret;
	}
	s->cpu = buf;
	e->n_staging++;
	*out = s;
	return 0;
}

/* ---- the bo_copy_engine ops ------------------------------------------------------------ */

static int sdma_open_bo(const struct bo_copy_engine *engine, int dmabuf_fd, uint64_t size,
			enum bo_access access, void **bo)
{
	struct bo_sdma_engine *e = engine->priv;
	struct amdgpu_bo_import_result imported;
	struct sdma_bo *b;
	int ret;

	(void)access; /* the engine's own VM mapping is read-write either way */
	if (!size)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = gpu_libs()->amdgpu_bo_import(e->dev, amdgpu_bo_handle_type_dma_buf_fd,
					   (uint32_t)dmabuf_fd, &imported);
	if (ret)
		goto fail;
	if (imported.alloc_size < size) {
		gpu_libs()->amdgpu_bo_free(imported.buf_handle);
		ret = -EINVAL;
		goto fail;
	}
	ret = vm_map_bo(e->dev, imported.buf_handle, imported.alloc_size, &b->map);
	if (ret) {
		vm_unmap_bo(&b->map);
		goto fail;
	}
	b->e = e;
	b->size = size;
	*bo = b;
	return 0;
fail:
	free(b);
	return ret;
}

static int sdma_transfer(struct sdma_bo *b, uint64_t off, void *buf, size_t len, bool to_host)
{
	struct bo_sdma_engine *e = b->e;
	amdgpu_bo_handle bos[3];
	struct staging *s;
	int ret;

	if (off > b->size || len > b->size - off || !len)
		return -EINVAL;
	if (e->error)
		return e->error;
	ret = staging_get(e, buf, len, &s);
	if (ret)
		return ret;
	bos[0] = b->map.bo;
	bos[1] = s->map.bo;
	if (to_host)
		return sdma_move(e, s->map.va, b->map.va + off, len, bos, 2);
	return sdma_move(e, b->map.va + off, s->map.va, len, bos, 2);
}

static int sdma_read(void *bo, uint64_t off, void *buf, size_t len)
{
	return sdma_transfer(bo, off, buf, len, true);
}

static int sdma_write(void *bo, uint64_t off, const void *buf, size_t len)
{
	/* the GPU only reads the staging buffer; the userptr BO is still registered writable */
	return sdma_transfer(bo, off, (void *)buf, len, false);
}

static int sdma_zero(void *bo, uint64_t off, size_t len)
{
	struct sdma_bo *b = bo;
	amdgpu_bo_handle bos[2] = {b->map.bo};

	if (off > b->size || len > b->size - off || !len)
		return -EINVAL;
	return sdma_move(b->e, b->map.va + off, 0, len, bos, 1);
}

static void sdma_close_bo(void *bo)
{
	struct sdma_bo *b = bo;

	vm_unmap_bo(&b->map);
	free(b);
}

/* The kernel's and our own failures, as a user can act on them. */
static const char *sdma_explain(int err)
{
	switch (err) {
	case -ETIMEDOUT:
		return "the SDMA engine did not finish within the deadline "
		       "(AMDGPU_CRIU_SDMA_TIMEOUT_MS): a hung engine; check the kernel log";
	case -ETIME:
		return "the kernel's SDMA job timeout fired (a hung engine, the GPU is being "
		       "reset); check the kernel log";
	case -ECANCELED:
		return "the SDMA job was cancelled: the GPU was reset or lost VRAM";
	case -EAGAIN:
		return "the staging buffer's pages kept being invalidated (userptr); retry";
	case -EFAULT:
		return "the SDMA engine faulted on a GPU address (a BO or staging buffer not "
		       "mapped)";
	case -ENOMEM:
		return "out of memory for the SDMA copy (GTT or system memory); retry with "
		       "AMDGPU_CRIU_COPY_ENGINE=cpu or when memory is free";
	default:
		return NULL;
	}
}

static const struct bo_copy_engine_ops sdma_ops = {
	.open_bo = sdma_open_bo,
	.read = sdma_read,
	.write = sdma_write,
	.zero = sdma_zero,
	.close_bo = sdma_close_bo,
	.explain = sdma_explain,
};

/* ---- the engine ------------------------------------------------------------------------ */

static int open_device(struct bo_sdma_engine *e, const struct bo_sdma_config *cfg, char *err,
		       size_t errlen)
{
	struct stderr_capture cap;
	char path[64];
	uint32_t major, minor, engines = 0;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/renderD%" PRIu32, cfg->dev_dir ? cfg->dev_dir : "/dev/dri",
		 cfg->render_minor);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errmsg_set(err, errlen, -errno, "GPU %" PRIu32 ": cannot open %s: %s",
				  cfg->gpu_id, path, strerror(errno));
	/*
	 * libdrm keeps a duplicate of the fd (F_DUPFD_CLOEXEC), and prints to
	 * fd 2, which in a restored task may be the application's stderr
	 */
	ret = stderr_capture_begin(&cap);
	if (ret) {
		close(fd);
		return errmsg_set(err, errlen, ret,
				  "GPU %" PRIu32 ": cannot keep libdrm's messages off stderr: %s",
				  cfg->gpu_id, strerror(-ret));
	}
	ret = gpu_libs()->amdgpu_device_initialize(fd, &major, &minor, &e->dev);
	stderr_capture_end(&cap, e->libdrm_said, sizeof(e->libdrm_said));
	close(fd);
	if (ret) {
		e->dev = NULL;
		return errmsg_set(
			err, errlen, ret, "GPU %" PRIu32 ": libdrm_amdgpu refuses %s: %s%s%s%s",
			cfg->gpu_id, path, strerror(-ret), e->libdrm_said[0] ? " (libdrm: " : "",
			e->libdrm_said, e->libdrm_said[0] ? ")" : "");
	}
	ret = gpu_libs()->amdgpu_query_hw_ip_count(e->dev, AMDGPU_HW_IP_DMA, &engines);
	if (!ret && !engines)
		ret = -ENODEV;
	if (ret)
		return errmsg_set(err, errlen, ret,
				  "GPU %" PRIu32 ": %s reports no SDMA engine: %s", cfg->gpu_id,
				  path, strerror(-ret));
	ret = gpu_libs()->amdgpu_cs_ctx_create(e->dev, &e->ctx);
	if (ret) {
		e->ctx = NULL;
		return errmsg_set(err, errlen, ret,
				  "GPU %" PRIu32 ": cannot create a submission context on %s: %s",
				  cfg->gpu_id, path, strerror(-ret));
	}
	return 0;
}

static int alloc_ib(struct bo_sdma_engine *e, char *err, size_t errlen)
{
	struct amdgpu_bo_alloc_request req = {.alloc_size = IB_BYTES,
					      .phys_alignment = GPU_PAGE,
					      .preferred_heap = AMDGPU_GEM_DOMAIN_GTT};
	amdgpu_bo_handle bo;
	void *cpu;
	int ret;

	ret = gpu_libs()->amdgpu_bo_alloc(e->dev, &req, &bo);
	if (ret)
		goto fail;
	ret = vm_map_bo(e->dev, bo, IB_BYTES, &e->ib);
	if (!ret)
		ret = gpu_libs()->amdgpu_bo_cpu_map(bo, &cpu);
	if (ret) {
		vm_unmap_bo(&e->ib);
		goto fail;
	}
	e->ib_cpu = cpu;
	return 0;
fail:
	return errmsg_set(err, errlen, ret, "GPU %" PRIu32 ": cannot set up an SDMA IB buffer: %s",
			  e->gpu_id, strerror(-ret));
}

int bo_sdma_engine_open(const struct bo_sdma_config *cfg, struct bo_sdma_engine **out, char *err,
			size_t errlen)
{
	struct bo_sdma_engine *e;
	enum sdma_gen gen;
	int ret;

	*out = NULL;
	ret = gpu_libs_load(err, errlen);
	if (ret)
		return ret;
	if (sdma_gen_from_gfx(cfg->gfx_target_version, &gen))
		return errmsg_set(err, errlen, -EOPNOTSUPP,
				  "GPU %" PRIu32 ": gfx_target_version %" PRIu32
				  ": no SDMA packet format known for it",
				  cfg->gpu_id, cfg->gfx_target_version);
	e = calloc(1, sizeof(*e));
	if (!e)
		return errmsg_set(err, errlen, -ENOMEM, "GPU %" PRIu32 ": no memory", cfg->gpu_id);
	e->engine.ops = &sdma_ops;
	e->engine.priv = e;
	e->gpu_id = cfg->gpu_id;
	e->timeout_ns = (uint64_t)(cfg->fence_timeout_ms ? cfg->fence_timeout_ms
							 : BO_SDMA_DEFAULT_TIMEOUT_MS) *
			NS_PER_MS;
	ret = open_device(e, cfg, err, errlen);
	if (!ret)
		ret = alloc_ib(e, err, errlen);
	if (ret) {
		bo_sdma_engine_close(e);
		return ret;
	}
	*out = e;
	return 0;
}

const struct bo_copy_engine *bo_sdma_engine_ops(struct bo_sdma_engine *e)
{
	return &e->engine;
}

void bo_sdma_engine_stats(const struct bo_sdma_engine *e, struct bo_sdma_stats *stats)
{
	*stats = e->stats;
}

const char *bo_sdma_engine_libdrm_said(const struct bo_sdma_engine *e)
{
	return e->libdrm_said;
}

void bo_sdma_engine_close(struct bo_sdma_engine *e)
{
	if (!e)
		return;
	while (e->n_staging)
		staging_drop(e, e->n_staging - 1);
	if (e->ib_cpu)
		gpu_libs()->amdgpu_bo_cpu_unmap(e->ib.bo);
	if (e->ib.bo)
		vm_unmap_bo(&e->ib);
	if (e->ctx)
		gpu_libs()->amdgpu_cs_ctx_free(e->ctx);
	if (e->dev)
		gpu_libs()->amdgpu_device_deinitialize(e->dev);
	free(e);
}
