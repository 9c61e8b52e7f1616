/* SPDX-License-Identifier: MIT */
/*
 * Images as the plugin wrote them before index version 3, for the tests
 * that old images still restore and what they can be as parents. Include
 * after <cmocka.h>: the helpers fail the running test.
 */
#ifndef AMDGPU_CRIU_TESTS_INDEX_OLD_H
#define AMDGPU_CRIU_TESTS_INDEX_OLD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Rewrites the version 3 index amdgpu-bo-<image_id>-<gpu_id>.idx in dir_fd
 * as version 2 wrote it: magic "AMDBOIX2", version 2, each chunk's CRC-32
 * (zlib's, of its bytes in the data file beside it) in the entry's first
 * field, and the index's own CRC-32 over the result. Every chunk must be in
 * that data file (a dump without a parent).
 */
void index_to_version2(int dir_fd, uint32_t image_id, uint32_t gpu_id);

/*
 * The same index as version 1 wrote it: magic "AMDBOIX1", version 1, BO
 * records of { size, offset }, and a CRC-32 alone per chunk.
 */
void index_to_version1(int dir_fd, uint32_t image_id, uint32_t gpu_id);

/*
 * Replaces the index `name` in dir_fd with the len bytes of buf, after
 * setting their last 4 bytes to the CRC-32 (zlib's) of the rest: an index
 * changed on purpose that still passes its own checksum.
 */
void index_write_sealed(int dir_fd, const char *name, uint8_t *buf, size_t len);

#endif
