// SPDX-License-Identifier: MIT
/*
 * inspect as text: per process image a summary, a GPU table, a BO table and
 * (with --verify) one line per GPU; then the render-node images and
 * libhsakmt's shared files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "common/escape.h"
#include "tools/ckpt.h"

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void print_summary(FILE *out, const struct proc_report *pr)
{
	const KfdProcessEntry *e = pr->img->entry;
	const struct priv_blob_summary *b = &pr->img->blob;
	char name[KFD_IMAGE_NAME_MAX], bytes[FMT_SHORT], release[ESCAPE_BUF];
	uint64_t total = 0, bos = 0;
	size_t imports;

	for (size_t i = 0; i < pr->n_gpus; i++) {
		total += pr->gpus[i].content_bytes;
		bos += pr->gpus[i].content_bos;
	}
	kfd_image_name(name, sizeof(name), KFD_IMAGE_PROCESS, pr->img->id);
	fprintf(out, "%s: pid %u, xnack %s\n", name, e->pid, b->xnack_mode ? "on" : "off");
	fprintf(out, "  dumped on: kernel %s, KFD %u.%u, BO records of %u bytes\n",
		str_escape(e->kernel_release, release, sizeof(release)), e->kfd_major, e->kfd_minor,
		e->bo_record_size);
	fprintf(out, "  objects:   %u %s (%u compute, %u SDMA), %u %s, %u SVM %s\n", b->queues,
		plural(b->queues, "queue", "queues"), b->compute_queues, b->sdma_queues, b->events,
		plural(b->events, "event", "events"), b->svm_ranges,
		plural(b->svm_ranges, "range", "ranges"));
	fprintf(out, "  BOs:       %zu on %zu %s; contents %s in %" PRIu64 " %s\n", e->n_bos,
		pr->n_gpus, plural(pr->n_gpus, "GPU", "GPUs"),
		total ? fmt_bytes(total, bytes, sizeof(bytes)) : "0 B", bos,
		plural(bos, "BO", "BOs"));
	imports = kfd_process_shared_imports(e);
	if (imports == 1)
		fprintf(out, "  shared:    1 BO is an import of another BO in this checkpoint "
			     "(dma-buf IPC), restored as one\n");
	else if (imports)
		fprintf(out,
			"  shared:    %zu BOs are imports of other BOs in this checkpoint (dma-buf "
			"IPC), restored as such\n",
			imports);
	fputc('\n', out);
}

/* ---- GPU table ------------------------------------------------------------------------- */

enum gpu_col {
	GCOL_USER_ID,
	GCOL_GPU_ID,
	GCOL_NODE,
	GCOL_RENDER,
	GCOL_DEVICE,
	GCOL_GFX,
	GCOL_VRAM,
	GCOL_COMPUTE,
	GCOL_SIMDS,
	GCOL_HIVE,
	GCOL__COUNT,
};

static const struct table_column gpu_columns[GCOL__COUNT] = {
	[GCOL_USER_ID] = {"USER_GPU_ID", true}, [GCOL_GPU_ID] = {"GPU_ID", true},
	[GCOL_NODE] = {"NODE", true},		[GCOL_RENDER] = {"RENDER", false},
	[GCOL_DEVICE] = {"DEVICE", false},	[GCOL_GFX] = {"GFX", false},
	[GCOL_VRAM] = {"VRAM", true},		[GCOL_COMPUTE] = {"COMPUTE", true},
	[GCOL_SIMDS] = {"SIMDS", true},		[GCOL_HIVE] = {"HIVE", false},
};

static int add_gpu_row(struct table *t, const struct gpu_report *g)
{
	char user[FMT_SHORT], id[FMT_SHORT], node[FMT_SHORT], render[FMT_SHORT], dev[FMT_LONG],
		gfx[FMT_SHORT], vram[FMT_SHORT], cus[FMT_SHORT], simds[FMT_SHORT], hive[FMT_SHORT];
	const struct kfd_node *n = g->node;
	const char *cells[GCOL__COUNT] = {
		user,
		id,
		node,
		fmt_render_node(g->dev->render_minor, render, sizeof(render)),
		fmt_device(n, dev, sizeof(dev)),
		fmt_gfx_target(n, gfx, sizeof(gfx)),
		fmt_bytes(n->vram_size, vram, sizeof(vram)),
		cus,
		simds,
		fmt_short_id(n->props.hive_id, hive, sizeof(hive)),
	};

	snprintf(user, sizeof(user), "%u", g->dev->user_gpu_id);
	snprintf(id, sizeof(id), "%u", g->dev->actual_gpu_id);
	snprintf(node, sizeof(node), "%u", g->dev->node_index);
	snprintf(cus, sizeof(cus), "%u CUs", node_compute_units(n));
	snprintf(simds, sizeof(simds), "%" PRIu64, n->props.simd_count);
	return table_add_row(t, cells);
}

