// SPDX-License-Identifier: MIT
/* Incremental BO images: the parent of a dump, the ancestors of a restore (bo_chain.h). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/fullio.h"
#include "common/regfile.h"
#include "datapath/bo_chain.h"
#include "datapath/bo_stream_files.h"
#include "datapath/bo_stream_types.h"

#define PARENT_LINK "parent" /* CRIU's name for it (--prev-images-dir) */

/* A parent BO, found by GPU address and size. */
struct parent_bo {
	uint64_t gpu_va;
	uint64_t size;
	uint64_t first_chunk; /* its first entry in the parent's index */
};

struct bo_parent {
	int index_fd;
	struct bo_index_layout layout;
	struct parent_bo *bos;	  /* in the parent's order */
	struct parent_bo *sorted; /* by (gpu_va, size) */
	struct bo_index_reader *reader;
	char name[64];
};

static int cmp_bo(const void *a, const void *b)
{
	const struct parent_bo *x = a, *y = b;

	if (x->gpu_va != y->gpu_va)
		return x->gpu_va < y->gpu_va ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return 0;
}

/* The parent's BO table as parent_bo records, and sizes for its layout check. */
static int load_bos(struct bo_parent *p, struct bo_stream_bo **sizes, char *err, size_t errlen)
{
	struct bo_index_layout *l = &p->layout;
	struct bo_index_bo *raw = NULL;
	uint64_t chunk = 0;
	uint32_t i;
	int ret = bo_index_read_bos(p->index_fd, l, &raw, err, errlen);

	if (ret)
		return ret;
	p->bos = calloc(l->bo_count + 1, sizeof(*p->bos));
	p->sorted = calloc(l->bo_count + 1, sizeof(*p->sorted));
	*sizes = calloc(l->bo_count + 1, sizeof(**sizes));
	if (!p->bos || !p->sorted || !*sizes) {
		free(raw);
		return errmsg_set(err, errlen, -ENOMEM, "%s: no memory", p->name);
	}
	for (i = 0; i < l->bo_count; i++) {
		p->bos[i] = (struct parent_bo){raw[i].gpu_va, raw[i].size, chunk};
		(*sizes)[i] = (struct bo_stream_bo){.size = raw[i].size, .dmabuf_fd = -1};
		chunk += raw[i].size / l->chunk_size + (raw[i].size % l->chunk_size != 0);
	}
	free(raw);
	memcpy(p->sorted, p->bos, l->bo_count * sizeof(*p->bos));
	qsort(p->sorted, l->bo_count, sizeof(*p->sorted), cmp_bo);
	return 0;
}

/* Header, BO table, then the whole index checked against the table it holds. */
static int load_index(struct bo_parent *p, uint32_t chunk_size, char *err, size_t errlen)
{
	struct bo_index_layout *l = &p->layout;
	struct bo_stream_bo *sizes = NULL;
	uint64_t data_bytes, chunk_count;
	int ret = bo_index_read_header(p->index_fd, l, err, errlen);

	if (!ret && l->version < 2)
		ret = errmsg_set(err, errlen, -EPROTO,
				 "%s: a version 1 index has no chunk CRC-64s to compare with",
				 p->name);
	if (!ret && l->chunk_size != chunk_size)
		ret = errmsg_set(err, errlen, -EPROTO,
				 "%s: chunks of %" PRIu32 " bytes, this dump uses %" PRIu32,
				 p->name, l->chunk_size, chunk_size);
	ret = ret ?: load_bos(p, &sizes, err, errlen);
	if (!ret) {
		data_bytes = l->data_bytes;
		chunk_count = l->chunk_count;
		l->bos = sizes;
		ret = bo_index_layout(l, err, errlen);
		if (!ret && (l->data_bytes != data_bytes || l->chunk_count != chunk_count))
			ret = errmsg_set(err, errlen, -EINVAL, "%s: sizes do not match its BOs",
					 p->name);
	}
	ret = ret ?: bo_index_check(p->index_fd, l, err, errlen);
	l->bos = NULL;
	free(sizes);
	return ret;
}

/* ---- a restore's ancestors ---------------------------------------------------------- */

void bo_chain_close(struct bo_chain *c)
{
	uint32_t k;

	for (k = 0; k < c->count; k++)
		if (c->data_fd[k] >= 0)
			close(c->data_fd[k]);
	c->count = 0;
}

