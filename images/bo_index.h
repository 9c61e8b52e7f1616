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
 *
 * Errors: negative errno and one line in err, "gpu <id>: <file>: what".
 */
#ifndef AMDGPU_CRIU_BO_INDEX_H
#define AMDGPU_CRIU_BO_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "images/bo_stream.h"

#define BO_INDEX_BLOCK	(64u << 10)
#define BO_INDEX_WINDOW 1024u

/* What an index describes: filled by the caller, then by bo_index_layout(). */
struct bo_index_layout {
	uint32_t gpu_id;
	uint32_t image_id;
	uint32_t chunk_size;
	uint32_t bo_count;
	const struct bo_stream_bo *bos; /* bo_count BOs: their sizes */
	const char *name;		/* the index file's name, for messages */
	/* from bo_layout(): */
	uint64_t data_bytes;  /* sum of the BO sizes */
	uint64_t chunk_count; /* chunks of chunk_size cut from each BO */
};

/* CRC-32 (zlib's, as gzip and PNG) of len bytes, continuing crc (0 to start). */
uint32_t bo_index_crc32(uint32_t crc, const void *buf, size_t len);

/* data_bytes and chunk_count from the BO sizes; -EOVERFLOW on absurd sizes. */
int bo_index_layout(struct bo_index_layout *l, char *err, size_t errlen);

/* Bytes of the index file of that layout. */
uint64_t bo_index_size(const struct bo_index_layout *l);

/* Writes the whole index (crcs: chunk_count checksums) to fd from offset 0. */
int bo_index_write(int fd, const struct bo_index_layout *l, const uint32_t *crcs, char *err,
		   size_t errlen);

/*
 * Reads and checks the index in fd against l (gpu_id, image_id, bo_count,
 * bos, name set by the caller): header first (l->chunk_size is taken from
 * it, then the layout computed), the file's size, then the whole file
 * streamed: its own checksum, the recorded sizes, the BO table. Reads no
 * chunk checksum into memory.
 */
int bo_index_read_header(int fd, struct bo_index_layout *l, char *err, size_t errlen);
int bo_index_check(int fd, const struct bo_index_layout *l, char *err, size_t errlen);

/* The chunk checksums of a checked index, read on demand. */
struct bo_index_crcs {
	int fd;
	uint64_t count; /* chunks */
	uint64_t base;	/* file offset of the first checksum */
	uint64_t first; /* chunk of v[0] */
	uint32_t n;	/* valid entries of v */
	uint32_t v[BO_INDEX_WINDOW];
};

void bo_index_crcs_init(struct bo_index_crcs *c, int fd, const struct bo_index_layout *l);
/* The checksum of chunk `chunk` (< count); -errno when the index cannot be read. */
int bo_index_crc_get(struct bo_index_crcs *c, uint64_t chunk, uint32_t *crc);

#endif