/* ---- BO table -------------------------------------------------------------------------- */

#define BCOL__COUNT (BO_KIND__COUNT + 2)

/* USER_GPU_ID, one column per BO type (OTHER only when used), CONTENTS */
static size_t bo_columns(struct table_column *cols, bool other)
{
	size_t n = 0;

	cols[n++] = (struct table_column){"USER_GPU_ID", true};
	for (int k = 0; k < BO_KIND__COUNT; k++)
		if (k != BO_KIND_OTHER || other)
			cols[n++] = (struct table_column){bo_kind_name(k), true};
	cols[n++] = (struct table_column){"CONTENTS", true};
	return n;
}

/* "2 / 104.0 KiB", "-" for none */
static char *fmt_tally(const struct bo_tally *t, char *buf, size_t len)
{
	char bytes[FMT_SHORT];

	if (!t->count)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%u / %s", t->count,
			 t->bytes ? fmt_bytes(t->bytes, bytes, sizeof(bytes)) : "0 B");
	return buf;
}

static int add_bo_row(struct table *t, const struct gpu_report *g, bool other)
{
	char text[BCOL__COUNT][FMT_SHORT + 16];
	const char *cells[BCOL__COUNT];
	const struct bo_tally contents = {g->content_bos, g->content_bytes};
	size_t n = 0;

	snprintf(text[n++], sizeof(text[0]), "%u", g->dev->user_gpu_id);
	for (int k = 0; k < BO_KIND__COUNT; k++)
		if (k != BO_KIND_OTHER || other)
			fmt_tally(&g->bos[k], text[n++], sizeof(text[0]));
	fmt_tally(&contents, text[n++], sizeof(text[0]));
	for (size_t c = 0; c < n; c++)
		cells[c] = text[c];
	return table_add_row(t, cells);
}

static bool has_other(const struct proc_report *pr)
{
	for (size_t i = 0; i < pr->n_gpus; i++)
		if (pr->gpus[i].bos[BO_KIND_OTHER].count)
			return true;
	return false;
}

static int print_tables(FILE *out, const struct proc_report *pr)
{
	struct table_column cols[BCOL__COUNT];
	bool other = has_other(pr);
	struct table gpus, bos;
	int ret = 0;

	table_init(&gpus, gpu_columns, GCOL__COUNT);
	table_init(&bos, cols, bo_columns(cols, other));
	for (size_t i = 0; i < pr->n_gpus && !ret; i++) {
		ret = add_gpu_row(&gpus, &pr->gpus[i]);
		ret = ret ?: add_bo_row(&bos, &pr->gpus[i], other);
	}
	if (!ret) {
		table_print(&gpus, out);
		fputc('\n', out);
		table_print(&bos, out);
	}
	table_free(&gpus);
	table_free(&bos);
	return ret;
}

/* ---- incremental images ------------------------------------------------------------------- */

/* fmt_bytes(), with "0 B" for nothing (fmt_bytes() says "-", for tables). */
static const char *bytes_or_zero(uint64_t n, char *buf, size_t len)
{
	return n ? fmt_bytes(n, buf, len) : "0 B";
}

/* For each GPU whose contents are partly in parent image directories: where. */
static void print_chains(FILE *out, const struct proc_report *pr)
{
	char bytes[FMT_SHORT];
	bool first = true;

	for (size_t i = 0; i < pr->n_gpus; i++) {
		const struct bo_stream_chain *c = &pr->gpus[i].chain;
		uint64_t parents = 0;

		if (!c->levels)
			continue;
		for (uint32_t k = 1; k <= c->levels; k++)
			parents += c->level_bytes[k];
		fprintf(out, "%sincremental: gpu %u: %s in this directory", first ? "\n" : "",
			pr->gpus[i].dev->user_gpu_id,
			bytes_or_zero(c->level_bytes[0] - c->zero_bytes, bytes, sizeof(bytes)));
		if (c->zero_bytes)
			fprintf(out, " (and %s all zero, stored as holes)",
				fmt_bytes(c->zero_bytes, bytes, sizeof(bytes)));
		fprintf(out, ", %s in the parent images (",
			bytes_or_zero(parents, bytes, sizeof(bytes)));
		for (uint32_t k = 1; k <= c->levels; k++)
			fprintf(out, "%slevel %u: %s", k > 1 ? ", " : "", k,
				bytes_or_zero(c->level_bytes[k], bytes, sizeof(bytes)));
		fprintf(out, ")\n");
		first = false;
	}
}

/* ---- verification ------------------------------------------------------------------------ */

