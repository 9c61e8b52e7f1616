// SPDX-License-Identifier: MIT
/*
 * inspect --json: {"dir", "processes": [...], "render_files": [...],
 * "hsakmt_files": [{"pid", "files": [{"path", "size", "mode"}],
 * "semaphore_unlinked"}]} and,
 * with --verify, "intact" and a "verify" object per GPU. Strings of the
 * images (kernel_release, path, a recorded node's name) are printed in
 * printable ASCII (json_put_untrusted_str()).
 */
#include <errno.h>
#include <stdio.h>

#include "tools/cli.h"
#include "tools/ckpt.h"

/* o when every step that built it succeeded (ret 0), else NULL (o freed) */
static struct json_object *built(struct json_object *o, int ret)
{
	if (ret && o) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *tally_json(const struct bo_tally *t)
{
	struct json_object *o = json_object_new_object();

	if (o && (json_put_u64(o, "count", t->count) || json_put_u64(o, "bytes", t->bytes))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

static struct json_object *bos_json(const struct gpu_report *g)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	for (int k = 0; k < BO_KIND__COUNT && !ret; k++)
		ret = json_put(o, bo_kind_key(k), tally_json(&g->bos[k]));
	return built(o, ret);
}

static struct json_object *verify_json(const struct proc_report *pr, const struct gpu_report *g)
{
	const struct gpu_verify *v = &g->verify;
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: json_put_bool(o, "ok", v->ret == 0);
	if (v->ret) {
		ret = ret ?: json_put_str(o, "error", v->msg);
		ret = ret ?: json_put_opt_u64(o, "bo_index", v->bo, v->fault.located);
		ret = ret
			      ?: json_put_opt_str(
					 o, "bo_type",
					 v->fault.located
						 ? bo_kind_name(bo_kind_of(
							   pr->img->entry->bos[v->bo]->alloc_flags))
						 : NULL);
		ret = ret ?: json_put_opt_u64(o, "offset", v->fault.bo_offset, v->fault.located);
	}
	return built(o, ret);
}

/*
 * Where the contents are, for incremental images: {"levels", "bytes_here"
 * (stored in this directory), "zero_bytes" (all-zero, holes),
 * "bytes_in_parents" (per level, 1 first)}.
 */
static struct json_object *chain_json(const struct bo_stream_chain *c)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	int ret = o && a ? 0 : -ENOMEM;

	ret = ret ?: json_put_u64(o, "levels", c->levels);
	ret = ret ?: json_put_u64(o, "bytes_here", c->level_bytes[0] - c->zero_bytes);
	ret = ret ?: json_put_u64(o, "zero_bytes", c->zero_bytes);
	for (uint32_t k = 1; !ret && k <= c->levels; k++)
		ret = json_object_array_add(a, json_object_new_uint64(c->level_bytes[k])) ? -ENOMEM
											  : 0;
	if (ret)
		json_object_put(a);
	else
		ret = json_put(o, "bytes_in_parents", a);
	if (ret) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The recorded node: the fields of `topology --json` for a GPU, and its properties. */
static struct json_object *node_json(const struct kfd_process_image *img,
				     const struct gpu_report *g)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: node_put_gpu_fields(o, &img->topo, g->node);
	ret = ret ?: json_put(o, "properties", node_properties_json(g->node));
	return built(o, ret);
}

static struct json_object *gpu_json(const struct inspect_report *rep, const struct proc_report *pr,
				    const struct gpu_report *g)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: json_put_u64(o, "user_gpu_id", g->dev->user_gpu_id);
	ret = ret ?: json_put_u64(o, "gpu_id", g->dev->actual_gpu_id);
	ret = ret ?: json_put_u64(o, "node", g->dev->node_index);
	ret = ret ?: json_put_u64(o, "render_minor", g->dev->render_minor);
	ret = ret ?: json_put(o, "recorded_node", node_json(pr->img, g));
	ret = ret ?: json_put(o, "bos", bos_json(g));
	ret = ret ?: json_put_u64(o, "content_bos", g->content_bos);
	ret = ret ?: json_put_u64(o, "content_bytes", g->content_bytes);
	if (g->chain.levels)
		ret = ret ?: json_put(o, "incremental", chain_json(&g->chain));
	if (rep->verify)
		ret = ret ?: json_put(o, "verify", verify_json(pr, g));
	return built(o, ret);
}

static struct json_object *objects_json(const struct priv_blob_summary *b)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: json_put_u64(o, "queues", b->queues);
	ret = ret ?: json_put_u64(o, "compute_queues", b->compute_queues);
	ret = ret ?: json_put_u64(o, "sdma_queues", b->sdma_queues);
	ret = ret ?: json_put_u64(o, "queue_state_bytes", b->queue_bytes);
	ret = ret ?: json_put_u64(o, "events", b->events);
	ret = ret ?: json_put_u64(o, "svm_ranges", b->svm_ranges);
	return built(o, ret);
}

static int put_process_fields(struct json_object *o, const struct proc_report *pr)
{
	const KfdProcessEntry *e = pr->img->entry;
	char name[KFD_IMAGE_NAME_MAX];

	kfd_image_name(name, sizeof(name), KFD_IMAGE_PROCESS, pr->img->id);
	if (json_put_str(o, "file", name) || json_put_u64(o, "id", pr->img->id) ||
	    json_put_untrusted_str(o, "kernel_release", e->kernel_release) ||
	    json_put_u64(o, "kfd_major", e->kfd_major) ||
	    json_put_u64(o, "kfd_minor", e->kfd_minor) ||
	    json_put_u64(o, "bo_record_size", e->bo_record_size) ||
	    json_put_u64(o, "pid", e->pid) ||
	    json_put_bool(o, "xnack", pr->img->blob.xnack_mode != 0) ||
	    json_put_u64(o, "num_bos", e->n_bos) ||
	    json_put_u64(o, "shared_imports", kfd_process_shared_imports(e)) ||
	    json_put(o, "objects", objects_json(&pr->img->blob)))
		return -ENOMEM;
	return 0;
}

