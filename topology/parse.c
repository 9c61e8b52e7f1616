// SPDX-License-Identifier: MIT
/*
 * topo_load(): reads a KFD sysfs topology tree (or a capture of one) into
 * struct kfd_topology. The contract is in topology.h; the decisions below are
 * the ones the real captures in tests/fixtures/kfd-topologies forced or left open.
 *
 * Layout and tolerance:
 *   - nodes/ must hold exactly the directories 0..N-1 (any readdir order).
 *     Names starting with '.' are skipped; any other entry is an error.
 *   - mem_banks/, caches/, io_links/, p2p_links/ entries are sorted
 *     numerically but may have gaps: the rocprofiler workstation capture lacks
 *     nodes/4/io_links/0. Their *_count properties are not cross-checked for
 *     the same reason (and because captures omit whole directories).
 *   - A link's node_from/node_to must be below TOPO_MAX_NODES, but may name a
 *     node that this tree does not have: the same capture's node 4 was spliced
 *     in from another host and links to nodes 2..9 of a 7-node tree. Callers
 *     resolve node_to with topo_node(), which returns NULL for those.
 *   - Every line of a key/value file must read "<key> <value>"; values of the
 *     keys we keep must be decimal and fit their field; values of unknown keys
 *     are not looked at, so a newer kernel's non-numeric key cannot break us.
 *     A known key seen twice is an error. properties must have simd_count
 *     (every kernel prints it and is_gpu depends on it); links must have type,
 *     node_from, node_to and weight; mem banks heap_type and size_in_bytes.
 *   - caches/ entries are only counted, never read (sibling_map is not
 *     numeric and nothing uses the values). system_properties is not read:
 *     the model has no place for it.
 *   - vram_size sums the FB_PUBLIC and FB_PRIVATE banks. With both kinds,
 *     vram_heap_type is FB_PRIVATE: not all of the VRAM is host-visible, and
 *     claiming FB_PUBLIC could let a matcher pick a GPU the process cannot map.
 *   - EPERM/EACCES anywhere inside nodes/N (the device cgroup hides the GPU)
 *     turns the node into index + accessible=false + is_gpu=true, everything
 *     else zero. The kernel only refuses reads of nodes that have a GPU, and
 *     calling it a GPU keeps topo_gpu_cpu_node() from taking a hidden xGMI
 *     peer (weight 13/15) for the GPU's CPU node (weight 20).
 *
 * Errors are one line, "path:line: what" (or "path: what" when no line
 * applies), returned as -EINVAL for malformed content, -EFBIG/-E2BIG for
 * limits, or the negative errno of the failed system call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/regfile.h"
#include "topology/topology.h"

#define TOPO_MAX_NODES	 4096
#define TOPO_MAX_ENTRIES 4096	     /* per mem_banks/caches/io_links/p2p_links */
#define TOPO_MAX_FILE	 (64 * 1024) /* sysfs files are one page; a capture may be larger */

struct loader {
	const char *root;
	/* root without trailing slashes ("" for "/"): the start of every path in a message */
	char shown[4096];
	char dir[4096 + 64]; /* directory the current file names are relative to, for messages */
	char *buf;	     /* TOPO_MAX_FILE + 2 bytes, reused for every file */
	char *err;
	size_t errlen;
};

/* One key of a key/value file we keep: where it goes in the target struct. */
struct kv_key {
	const char *name;
	size_t len;
	size_t off;
	unsigned int size; /* 4 or 8 */
};

struct loader;

struct kv_spec {
	const struct kv_key *keys;
	unsigned int n_keys;
	uint64_t required; /* bit i: keys[i] must be present */
	/* checks on the parsed record beyond "every value fits", or NULL */
	int (*check)(struct loader *ld, const char *rel, const void *rec);
};

// clang-format off
#define KV(type, field, sz) { #field, sizeof(#field) - 1, offsetof(type, field), sz }
// clang-format on

/* In enum kfd_prop order, so that the "seen" mask is kfd_node_props.present. */
static const struct kv_key node_keys[] = {
#define KFD_PROP_KEY(name) KV(struct kfd_node_props, name, 8),
	KFD_NODE_PROPS(KFD_PROP_KEY)
#undef KFD_PROP_KEY
};

