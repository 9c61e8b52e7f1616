// SPDX-License-Identifier: MIT
/*
 * Imports made imports again after KFD's RESTORE (restore_share.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/file_holder.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "images/priv_blob.h"
#include "plugin/restore/render_fds.h"
#include "plugin/restore/restore.h"
#include "plugin/restore/restore_share.h"

#define SHARE_WAIT_MS  (60 * 1000) /* an origin's publication, importers taking it */
#define SHARE_LOCK_MS  (30 * 1000)
#define MAX_IDR_HANDLE (1u << 20) /* bounds the gap fill of a hostile image */

/* The origin of share_id: the image and BO index; -ENOENT if none. */
static int find_origin(const struct restore_session *s, uint32_t share_id, size_t *proc, size_t *bo)
{
	size_t p, b;

	for (p = 0; p < s->n_procs; p++) {
		const KfdProcessEntry *e = s->procs[p].entry;

		for (b = 0; b < e->n_bos; b++)
			if (e->bos[b]->share_id == share_id && !e->bos[b]->shared_import) {
				*proc = p;
				*bo = b;
				return 0;
			}
	}
	return -ENOENT;
}

static uint32_t actual_gpu_of(const KfdProcessEntry *e, uint32_t user_gpu_id)
{
	size_t d;

	for (d = 0; d < e->n_devices; d++)
		if (e->devices[d]->user_gpu_id == user_gpu_id)
			return e->devices[d]->actual_gpu_id;
	return 0;
}

/* One import: its origin exists once, on the same checkpointed GPU; counted. */
static int prepare_import(struct restore_session *s, const struct kfd_process_image *img,
			  const KfdBoEntry *b)
{
	size_t op, ob, p2, b2;

	if (find_origin(s, b->share_id, &op, &ob)) {
		pr_err("pid %u's BO at %#" PRIx64 " imports share %u, whose BO no process of the "
		       "checkpoint has: the checkpoint is incomplete",
		       img->entry->pid, b->addr, b->share_id);
		return -EINVAL;
	}
	for (p2 = op; p2 < s->n_procs; p2++)
		for (b2 = 0; b2 < s->procs[p2].entry->n_bos; b2++) {
			const KfdBoEntry *o = s->procs[p2].entry->bos[b2];

			if ((p2 != op || b2 != ob) && o->share_id == b->share_id &&
			    !o->shared_import) {
				pr_err("share %u has two origins (pids %u and %u): the checkpoint "
				       "is damaged",
				       b->share_id, s->procs[op].entry->pid,
				       s->procs[p2].entry->pid);
				return -EINVAL;
			}
		}
	return shared_share_add_taker(s->shared, b->share_id, s->procs[op].id);
}

/* A dma-buf file: its BO, the origin of its share, must be in the checkpoint. */
static int prepare_file(struct restore_session *s, const struct dmabuf_file_image *f)
{
	size_t op, ob;

	if (find_origin(s, f->entry->share_id, &op, &ob)) {
		pr_err("dma-buf file %u is of share %u, whose BO no process of the checkpoint "
		       "has: the checkpoint is incomplete",
		       f->id, f->entry->share_id);
		return -EINVAL;
	}
	return shared_share_add_taker(s->shared, f->entry->share_id, s->procs[op].id);
}

int restore_share_prepare(struct restore_session *s)
{
	size_t p, b;
	int ret;

	for (p = 0; p < s->n_procs; p++) {
		const KfdProcessEntry *e = s->procs[p].entry;

		for (b = 0; b < e->n_bos; b++) {
			if (!e->bos[b]->shared_import)
				continue;
			ret = prepare_import(s, &s->procs[p], e->bos[b]);
			if (ret == -E2BIG)
				pr_err("more than %u shared BOs: not supported", SHARED_MAX_SHARES);
			if (ret)
				return ret;
		}
	}
	for (p = 0; p < s->n_dmabufs; p++) {
		ret = prepare_file(s, &s->dmabufs[p]);
		if (ret == -E2BIG)
			pr_err("more than %u shared BOs: not supported", SHARED_MAX_SHARES);
		if (ret)
			return ret;
	}
	if (s->shared->n_shares)
		pr_info("%u BOs of the checkpoint are imported by other BOs or held as dma-buf "
			"fds: restored shared",
			s->shared->n_shares);
	return 0;
}

