// SPDX-License-Identifier: MIT
/*
 * How the commands that run the matcher (match, check) print its answer: a
 * table with one row per source GPU and the "expose:" line, or one JSON
 * object; "not compatible: <reason>" when there is no map.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli.h"
#include "topology/match.h"

/* ---- JSON output ------------------------------------------------------------------- */

static struct json_object *pair_json(const struct match_pair *p)
{
	struct json_object *jp = json_object_new_object();

	if (!jp)
		return NULL;
	if (json_put_u64(jp, "src_node", p->src_node) ||
	    json_put_u64(jp, "src_gpu_id", p->src_gpu_id) ||
	    json_put_u64(jp, "src_render_minor", p->src_render_minor) ||
	    json_put_u64(jp, "dst_node", p->dst_node) ||
	    json_put_u64(jp, "dst_gpu_id", p->dst_gpu_id) ||
	    json_put_u64(jp, "dst_render_minor", p->dst_render_minor)) {
		json_object_put(jp);
		return NULL;
	}
	return jp;
}

static struct json_object *map_json(const struct match_result *res)
{
	struct json_object *map = json_object_new_array();

	for (size_t i = 0; map && i < res->n_map; i++) {
		if (json_append(map, pair_json(&res->map[i]))) {
			json_object_put(map);
			map = NULL;
		}
	}
	return map;
}

struct json_object *match_result_json(const struct match_result *res)
{
	struct json_object *doc = json_object_new_object();
	int ret;

	if (!doc)
		return NULL;
	ret = json_put_bool(doc, "compatible", res->compatible);
	if (res->compatible)
		ret = ret ?: json_put(doc, "map", map_json(res));
	else
		ret = ret ?: json_put_str(doc, "reason", res->reason);
	if (ret) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

int match_print_json(const char *cmd, const struct match_result *res)
{
	struct json_object *doc = match_result_json(res);
	int ret;

	if (!doc) {
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	ret = json_print(doc);
	json_object_put(doc);
	return ret;
}

/* ---- text output ------------------------------------------------------------------- */

enum map_col {
	MCOL_SRC_NODE,
	MCOL_SRC_GPU_ID,
	MCOL_SRC_RENDER,
	MCOL_DST_NODE,
	MCOL_DST_GPU_ID,
	MCOL_DST_RENDER,
	MCOL__COUNT,
};

static const struct table_column map_columns[MCOL__COUNT] = {
	[MCOL_SRC_NODE] = {"SRC_NODE", true},	   [MCOL_SRC_GPU_ID] = {"SRC_GPU_ID", true},
	[MCOL_SRC_RENDER] = {"SRC_RENDER", false}, [MCOL_DST_NODE] = {"DST_NODE", true},
	[MCOL_DST_GPU_ID] = {"DST_GPU_ID", true},  [MCOL_DST_RENDER] = {"DST_RENDER", false},
};

static int add_pair_row(struct table *table, const struct match_pair *p)
{
	char src_node[FMT_SHORT], src_id[FMT_SHORT], src_render[FMT_SHORT];
	char dst_node[FMT_SHORT], dst_id[FMT_SHORT], dst_render[FMT_SHORT];
	const char *cells[MCOL__COUNT] = {
		[MCOL_SRC_NODE] = src_node,
		[MCOL_SRC_GPU_ID] = src_id,
		[MCOL_SRC_RENDER] =
			fmt_render_node(p->src_render_minor, src_render, sizeof(src_render)),
		[MCOL_DST_NODE] = dst_node,
		[MCOL_DST_GPU_ID] = dst_id,
		[MCOL_DST_RENDER] =
			fmt_render_node(p->dst_render_minor, dst_render, sizeof(dst_render)),
	};

	snprintf(src_node, sizeof(src_node), "%u", p->src_node);
	snprintf(src_id, sizeof(src_id), "%u", p->src_gpu_id);
	snprintf(dst_node, sizeof(dst_node), "%u", p->dst_node);
	snprintf(dst_id, sizeof(dst_id), "%u", p->dst_gpu_id);
	return table_add_row(table, cells);
}

static int compare_pairs_by_dst(const void *a, const void *b)
{
	const struct match_pair *pa = a, *pb = b;

	return (pa->dst_node > pb->dst_node) - (pa->dst_node < pb->dst_node);
}

/*
 * "expose: renderD160 renderD161 (nodes 18,19)": what the restored process's
 * container needs, in destination node order.
 */
static int print_expose_line(const char *cmd, const struct match_result *res)
{
	struct match_pair *by_dst = calloc(res->n_map ? res->n_map : 1, sizeof(*by_dst));
	uint32_t *nodes = calloc(res->n_map ? res->n_map : 1, sizeof(*nodes));
	char render[FMT_SHORT], list[1024];

	if (!by_dst || !nodes) {
		free(by_dst);
		free(nodes);
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < res->n_map; i++)
		by_dst[i] = res->map[i];
	qsort(by_dst, res->n_map, sizeof(*by_dst), compare_pairs_by_dst);
	fputs("expose:", stdout);
	for (size_t i = 0; i < res->n_map; i++) {
		nodes[i] = by_dst[i].dst_node;
		if (by_dst[i].dst_render_minor)
			printf(" %s",
			       fmt_render_node(by_dst[i].dst_render_minor, render, sizeof(render)));
	}
	printf(" (nodes %s)\n", nodelist_format(nodes, res->n_map, list, sizeof(list)));
	free(by_dst);
	free(nodes);
	return 0;
}

int match_print_text(const char *cmd, const struct match_result *res)
{
	struct table table;
	int ret = 0;

	if (!res->compatible) {
		printf("not compatible: %s\n", res->reason);
		return 0;
	}
	table_init(&table, map_columns, MCOL__COUNT);
	for (size_t i = 0; i < res->n_map && !ret; i++)
		ret = add_pair_row(&table, &res->map[i]);
	if (ret) {
		cli_err("%s: out of memory", cmd);
	} else {
		table_print(&table, stdout);
		ret = print_expose_line(cmd, res);
	}
	table_free(&table);
	return ret;
}
