// SPDX-License-Identifier: MIT
/*
 * The restored task's part of a restore (RESTORE_EXT_FILE, UPDATE_VMA_MAP)
 * and the master's RESUME (see restore.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/file_holder.h"
#include "datapath/bo_copy_render.h"
#include "datapath/bo_stream.h"
#include "plugin/copy_engines.h"
#include "plugin/clock.h"
#include "plugin/kfd_dev.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "plugin/restore/dev_nodes.h"
#include "plugin/restore/restore.h"
#include "plugin/restore/restore_share.h"
#include "plugin/restore/restore_copy.h"

#define SHARED_LOCK_WAIT_MS (30 * 1000)
#define COPY_WAIT_MS	    (60 * 60 * 1000) /* the copier's copy of one process */
#define RENDER_PATH_PREFIX  "/dev/dri/renderD"

/* RESTORE's arguments and answers for one process. */
struct kfd_restore {
	const struct kfd_process_image *img;
	const struct match_pair **targets; /* per device */
	struct kfd_criu_device_bucket *devices;
	struct kfd_criu_bo_bucket *bos;
	int *drm_fds; /* per device (the task's render files, not owned here) */
	int kfd_fd;
	uint64_t bytes;
	bool handed_off; /* the contents went to the master's copier */
};

/* This task's /dev/kfd image: the one whose process had this task's pid. */
static const struct kfd_process_image *own_process_image(const struct restore_session *s)
{
	uint32_t pid = (uint32_t)getpid();
	size_t i;

	for (i = 0; i < s->n_procs; i++)
		if (s->procs[i].entry->pid == pid && s->procs[i].entry->n_devices)
			return &s->procs[i];
	return NULL;
}

static int prepare_buckets(struct restore_session *s, struct kfd_restore *r)
{
	const KfdProcessEntry *e = r->img->entry;
	size_t i;
	int fd;

	r->targets = calloc(e->n_devices + 1, sizeof(*r->targets));
	r->devices = calloc(e->n_devices + 1, sizeof(*r->devices));
	r->bos = calloc(e->n_bos + 1, sizeof(*r->bos));
	r->drm_fds = calloc(e->n_devices + 1, sizeof(*r->drm_fds));
	if (!r->targets || !r->devices || !r->bos || !r->drm_fds)
		return -ENOMEM;
	for (i = 0; i < e->n_devices; i++) {
		const KfdDeviceEntry *d = e->devices[i];
		const struct match_pair *p = restore_target(s, d->actual_gpu_id);

		if (!p)
			return -ENODEV;
		fd = render_fd_get(&s->render, p->dst_render_minor);
		if (fd < 0) {
			pr_err("cannot open /dev/dri/renderD%u for GPU %u: %s%s",
			       p->dst_render_minor, p->dst_gpu_id, strerror(-fd),
			       render_node_hint(fd));
			return fd;
		}
		r->targets[i] = p;
		r->drm_fds[i] = fd;
		r->devices[i] = (struct kfd_criu_device_bucket){.user_gpu_id = d->user_gpu_id,
								.actual_gpu_id = p->dst_gpu_id,
								.drm_fd = (uint32_t)fd};
	}
	for (i = 0; i < e->n_bos; i++) {
		const KfdBoEntry *b = e->bos[i];

		r->bos[i] = (struct kfd_criu_bo_bucket){.addr = b->addr,
							.size = b->size,
							.offset = b->offset,
							.gpu_id = b->gpu_id,
							.alloc_flags = b->alloc_flags,
							.dmabuf_fd = KFD_NO_DMABUF_FD};
	}
	return 0;
}

static int kfd_restore_op(struct kfd_restore *r)
{
	const KfdProcessEntry *e = r->img->entry;
	struct kfd_ioctl_criu_args args = {
		.devices = (uintptr_t)r->devices,
		.bos = (uintptr_t)r->bos,
		.priv_data = (uintptr_t)e->priv_data.data,
		.priv_data_size = e->priv_data.len,
		.num_devices = (uint32_t)e->n_devices,
		.num_bos = (uint32_t)e->n_bos,
		.num_objects = e->num_objects,
		.op = KFD_CRIU_OP_RESTORE,
	};
	int ret = kfd_criu_op(r->kfd_fd, &args);

	if (ret)
		pr_err("KFD RESTORE of pid %u (file %u) failed: %s; this restore is aborted "
		       "(KFD cannot retry it)%s",
		       e->pid, r->img->id, strerror(-ret),
		       ret == -ENOMEM ? ": a GPU or the system is out of memory (another process "
					"may have taken VRAM since the check); nothing is left "
					"behind, retry when memory is free"
				      : "");
	return ret;
}

