// SPDX-License-Identifier: MIT
/*
 * Dump of /dev/kfd files (PROCESS_INFO, CHECKPOINT with buffers of exactly the
 * returned sizes, metadata image, BO contents) and of the dma-bufs of their
 * BOs (dump_kfd.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/gpu_libs.h"
#include "datapath/bo_stream.h"
#include "plugin/copy_engines.h"
#include "plugin/clock.h"
#include "plugin/dump/dump_kfd.h"
#include "plugin/dump/dump_render.h"
#include "plugin/dump/dump_session.h"
#include "plugin/kfd_dev.h"
#include "images/kfd_image.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "images/priv_blob.h"
#include "images/topology_image.h"

/* What CHECKPOINT handed over, with the dma-buf fds we now own. */
struct checkpoint {
	struct kfd_ioctl_criu_args args;
	struct kfd_criu_device_bucket *devices;
	struct kfd_criu_bo_bucket *bos;
	uint8_t *priv;
	uint32_t *nodes;	 /* topology node of each device */
	uint32_t bo_record_size; /* of the blob (priv_blob_detect_bo_record()); 0: unknown, or no
				    GPU */
	uint32_t *share_ids;  /* per BO: its dma-buf's number in the dump (bo_share.h), 0: none */
	bool *shared_imports; /* per BO: an earlier BO of the dump had its dma-buf */
};

static int check_kfd(struct dump_session *s)
{
	char why[256];
	int ret;

	if (s->kfd_major)
		return 0;
	ret = kfd_dev_check_version(&s->kfd_major, &s->kfd_minor, why, sizeof(why));
	if (ret)
		pr_err("%s", why);
	return ret;
}

static void checkpoint_free(struct checkpoint *c)
{
	kfd_bo_buckets_close_dmabufs(c->bos, c->args.num_bos);
	free(c->devices);
	free(c->bos);
	free(c->priv);
	free(c->nodes);
	free(c->share_ids);
	free(c->shared_imports);
}

/* CHECKPOINT with buffers of exactly the sizes PROCESS_INFO returned. */
static int checkpoint(int fd, struct checkpoint *c)
{
	struct kfd_ioctl_criu_args *a = &c->args;
	uint32_t i;
	int ret;

	/* all three pointers must be non-NULL even for a count of 0 */
	c->devices = calloc(a->num_devices ? a->num_devices : 1, sizeof(*c->devices));
	c->bos = calloc(a->num_bos ? a->num_bos : 1, sizeof(*c->bos));
	c->priv = malloc(a->priv_data_size ? a->priv_data_size : 1);
	if (!c->devices || !c->bos || !c->priv)
		return -ENOMEM;
	for (i = 0; i < a->num_bos; i++)
		c->bos[i].dmabuf_fd = KFD_NO_DMABUF_FD;
	a->devices = (uintptr_t)c->devices;
	a->bos = (uintptr_t)c->bos;
	a->priv_data = (uintptr_t)c->priv;
	a->op = KFD_CRIU_OP_CHECKPOINT;
	ret = kfd_criu_op(fd, a);
	if (ret) /* 6.12 installs no fd on failure; output buffers are garbage */
		for (i = 0; i < a->num_bos; i++)
			c->bos[i].dmabuf_fd = KFD_NO_DMABUF_FD;
	return ret;
}

