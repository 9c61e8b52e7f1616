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

#include "common/errmsg.h"
#include "common/fullio.h"
#include "common/le_bytes.h"
#include "common/gpu_libs.h"
#include "datapath/bo_index.h"

#define INDEX_MAGIC_V1	    "AMDBOIX1"
#define INDEX_MAGIC_V2	    "AMDBOIX2"
#define INDEX_MAGIC	    "AMDBOIX3"
#define INDEX_VERSION	    3u
#define INDEX_HEADER_SIZE   64u
#define INDEX_BO_SIZE_V1    16u
#define INDEX_BO_SIZE	    24u
#define INDEX_ANCESTOR_SIZE 24u
#define INDEX_ENTRY_SIZE_V1 4u
#define INDEX_ENTRY_SIZE    32u
#define INDEX_CRC_SIZE	    4u
#define FILE_PAGE	    4096u

/*
 * ISA-L's crc32_gzip_refl is zlib's CRC-32 (same polynomial, reflected, same
 * pre- and post-inversion, so chaining works the same and older images
 * verify), about 6x faster than zlib's crc32_z on the machines measured
 * (25 GB/s against 2.8-4.0). Since version 3 it checks only the
 * index itself and version 1 and 2 chunks.
 */
uint32_t bo_index_crc32(uint32_t crc, const void *buf, size_t len)
{
	return gpu_libs()->crc32_gzip_refl(crc, buf, len);
}

/* CRC-32's polynomial, bit-reflected (x^0 is bit 31), as zlib and ISA-L's gzip CRC use it. */
#define CRC32_POLY 0xedb88320u

/* a * b modulo CRC32_POLY (a != 0), as zlib's crc32_combine() computes it. */
static uint32_t crc32_multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32_POLY : b >> 1;
	}
	return p;
}

/*
 * n zero bytes multiply the CRC register by x^(8n) modulo the polynomial:
 * x^(8n) by squaring, O(log n), whatever n.
 */
uint32_t bo_index_crc32_zeros(uint32_t crc, uint64_t n)
{
	uint32_t x = 1u << 31, sq = 1u << 23; /* x^0; x^8, one zero byte */

	for (; n; n >>= 1, sq = crc32_multmodp(sq, sq))
		if (n & 1)
			x = crc32_multmodp(sq, x);
	return ~crc32_multmodp(x, ~crc); /* the pre- and post-inversion of zlib's crc32() */
}

/*
 * CRC-64/XZ by ISA-L (crc64_ecma_refl, about as fast as its CRC-32: 25 GiB/s
 * here, against 5 GiB/s for Debian's libxxhash XXH3-128): since version 3
 * the chunks' only checksum. Version 2 also kept a CRC-32, which cost the
 * dump a second pass over every byte.
 */
uint64_t bo_index_crc64(uint64_t crc, const void *buf, size_t len)
{
	return gpu_libs()->crc64_ecma_refl(crc, buf, len);
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
	/* the index's size must fit an off_t (and the dump's entry array a size_t) */
	fixed = INDEX_HEADER_SIZE + (uint64_t)l->bo_count * INDEX_BO_SIZE +
		BO_STREAM_MAX_CHAIN * INDEX_ANCESTOR_SIZE + INDEX_CRC_SIZE;
	if (chunks > (INT64_MAX - fixed) / INDEX_ENTRY_SIZE ||
	    chunks > SIZE_MAX / sizeof(struct bo_chunk_entry))
		return errmsg_set(err, errlen, -EOVERFLOW, "gpu %" PRIu32 ": too many chunks",
				  l->gpu_id);
	l->data_bytes = bytes;
	l->chunk_count = chunks;
	return 0;
}

static bool is_v1(const struct bo_index_layout *l)
{
	return l->version == 1;
}

static uint64_t bo_table_size(const struct bo_index_layout *l)
{
	return (uint64_t)l->bo_count * (is_v1(l) ? INDEX_BO_SIZE_V1 : INDEX_BO_SIZE);
}

/* File offset of the first chunk entry. */
static uint64_t entries_base(const struct bo_index_layout *l)
{
	return INDEX_HEADER_SIZE + bo_table_size(l) +
	       (uint64_t)l->ancestor_count * INDEX_ANCESTOR_SIZE;
}

uint64_t bo_index_size(const struct bo_index_layout *l)
{
	return entries_base(l) +
	       l->chunk_count * (is_v1(l) ? INDEX_ENTRY_SIZE_V1 : INDEX_ENTRY_SIZE) +
	       INDEX_CRC_SIZE;
}