/* Streams and engines per device that owns BOs with contents (dump order). */
static int build_streams(struct kfd_restore *r, struct bo_stream_gpu *gpus,
			 struct bo_render_engine *engines, struct copy_gpu *copy, uint32_t *n_gpus)
{
	const KfdProcessEntry *e = r->img->entry;
	uint32_t n = 0;
	size_t d, i;

	for (d = 0; d < e->n_devices; d++) {
		uint32_t user = e->devices[d]->user_gpu_id, count = r->img->device_bo_count[d];
		const struct kfd_node *node;
		struct bo_render_map *maps;
		struct bo_stream_gpu *g = &gpus[n];

		if (!count)
			continue;
		/* the image's GPU: the match made the local one alike (heap type too) */
		node = topo_node(&r->img->topo, r->img->device_nodes[d]);
		copy[n] = copy_gpu_of_node(node, user, r->targets[d]->dst_render_minor);
		g->gpu_id = user;
		g->bos = calloc(count, sizeof(*g->bos));
		maps = calloc(count, sizeof(*maps));
		if (!g->bos || !maps) {
			free(g->bos);
			free(maps);
			return -ENOMEM;
		}
		for (i = 0; i < e->n_bos; i++) {
			struct kfd_criu_bo_bucket *b = &r->bos[i];

			if (b->gpu_id != user || !kfd_bo_contents_saved(e->bos[i]))
				continue;
			copy[n].invisible_bos += kfd_bo_maybe_invisible(b->alloc_flags);
			if (b->dmabuf_fd == KFD_NO_DMABUF_FD || g->bo_count == count) {
				free(maps);
				n++;
				*n_gpus = n;
				return -EINVAL;
			}
			maps[g->bo_count] = (struct bo_render_map){.dmabuf_fd = (int)b->dmabuf_fd,
								   .drm_fd = r->drm_fds[d],
								   .offset = b->restored_offset};
			g->bos[g->bo_count++] = (struct bo_stream_bo){
				.size = b->size, .dmabuf_fd = (int)b->dmabuf_fd};
			b->dmabuf_fd = KFD_NO_DMABUF_FD;
			r->bytes += b->size;
		}
		bo_render_engine_init(&engines[n], maps, g->bo_count);
		g->engine = &engines[n].engine;
		n++;
	}
	*n_gpus = n;
	return 0;
}

/*
 * The BO contents: offered to the master's copier (parallel restore: the
 * copy overlaps CRIU's restore of this task's memory; RESUME waits for it),
 * else written here.
 */
static int restore_contents(struct restore_session *s, struct kfd_restore *r, int dir_fd)
{
	size_t nd = r->img->entry->n_devices;
	struct restore_copy_set set = {.image_id = r->img->id,
				       .pid = r->img->entry->pid,
				       .gpus = calloc(nd + 1, sizeof(*set.gpus)),
				       .engines = calloc(nd + 1, sizeof(*set.engines)),
				       .copy = calloc(nd + 1, sizeof(*set.copy))};
	uint64_t bytes;
	int ret;

	ret = set.gpus && set.engines && set.copy
		      ? build_streams(r, set.gpus, set.engines, set.copy, &set.n)
		      : -ENOMEM;
	if (ret == -EINVAL)
		pr_err("pid %u: RESTORE gave no dma-buf for a BO with contents",
		       r->img->entry->pid);
	if (!ret && s->parallel && set.n) {
		ret = restore_copy_offer(s->shared, &set);
		r->handed_off = !ret;
		if (!ret)
			pr_info("pid %u: BO contents handed to the master's copier", set.pid);
		else if (ret == -EAGAIN)
			ret = restore_copy_run(&s->opts.engine, s->shared, dir_fd, &set, &bytes);
	} else if (!ret) {
		ret = restore_copy_run(&s->opts.engine, s->shared, dir_fd, &set, &bytes);
	}
	restore_copy_set_free(&set);
	return ret;
}