static void print_verify(FILE *out, const struct proc_report *pr)
{
	char bytes[FMT_SHORT];

	fputc('\n', out);
	for (size_t i = 0; i < pr->n_gpus; i++) {
		const struct gpu_report *g = &pr->gpus[i];
		const struct gpu_verify *v = &g->verify;

		fprintf(out, "verify: gpu %u: ", g->dev->user_gpu_id);
		if (!v->ret)
			fprintf(out, "ok (%u %s, %s)\n", g->content_bos,
				plural(g->content_bos, "BO", "BOs"),
				g->content_bytes ? fmt_bytes(g->content_bytes, bytes, sizeof(bytes))
						 : "0 B");
		else
			fprintf(out, "DAMAGED: %s\n", v->msg);
	}
}

/* ---- render images ------------------------------------------------------------------------- */

static const struct table_column render_columns[] = {
	{"FILE", false},   {"RENDER", false}, {"GPU_ID", true},	   {"NODE", true},
	{"DEVICE", false}, {"GEM_BOS", true}, {"GEM_BYTES", true},
};

static void print_render_verify(FILE *out, const struct inspect_report *rep)
{
	for (size_t i = 0; i < rep->ck->n_renders; i++) {
		const struct render_verify *v = &rep->renders[i];
		char file[KFD_IMAGE_NAME_MAX];

		if (!v->done)
			continue;
		kfd_image_name(file, sizeof(file), KFD_IMAGE_RENDER, rep->ck->renders[i].id);
		if (!v->ret)
			fprintf(out, "verify: %s: GEM BOs ok\n", file);
		else
			fprintf(out, "verify: %s: DAMAGED: %s\n", file, v->msg);
	}
}

static int print_renders(FILE *out, const struct ckpt *ck)
{
	struct table t;
	int ret = 0;

	fprintf(out, "render-node files:\n");
	table_init(&t, render_columns, 7);
	for (size_t i = 0; i < ck->n_renders && !ret; i++) {
		const struct render_file_image *r = &ck->renders[i];
		char file[KFD_IMAGE_NAME_MAX], render[FMT_SHORT], id[FMT_SHORT], node[FMT_SHORT],
			dev[FMT_LONG], gem[FMT_SHORT], gem_bytes[FMT_SHORT];
		const char *cells[] = {file, render, id, node, dev, gem, gem_bytes};

		kfd_image_name(file, sizeof(file), KFD_IMAGE_RENDER, r->id);
		fmt_render_node(r->entry->minor, render, sizeof(render));
		snprintf(id, sizeof(id), "%u", r->entry->actual_gpu_id);
		snprintf(node, sizeof(node), "%u", r->entry->node_index);
		fmt_device(topo_node(&r->topo, r->entry->node_index), dev, sizeof(dev));
		snprintf(gem, sizeof(gem), "%zu", r->entry->n_gem_bos);
		fmt_bytes(render_file_gem_bytes(r->entry), gem_bytes, sizeof(gem_bytes));
		ret = table_add_row(&t, cells);
	}
	if (!ret)
		table_print(&t, out);
	table_free(&t);
	return ret;
}

/* ---- libhsakmt's files ---------------------------------------------------------------------- */

static void print_hsakmt(FILE *out, const struct ckpt *ck)
{
	char path[ESCAPE_LEN(KFD_IMAGE_HSAKMT_MAX_PATH)];

	fprintf(out, "libhsakmt's shared files (created at restore where missing):\n");
	for (size_t i = 0; i < ck->n_hsakmt; i++) {
		const HsakmtFilesEntry *e = ck->hsakmt[i];

		for (size_t f = 0; f < e->n_files; f++)
			fprintf(out, "  pid %u: %s, %llu bytes, mode %03o\n", ck->hsakmt_pids[i],
				str_escape(e->files[f]->path, path, sizeof(path)),
				(unsigned long long)e->files[f]->size, e->files[f]->mode);
		if (e->semaphore_unlinked)
			fprintf(out,
				"  pid %u: had created the semaphore; CRIU saved it with the "
				"process\n",
				ck->hsakmt_pids[i]);
	}
}

int inspect_print_text(FILE *out, const struct inspect_report *rep)
{
	int ret = 0;

	for (size_t p = 0; p < rep->ck->n_procs && !ret; p++) {
		if (p)
			fputc('\n', out);
		print_summary(out, &rep->procs[p]);
		ret = print_tables(out, &rep->procs[p]);
		if (!ret)
			print_chains(out, &rep->procs[p]);
		if (!ret && rep->verify)
			print_verify(out, &rep->procs[p]);
	}
	if (!ret && rep->ck->n_renders) {
		if (rep->ck->n_procs)
			fputc('\n', out);
		ret = print_renders(out, rep->ck);
		if (!ret && rep->verify)
			print_render_verify(out, rep);
	}
	if (!ret && rep->ck->n_hsakmt) {
		fputc('\n', out);
		print_hsakmt(out, rep->ck);
	}
	if (ret)
		cli_err("inspect: out of memory");
	return ret;
}
