// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "datapath/bo_copy_render.h"

struct render_bo {
	uint8_t *map;
	uint64_t size;
};

static int cmp_map(const void *a, const void *b)
{
	const struct bo_render_map *x = a, *y = b;

	return x->dmabuf_fd < y->dmabuf_fd ? -1 : x->dmabuf_fd > y->dmabuf_fd;
}

static int render_open_bo(const struct bo_copy_engine *engine, int dmabuf_fd, uint64_t size,
			  enum bo_access access, void **bo)
{
	const struct bo_render_engine *e = engine->priv;
	struct bo_render_map key = {.dmabuf_fd = dmabuf_fd};
	const struct bo_render_map *m;
	struct render_bo *rb;
	int prot = access == BO_ACCESS_WRITE ? PROT_READ | PROT_WRITE : PROT_READ;

	m = bsearch(&key, e->maps, e->n_maps, sizeof(*m), cmp_map);
	if (!m || !size || size > SIZE_MAX)
		return -EINVAL;
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->map = mmap(NULL, (size_t)size, prot, MAP_SHARED, m->drm_fd, (off_t)m->offset);
	if (rb->map == MAP_FAILED) {
		int ret = -errno;

		free(rb);
		return ret;
	}
	rb->size = size;
	*bo = rb;
	return 0;
}

static int render_read(void *bo, uint64_t off, void *buf, size_t len)
{
	struct render_bo *rb = bo;

	if (off > rb->size || len > rb->size - off)
		return -EINVAL;
	memcpy(buf, rb->map + off, len);
	return 0;
}

static int render_write(void *bo, uint64_t off, const void *buf, size_t len)
{
	struct render_bo *rb = bo;

	if (off > rb->size || len > rb->size - off)
		return -EINVAL;
	memcpy(rb->map + off, buf, len);
	return 0;
}

static void render_close_bo(void *bo)
{
	struct render_bo *rb = bo;

	munmap(rb->map, (size_t)rb->size);
	free(rb);
}

static const struct bo_copy_engine_ops render_ops = {
	.open_bo = render_open_bo,
	.read = render_read,
	.write = render_write,
	.close_bo = render_close_bo,
};

void bo_render_engine_init(struct bo_render_engine *e, struct bo_render_map *maps, uint32_t n)
{
	e->engine.ops = &render_ops;
	e->engine.priv = e;
	e->maps = maps;
	e->n_maps = n;
	if (n)
		qsort(maps, n, sizeof(*maps), cmp_map);
}

void bo_render_engine_fini(struct bo_render_engine *e)
{
	free(e->maps);
	e->maps = NULL;
	e->n_maps = 0;
}
