// SPDX-License-Identifier: MIT
/* The streamed layout of one GPU's BO contents (bo_seq.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fullio.h"
#include "common/le_bytes.h"
#include "datapath/bo_index.h"
#include "datapath/bo_seq.h"

#define HEAD_FIXED  40u /* magic .. data_bytes */
#define BO_ENTRY    24u
#define RECORD_HEAD 32u

enum { REC_DATA = 1, REC_ZERO = 2, REC_END = 3 };

/* The BOs lie back to back from 0 and add up to data_bytes. */
static int check_header(const struct bo_seq_header *h, char *err, size_t errlen)
{
	uint64_t at = 0;

	if (!h->chunk_size || h->chunk_size % 4096 || h->chunk_size > BO_SEQ_MAX_CHUNK ||
	    h->bo_count > BO_SEQ_MAX_BOS) {
		snprintf(err, errlen, "BO stream: chunk size %u or %u BOs out of bounds",
			 h->chunk_size, h->bo_count);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < h->bo_count; i++) {
		if (h->bos[i].offset != at || h->bos[i].size > UINT64_MAX - at) {
			snprintf(err, errlen, "BO stream: BO %u is not where the one before ended",
				 i);
			return -EPROTO;
		}
		at += h->bos[i].size;
	}
	if (at != h->data_bytes) {
		snprintf(err, errlen, "BO stream: the BOs hold %llu bytes, the header says %llu",
			 (unsigned long long)at, (unsigned long long)h->data_bytes);
		return -EPROTO;
	}
	return 0;
}

static uint8_t *pack_header(const struct bo_seq_header *h, size_t *len)
{
	size_t n = HEAD_FIXED + (size_t)h->bo_count * BO_ENTRY + 4;
	uint8_t *b = calloc(1, n);

	if (!b)
		return NULL;
	memcpy(b, BO_SEQ_MAGIC, 8);
	le_put32(b + 8, 1);
	le_put32(b + 12, h->gpu_id);
	le_put32(b + 16, h->image_id);
	le_put32(b + 20, h->chunk_size);
	le_put32(b + 24, h->bo_count);
	le_put64(b + 32, h->data_bytes);
	for (uint32_t i = 0; i < h->bo_count; i++) {
		uint8_t *e = b + HEAD_FIXED + (size_t)i * BO_ENTRY;

		le_put64(e, h->bos[i].size);
		le_put64(e + 8, h->bos[i].offset);
		le_put64(e + 16, h->bos[i].gpu_va);
	}
	le_put32(b + n - 4, bo_index_crc32(0, b, n - 4));
	*len = n;
	return b;
}

int bo_seq_start(struct bo_seq_writer *w, int fd, const struct bo_seq_header *h, char *err,
		 size_t errlen)
{
	uint8_t *b;
	size_t n;
	int ret = check_header(h, err, errlen);

	if (ret)
		return ret;
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->h = *h;
	b = pack_header(h, &n);
	if (!b)
		return -ENOMEM;
	ret = write_full(fd, b, n);
	free(b);
	if (ret)
		snprintf(err, errlen, "BO stream of GPU 0x%x: writing its header: %s", h->gpu_id,
			 strerror(-ret));
	return ret;
}

/* Is `next` .. +len one in-order piece of one BO? Moves w->bo to the BO holding it. */
static bool in_order(struct bo_seq_writer *w, uint64_t offset, size_t len)
{
	if (offset != w->next || !len || len > w->h.chunk_size || len > w->h.data_bytes - offset)
		return false;
	while (w->bo < w->h.bo_count && offset >= w->h.bos[w->bo].offset + w->h.bos[w->bo].size)
		w->bo++;
	return w->bo < w->h.bo_count &&
	       offset + len <= w->h.bos[w->bo].offset + w->h.bos[w->bo].size;
}

static bool all_zero(const void *data, size_t len)
{
	const uint8_t *p = data;

	return !data || (!p[0] && !memcmp(p, p + 1, len - 1));
}

static int put_record(struct bo_seq_writer *w, uint32_t kind, uint64_t offset, uint64_t len,
		      uint64_t crc, const void *data)
{
	uint8_t head[RECORD_HEAD] = {0};
	int ret;

	le_put32(head, kind);
	le_put64(head + 8, offset);
	le_put64(head + 16, len);
	le_put64(head + 24, crc);
	ret = write_full(w->fd, head, sizeof(head));
	if (!ret && data)
		ret = write_full(w->fd, data, (size_t)len);
	/* the headers only: a data record's header carries its bytes' CRC-64 */
	w->crc = bo_index_crc64(w->crc, head, sizeof(head));
	w->records++;
	return ret;
}

