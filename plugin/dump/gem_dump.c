// SPDX-License-Identifier: MIT
/*
 * Dump of a render-node file's GEM BOs (gem_dump.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath/bo_stream.h"
#include "plugin/drm_uapi_618.h"
#include "plugin/dump/gem_dump.h"
#include "plugin/log.h"

/* A BO's mappings: GET_MAPPING_INFO asked for the count, then for the entries. */
static int get_mappings(const struct gem_dump_ctx *ctx, int fd, uint32_t handle,
			struct drm_amdgpu_gem_vm_entry **out, uint32_t *n)
{
	struct drm_amdgpu_gem_vm_entry *v = NULL;
	struct drm_amdgpu_gem_op_618 op = {.handle = handle, .op = AMDGPU_GEM_OP_GET_MAPPING_INFO};
	int tries, ret;

	*out = NULL;
	*n = 0;
	ret = ctx->ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_OP_618, &op);
	for (tries = 0; !ret && op.num_entries && tries < 4; tries++) {
		uint32_t cap = op.num_entries;

		if (cap > KFD_IMAGE_MAX_GEM_MAPPINGS)
			return -E2BIG;
		free(v);
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		op = (struct drm_amdgpu_gem_op_618){.handle = handle,
						    .op = AMDGPU_GEM_OP_GET_MAPPING_INFO,
						    .value = (uintptr_t)v,
						    .num_entries = cap};
		ret = ctx->ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_OP_618, &op);
		if (!ret && op.num_entries <= cap)
			break;
	}
	if (!ret && op.num_entries && tries == 4)
		ret = -EAGAIN;
	if (ret) {
		free(v);
		return ret;
	}
	*out = v;
	*n = op.num_entries;
	return 0;
}

static void free_bo_entry(GemBoEntry *b)
{
	size_t j;

	if (!b)
		return;
	for (j = 0; j < b->n_mappings; j++)
		free(b->mappings[j]);
	free(b->mappings);
	free(b);
}

void gem_dump_entry_free(RenderFileEntry *e)
{
	size_t i;

	for (i = 0; i < e->n_gem_bos; i++)
		free_bo_entry(e->gem_bos[i]);
	free(e->gem_bos);
	e->gem_bos = NULL;
	e->n_gem_bos = 0;
}

static GemBoEntry *new_bo_entry(const struct drm_amdgpu_gem_list_handles_entry *l,
				const struct drm_amdgpu_gem_vm_entry *v, uint32_t n_map)
{
	GemBoEntry *b = calloc(1, sizeof(*b));
	uint32_t j;

	if (!b)
		return NULL;
	gem_bo_entry__init(b);
	b->handle = l->gem_handle;
	b->size = l->size;
	b->preferred_domains = l->preferred_domains;
	b->alloc_flags = l->alloc_flags;
	b->alignment = l->alignment;
	b->mappings = calloc(n_map + 1, sizeof(*b->mappings));
	if (!b->mappings) {
		free(b);
		return NULL;
	}
	for (j = 0; j < n_map; j++) {
		GemMappingEntry *m = calloc(1, sizeof(*m));

		if (!m) {
			free_bo_entry(b);
			return NULL;
		}
		gem_mapping_entry__init(m);
		m->addr = v[j].addr;
		m->size = v[j].size;
		m->offset = v[j].offset;
		m->flags = v[j].flags;
		b->mappings[b->n_mappings++] = m;
	}
	return b;
}

/* The mmap offset and a dma-buf of one handle. */
static int export_bo(const struct gem_dump_ctx *ctx, int fd, GemBoEntry *b, int *dmabuf_fd)
{
	union drm_amdgpu_gem_mmap mmap_args = {.in.handle = b->handle};
	struct drm_prime_handle prime = {.handle = b->handle, .flags = DRM_CLOEXEC | DRM_RDWR};
	int ret;

	ret = ctx->ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mmap_args);
	if (ret)
		return ret;
	b->mmap_offset = mmap_args.out.addr_ptr;
	ret = ctx->ioctl_fn(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret)
		return ret;
	*dmabuf_fd = prime.fd;
	return 0;
}

/* One listed handle: its entry, and its dma-buf into bo. */
static int record_bo(const struct gem_dump_ctx *ctx, int fd,
		     const struct drm_amdgpu_gem_list_handles_entry *l, GemBoEntry **out,
		     struct bo_stream_bo *bo, char *err, size_t errlen)
{
	struct drm_amdgpu_gem_vm_entry *v;
	uint32_t n_map;
	GemBoEntry *b;
	int ret;

