// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "topology/gpu_select.h"
#include "topology/topology.h"

/*
 * len digits of base 10 or 16, nothing else, at most UINT32_MAX. strtoul()
 * would take leading white space (a newline), a sign and a second "0x"
 * ("0x0x5eb8"); a decimal number with a leading zero reads as octal to
 * some, so it is refused too.
 */
static bool parse_u32(const char *s, size_t len, unsigned int base, uint32_t *out)
{
	uint64_t v = 0;
	unsigned int d;
	size_t i;

	if (!len || (base == 10 && s[0] == '0'))
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = (unsigned int)(s[i] - '0');
		else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
			d = (unsigned int)(s[i] - 'a' + 10);
		else if (base == 16 && s[i] >= 'A' && s[i] <= 'F')
			d = (unsigned int)(s[i] - 'A' + 10);
		else
			return false;
		v = v * base + d;
		if (v > UINT32_MAX)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

static int add_token(struct gpu_select *sel, const char *tok, size_t len, char *err, size_t errlen)
{
	static const char dev[] = "/dev/dri/", render[] = "renderD";
	const char *word = tok;
	size_t word_len = len;
	char raw[65], shown[ESCAPE_BUF];
	uint32_t v;

	if (len > sizeof(dev) - 1 && !strncmp(tok, dev, sizeof(dev) - 1)) {
		tok += sizeof(dev) - 1;
		len -= sizeof(dev) - 1;
	}
	if (len > sizeof(render) - 1 && !strncmp(tok, render, sizeof(render) - 1)) {
		if (!parse_u32(tok + sizeof(render) - 1, len - (sizeof(render) - 1), 10, &v) ||
		    !v || !kfd_render_minor_valid(v))
			goto bad;
		if (sel->n_minors == GPU_SELECT_MAX)
			goto many;
		sel->minors[sel->n_minors++] = v;
		return 0;
	}
	if (len > 2 && (!strncmp(tok, "0x", 2) || !strncmp(tok, "0X", 2))) {
		if (!parse_u32(tok + 2, len - 2, 16, &v))
			goto bad;
	} else if (!parse_u32(tok, len, 10, &v)) {
		goto bad;
	}
	if (!v)
		goto bad;
	if (sel->n_gpu_ids == GPU_SELECT_MAX)
		goto many;
	sel->gpu_ids[sel->n_gpu_ids++] = v;
	return 0;
bad:
	/* the operator's bytes: escaped, as they could hold anything */
	snprintf(raw, sizeof(raw), "%.*s", (int)(word_len < 64 ? word_len : 64), word);
	return errmsg_set(err, errlen, -EINVAL,
			  "%s: '%s%s' is neither a render node (renderD128 to renderD%u, "
			  "/dev/dri/renderD130) nor a gpu_id (decimal or 0x hex, as amdgpu-criu "
			  "topology shows it)",
			  GPU_SELECT_ENV, str_escape(raw, shown, sizeof(shown)),
			  word_len > 64 ? "..." : "", KFD_RENDER_MINOR_LAST);
many:
	return errmsg_set(err, errlen, -EINVAL, "%s names more than %d GPUs of one kind",
			  GPU_SELECT_ENV, GPU_SELECT_MAX);
}

int gpu_select_parse(struct gpu_select *sel, const char *text, char *err, size_t errlen)
{
	const char *p = text;
	int ret;

	memset(sel, 0, sizeof(*sel));
	while (p && *p) {
		size_t len;

		p += strspn(p, ", \t");
		len = strcspn(p, ", \t");
		if (!len)
			break;
		ret = add_token(sel, p, len, err, errlen);
		if (ret) {
			memset(sel, 0, sizeof(*sel));
			return ret;
		}
		p += len;
	}
	return 0;
}

bool gpu_select_all(const struct gpu_select *sel)
{
	return !sel->n_minors && !sel->n_gpu_ids;
}

bool gpu_select_allows(const struct gpu_select *sel, uint32_t gpu_id, uint32_t render_minor)
{
	unsigned int i;

	if (gpu_select_all(sel))
		return true;
	for (i = 0; i < sel->n_minors; i++)
		if (sel->minors[i] == render_minor)
			return true;
	for (i = 0; i < sel->n_gpu_ids; i++)
		if (sel->gpu_ids[i] == gpu_id)
			return true;
	return false;
}

size_t gpu_select_nodes(const struct gpu_select *sel, const struct kfd_topology *t, uint32_t *out,
			size_t *unnamed)
{
	size_t i, n = 0, left_out = 0;

	for (i = 0; i < t->n_nodes; i++) {
		const struct kfd_node *g = &t->nodes[i];

		if (!g->accessible || !g->is_gpu || !g->gpu_id ||
		    !kfd_prop_present(g, KFD_PROP_drm_render_minor))
			continue;
		if (gpu_select_allows(sel, g->gpu_id,
				      (uint32_t)kfd_prop_get(g, KFD_PROP_drm_render_minor)))
			out[n++] = g->index;
		else
			left_out++;
	}
	if (unnamed)
		*unnamed = left_out;
	return n;
}