static int remember(struct restore_share_task *t, uint32_t share_id, int fd)
{
	uint32_t *ids = realloc(t->share_ids, (t->n + 1) * sizeof(*ids));
	int *fds;

	if (!ids)
		return -ENOMEM;
	t->share_ids = ids;
	fds = realloc(t->fds, (t->n + 1) * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	t->fds = fds;
	t->share_ids[t->n] = share_id;
	t->fds[t->n++] = fd;
	return 0;
}

int restore_share_publish(struct restore_session *s, const struct kfd_process_image *img,
			  const struct kfd_criu_bo_bucket *bos, const struct match_pair **targets)
{
	const KfdProcessEntry *e = img->entry;
	struct shared_share rec;
	size_t i;
	int fd, dev, ret;

	for (i = 0; i < e->n_bos; i++) {
		const KfdBoEntry *b = e->bos[i];

		if (!b->share_id || b->shared_import ||
		    shared_share_get(s->shared, b->share_id, &rec, shared_deadline(SHARE_LOCK_MS)))
			continue; /* nobody imports it */
		dev = kfd_process_image_device(img, b->gpu_id);
		if (dev < 0 || bos[i].dmabuf_fd == KFD_NO_DMABUF_FD)
			return -EINVAL;
		fd = render_fd_move_high(fcntl((int)bos[i].dmabuf_fd, F_DUPFD_CLOEXEC, 0));
		if (fd < 0) {
			pr_err("pid %u: cannot keep the dma-buf of its shared BO at %#" PRIx64
			       ": %s",
			       e->pid, b->addr, strerror(-fd));
			return fd;
		}
		ret = remember(&s->share, b->share_id, fd);
		if (ret) {
			close(fd);
			return ret;
		}
		rec = (struct shared_share){.pid = (uint32_t)getpid(),
					    .fd = fd,
					    .gpu_id = targets[dev]->dst_gpu_id,
					    .offset = bos[i].restored_offset};
		ret = shared_share_publish(s->shared, b->share_id, &rec,
					   shared_deadline(SHARE_LOCK_MS));
		if (ret)
			return ret;
	}
	return 0;
}

void restore_share_abort(struct restore_session *s, const struct kfd_process_image *img, int error)
{
	const KfdProcessEntry *e = img->entry;
	size_t i;

	for (i = 0; i < e->n_bos; i++)
		if (e->bos[i]->share_id && !e->bos[i]->shared_import)
			shared_share_fail(s->shared, e->bos[i]->share_id, error,
					  shared_deadline(SHARE_LOCK_MS));
	for (i = 0; i < s->share.n; i++)
		close(s->share.fds[i]);
	s->share.n = 0;
}

void restore_share_settle(struct restore_session *s)
{
	uint32_t i;
	int ret;

	for (i = 0; i < s->share.n; i++) {
		ret = shared_share_wait_taken(s->shared, s->share.share_ids[i],
					      shared_deadline(SHARE_WAIT_MS));
		if (ret)
			pr_warn("share %u: not every importer took its dma-buf (%s): closed all "
				"the same",
				s->share.share_ids[i], strerror(-ret));
		close(s->share.fds[i]);
	}
	s->share.n = 0;
	free(s->share.share_ids);
	free(s->share.fds);
	s->share.share_ids = NULL;
	s->share.fds = NULL;
}

/* The user gpu_ids the image's BO i was mapped on (n of them). */
static uint32_t mapped_on(const struct kfd_process_image *img, size_t i, uint32_t *ids)
{
	const KfdProcessEntry *e = img->entry;
	uint32_t n = 0;
	size_t d;

	for (d = 0; d < e->n_devices; d++)
		if (priv_blob_bo_mapped_on(e->priv_data.data, e->priv_data.len, e->n_devices,
					   (uint32_t)i, e->bo_record_size,
					   e->devices[d]->user_gpu_id))
			ids[n++] = e->devices[d]->user_gpu_id;
	return n;
}

/* One import on one GPU of the task. */
struct import {
	size_t bo;
	uint32_t idr;
};

static int cmp_import(const void *a, const void *b)
{
	const struct import *x = a, *y = b;

	return x->idr < y->idr ? -1 : x->idr > y->idr;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Fills the free idr slots in [from, to) with 4 KiB GTT BOs (handles in dummies[]). */
static int fill_gaps(int kfd_fd, uint32_t gpu_id, uint64_t va, const uint32_t *used, size_t n_used,
		     uint32_t from, uint32_t to, uint64_t *dummies, size_t *n_dummies)
{
	uint32_t id;
	int ret;

	for (id = from; id < to; id++) {
		struct kfd_ioctl_alloc_memory_of_gpu_args a = {
			.va_addr = va,
			.size = 4096,
			.gpu_id = gpu_id,
			.flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE};

		if (bsearch(&id, used, n_used, sizeof(*used), cmp_u32))
			continue;
		ret = kfd_alloc_memory(kfd_fd, &a);
		if (ret)
			return ret;
		dummies[(*n_dummies)++] = a.handle;
		if ((uint32_t)a.handle != id) {
			pr_err("GPU %u: KFD gave handle slot %u where slot %u was free: the "
			       "application's handles cannot be kept",
			       gpu_id, (uint32_t)a.handle, id);
			return -EIO;
		}
	}
	return 0;
}

/*
 * Whether the import was of a BO on its own GPU at the dump (the same
 * amdgpu BO, mapped through the same render node) rather than of another
 * GPU's (a GTT BO of its own GPU that shares the pages).
 */
static bool same_device(const struct restore_session *s, const KfdProcessEntry *e,
			const KfdBoEntry *b)
{
	size_t op, ob;

	return !find_origin(s, b->share_id, &op, &ob) &&
	       actual_gpu_of(s->procs[op].entry, s->procs[op].entry->bos[ob]->gpu_id) ==
		       actual_gpu_of(e, b->gpu_id);
}

/* Waits until share_id is published; its record in *rec, -errno if its origin failed. */
static int wait_published(struct restore_session *s, uint32_t share_id, struct shared_share *rec)
{
	int ret = shared_share_wait(s->shared, share_id, rec, shared_deadline(SHARE_WAIT_MS));

	if (!ret && rec->state == SHARED_SHARE_FAILED)
		ret = rec->error ? rec->error : -EIO;
	return ret;
}

/* The published fd duplicated into this task (pidfd_getfd), counted taken; fd or -errno. */
static int take_published(struct restore_session *s, uint32_t share_id,
			  const struct shared_share *rec)
{
	int pidfd = task_pidfd((pid_t)rec->pid), fd;

	if (pidfd < 0)
		return pidfd;
	fd = task_fd_take(pidfd, rec->fd);
	close(pidfd);
	if (fd < 0)
		return fd;
	shared_share_took(s->shared, share_id, shared_deadline(SHARE_LOCK_MS));
	return fd;
}

/*
 * The published dma-buf of share_id, duplicated into this task; counted
 * taken. An import of a BO of its own GPU (same_gpu) must find it there.
 */
static int take_origin(struct restore_session *s, const KfdProcessEntry *e, const KfdBoEntry *b,
		       bool same_gpu, uint32_t dst_gpu_id, struct shared_share *rec)
{
	int fd, ret;

	ret = wait_published(s, b->share_id, rec);
	if (ret) {
		pr_err("pid %u's BO at %#" PRIx64 " imports a BO of another process whose "
		       "restore did not publish it: %s",
		       e->pid, b->addr, strerror(-ret));
		return ret;
	}
	if (same_gpu && rec->gpu_id != dst_gpu_id) {
		pr_err("pid %u's BO at %#" PRIx64 " imports a BO now on GPU %u, but its own GPU "
		       "is now GPU %u: restore both processes onto the same GPUs",
		       e->pid, b->addr, rec->gpu_id, dst_gpu_id);
		return -EXDEV;
	}
	fd = take_published(s, b->share_id, rec);
	if (fd < 0)
		pr_err("pid %u: cannot take the shared BO's dma-buf from pid %u: %s", e->pid,
		       rec->pid, strerror(-fd));
	return fd;
}

int restore_share_file(struct restore_session *s, const struct dmabuf_file_image *f,
		       const struct kfd_process_image *own)
{
	struct shared_share rec;
	struct shared_image img;
	int fd, ret;

	ret = shared_share_get(s->shared, f->entry->share_id, &rec, shared_deadline(SHARE_LOCK_MS));
	/* this task's own BO, its /dev/kfd file not restored yet: it would wait for itself */
	if (!ret && rec.state == SHARED_SHARE_PENDING && own && own->id == rec.origin_image &&
	    !shared_image_get(s->shared, own->id, &img, shared_deadline(SHARE_LOCK_MS)) &&
	    img.state == SHARED_IMAGE_PENDING) {
		pr_err("dma-buf file %u is of a BO of this process, whose /dev/kfd file CRIU "
		       "restores after it (a lower fd number): CRIU 4.1.1 cannot restore them in "
		       "the other order",
		       f->id);
		return -EDEADLK;
	}
	if (!ret)
		ret = wait_published(s, f->entry->share_id, &rec);
	if (ret) {
		pr_err("dma-buf file %u: the restore of its BO's process did not publish it: %s",
		       f->id, strerror(-ret));
		return ret;
	}
	fd = take_published(s, f->entry->share_id, &rec);
	if (fd < 0) {
		pr_err("dma-buf file %u: cannot take it from pid %u: %s", f->id, rec.pid,
		       strerror(-fd));
		return fd;
	}
	pr_info("dma-buf file %u: share %u, from pid %u", f->id, f->entry->share_id, rec.pid);
	return fd;
}

static int import_one(struct restore_session *s, const struct kfd_process_image *img, int kfd_fd,
		      const struct import *im, uint32_t gpu_id, uint32_t dst_gpu_id,
		      struct kfd_criu_bo_bucket *bos)
{
	const KfdBoEntry *b = img->entry->bos[im->bo];
	struct kfd_ioctl_import_dmabuf_args a = {.va_addr = b->addr, .gpu_id = gpu_id};
	bool same_gpu = same_device(s, img->entry, b);
	struct shared_share rec;
	int fd, ret;

	fd = take_origin(s, img->entry, b, same_gpu, dst_gpu_id, &rec);
	if (fd < 0)
		return fd;
	a.dmabuf_fd = (uint32_t)fd;
	ret = kfd_import_dmabuf(kfd_fd, &a);
	close(fd);
	if (ret) {
		pr_err("pid %u: IMPORT_DMABUF of its shared BO at %#" PRIx64 " failed: %s",
		       img->entry->pid, b->addr, strerror(-ret));
		return ret;
	}
	if (a.handle != KFD_HANDLE(gpu_id, im->idr)) {
		pr_err("pid %u: its shared BO at %#" PRIx64 " came back with KFD handle %#" PRIx64
		       ", it had %#" PRIx64,
		       img->entry->pid, b->addr, (uint64_t)a.handle, KFD_HANDLE(gpu_id, im->idr));
		return -EIO;
	}
	/* another GPU's BO: KFD tells no mmap offset of the import (restore_share.h) */
	bos[im->bo].restored_offset = same_gpu ? rec.offset : RESTORE_SHARE_NO_OFFSET;
	return 0;
}

bool restore_share_no_vma(const struct kfd_process_image *img, const struct kfd_criu_bo_bucket *bos,
			  size_t i)
{
	const KfdProcessEntry *e = img->entry;
	size_t j;

	if (!e->bos[i]->shared_import)
		return false;
	if (bos[i].restored_offset == RESTORE_SHARE_NO_OFFSET)
		return true;
	/* its origin in this very process has the same offset: one entry serves both */
	for (j = 0; j < e->n_bos; j++)
		if (j != i && !e->bos[j]->shared_import && e->bos[j]->gpu_id == e->bos[i]->gpu_id &&
		    e->bos[j]->offset == e->bos[i]->offset)
			return true;
	return false;
}

/* The idr slots RESTORE filled on GPU gpu_id: every BO there but the imports. */
static int used_slots(const struct kfd_process_image *img, uint32_t gpu_id, uint32_t **used,
		      size_t *n)
{
	const KfdProcessEntry *e = img->entry;
	size_t i;
	uint32_t idr;

	*n = 0;
	*used = calloc(e->n_bos + 1, sizeof(**used));
	if (!*used)
		return -ENOMEM;
	for (i = 0; i < e->n_bos; i++) {
		if (e->bos[i]->gpu_id != gpu_id || e->bos[i]->shared_import)
			continue;
		if (priv_blob_bo_idr_handle(e->priv_data.data, e->priv_data.len, e->n_devices,
					    (uint32_t)i, e->bo_record_size, &idr))
			return -EINVAL;
		(*used)[(*n)++] = idr;
	}
	qsort(*used, *n, sizeof(**used), cmp_u32);
	return 0;
}

/* The imports of one GPU: private BOs freed, gaps filled, imported, dummies freed, mapped. */
static int import_gpu(struct restore_session *s, const struct kfd_process_image *img, int kfd_fd,
		      struct import *ims, size_t n, uint32_t gpu_id, uint32_t dst_gpu_id,
		      struct kfd_criu_bo_bucket *bos)
{
	uint32_t ids[64], *used = NULL, from = 0, nm;
	uint64_t *dummies = NULL;
	size_t n_used, n_dummies = 0, i;
	int ret = 0;

	qsort(ims, n, sizeof(*ims), cmp_import);
	for (i = 0; i < n && !ret; i++) {
		nm = mapped_on(img, ims[i].bo, ids);
		ret = kfd_map_memory(kfd_fd, KFD_HANDLE(gpu_id, ims[i].idr), ids, nm, false);
		if (!ret)
			ret = kfd_free_memory(kfd_fd, KFD_HANDLE(gpu_id, ims[i].idr));
	}
	if (ret) {
		pr_err("pid %u: cannot free the private copy RESTORE made of a shared BO: %s",
		       img->entry->pid, strerror(-ret));
		return ret;
	}
	ret = used_slots(img, gpu_id, &used, &n_used);
	if (!ret)
		dummies = calloc(ims[n - 1].idr + 1, sizeof(*dummies));
	if (!ret && !dummies)
		ret = -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		ret = fill_gaps(kfd_fd, gpu_id, img->entry->bos[ims[i].bo]->addr, used, n_used,
				from, ims[i].idr, dummies, &n_dummies);
		if (!ret)
			ret = import_one(s, img, kfd_fd, &ims[i], gpu_id, dst_gpu_id, bos);
		from = ims[i].idr + 1;
	}
	for (i = 0; i < n_dummies; i++)
		kfd_free_memory(kfd_fd, dummies[i]);
	for (i = 0; i < n && !ret; i++) {
		nm = mapped_on(img, ims[i].bo, ids);
		ret = kfd_map_memory(kfd_fd, KFD_HANDLE(gpu_id, ims[i].idr), ids, nm, true);
		if (ret)
			pr_err("pid %u: cannot map its shared BO at %#" PRIx64 " again: %s",
			       img->entry->pid, img->entry->bos[ims[i].bo]->addr, strerror(-ret));
	}
	if (!ret && n_dummies)
		pr_info("pid %u GPU %u: %zu free handle slots filled for a moment to keep the "
			"imports' handles",
			img->entry->pid, gpu_id, n_dummies);
	free(used);
	free(dummies);
	return ret;
}

int restore_share_import(struct restore_session *s, const struct kfd_process_image *img, int kfd_fd,
			 struct kfd_criu_bo_bucket *bos, const struct match_pair **targets)
{
	const KfdProcessEntry *e = img->entry;
	struct import *ims = calloc(e->n_bos + 1, sizeof(*ims));
	size_t d, i, n;
	int ret = ims ? 0 : -ENOMEM;

	if (e->n_devices > 64)
		ret = -E2BIG;
	for (d = 0; d < e->n_devices && !ret; d++) {
		uint32_t gpu_id = e->devices[d]->user_gpu_id;

		for (i = 0, n = 0; i < e->n_bos && !ret; i++) {
			if (!e->bos[i]->shared_import || e->bos[i]->gpu_id != gpu_id)
				continue;
			ims[n].bo = i;
			ret = priv_blob_bo_idr_handle(e->priv_data.data, e->priv_data.len,
						      e->n_devices, (uint32_t)i, e->bo_record_size,
						      &ims[n].idr);
			if (!ret && ims[n].idr >= MAX_IDR_HANDLE)
				ret = -E2BIG;
			n++;
		}
		if (!ret && n)
			ret = import_gpu(s, img, kfd_fd, ims, n, gpu_id, targets[d]->dst_gpu_id,
					 bos);
	}
	free(ims);
	return ret;
}

int restore_share_wait_origins(struct restore_session *s, uint32_t image_id, uint64_t deadline_ms)
{
	const struct kfd_process_image *img = NULL;
	struct shared_share rec;
	size_t i;
	int ret;

	for (i = 0; i < s->n_procs; i++)
		if (s->procs[i].id == image_id)
			img = &s->procs[i];
	for (i = 0; img && i < img->entry->n_bos; i++) {
		if (!img->entry->bos[i]->shared_import)
			continue;
		ret = shared_share_get(s->shared, img->entry->bos[i]->share_id, &rec, deadline_ms);
		if (!ret && rec.origin_image != image_id)
			ret = restore_copier_wait(&s->copier, rec.origin_image, deadline_ms);
		if (ret)
			return ret;
	}
	return 0;
}
