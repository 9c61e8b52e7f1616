// SPDX-License-Identifier: MIT
/*
 * The master's part of a restore: load and check every image, decide where
 * the checkpointed GPUs go, and report at the end (see restore.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/gpu_libs.h"
#include "datapath/bo_stream.h"
#include "common/escape.h"
#include "checkpoint/ckpt.h"
#include "plugin/criu_stream.h"
#include "plugin/kfd_dev.h"
#include "plugin/restore/kfd_probe.h"
#include "plugin/restore/dev_nodes.h"
#include "topology/gpu_select.h"
#include "plugin/restore/render_fds.h"
#include "plugin/log.h"
#include "plugin/hsakmt_files.h"
#include "plugin/restore/restore.h"
#include "plugin/restore/restore_share.h"
#include "plugin/restore/restore_guard.h"
#include "images/topology_image.h"
#include "images/vram_check.h"

/* The session's images as the checkpoint library sees them (borrowed). */
static struct ckpt ckpt_view(const struct restore_session *s, int dir_fd)
{
	return (struct ckpt){.dir_fd = dir_fd,
			     .procs = s->procs,
			     .n_procs = s->n_procs,
			     .renders = s->renders,
			     .n_renders = s->n_renders,
			     .dmabufs = s->dmabufs,
			     .n_dmabufs = s->n_dmabufs};
}

/*
 * The checkpoint's images, loaded and judged by the rules `amdgpu-criu check`
 * applies (checkpoint/ckpt.h): the session takes over the images.
 */
static int load_checkpoint(struct restore_session *s, int dir_fd)
{
	struct ckpt ck = {0};
	char why[1024];
	int ret = ckpt_load(dir_fd, &ck, why, sizeof(why));

	if (ret) {
		pr_err("%s", why);
		return ret;
	}
	s->procs = ck.procs;
	s->n_procs = ck.n_procs;
	s->renders = ck.renders;
	s->n_renders = ck.n_renders;
	s->dmabufs = ck.dmabufs;
	s->n_dmabufs = ck.n_dmabufs;
	ck.procs = NULL, ck.renders = NULL, ck.dmabufs = NULL;
	ck.n_procs = ck.n_renders = ck.n_dmabufs = 0;
	s->hsakmt = ck; /* the libhsakmt images: restore_hsakmt() applies them */
	return 0;
}

/* One source topology for all images (checkpoint/ckpt.h), and the GPUs recorded. */
static int build_source(struct restore_session *s, int dir_fd)
{
	struct ckpt ck = ckpt_view(s, dir_fd);
	struct ckpt_source src;
	char why[1024];
	int ret = ckpt_source_build(&ck, &src, why, sizeof(why));

	if (ret) {
		pr_err("%s", why);
		return ret;
	}
	s->src = src.topo;
	s->src_nodes = src.nodes;
	s->n_src_nodes = src.n_nodes;
	return 0;
}

/*
 * Every BO contents file is there and whole, before any task exists
 * (checkpoint/ckpt.h). Streamed contents are checked as they are read: the
 * stream serves each once (criu_stream.h).
 */
static int check_contents(const struct restore_session *s, int dir_fd)
{
	struct ckpt ck = ckpt_view(s, dir_fd);
	char why[1024];
	int ret;

	if (criu_stream_active() != CRIU_STREAM_NONE)
		return 0;
	ret = ckpt_check_contents(&ck, why, sizeof(why));

	if (ret)
		pr_err("%s", why);
	return ret;
}

/*
 * Whether the GPU's render node opens here; why not, logged (it is not used
 * then). In a restored task a missing node counts when it may be created
 * (render_node_open_task() creates it for the GPUs chosen, not for all).
 */
static bool render_node_opens(const struct kfd_node *g, uint32_t minor, bool in_task, bool create)
{
	int fd = render_node_open(minor);

	if (in_task && fd == -ENOENT && create)
		return true;
	if (fd < 0) {
		pr_info("GPU %u (node %u) is not usable here: /dev/dri/renderD%u: %s%s", g->gpu_id,
			g->index, minor, strerror(-fd), render_node_hint(fd));
		return false;
	}
	close(fd);
	return true;
}

