/* SPDX-License-Identifier: MIT */
/*
 * The per-GPU index of BO contents, amdgpu-bo-<image_id>-<gpu_id>.idx (its
 * format is part of the bo_stream contract: bo_stream.h). Internal to the
 * bo_stream module: bo_stream.c streams chunks, this file owns the index's
 * bytes.
 *
 * Memory is bounded whatever the index size: it is written and checked in
 * blocks of BO_INDEX_BLOCK bytes with an incremental CRC-32, and a restore
 * reads the chunk checksums it needs through a window of BO_INDEX_WINDOW of
 * them. (A sparse index sized for a valid-looking 2 TiB BO with 4 KiB
 * chunks is 2 GiB: it used to be read whole, twice over in memory.)
 * Time is bounded by the index's data, not its size: holes (a dump writes
 * none, a hostile index may be all holes) are checked as the zeros they read
 * as without reading them (SEEK_HOLE; their CRC-32 by arithmetic), so a
 * sparse index of a 2^48-byte BO costs what its few written pages cost.
 *
 * Errors: negative errno and one line in err, "gpu <id>: <file>: what".
 */
#ifndef AMDGPU_CRIU_BO_INDEX_H
#define AMDGPU_CRIU_BO_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_stream_types.h"

#define BO_INDEX_BLOCK	(64u << 10)
#define BO_INDEX_WINDOW 1024u
/*
 * Where a chunk's bytes are: level 0, this image's data file at the chunk's
 * own position; level k >= 1, the data file of ancestor k (1: the parent
 * image directory) at `offset`. crc64 is the chunk's CRC-64/XZ, one checksum
 * for both jobs since version 3: what a restore verifies, wherever the bytes
 * are, and what a child dump compares with its parent's (a changed chunk
 * passes for the parent's with a chance of about 2^-64; 0 in version 1).
 * crc32 is what version 1 and 2 images are verified by (zlib's CRC-32;
 * 0 in version 3).
 */
struct bo_chunk_entry {
	uint64_t offset;
	uint64_t crc64;
	uint32_t crc32;
	uint16_t level;
	uint16_t flags; /* BO_CHUNK_ZERO */
};

/* Whether a restore verifies the chunks of an index of this version by their
 * CRC-64 (version 3 on) or by their CRC-32. */
static inline bool bo_index_verifies_crc64(uint32_t version)
{
	return version >= 3;
}

/* The chunk is all zero: a hole of this image's data file (level 0 only). */
#define BO_CHUNK_ZERO 0x1u

/* An ancestor's files as a child index records them (its identity). */
struct bo_index_ancestor {
	uint32_t image_id;
	uint32_t gpu_id;
	uint64_t data_bytes; /* its data file's size */
	uint32_t index_crc;  /* its index's own checksum (the index's last 4 bytes) */
};

/* What an index describes: filled by the caller, then by bo_index_layout(). */
struct bo_index_layout {
	uint32_t gpu_id;
	uint32_t image_id;
	uint32_t chunk_size;
	uint32_t bo_count;
	const struct bo_stream_bo *bos; /* bo_count BOs: their sizes (and gpu_va, written) */
	const char *name;		/* the index file's name, for messages */
	/* from bo_index_layout(): */
	uint64_t data_bytes;  /* sum of the BO sizes */
	uint64_t chunk_count; /* chunks of chunk_size cut from each BO */
	/* version 2 on: the ancestors whose data files chunks refer to (written
	 * by the caller, read from the header and the ancestor table) */
	uint32_t version; /* read: 1, 2 or 3 */
	uint32_t ancestor_count;
	struct bo_index_ancestor ancestors[BO_STREAM_MAX_CHAIN];
	/* from bo_index_check(): bytes of chunks each level holds, and the
	 * index's own checksum (what a child records as index_crc) */
	uint64_t level_bytes[BO_STREAM_MAX_CHAIN + 1];
	uint64_t zero_bytes; /* of level_bytes[0]: all-zero chunks (holes) */
	uint32_t index_crc;
};

/* CRC-32 (zlib's, as gzip and PNG) of len bytes, continuing crc (0 to start). */
uint32_t bo_index_crc32(uint32_t crc, const void *buf, size_t len);
/* bo_index_crc32() of n zero bytes, continuing crc, without touching any (O(log n)). */
uint32_t bo_index_crc32_zeros(uint32_t crc, uint64_t n);
/* CRC-64/XZ of len bytes, continuing crc (0 to start), as bo_index_crc32(). */
uint64_t bo_index_crc64(uint64_t crc, const void *buf, size_t len);

/* data_bytes and chunk_count from the BO sizes; -EOVERFLOW on absurd sizes. */
int bo_index_layout(struct bo_index_layout *l, char *err, size_t errlen);

/* Bytes of the index file of that layout (the version and ancestor count set). */
uint64_t bo_index_size(const struct bo_index_layout *l);

/*
 * Writes the whole index, version 3 (entries: chunk_count of them, with
 * l->ancestors[0..ancestor_count-1] as the levels they refer to), to fd from
 * offset 0.
 */
int bo_index_write(int fd, const struct bo_index_layout *l, const struct bo_chunk_entry *entries,
		   char *err, size_t errlen);

/*
 * Reads and checks the index in fd against l (gpu_id, image_id, bo_count,
 * bos, name set by the caller): header first (l->chunk_size, version and
 * ancestors are taken from it, then the layout computed), the file's size,
 * then the whole file streamed: its own checksum, the recorded sizes, the
 * BO table, every entry (levels recorded, offsets inside their file). Reads
 * no more than a block and a window of entries into memory.
 * bo_index_read_header() with l->bos NULL takes any BO count (a parent's
 * index, whose BOs the caller learns from bo_index_read_bos()).
 */
int bo_index_read_header(int fd, struct bo_index_layout *l, char *err, size_t errlen);
int bo_index_check(int fd, struct bo_index_layout *l, char *err, size_t errlen);

/* A BO as an index records it. */
struct bo_index_bo {
	uint64_t size;
	uint64_t gpu_va; /* 0 in version 1 */
};

/* The BO table of an index whose header was read (l->bo_count entries, malloc'd). */
int bo_index_read_bos(int fd, const struct bo_index_layout *l, struct bo_index_bo **bos, char *err,
		      size_t errlen);

/* The chunk entries of a checked index, read on demand through a window. */
struct bo_index_reader {
	int fd;
	uint32_t version;
	uint64_t count; /* chunks */
	uint64_t base;	/* file offset of the first entry */
	uint64_t first; /* chunk of v[0] */
	uint32_t n;	/* valid entries of v */
	struct bo_chunk_entry v[BO_INDEX_WINDOW];
};

void bo_index_reader_init(struct bo_index_reader *r, int fd, const struct bo_index_layout *l);
/*
 * The entry of chunk `chunk` (< count); -errno when the index cannot be read.
 * Version 1 entries are level 0 with no CRC-64.
 */
int bo_index_entry_get(struct bo_index_reader *r, uint64_t chunk, struct bo_chunk_entry *e);

#endif
