// SPDX-License-Identifier: MIT
/*
 * The BO index file: layout, writing and checking in blocks, chunk
 * checksums on demand (see bo_index.h; format in bo_stream.h).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/crc.h>

#include "common/errmsg.h"
#include "common/fullio.h"
#include "images/bo_index.h"

#define INDEX_MAGIC	  "AMDBOIX1"
#define INDEX_VERSION	  1u
#define INDEX_HEADER_SIZE 64u
#define INDEX_BO_SIZE	  16u
#define INDEX_CRC_SIZE	  4u
#define FILE_PAGE	  4096u

/*
 * ISA-L's crc32_gzip_refl is zlib's CRC-32 (same polynomial, reflected, same
 * pre- and post-inversion, so chaining works the same and older images
 * verify), about 6x faster than zlib's crc32_z on the machines measured
 * (issue 14: 25 GB/s against 2.8-4.0): the checksums are off the critical path.
 */
uint32_t bo_index_crc32(uint32_t crc, const void *buf, size_t len)
{
	return crc32_gzip_refl(crc, buf, len);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint64_t chunks_of(uint64_t size, uint32_t chunk_size)
{
	return size / chunk_size + (size % chunk_size != 0);
}

int bo_index_layout(struct bo_index_layout *l, char *err, size_t errlen)
{
	uint64_t bytes = 0, chunks = 0, fixed;
	uint32_t i;

	for (i = 0; i < l->bo_count; i++) {
		if (l->bos[i].size > INT64_MAX - bytes)
			return errmsg_set(err, errlen, -EOVERFLOW,
					  "gpu %" PRIu32 ": BO sizes overflow", l->gpu_id);
		bytes += l->bos[i].size;
		chunks += chunks_of(l->bos[i].size, l->chunk_size);
	}
	/* the index's size must fit an off_t (and the dump's checksum array a size_t) */
	fixed = INDEX_HEADER_SIZE + (uint64_t)l->bo_count * INDEX_BO_SIZE + INDEX_CRC_SIZE;
	if (chunks > (INT64_MAX - fixed) / INDEX_CRC_SIZE || chunks > SIZE_MAX / INDEX_CRC_SIZE)
		return errmsg_set(err, errlen, -EOVERFLOW, "gpu %" PRIu32 ": too many chunks",
				  l->gpu_id);
	l->data_bytes = bytes;
	l->chunk_count = chunks;
	return 0;
}

uint64_t bo_index_size(const struct bo_index_layout *l)
{
	return INDEX_HEADER_SIZE + (uint64_t)l->bo_count * INDEX_BO_SIZE +
	       l->chunk_count * INDEX_CRC_SIZE + INDEX_CRC_SIZE;
}

static void encode_header(const struct bo_index_layout *l, uint8_t *h)
{
	memset(h, 0, INDEX_HEADER_SIZE);
	memcpy(h, INDEX_MAGIC, 8);
	put32(h + 8, INDEX_VERSION);
	put32(h + 12, l->gpu_id);
	put32(h + 16, l->image_id);
	put32(h + 20, l->chunk_size);
	put32(h + 24, l->bo_count);
	put64(h + 32, l->data_bytes);
	put64(h + 40, l->chunk_count);
}

/* ---- writing: header, BO table, checksums, its own checksum, block by block ---------- */

struct block_writer {
	int fd;
	uint64_t off; /* file offset of buf[0] */
	size_t used;
	uint32_t crc;
	uint8_t *buf;
};

static int writer_flush(struct block_writer *w)
{
	int ret = pwrite_full(w->fd, w->buf, w->used, w->off);

	w->crc = bo_index_crc32(w->crc, w->buf, w->used);
	w->off += w->used;
	w->used = 0;
	return ret;
}

static int writer_put(struct block_writer *w, const uint8_t *p, size_t n)
{
	int ret = 0;

	if (w->used + n > BO_INDEX_BLOCK)
		ret = writer_flush(w);
	memcpy(w->buf + w->used, p, n);
	w->used += n;
	return ret;
}

static int write_blocks(struct block_writer *w, const struct bo_index_layout *l,
			const uint32_t *crcs)
{
	uint8_t item[INDEX_HEADER_SIZE];
	uint64_t off = 0, i;
	int ret;

	encode_header(l, item);
	ret = writer_put(w, item, INDEX_HEADER_SIZE);
	for (i = 0; !ret && i < l->bo_count; i++) {
		put64(item, l->bos[i].size);
		put64(item + 8, off);
		off += l->bos[i].size;
		ret = writer_put(w, item, INDEX_BO_SIZE);
	}
	for (i = 0; !ret && i < l->chunk_count; i++) {
		put32(item, crcs[i]);
		ret = writer_put(w, item, INDEX_CRC_SIZE);
	}
	ret = ret ?: writer_flush(w);
	if (ret)
		return ret;
	put32(item, w->crc); /* of all the preceding bytes */
	return pwrite_full(w->fd, item, INDEX_CRC_SIZE, w->off);
}

int bo_index_write(int fd, const struct bo_index_layout *l, const uint32_t *crcs, char *err,
		   size_t errlen)
{
	struct block_writer w = {.fd = fd, .buf = malloc(BO_INDEX_BLOCK)};
	int ret;

	if (!w.buf)
		return errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": no memory for %s",
				  l->gpu_id, l->name);
	ret = write_blocks(&w, l, crcs);
	free(w.buf);
	if (ret)
		return errmsg_set(err, errlen, ret, "gpu %" PRIu32 ": writing %s: %s", l->gpu_id,
				  l->name, strerror(-ret));
	return 0;
}