static int build_vma_map(struct restore_session *s, struct kfd_restore *r)
{
	const KfdProcessEntry *e = r->img->entry;
	struct vma_bo *bos = calloc(e->n_bos + 1, sizeof(*bos));
	struct vma_gpu *gpus = calloc(e->n_devices + 1, sizeof(*gpus));
	struct vma_kfd *kfd = calloc(e->n_bos + 1, sizeof(*kfd));
	size_t n = 0, n_kfd = 0, i;
	int dev;

	if (!bos || !gpus || !kfd) {
		free(bos);
		free(gpus);
		free(kfd);
		return -ENOMEM;
	}
	for (i = 0; i < e->n_devices; i++)
		gpus[i] = (struct vma_gpu){.old_actual_gpu_id = e->devices[i]->actual_gpu_id,
					   .new_actual_gpu_id = r->targets[i]->dst_gpu_id};
	for (i = 0; i < e->n_bos; i++) {
		if (r->bos[i].alloc_flags &
		    (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP))
			kfd[n_kfd++] = (struct vma_kfd){.addr = r->bos[i].addr,
							.new_offset = r->bos[i].restored_offset};
		if (!kfd_bo_has_contents(r->bos[i].alloc_flags) ||
		    restore_share_no_vma(r->img, r->bos, i))
			continue;
		dev = kfd_process_image_device(r->img, r->bos[i].gpu_id);
		bos[n++] = (struct vma_bo){.old_minor = e->devices[dev]->render_minor,
					   .old_offset = r->bos[i].offset,
					   .size = r->bos[i].size,
					   .new_offset = r->bos[i].restored_offset,
					   .device = (uint32_t)dev};
	}
	vma_map_free(&s->vmas);
	if (vma_map_init(&s->vmas, bos, n, gpus, e->n_devices, kfd, n_kfd)) {
		pr_err("pid %u: checkpointed BOs overlap in their mmap offsets", e->pid);
		return -EINVAL;
	}
	return 0;
}

static void free_restore(struct kfd_restore *r)
{
	kfd_bo_buckets_close_dmabufs(r->bos, (uint32_t)r->img->entry->n_bos);
	free(r->targets);
	free(r->devices);
	free(r->bos);
	free(r->drm_fds);
}

static int restore_kfd(struct restore_session *s, int dir_fd, const struct kfd_process_image *img)
{
	struct kfd_restore r = {.img = img, .kfd_fd = -1};
	uint64_t start = clock_usec();
	int ret;

	ret = shared_image_begin(s->shared, img->id, (uint32_t)getpid(),
				 shared_deadline(SHARED_LOCK_WAIT_MS));
	if (ret) {
		pr_err("file %u: cannot claim it for restore: %s", img->id, strerror(-ret));
		return ret;
	}
	/* the targets first: they decide which GPUs the KFD process gets */
	if (img->entry->n_devices) {
		ret = restore_choose_targets(s, img);
		if (ret)
			goto out;
	}
	r.kfd_fd = restore_open_kfd(s, img);
	if (r.kfd_fd < 0) {
		ret = r.kfd_fd;
		goto out;
	}
	if (!img->entry->n_devices) /* /dev/kfd without GPUs: the file is all */
		goto out;
	ret = prepare_buckets(s, &r);
	if (!ret)
		ret = kfd_restore_op(&r);
	/* before the contents: their dma-buf fds move to the copier and close here */
	if (!ret)
		ret = restore_share_publish(s, img, r.bos, r.targets);
	if (!ret)
		ret = restore_contents(s, &r, dir_fd);
	if (!ret)
		ret = restore_share_import(s, img, r.kfd_fd, r.bos, r.targets);
	if (!ret)
		ret = build_vma_map(s, &r);
	if (!ret)
		s->task_image = img;
out:
	if (ret) /* the takers of its BOs fail now, not at their deadline */
		restore_share_abort(s, img, ret);
	shared_image_end(s->shared, img->id, ret, r.bytes, clock_usec() - start,
			 shared_deadline(SHARED_LOCK_WAIT_MS));
	free_restore(&r);
	if (ret) {
		if (r.kfd_fd >= 0)
			close(r.kfd_fd);
		render_fds_close(&s->render);
		return ret;
	}
	if (r.handed_off) /* the copier's own line says when the contents are written */
		pr_info("restored pid %u (file %u): %zu GPUs, %zu BOs in %" PRIu64 " ms; %" PRIu64
			" MiB of contents left to the master's copier",
			img->entry->pid, img->id, img->entry->n_devices, img->entry->n_bos,
			(clock_usec() - start) / 1000, r.bytes >> 20);
	else
		pr_info("restored pid %u (file %u): %zu GPUs, %zu BOs, %" PRIu64 " MiB in %" PRIu64
			" ms",
			img->entry->pid, img->id, img->entry->n_devices, img->entry->n_bos,
			r.bytes >> 20, (clock_usec() - start) / 1000);
	return r.kfd_fd;
}

