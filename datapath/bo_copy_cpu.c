// SPDX-License-Identifier: MIT
/*
 * CPU copy engine: BO contents through mmap(MAP_SHARED) of the dma-buf fd,
 * copied to or from staging, or (view) read by the stream in place.
 *
 * Only one window (BO_COPY_CPU_WINDOW from the page of the first offset asked
 * for, or more if one access needs it) is mapped at a time, so a 64 GiB BO
 * never needs 64 GiB of address space or page tables.
 * The dma-buf CPU-access protocol (Documentation/driver-api/dma-buf.rst)
 * brackets every access with DMA_BUF_IOCTL_SYNC so that caches and the
 * exporter's state are coherent; fds that are not dma-bufs (memfds standing
 * in for them in tests) answer ENOTTY, which is fine for them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "datapath/bo_stream_types.h"

/* A mapped range of a BO: [map, map + map_len) holds BO bytes from map_off. */
struct cpu_window {
	uint8_t *map;
	size_t map_len;
	uint64_t map_off;
};

struct cpu_bo {
	int fd;
	uint64_t size;
	enum bo_access access;
	uint64_t page_size;
	struct cpu_window win; /* map NULL: none */
};

static int cpu_open_bo(const struct bo_copy_engine *engine, int dmabuf_fd, uint64_t size,
		       enum bo_access access, void **bo)
{
	struct cpu_bo *cb;
	long page = sysconf(_SC_PAGESIZE);

	(void)engine;
	if (dmabuf_fd < 0 || page <= 0 || size > INT64_MAX)
		return -EINVAL;
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	cb->fd = dmabuf_fd;
	cb->size = size;
	cb->access = access;
	cb->page_size = (uint64_t)page;
	*bo = cb;
	return 0;
}

static int dmabuf_sync(const struct cpu_bo *cb, uint64_t phase)
{
	struct dma_buf_sync sync = {
		.flags = phase |
			 (cb->access == BO_ACCESS_READ ? DMA_BUF_SYNC_READ : DMA_BUF_SYNC_WRITE),
	};

	for (;;) {
		if (!ioctl(cb->fd, DMA_BUF_IOCTL_SYNC, &sync))
			return 0;
		if (errno == ENOTTY)
			return 0;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

static int window_unmap(struct cpu_window *w)
{
	int ret = 0;

	if (w->map && munmap(w->map, w->map_len))
		ret = -errno;
	w->map = NULL;
	return ret;
}

/* The window holding [off, off + len): the current one, or a new one from off's page on. */
static int window_get(struct cpu_bo *cb, uint64_t off, size_t len, uint8_t **p)
{
	struct cpu_window *w = &cb->win;
	uint64_t map_off = off & ~(cb->page_size - 1), map_len;
	int prot = cb->access == BO_ACCESS_READ ? PROT_READ : PROT_READ | PROT_WRITE;
	void *map;
	int ret;

	if (!len || off > cb->size || len > cb->size - off)
		return -EINVAL;
	if (!w->map || off < w->map_off || off + len > w->map_off + w->map_len) {
		ret = window_unmap(w);
		if (ret)
			return ret;
		map_len = cb->size - map_off;
		if (map_len > BO_COPY_CPU_WINDOW)
			map_len = BO_COPY_CPU_WINDOW;
		if (map_len < off - map_off + len)
			map_len = off - map_off + len;
		map = mmap(NULL, (size_t)map_len, prot, MAP_SHARED | MAP_POPULATE, cb->fd,
			   (off_t)map_off);
		if (map == MAP_FAILED)
			return -errno;
		*w = (struct cpu_window){
			.map = map, .map_len = (size_t)map_len, .map_off = map_off};
	}
	*p = w->map + (off - w->map_off);
	return 0;
}

/* Syncs, copies in the direction asked, syncs back (the window stays mapped). */
static int cpu_copy(struct cpu_bo *cb, uint64_t off, void *host, size_t len)
{
	uint8_t *p = NULL;
	int ret;

	ret = window_get(cb, off, len, &p);
	if (ret)
		return ret;
	ret = dmabuf_sync(cb, DMA_BUF_SYNC_START);
	if (ret)
		return ret;
	if (cb->access == BO_ACCESS_READ)
		memcpy(host, p, len);
	else
		memcpy(p, host, len);
	return dmabuf_sync(cb, DMA_BUF_SYNC_END);
}

static int cpu_read(void *bo, uint64_t off, void *buf, size_t len)
{
	struct cpu_bo *cb = bo;

	if (cb->access != BO_ACCESS_READ)
		return -EBADF;
	return cpu_copy(cb, off, buf, len);
}

static int cpu_write(void *bo, uint64_t off, const void *buf, size_t len)
{
	struct cpu_bo *cb = bo;

	if (cb->access != BO_ACCESS_WRITE)
		return -EBADF;
	/* cpu_copy only reads from buf in this direction. */
	return cpu_copy(cb, off, (void *)buf, len);
}

/* The window's bytes in place, between the dma-buf's SYNC_START and SYNC_END. */
static int cpu_view(void *bo, uint64_t off, size_t len, const void **p)
{
	struct cpu_bo *cb = bo;
	uint8_t *map = NULL;
	int ret;

	if (cb->access != BO_ACCESS_READ)
		return -EBADF;
	ret = window_get(cb, off, len, &map);
	if (!ret)
		ret = dmabuf_sync(cb, DMA_BUF_SYNC_START);
	if (!ret)
		*p = map;
	return ret;
}

static int cpu_view_end(void *bo)
{
	return dmabuf_sync(bo, DMA_BUF_SYNC_END);
}

static void cpu_close_bo(void *bo)
{
	struct cpu_bo *cb = bo;

	window_unmap(&cb->win);
	free(bo);
}

static const struct bo_copy_engine_ops cpu_engine_ops = {
	.open_bo = cpu_open_bo,
	.read = cpu_read,
	.write = cpu_write,
	.view = cpu_view,
	.view_end = cpu_view_end,
	.close_bo = cpu_close_bo,
};

const struct bo_copy_engine bo_copy_engine_cpu = {
	.ops = &cpu_engine_ops,
	.priv = NULL,
};
