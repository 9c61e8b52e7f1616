// SPDX-License-Identifier: MIT
/*
 * The streamed layout of BO contents (datapath/bo_seq.h): written into a
 * pipe by another process (no seek is possible) and read back byte-exact,
 * zero chunks as records without bytes; a damaged byte, a cut stream, a
 * damaged header or end are refused in one line and the damaged chunk
 * never reaches the sink; the writer refuses chunks out of order or across
 * two BOs, and an end before the data's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datapath/bo_index.h"
#include "datapath/bo_seq.h"

#define CHUNK 16384u

/* Three BOs, one empty; the second chunk of the last one all zero. */
static struct bo_seq_bo bos[] = {
	{10000, 0, 0x1000000}, {0, 10000, 0x2000000}, {70000, 10000, 0x3000000}};
static struct bo_seq_header header = {.gpu_id = 0xbeef,
				      .image_id = 7,
				      .chunk_size = CHUNK,
				      .bo_count = 3,
				      .data_bytes = 80000,
				      .bos = bos};
static uint8_t data[80000];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	memset(data + 10000 + CHUNK, 0, CHUNK);
}

/* Writes the contents chunk by chunk, BO by BO; 0 or -errno. */
static int write_stream(int fd)
{
	struct bo_seq_writer w;
	char err[256];
	int ret = bo_seq_start(&w, fd, &header, err, sizeof(err));

	for (uint32_t b = 0; b < header.bo_count && !ret; b++)
		for (uint64_t off = 0; off < bos[b].size && !ret; off += CHUNK) {
			size_t len = bos[b].size - off < CHUNK ? bos[b].size - off : CHUNK;
			uint64_t at = bos[b].offset + off;

			ret = bo_seq_put(&w, at, data + at, len,
					 b ? BO_SEQ_NO_CRC : bo_index_crc64(0, data + at, len), err,
					 sizeof(err));
		}
	return ret ? ret : bo_seq_finish(&w, err, sizeof(err));
}

struct sink {
	uint8_t got[80000];
	uint64_t next;
	unsigned int zero_calls;
};

static int collect(void *arg, uint64_t offset, const void *bytes, size_t len)
{
	struct sink *s = arg;

	assert_int_equal(offset, s->next);
	if (bytes) {
		memcpy(s->got + offset, bytes, len);
	} else {
		memset(s->got + offset, 0, len);
		s->zero_calls++;
	}
	s->next = offset + len;
	return 0;
}

static void pipe_round_trip(void **state)
{
	struct bo_seq_header h;
	struct sink *s = calloc(1, sizeof(*s));
	char err[256] = "";
	int p[2], status;
	pid_t pid;

	(void)state;
	fill();
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		/* a pipe: the writer cannot seek */
		_exit(lseek(p[1], 0, SEEK_SET) == -1 && errno == ESPIPE && !write_stream(p[1]) ? 0
											       : 1);
	}
	close(p[1]);
	assert_int_equal(bo_seq_read(p[0], &h, collect, s, err, sizeof(err)), 0);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && !WEXITSTATUS(status));
	assert_int_equal(h.gpu_id, 0xbeef);
	assert_int_equal(h.image_id, 7);
	assert_int_equal(h.bo_count, 3);
	assert_int_equal(h.bos[2].gpu_va, 0x3000000);
	assert_int_equal(s->next, sizeof(data));
	assert_memory_equal(s->got, data, sizeof(data));
	assert_int_equal(s->zero_calls, 1);
	free(h.bos);
	free(s);
}

/* The stream in a memfd, rewound for reading. */
static int stream_file(size_t *len)
{
	int fd = memfd_create("bo-seq", 0);

	assert_true(fd >= 0);
	fill();
	assert_int_equal(write_stream(fd), 0);
	*len = (size_t)lseek(fd, 0, SEEK_CUR);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void flip(int fd, off_t at)
{
	uint8_t b;

	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
}

static int read_back(int fd, struct sink *s, char *err, size_t len)
{
	struct bo_seq_header h;
	int ret;

	memset(s, 0, sizeof(*s));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	ret = bo_seq_read(fd, &h, collect, s, err, len);
	free(h.bos);
	return ret;
}

static void damage_is_refused_before_the_sink(void **state)
{
	/* header: 40 + 3 * 24 + 4 bytes; then the first BO's record (32 + 10000) */
	off_t head = 40 + 3 * 24 + 4, second_chunk_byte = head + 32 + 10000 + 32 + 100;
	struct sink *s = calloc(1, sizeof(*s));
	char err[256];
	size_t len;
	int fd = stream_file(&len);

	(void)state;
	flip(fd, second_chunk_byte);
	assert_int_equal(read_back(fd, s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "chunk at 10000 (16384 bytes) is damaged"));
	assert_int_equal(s->next, 10000); /* only the chunk before reached the sink */
	flip(fd, second_chunk_byte);
	assert_int_equal(read_back(fd, s, err, sizeof(err)), 0);
	flip(fd, 50); /* a BO entry of the header */
	assert_int_equal(read_back(fd, s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "header is damaged"));
	flip(fd, 50);
	flip(fd, (off_t)len - 3); /* the end record's CRC */
	assert_int_equal(read_back(fd, s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "end record"));
	flip(fd, (off_t)len - 3);
	assert_int_equal(ftruncate(fd, (off_t)len - 40), 0);
	assert_int_equal(read_back(fd, s, err, sizeof(err)), -ENODATA);
	assert_null(strchr(err, '\n'));
	close(fd);
	free(s);
}

static void writer_keeps_the_order(void **state)
{
	struct bo_seq_writer w;
	char err[256];
	int fd = memfd_create("bo-seq", 0);

	(void)state;
	fill();
	assert_int_equal(bo_seq_start(&w, fd, &header, err, sizeof(err)), 0);
	assert_int_equal(bo_seq_put(&w, 4096, data, 4096, BO_SEQ_NO_CRC, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "next: 0"));
	/* across the first BO's end */
	assert_int_equal(bo_seq_put(&w, 0, data, 12000, BO_SEQ_NO_CRC, err, sizeof(err)), -EINVAL);
	assert_int_equal(bo_seq_put(&w, 0, data, 10000, BO_SEQ_NO_CRC, err, sizeof(err)), 0);
	assert_int_equal(bo_seq_put(&w, 10000, NULL, CHUNK + 4096, BO_SEQ_NO_CRC, err, sizeof(err)),
			 -EINVAL); /* longer than a chunk */
	assert_int_equal(bo_seq_finish(&w, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ends at 10000 of 80000 bytes"));
	close(fd);
}

static void headers_that_do_not_add_up(void **state)
{
	struct bo_seq_bo gap[] = {{4096, 0, 0}, {4096, 8192, 0}};
	struct bo_seq_header h = {
		.chunk_size = CHUNK, .bo_count = 2, .data_bytes = 8192, .bos = gap};
	struct bo_seq_writer w;
	char err[256];

	(void)state;
	assert_int_equal(bo_seq_start(&w, -1, &h, err, sizeof(err)), -EPROTO);
	gap[1].offset = 4096;
	h.chunk_size = 1000;
	assert_int_equal(bo_seq_start(&w, -1, &h, err, sizeof(err)), -EPROTO);
	h.chunk_size = CHUNK;
	h.data_bytes = 9000;
	assert_int_equal(bo_seq_start(&w, -1, &h, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "the BOs hold 8192 bytes, the header says 9000"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipe_round_trip),
		cmocka_unit_test(damage_is_refused_before_the_sink),
		cmocka_unit_test(writer_keeps_the_order),
		cmocka_unit_test(headers_that_do_not_add_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