/*
 * GPUs a process can use here: KFD shows them, AMDGPU_CRIU_GPUS names them
 * (when set) and their render node opens (or, in a restored task, may be
 * created in a restored /dev that lacks it).
 */
int restore_usable_gpus(const struct restore_session *s, const struct kfd_topology *t, bool in_task,
			uint32_t **nodes, size_t *n)
{
	size_t i, named, unnamed;

	*n = 0;
	*nodes = calloc(t->n_nodes + 1, sizeof(**nodes));
	if (!*nodes)
		return -ENOMEM;
	named = gpu_select_nodes(&s->opts.gpus, t, *nodes, &unnamed);
	for (i = 0; i < named; i++) {
		const struct kfd_node *g = topo_node(t, (*nodes)[i]);

		if (render_node_opens(g, (uint32_t)kfd_prop_get(g, KFD_PROP_drm_render_minor),
				      in_task, s->opts.dev_nodes_create))
			(*nodes)[(*n)++] = g->index;
	}
	if (unnamed)
		pr_info("%s=%s: %zu other GPUs %s not used", GPU_SELECT_ENV, s->opts.gpus_shown,
			unnamed, in_task ? "this task sees are" : "of this node are");
	return 0;
}

static bool images_have_bos(const struct restore_session *s)
{
	size_t i;

	for (i = 0; i < s->n_procs; i++)
		if (s->procs[i].entry->n_bos)
			return true;
	return false;
}

/*
 * The BO record size this KFD takes, measured on the first usable GPU
 * (kfd_probe.h) with the session's /dev/kfd reference (kept until
 * restore_session_fini(), as the probe's VM is). 0 if it cannot be measured.
 */
static uint32_t measure_bo_record(struct restore_session *s, const uint32_t *usable,
				  size_t n_usable)
{
	const struct kfd_node *g = NULL;
	uint32_t record = 0;
	char why[256];
	size_t i;
	int ret;

	for (i = 0; n_usable && i < s->dst.n_nodes && !g; i++)
		if (s->dst.nodes[i].index == usable[0])
			g = &s->dst.nodes[i];
	if (!g) {
		pr_warn("no usable GPU here to measure the KFD private-data layout on");
		return 0;
	}
	if (s->kfd_fd < 0) {
		ret = kfd_dev_get();
		if (ret < 0) {
			pr_warn("cannot open %s to measure the KFD private-data layout: %s",
				KFD_DEVICE_PATH, strerror(-ret));
			return 0;
		}
		s->kfd_fd = ret;
	}
	ret = kfd_probe_bo_record(s->kfd_fd, g->gpu_id,
				  (uint32_t)kfd_prop_get(g, KFD_PROP_drm_render_minor), &record,
				  why, sizeof(why));
	if (ret) {
		pr_warn("cannot measure the KFD private-data layout on GPU %u: %s", g->gpu_id, why);
		return 0;
	}
	pr_info("this KFD takes %u-byte BO records (measured on GPU %u)", record, g->gpu_id);
	return record;
}

static int check_kfd_version(void)
{
	uint32_t major, minor;
	char why[256];
	int ret;

	ret = kfd_dev_check_version(&major, &minor, why, sizeof(why));
	if (ret)
		pr_err("%s", why);
	return ret;
}

/* This KFD takes the private data of every image (its BO record layout). */
static int check_kernel(struct restore_session *s, const uint32_t *usable, size_t n_usable)
{
	const struct kfd_process_image *misfit;
	char release[ESCAPE_BUF];
	const char *how = "measured";
	struct utsname u;
	uint32_t local;

	if (!images_have_bos(s))
		return 0;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	local = measure_bo_record(s, usable, n_usable);
	if (!local) {
		local = priv_bo_record_for_release(u.release);
		how = "inferred from the release";
		if (local)
			pr_warn("assuming %u-byte BO records from the kernel release %s", local,
				u.release);
		else
			pr_warn("BO record layout not checked: neither measured nor known from the "
				"kernel release %s",
				u.release);
	}
	misfit = local ? kfd_image_layout_misfit(s->procs, s->n_procs, local) : NULL;
	if (!misfit)
		return 0;
	pr_err("checkpoint file %u comes from kernel %s, whose KFD private data has %u-byte BO "
	       "records; this kernel (%s) takes %u-byte records (%s): restore on a kernel of the "
	       "same family",
	       misfit->id, str_escape(misfit->entry->kernel_release, release, sizeof(release)),
	       misfit->entry->bo_record_size, u.release, local, how);
	return -EOPNOTSUPP;
}