/* Checks every bucket against the topology and the type rules. */
static int check_buckets(struct dump_session *s, struct checkpoint *c)
{
	const struct kfd_node *n;
	uint32_t i;

	c->nodes = calloc(c->args.num_devices + 1, sizeof(*c->nodes));
	if (!c->nodes)
		return -ENOMEM;
	for (i = 0; i < c->args.num_devices; i++) {
		n = topo_gpu_by_id(&s->topo, c->devices[i].actual_gpu_id);
		if (!n) {
			pr_err("GPU %u of the process is not in the KFD topology",
			       c->devices[i].actual_gpu_id);
			return -ENODEV;
		}
		c->nodes[i] = n->index;
	}
	for (i = 0; i < c->args.num_bos; i++) {
		bool contents = kfd_bo_has_contents(c->bos[i].alloc_flags);

		if (contents != (c->bos[i].dmabuf_fd != KFD_NO_DMABUF_FD)) {
			pr_err("BO %u (flags %#x): dma-buf fd %d does not match its type", i,
			       c->bos[i].alloc_flags, (int)c->bos[i].dmabuf_fd);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The render-node files of the process on each of its GPUs hold no more
 * than the process's KFD BOs (an AQL queue BO twice, as amdgpu attaches it)
 * and page tables for their mappings (render_audit.h). All BOs, not only
 * those mapped there now: amdgpu keeps a BO counted in a VM from its first
 * map until it is freed, which the checkpoint does not tell.
 */
static int check_render_memory(struct dump_session *s, const struct checkpoint *c)
{
	uint64_t *va = calloc(c->args.num_bos + 1, sizeof(*va));
	uint64_t *size = calloc(c->args.num_bos + 1, sizeof(*size));
	uint64_t kfd_bytes = 0;
	char why[512];
	uint32_t d, i;
	int ret = va && size ? 0 : -ENOMEM;

	for (i = 0; i < c->args.num_bos; i++)
		kfd_bytes +=
			c->bos[i].size *
			(c->bos[i].alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM ? 2 : 1);
	for (d = 0; !ret && d < c->args.num_devices; d++) {
		uint32_t user_id = c->devices[d].user_gpu_id;
		size_t n = 0;

		for (i = 0; i < c->args.num_bos; i++) {
			const struct kfd_criu_bo_bucket *b = &c->bos[i];

			/* page tables only for what is mapped there now */
			if (!priv_blob_bo_mapped_on(c->priv, c->args.priv_data_size,
						    c->args.num_devices, i, c->bo_record_size,
						    user_id))
				continue;
			va[n] = b->addr;
			size[n++] = b->size;
		}
		ret = render_audit_check_kfd(&s->audit, (pid_t)c->args.pid,
					     c->devices[d].actual_gpu_id, kfd_bytes,
					     render_audit_allowance(va, size, n), why, sizeof(why));
		if (ret)
			pr_err("%s", why);
	}
	free(va);
	free(size);
	return ret;
}

/* Each BO's dma-buf numbered, imports marked (bo_share.h). */
static int note_shared_bos(struct dump_session *s, struct checkpoint *c)
{
	const struct bo_share_process p = {.pid = c->args.pid,
					   .devices = c->devices,
					   .n_devices = c->args.num_devices,
					   .bos = c->bos,
					   .n_bos = c->args.num_bos};

	c->share_ids = calloc(c->args.num_bos + 1, sizeof(*c->share_ids));
	c->shared_imports = calloc(c->args.num_bos + 1, sizeof(*c->shared_imports));
	if (!c->share_ids || !c->shared_imports)
		return -ENOMEM;
	return bo_share_note_process(&s->shares, s->opts.shared_bo, &p, c->share_ids,
				     c->shared_imports);
}

static void free_process_entry(KfdProcessEntry *e)
{
	size_t i;

	for (i = 0; i < e->n_devices; i++)
		free(e->devices[i]);
	for (i = 0; i < e->n_bos; i++)
		free(e->bos[i]);
	free(e->devices);
	free(e->bos);
	topo_image_free(e->topology);
}

static int fill_devices(const struct dump_session *s, const struct checkpoint *c,
			KfdProcessEntry *e)
{
	uint32_t i;

	e->devices = calloc(c->args.num_devices + 1, sizeof(*e->devices));
	if (!e->devices)
		return -ENOMEM;
	for (i = 0; i < c->args.num_devices; i++) {
		KfdDeviceEntry *d = malloc(sizeof(*d));
		const struct kfd_node *n = topo_node(&s->topo, c->nodes[i]);

		if (!d)
			return -ENOMEM;
		kfd_device_entry__init(d);
		d->user_gpu_id = c->devices[i].user_gpu_id;
		d->actual_gpu_id = c->devices[i].actual_gpu_id;
		d->node_index = c->nodes[i];
		d->render_minor = (uint32_t)kfd_prop_get(n, KFD_PROP_drm_render_minor);
		e->devices[e->n_devices++] = d;
	}
	return 0;
}

static int fill_bos(const struct checkpoint *c, KfdProcessEntry *e)
{
	uint32_t i;

	e->bos = calloc(c->args.num_bos + 1, sizeof(*e->bos));
	if (!e->bos)
		return -ENOMEM;
	for (i = 0; i < c->args.num_bos; i++) {
		KfdBoEntry *b = malloc(sizeof(*b));

		if (!b)
			return -ENOMEM;
		kfd_bo_entry__init(b);
		b->addr = c->bos[i].addr;
		b->size = c->bos[i].size;
		b->offset = c->bos[i].offset;
		b->gpu_id = c->bos[i].gpu_id;
		b->alloc_flags = c->bos[i].alloc_flags;
		b->has_share_id = c->share_ids[i] != 0;
		b->share_id = c->share_ids[i];
		b->has_shared_import = c->shared_imports[i];
		b->shared_import = c->shared_imports[i];
		e->bos[e->n_bos++] = b;
	}
	return 0;
}

static int write_process_image(struct dump_session *s, struct checkpoint *c, uint32_t id)
{
	const struct kfd_ioctl_criu_args *a = &c->args;
	KfdProcessEntry e = KFD_PROCESS_ENTRY__INIT;
	char why[256];
	int ret;

	e.kfd_major = s->kfd_major;
	e.kfd_minor = s->kfd_minor;
	e.kernel_release = s->release;
	e.pid = a->pid;
	e.num_objects = a->num_objects;
	e.priv_data.data = c->priv;
	e.priv_data.len = a->priv_data_size;
	e.bo_record_size = c->bo_record_size;
	if (a->num_devices && !e.bo_record_size) {
		pr_err("pid %u: the kernel's private data has a layout this plugin does not know "
		       "(%llu bytes for %u GPUs, %u BOs, %u objects); report it with the kernel "
		       "version %s",
		       a->pid, (unsigned long long)a->priv_data_size, a->num_devices, a->num_bos,
		       a->num_objects, s->release);
		return -EOPNOTSUPP;
	}
	ret = fill_devices(s, c, &e);
	if (!ret)
		ret = fill_bos(c, &e);
	if (!ret)
		ret = topo_to_image(&s->topo, c->nodes, a->num_devices, &e.topology);
	if (!ret) {
		ret = kfd_image_write(s->dir_fd, KFD_IMAGE_PROCESS, id, &e.base, why, sizeof(why));
		if (ret)
			pr_err("%s", why);
	}
	e.kernel_release = NULL;
	e.priv_data.data = NULL;
	free_process_entry(&e);
	return ret;
}

static void report_progress(void *arg, uint32_t gpu_id, uint64_t done, uint64_t total)
{
	pr_info("pid %u GPU %u: %" PRIu64 " of %" PRIu64 " MiB of BO contents", *(uint32_t *)arg,
		gpu_id, done >> 20, total >> 20);
}

/*
 * One bo_stream_gpu per device that owns BOs with contents, fds moved into
 * it, and where its data is (copy[], for the copy engines).
 */
static int build_streams(const struct dump_session *s, struct checkpoint *c,
			 struct bo_stream_gpu *gpus, struct copy_gpu *copy, uint32_t *n_gpus)
{
	uint32_t d, i, n = 0;

	for (d = 0; d < c->args.num_devices; d++) {
		const struct kfd_node *node = topo_node(&s->topo, c->nodes[d]);
		struct bo_stream_gpu *g = &gpus[n];
		uint32_t user = c->devices[d].user_gpu_id;

		copy[n] = copy_gpu_of_node(node, user,
					   (uint32_t)kfd_prop_get(node, KFD_PROP_drm_render_minor));

		memset(g, 0, sizeof(*g));
		g->gpu_id = user;
		g->bos = calloc(c->args.num_bos + 1, sizeof(*g->bos));
		if (!g->bos)
			return -ENOMEM;
		for (i = 0; i < c->args.num_bos; i++) {
			struct kfd_criu_bo_bucket *b = &c->bos[i];

			/* an import's contents are its origin's, saved there once */
			if (b->gpu_id != user || b->dmabuf_fd == KFD_NO_DMABUF_FD ||
			    c->shared_imports[i])
				continue;
			copy[n].invisible_bos += kfd_bo_maybe_invisible(b->alloc_flags);
			/* KFD's GTT BOs are cached system memory (no USWC flag, 6.12
			 * amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu): the CPU engine
			 * lets the stream read them in place */
			g->bos[g->bo_count++] = (struct bo_stream_bo){
				.size = b->size,
				.gpu_va = b->addr,
				.dmabuf_fd = (int)b->dmabuf_fd,
				.host_memory = !!(b->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT)};
			b->dmabuf_fd = KFD_NO_DMABUF_FD;
		}
		if (g->bo_count)
			n++;
		else
			free(g->bos);
	}
	*n_gpus = n;
	return 0;
}

static void free_streams(struct bo_stream_gpu *gpus, uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < gpus[i].bo_count; j++)
			if (gpus[i].bos[j].dmabuf_fd >= 0)
				close(gpus[i].bos[j].dmabuf_fd);
		free(gpus[i].bos);
	}
}

/* What an incremental dump left in the parent chain, per GPU. */
static void report_incremental(const struct checkpoint *c, const struct bo_stream_gpu *gpus,
			       uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct bo_stream_gpu *g = &gpus[i];

		if (g->parent_note[0])
			pr_info("pid %u: gpu %u: no usable parent images, contents dumped whole: "
				"%s",
				c->args.pid, g->gpu_id, g->parent_note);
		else
			pr_info("pid %u: gpu %u: incremental: %" PRIu64
				" MiB unchanged (left in the parent images), %" PRIu64
				" MiB written, %" PRIu64 " MiB all zero",
				c->args.pid, g->gpu_id, g->parent_bytes >> 20,
				g->written_bytes >> 20, g->zero_bytes >> 20);
	}
}

