// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: parser of machine descriptions.
 *
 * A description is a small line-oriented text (written by mkdesc.sh from a
 * sysfs capture, see README.md):
 *
 *   kfdsim-machine 1                       first line, format version
 *   system platform_oem=N platform_id=N platform_rev=N
 *   generation_id N                        optional
 *   node ID gpu_id=N KEY=N ...             nodes in order 0, 1, 2, ...
 *   name ID TEXT                           optional, rest of the line
 *   pci ID rev=N                           optional: a GPU's PCI revision
 *                                          (DRM_AMDGPU_INFO pci_rev; not in sysfs)
 *   mem NODE I KEY=N ...                   I = 0, 1, ... per node and kind
 *   cache NODE I KEY=N ... sibling_map=1,0,...
 *   iolink NODE I KEY=N ...
 *   p2plink NODE I KEY=N ...
 *   end                                    last line
 *
 * '#' starts a comment line; blank lines are ignored. Numbers are decimal.
 * The parser is strict: unknown records or keys, repeated keys, values out
 * of range, records out of order, and anything after "end" are rejected
 * with a message naming the line.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include "kfdsim.h"

#define DESC_MAGIC		"kfdsim-machine"
#define DESC_VERSION		1
#define DESC_MAX_TOKENS		(NP_COUNT + 8)

struct field {
	const char *name;
	size_t off;
	u8 is64;
};

#define F32(s, f) { #f, offsetof(struct s, f), 0 }
#define F64(s, f) { #f, offsetof(struct s, f), 1 }

static const struct field mem_fields[] = {
	F32(kfdsim_mem_bank, heap_type),
	F64(kfdsim_mem_bank, size_in_bytes),
	F32(kfdsim_mem_bank, flags),
	F32(kfdsim_mem_bank, width),
	F32(kfdsim_mem_bank, mem_clk_max),
	{ }
};

static const struct field cache_fields[] = {
	F32(kfdsim_cache, processor_id_low),
	F32(kfdsim_cache, level),
	F32(kfdsim_cache, size),
	F32(kfdsim_cache, cache_line_size),
	F32(kfdsim_cache, cache_lines_per_tag),
	F32(kfdsim_cache, association),
	F32(kfdsim_cache, latency),
	F32(kfdsim_cache, type),
	{ }
};

static const struct field link_fields[] = {
	F32(kfdsim_link, type),
	F32(kfdsim_link, version_major),
	F32(kfdsim_link, version_minor),
	F32(kfdsim_link, node_from),
	F32(kfdsim_link, node_to),
	F32(kfdsim_link, weight),
	F32(kfdsim_link, min_latency),
	F32(kfdsim_link, max_latency),
	F32(kfdsim_link, min_bandwidth),
	F32(kfdsim_link, max_bandwidth),
	F32(kfdsim_link, recommended_transfer_size),
	F32(kfdsim_link, recommended_sdma_engine_id_mask),
	F32(kfdsim_link, flags),
	{ }
};

struct parser {
	struct kfdsim_topology *topo;
	unsigned int line;
	char *tok[DESC_MAX_TOKENS];
	int ntok;
	bool have_system;
	bool have_genid;
};

#define perr(ps, fmt, ...) \
	pr_err(KFDSIM_NAME ": machine description line %u: " fmt "\n", \
	       (ps)->line, ##__VA_ARGS__)

static int split(struct parser *ps, char *s)
{
	ps->ntok = 0;
	while (*s) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		if (ps->ntok == DESC_MAX_TOKENS) {
			perr(ps, "too many fields");
			return -EINVAL;
		}
		ps->tok[ps->ntok++] = s;
		while (*s && *s != ' ')
			s++;
		if (*s)
			*s++ = '\0';
	}
	return 0;
}

static int parse_num(struct parser *ps, const char *s, u64 max, u64 *out)
{
	/* decimal only, no sign, no leading '+' */
	if (!isdigit(*s) || kstrtou64(s, 10, out) || *out > max) {
		perr(ps, "bad number \"%s\"", s);
		return -EINVAL;
	}
	return 0;
}

