// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the BO contents index and data check (datapath/bo_stream.h:
 * bo_stream_verify() and bo_stream_check_files(), public API only).
 *
 * Input: a 12-byte header, the caller's BO sizes, the index, the data.
 *   0  u8  flags
 *          bit 0  rewrite the index's own CRC-32 (its last 4 bytes) so that
 *                 mutations get past the checksum to the checks behind it
 *          bit 1  BO sizes from the index's own table (else the list below)
 *          bit 2  bo_stream_check_files() (else bo_stream_verify())
 *          bit 3  no .idx file;  bit 4  no .img file
 *          bit 5  gpu_id and image_id from bytes 4..11 (else from the index)
 *          bit 6  the .idx is a FIFO;  bit 7  the .img is a FIFO (not with
 *                 FUZZ_STRICT=0, fuzz_common.h)
 *   1  u8  number of BO sizes that follow (at most 32)
 *   2  u16 index length (little-endian; clamped to what is there)
 *   4  u32 gpu_id, 8 u32 image_id (used with bit 5)
 *  12  u64 BO sizes (little-endian), then the index bytes, then the data
 * Files: amdgpu-bo-<image_id>-<gpu_id>.idx and .img in the scratch directory.
 * Invariants: a failure has a one-line message naming the GPU; a located
 * fault lies inside one of the caller's BOs.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "datapath/bo_stream.h"
#include "fuzz_common.h"
#include "fuzz_tree.h"

#define MAX_SIZES   32u
#define MAX_IDX_BOS 64u
#define HEADER	    12u

enum {
	FIX_CRC = 1,
	SIZES_FROM_INDEX = 2,
	CHECK_FILES = 4,
	NO_INDEX = 8,
	NO_DATA = 16,
	IDS_FROM_HEADER = 32,
	INDEX_FIFO = 64,
	DATA_FIFO = 128,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static uint32_t sizes_from_index(const uint8_t *idx, size_t len, uint64_t *sizes)
{
	uint32_t n = 0, count;

	if (len < 28)
		return 0;
	count = (uint32_t)le(idx + 24, 4);
	while (n < count && n < MAX_IDX_BOS && 64 + 16 * (size_t)(n + 1) <= len) {
		sizes[n] = le(idx + 64 + 16 * (size_t)n, 8);
		n++;
	}
	return n;
}

static void check_result(int ret, const char *err, uint32_t gpu_id,
			 const struct bo_stream_fault *fault, const uint64_t *sizes, uint32_t n)
{
	char gpu[32];

	snprintf(gpu, sizeof(gpu), "gpu %u", gpu_id);
	if (!ret) {
		FUZZ_ASSERT(!fault->located, "a fault located in intact images");
		return;
	}
	fuzz_check_errmsg(err, gpu);
	if (!fault->located)
		return;
	FUZZ_ASSERT(fault->bo_index < n, "fault in BO %u of %u", fault->bo_index, n);
	FUZZ_ASSERT(fault->chunk_len && fault->bo_offset < sizes[fault->bo_index] &&
			    fault->chunk_len <= sizes[fault->bo_index] - fault->bo_offset,
		    "fault at offset %llu (+%u) of a %llu-byte BO",
		    (unsigned long long)fault->bo_offset, fault->chunk_len,
		    (unsigned long long)sizes[fault->bo_index]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t sizes[MAX_IDX_BOS] = {0};
	struct bo_stream_fault fault = {0};
	uint8_t idx[65536];
	size_t n_given, idx_len, at;
	uint32_t flags, n, gpu_id = 1, image_id = 1, crc;
	char name[64], err[512] = "";
	int dir_fd, ret;

	if (size < HEADER)
		return 0;
	flags = data[0];
	n_given = data[1] < MAX_SIZES ? data[1] : MAX_SIZES;
	at = HEADER + 8 * n_given;
	if (size < at)
		return 0;
	idx_len = (size_t)le(data + 2, 2);
	if (idx_len > size - at)
		idx_len = size - at;
	memcpy(idx, data + at, idx_len);
	if ((flags & FIX_CRC) && idx_len >= 4) {
		crc = (uint32_t)crc32(0, idx, (uInt)(idx_len - 4));
		for (int i = 0; i < 4; i++)
			idx[idx_len - 4 + i] = (uint8_t)(crc >> (8 * i));
	}
	if (flags & IDS_FROM_HEADER) {
		gpu_id = (uint32_t)le(data + 4, 4);
		image_id = (uint32_t)le(data + 8, 4);
	} else if (idx_len >= 20) {
		gpu_id = (uint32_t)le(idx + 12, 4);
		image_id = (uint32_t)le(idx + 16, 4);
	}
	if (flags & SIZES_FROM_INDEX) {
		n = sizes_from_index(idx, idx_len, sizes);
	} else {
		n = (uint32_t)n_given;
		for (size_t i = 0; i < n_given; i++)
			sizes[i] = le(data + HEADER + 8 * i, 8);
	}
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.idx", image_id, gpu_id);
	if ((flags & INDEX_FIFO) && fuzz_strict())
		fuzz_put_fifo(name);
	else if (!(flags & NO_INDEX))
		fuzz_put_file(name, idx, idx_len);
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.img", image_id, gpu_id);
	if ((flags & DATA_FIFO) && fuzz_strict())
		fuzz_put_fifo(name);
	else if (!(flags & NO_DATA))
		fuzz_put_file(name, data + at + idx_len, size - at - idx_len);
	dir_fd = fuzz_scratch_fd();
	if (flags & CHECK_FILES)
		ret = bo_stream_check_files(dir_fd, image_id, gpu_id, sizes, n, err, sizeof(err));
	else
		ret = bo_stream_verify(dir_fd, image_id, gpu_id, sizes, n, &fault, err,
				       sizeof(err));
	check_result(ret, err, gpu_id, &fault, sizes, n);
	close(dir_fd);
	fuzz_done();
	return 0;
}