int bo_seq_put(struct bo_seq_writer *w, uint64_t offset, const void *data, size_t len,
	       uint64_t crc64, char *err, size_t errlen)
{
	bool zero;
	int ret;

	if (!in_order(w, offset, len)) {
		snprintf(
			err, errlen,
			"BO stream of GPU 0x%x: chunk at %llu (%zu bytes) is not the next piece of "
			"one BO (next: %llu)",
			w->h.gpu_id, (unsigned long long)offset, len, (unsigned long long)w->next);
		return -EINVAL;
	}
	zero = all_zero(data, len);
	if (!zero && crc64 == BO_SEQ_NO_CRC)
		crc64 = bo_index_crc64(0, data, len);
	ret = put_record(w, zero ? REC_ZERO : REC_DATA, offset, len, zero ? 0 : crc64,
			 zero ? NULL : data);
	if (ret) {
		snprintf(err, errlen, "BO stream of GPU 0x%x: writing the chunk at %llu: %s",
			 w->h.gpu_id, (unsigned long long)offset, strerror(-ret));
		return ret;
	}
	w->next += len;
	return 0;
}

int bo_seq_finish(struct bo_seq_writer *w, char *err, size_t errlen)
{
	uint64_t records = w->records;
	int ret;

	if (w->next != w->h.data_bytes) {
		snprintf(err, errlen, "BO stream of GPU 0x%x: ends at %llu of %llu bytes",
			 w->h.gpu_id, (unsigned long long)w->next,
			 (unsigned long long)w->h.data_bytes);
		return -EINVAL;
	}
	ret = put_record(w, REC_END, w->next, records, w->crc, NULL);
	if (ret)
		snprintf(err, errlen, "BO stream of GPU 0x%x: writing its end: %s", w->h.gpu_id,
			 strerror(-ret));
	return ret;
}

static int read_header(int fd, struct bo_seq_header *h, char *err, size_t errlen)
{
	uint8_t fixed[HEAD_FIXED], *b;
	size_t n;
	int ret = read_full(fd, fixed, sizeof(fixed));

	memset(h, 0, sizeof(*h));
	if (ret) {
		snprintf(err, errlen, "BO stream: reading its header: %s", strerror(-ret));
		return ret;
	}
	if (memcmp(fixed, BO_SEQ_MAGIC, 8) || le_get32(fixed + 8) != 1 ||
	    le_get32(fixed + 24) > BO_SEQ_MAX_BOS) {
		snprintf(err, errlen, "BO stream: not a BO stream of version 1");
		return -EPROTO;
	}
	n = HEAD_FIXED + (size_t)le_get32(fixed + 24) * BO_ENTRY + 4;
	b = malloc(n);
	h->bos = calloc(le_get32(fixed + 24) + 1u, sizeof(*h->bos));
	if (!b || !h->bos) {
		free(b);
		return -ENOMEM;
	}
	memcpy(b, fixed, sizeof(fixed));
	ret = read_full(fd, b + HEAD_FIXED, n - HEAD_FIXED);
	if (!ret && le_get32(b + n - 4) != bo_index_crc32(0, b, n - 4))
		ret = -EBADMSG;
	h->gpu_id = le_get32(b + 12);
	h->image_id = le_get32(b + 16);
	h->chunk_size = le_get32(b + 20);
	h->bo_count = le_get32(b + 24);
	h->data_bytes = le_get64(b + 32);
	for (uint32_t i = 0; i < h->bo_count; i++) {
		const uint8_t *e = b + HEAD_FIXED + (size_t)i * BO_ENTRY;

		h->bos[i] = (struct bo_seq_bo){le_get64(e), le_get64(e + 8), le_get64(e + 16)};
	}
	free(b);
	if (ret) {
		snprintf(err, errlen, "BO stream: its header %s",
			 ret == -EBADMSG ? "is damaged (CRC-32)" : strerror(-ret));
		return ret;
	}
	return check_header(h, err, errlen);
}

int bo_seq_reader_start(struct bo_seq_reader *r, int fd, char *err, size_t errlen)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	ret = read_header(fd, &r->h, err, errlen);
	if (ret) {
		free(r->h.bos);
		r->h.bos = NULL;
		return ret;
	}
	r->pos.h = r->h;
	return 0;
}

void bo_seq_reader_end(struct bo_seq_reader *r)
{
	free(r->h.bos);
	r->h.bos = NULL;
}