/* ---- reading and checking ------------------------------------------------------------------ */

static int check_header(const uint8_t *h, struct bo_index_layout *l, char *err, size_t errlen)
{
	uint32_t chunk = get32(h + 20);

	if (memcmp(h, INDEX_MAGIC, 8) || get32(h + 8) != INDEX_VERSION)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: not a BO index (version 1)", l->gpu_id,
				  l->name);
	if (get32(h + 12) != l->gpu_id || get32(h + 16) != l->image_id)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: recorded for gpu %" PRIu32
				  " image %" PRIu32,
				  l->gpu_id, l->name, get32(h + 12), get32(h + 16));
	if (!chunk || chunk % FILE_PAGE || chunk > BO_STREAM_MAX_CHUNK)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: bad chunk size %" PRIu32, l->gpu_id,
				  l->name, chunk);
	if (get32(h + 24) != l->bo_count)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: %" PRIu32 " BOs recorded, %" PRIu32
				  " expected",
				  l->gpu_id, l->name, get32(h + 24), l->bo_count);
	l->chunk_size = chunk;
	return 0;
}

int bo_index_read_header(int fd, struct bo_index_layout *l, char *err, size_t errlen)
{
	uint8_t h[INDEX_HEADER_SIZE];
	struct stat st;
	int ret;

	ret = pread_full(fd, h, sizeof(h), 0);
	if (ret)
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	ret = check_header(h, l, err, errlen);
	ret = ret ?: bo_index_layout(l, err, errlen);
	if (ret)
		return ret;
	/* the size the recorded BOs need, exactly: nothing more is read */
	if (fstat(fd, &st))
		return errmsg_set(err, errlen, -errno, "gpu %" PRIu32 ": %s: %s", l->gpu_id,
				  l->name, strerror(errno));
	if ((uint64_t)st.st_size != bo_index_size(l))
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: %jd bytes, expected %" PRIu64, l->gpu_id,
				  l->name, (intmax_t)st.st_size, bo_index_size(l));
	return 0;
}

/* The CRC-32 of bytes [0, len) of fd, read in blocks. */
static int crc_of_file(int fd, uint64_t len, uint8_t *buf, uint32_t *crc)
{
	uint64_t off = 0;
	size_t n;
	int ret;

	*crc = 0;
	for (; off < len; off += n) {
		n = len - off < BO_INDEX_BLOCK ? (size_t)(len - off) : BO_INDEX_BLOCK;
		ret = pread_full(fd, buf, n, off);
		if (ret)
			return ret;
		*crc = bo_index_crc32(*crc, buf, n);
	}
	return 0;
}

