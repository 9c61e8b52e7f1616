// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kfd_ioctl.h>
#include "images/vram_check.h"

#define VRAM_PAGE 4096ull

static uint64_t page_align(uint64_t size)
{
	return size > UINT64_MAX - (VRAM_PAGE - 1) ? UINT64_MAX
						   : (size + VRAM_PAGE - 1) & ~(VRAM_PAGE - 1);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* VRAM of one process image on the device recorded with actual gpu_id `src_gpu_id`. */
static uint64_t process_need(const KfdProcessEntry *e, uint32_t src_gpu_id)
{
	uint64_t need = 0;
	size_t d, b;

	for (d = 0; d < e->n_devices; d++) {
		uint32_t user = e->devices[d]->user_gpu_id;

		if (e->devices[d]->actual_gpu_id != src_gpu_id)
			continue;
		for (b = 0; b < e->n_bos; b++)
			if (e->bos[b]->gpu_id == user &&
			    (e->bos[b]->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM))
				need = add_sat(need, page_align(e->bos[b]->size));
	}
	return need;
}

uint64_t vram_need_of(const struct kfd_process_image *procs, size_t n_procs,
		      const struct match_pair *pair)
{
	uint64_t need = 0;
	size_t i;

	for (i = 0; i < n_procs; i++)
		need = add_sat(need, process_need(procs[i].entry, pair->src_gpu_id));
	return need;
}

void vram_check(const struct kfd_process_image *procs, size_t n_procs,
		const struct match_result *map, vram_free_fn free_fn, void *arg,
		struct vram_verdict *v)
{
	uint64_t need, free_bytes;
	size_t i;
	int ret;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < map->n_map; i++) {
		need = vram_need_of(procs, n_procs, &map->map[i]);
		if (!need)
			continue;
		ret = free_fn(arg, map->map[i].dst_gpu_id, &free_bytes);
		if (ret) {
			if (!v->unchecked++) {
				v->unchecked_gpu = map->map[i].dst_gpu_id;
				v->unchecked_err = ret;
			}
			continue;
		}
		v->checked++;
		if (need > free_bytes && !v->short_of) {
			v->short_of = true;
			v->pair = map->map[i];
			v->need = need;
			v->free = free_bytes;
		}
	}
}

int vram_kfd_free(void *arg, uint32_t gpu_id, uint64_t *bytes)
{
	struct kfd_ioctl_get_available_memory_args a = {.gpu_id = gpu_id};

	if (ioctl(*(const int *)arg, AMDKFD_IOC_AVAILABLE_MEMORY, &a))
		return -errno;
	*bytes = a.available;
	return 0;
}
