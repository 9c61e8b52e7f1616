// SPDX-License-Identifier: MIT
/*
 * What inspect reports per GPU of each process image: BOs by type, the bytes
 * of contents, and (with --verify) whether the GPU's content files are
 * intact (bo_stream_verify: index, sizes, every chunk's checksum).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <linux/kfd_ioctl.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/ckpt.h"

static const struct {
	uint32_t flag;
	const char *name, *key;
} bo_kinds[BO_KIND__COUNT] = {
	[BO_KIND_VRAM] = {KFD_IOC_ALLOC_MEM_FLAGS_VRAM, "VRAM", "vram"},
	[BO_KIND_GTT] = {KFD_IOC_ALLOC_MEM_FLAGS_GTT, "GTT", "gtt"},
	[BO_KIND_USERPTR] = {KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, "USERPTR", "userptr"},
	[BO_KIND_DOORBELL] = {KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, "DOORBELL", "doorbell"},
	[BO_KIND_MMIO_REMAP] = {KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, "MMIO_REMAP", "mmio_remap"},
	[BO_KIND_OTHER] = {0, "OTHER", "other"},
};

const char *bo_kind_name(enum bo_kind kind)
{
	return bo_kinds[kind].name;
}

const char *bo_kind_key(enum bo_kind kind)
{
	return bo_kinds[kind].key;
}

/* The first type bit, in the order of the uapi (exactly one is expected). */
enum bo_kind bo_kind_of(uint32_t alloc_flags)
{
	for (int k = 0; k < BO_KIND_OTHER; k++)
		if (alloc_flags & bo_kinds[k].flag)
			return (enum bo_kind)k;
	return BO_KIND_OTHER;
}

static void tally_gpu(const struct kfd_process_image *img, size_t dev, struct gpu_report *g)
{
	const KfdProcessEntry *e = img->entry;

	g->dev = e->devices[dev];
	g->node = topo_node(&img->topo, img->device_nodes[dev]);
	g->content_bytes = img->device_bytes[dev];
	g->content_bos = img->device_bo_count[dev];
	for (size_t b = 0; b < e->n_bos; b++) {
		struct bo_tally *t;

		if (e->bos[b]->gpu_id != g->dev->user_gpu_id)
			continue;
		t = &g->bos[bo_kind_of(e->bos[b]->alloc_flags)];
		t->count++;
		t->bytes += e->bos[b]->size;
	}
}

/* Sizes of the GPU's content BOs in image order, and their image BO indexes. */
static uint32_t collect_content(const KfdProcessEntry *e, const struct gpu_report *g,
				uint64_t *sizes, uint32_t *index)
{
	uint32_t n = 0;

	for (size_t b = 0; b < e->n_bos; b++) {
		if (e->bos[b]->gpu_id != g->dev->user_gpu_id || !kfd_bo_contents_saved(e->bos[b]))
			continue;
		sizes[n] = e->bos[b]->size;
		index[n++] = (uint32_t)b;
	}
	return n;
}

/* The rest of s after prefix, or s itself when it does not start so. */
static const char *after(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? s : s + n;
}

/*
 * v->msg from bo_stream's v->err: that starts "gpu N: " and, for damage in
 * one chunk, "BO i offset 0x..: " where i counts only this GPU's content
 * BOs. The message names the image's BO index (bo_index in JSON) instead.
 */
static void describe_damage(const KfdProcessEntry *e, const struct gpu_report *g,
			    struct gpu_verify *v)
{
	char prefix[96];
	const char *rest;

	snprintf(prefix, sizeof(prefix), "gpu %u: ", g->dev->user_gpu_id);
	rest = after(v->err, prefix);
	if (!v->fault.located) {
		snprintf(v->msg, sizeof(v->msg), "%s", rest);
		return;
	}
	snprintf(prefix, sizeof(prefix), "BO %u offset 0x%" PRIx64 ": ", v->fault.bo_index,
		 v->fault.bo_offset);
	snprintf(v->msg, sizeof(v->msg), "BO %u (%s), byte offset %" PRIu64 " (0x%" PRIx64 "): %s",
		 v->bo, bo_kind_name(bo_kind_of(e->bos[v->bo]->alloc_flags)), v->fault.bo_offset,
		 v->fault.bo_offset, after(rest, prefix));
}

/* The GPU's content BOs: their sizes in image order and their image BO indexes. */
struct content_list {
	uint64_t *sizes;
	uint32_t *index;
	uint32_t n;
};

/* content_bos counts this GPU's VRAM/GTT BOs (kfd_image.c), so the arrays fit. */
static int content_list_get(const struct kfd_process_image *img, const struct gpu_report *g,
			    struct content_list *cl)
{
	cl->sizes = calloc(g->content_bos + 1, sizeof(*cl->sizes));
	cl->index = calloc(g->content_bos + 1, sizeof(*cl->index));
	if (!cl->sizes || !cl->index) {
		free(cl->sizes);
		free(cl->index);
		return -ENOMEM;
	}
	cl->n = collect_content(img->entry, g, cl->sizes, cl->index);
	return 0;
}

static void content_list_free(struct content_list *cl)
{
	free(cl->sizes);
	free(cl->index);
}