static const struct kv_spec node_spec = {
	.keys = node_keys,
	.n_keys = KFD_PROP__COUNT,
	.required = 1ULL << KFD_PROP_simd_count,
};

static int check_link(struct loader *ld, const char *rel, const void *rec);

// clang-format off
static const struct kv_key link_keys[] = {
	KV(struct kfd_link, type, 4),
	KV(struct kfd_link, node_from, 4),
	KV(struct kfd_link, node_to, 4),
	KV(struct kfd_link, weight, 4),
	KV(struct kfd_link, flags, 4),
	KV(struct kfd_link, min_bandwidth, 8),
	KV(struct kfd_link, max_bandwidth, 8),
};
// clang-format on

static const struct kv_spec link_spec = {
	.keys = link_keys,
	.n_keys = sizeof(link_keys) / sizeof(link_keys[0]),
	.required = 0xf, /* type, node_from, node_to, weight */
	.check = check_link,
};

// clang-format off
static const struct kv_key bank_keys[] = {
	KV(struct kfd_mem_bank, heap_type, 4),
	KV(struct kfd_mem_bank, size_in_bytes, 8),
	KV(struct kfd_mem_bank, flags, 4),
	KV(struct kfd_mem_bank, width, 4),
	KV(struct kfd_mem_bank, mem_clk_max, 4),
};
// clang-format on

static const struct kv_spec bank_spec = {
	.keys = bank_keys,
	.n_keys = sizeof(bank_keys) / sizeof(bank_keys[0]),
	.required = 0x3, /* heap_type, size_in_bytes */
};

_Static_assert(KFD_PROP__COUNT <= 64, "kfd_node_props.present is a 64-bit mask");

static void set_dir(struct loader *ld, const char *sub, int index)
{
	if (index < 0)
		snprintf(ld->dir, sizeof(ld->dir), "%s%s", ld->shown, sub);
	else
		snprintf(ld->dir, sizeof(ld->dir), "%s%s/%d", ld->shown, sub, index);
}

