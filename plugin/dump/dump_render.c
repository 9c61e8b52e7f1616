// SPDX-License-Identifier: MIT
/*
 * The dump's render-node files: the audit of every task's render files
 * before anything is dumped (render_audit.h), and each file's image with
 * its GEM BOs (gem_dump.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "datapath/bo_stream.h"
#include "plugin/dump/dump_render.h"
#include "plugin/dump/dump_session.h"
#include "plugin/dump/gem_dump.h"
#include "images/kfd_image.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "images/topology_image.h"

static int audit_classify(void *arg, dev_t rdev, uint32_t *gpu_id)
{
	struct dump_session *s = arg;
	struct stat st = {.st_mode = S_IFCHR, .st_rdev = rdev};
	const struct kfd_node *n;

	switch (dump_classify(s, &st)) {
	case GPU_FILE_KFD:
		return RENDER_AUDIT_KFD;
	case GPU_FILE_RENDER:
		n = dump_gpu_by_minor(&s->topo, minor(rdev));
		*gpu_id = n ? n->gpu_id : 0;
		return RENDER_AUDIT_RENDER;
	default:
		return RENDER_AUDIT_NONE;
	}
}

int dump_render_audit(struct dump_session *s, int pid)
{
	char why[768];
	int ret;

	ret = dump_gpu_task(s, pid, false); /* the audit is of render fds */
	if (ret <= 0)
		return ret;
	ret = render_audit_task(&s->audit, pid, audit_classify, s, why, sizeof(why));
	if (ret && dump_task_gone(pid))
		return 0; /* killed while frozen: CRIU finds it gone too */
	if (ret)
		pr_err("%s", why);
	return ret;
}

/* What the GEM dump needs to know of the dump: the file and its GEM handle. */
struct gem_check {
	struct dump_session *s;
	uint32_t file_id, gpu_id;
};

/*
 * A GEM handle of a KFD BO (a PRIME import of the BO's dma-buf on the same
 * GPU is the BO itself) would be restored as a second buffer: refused. KFD
 * files dumped later check the other way round (dump_check_gem_twins()).
 */
static int check_gem_dmabuf(void *arg, int dmabuf_fd, uint32_t handle, char *err, size_t errlen)
{
	const struct gem_check *g = arg;
	const struct bo_share_bo *kfd_bo;
	struct bo_share_bo gem = {
		.gpu_id = g->gpu_id, .actual_gpu_id = g->gpu_id, .addr = handle, .pid = g->file_id};
	struct stat st;
	uint32_t share_id;
	int ret;

	if (fstat(dmabuf_fd, &st))
		return -errno;
	if (!bo_share_find(&g->s->shares, st.st_dev, st.st_ino, &share_id, &kfd_bo)) {
		snprintf(err, errlen,
			 "GEM handle %u is pid %u's KFD BO at %#" PRIx64
			 " (a PRIME import of its dma-buf), which the plugin cannot restore as "
			 "one buffer with KFD's: refused; close the GEM handle before the "
			 "checkpoint",
			 handle, kfd_bo->pid, kfd_bo->addr);
		return -EOPNOTSUPP;
	}
	ret = bo_share_add(&g->s->gem_dmabufs, st.st_dev, st.st_ino, &gem, &kfd_bo, &share_id);
	return ret == -EEXIST ? 0 : ret; /* the same file's object twice cannot happen */
}

int dump_check_gem_twins(struct dump_session *s, uint32_t pid, const struct kfd_criu_bo_bucket *bos,
			 uint32_t n_bos)
{
	const struct bo_share_bo *gem;
	struct stat st;
	uint32_t i, share_id;

	for (i = 0; i < n_bos; i++) {
		if (bos[i].dmabuf_fd == KFD_NO_DMABUF_FD || fstat((int)bos[i].dmabuf_fd, &st) ||
		    bo_share_find(&s->gem_dmabufs, st.st_dev, st.st_ino, &share_id, &gem))
			continue;
		pr_err("pid %u's KFD BO at %#llx is GEM handle %" PRIu64
		       " of render file %u (a PRIME import of its dma-buf), which the plugin "
		       "cannot restore as one buffer with KFD's: refused; close the GEM handle "
		       "before the checkpoint",
		       pid, (unsigned long long)bos[i].addr, gem->addr, gem->pid);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int dump_gem_bos(struct dump_session *s, int fd, const struct kfd_node *n, uint32_t id,
			RenderFileEntry *e)
{
	struct gem_check check = {.s = s, .file_id = id, .gpu_id = n->gpu_id};
	struct gem_dump_ctx ctx = {.dir_fd = s->dir_fd,
				   .parent_dir_fd = dump_open_parent_dir(s),
				   .write_mode = copy_write_mode(s->opts.direct_io),
				   .engine_opts = &s->opts.engine,
				   .gpu = copy_gpu_of_node(n, n->gpu_id, e->minor),
				   .ioctl_fn = s->audit.ioctl_fn,
				   .check_dmabuf = check_gem_dmabuf,
				   .check_arg = &check};
	char why[512];
	int ret;

	ret = gem_dump_file(&ctx, fd, id, e, why, sizeof(why));
	if (ret)
		pr_err("render file %u (renderD%u, GPU %u): %s", id, e->minor, n->gpu_id, why);
	if (ctx.parent_dir_fd >= 0)
		close(ctx.parent_dir_fd);
	return ret;
}

int dump_render_file(struct dump_session *s, int fd, const struct stat *st, uint32_t id)
{
	RenderFileEntry e = RENDER_FILE_ENTRY__INIT;
	const struct kfd_node *n;
	uint32_t node;
	char why[256];
	int ret;

	ret = dump_meets_gpu(s);
	if (!ret)
		ret = dump_load_topology(s);
	if (ret)
		return ret;
	n = dump_gpu_by_minor(&s->topo, minor(st->st_rdev));
	if (!n)
		return -ENOTSUP;
	node = n->index;
	e.minor = minor(st->st_rdev);
	e.actual_gpu_id = n->gpu_id;
	e.node_index = node;
	ret = dump_gem_bos(s, fd, n, id, &e);
	if (ret)
		return ret;
	ret = topo_to_image(&s->topo, &node, 1, &e.topology);
	if (!ret) {
		/* written last: it makes the GEM BOs' contents files part of the checkpoint */
		ret = kfd_image_write(s->dir_fd, KFD_IMAGE_RENDER, id, &e.base, why, sizeof(why));
		if (ret)
			pr_err("%s", why);
	}
	if (ret)
		bo_stream_remove(s->dir_fd, id, n->gpu_id);
	else
		pr_info("render node file %u: renderD%u (GPU %u), %zu GEM BOs of %" PRIu64 " KiB",
			id, e.minor, e.actual_gpu_id, e.n_gem_bos, render_file_gem_bytes(&e) >> 10);
	topo_image_free(e.topology);
	gem_dump_entry_free(&e);
	return ret;
}
