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
	w->crc = bo_index_crc64(w->crc, head, sizeof(head));
	if (data)
		w->crc = bo_index_crc64(w->crc, data, (size_t)len);
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

struct reader {
	int fd;
	const struct bo_seq_header *h;
	struct bo_seq_writer pos; /* the order the records must follow (no fd use) */
	uint8_t *buf;		  /* one chunk */
	char *err;
	size_t errlen;
};

/* A data record's bytes, checked before the sink sees them: whole, then handed out. */
static int read_data(struct reader *r, uint64_t offset, size_t len, uint64_t crc, bo_seq_sink sink,
		     void *arg)
{
	int ret = read_full(r->fd, r->buf, len);

	if (ret) {
		snprintf(r->err, r->errlen, "BO stream of GPU 0x%x: the chunk at %llu: %s",
			 r->h->gpu_id, (unsigned long long)offset,
			 ret == -ENODATA ? "the stream ends inside it" : strerror(-ret));
		return ret;
	}
	r->pos.crc = bo_index_crc64(r->pos.crc, r->buf, len);
	if (bo_index_crc64(0, r->buf, len) != crc) {
		snprintf(r->err, r->errlen,
			 "BO stream of GPU 0x%x: the chunk at %llu (%zu bytes) is damaged (CRC-64)",
			 r->h->gpu_id, (unsigned long long)offset, len);
		return -EBADMSG;
	}
	return sink(arg, offset, r->buf, len);
}

/* One record: 0, 1 after the end record, -errno. */
static int read_record(struct reader *r, bo_seq_sink sink, void *arg)
{
	uint8_t head[RECORD_HEAD];
	uint64_t offset, len, crc, before = r->pos.crc;
	uint32_t kind;
	int ret = read_full(r->fd, head, sizeof(head));

	if (ret) {
		snprintf(r->err, r->errlen, "BO stream of GPU 0x%x: after %llu bytes: %s",
			 r->h->gpu_id, (unsigned long long)r->pos.next,
			 ret == -ENODATA ? "the stream ends without its end record"
					 : strerror(-ret));
		return ret;
	}
	kind = le_get32(head);
	offset = le_get64(head + 8);
	len = le_get64(head + 16);
	crc = le_get64(head + 24);
	r->pos.crc = bo_index_crc64(r->pos.crc, head, sizeof(head));
	if (kind == REC_END) {
		if (offset != r->h->data_bytes || offset != r->pos.next || len != r->pos.records ||
		    crc != before) {
			snprintf(r->err, r->errlen,
				 "BO stream of GPU 0x%x: its end record does not match what came "
				 "(%llu records, %llu bytes)",
				 r->h->gpu_id, (unsigned long long)r->pos.records,
				 (unsigned long long)r->pos.next);
			return -EBADMSG;
		}
		return 1;
	}
	if ((kind != REC_DATA && kind != REC_ZERO) || le_get32(head + 4) ||
	    !in_order(&r->pos, offset, (size_t)len) || (kind == REC_ZERO && crc)) {
		snprintf(r->err, r->errlen,
			 "BO stream of GPU 0x%x: record %llu (kind %u at %llu, %llu bytes) is not "
			 "the "
			 "next piece of one BO",
			 r->h->gpu_id, (unsigned long long)r->pos.records, kind,
			 (unsigned long long)offset, (unsigned long long)len);
		return -EPROTO;
	}
	ret = kind == REC_DATA ? read_data(r, offset, (size_t)len, crc, sink, arg)
			       : sink(arg, offset, NULL, (size_t)len);
	r->pos.next += len;
	r->pos.records++;
	return ret;
}

int bo_seq_read(int fd, struct bo_seq_header *h, bo_seq_sink sink, void *arg, char *err,
		size_t errlen)
{
	struct reader r = {.fd = fd, .h = h, .err = err, .errlen = errlen};
	int ret = read_header(fd, h, err, errlen);

	if (ret)
		return ret;
	r.pos.h = *h;
	r.buf = malloc(h->chunk_size);
	if (!r.buf)
		return -ENOMEM;
	while (!(ret = read_record(&r, sink, arg)))
		;
	free(r.buf);
	return ret < 0 ? ret : 0;
}