static void log_map(const struct match_result *m, const char *who)
{
	size_t i;

	for (i = 0; i < m->n_map; i++)
		pr_info("%sGPU %u (node %u, renderD%u) -> GPU %u (node %u, renderD%u)", who,
			m->map[i].src_gpu_id, m->map[i].src_node, m->map[i].src_render_minor,
			m->map[i].dst_gpu_id, m->map[i].dst_node, m->map[i].dst_render_minor);
}

int restore_match(const struct match_checks *checks, const struct kfd_topology *src,
		  const uint32_t *src_nodes, size_t n_src, const struct kfd_topology *dst,
		  const uint32_t *dst_nodes, size_t n_dst, struct match_result *out)
{
	struct match_request req = {.src = src,
				    .src_nodes = src_nodes,
				    .n_src_nodes = n_src,
				    .dst = dst,
				    .dst_nodes = dst_nodes,
				    .n_dst_nodes = n_dst,
				    .checks = *checks};
	int ret;

	memset(out, 0, sizeof(*out));
	ret = topo_match(&req, out);
	if (ret || !out->compatible) {
		pr_err("the checkpointed GPUs cannot be restored on this node: %s; the images are "
		       "unchanged (see `amdgpu-criu check IMGDIR`)",
		       out->reason);
		return ret ? ret : -ENODEV;
	}
	return 0;
}

/* This node's topology and the GPUs a process can use here (freed by the caller). */
static int load_local(struct restore_session *s, uint32_t **usable, size_t *n_usable)
{
	char why[512];
	int ret;

	ret = topo_load(KFD_SYSFS_TOPOLOGY, &s->dst, why, sizeof(why));
	if (ret) {
		pr_err("cannot read this node's KFD topology: %s", why);
		return ret;
	}
	/* a GPU named by the operator that is not here is a mistake, not a smaller choice */
	ret = gpu_select_check(&s->opts.gpus, &s->dst, why, sizeof(why));
	if (ret) {
		pr_err("%s; the images are unchanged", why);
		return ret;
	}
	return restore_usable_gpus(s, &s->dst, false, usable, n_usable);
}

static int map_gpus(struct restore_session *s, const uint32_t *usable, size_t n_usable)
{
	int ret;

	ret = restore_match(&s->opts.checks, &s->src, s->src_nodes, s->n_src_nodes, &s->dst, usable,
			    n_usable, &s->map);
	if (!ret)
		log_map(&s->map, "");
	return ret;
}

/* vram_free_fn on the session's /dev/kfd reference, taken at the first need. */
static int session_vram_free(void *arg, uint32_t gpu_id, uint64_t *bytes)
{
	struct restore_session *s = arg;
	int fd;

	if (s->kfd_fd < 0) {
		fd = kfd_dev_get();
		if (fd < 0)
			return fd;
		s->kfd_fd = fd;
	}
	return vram_kfd_free(&s->kfd_fd, gpu_id, bytes);
}

/*
 * Every local GPU of the map has the free VRAM its BOs need (vram_check.h),
 * else the first shortfall is the refusal. (The map is not changed to avoid
 * a full GPU: KFD needs as many GPUs as were checkpointed, so that would need
 * a spare GPU, and a restored task in a device cgroup maps onto its own.)
 */