static int dump_contents(struct dump_session *s, struct checkpoint *c, uint32_t id, uint64_t *bytes)
{
	uint32_t nd = c->args.num_devices + 1;
	struct bo_stream_gpu *gpus = calloc(nd, sizeof(*gpus));
	struct copy_gpu *copy = calloc(nd, sizeof(*copy));
	struct bo_stream_config cfg = {.dir_fd = s->dir_fd,
				       .image_id = id,
				       .sync = true,
				       .write_mode = copy_write_mode(s->opts.direct_io),
				       .progress = report_progress,
				       .progress_arg = &c->args.pid};
	uint32_t n = 0, i, j;
	char what[64], why[512];
	int ret;

	cfg.parent_dir_fd = dump_open_parent_dir(s);
	cfg.has_parent = cfg.parent_dir_fd >= 0;
	if (!gpus || !copy) {
		ret = -ENOMEM;
		goto out;
	}
	ret = build_streams(s, c, gpus, copy, &n);
	for (i = 0; i < n; i++)
		for (j = 0; j < gpus[i].bo_count; j++)
			*bytes += gpus[i].bos[j].size;
	snprintf(what, sizeof(what), "dump of pid %u:", c->args.pid);
	if (!ret && n) {
		ret = copy_engines_dump(&s->opts.engine, &cfg, copy, n, gpus, what, why,
					sizeof(why));
		if (ret)
			pr_err("pid %u: cannot save BO contents: %s", c->args.pid, why);
		else if (cfg.has_parent)
			report_incremental(c, gpus, n);
	}
	free_streams(gpus, n);
out:
	if (cfg.parent_dir_fd >= 0)
		close(cfg.parent_dir_fd);
	free(gpus);
	free(copy);
	return ret;
}