/* Canonical decimal (no sign, no leading zero) of at most u64; false otherwise. */
static bool parse_dec(const char *s, size_t len, uint64_t *val)
{
	uint64_t v = 0;

	if (!len || (s[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*val = v;
	return true;
}

/*
 * Whole file into ld->buf, NUL-terminated. Failures are reported (the caller
 * may still decide that ENOENT or EACCES is not an error).
 */
static int read_file(struct loader *ld, int dfd, const char *rel, size_t *len)
{
	char why[128];
	size_t n = 0;
	int fd, ret = 0;

	/* a FIFO or device in a (copied) tree must not block or act: refused */
	fd = regfile_open(dfd, rel, why, sizeof(why));
	if (fd < 0)
		return errmsg_set(ld->err, ld->errlen, fd, "%s/%s: %s", ld->dir, rel, why);
	while (n <= TOPO_MAX_FILE) {
		ssize_t r = read(fd, ld->buf + n, TOPO_MAX_FILE + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = errmsg_set(ld->err, ld->errlen, -errno, "%s/%s: read: %s", ld->dir,
					 rel, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > TOPO_MAX_FILE) {
		ret = errmsg_set(ld->err, ld->errlen, -EFBIG, "%s/%s: larger than %d bytes",
				 ld->dir, rel, TOPO_MAX_FILE);
		goto out;
	}
	ld->buf[n] = '\0';
	*len = n;
out:
	close(fd);
	return ret;
}

static int store_value(struct loader *ld, const char *rel, unsigned int line,
		       const struct kv_key *k, const char *val, size_t vlen, void *target)
{
	uint64_t v;

	if (!parse_dec(val, vlen, &v))
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/%s:%u: value of %s is not a decimal number or overflows",
				  ld->dir, rel, line, k->name);
	if (k->size == 4) {
		if (v > UINT32_MAX)
			return errmsg_set(ld->err, ld->errlen, -EINVAL,
					  "%s/%s:%u: value of %s does not fit in 32 bits", ld->dir,
					  rel, line, k->name);
		*(uint32_t *)((char *)target + k->off) = (uint32_t)v;
	} else {
		*(uint64_t *)((char *)target + k->off) = v;
	}
	return 0;
}

static int parse_line(struct loader *ld, const char *rel, unsigned int line, const char *s,
		      size_t len, const struct kv_spec *spec, void *target, uint64_t *seen)
{
	const char *sp = memchr(s, ' ', len);
	size_t klen;

	if (!sp || sp == s)
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/%s:%u: expected \"<key> <value>\"", ld->dir, rel, line);
	klen = (size_t)(sp - s);
	if (klen + 1 == len)
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/%s:%u: key without value",
				  ld->dir, rel, line);

	for (unsigned int i = 0; i < spec->n_keys; i++) {
		const struct kv_key *k = &spec->keys[i];

		if (k->len != klen || memcmp(k->name, s, klen))
			continue;
		if (*seen & (1ULL << i))
			return errmsg_set(ld->err, ld->errlen, -EINVAL,
					  "%s/%s:%u: duplicate key %s", ld->dir, rel, line,
					  k->name);
		*seen |= 1ULL << i;
		return store_value(ld, rel, line, k, sp + 1, len - klen - 1, target);
	}
	return 0;
}

/* Parse the key/value file `rel` (already in ld->buf, `len` bytes) into target. */
static int parse_kv(struct loader *ld, const char *rel, size_t len, const struct kv_spec *spec,
		    void *target, uint64_t *seen)
{
	const char *p = ld->buf, *end = ld->buf + len;
	unsigned int line = 0;
	uint64_t missing;
	int ret;

	*seen = 0;
	if (!len)
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/%s: empty file", ld->dir, rel);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		ret = parse_line(ld, rel, ++line, p, (size_t)(eol - p), spec, target, seen);
		if (ret)
			return ret;
		p = eol + 1;
	}
	missing = spec->required & ~*seen;
	if (missing)
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/%s: no %s line", ld->dir, rel,
				  spec->keys[__builtin_ctzll(missing)].name);
	return 0;
}

static int read_kv(struct loader *ld, int dfd, const char *rel, const struct kv_spec *spec,
		   void *target, uint64_t *seen)
{
	size_t len;
	int ret;

	ret = read_file(ld, dfd, rel, &len);
	if (ret)
		return ret;
	return parse_kv(ld, rel, len, spec, target, seen);
}

/* A file holding one u32 and an optional newline (gpu_id, generation_id). */
static int read_u32_file(struct loader *ld, int dfd, const char *rel, uint32_t *val)
{
	const char *nl;
	size_t len;
	uint64_t v;
	int ret;

	ret = read_file(ld, dfd, rel, &len);
	if (ret)
		return ret;
	nl = memchr(ld->buf, '\n', len);
	if (nl && (size_t)(nl - ld->buf) + 1 != len)
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/%s:2: unexpected second line",
				  ld->dir, rel);
	if (!parse_dec(ld->buf, nl ? (size_t)(nl - ld->buf) : len, &v) || v > UINT32_MAX)
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/%s:1: not a 32-bit decimal number", ld->dir, rel);
	*val = (uint32_t)v;
	return 0;
}