static int check_vram(struct restore_session *s)
{
	struct vram_verdict v;

	vram_check(s->procs, s->n_procs, &s->map, session_vram_free, s, &v);
	if (v.unchecked)
		pr_warn("free VRAM not checked on %zu local GPUs (GPU %u: %s): a GPU too full "
			"for the checkpoint fails the restore later, in the restored task",
			v.unchecked, v.unchecked_gpu, strerror(-v.unchecked_err));
	if (!v.short_of)
		return 0;
	pr_err("checkpointed GPU %u (node %u) needs %" PRIu64 " bytes (%" PRIu64
	       " MiB) of VRAM, but local GPU %u (node %u, renderD%u) has %" PRIu64
	       " bytes (%" PRIu64
	       " MiB) free: free VRAM there or restore elsewhere; the images are unchanged",
	       v.pair.src_gpu_id, v.pair.src_node, v.need, v.need >> 20, v.pair.dst_gpu_id,
	       v.pair.dst_node, v.pair.dst_render_minor, v.free, v.free >> 20);
	return -ENOMEM;
}

static int create_shared(struct restore_session *s)
{
	uint32_t *ids = calloc(s->n_procs + 1, sizeof(*ids));
	size_t i;

	if (!ids)
		return -ENOMEM;
	for (i = 0; i < s->n_procs; i++)
		ids[i] = s->procs[i].id;
	s->shared = shared_state_create(ids, (uint32_t)s->n_procs);
	free(ids);
	return s->shared ? 0 : -errno;
}

/* Before any task exists: a guardian for the tasks, should the master die. */
static void start_guard(struct restore_session *s)
{
	int ret = restore_guard_start(&s->guard, s->shared);

	if (ret)
		pr_warn("no guardian (%s): if criu is killed during the restore, its half-restored "
			"tasks stay behind",
			strerror(-ret));
}

/* Parallel restore's copier (restore_copy.h); without it, each task copies its own. */
static void start_copier(struct restore_session *s, int dir_fd)
{
	int ret;

	if (!s->parallel || !s->n_procs) {
		s->parallel = false;
		return;
	}
	ret = restore_copier_start(&s->copier, s->shared, dir_fd, &s->opts.engine);
	if (ret) {
		pr_warn("no BO copier in the master (%s): each task writes its own BO contents",
			strerror(-ret));
		s->parallel = false;
	}
}

/* libhsakmt's /dev/shm files the dumped processes mapped (hsakmt_files.h), as loaded */
static int restore_hsakmt(struct restore_session *s)
{
	unsigned int created;
	char why[512];
	int ret;

	ret = hsakmt_files_restore(&hsakmt_paths_default, s->hsakmt.hsakmt, s->hsakmt.hsakmt_pids,
				   s->hsakmt.n_hsakmt, &created, why, sizeof(why));
	ckpt_free(&s->hsakmt);
	if (ret)
		pr_err("%s", why);
	else if (created)
		pr_info("%u of libhsakmt's shared files were missing here: created as the dumped "
			"processes had them",
			created);
	return ret;
}

/*
 * The restore's options, read by the plugin before any task exists: when
 * that failed (options_error), a checkpoint with GPU files is refused in
 * that line; one without is restored as usual, with it as one warning.
 */
static int take_options(struct restore_session *s, const struct amdgpu_options *opts,
			const char *options_error)
{
	s->opts = *opts;
	s->parallel = opts->parallel_restore;
	s->render.create_nodes = opts->dev_nodes_create;
	if (!options_error || !*options_error)
		return 0;
	if (s->active) {
		pr_err("%s: the checkpoint has GPU files; the images are unchanged", options_error);
		return -EINVAL;
	}
	pr_warn("%s; a restore without GPUs goes on, one with a GPU fails", options_error);
	return 0;
}

/* The master loads them before any task exists: the tasks inherit them. */
static int load_gpu_libs(void)
{
	char why[512];
	int ret = gpu_libs_load(why, sizeof(why));

	if (ret)
		pr_err("%s; the images are unchanged", why);
	return ret;
}