/* Ancestor level's file with extension ext in dir (its name into name); fd or -errno. */
static int open_ancestor(int dir, const struct bo_index_layout *l, uint32_t level, const char *ext,
			 char *name, size_t namelen, char *err, size_t errlen)
{
	const struct bo_index_ancestor *a = &l->ancestors[level - 1];
	char why[160];
	int fd;

	bo_stream_file_name(name, namelen, a->image_id, a->gpu_id, ext);
	fd = regfile_open(dir, name, why, sizeof(why));
	if (fd < 0)
		return errmsg_set(err, errlen, fd,
				  "gpu %" PRIu32 ": %s refers to %s in its parent directory (level "
				  "%" PRIu32 "): %s",
				  l->gpu_id, l->name, name, level, why);
	return fd;
}

/* The ancestor's index is the one the child was dumped against: its last 4 bytes. */
static int check_identity(int dir, const struct bo_index_layout *l, uint32_t level, char *err,
			  size_t errlen)
{
	const struct bo_index_ancestor *a = &l->ancestors[level - 1];
	uint32_t crc = 0;
	struct stat st;
	char name[64];
	int fd, ret;

	fd = open_ancestor(dir, l, level, "idx", name, sizeof(name), err, errlen);
	if (fd < 0)
		return fd;
	ret = fstat(fd, &st) ? -errno : 0;
	if (!ret && st.st_size < (off_t)sizeof(crc))
		ret = -ENODATA;
	ret = ret ?: pread_full(fd, &crc, sizeof(crc), (uint64_t)st.st_size - sizeof(crc));
	close(fd);
	crc = le32toh(crc);
	if (!ret && crc == a->index_crc)
		return 0;
	return errmsg_set(err, errlen, ret ? ret : -ESTALE,
			  "gpu %" PRIu32 ": %s refers to %s in its parent directory (level %" PRIu32
			  "), which is not the image it was dumped against (index checksum "
			  "0x%08" PRIx32 ", recorded 0x%08" PRIx32 "): the parent images were "
			  "replaced or damaged",
			  l->gpu_id, l->name, name, level, ret ? 0 : crc, a->index_crc);
}

static int open_data(int dir, const struct bo_index_layout *l, uint32_t level, struct bo_chain *c,
		     char *err, size_t errlen)
{
	const struct bo_index_ancestor *a = &l->ancestors[level - 1];
	char *name = c->name[level - 1];
	struct stat st;
	int fd;

	fd = open_ancestor(dir, l, level, "img", name, sizeof(c->name[0]), err, errlen);
	if (fd < 0)
		return fd;
	c->data_fd[level - 1] = fd;
	c->count = level;
	if (fstat(fd, &st))
		return errmsg_set(err, errlen, -errno,
				  "gpu %" PRIu32 ": %s (level %" PRIu32 "): %s", l->gpu_id, name,
				  level, strerror(errno));
	if ((uint64_t)st.st_size != a->data_bytes)
		return errmsg_set(
			err, errlen, -ESTALE,
			"gpu %" PRIu32 ": %s (level %" PRIu32 ") is %jd bytes, %s recorded "
			"%" PRIu64 ": the parent images were replaced or cut",
			l->gpu_id, name, level, (intmax_t)st.st_size, l->name, a->data_bytes);
	return 0;
}