static int read_name(struct loader *ld, int dfd, struct kfd_node *node)
{
	size_t len;
	int ret;

	ret = read_file(ld, dfd, "name", &len);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	/* Older captures and rocmi's copy have no trailing newline. */
	if (len && ld->buf[len - 1] == '\n')
		len--;
	if (memchr(ld->buf, '\n', len) || memchr(ld->buf, '\0', len))
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/name:1: more than one line or a NUL byte", ld->dir);
	if (len >= sizeof(node->name))
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/name:1: longer than %zu bytes",
				  ld->dir, sizeof(node->name) - 1);
	memcpy(node->name, ld->buf, len);
	node->name[len] = '\0';
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int collect_ids(struct loader *ld, DIR *d, const char *rel, size_t max, uint32_t **ids,
		       size_t *n)
{
	size_t cap = 0;
	struct dirent *de;
	uint64_t v;

	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (de->d_name[0] == '.')
			continue;
		if (!parse_dec(de->d_name, strlen(de->d_name), &v) || v > UINT32_MAX)
			return errmsg_set(ld->err, ld->errlen, -EINVAL,
					  "%s/%s: entry that is not a decimal index", ld->dir, rel);
		if (*n == max)
			return errmsg_set(ld->err, ld->errlen, -E2BIG,
					  "%s/%s: more than %zu entries", ld->dir, rel, max);
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			uint32_t *p = realloc(*ids, ncap * sizeof(*p));

			if (!p)
				return errmsg_set(ld->err, ld->errlen, -ENOMEM,
						  "%s/%s: out of memory", ld->dir, rel);
			*ids = p;
			cap = ncap;
		}
		(*ids)[(*n)++] = (uint32_t)v;
	}
	if (errno)
		return errmsg_set(ld->err, ld->errlen, -errno, "%s/%s: readdir: %s", ld->dir, rel,
				  strerror(errno));
	return 0;
}

/*
 * Numeric entries of directory `rel`, sorted. -ENOENT (reported) if it does
 * not exist. *ids is the caller's to free, also on failure.
 */
static int list_dir(struct loader *ld, int dfd, const char *rel, size_t max, uint32_t **ids,
		    size_t *n)
{
	DIR *d;
	int fd, ret;

	*ids = NULL;
	*n = 0;
	fd = openat(dfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errmsg_set(ld->err, ld->errlen, -errno, "%s/%s: %s", ld->dir, rel,
				  strerror(errno));
	d = fdopendir(fd);
	if (!d) {
		ret = errmsg_set(ld->err, ld->errlen, -errno, "%s/%s: %s", ld->dir, rel,
				 strerror(errno));
		close(fd);
		return ret;
	}
	ret = collect_ids(ld, d, rel, max, ids, n);
	closedir(d);
	if (!ret && *n)
		qsort(*ids, *n, sizeof(**ids), cmp_u32);
	return ret;
}

static int check_link(struct loader *ld, const char *rel, const void *rec)
{
	const struct kfd_link *l = rec;

	if (l->node_from >= TOPO_MAX_NODES)
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/%s: node_from %u out of range (max %d)", ld->dir, rel,
				  l->node_from, TOPO_MAX_NODES - 1);
	if (l->node_to >= TOPO_MAX_NODES)
		return errmsg_set(ld->err, ld->errlen, -EINVAL,
				  "%s/%s: node_to %u out of range (max %d)", ld->dir, rel,
				  l->node_to, TOPO_MAX_NODES - 1);
	return 0;
}

/*
 * Read every <dir>/<i>/properties of a node into an array of `size`-byte
 * records. A missing directory means no entries.
 */
static int read_entries(struct loader *ld, int nfd, const char *dir, const struct kv_spec *spec,
			size_t size, void **out, size_t *n_out)
{
	uint32_t *ids = NULL;
	char *recs = NULL;
	char rel[64];
	uint64_t seen;
	size_t n;
	int ret;

	ret = list_dir(ld, nfd, dir, TOPO_MAX_ENTRIES, &ids, &n);
	if (ret == -ENOENT)
		ret = 0;
	if (ret || !n)
		goto out;
	recs = calloc(n, size);
	if (!recs) {
		ret = errmsg_set(ld->err, ld->errlen, -ENOMEM, "%s/%s: out of memory", ld->dir,
				 dir);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/%u/properties", dir, ids[i]);
		ret = read_kv(ld, nfd, rel, spec, recs + i * size, &seen);
		if (!ret && spec->check)
			ret = spec->check(ld, rel, recs + i * size);
		if (ret)
			goto out;
	}
	*out = recs;
	*n_out = n;
	recs = NULL;
out:
	free(recs);
	free(ids);
	return ret;
}

static int count_caches(struct loader *ld, int nfd, struct kfd_node *node)
{
	uint32_t *ids;
	size_t n;
	int ret;

	ret = list_dir(ld, nfd, "caches", TOPO_MAX_ENTRIES, &ids, &n);
	free(ids);
	if (ret == -ENOENT)
		return 0;
	if (!ret)
		node->n_caches = n;
	return ret;
}