static struct json_object *process_json(const struct inspect_report *rep,
					const struct proc_report *pr)
{
	struct json_object *o = json_object_new_object();
	struct json_object *gpus = json_object_new_array();
	int ret = o && gpus ? 0 : -ENOMEM;

	ret = ret ?: put_process_fields(o, pr);
	for (size_t i = 0; i < pr->n_gpus && !ret; i++)
		ret = json_append(gpus, gpu_json(rep, pr, &pr->gpus[i]));
	if (!ret) {
		ret = json_put(o, "gpus", gpus);
		gpus = NULL; /* owned by o, or released by json_put */
	}
	json_object_put(gpus);
	return built(o, ret);
}

static struct json_object *render_verify_json(const struct render_file_image *r,
					      const struct render_verify *v)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: json_put_bool(o, "ok", v->ret == 0);
	if (v->ret) {
		ret = ret ?: json_put_str(o, "error", v->msg);
		ret = ret
			      ?: json_put_opt_u64(
					 o, "gem_handle",
					 v->fault.located
						 ? r->entry->gem_bos[v->fault.bo_index]->handle
						 : 0,
					 v->fault.located);
		ret = ret ?: json_put_opt_u64(o, "offset", v->fault.bo_offset, v->fault.located);
	}
	return built(o, ret);
}

static struct json_object *render_json(const struct inspect_report *rep, size_t i)
{
	const struct render_file_image *r = &rep->ck->renders[i];
	struct json_object *o = json_object_new_object();
	char name[KFD_IMAGE_NAME_MAX];
	int ret = o ? 0 : -ENOMEM;

	kfd_image_name(name, sizeof(name), KFD_IMAGE_RENDER, r->id);
	ret = ret ?: json_put_str(o, "file", name);
	ret = ret ?: json_put_u64(o, "id", r->id);
	ret = ret ?: json_put_u64(o, "render_minor", r->entry->minor);
	ret = ret ?: json_put_u64(o, "gpu_id", r->entry->actual_gpu_id);
	ret = ret ?: json_put_u64(o, "node", r->entry->node_index);
	ret = ret ?: json_put_u64(o, "gem_bos", r->entry->n_gem_bos);
	ret = ret ?: json_put_u64(o, "gem_bytes", render_file_gem_bytes(r->entry));
	if (rep->renders[i].done)
		ret = ret ?: json_put(o, "verify", render_verify_json(r, &rep->renders[i]));
	return built(o, ret);
}

static struct json_object *hsakmt_file_json(const HsakmtFileEntry *f)
{
	struct json_object *o = json_object_new_object();
	int ret = o ? 0 : -ENOMEM;

	ret = ret ?: json_put_untrusted_str(o, "path", f->path);
	ret = ret ?: json_put_u64(o, "size", f->size);
	ret = ret ?: json_put_u64(o, "mode", f->mode);
	return built(o, ret);
}

static struct json_object *hsakmt_json(uint32_t pid, const HsakmtFilesEntry *e)
{
	struct json_object *o = json_object_new_object();
	struct json_object *files = json_object_new_array();
	int ret = o && files ? 0 : -ENOMEM;

	for (size_t f = 0; f < e->n_files && !ret; f++)
		ret = json_append(files, hsakmt_file_json(e->files[f]));
	ret = ret ?: json_put_u64(o, "pid", pid);
	ret = ret ?: json_put_bool(o, "semaphore_unlinked", e->semaphore_unlinked);
	if (!ret) {
		ret = json_put(o, "files", files);
		files = NULL;
	}
	json_object_put(files);
	return built(o, ret);
}

static struct json_object *report_json(const struct inspect_report *rep)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *procs = json_object_new_array();
	struct json_object *renders = json_object_new_array();
	struct json_object *hsakmt = json_object_new_array();
	int ret = doc && procs && renders && hsakmt ? 0 : -ENOMEM;

	for (size_t p = 0; p < rep->ck->n_procs && !ret; p++)
		ret = json_append(procs, process_json(rep, &rep->procs[p]));
	for (size_t r = 0; r < rep->ck->n_renders && !ret; r++)
		ret = json_append(renders, render_json(rep, r));
	for (size_t h = 0; h < rep->ck->n_hsakmt && !ret; h++)
		ret = json_append(hsakmt, hsakmt_json(rep->ck->hsakmt_pids[h], rep->ck->hsakmt[h]));
	ret = ret ?: json_put_str(doc, "dir", rep->ck->dir);
	if (rep->verify)
		ret = ret ?: json_put_bool(doc, "intact", !rep->damaged);
	if (!ret) {
		ret = json_put(doc, "processes", procs);
		procs = NULL;
	}
	if (!ret) {
		ret = json_put(doc, "render_files", renders);
		renders = NULL;
	}
	if (!ret) {
		ret = json_put(doc, "hsakmt_files", hsakmt);
		hsakmt = NULL;
	}
	json_object_put(procs);
	json_object_put(renders);
	json_object_put(hsakmt);
	return built(doc, ret);
}

int inspect_print_json(const struct inspect_report *rep)
{
	struct json_object *doc = report_json(rep);
	int ret;

	if (!doc) {
		cli_err("inspect: out of memory");
		return -ENOMEM;
	}
	ret = json_print(doc);
	json_object_put(doc);
	return ret;
}