/* Ancestors 1..ancestor_count, level 1 in dir (closed at the end if own). */
static int chain_open_from(int dir, bool own, const struct bo_index_layout *l, struct bo_chain *c,
			   char *err, size_t errlen)
{
	uint32_t level;
	int next, ret = 0;

	c->count = 0;
	for (level = 1; !ret && level <= l->ancestor_count; level++) {
		if (level > 1) {
			next = openat(dir, PARENT_LINK, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (next < 0) {
				ret = errmsg_set(err, errlen, -errno,
						 "gpu %" PRIu32 ": %s refers to %" PRIu32
						 " parent image directories; level %" PRIu32
						 " has no '" PARENT_LINK
						 "': %s (restore needs every "
						 "directory CRIU's --prev-images-dir chained)",
						 l->gpu_id, l->name, l->ancestor_count, level,
						 strerror(errno));
				break;
			}
			if (own)
				close(dir);
			dir = next;
			own = true;
		}
		ret = check_identity(dir, l, level, err, errlen);
		ret = ret ?: open_data(dir, l, level, c, err, errlen);
	}
	if (own)
		close(dir);
	if (ret)
		bo_chain_close(c);
	return ret;
}

int bo_chain_open(int dir_fd, const struct bo_index_layout *l, struct bo_chain *c, char *err,
		  size_t errlen)
{
	int dir;

	c->count = 0;
	if (!l->ancestor_count)
		return 0;
	dir = openat(dir_fd, PARENT_LINK, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errmsg_set(err, errlen, -errno,
				  "gpu %" PRIu32 ": %s refers to %" PRIu32 " parent image "
				  "director%s, but '" PARENT_LINK "' cannot be opened: %s (restore "
				  "needs every directory CRIU's --prev-images-dir chained)",
				  l->gpu_id, l->name, l->ancestor_count,
				  l->ancestor_count == 1 ? "y" : "ies", strerror(errno));
	return chain_open_from(dir, true, l, c, err, errlen);
}

/* ---- a dump's parent ------------------------------------------------------------------ */

int bo_parent_open(int parent_dir_fd, uint32_t image_id, uint32_t gpu_id, uint32_t chunk_size,
		   struct bo_parent **parent, char *err, size_t errlen)
{
	struct bo_parent *p = calloc(1, sizeof(*p));
	struct bo_chain chain = {0};
	char why[160];
	int ret;

	*parent = NULL;
	if (!p)
		return errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": no memory", gpu_id);
	p->index_fd = -1;
	bo_stream_file_name(p->name, sizeof(p->name), image_id, gpu_id, "idx");
	p->layout =
		(struct bo_index_layout){.gpu_id = gpu_id, .image_id = image_id, .name = p->name};
	p->index_fd = regfile_open(parent_dir_fd, p->name, why, sizeof(why));
	if (p->index_fd < 0) {
		ret = errmsg_set(err, errlen, p->index_fd, "%s in the parent directory: %s",
				 p->name, why);
		goto fail;
	}
	ret = load_index(p, chunk_size, err, errlen);
	/* everything a child would refer to must be readable: the parent's own data and its chain
	 */
	if (!ret) {
		struct bo_index_layout self = {.gpu_id = gpu_id, .name = p->name};

		bo_parent_ancestors(p, &self);
		ret = chain_open_from(parent_dir_fd, false, &self, &chain, err, errlen);
	}
	if (ret)
		goto fail;
	bo_chain_close(&chain);
	p->reader = malloc(sizeof(*p->reader));
	if (!p->reader) {
		ret = errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": no memory", gpu_id);
		goto fail;
	}
	bo_index_reader_init(p->reader, p->index_fd, &p->layout);
	*parent = p;
	return 0;
fail:
	bo_parent_close(p);
	return ret;
}

void bo_parent_ancestors(const struct bo_parent *p, struct bo_index_layout *l)
{
	uint32_t n = p->layout.ancestor_count;

	if (n > BO_STREAM_MAX_CHAIN - 1)
		n = BO_STREAM_MAX_CHAIN - 1;
	l->ancestors[0] = (struct bo_index_ancestor){.image_id = p->layout.image_id,
						     .gpu_id = p->layout.gpu_id,
						     .data_bytes = p->layout.data_bytes,
						     .index_crc = p->layout.index_crc};
	memcpy(&l->ancestors[1], p->layout.ancestors, n * sizeof(l->ancestors[0]));
	l->ancestor_count = n + 1;
}

/* The parent BO of the child's BO: same GPU address and size, else same index and size. */
static const struct parent_bo *find_bo(const struct bo_parent *p, uint32_t bo_index,
				       uint64_t gpu_va, uint64_t size)
{
	struct parent_bo key = {.gpu_va = gpu_va, .size = size};

	if (gpu_va)
		return bsearch(&key, p->sorted, p->layout.bo_count, sizeof(key), cmp_bo);
	if (bo_index < p->layout.bo_count && !p->bos[bo_index].gpu_va &&
	    p->bos[bo_index].size == size)
		return &p->bos[bo_index];
	return NULL;
}

int bo_parent_lookup(struct bo_parent *p, uint32_t bo_index, uint64_t gpu_va, uint64_t size,
		     uint64_t off, struct bo_chunk_entry *e)
{
	const struct parent_bo *b = find_bo(p, bo_index, gpu_va, size);
	int ret;

	if (!b || off >= size)
		return -ENOENT;
	ret = bo_index_entry_get(p->reader, b->first_chunk + off / p->layout.chunk_size, e);
	if (ret)
		return -EIO;
	if (e->level >= BO_STREAM_MAX_CHAIN)
		return -ENOENT;
	e->level++;
	return 0;
}

void bo_parent_close(struct bo_parent *p)
{
	if (!p)
		return;
	if (p->index_fd >= 0)
		close(p->index_fd);
	free(p->bos);
	free(p->sorted);
	free(p->reader);
	free(p);
}