static int derive_vram(struct loader *ld, struct kfd_node *node)
{
	bool has_public = false, has_private = false;

	for (size_t i = 0; i < node->n_mem_banks; i++) {
		const struct kfd_mem_bank *b = &node->mem_banks[i];

		if (b->heap_type != KFD_HEAP_FB_PUBLIC && b->heap_type != KFD_HEAP_FB_PRIVATE)
			continue;
		if (node->vram_size + b->size_in_bytes < node->vram_size)
			return errmsg_set(ld->err, ld->errlen, -EINVAL,
					  "%s/mem_banks: total VRAM size overflows", ld->dir);
		node->vram_size += b->size_in_bytes;
		has_public |= b->heap_type == KFD_HEAP_FB_PUBLIC;
		has_private |= b->heap_type == KFD_HEAP_FB_PRIVATE;
	}
	node->vram_heap_type = has_private  ? KFD_HEAP_FB_PRIVATE
			       : has_public ? KFD_HEAP_FB_PUBLIC
					    : 0;
	return 0;
}

static int read_gpu_id(struct loader *ld, int nfd, struct kfd_node *node)
{
	int ret = read_u32_file(ld, nfd, "gpu_id", &node->gpu_id);

	return ret == -ENOENT ? 0 : ret;
}

static int read_banks(struct loader *ld, int nfd, struct kfd_node *node)
{
	void *recs = NULL;
	int ret;

	ret = read_entries(ld, nfd, "mem_banks", &bank_spec, sizeof(struct kfd_mem_bank), &recs,
			   &node->n_mem_banks);
	node->mem_banks = recs;
	return ret ? ret : derive_vram(ld, node);
}

static int read_links(struct loader *ld, int nfd, const char *dir, struct kfd_link **links,
		      size_t *n)
{
	void *recs = NULL;
	int ret;

	ret = read_entries(ld, nfd, dir, &link_spec, sizeof(struct kfd_link), &recs, n);
	*links = recs;
	return ret;
}

static int read_node_files(struct loader *ld, int nfd, struct kfd_node *node)
{
	int ret;

	ret = read_gpu_id(ld, nfd, node);
	if (!ret)
		ret = read_name(ld, nfd, node);
	if (!ret)
		ret = read_kv(ld, nfd, "properties", &node_spec, &node->props,
			      &node->props.present);
	if (!ret && !kfd_render_minor_valid(node->props.drm_render_minor))
		ret = errmsg_set(ld->err, ld->errlen, -EINVAL,
				 "%s/properties: drm_render_minor %" PRIu64
				 " out of range (0, or a render minor %u..%u)",
				 ld->dir, node->props.drm_render_minor, KFD_RENDER_MINOR_FIRST,
				 KFD_RENDER_MINOR_LAST);
	if (!ret)
		ret = read_banks(ld, nfd, node);
	if (!ret)
		ret = count_caches(ld, nfd, node);
	if (!ret)
		ret = read_links(ld, nfd, "io_links", &node->io_links, &node->n_io_links);
	if (!ret)
		ret = read_links(ld, nfd, "p2p_links", &node->p2p_links, &node->n_p2p_links);
	return ret;
}

static void node_reset(struct kfd_node *node, uint32_t index)
{
	free(node->mem_banks);
	free(node->io_links);
	free(node->p2p_links);
	memset(node, 0, sizeof(*node));
	node->index = index;
}