static int parse_index(struct parser *ps, int i, u32 max, u32 *out)
{
	u64 v;

	if (i >= ps->ntok) {
		perr(ps, "missing index");
		return -EINVAL;
	}
	if (parse_num(ps, ps->tok[i], max, &v))
		return -EINVAL;
	*out = v;
	return 0;
}

/* KEY=VALUE tokens from index @first into the fields of @obj. */
static int parse_fields(struct parser *ps, int first, const struct field *fields,
			void *obj)
{
	unsigned long seen = 0;
	int i, f;

	for (i = first; i < ps->ntok; i++) {
		char *key = ps->tok[i], *val = strchr(key, '=');
		u64 v;

		if (!val) {
			perr(ps, "expected KEY=VALUE, got \"%s\"", key);
			return -EINVAL;
		}
		*val++ = '\0';
		for (f = 0; fields[f].name; f++)
			if (!strcmp(fields[f].name, key))
				break;
		if (!fields[f].name) {
			perr(ps, "unknown key \"%s\"", key);
			return -EINVAL;
		}
		if (seen & BIT(f)) {
			perr(ps, "key \"%s\" given twice", key);
			return -EINVAL;
		}
		seen |= BIT(f);
		if (parse_num(ps, val, fields[f].is64 ? U64_MAX : U32_MAX, &v))
			return -EINVAL;
		if (fields[f].is64)
			*(u64 *)(obj + fields[f].off) = v;
		else
			*(u32 *)(obj + fields[f].off) = v;
	}
	return 0;
}

