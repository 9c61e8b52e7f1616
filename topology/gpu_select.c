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
 * len digits of base 10 or 16, nothing else, at most max. strtoul() would
 * take leading white space (a newline), a sign and a second "0x"
 * ("0x0x5eb8"); a decimal number with a leading zero reads as octal to
 * some, so it is refused too.
 */
static bool parse_num(const char *s, size_t len, unsigned int base, uint64_t max, uint64_t *out)
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
		if (d > max || v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static bool parse_u32(const char *s, size_t len, unsigned int base, uint32_t *out)
{
	uint64_t v;

	if (!parse_num(s, len, base, UINT32_MAX, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

/* Exactly n hex digits (leading zeros allowed) at s, at most max. */
static bool hex_field(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	return parse_num(s, n, 16, max, out);
}

/* "[DDDD:]BB:DD.F", the domain 4 to 8 hex digits: 1 and the address, or 0. */
static bool parse_pci(const char *s, size_t len, struct gpu_select_pci *pci)
{
	uint64_t domain = 0, bus, dev, fn;

	if (len > 7) { /* "DDDD:" first: 4 to 8 hex digits */
		size_t dlen = len - 8;

		if (dlen < 4 || dlen > 8 || s[dlen] != ':' ||
		    !hex_field(s, dlen, UINT32_MAX, &domain))
			return false;
		s += dlen + 1;
	} else if (len != 7) {
		return false;
	}
	if (s[2] != ':' || s[5] != '.' || !hex_field(s, 2, 0xff, &bus) ||
	    !hex_field(s + 3, 2, 0x1f, &dev) || !hex_field(s + 6, 1, 7, &fn))
		return false;
	pci->domain = (uint32_t)domain;
	pci->location_id = (uint32_t)(bus << 8 | dev << 3 | fn);
	return true;
}

/* 16 hex digits, after an optional 0x: 1 and the id, or 0. */
static bool parse_unique_id(const char *s, size_t len, uint64_t *id)
{
	if (len == 18 && (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))) {
		s += 2;
		len -= 2;
	}
	return len == 16 && hex_field(s, 16, UINT64_MAX, id) && *id;
}

static int add_token(struct gpu_select *sel, const char *tok, size_t len, char *err, size_t errlen)
{
	static const char dev[] = "/dev/dri/", render[] = "renderD";
	const char *word = tok;
	size_t word_len = len;
	char raw[65], shown[ESCAPE_BUF];
	struct gpu_select_pci pci;
	uint64_t uid;
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
	if (memchr(tok, ':', len)) {
		if (!parse_pci(tok, len, &pci))
			goto bad;
		if (sel->n_pcis == GPU_SELECT_MAX)
			goto many;
		sel->pcis[sel->n_pcis++] = pci;
		return 0;
	}
	if (parse_unique_id(tok, len, &uid)) {
		if (sel->n_unique_ids == GPU_SELECT_MAX)
			goto many;
		sel->unique_ids[sel->n_unique_ids++] = uid;
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
			  "%s: '%s%s' is no render node (renderD128 to renderD%u, "
			  "/dev/dri/renderD130), gpu_id (decimal or 0x hex, as amdgpu-criu "
			  "topology shows it), PCI address (0000:c1:00.0) or unique_id (16 hex "
			  "digits)",
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
	return !sel->n_minors && !sel->n_gpu_ids && !sel->n_pcis && !sel->n_unique_ids;
}

bool gpu_select_allows(const struct gpu_select *sel, const struct gpu_identity *id)
{
	unsigned int i;

	if (gpu_select_all(sel))
		return true;
	for (i = 0; i < sel->n_minors; i++)
		if (sel->minors[i] == id->render_minor)
			return true;
	for (i = 0; i < sel->n_gpu_ids; i++)
		if (sel->gpu_ids[i] == id->gpu_id)
			return true;
	for (i = 0; i < sel->n_pcis; i++)
		if (sel->pcis[i].domain == id->domain &&
		    sel->pcis[i].location_id == id->location_id)
			return true;
	for (i = 0; i < sel->n_unique_ids; i++)
		if (id->unique_id && sel->unique_ids[i] == id->unique_id)
			return true;
	return false;
}

struct gpu_identity gpu_select_identity(const struct kfd_node *g)
{
	return (struct gpu_identity){
		.gpu_id = g->gpu_id,
		.render_minor = (uint32_t)kfd_prop_get(g, KFD_PROP_drm_render_minor),
		.domain = (uint32_t)kfd_prop_get(g, KFD_PROP_domain),
		.location_id = (uint32_t)kfd_prop_get(g, KFD_PROP_location_id),
		.unique_id = kfd_prop_get(g, KFD_PROP_unique_id),
	};
}

/* A GPU a restore could use: accessible, with a gpu_id and a render node. */
static bool usable(const struct kfd_node *g)
{
	return g->accessible && g->is_gpu && g->gpu_id &&
	       kfd_prop_present(g, KFD_PROP_drm_render_minor);
}

size_t gpu_select_nodes(const struct gpu_select *sel, const struct kfd_topology *t, uint32_t *out,
			size_t *unnamed)
{
	size_t i, n = 0, left_out = 0;

	for (i = 0; i < t->n_nodes; i++) {
		const struct kfd_node *g = &t->nodes[i];
		struct gpu_identity id;

		if (!usable(g))
			continue;
		id = gpu_select_identity(g);
		if (gpu_select_allows(sel, &id))
			out[n++] = g->index;
		else
			left_out++;
	}
	if (unnamed)
		*unnamed = left_out;
	return n;
}

/* ---- every name a GPU ------------------------------------------------------------------------ */

enum select_kind { KIND_MINOR, KIND_GPU_ID, KIND_PCI, KIND_UNIQUE_ID };

static const char *const kind_name[] = {"render node", "gpu_id", "PCI address", "unique_id"};
static const char *const kind_names[] = {"render nodes", "gpu_ids", "PCI addresses", "unique_ids"};

/* The one-entry selection of entry i of kind k. */
static void entry_of(const struct gpu_select *sel, enum select_kind k, unsigned int i,
		     struct gpu_select *one)
{
	memset(one, 0, sizeof(*one));
	switch (k) {
	case KIND_MINOR:
		one->minors[one->n_minors++] = sel->minors[i];
		break;
	case KIND_GPU_ID:
		one->gpu_ids[one->n_gpu_ids++] = sel->gpu_ids[i];
		break;
	case KIND_PCI:
		one->pcis[one->n_pcis++] = sel->pcis[i];
		break;
	default:
		one->unique_ids[one->n_unique_ids++] = sel->unique_ids[i];
		break;
	}
}

/* A GPU's value of kind k, as the value is written. */
static void value_text(enum select_kind k, const struct gpu_identity *id, char *buf, size_t len)
{
	switch (k) {
	case KIND_MINOR:
		snprintf(buf, len, "renderD%u", id->render_minor);
		break;
	case KIND_GPU_ID:
		snprintf(buf, len, "0x%x", id->gpu_id);
		break;
	case KIND_PCI:
		snprintf(buf, len, "%04x:%02x:%02x.%x", id->domain, (id->location_id >> 8) & 0xff,
			 (id->location_id >> 3) & 0x1f, id->location_id & 7);
		break;
	default:
		snprintf(buf, len, "%016llx", (unsigned long long)id->unique_id);
		break;
	}
}

/* The entry's own value, as value_text() writes a GPU's. */
static void entry_text(const struct gpu_select *one, enum select_kind k, char *buf, size_t len)
{
	struct gpu_identity id = {
		.gpu_id = one->gpu_ids[0],
		.render_minor = one->minors[0],
		.domain = one->pcis[0].domain,
		.location_id = one->pcis[0].location_id,
		.unique_id = one->unique_ids[0],
	};

	value_text(k, &id, buf, len);
}

/* "renderD128, renderD129, ..." of t's usable GPUs (distinct, the first 8). */
static void values_here(const struct kfd_topology *t, enum select_kind k, char *buf, size_t len)
{
	char seen[8][40], v[40];
	size_t i, n = 0, used = 0, more = 0;

	buf[0] = '\0';
	for (i = 0; i < t->n_nodes; i++) {
		struct gpu_identity id;
		size_t j;

		if (!usable(&t->nodes[i]))
			continue;
		id = gpu_select_identity(&t->nodes[i]);
		value_text(k, &id, v, sizeof(v));
		for (j = 0; j < n && strcmp(seen[j], v); j++)
			;
		if (j < n)
			continue;
		if (n == 8) {
			more++;
			continue;
		}
		snprintf(seen[n++], sizeof(seen[0]), "%s", v);
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s",
					 n > 1 ? ", " : "", v);
	}
	if (more && used < len)
		snprintf(buf + used, len - used, ", and %zu more", more);
	if (!n)
		snprintf(buf, len, "no usable GPU");
}

int gpu_select_check(const struct gpu_select *sel, const struct kfd_topology *t, char *err,
		     size_t errlen)
{
	const unsigned int counts[] = {sel->n_minors, sel->n_gpu_ids, sel->n_pcis,
				       sel->n_unique_ids};
	uint32_t *out = calloc(t->n_nodes + 1, sizeof(*out));
	struct gpu_select one;
	char want[40], have[400];
	int ret = 0;

	if (!out)
		return errmsg_set(err, errlen, -ENOMEM, "%s: no memory", GPU_SELECT_ENV);
	for (unsigned int k = 0; k < 4 && !ret; k++) {
		for (unsigned int i = 0; i < counts[k] && !ret; i++) {
			entry_of(sel, (enum select_kind)k, i, &one);
			if (gpu_select_nodes(&one, t, out, NULL))
				continue;
			entry_text(&one, (enum select_kind)k, want, sizeof(want));
			values_here(t, (enum select_kind)k, have, sizeof(have));
			ret = errmsg_set(err, errlen, -ENODEV,
					 "%s names %s %s, which no usable GPU of this node has "
					 "(its GPUs' %s: %s)",
					 GPU_SELECT_ENV, kind_name[k], want, kind_names[k], have);
		}
	}
	free(out);
	return ret;
}