/* The BO table against the caller's sizes, a block of records at a time. */
static int check_bo_table(int fd, const struct bo_index_layout *l, uint8_t *buf, char *err,
			  size_t errlen)
{
	const uint32_t per_block = BO_INDEX_BLOCK / INDEX_BO_SIZE;
	uint64_t off = 0;
	uint32_t i, n, k;
	const uint8_t *p;
	int ret;

	for (i = 0; i < l->bo_count; i += n) {
		n = l->bo_count - i < per_block ? l->bo_count - i : per_block;
		ret = pread_full(fd, buf, (size_t)n * INDEX_BO_SIZE,
				 INDEX_HEADER_SIZE + (uint64_t)i * INDEX_BO_SIZE);
		if (ret)
			return ret;
		for (k = 0, p = buf; k < n; k++, p += INDEX_BO_SIZE) {
			if (get64(p) != l->bos[i + k].size || get64(p + 8) != off)
				return errmsg_set(
					err, errlen, -EINVAL,
					"gpu %" PRIu32 ": %s: BO %" PRIu32
					" recorded with size 0x%" PRIx64 ", expected 0x%" PRIx64,
					l->gpu_id, l->name, i + k, get64(p), l->bos[i + k].size);
			off += l->bos[i + k].size;
		}
	}
	return 0;
}

static int check_body(int fd, const struct bo_index_layout *l, uint8_t *buf, char *err,
		      size_t errlen)
{
	uint64_t len = bo_index_size(l);
	uint32_t crc;
	int ret;

	ret = crc_of_file(fd, len - INDEX_CRC_SIZE, buf, &crc);
	ret = ret ?: pread_full(fd, buf, INDEX_CRC_SIZE, len - INDEX_CRC_SIZE);
	if (!ret && get32(buf) != crc)
		return errmsg_set(err, errlen, -EBADMSG,
				  "gpu %" PRIu32 ": %s: index checksum mismatch", l->gpu_id,
				  l->name);
	ret = ret ?: pread_full(fd, buf, INDEX_HEADER_SIZE, 0);
	if (!ret && (get64(buf + 32) != l->data_bytes || get64(buf + 40) != l->chunk_count))
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: sizes do not match the BOs", l->gpu_id,
				  l->name);
	if (ret)
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	return check_bo_table(fd, l, buf, err, errlen);
}

int bo_index_check(int fd, const struct bo_index_layout *l, char *err, size_t errlen)
{
	uint8_t *buf = malloc(BO_INDEX_BLOCK);
	int ret;

	if (!buf)
		return errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": %s: no memory", l->gpu_id,
				  l->name);
	ret = check_body(fd, l, buf, err, errlen);
	free(buf);
	return ret;
}

/* ---- chunk checksums on demand -------------------------------------------------------------- */

void bo_index_crcs_init(struct bo_index_crcs *c, int fd, const struct bo_index_layout *l)
{
	c->fd = fd;
	c->count = l->chunk_count;
	c->base = INDEX_HEADER_SIZE + (uint64_t)l->bo_count * INDEX_BO_SIZE;
	c->first = 0;
	c->n = 0;
}

int bo_index_crc_get(struct bo_index_crcs *c, uint64_t chunk, uint32_t *crc)
{
	uint8_t raw[BO_INDEX_WINDOW * INDEX_CRC_SIZE];
	uint32_t n;
	int ret;

	if (chunk >= c->count)
		return -EINVAL;
	if (chunk < c->first || chunk >= c->first + c->n) {
		/* chunks are read in order: the window starts at the one asked for */
		n = c->count - chunk < BO_INDEX_WINDOW ? (uint32_t)(c->count - chunk)
						       : BO_INDEX_WINDOW;
		ret = pread_full(c->fd, raw, (size_t)n * INDEX_CRC_SIZE,
				 c->base + chunk * INDEX_CRC_SIZE);
		if (ret)
			return ret == -ENODATA ? -EIO : ret;
		for (uint32_t i = 0; i < n; i++)
			c->v[i] = get32(raw + (size_t)i * INDEX_CRC_SIZE);
		c->first = chunk;
		c->n = n;
	}
	*crc = c->v[chunk - c->first];
	return 0;
}
