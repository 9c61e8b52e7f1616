// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the reader of the streamed layout of BO contents
 * (datapath/bo_seq.h, bo_seq_read()).
 *
 * Input: the stream itself, read from a file of the scratch directory.
 * Invariants: a failure has a one-line message; on success the sink saw
 * exactly data_bytes bytes, in order from 0, each piece inside one BO of
 * the header and at most a chunk long.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath/bo_seq.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	const struct bo_seq_header *h;
	uint64_t next;
};

static int check_piece(void *arg, uint64_t offset, const void *bytes, size_t len)
{
	struct seen *s = arg;
	uint32_t i;

	(void)bytes;
	if (offset != s->next || !len || len > s->h->chunk_size)
		abort();
	for (i = 0; i < s->h->bo_count; i++)
		if (offset >= s->h->bos[i].offset &&
		    offset + len <= s->h->bos[i].offset + s->h->bos[i].size)
			break;
	if (i == s->h->bo_count)
		abort();
	s->next = offset + len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bo_seq_header h = {0};
	struct seen s = {.h = &h};
	char path[4096], err[512] = "";
	int fd, ret;

	fuzz_put_file("stream", data, size);
	snprintf(path, sizeof(path), "%s/stream", fuzz_scratch());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		abort();
	ret = bo_seq_read(fd, &h, check_piece, &s, err, sizeof(err));
	close(fd);
	if (ret && (!err[0] || strchr(err, '\n')))
		abort();
	if (!ret && s.next != h.data_bytes)
		abort();
	free(h.bos);
	fuzz_done();
	return 0;
}