	if (l->flags & AMDGPU_GEM_LIST_HANDLES_FLAG_IS_IMPORT) {
		snprintf(err, errlen,
			 "GEM handle %u is a PRIME import of another device's buffer (%llu KiB), "
			 "which the plugin cannot restore as shared: refused; close it "
			 "before the checkpoint",
			 l->gem_handle, (unsigned long long)(l->size >> 10));
		return -EOPNOTSUPP;
	}
	ret = get_mappings(ctx, fd, l->gem_handle, &v, &n_map);
	if (ret) {
		snprintf(err, errlen, "GEM handle %u: GET_MAPPING_INFO: %s", l->gem_handle,
			 strerror(-ret));
		return ret;
	}
	b = new_bo_entry(l, v, n_map);
	free(v);
	if (!b)
		return -ENOMEM;
	ret = export_bo(ctx, fd, b, &bo->dmabuf_fd);
	if (ret) {
		snprintf(err, errlen, "GEM handle %u: cannot export it to read it: %s",
			 l->gem_handle, strerror(-ret));
		free_bo_entry(b);
		return ret;
	}
	bo->size = b->size;
	bo->gpu_va = n_map ? b->mappings[0]->addr : 0;
	*out = b;
	if (ctx->check_dmabuf)
		ret = ctx->check_dmabuf(ctx->check_arg, bo->dmabuf_fd, b->handle, err, errlen);
	return ret;
}

static int cmp_handle(const void *a, const void *b)
{
	uint32_t x = ((const struct drm_amdgpu_gem_list_handles_entry *)a)->gem_handle,
		 y = ((const struct drm_amdgpu_gem_list_handles_entry *)b)->gem_handle;

	return x < y ? -1 : x > y;
}

static int write_contents(const struct gem_dump_ctx *ctx, struct copy_gpu gpu, uint32_t id,
			  struct bo_stream_gpu *g, char *err, size_t errlen)
{
	struct bo_stream_config cfg = {.dir_fd = ctx->dir_fd,
				       .image_id = id,
				       .sync = true,
				       .write_mode = ctx->write_mode,
				       .has_parent = ctx->parent_dir_fd >= 0,
				       .parent_dir_fd = ctx->parent_dir_fd};
	char what[64];

	snprintf(what, sizeof(what), "dump of render file %u's GEM BOs:", id);
	return copy_engines_dump(ctx->engine_opts, &cfg, &gpu, 1, g, what, err, errlen);
}

int gem_dump_file(const struct gem_dump_ctx *ctx, int fd, uint32_t id, RenderFileEntry *e,
		  char *err, size_t errlen)
{
	struct drm_amdgpu_gem_list_handles_entry *l = NULL;
	struct bo_stream_gpu g = {.gpu_id = ctx->gpu.gpu_id};
	struct copy_gpu gpu = ctx->gpu;
	uint32_t n, i;
	int ret;

	ret = gem_handles_list(fd, ctx->ioctl_fn, &l, &n);
	if (ret == -EOPNOTSUPP)
		return 0;
	if (ret) {
		snprintf(err, errlen, "GEM_LIST_HANDLES: %s", strerror(-ret));
		return ret;
	}
	if (!n)
		goto out;
	qsort(l, n, sizeof(*l), cmp_handle);
	e->gem_bos = calloc(n, sizeof(*e->gem_bos));
	g.bos = calloc(n, sizeof(*g.bos));
	if (!e->gem_bos || !g.bos) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		g.bos[i].dmabuf_fd = -1;
	for (i = 0; i < n && !ret; i++) {
		ret = record_bo(ctx, fd, &l[i], &e->gem_bos[i], &g.bos[i], err, errlen);
		e->n_gem_bos += e->gem_bos[i] != NULL;
		g.bo_count = i + 1;
		if (!ret && l[i].preferred_domains & AMDGPU_GEM_DOMAIN_VRAM &&
		    !(l[i].alloc_flags & AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED))
			gpu.invisible_bos++;
	}
	if (!ret)
		ret = write_contents(ctx, gpu, id, &g, err, errlen); /* closes every dma-buf */
out:
	for (i = 0; i < g.bo_count; i++)
		if (g.bos[i].dmabuf_fd >= 0)
			close(g.bos[i].dmabuf_fd);
	free(g.bos);
	free(l);
	if (ret) {
		bo_stream_remove(ctx->dir_fd, id, ctx->gpu.gpu_id);
		gem_dump_entry_free(e);
	}
	return ret;
}
