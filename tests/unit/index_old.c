// SPDX-License-Identifier: MIT
/*
 * A version 3 BO index rewritten as version 2 or 1 (see index_old.h). The bytes
 * are laid out here from datapath/bo_stream.h's format description, not
 * through bo_index.c, and checksummed with zlib: the test does not trust
 * the code it tests to say what the old versions were.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "file_read.h"
#include "index_old.h"

#define HEADER	  64u
#define BO_REC	  24u
#define BO_REC_V1 16u
#define ENTRY	  32u
#define TAIL_CRC  4u

static uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void le32_put(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

/* A version 3 index without ancestors, its data file, and every chunk's CRC-32. */
struct v3_image {
	char idx_name[64];
	uint8_t *idx, *data;
	size_t idx_len, data_len;
	uint32_t bo_count;
	uint64_t chunk_count;
	uint32_t *crc32; /* chunk_count of them, zlib's, of each chunk's bytes */
};

/* Each chunk's CRC-32, of its bytes where its entry says (all level 0). */
static void chunk_crcs(struct v3_image *im)
{
	uint32_t chunk_size = le32_at(im->idx + 20), b;
	const uint8_t *entry = im->idx + HEADER + (size_t)im->bo_count * BO_REC;
	uint64_t size, off, len, k = 0;

	im->crc32 = calloc(im->chunk_count + 1, sizeof(*im->crc32));
	assert_non_null(im->crc32);
	for (b = 0; b < im->bo_count; b++) {
		size = le64_at(im->idx + HEADER + (size_t)b * BO_REC);
		for (off = 0; off < size; off += len, entry += ENTRY, k++) {
			len = size - off < chunk_size ? size - off : chunk_size;
			assert_int_equal(le32_at(entry + 4) & 0xffff, 0); /* level 0 */
			assert_true(le64_at(entry + 8) + len <= im->data_len);
			im->crc32[k] =
				(uint32_t)crc32_z(0, im->data + le64_at(entry + 8), (size_t)len);
		}
	}
	assert_int_equal(k, im->chunk_count);
}

static void v3_read(struct v3_image *im, int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	char img_name[64];

	snprintf(im->idx_name, sizeof(im->idx_name), "amdgpu-bo-%u-%u.idx", image_id, gpu_id);
	snprintf(img_name, sizeof(img_name), "amdgpu-bo-%u-%u.img", image_id, gpu_id);
	im->idx = file_read_all(dir_fd, im->idx_name, &im->idx_len);
	im->data = file_read_all(dir_fd, img_name, &im->data_len);
	assert_true(im->idx_len > HEADER + TAIL_CRC);
	assert_memory_equal(im->idx, "AMDBOIX3", 8);
	assert_int_equal(le32_at(im->idx + 28), 0); /* no ancestors */
	im->bo_count = le32_at(im->idx + 24);
	im->chunk_count = le64_at(im->idx + 40);
	assert_int_equal(im->idx_len, HEADER + (uint64_t)im->bo_count * BO_REC +
					      im->chunk_count * ENTRY + TAIL_CRC);
	chunk_crcs(im);
}

void index_write_sealed(int dir_fd, const char *name, uint8_t *buf, size_t len)
{
	int fd;

	le32_put(buf + len - TAIL_CRC, (uint32_t)crc32_z(0, buf, len - TAIL_CRC));
	fd = openat(dir_fd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void v3_free(struct v3_image *im)
{
	free(im->idx);
	free(im->data);
	free(im->crc32);
}

void index_to_version2(int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	struct v3_image im;
	uint8_t *entry;
	uint64_t k;

	v3_read(&im, dir_fd, image_id, gpu_id);
	memcpy(im.idx, "AMDBOIX2", 8);
	le32_put(im.idx + 8, 2);
	entry = im.idx + HEADER + (size_t)im.bo_count * BO_REC;
	for (k = 0; k < im.chunk_count; k++, entry += ENTRY)
		le32_put(entry, im.crc32[k]);
	index_write_sealed(dir_fd, im.idx_name, im.idx, im.idx_len);
	v3_free(&im);
}

void index_to_version1(int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	struct v3_image im;
	size_t len;
	uint8_t *v1, *p;
	uint32_t b;
	uint64_t k;

	v3_read(&im, dir_fd, image_id, gpu_id);
	len = HEADER + (size_t)im.bo_count * BO_REC_V1 + (size_t)im.chunk_count * 4 + TAIL_CRC;
	v1 = calloc(1, len);
	assert_non_null(v1);
	memcpy(v1, im.idx, HEADER);
	memcpy(v1, "AMDBOIX1", 8);
	le32_put(v1 + 8, 1);
	p = v1 + HEADER;
	for (b = 0; b < im.bo_count; b++, p += BO_REC_V1) /* { size, offset }: no gpu_va */
		memcpy(p, im.idx + HEADER + (size_t)b * BO_REC, BO_REC_V1);
	for (k = 0; k < im.chunk_count; k++, p += 4)
		le32_put(p, im.crc32[k]);
	index_write_sealed(dir_fd, im.idx_name, v1, len);
	free(v1);
	v3_free(&im);
}
