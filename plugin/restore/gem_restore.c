// SPDX-License-Identifier: MIT
/*
 * Restore of a render-node file's GEM BOs (gem_restore.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/drm_uapi_618.h"
#include "plugin/restore/gem_restore.h"
#include "plugin/log.h"
#include "plugin/restore/restore_copy.h"

#define PAGE_SHIFT_4K 12

/* What one render file's restore made so far, undone on failure. */
struct gem_restore {
	const struct gem_restore_ctx *ctx;
	int fd;
	const RenderFileEntry *e;
	uint32_t *handles; /* per BO: its handle now, 0 until created */
	uint64_t *offsets; /* per BO: its new mmap offset */
};

static int create_bo(struct gem_restore *r, const GemBoEntry *b, uint32_t *handle)
{
	union drm_amdgpu_gem_create c = {
		.in = {.bo_size = b->size,
		       .alignment = (b->alignment ? b->alignment : 1) << PAGE_SHIFT_4K,
		       .domains = b->preferred_domains,
		       .domain_flags = b->alloc_flags & AMDGPU_CRIU_GEM_CREATE_SETTABLE}};
	int ret = r->ctx->ioctl_fn(r->fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &c);

	if (!ret)
		*handle = c.out.handle;
	return ret;
}

/* The DRM core gave the lowest free handle; the application's is the recorded one. */
static int move_handle(struct gem_restore *r, uint32_t *handle, uint32_t to, char *err,
		       size_t errlen)
{
	struct drm_gem_change_handle a = {.handle = *handle, .new_handle = to};
	int ret;

	if (*handle == to)
		return 0;
	ret = r->ctx->ioctl_fn(r->fd, DRM_IOCTL_GEM_CHANGE_HANDLE, &a);
	if (!ret) {
		*handle = to;
		return 0;
	}
	if (ret == -EINVAL || ret == -ENOTTY)
		snprintf(err, errlen,
			 "GEM handle %u came back as %u and this kernel cannot renumber GEM "
			 "handles (GEM_CHANGE_HANDLE is Linux 6.18+): restore on a 6.18+ kernel",
			 to, *handle);
	else
		snprintf(err, errlen, "GEM handle %u: GEM_CHANGE_HANDLE from %u: %s", to, *handle,
			 strerror(-ret));
	return ret;
}