int restore_session_init(struct restore_session *s, int dir_fd, const struct amdgpu_options *opts,
			 const char *options_error)
{
	uint32_t *usable = NULL;
	size_t n_usable = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	s->kfd_fd = -1;
	s->guard = GUARDIAN_NONE;
	ret = load_checkpoint(s, dir_fd);
	if (ret)
		return ret;
	s->active = s->n_procs || s->n_renders;
	/* a bad AMDGPU_CRIU_COPY_ENGINE fails a GPU restore here, before any task exists */
	ret = take_options(s, opts, options_error);
	if (ret || !s->active)
		return ret;
	ret = load_gpu_libs();
	if (!ret)
		ret = build_source(s, dir_fd);
	if (!ret)
		ret = check_contents(s, dir_fd);
	if (!ret)
		ret = check_kfd_version();
	if (!ret)
		ret = load_local(s, &usable, &n_usable);
	if (!ret)
		ret = check_kernel(s, usable, n_usable);
	if (!ret)
		ret = map_gpus(s, usable, n_usable);
	if (!ret)
		ret = check_vram(s);
	free(usable);
	if (!ret)
		ret = restore_hsakmt(s);
	if (!ret)
		ret = create_shared(s);
	if (!ret)
		ret = restore_share_prepare(s);
	if (!ret)
		start_guard(s);
	if (!ret)
		start_copier(s, dir_fd);
	if (!ret)
		pr_info("restoring %zu GPU processes and %zu render-node files%s", s->n_procs,
			s->n_renders,
			s->parallel ? "; BO contents written by the master while CRIU restores "
				      "memory (AMDGPU_CRIU_PARALLEL_RESTORE=0: by each task)"
				    : "");
	return ret;
}

static void report(struct restore_session *s, int criu_ret)
{
	struct shared_image img;
	uint32_t done = 0;
	size_t i;

	for (i = 0; s->shared && i < s->n_procs; i++) {
		if (shared_image_get(s->shared, s->procs[i].id, &img, shared_deadline(5000)))
			continue;
		if (img.state == SHARED_IMAGE_DONE) {
			done++;
			pr_info("file %u: restored in pid %u, %" PRIu64
				" MiB of BO contents in %" PRIu64 " ms",
				img.id, img.pid, img.bytes >> 20, img.usec / 1000);
		} else if (img.state == SHARED_IMAGE_RESTORING) {
			pr_err("file %u: the task restoring it (pid %u) died or stopped half-way",
			       img.id, img.pid);
		} else if (img.state == SHARED_IMAGE_FAILED) {
			pr_err("file %u: restore failed: %s", img.id, strerror(-img.error));
		} else if (!criu_ret) {
			pr_err("file %u: never restored", img.id);
		}
	}
	if (!criu_ret && done > s->resumed)
		pr_err("%u GPU processes restored but %u resumed: the others' GPU queues stay "
		       "stopped",
		       done, s->resumed);
	if (s->shared && s->shared->recoveries)
		pr_warn("%u locks of dead restoring tasks were recovered", s->shared->recoveries);
}

void restore_session_fini(struct restore_session *s, int criu_ret)
{
	size_t i;

	restore_copier_stop(&s->copier);
	if (s->active)
		report(s, criu_ret);
	for (i = 0; i < s->n_procs; i++)
		kfd_process_image_free(&s->procs[i]);
	for (i = 0; i < s->n_renders; i++)
		render_file_image_free(&s->renders[i]);
	for (i = 0; i < s->n_dmabufs; i++)
		dmabuf_file_image_free(&s->dmabufs[i]);
	ckpt_free(&s->hsakmt);
	free(s->dmabufs);
	vma_map_free(&s->gem_vmas);
	free(s->procs);
	free(s->renders);
	free(s->src_nodes);
	topo_free(&s->src);
	topo_free(&s->dst);
	match_result_free(&s->map);
	guardian_stand_down(&s->guard);
	shared_state_destroy(s->shared);
	if (s->kfd_fd >= 0)
		kfd_dev_put();
	memset(s, 0, sizeof(*s));
	s->kfd_fd = -1;
	s->guard = GUARDIAN_NONE;
}