/* -ENOMEM, or 0 with the outcome in g->verify. */
static int verify_gpu(const struct ckpt *ck, const struct kfd_process_image *img,
		      struct gpu_report *g)
{
	struct gpu_verify *v = &g->verify;
	struct content_list cl;

	if (content_list_get(img, g, &cl))
		return -ENOMEM;
	v->done = true;
	if (cl.n)
		v->ret = bo_stream_verify(ck->dir_fd, img->id, g->dev->user_gpu_id, cl.sizes, cl.n,
					  &v->fault, v->err, sizeof(v->err));
	if (v->ret && v->fault.located)
		v->bo = cl.index[v->fault.bo_index];
	if (v->ret)
		describe_damage(img->entry, g, v);
	content_list_free(&cl);
	return 0;
}

/* -ENOMEM, or 0 with g->chain (left empty when the files cannot tell: --verify says why). */
static int describe_gpu(const struct ckpt *ck, const struct kfd_process_image *img,
			struct gpu_report *g)
{
	struct content_list cl;
	char err[512];

	if (content_list_get(img, g, &cl))
		return -ENOMEM;
	if (cl.n && bo_stream_describe(ck->dir_fd, img->id, g->dev->user_gpu_id, cl.sizes, cl.n,
				       &g->chain, err, sizeof(err)))
		memset(&g->chain, 0, sizeof(g->chain));
	content_list_free(&cl);
	return 0;
}

static int build_proc(const char *cmd, const struct ckpt *ck, const struct kfd_process_image *img,
		      bool verify, struct proc_report *pr, bool *damaged)
{
	size_t n = img->entry->n_devices;
	int ret = 0;

	pr->img = img;
	pr->gpus = calloc(n ? n : 1, sizeof(*pr->gpus));
	if (!pr->gpus) {
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	pr->n_gpus = n;
	for (size_t d = 0; d < n && !ret; d++) {
		tally_gpu(img, d, &pr->gpus[d]);
		ret = describe_gpu(ck, img, &pr->gpus[d]);
		if (!ret && verify)
			ret = verify_gpu(ck, img, &pr->gpus[d]);
		if (ret)
			cli_err("%s: out of memory", cmd);
		*damaged |= pr->gpus[d].verify.ret != 0;
	}
	return ret;
}

/* The GEM BOs of render file r: -ENOMEM, or 0 with the outcome in *v. */
static int verify_render(const struct ckpt *ck, const struct render_file_image *r,
			 struct render_verify *v)
{
	const RenderFileEntry *e = r->entry;
	uint64_t *sizes;
	char err[512], prefix[64];
	const char *rest;

	if (!e->n_gem_bos)
		return 0;
	sizes = render_file_gem_sizes(e);
	if (!sizes)
		return -ENOMEM;
	v->done = true;
	v->ret = bo_stream_verify(ck->dir_fd, r->id, e->actual_gpu_id, sizes,
				  (uint32_t)e->n_gem_bos, &v->fault, err, sizeof(err));
	free(sizes);
	if (!v->ret)
		return 0;
	/* bo_stream's "gpu G: BO i offset 0x..: why" in the render file's terms */
	snprintf(prefix, sizeof(prefix), "gpu %u: ", e->actual_gpu_id);
	rest = after(err, prefix);
	snprintf(prefix, sizeof(prefix), "BO %u offset 0x%" PRIx64 ": ", v->fault.bo_index,
		 v->fault.bo_offset);
	if (v->fault.located)
		snprintf(v->msg, sizeof(v->msg), "GEM handle %u, byte offset %" PRIu64 ": %s",
			 e->gem_bos[v->fault.bo_index]->handle, v->fault.bo_offset,
			 after(rest, prefix));
	else
		snprintf(v->msg, sizeof(v->msg), "%s", rest);
	return 0;
}

int inspect_report_build(const char *cmd, const struct ckpt *ck, bool verify,
			 struct inspect_report *rep)
{
	int ret = 0;

	*rep = (struct inspect_report){.ck = ck, .verify = verify};
	rep->procs = calloc(ck->n_procs ? ck->n_procs : 1, sizeof(*rep->procs));
	if (!rep->procs) {
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	for (size_t p = 0; p < ck->n_procs && !ret; p++)
		ret = build_proc(cmd, ck, &ck->procs[p], verify, &rep->procs[p], &rep->damaged);
	rep->renders = calloc(ck->n_renders + 1, sizeof(*rep->renders));
	if (!ret && !rep->renders)
		ret = -ENOMEM;
	for (size_t r = 0; r < ck->n_renders && !ret && verify; r++) {
		ret = verify_render(ck, &ck->renders[r], &rep->renders[r]);
		rep->damaged |= rep->renders[r].ret != 0;
	}
	if (ret == -ENOMEM)
		cli_err("%s: out of memory", cmd);
	if (ret)
		inspect_report_free(rep);
	return ret;
}

void inspect_report_free(struct inspect_report *rep)
{
	for (size_t p = 0; rep->procs && p < rep->ck->n_procs; p++)
		free(rep->procs[p].gpus);
	free(rep->procs);
	free(rep->renders);
	rep->procs = NULL;
	rep->renders = NULL;
}
