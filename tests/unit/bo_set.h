/* SPDX-License-Identifier: MIT */
/*
 * The BO streaming unit tests' fixture and BO sets (test_bo_stream*.c):
 * an image directory under /tmp, memfds standing in for dma-bufs (src holds
 * random contents, dst gets them back), and dump/restore runs that check
 * the stream closed every fd it was given. Include after <cmocka.h>: the
 * helpers fail the running test.
 */
#ifndef AMDGPU_CRIU_TESTS_BO_SET_H
#define AMDGPU_CRIU_TESTS_BO_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_stream.h"

#define MAX_GPUS 4
#define MAX_BOS	 6
#define KIB	 1024ull
#define MIB	 (1024 * KIB)
#define GIB	 (1024 * MIB)

struct fixture {
	char dir[64];
	int dir_fd;
};

/* GPUs and BOs of one test: src memfds hold the contents, dst memfds get them back. */
struct bo_set {
	uint32_t gpu_count;
	struct bo_stream_gpu gpus[MAX_GPUS];
	struct bo_stream_bo bos[MAX_GPUS][MAX_BOS];
	int src[MAX_GPUS][MAX_BOS];
	int dst[MAX_GPUS][MAX_BOS];
	int given[MAX_GPUS][MAX_BOS]; /* fds handed to the stream */
};

/* cmocka group setup/teardown: *state is a struct fixture with an empty directory. */
int bo_fixture_setup(void **state);
int bo_fixture_teardown(void **state);

int make_memfd(uint64_t size);
void fill_random(int fd, uint64_t size, uint64_t seed);
/* gpu g gets ids 0x1000 + g; BO sizes from sizes[] (plus g pages), random contents. */
void set_build(struct bo_set *s, uint32_t gpu_count, const uint64_t *sizes, uint32_t bo_count);
void set_free(struct bo_set *s);
/* Every dst memfd holds its src's bytes. */
void assert_restored(const struct bo_set *s);
/* A dump or restore of the set with dups of its memfds (engine NULL: the CPU
 * engine), checking afterwards that the stream closed every one. */
int run_dump(struct fixture *f, struct bo_set *s, const struct bo_stream_config *base,
	     const struct bo_copy_engine *engine, char *err, size_t errlen);
int run_restore(struct fixture *f, struct bo_set *s, const struct bo_stream_config *base,
		const struct bo_copy_engine *engine, char *err, size_t errlen);
bool file_exists(struct fixture *f, const char *name);
/* The image directory is empty. */
void assert_no_files(struct fixture *f);

/* BOs of 64 KiB, 0, 4 KiB, 196 KiB, 1 MiB + 12345 and 8 KiB; 64 KiB chunks, a ring of 3. */
#define MIXED_COUNT 6
extern const uint64_t mixed_sizes[MIXED_COUNT];
extern const struct bo_stream_config small_chunks;

#endif