static void encode_header(const struct bo_index_layout *l, uint8_t *h)
{
	memset(h, 0, INDEX_HEADER_SIZE);
	memcpy(h, INDEX_MAGIC, 8);
	le_put32(h + 8, INDEX_VERSION);
	le_put32(h + 12, l->gpu_id);
	le_put32(h + 16, l->image_id);
	le_put32(h + 20, l->chunk_size);
	le_put32(h + 24, l->bo_count);
	le_put32(h + 28, l->ancestor_count);
	le_put64(h + 32, l->data_bytes);
	le_put64(h + 40, l->chunk_count);
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
			const struct bo_chunk_entry *entries)
{
	uint8_t item[INDEX_HEADER_SIZE];
	uint64_t off = 0, i;
	int ret;

	encode_header(l, item);
	ret = writer_put(w, item, INDEX_HEADER_SIZE);
	for (i = 0; !ret && i < l->bo_count; i++) {
		le_put64(item, l->bos[i].size);
		le_put64(item + 8, off);
		le_put64(item + 16, l->bos[i].gpu_va);
		off += l->bos[i].size;
		ret = writer_put(w, item, INDEX_BO_SIZE);
	}
	for (i = 0; !ret && i < l->ancestor_count; i++) {
		memset(item, 0, INDEX_ANCESTOR_SIZE);
		le_put32(item, l->ancestors[i].image_id);
		le_put32(item + 4, l->ancestors[i].gpu_id);
		le_put64(item + 8, l->ancestors[i].data_bytes);
		le_put32(item + 16, l->ancestors[i].index_crc);
		ret = writer_put(w, item, INDEX_ANCESTOR_SIZE);
	}
	for (i = 0; !ret && i < l->chunk_count; i++) {
		le_put32(item, 0); /* version 2's CRC-32 */
		le_put16(item + 4, entries[i].level);
		le_put16(item + 6, entries[i].flags);
		le_put64(item + 8, entries[i].offset);
		le_put64(item + 16, entries[i].crc64);
		le_put64(item + 24, 0);
		ret = writer_put(w, item, INDEX_ENTRY_SIZE);
	}
	ret = ret ?: writer_flush(w);
	if (ret)
		return ret;
	le_put32(item, w->crc); /* of all the preceding bytes */
	return pwrite_full(w->fd, item, INDEX_CRC_SIZE, w->off);
}

int bo_index_write(int fd, const struct bo_index_layout *l, const struct bo_chunk_entry *entries,
		   char *err, size_t errlen)
{
	struct block_writer w = {.fd = fd, .buf = malloc(BO_INDEX_BLOCK)};
	struct bo_index_layout current = *l;
	int ret;

	if (!w.buf)
		return errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": no memory for %s",
				  l->gpu_id, l->name);
	current.version = INDEX_VERSION;
	ret = write_blocks(&w, &current, entries);
	free(w.buf);
	if (ret)
		return errmsg_set(err, errlen, ret, "gpu %" PRIu32 ": writing %s: %s", l->gpu_id,
				  l->name, strerror(-ret));
	return 0;
}

/* ---- reading and checking ------------------------------------------------------------------ */

/* The version of the header's magic and version fields (which must agree), 0: none. */
static uint32_t header_version(const uint8_t *h)
{
	static const char *const magic[] = {INDEX_MAGIC_V1, INDEX_MAGIC_V2, INDEX_MAGIC};
	uint32_t v = le_get32(h + 8);

	return v >= 1 && v <= INDEX_VERSION && !memcmp(h, magic[v - 1], 8) ? v : 0;
}

