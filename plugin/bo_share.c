// SPDX-License-Identifier: MIT
/*
 * KFD BOs that are one buffer, found by their dma-buf's inode (bo_share.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <linux/kfd_ioctl.h>
#include <linux/magic.h>

#include "bo_share.h"

#define ENV_POLICY "AMDGPU_CRIU_SHARED_BO"

struct bo_share_seen {
	dev_t dev;
	ino_t ino;
	uint32_t share_id;
	struct bo_share_bo first;
};

int bo_share_policy_get(enum bo_share_policy *policy, char *why, size_t why_len)
{
	const char *v = getenv(ENV_POLICY);

	*policy = BO_SHARE_SHARE;
	if (!v || !*v || !strcmp(v, "share"))
		return 0;
	if (!strcmp(v, "refuse") || !strcmp(v, "copy")) {
		*policy = !strcmp(v, "copy") ? BO_SHARE_COPY : BO_SHARE_REFUSE;
		return 0;
	}
	snprintf(why, why_len, "%s=%s: unknown; use share (the default), refuse or copy",
		 ENV_POLICY, v);
	return -EINVAL;
}

void bo_share_init(struct bo_share_table *t)
{
	memset(t, 0, sizeof(*t));
}

void bo_share_fini(struct bo_share_table *t)
{
	tdestroy(t->root, free);
	memset(t, 0, sizeof(*t));
}

static int seen_cmp(const void *a, const void *b)
{
	const struct bo_share_seen *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

int bo_share_add(struct bo_share_table *t, dev_t dev, ino_t ino, const struct bo_share_bo *bo,
		 const struct bo_share_bo **first, uint32_t *share_id)
{
	struct bo_share_seen *s = malloc(sizeof(*s)), **found;

	if (!s)
		return -ENOMEM;
	*s = (struct bo_share_seen){
		.dev = dev, .ino = ino, .share_id = (uint32_t)t->n + 1, .first = *bo};
	found = tsearch(s, &t->root, seen_cmp);
	if (!found) {
		free(s);
		return -ENOMEM;
	}
	if (*found != s) {
		free(s);
		*first = &(*found)->first;
		*share_id = (*found)->share_id;
		t->shared++;
		return -EEXIST;
	}
	*share_id = s->share_id;
	t->n++;
	return 0;
}

int bo_share_find(const struct bo_share_table *t, dev_t dev, ino_t ino, uint32_t *share_id,
		  const struct bo_share_bo **first)
{
	const struct bo_share_seen key = {.dev = dev, .ino = ino};
	struct bo_share_seen *const *found = tfind(&key, &t->root, seen_cmp);

	if (!found)
		return -ENOENT;
	*share_id = (*found)->share_id;
	*first = &(*found)->first;
	return 0;
}

int bo_share_add_fd(struct bo_share_table *t, int dmabuf_fd, const struct bo_share_bo *bo,
		    const struct bo_share_bo **first, uint32_t *share_id)
{
	struct stat st;

	if (fstat(dmabuf_fd, &st))
		return -errno;
	return bo_share_add(t, st.st_dev, st.st_ino, bo, first, share_id);
}

static const char *domain(uint32_t alloc_flags)
{
	if (alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		return "VRAM";
	return alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT ? "GTT" : "memory";
}

void bo_share_describe(const struct bo_share_bo *first, const struct bo_share_bo *second, char *buf,
		       size_t len)
{
	snprintf(buf, len,
		 "pid %u's BO at %#" PRIx64 " (%" PRIu64 " KiB of %s, GPU %u) and pid %u's BO "
		 "at %#" PRIx64 " (%" PRIu64 " KiB of %s, GPU %u) are one buffer (the same "
		 "dma-buf: one was imported from the other, AMDKFD_IOC_IMPORT_DMABUF)",
		 first->pid, first->addr, first->size >> 10, domain(first->alloc_flags),
		 first->gpu_id, second->pid, second->addr, second->size >> 10,
		 domain(second->alloc_flags), second->gpu_id);
}

bool bo_share_is_dmabuf(int fd)
{
	struct statfs f;

	return !fstatfs(fd, &f) && f.f_type == DMA_BUF_MAGIC;
}