/* Does a restored GEM BO of the task live on the GPU of this local minor? */
static bool gem_on_minor(const struct vma_map *gem, uint32_t minor)
{
	size_t i;

	for (i = 0; i < gem->n_bos; i++)
		if (gem->bos[i].dst_minor == minor)
			return true;
	return false;
}

/*
 * The file's GEM BOs go into the task's file of the target GPU, the one
 * whose VM KFD shares. A second render file of the task on that GPU with
 * GEM BOs would get the same file (render_fds.h): refused.
 */
static int restore_gem(struct restore_session *s, int dir_fd, const struct render_file_image *img,
		       const struct match_pair *p, int fd)
{
	const struct kfd_node *node = topo_node(&img->topo, img->entry->node_index);
	struct gem_restore_ctx ctx = {
		.dir_fd = dir_fd,
		.engine_opts = &s->opts.engine,
		.shared = s->shared,
		.gpu = copy_gpu_of_node(node, img->entry->actual_gpu_id, p->dst_render_minor),
		.ioctl_fn = render_drm_ioctl};
	char why[512];
	int ret;

	if (!img->entry->n_gem_bos)
		return 0;
	if (gem_on_minor(&s->gem_vmas, p->dst_render_minor)) {
		pr_err("render-node file %u: a second render file of the task on GPU %u with GEM "
		       "BOs; the plugin restores one per GPU and task",
		       img->id, img->entry->actual_gpu_id);
		return -EOPNOTSUPP;
	}
	ret = gem_restore_file(&ctx, fd, img, &s->gem_vmas, why, sizeof(why));
	if (ret)
		pr_err("render-node file %u (renderD%u): %s; its GEM BOs are not restored", img->id,
		       p->dst_render_minor, why);
	else
		pr_info("render-node file %u: %zu GEM BOs restored on renderD%u", img->id,
			img->entry->n_gem_bos, p->dst_render_minor);
	return ret;
}

static int restore_render(struct restore_session *s, int dir_fd,
			  const struct render_file_image *img)
{
	const struct kfd_process_image *own = own_process_image(s);
	const struct match_pair *p;
	int fd, app_fd;

	/*
	 * A render fd numbered below the task's /dev/kfd fd is restored first:
	 * the targets must already be this task's (a device cgroup may hide
	 * the master's from it).
	 */
	if (own) {
		fd = restore_choose_targets(s, own);
		if (fd)
			return fd;
	}
	p = restore_target(s, img->entry->actual_gpu_id);
	if (!p) {
		pr_err("render-node file %u: GPU %u has no target", img->id,
		       img->entry->actual_gpu_id);
		return -ENODEV;
	}
	fd = render_fd_get(&s->render, p->dst_render_minor);
	if (fd < 0) {
		pr_err("cannot open /dev/dri/renderD%u: %s%s", p->dst_render_minor, strerror(-fd),
		       render_node_hint(fd));
		return fd;
	}
	fd = restore_gem(s, dir_fd, img, p, fd) ?: fd;
	if (fd < 0)
		return fd;
	/* CRIU moves the fd we return to the application's number and closes ours */
	app_fd = fcntl(fd, F_DUPFD, 0);
	if (app_fd < 0)
		return -errno;
	pr_info("render-node file %u: renderD%u -> renderD%u", img->id, img->entry->minor,
		p->dst_render_minor);
	return app_fd;
}

int restore_file(struct restore_session *s, int dir_fd, uint32_t id)
{
	size_t i;

	if (!s->active)
		return -ENOTSUP;
	for (i = 0; i < s->n_procs; i++)
		if (s->procs[i].id == id)
			return restore_kfd(s, dir_fd, &s->procs[i]);
	for (i = 0; i < s->n_renders; i++)
		if (s->renders[i].id == id)
			return restore_render(s, dir_fd, &s->renders[i]);
	for (i = 0; i < s->n_dmabufs; i++)
		if (s->dmabufs[i].id == id)
			return restore_share_file(s, &s->dmabufs[i], own_process_image(s));
	return -ENOTSUP;
}

