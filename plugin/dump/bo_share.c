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

#include "plugin/dump/bo_share.h"
#include "plugin/kfd_dev.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "common/escape.h"

struct bo_share_seen {
	dev_t dev;
	ino_t ino;
	uint32_t share_id;
	struct bo_share_bo first;
};

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

/*
 * The actual gpu_id of the GPU whose BO the dma-buf is (GET_DMABUF_INFO on
 * the plugin's own KFD handle); 0 if KFD cannot tell (logged).
 */
static uint32_t dmabuf_exporter(int kfd, int dmabuf_fd)
{
	uint32_t gpu_id = 0;
	int ret = kfd < 0 ? -EBADF : kfd_dmabuf_gpu(kfd, dmabuf_fd, &gpu_id);

	if (ret && kfd >= 0)
		pr_warn("GET_DMABUF_INFO on a BO's dma-buf failed: %s", strerror(-ret));
	return ret ? 0 : gpu_id;
}

/*
 * Numbers every BO's dma-buf in the dump (bo_share.h). A BO whose dma-buf
 * a BO checkpointed before (this process or another of the tree) has too
 * is one buffer with it: recorded as its import, to be restored as one
 * (refused under the refuse policy; under the copy policy left as a BO of
 * its own, as KFD would restore it: a private copy). The first BO of a
 * dma-buf becomes the origin, the one the restore allocates: it must be
 * the exporter's, on the GPU the dma-buf belongs to; one on another GPU is
 * an import (a GTT BO there) whose BO the dump has not met: refused.
 */
static int note_bos(struct bo_share_table *t, enum bo_share_policy policy,
		    const struct bo_share_process *p, int kfd, uint32_t *share_ids, bool *imports)
{
	const struct bo_share_bo *first;
	uint32_t i, id, exporter;
	char what[512];
	int ret;

	for (i = 0; i < p->n_bos; i++) {
		const struct kfd_criu_bo_bucket *b = &p->bos[i];
		struct bo_share_bo bo = {.pid = p->pid,
					 .gpu_id = b->gpu_id,
					 .actual_gpu_id = b->gpu_id,
					 .addr = b->addr,
					 .size = b->size,
					 .alloc_flags = b->alloc_flags};
		uint32_t d;

		if (b->dmabuf_fd == KFD_NO_DMABUF_FD)
			continue;
		for (d = 0; d < p->n_devices; d++)
			if (p->devices[d].user_gpu_id == b->gpu_id)
				bo.actual_gpu_id = p->devices[d].actual_gpu_id;
		ret = bo_share_add_fd(t, (int)b->dmabuf_fd, &bo, &first, &id);
		if (ret && ret != -EEXIST) {
			pr_err("pid %u: BO %u: cannot identify its dma-buf: %s", p->pid, i,
			       strerror(-ret));
			return ret;
		}
		if (policy != BO_SHARE_COPY)
			share_ids[i] = id;
		if (!ret && policy == BO_SHARE_SHARE &&
		    (exporter = dmabuf_exporter(kfd, (int)b->dmabuf_fd)) &&
		    exporter != bo.actual_gpu_id) {
			pr_err("pid %u's BO at %#" PRIx64 " (%" PRIu64 " KiB, GPU %u) is an import "
			       "of a BO of GPU %u that the dump has not met (a process outside the "
			       "dump, or one CRIU dumps after this one): the restore could not "
			       "share it; refused (AMDGPU_CRIU_SHARED_BO=copy restores a private "
			       "copy)",
			       bo.pid, bo.addr, bo.size >> 10, bo.actual_gpu_id, exporter);
			return -EOPNOTSUPP;
		}
		if (!ret)
			continue;
		bo_share_describe(first, &bo, what, sizeof(what));
		if (policy == BO_SHARE_COPY) {
			pr_warn("%s: restored as private copies (AMDGPU_CRIU_SHARED_BO=copy)",
				what);
		} else if (policy == BO_SHARE_REFUSE) {
			pr_err("%s: refused (AMDGPU_CRIU_SHARED_BO=refuse; share, the default, "
			       "restores them as one buffer)",
			       what);
			return -EOPNOTSUPP;
		} else {
			imports[i] = true;
			pr_info("%s: restored as an import of pid %u's BO (share %u)", what,
				first->pid, id);
		}
	}
	return 0;
}

int bo_share_note_process(struct bo_share_table *t, enum bo_share_policy policy,
			  const struct bo_share_process *p, uint32_t *share_ids, bool *imports)
{
	int kfd = kfd_dev_get(), ret; /* one reference for all: the first opens /dev/kfd */

	ret = note_bos(t, policy, p, kfd, share_ids, imports);
	if (kfd >= 0)
		kfd_dev_put();
	return ret;
}