static int grow(void **arr, u32 n, size_t size, u32 max)
{
	void *p;

	if (n >= max)
		return -E2BIG;
	/* room for n + 1, doubling */
	if (n && (n & (n - 1)))
		return 0;
	p = krealloc_array(*arr, n ? 2 * n : 1, size, GFP_KERNEL | __GFP_ZERO);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

static int rec_node(struct parser *ps)
{
	struct kfdsim_topology *topo = ps->topo;
	struct kfdsim_node *n;
	u32 id;
	int i, k, ret;

	if (parse_index(ps, 1, KFDSIM_MAX_NODES - 1, &id))
		return -EINVAL;
	if (id != topo->n_nodes) {
		perr(ps, "node %u out of order (expected %u)", id, topo->n_nodes);
		return -EINVAL;
	}
	ret = grow((void **)&topo->nodes, topo->n_nodes, sizeof(*n),
		   KFDSIM_MAX_NODES);
	if (ret)
		return ret;
	n = &topo->nodes[topo->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->id = id;

	for (i = 2; i < ps->ntok; i++) {
		char *key = ps->tok[i], *val = strchr(key, '=');
		u64 v;

		if (!val) {
			perr(ps, "expected KEY=VALUE, got \"%s\"", key);
			return -EINVAL;
		}
		*val++ = '\0';
		if (!strcmp(key, "gpu_id")) {
			if (parse_num(ps, val, U16_MAX, &v))
				return -EINVAL;
			n->gpu_id = v;
			continue;
		}
		for (k = 0; k < NP_COUNT; k++)
			if (!strcmp(kfdsim_node_props[k].name, key))
				break;
		if (k == NP_COUNT) {
			perr(ps, "unknown node property \"%s\"", key);
			return -EINVAL;
		}
		if (test_and_set_bit(k, n->props_given)) {
			perr(ps, "property \"%s\" given twice", key);
			return -EINVAL;
		}
		if (parse_num(ps, val, kfdsim_node_props[k].is64 ? U64_MAX : U32_MAX,
			      &n->props[k]))
			return -EINVAL;
	}
	return 0;
}

static struct kfdsim_node *node_arg(struct parser *ps)
{
	u32 id;

	if (parse_index(ps, 1, KFDSIM_MAX_NODES - 1, &id))
		return NULL;
	if (id + 1 != ps->topo->n_nodes) {
		perr(ps, "record for node %u must follow \"node %u\"", id, id);
		return NULL;
	}
	return &ps->topo->nodes[id];
}

static int rec_name(struct parser *ps, char *rest)
{
	struct kfdsim_node *n = node_arg(ps);
	size_t len;

	if (!n)
		return -EINVAL;
	len = strlen(rest);
	if (len >= KFDSIM_NAME_SIZE) {
		perr(ps, "name too long");
		return -EINVAL;
	}
	strscpy(n->name, rest, sizeof(n->name));
	return 0;
}

static int rec_pci(struct parser *ps)
{
	static const struct field pci_fields[] = {
		{ "rev", offsetof(struct kfdsim_node, pci_rev), 0 },
		{ }
	};
	struct kfdsim_node *n = node_arg(ps);

	if (!n)
		return -EINVAL;
	return parse_fields(ps, 2, pci_fields, n);
}

static int parse_sibling_map(struct parser *ps, struct kfdsim_cache *c)
{
	int i;

	for (i = 2; i < ps->ntok; i++) {
		char *t = ps->tok[i];
		u32 bits = 0;

		if (strncmp(t, "sibling_map=", 12))
			continue;
		t += 12;
		memset(c->sibling_map, 0, sizeof(c->sibling_map));
		while (*t) {
			if ((*t != '0' && *t != '1') || bits == 8 * KFDSIM_SIBLING_BYTES) {
				perr(ps, "bad sibling_map");
				return -EINVAL;
			}
			if (*t == '1')
				c->sibling_map[bits / 8] |= BIT(bits % 8);
			bits++;
			t++;
			if (*t == ',' && t[1])
				t++;
			else if (*t)
				break;
		}
		if (*t || !bits || bits % 8) {
			perr(ps, "bad sibling_map (need a multiple of 8 values)");
			return -EINVAL;
		}
		c->sibling_map_size = bits / 8;
		/* drop the token so that parse_fields() does not see it */
		ps->tok[i] = ps->tok[--ps->ntok];
		return 0;
	}
	perr(ps, "cache without sibling_map");
	return -EINVAL;
}

static int rec_item(struct parser *ps, const char *kind)
{
	struct kfdsim_node *n = node_arg(ps);
	void **arr;
	u32 *cnt, idx, max;
	size_t size;
	const struct field *fields;
	void *obj;
	int ret;

	if (!n)
		return -EINVAL;
	if (!strcmp(kind, "mem")) {
		arr = (void **)&n->mem, cnt = &n->n_mem;
		size = sizeof(*n->mem), max = KFDSIM_MAX_MEM_BANKS;
		fields = mem_fields;
	} else if (!strcmp(kind, "cache")) {
		arr = (void **)&n->caches, cnt = &n->n_caches;
		size = sizeof(*n->caches), max = KFDSIM_MAX_CACHES;
		fields = cache_fields;
	} else if (!strcmp(kind, "iolink")) {
		arr = (void **)&n->io_links, cnt = &n->n_io_links;
		size = sizeof(*n->io_links), max = KFDSIM_MAX_LINKS;
		fields = link_fields;
	} else {
		arr = (void **)&n->p2p_links, cnt = &n->n_p2p_links;
		size = sizeof(*n->p2p_links), max = KFDSIM_MAX_LINKS;
		fields = link_fields;
	}
	if (parse_index(ps, 2, max - 1, &idx))
		return -EINVAL;
	if (idx != *cnt) {
		perr(ps, "%s %u out of order (expected %u)", kind, idx, *cnt);
		return -EINVAL;
	}
	ret = grow(arr, *cnt, size, max);
	if (ret) {
		perr(ps, "too many %s entries", kind);
		return ret;
	}
	obj = *arr + size * (*cnt)++;
	memset(obj, 0, size);
	if (fields == cache_fields && parse_sibling_map(ps, obj))
		return -EINVAL;
	if (parse_fields(ps, 3, fields, obj))
		return -EINVAL;
	if (fields == link_fields && ((struct kfdsim_link *)obj)->node_from != n->id) {
		perr(ps, "node_from must be %u", n->id);
		return -EINVAL;
	}
	return 0;
}

static int rec_system(struct parser *ps)
{
	static const struct field sys_fields[] = {
		F64(kfdsim_topology, platform_oem),
		F64(kfdsim_topology, platform_id),
		F64(kfdsim_topology, platform_rev),
		{ }
	};

	if (ps->have_system) {
		perr(ps, "second system record");
		return -EINVAL;
	}
	ps->have_system = true;
	return parse_fields(ps, 1, sys_fields, ps->topo);
}

static int rec_genid(struct parser *ps)
{
	u32 v;

	if (ps->have_genid || ps->ntok != 2) {
		perr(ps, "bad generation_id record");
		return -EINVAL;
	}
	ps->have_genid = true;
	if (parse_index(ps, 1, U32_MAX, &v))
		return -EINVAL;
	ps->topo->generation_id = v;
	return 0;
}

static int parse_line(struct parser *ps, char *s)
{
	char *rest = NULL;
	const char *kind;

	/* "name ID TEXT": TEXT may contain spaces; split only the first two */
	if (!strncmp(s, "name ", 5)) {
		char *p = strchr(s + 5, ' ');

		if (p) {
			*p = '\0';
			rest = p + 1;
		} else {
			rest = "";
		}
	}
	if (split(ps, s))
		return -EINVAL;
	if (!ps->ntok)
		return 0;
	kind = ps->tok[0];
	if (!strcmp(kind, "node"))
		return rec_node(ps);
	if (!strcmp(kind, "name"))
		return rec_name(ps, rest);
	if (!strcmp(kind, "pci"))
		return rec_pci(ps);
	if (!strcmp(kind, "mem") || !strcmp(kind, "cache") ||
	    !strcmp(kind, "iolink") || !strcmp(kind, "p2plink"))
		return rec_item(ps, kind);
	if (!strcmp(kind, "system"))
		return rec_system(ps);
	if (!strcmp(kind, "generation_id"))
		return rec_genid(ps);
	perr(ps, "unknown record \"%s\"", kind);
	return -EINVAL;
}

void kfdsim_topology_free(struct kfdsim_topology *topo)
{
	u32 i;

	if (!topo)
		return;
	for (i = 0; i < topo->n_nodes; i++) {
		kfree(topo->nodes[i].mem);
		kfree(topo->nodes[i].caches);
		kfree(topo->nodes[i].io_links);
		kfree(topo->nodes[i].p2p_links);
	}
	kfree(topo->nodes);
	kfree(topo);
}

/*
 * Parses @buf (modified in place; need not be NUL-terminated) into a new
 * topology, not yet checked for consistency (kfdsim_topology_finish()).
 */
struct kfdsim_topology *kfdsim_desc_parse(char *buf, size_t len)
{
	struct parser ps = { };
	bool header = false, end = false;
	size_t pos = 0;
	int ret = 0;

	ps.topo = kzalloc(sizeof(*ps.topo), GFP_KERNEL);
	if (!ps.topo)
		return ERR_PTR(-ENOMEM);

	while (pos < len && !ret) {
		char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? nl - s : len - pos;

		pos += l + 1;
		ps.line++;
		s[l] = '\0';	/* the '\n', or the byte past the end (see caller) */
		if (strlen(s) != l || strpbrk(s, "\t\r")) {
			perr(&ps, "NUL, tab or CR in line");
			ret = -EINVAL;
			break;
		}
		if (!*s || *s == '#')
			continue;
		if (end) {
			perr(&ps, "text after \"end\"");
			ret = -EINVAL;
		} else if (!header) {
			header = true;
			if (strcmp(s, DESC_MAGIC " 1")) {
				perr(&ps, "expected \"" DESC_MAGIC " %d\"", DESC_VERSION);
				ret = -EINVAL;
			}
		} else if (!strcmp(s, "end")) {
			end = true;
		} else {
			ret = parse_line(&ps, s);
		}
	}
	if (!ret && !end) {
		perr(&ps, "missing \"end\" (truncated description?)");
		ret = -EINVAL;
	}
	if (!ret && !ps.topo->n_nodes) {
		perr(&ps, "no nodes");
		ret = -EINVAL;
	}
	if (ret) {
		kfdsim_topology_free(ps.topo);
		return ERR_PTR(ret);
	}
	if (!ps.have_genid)
		ps.topo->generation_id = 0;	/* computed by topology_finish */
	return ps.topo;
}