static int check_header(const uint8_t *h, struct bo_index_layout *l, char *err, size_t errlen)
{
	uint32_t chunk = le_get32(h + 20), version = header_version(h);
	bool v1 = version == 1;

	if (!version)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: not a BO index (version 1, 2 or 3)",
				  l->gpu_id, l->name);
	if (le_get32(h + 12) != l->gpu_id || le_get32(h + 16) != l->image_id)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: recorded for gpu %" PRIu32
				  " image %" PRIu32,
				  l->gpu_id, l->name, le_get32(h + 12), le_get32(h + 16));
	if (!chunk || chunk % FILE_PAGE || chunk > BO_STREAM_MAX_CHUNK)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: bad chunk size %" PRIu32, l->gpu_id,
				  l->name, chunk);
	if (l->bos && le_get32(h + 24) != l->bo_count)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: %" PRIu32 " BOs recorded, %" PRIu32
				  " expected",
				  l->gpu_id, l->name, le_get32(h + 24), l->bo_count);
	if (!l->bos && le_get32(h + 24) > BO_STREAM_MAX_BOS)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: %" PRIu32 " BOs recorded, at most %u",
				  l->gpu_id, l->name, le_get32(h + 24), BO_STREAM_MAX_BOS);
	if (!v1 && le_get32(h + 28) > BO_STREAM_MAX_CHAIN)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: %" PRIu32 " parent levels, at most %u",
				  l->gpu_id, l->name, le_get32(h + 28), BO_STREAM_MAX_CHAIN);
	l->chunk_size = chunk;
	l->version = version;
	l->ancestor_count = v1 ? 0 : le_get32(h + 28);
	if (!l->bos) { /* any BOs: the sizes as recorded, checked with the BO table */
		l->bo_count = le_get32(h + 24);
		l->data_bytes = le_get64(h + 32);
		l->chunk_count = le_get64(h + 40);
		if (l->data_bytes > INT64_MAX || l->chunk_count > INT64_MAX / INDEX_ENTRY_SIZE)
			return errmsg_set(err, errlen, -EINVAL, "gpu %" PRIu32 ": %s: bad sizes",
					  l->gpu_id, l->name);
	}
	return 0;
}

static int read_ancestors(int fd, struct bo_index_layout *l)
{
	uint8_t raw[BO_STREAM_MAX_CHAIN * INDEX_ANCESTOR_SIZE];
	const uint8_t *p = raw;
	uint32_t i;
	int ret;

	if (!l->ancestor_count)
		return 0;
	ret = pread_full(fd, raw, (size_t)l->ancestor_count * INDEX_ANCESTOR_SIZE,
			 INDEX_HEADER_SIZE + bo_table_size(l));
	for (i = 0; !ret && i < l->ancestor_count; i++, p += INDEX_ANCESTOR_SIZE)
		l->ancestors[i] = (struct bo_index_ancestor){.image_id = le_get32(p),
							     .gpu_id = le_get32(p + 4),
							     .data_bytes = le_get64(p + 8),
							     .index_crc = le_get32(p + 16)};
	return ret;
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
	if (!ret && l->bos)
		ret = bo_index_layout(l, err, errlen);
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
	ret = read_ancestors(fd, l);
	if (ret)
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	return 0;
}

/*
 * The first hole of fd at or after off, before end: [*hole, *data). Both
 * end when there is none (a file system without SEEK_HOLE: all data). A
 * dump writes every byte of an index, but a hostile one (or a copy made
 * sparse) may be all holes: they read as zeros, and are checked as zeros
 * without reading them, so that checking a sparse index of a huge BO costs
 * what its data costs, not its size (2 GiB of holes for a 2 TiB BO in 4
 * KiB chunks, 256 GiB for 2^48 bytes).
 */
static void next_hole(int fd, uint64_t off, uint64_t end, uint64_t *hole, uint64_t *data)
{
	off_t h = lseek(fd, (off_t)off, SEEK_HOLE), d;

	*hole = *data = end;
	if (h < 0 || (uint64_t)h >= end)
		return;
	d = lseek(fd, h, SEEK_DATA);
	if (d < 0 && errno != ENXIO) /* ENXIO: a hole up to the end of the file */
		return;
	*hole = (uint64_t)h;
	*data = d < 0 || (uint64_t)d > end ? end : (uint64_t)d;
}

/* The CRC-32 of bytes [0, len) of fd: its data read in blocks, its holes as zeros. */
static int crc_of_file(int fd, uint64_t len, uint8_t *buf, uint32_t *crc)
{
	uint64_t off = 0, hole, data;
	size_t n;
	int ret;

	*crc = 0;
	while (off < len) {
		next_hole(fd, off, len, &hole, &data);
		if (hole <= off && data <= off) /* no hole here after all (a race): read a block */
			hole = len - off < BO_INDEX_BLOCK ? len : off + BO_INDEX_BLOCK;
		for (; off < hole; off += n) {
			n = hole - off < BO_INDEX_BLOCK ? (size_t)(hole - off) : BO_INDEX_BLOCK;
			ret = pread_full(fd, buf, n, off);
			if (ret)
				return ret;
			*crc = bo_index_crc32(*crc, buf, n);
		}
		if (data > off) {
			*crc = bo_index_crc32_zeros(*crc, data - off);
			off = data;
		}
	}
	return 0;
}

static uint32_t bo_record_size(const struct bo_index_layout *l)
{
	return is_v1(l) ? INDEX_BO_SIZE_V1 : INDEX_BO_SIZE;
}