/* The end record against what came: its offset, record count and CRC. */
static int check_end(struct bo_seq_reader *r, uint64_t offset, uint64_t len, uint64_t crc,
		     char *err, size_t errlen)
{
	if (offset == r->h.data_bytes && offset == r->pos.next && len == r->pos.records &&
	    crc == r->pos.crc)
		return 1;
	snprintf(err, errlen,
		 "BO stream of GPU 0x%x: its end record does not match what came "
		 "(%llu records, %llu bytes)",
		 r->h.gpu_id, (unsigned long long)r->pos.records, (unsigned long long)r->pos.next);
	return -EBADMSG;
}

int bo_seq_reader_next(struct bo_seq_reader *r, struct bo_seq_record *rec, char *err, size_t errlen)
{
	uint8_t head[RECORD_HEAD];
	uint64_t before = r->pos.crc;
	uint32_t kind;
	int ret = read_full(r->fd, head, sizeof(head));

	if (ret) {
		snprintf(err, errlen, "BO stream of GPU 0x%x: after %llu bytes: %s", r->h.gpu_id,
			 (unsigned long long)r->pos.next,
			 ret == -ENODATA ? "the stream ends without its end record"
					 : strerror(-ret));
		return ret;
	}
	kind = le_get32(head);
	rec->offset = le_get64(head + 8);
	rec->len = le_get64(head + 16);
	rec->crc = le_get64(head + 24);
	rec->zero = kind == REC_ZERO;
	r->pos.crc = bo_index_crc64(r->pos.crc, head, sizeof(head));
	if (kind == REC_END) {
		r->pos.crc = before;
		return check_end(r, rec->offset, rec->len, rec->crc, err, errlen);
	}
	if ((kind != REC_DATA && kind != REC_ZERO) || le_get32(head + 4) ||
	    !in_order(&r->pos, rec->offset, (size_t)rec->len) || (rec->zero && rec->crc)) {
		snprintf(err, errlen,
			 "BO stream of GPU 0x%x: record %llu (kind %u at %llu, %llu bytes) is not "
			 "the next piece of one BO",
			 r->h.gpu_id, (unsigned long long)r->pos.records, kind,
			 (unsigned long long)rec->offset, (unsigned long long)rec->len);
		return -EPROTO;
	}
	r->pos.next += rec->len;
	r->pos.records++;
	return 0;
}

int bo_seq_reader_data(struct bo_seq_reader *r, const struct bo_seq_record *rec, void *buf,
		       char *err, size_t errlen)
{
	int ret = read_full(r->fd, buf, (size_t)rec->len);

	if (ret)
		snprintf(err, errlen, "BO stream of GPU 0x%x: the chunk at %llu: %s", r->h.gpu_id,
			 (unsigned long long)rec->offset,
			 ret == -ENODATA ? "the stream ends inside it" : strerror(-ret));
	return ret;
}

int bo_seq_check(const struct bo_seq_header *h, const struct bo_seq_record *rec, const void *buf,
		 char *err, size_t errlen)
{
	if (bo_index_crc64(0, buf, (size_t)rec->len) == rec->crc)
		return 0;
	snprintf(err, errlen,
		 "BO stream of GPU 0x%x: the chunk at %llu (%llu bytes) is damaged (CRC-64)",
		 h->gpu_id, (unsigned long long)rec->offset, (unsigned long long)rec->len);
	return -EBADMSG;
}

/* One record handed to the sink, its bytes checked first: 0, 1 after the end record, -errno. */
static int read_one(struct bo_seq_reader *r, uint8_t *buf, bo_seq_sink sink, void *arg, char *err,
		    size_t errlen)
{
	struct bo_seq_record rec;
	int ret = bo_seq_reader_next(r, &rec, err, errlen);

	if (ret)
		return ret;
	if (rec.zero)
		return sink(arg, rec.offset, NULL, (size_t)rec.len);
	ret = bo_seq_reader_data(r, &rec, buf, err, errlen);
	ret = ret ?: bo_seq_check(&r->h, &rec, buf, err, errlen);
	return ret ?: sink(arg, rec.offset, buf, (size_t)rec.len);
}

int bo_seq_read(int fd, struct bo_seq_header *h, bo_seq_sink sink, void *arg, char *err,
		size_t errlen)
{
	struct bo_seq_reader r;
	uint8_t *buf;
	int ret = bo_seq_reader_start(&r, fd, err, errlen);

	*h = r.h;
	if (ret)
		return ret;
	buf = malloc(r.h.chunk_size);
	if (!buf)
		return -ENOMEM;
	while (!(ret = read_one(&r, buf, sink, arg, err, errlen)))
		;
	free(buf);
	return ret < 0 ? ret : 0;
}