/* -EEXIST (logged) when the process image of file id is there already. */
static int check_image_free(struct dump_session *s, uint32_t id)
{
	char name[KFD_IMAGE_NAME_MAX];
	int ret = kfd_image_exists(s->dir_fd, KFD_IMAGE_PROCESS, id);

	if (ret == -ENOENT)
		return 0;
	kfd_image_name(name, sizeof(name), KFD_IMAGE_PROCESS, id);
	ret = ret ? ret : -EEXIST;
	pr_err("cannot create %s: %s", name, strerror(-ret));
	return ret;
}

/* The BO contents files this dump wrote for file id (its process image failed). */
static void remove_contents(struct dump_session *s, const struct checkpoint *c, uint32_t id)
{
	uint32_t d;

	for (d = 0; d < c->args.num_devices; d++)
		bo_stream_remove(s->dir_fd, id, c->devices[d].user_gpu_id);
}

int dump_kfd_file(struct dump_session *s, int fd, uint32_t id)
{
	struct checkpoint c = {0};
	uint64_t start = clock_usec(), bytes = 0, usec;
	int ret;

	ret = dump_meets_gpu(s);
	if (!ret)
		ret = check_kfd(s);
	if (!ret)
		ret = dump_load_topology(s);
	if (ret)
		return ret;
	ret = pause_process(s->paused, fd, id, &c.args);
	if (ret == -ENODEV) {
		pr_info("file %u: /dev/kfd without GPUs; only the file is recorded", id);
		memset(&c.args, 0, sizeof(c.args));
	} else if (ret == -EEXIST) {
		return ret; /* a second file of a paused process, logged */
	} else if (ret) {
		pr_err("PROCESS_INFO on /dev/kfd file %u failed: %s%s", id, strerror(-ret),
		       ret == -EOPNOTSUPP ? " (the process has a GPU queue of a type KFD cannot "
					    "checkpoint)"
					  : "");
		return ret;
	} else {
		ret = checkpoint(fd, &c);
		if (ret) {
			pr_err("CHECKPOINT of pid %u failed: %s", c.args.pid, strerror(-ret));
			goto out;
		}
		/* no GPUs (PROCESS_INFO said ENODEV): no private data, nothing to detect */
		if (c.args.num_devices)
			c.bo_record_size = priv_blob_detect_bo_record(
				c.priv, c.args.priv_data_size, c.args.num_devices, c.args.num_bos,
				c.args.num_objects, priv_bo_record_for_release(s->release));
	}
	/*
	 * The process image last, once the contents are synced: it marks this
	 * process's files complete (ckpt_complete.h); an image that exists
	 * already is refused before anything is written.
	 */
	ret = check_buckets(s, &c);
	if (!ret && c.args.num_devices)
		ret = check_render_memory(s, &c);
	if (!ret)
		ret = note_shared_bos(s, &c);
	if (!ret)
		ret = dump_check_gem_twins(s, c.args.pid, c.bos, c.args.num_bos);
	if (!ret)
		ret = check_image_free(s, id);
	if (!ret)
		ret = dump_contents(s, &c, id, &bytes);
	if (!ret) {
		ret = write_process_image(s, &c, id);
		if (ret)
			remove_contents(s, &c, id);
	}
	if (ret)
		goto out;
	usec = clock_usec() - start;
	pr_info("dumped pid %u (file %u): %u GPUs, %u BOs, %u objects, %" PRIu64
		" MiB of contents in %" PRIu64 " ms (%.0f MiB/s)",
		c.args.pid, id, c.args.num_devices, c.args.num_bos, c.args.num_objects, bytes >> 20,
		usec / 1000, usec ? (double)bytes / (1 << 20) * 1e6 / (double)usec : 0.0);
out:
	checkpoint_free(&c);
	return ret;
}