/* The BO table against the caller's sizes, a block of records at a time. */
static int check_bo_table(int fd, const struct bo_index_layout *l, uint8_t *buf, char *err,
			  size_t errlen)
{
	const uint32_t rec = bo_record_size(l), per_block = BO_INDEX_BLOCK / rec;
	uint64_t off = 0;
	uint32_t i, n, k;
	const uint8_t *p;
	int ret;

	for (i = 0; i < l->bo_count; i += n) {
		n = l->bo_count - i < per_block ? l->bo_count - i : per_block;
		ret = pread_full(fd, buf, (size_t)n * rec, INDEX_HEADER_SIZE + (uint64_t)i * rec);
		if (ret)
			return ret;
		for (k = 0, p = buf; k < n; k++, p += rec) {
			if (le_get64(p) != l->bos[i + k].size || le_get64(p + 8) != off)
				return errmsg_set(
					err, errlen, -EINVAL,
					"gpu %" PRIu32 ": %s: BO %" PRIu32
					" recorded with size 0x%" PRIx64 ", expected 0x%" PRIx64,
					l->gpu_id, l->name, i + k, le_get64(p), l->bos[i + k].size);
			off += l->bos[i + k].size;
		}
	}
	return 0;
}

/*
 * Every entry where the layout says it can be: its level recorded, a level 0
 * chunk at its own position, an ancestor's inside that ancestor's data
 * file. Sums the bytes each level holds.
 */
static int check_entries(int fd, struct bo_index_layout *l, char *err, size_t errlen)
{
	const uint64_t entry_size = is_v1(l) ? INDEX_ENTRY_SIZE_V1 : INDEX_ENTRY_SIZE;
	const uint64_t base = entries_base(l), end = base + l->chunk_count * entry_size;
	struct bo_index_reader *r = malloc(sizeof(*r));
	uint64_t chunk = 0, pos = 0, left, len, limit, at, hole, data, k;
	struct bo_chunk_entry e;
	uint32_t b;
	int ret = r ? 0 : -ENOMEM;

	memset(l->level_bytes, 0, sizeof(l->level_bytes));
	l->zero_bytes = 0;
	if (r)
		bo_index_reader_init(r, fd, l);
	next_hole(fd, base, end, &hole, &data);
	for (b = 0; !ret && b < l->bo_count; b++) {
		for (left = l->bos[b].size; !ret && left; left -= len, pos += len, chunk++) {
			at = base + chunk * entry_size;
			if (at >= data)
				next_hole(fd, at, end, &hole, &data);
			/*
			 * Entries inside a hole are all zero: a version 1 chunk of level 0
			 * and CRC-32 0, as a whole (verified by the restore, refused by
			 * any that reads it). Later versions' are refused at the first
			 * one past chunk 0 (offset 0 is not theirs), read as usual.
			 */
			k = is_v1(l) && at >= hole ? (data - at) / entry_size : 0;
			if (k > 1) { /* the rest of the hole, or of this BO */
				if (k > chunks_of(left, l->chunk_size))
					k = chunks_of(left, l->chunk_size);
				len = k * l->chunk_size < left ? k * l->chunk_size : left;
				l->level_bytes[0] += len;
				chunk += k - 1; /* and the loop's own step */
				continue;
			}
			len = left < l->chunk_size ? left : l->chunk_size;
			ret = bo_index_entry_get(r, chunk, &e);
			if (ret)
				break;
			limit = e.level && e.level <= l->ancestor_count
					? l->ancestors[e.level - 1].data_bytes
					: 0;
			if (bo_index_verifies_crc64(l->version) && e.crc32) {
				free(r);
				return errmsg_set(err, errlen, -EINVAL,
						  "gpu %" PRIu32 ": %s: chunk %" PRIu64
						  ": reserved field set (0x%08" PRIx32 ")",
						  l->gpu_id, l->name, chunk, e.crc32);
			}
			if (e.level > l->ancestor_count || (e.flags & ~BO_CHUNK_ZERO) ||
			    ((e.flags & BO_CHUNK_ZERO) && e.level) ||
			    (!e.level && !is_v1(l) && e.offset != pos) ||
			    (e.level && (e.offset > limit || len > limit - e.offset))) {
				free(r);
				return errmsg_set(err, errlen, -EINVAL,
						  "gpu %" PRIu32 ": %s: chunk %" PRIu64
						  " refers to level %" PRIu32 " offset 0x%" PRIx64
						  ", outside what the index records",
						  l->gpu_id, l->name, chunk, e.level, e.offset);
			}
			l->level_bytes[e.level] += len;
			if (e.flags & BO_CHUNK_ZERO)
				l->zero_bytes += len;
		}
	}
	free(r);
	if (ret)
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	return 0;
}

