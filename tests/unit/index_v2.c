// SPDX-License-Identifier: MIT
/*
 * A version 3 BO index rewritten as version 2 (see index_v2.h). The bytes
 * are laid out here from images/bo_stream.h's format description, not
 * through bo_index.c, and checksummed with zlib: the test does not trust
 * the code it tests to say what version 2 was.
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
#include "index_v2.h"

#define HEADER	 64u
#define BO_REC	 24u
#define ENTRY	 32u
#define TAIL_CRC 4u

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

/* Each entry's CRC-32 of its chunk (all level 0) into its first field. */
static void put_chunk_crcs(uint8_t *idx, const uint8_t *data, size_t data_len)
{
	uint32_t chunk_size = le32_at(idx + 20), bo_count = le32_at(idx + 24), b;
	uint8_t *entry = idx + HEADER + (size_t)bo_count * BO_REC;
	uint64_t size, off, len;

	for (b = 0; b < bo_count; b++) {
		size = le64_at(idx + HEADER + (size_t)b * BO_REC);
		for (off = 0; off < size; off += len, entry += ENTRY) {
			len = size - off < chunk_size ? size - off : chunk_size;
			assert_int_equal(le32_at(entry + 4) & 0xffff, 0); /* level 0 */
			assert_true(le64_at(entry + 8) + len <= data_len);
			le32_put(entry,
				 (uint32_t)crc32_z(0, data + le64_at(entry + 8), (size_t)len));
		}
	}
}

void index_to_version2(int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	char idx_name[64], img_name[64];
	size_t idx_len, data_len;
	uint8_t *idx, *data;
	int fd;

	snprintf(idx_name, sizeof(idx_name), "amdgpu-bo-%u-%u.idx", image_id, gpu_id);
	snprintf(img_name, sizeof(img_name), "amdgpu-bo-%u-%u.img", image_id, gpu_id);
	idx = file_read_all(dir_fd, idx_name, &idx_len);
	data = file_read_all(dir_fd, img_name, &data_len);
	assert_true(idx_len > HEADER + TAIL_CRC);
	assert_memory_equal(idx, "AMDBOIX3", 8);
	assert_int_equal(le32_at(idx + 28), 0); /* no ancestors */
	memcpy(idx, "AMDBOIX2", 8);
	le32_put(idx + 8, 2);
	put_chunk_crcs(idx, data, data_len);
	le32_put(idx + idx_len - TAIL_CRC, (uint32_t)crc32_z(0, idx, idx_len - TAIL_CRC));
	fd = openat(dir_fd, idx_name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, idx, idx_len), (ssize_t)idx_len);
	close(fd);
	free(idx);
	free(data);
}