int dump_dmabuf_file(struct dump_session *s, int fd, uint32_t id)
{
	DmabufFileEntry e = DMABUF_FILE_ENTRY__INIT;
	const struct bo_share_bo *bo;
	struct stat st;
	char why[256];
	int ret;

	if (fstat(fd, &st))
		return -errno;
	ret = bo_share_find(&s->shares, st.st_dev, st.st_ino, &e.share_id, &bo);
	if (ret || s->opts.shared_bo != BO_SHARE_SHARE) {
		pr_err("file %u is a dma-buf %s: refused (CRIU would not save it either)", id,
		       ret ? "of no KFD BO the dump has met so far (a BO of another device or of "
			     "a process outside the dump, or of a process CRIU dumps after this "
			     "file)"
			   : "of a KFD BO, which AMDGPU_CRIU_SHARED_BO=refuse or copy does not "
			     "restore shared");
		return -EOPNOTSUPP;
	}
	e.size = (uint64_t)st.st_size;
	ret = kfd_image_write(s->dir_fd, KFD_IMAGE_DMABUF, id, &e.base, why, sizeof(why));
	if (ret)
		pr_err("%s", why);
	else
		pr_info("dma-buf file %u: pid %u's BO at %#" PRIx64 " (GPU %u, share %u)", id,
			bo->pid, bo->addr, bo->gpu_id, e.share_id);
	return ret;
}