/*
 * A BO's mapping moved to its new offset on the task's file of local GPU
 * dst_minor, the file that holds the BO. CRIU 4.1.1 mmaps with the fd we
 * return and closes it afterwards, so it gets a duplicate of that file,
 * never the file's own fd.
 */
static int map_on_render_file(struct restore_session *s, uint32_t dst_minor, uint64_t old_offset,
			      uint64_t new_offset, uint64_t old_pgoff, uint64_t *new_pgoff,
			      int *plugin_fd)
{
	int fd = render_fd_for_mapping(&s->render, dst_minor);

	if (fd < 0)
		return fd;
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	*new_pgoff = new_offset + (old_pgoff - old_offset);
	*plugin_fd = fd;
	return 1;
}

static int restore_render_vma(struct restore_session *s, uint32_t old_minor, uint64_t addr,
			      uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd)
{
	const struct vma_bo *b = vma_map_find_bo(&s->vmas, old_minor, old_pgoff);
	const struct match_pair *p;

	if (!b) {
		pr_err("mapping at %#" PRIx64 " of renderD%u (offset %#" PRIx64 ") is no "
		       "checkpointed BO of this process: it cannot be restored",
		       addr, old_minor, old_pgoff);
		return -ENOENT;
	}
	p = s->task_image
		    ? restore_target(s, s->task_image->entry->devices[b->device]->actual_gpu_id)
		    : NULL;
	if (!p)
		return -ENODEV;
	return map_on_render_file(s, p->dst_render_minor, b->old_offset, b->new_offset, old_pgoff,
				  new_pgoff, plugin_fd);
}

/* Does a checkpointed BO of the task (KFD's or GEM) live on the GPU of this local minor? */
static bool minor_has_bos(uint32_t minor, void *arg)
{
	struct restore_session *s = arg;
	const KfdProcessEntry *e;
	const struct match_pair *p;
	size_t i;

	if (gem_on_minor(&s->gem_vmas, minor))
		return true;
	if (!s->task_image)
		return false;
	e = s->task_image->entry;
	for (i = 0; i < s->vmas.n_bos; i++) {
		p = restore_target(s, e->devices[s->vmas.bos[i].device]->actual_gpu_id);
		if (p && p->dst_render_minor == minor)
			return true;
	}
	return false;
}

int restore_vma(struct restore_session *s, const char *path, uint64_t addr, uint64_t old_pgoff,
		uint64_t *new_pgoff, int *plugin_fd)
{
	const struct vma_bo *gem;
	unsigned long minor;
	char *end;

	*plugin_fd = -1;
	if (!s->active || (!s->task_image && !s->gem_vmas.n_bos))
		return -ENOTSUP;
	if (!s->render_settled) { /* the application's fds are all restored by now */
		render_fds_settle(&s->render, minor_has_bos, s);
		restore_share_settle(s);
		s->render_settled = true;
	}
	if (!strcmp(path, KFD_DEVICE_PATH)) {
		if (!s->task_image)
			return -ENOTSUP;
		if (vma_map_kfd_offset(&s->vmas, addr, old_pgoff, new_pgoff)) {
			pr_err("mapping at %#" PRIx64 " of /dev/kfd (offset %#" PRIx64 ") names no "
			       "checkpointed GPU",
			       addr, old_pgoff);
			return -ENOENT;
		}
		return 1;
	}
	if (strncmp(path, RENDER_PATH_PREFIX, strlen(RENDER_PATH_PREFIX)))
		return -ENOTSUP;
	minor = strtoul(path + strlen(RENDER_PATH_PREFIX), &end, 10);
	if (*end || minor > UINT32_MAX)
		return -ENOTSUP;
	gem = vma_map_find_bo(&s->gem_vmas, (uint32_t)minor, old_pgoff);
	if (gem)
		return map_on_render_file(s, gem->dst_minor, gem->old_offset, gem->new_offset,
					  old_pgoff, new_pgoff, plugin_fd);
	/* a task without KFD BOs has an empty map: no BO there, said so */
	return restore_render_vma(s, (uint32_t)minor, addr, old_pgoff, new_pgoff, plugin_fd);
}

