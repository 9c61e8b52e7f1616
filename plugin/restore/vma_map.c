// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/restore/vma_map.h"

#define KFD_MMAP_TYPE_SHIFT  62
#define KFD_MMAP_TYPE_EVENTS 2ull
#define KFD_MMAP_GPU_SHIFT   46
#define KFD_MMAP_GPU_MASK    (0xFFFFull << KFD_MMAP_GPU_SHIFT)

static int cmp_key(uint32_t minor_a, uint64_t off_a, uint32_t minor_b, uint64_t off_b)
{
	if (minor_a != minor_b)
		return minor_a < minor_b ? -1 : 1;
	return off_a < off_b ? -1 : off_a > off_b;
}

static int cmp_bo(const void *a, const void *b)
{
	const struct vma_bo *x = a, *y = b;

	return cmp_key(x->old_minor, x->old_offset, y->old_minor, y->old_offset);
}

static int cmp_kfd(const void *a, const void *b)
{
	const struct vma_kfd *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts BOs for the lookups; -EINVAL when two overlap. */
static int sort_bos(struct vma_bo *bos, size_t n)
{
	size_t i;

	if (n)
		qsort(bos, n, sizeof(*bos), cmp_bo);
	for (i = 1; i < n; i++)
		if (bos[i].old_minor == bos[i - 1].old_minor &&
		    bos[i - 1].old_offset + bos[i - 1].size > bos[i].old_offset)
			return -EINVAL;
	return 0;
}

int vma_map_init(struct vma_map *m, struct vma_bo *bos, size_t n_bos, struct vma_gpu *gpus,
		 size_t n_gpus, struct vma_kfd *kfd, size_t n_kfd)
{
	m->kfd = kfd;
	m->n_kfd = n_kfd;
	if (n_kfd)
		qsort(kfd, n_kfd, sizeof(*kfd), cmp_kfd);
	m->bos = bos;
	m->n_bos = n_bos;
	m->gpus = gpus;
	m->n_gpus = n_gpus;
	return sort_bos(bos, n_bos);
}

int vma_map_add_bos(struct vma_map *m, const struct vma_bo *bos, size_t n)
{
	struct vma_bo *all = malloc((m->n_bos + n + 1) * sizeof(*all));
	int ret;

	if (!all)
		return -ENOMEM;
	if (m->n_bos)
		memcpy(all, m->bos, m->n_bos * sizeof(*all));
	memcpy(all + m->n_bos, bos, n * sizeof(*bos));
	ret = sort_bos(all, m->n_bos + n);
	if (ret) { /* the map stays as it was */
		free(all);
		return ret;
	}
	free(m->bos);
	m->bos = all;
	m->n_bos += n;
	return 0;
}

void vma_map_free(struct vma_map *m)
{
	free(m->bos);
	free(m->gpus);
	free(m->kfd);
	m->bos = NULL;
	m->gpus = NULL;
	m->kfd = NULL;
	m->n_bos = m->n_gpus = m->n_kfd = 0;
}

const struct vma_bo *vma_map_find_bo(const struct vma_map *m, uint32_t old_minor, uint64_t pgoff)
{
	size_t lo = 0, hi = m->n_bos, mid;
	const struct vma_bo *b;

	/* last BO with key <= (old_minor, pgoff) */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cmp_key(m->bos[mid].old_minor, m->bos[mid].old_offset, old_minor, pgoff) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	b = &m->bos[lo - 1];
	if (b->old_minor != old_minor || pgoff - b->old_offset >= b->size)
		return NULL;
	return b;
}

int vma_map_kfd_offset(const struct vma_map *m, uint64_t addr, uint64_t old_pgoff,
		       uint64_t *new_pgoff)
{
	uint32_t gpu = (uint32_t)((old_pgoff & KFD_MMAP_GPU_MASK) >> KFD_MMAP_GPU_SHIFT);
	struct vma_kfd key = {.addr = addr};
	const struct vma_kfd *k;
	size_t i;

	k = m->n_kfd ? bsearch(&key, m->kfd, m->n_kfd, sizeof(*k), cmp_kfd) : NULL;
	if (k) {
		*new_pgoff = k->new_offset;
		return 0;
	}
	if (!gpu) { /* the event page: no GPU in it, or nothing left of the offset */
		*new_pgoff = old_pgoff ? old_pgoff : KFD_MMAP_TYPE_EVENTS << KFD_MMAP_TYPE_SHIFT;
		return 0;
	}
	for (i = 0; i < m->n_gpus; i++) {
		if (m->gpus[i].old_actual_gpu_id != gpu)
			continue;
		*new_pgoff = (old_pgoff & ~KFD_MMAP_GPU_MASK) |
			     ((uint64_t)m->gpus[i].new_actual_gpu_id << KFD_MMAP_GPU_SHIFT);
		return 0;
	}
	return -ENOENT;
}