static int map_bo(struct gem_restore *r, const GemBoEntry *b, uint32_t handle, char *err,
		  size_t errlen)
{
	size_t j;
	int ret;

	for (j = 0; j < b->n_mappings; j++) {
		const GemMappingEntry *m = b->mappings[j];
		struct drm_amdgpu_gem_va va = {.handle = handle,
					       .operation = AMDGPU_VA_OP_MAP,
					       .flags = (uint32_t)m->flags,
					       .va_address = m->addr,
					       .offset_in_bo = m->offset,
					       .map_size = m->size};

		ret = r->ctx->ioctl_fn(r->fd, DRM_IOCTL_AMDGPU_GEM_VA, &va);
		if (ret) {
			snprintf(err, errlen,
				 "GEM handle %u: cannot map it at GPU VA %#" PRIx64 " (%#" PRIx64
				 " bytes, flags %#" PRIx64 "): %s",
				 b->handle, m->addr, m->size, m->flags, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static int restore_bo(struct gem_restore *r, size_t i, char *err, size_t errlen)
{
	const GemBoEntry *b = r->e->gem_bos[i];
	union drm_amdgpu_gem_mmap mm = {0};
	int ret;

	ret = create_bo(r, b, &r->handles[i]);
	if (ret) {
		snprintf(err, errlen, "GEM handle %u: GEM_CREATE of %" PRIu64 " KiB: %s%s",
			 b->handle, b->size >> 10, strerror(-ret),
			 ret == -ENOMEM ? " (the GPU is out of memory)" : "");
		return ret;
	}
	ret = move_handle(r, &r->handles[i], b->handle, err, errlen);
	if (!ret)
		ret = map_bo(r, b, r->handles[i], err, errlen);
	if (ret)
		return ret;
	mm.in.handle = r->handles[i];
	ret = r->ctx->ioctl_fn(r->fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mm);
	if (ret) {
		snprintf(err, errlen, "GEM handle %u: GEM_MMAP: %s", b->handle, strerror(-ret));
		return ret;
	}
	r->offsets[i] = mm.out.addr_ptr;
	return 0;
}

/* The contents: one GPU, the render-node engine keyed by each BO's dma-buf. */
static int write_contents(struct gem_restore *r, uint32_t image_id, char *err, size_t errlen)
{
	size_t n = r->e->n_gem_bos, i;
	struct restore_copy_set set = {.image_id = image_id,
				       .pid = (uint32_t)getpid(),
				       .n = 1,
				       .gpus = calloc(1, sizeof(*set.gpus)),
				       .engines = calloc(1, sizeof(*set.engines)),
				       .copy = calloc(1, sizeof(*set.copy))};
	struct bo_render_map *maps = calloc(n, sizeof(*maps));
	uint64_t bytes;
	int ret = -ENOMEM;

	if (!set.gpus || !set.engines || !set.copy || !maps ||
	    !(set.gpus[0].bos = calloc(n, sizeof(*set.gpus[0].bos)))) {
		free(maps);
		goto out;
	}
	set.copy[0] = r->ctx->gpu;
	set.gpus[0].gpu_id = r->ctx->gpu.gpu_id;
	for (i = 0; i < n; i++) {
		const GemBoEntry *b = r->e->gem_bos[i];
		struct drm_prime_handle prime = {.handle = r->handles[i],
						 .flags = DRM_CLOEXEC | DRM_RDWR};

		ret = r->ctx->ioctl_fn(r->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
		if (ret) {
			snprintf(err, errlen, "GEM handle %u: cannot export it to write it: %s",
				 b->handle, strerror(-ret));
			break;
		}
		maps[i] = (struct bo_render_map){
			.dmabuf_fd = prime.fd, .drm_fd = r->fd, .offset = r->offsets[i]};
		set.gpus[0].bos[i] = (struct bo_stream_bo){.size = b->size, .dmabuf_fd = prime.fd};
		set.gpus[0].bo_count++;
		set.copy[0].invisible_bos +=
			b->preferred_domains & AMDGPU_GEM_DOMAIN_VRAM &&
			!(b->alloc_flags & AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED);
	}
	bo_render_engine_init(&set.engines[0], maps, set.gpus[0].bo_count);
	set.gpus[0].engine = &set.engines[0].engine;
	if (!ret) {
		ret = restore_copy_run(r->ctx->engine_opts, r->ctx->shared, r->ctx->dir_fd, &set,
				       &bytes);
		if (ret)
			snprintf(err, errlen, "the GEM BOs' contents could not be written (above)");
	}
out:
	restore_copy_set_free(&set);
	return ret;
}

static void undo(struct gem_restore *r)
{
	size_t i;

	for (i = 0; i < r->e->n_gem_bos; i++) {
		struct drm_gem_close c = {.handle = r->handles[i]};

		if (r->handles[i])
			r->ctx->ioctl_fn(r->fd, DRM_IOCTL_GEM_CLOSE, &c);
	}
}

static int note_vmas(struct gem_restore *r, struct vma_map *vmas, char *err, size_t errlen)
{
	size_t n = r->e->n_gem_bos, i;
	struct vma_bo *v = calloc(n, sizeof(*v));
	int ret;

	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		v[i] = (struct vma_bo){.old_minor = r->e->minor,
				       .old_offset = r->e->gem_bos[i]->mmap_offset,
				       .size = r->e->gem_bos[i]->size,
				       .new_offset = r->offsets[i],
				       .dst_minor = r->ctx->gpu.render_minor};
	ret = vma_map_add_bos(vmas, v, n);
	free(v);
	if (ret)
		snprintf(err, errlen, "%s",
			 ret == -EINVAL ? "GEM BOs overlap in their mmap offsets"
					: "out of memory");
	return ret;
}

int gem_restore_file(const struct gem_restore_ctx *ctx, int fd, const struct render_file_image *img,
		     struct vma_map *vmas, char *err, size_t errlen)
{
	size_t n = img->entry->n_gem_bos, i;
	struct gem_restore r = {.ctx = ctx,
				.fd = fd,
				.e = img->entry,
				.handles = calloc(n + 1, sizeof(*r.handles)),
				.offsets = calloc(n + 1, sizeof(*r.offsets))};
	int ret = 0;

	if (!n)
		goto out;
	if (!r.handles || !r.offsets) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n && !ret; i++)
		ret = restore_bo(&r, i, err, errlen);
	if (!ret)
		ret = write_contents(&r, img->id, err, errlen);
	if (!ret)
		ret = note_vmas(&r, vmas, err, errlen);
	if (ret)
		undo(&r);
out:
	free(r.handles);
	free(r.offsets);
	return ret;
}
