// SPDX-License-Identifier: MIT
/*
 * CPU copy engine: BO contents through mmap(MAP_SHARED) of the dma-buf fd.
 *
 * Only one window (the range asked for, rounded out to pages) is mapped at a
 * time, so a 64 GiB BO never needs 64 GiB of address space or page tables.
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

#include "images/bo_stream.h"

struct cpu_bo {
	int fd;
	uint64_t size;
	enum bo_access access;
	uint64_t page_size;
};

/* A mapped range of a BO: [map, map + map_len) holds BO bytes from map_off. */
struct cpu_window {
	uint8_t *map;
	size_t map_len;
	size_t delta; /* where the asked-for offset lies in the mapping */
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

static int window_map(const struct cpu_bo *cb, uint64_t off, size_t len, struct cpu_window *w)
{
	uint64_t map_off = off & ~(cb->page_size - 1);
	int prot = cb->access == BO_ACCESS_READ ? PROT_READ : PROT_READ | PROT_WRITE;
	void *map;

	if (!len || off > cb->size || len > cb->size - off)
		return -EINVAL;
	w->delta = (size_t)(off - map_off);
	w->map_len = w->delta + len;
	map = mmap(NULL, w->map_len, prot, MAP_SHARED | MAP_POPULATE, cb->fd, (off_t)map_off);
	if (map == MAP_FAILED)
		return -errno;
	w->map = map;
	return 0;
}

static int window_unmap(struct cpu_window *w)
{
	return munmap(w->map, w->map_len) ? -errno : 0;
}

/* Maps the window, syncs, copies in the direction asked, syncs back, unmaps. */
static int cpu_copy(struct cpu_bo *cb, uint64_t off, void *host, size_t len)
{
	struct cpu_window w = {0};
	int ret, end_ret, unmap_ret;

	ret = window_map(cb, off, len, &w);
	if (ret)
		return ret;
	ret = dmabuf_sync(cb, DMA_BUF_SYNC_START);
	if (!ret) {
		if (cb->access == BO_ACCESS_READ)
			memcpy(host, w.map + w.delta, len);
		else
			memcpy(w.map + w.delta, host, len);
		end_ret = dmabuf_sync(cb, DMA_BUF_SYNC_END);
		ret = end_ret;
	}
	unmap_ret = window_unmap(&w);
	return ret ? ret : unmap_ret;
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

static void cpu_close_bo(void *bo)
{
	free(bo);
}

static const struct bo_copy_engine_ops cpu_engine_ops = {
	.open_bo = cpu_open_bo,
	.read = cpu_read,
	.write = cpu_write,
	.close_bo = cpu_close_bo,
};

const struct bo_copy_engine bo_copy_engine_cpu = {
	.ops = &cpu_engine_ops,
	.priv = NULL,
};