static int load_node(struct loader *ld, int nodes_fd, uint32_t index, struct kfd_node *node)
{
	char rel[16];
	int nfd, ret;

	node_reset(node, index);
	set_dir(ld, "/nodes", (int)index);
	snprintf(rel, sizeof(rel), "%u", index);
	nfd = openat(nodes_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (nfd < 0) {
		ret = errmsg_set(ld->err, ld->errlen, -errno, "%s: %s", ld->dir, strerror(errno));
	} else {
		ret = read_node_files(ld, nfd, node);
		close(nfd);
	}
	if (ret == -EPERM || ret == -EACCES) {
		node_reset(node, index);
		node->is_gpu = true;
		return 0;
	}
	node->accessible = true;
	node->is_gpu = node->props.simd_count > 0;
	return ret;
}

static int list_nodes(struct loader *ld, int root_fd, uint32_t **ids, size_t *n)
{
	int ret;

	set_dir(ld, "", -1);
	ret = list_dir(ld, root_fd, "nodes", TOPO_MAX_NODES, ids, n);
	if (ret)
		return ret;
	if (!*n)
		return errmsg_set(ld->err, ld->errlen, -EINVAL, "%s/nodes: no node directories",
				  ld->dir);
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] != i)
			return errmsg_set(ld->err, ld->errlen, -EINVAL,
					  "%s/nodes: node %zu is missing (%zu entries)", ld->dir, i,
					  *n);
	return 0;
}

static int read_generation_id(struct loader *ld, int root_fd, struct kfd_topology *t)
{
	int ret;

	set_dir(ld, "", -1);
	ret = read_u32_file(ld, root_fd, "generation_id", &t->generation_id);
	if (ret == -ENOENT)
		return 0;
	if (!ret)
		t->has_generation_id = true;
	return ret;
}

static int load_tree(struct loader *ld, int root_fd, struct kfd_topology *t)
{
	uint32_t *ids = NULL;
	int nodes_fd = -1, ret;
	size_t n;

	ret = read_generation_id(ld, root_fd, t);
	if (ret)
		goto out;
	ret = list_nodes(ld, root_fd, &ids, &n);
	if (ret)
		goto out;
	nodes_fd = openat(root_fd, "nodes", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (nodes_fd < 0) {
		ret = errmsg_set(ld->err, ld->errlen, -errno, "%s/nodes: %s", ld->dir,
				 strerror(errno));
		goto out;
	}
	t->nodes = calloc(n, sizeof(*t->nodes));
	if (!t->nodes) {
		ret = errmsg_set(ld->err, ld->errlen, -ENOMEM, "%s/nodes: out of memory", ld->dir);
		goto out;
	}
	t->n_nodes = n;
	for (uint32_t i = 0; i < n && !ret; i++)
		ret = load_node(ld, nodes_fd, i, &t->nodes[i]);
out:
	if (nodes_fd >= 0)
		close(nodes_fd);
	free(ids);
	return ret;
}

int topo_load(const char *root, struct kfd_topology *out, char *errbuf, size_t errlen)
{
	struct loader ld = {
		.root = root ? root : KFD_SYSFS_TOPOLOGY, .err = errbuf, .errlen = errlen};
	struct kfd_topology t = {0};
	int root_fd = -1, ret;
	size_t shown_len;

	if (!out)
		return errmsg_set(ld.err, ld.errlen, -EINVAL, "topo_load: no output topology");
	memset(out, 0, sizeof(*out));
	shown_len = strlen(ld.root);
	if (shown_len >= sizeof(ld.shown))
		return errmsg_set(ld.err, ld.errlen, -ENAMETOOLONG, "%.64s...: path too long",
				  ld.root);
	while (shown_len && ld.root[shown_len - 1] == '/')
		shown_len--; /* "dir/" must not give "dir//nodes" */
	memcpy(ld.shown, ld.root, shown_len);
	ld.shown[shown_len] = '\0';
	ld.buf = malloc(TOPO_MAX_FILE + 2);
	if (!ld.buf) {
		ret = errmsg_set(ld.err, ld.errlen, -ENOMEM, "%s: out of memory", ld.root);
		goto out;
	}
	root_fd = open(ld.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		ret = errmsg_set(ld.err, ld.errlen, -errno, "%s: %s", ld.root, strerror(errno));
		goto out;
	}
	ret = load_tree(&ld, root_fd, &t);
	if (ret)
		goto out;
	*out = t;
	t = (struct kfd_topology){0};
	if (errbuf && errlen)
		errbuf[0] = '\0';
out:
	topo_free(&t);
	if (root_fd >= 0)
		close(root_fd);
	free(ld.buf);
	return ret;
}