/* What a task restored of ours, from the shared outcomes. */
enum restored_kfd {
	RESTORED_NOTHING,
	RESTORED_FILE_ONLY, /* /dev/kfd files of a process without GPUs */
	RESTORED_GPUS,
};

static enum restored_kfd restored_kfd_in(struct restore_session *s, int pid, uint32_t *image_id)
{
	enum restored_kfd what = RESTORED_NOTHING;
	uint32_t ns_pid = innermost_pid(pid);
	struct shared_image img;
	size_t i;

	for (i = 0; ns_pid && i < s->n_procs; i++) {
		if (shared_image_get(s->shared, s->procs[i].id, &img, shared_deadline(5000)) ||
		    img.state != SHARED_IMAGE_DONE || img.pid != ns_pid)
			continue;
		*image_id = img.id;
		if (s->procs[i].entry->n_devices)
			return RESTORED_GPUS;
		what = RESTORED_FILE_ONLY;
	}
	return what;
}

/*
 * A task whose RESUME failed would run with GPU queues that never start:
 * a hang at its first GPU wait, the worst outcome. CRIU 4.1.1 ignores this
 * hook's return value; it calls the hook with the tasks still stopped under
 * ptrace (at rt_sigreturn) and detaches them right after. So the task is
 * killed here: CRIU's PTRACE_DETACH of it then fails, and CRIU kills the
 * whole restored tree and reports "Restoring FAILED" (exit status 1).
 */
static int resume_failed(int pid, const char *what, int err)
{
	pr_err("%s of pid %d failed: %s; its GPU queues would never run: killing it, "
	       "the restore fails",
	       what, pid, strerror(-err));
	if (kill(pid, SIGKILL))
		pr_err("cannot kill pid %d: %s; it runs with its GPU queues stopped", pid,
		       strerror(errno));
	return err;
}

int restore_resume(struct restore_session *s, int pid)
{
	struct kfd_ioctl_criu_args args = {.pid = (uint32_t)pid, .op = KFD_CRIU_OP_RESUME};
	enum restored_kfd what;
	uint32_t image_id = 0;
	int ret;

	if (!s->active || !s->n_procs)
		return -ENOTSUP;
	what = restored_kfd_in(s, pid, &image_id);
	/* no RESTORE ran in its KFD process (no GPUs): nothing to resume, and KFD would refuse */
	if (what == RESTORED_FILE_ONLY) {
		shared_image_resumed(s->shared, image_id, shared_deadline(SHARED_LOCK_WAIT_MS));
		return 0;
	}
	/* parallel restore: the master's copier must have written the contents */
	if (what == RESTORED_GPUS && s->parallel) {
		ret = restore_copier_wait(&s->copier, image_id, shared_deadline(COPY_WAIT_MS));
		if (!ret) /* the BOs it imports: their contents are written by their origins' */
			ret = restore_share_wait_origins(s, image_id,
							 shared_deadline(COPY_WAIT_MS));
		if (ret) {
			return resume_failed(pid, "the BO contents write (the master's copier)",
					     ret);
		}
	}
	if (s->kfd_fd < 0) { /* released in restore_session_fini() */
		s->kfd_fd = kfd_dev_get();
		if (s->kfd_fd < 0) {
			ret = s->kfd_fd;
			s->kfd_fd = -1;
			pr_err("cannot open %s to resume pid %d: %s", KFD_DEVICE_PATH, pid,
			       strerror(-ret));
			return what == RESTORED_GPUS ? resume_failed(pid, "KFD RESUME", ret) : ret;
		}
	}
	ret = kfd_criu_op(s->kfd_fd, &args);
	/* ESRCH: no KFD process, fine for a task that restored no /dev/kfd file */
	if (ret == -ESRCH && what == RESTORED_NOTHING)
		return 0;
	if (ret)
		return resume_failed(pid, "KFD RESUME", ret);
	if (what == RESTORED_GPUS) /* the restore guardian leaves it alone now */
		shared_image_resumed(s->shared, image_id, shared_deadline(SHARED_LOCK_WAIT_MS));
	s->resumed++;
	pr_info("resumed the GPU queues of pid %d", pid);
	return 0;
}