static int check_body(int fd, struct bo_index_layout *l, uint8_t *buf, char *err, size_t errlen)
{
	uint64_t len = bo_index_size(l);
	uint32_t crc;
	int ret;

	ret = crc_of_file(fd, len - INDEX_CRC_SIZE, buf, &crc);
	ret = ret ?: pread_full(fd, buf, INDEX_CRC_SIZE, len - INDEX_CRC_SIZE);
	if (!ret && le_get32(buf) != crc)
		return errmsg_set(err, errlen, -EBADMSG,
				  "gpu %" PRIu32 ": %s: index checksum mismatch", l->gpu_id,
				  l->name);
	l->index_crc = crc;
	ret = ret ?: pread_full(fd, buf, INDEX_HEADER_SIZE, 0);
	if (!ret && (le_get64(buf + 32) != l->data_bytes || le_get64(buf + 40) != l->chunk_count))
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %s: sizes do not match the BOs", l->gpu_id,
				  l->name);
	if (ret)
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	ret = check_bo_table(fd, l, buf, err, errlen);
	return ret ?: check_entries(fd, l, err, errlen);
}

int bo_index_check(int fd, struct bo_index_layout *l, char *err, size_t errlen)
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

int bo_index_read_bos(int fd, const struct bo_index_layout *l, struct bo_index_bo **bos, char *err,
		      size_t errlen)
{
	const uint32_t rec = bo_record_size(l);
	uint8_t *raw = malloc((size_t)l->bo_count * rec + 1);
	struct bo_index_bo *v = calloc(l->bo_count + 1, sizeof(*v));
	uint32_t i;
	int ret = raw && v ? 0 : -ENOMEM;

	if (!ret)
		ret = pread_full(fd, raw, (size_t)l->bo_count * rec, INDEX_HEADER_SIZE);
	for (i = 0; !ret && i < l->bo_count; i++)
		v[i] = (struct bo_index_bo){
			.size = le_get64(raw + (size_t)i * rec),
			.gpu_va = is_v1(l) ? 0 : le_get64(raw + (size_t)i * rec + 16)};
	free(raw);
	if (ret) {
		free(v);
		return errmsg_set(err, errlen, ret == -ENODATA ? -EINVAL : ret,
				  "gpu %" PRIu32 ": %s: %s", l->gpu_id, l->name,
				  ret == -ENODATA ? "file truncated" : strerror(-ret));
	}
	*bos = v;
	return 0;
}

/* ---- chunk entries on demand -------------------------------------------------------------- */

void bo_index_reader_init(struct bo_index_reader *r, int fd, const struct bo_index_layout *l)
{
	r->fd = fd;
	r->version = l->version ? l->version : INDEX_VERSION;
	r->count = l->chunk_count;
	r->base = entries_base(l);
	r->first = 0;
	r->n = 0;
}

static void decode_entry(const struct bo_index_reader *r, const uint8_t *p,
			 struct bo_chunk_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->crc32 = le_get32(p); /* version 3: reserved, checked to be 0 */
	if (r->version == 1)
		return;
	e->level = le_get16(p + 4);
	e->flags = le_get16(p + 6);
	e->offset = le_get64(p + 8);
	e->crc64 = le_get64(p + 16);
}

int bo_index_entry_get(struct bo_index_reader *r, uint64_t chunk, struct bo_chunk_entry *e)
{
	const uint32_t size = r->version == 1 ? INDEX_ENTRY_SIZE_V1 : INDEX_ENTRY_SIZE;
	uint8_t raw[BO_INDEX_WINDOW * INDEX_ENTRY_SIZE];
	uint32_t n, i;
	int ret;

	if (chunk >= r->count)
		return -EINVAL;
	if (chunk < r->first || chunk >= r->first + r->n) {
		/* chunks are read in order: the window starts at the one asked for */
		n = r->count - chunk < BO_INDEX_WINDOW ? (uint32_t)(r->count - chunk)
						       : BO_INDEX_WINDOW;
		ret = pread_full(r->fd, raw, (size_t)n * size, r->base + chunk * size);
		if (ret)
			return ret == -ENODATA ? -EIO : ret;
		for (i = 0; i < n; i++)
			decode_entry(r, raw + (size_t)i * size, &r->v[i]);
		r->first = chunk;
		r->n = n;
	}
	*e = r->v[chunk - r->first];
	return 0;
}
