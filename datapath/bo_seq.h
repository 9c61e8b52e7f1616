/* SPDX-License-Identifier: MIT */
/*
 * The streamed layout of one GPU's BO contents: what a pipe can carry (CRIU's
 * --stream hands every image to criu-image-streamer through a pipe, written
 * once, front to back, and read back the same way). bo_stream.h writes and
 * reads it when its caller streams (bo_stream_config.stream_open); files
 * written without streaming keep the seekable layout of bo_stream.h.
 *
 * All integers little-endian. A stream is a header, records in the order of
 * the data, and an end record:
 *   header  char[8] magic "AMDBOSQ1"; u32 version (1); u32 gpu_id;
 *           u32 image_id; u32 chunk_size; u32 bo_count; u32 reserved (0);
 *           u64 data_bytes; bo_count x { u64 size; u64 offset; u64 gpu_va };
 *           u32 CRC-32 of the header's preceding bytes
 *   record  u32 kind (1: data, 2: zero, 3: end); u32 reserved (0);
 *           u64 offset; u64 length; u64 crc (data: CRC-64/XZ of the bytes;
 *           zero: 0; end: the CRC-64/XZ of the 32-byte heads of every
 *           record before it, which carry their bytes' CRC-64); data
 *           records: then length bytes
 * Each record starts where the one before ended (the first at 0), is at
 * most chunk_size long, lies inside one BO and never spans two; the end
 * record's offset is data_bytes, its length the number of records before
 * it. A zero record stands for length zero bytes and carries none: holes
 * cost 32 bytes. Chunks come in order, so the writer needs no seek; the
 * reader verifies each data record's CRC-64 as its bytes arrive and hands
 * out only verified bytes, zero ranges as NULL.
 */
#ifndef AMDGPU_CRIU_DATAPATH_BO_SEQ_H
#define AMDGPU_CRIU_DATAPATH_BO_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BO_SEQ_MAGIC	 "AMDBOSQ1"
#define BO_SEQ_MAX_BOS	 (1u << 20)
#define BO_SEQ_MAX_CHUNK (64u << 20)

struct bo_seq_bo {
	uint64_t size, offset, gpu_va;
};

struct bo_seq_header {
	uint32_t gpu_id, image_id, chunk_size, bo_count;
	uint64_t data_bytes;
	struct bo_seq_bo *bos; /* bo_count, back to back from offset 0 */
};

struct bo_seq_writer {
	int fd;
	struct bo_seq_header h;
	uint64_t next;	  /* where the next record starts */
	uint32_t bo;	  /* the BO holding `next` */
	uint64_t records; /* written so far */
	uint64_t crc;	  /* of every record so far */
};

/*
 * Writes the header to fd (a pipe, or any file, written front to back).
 * h->bos is borrowed until bo_seq_finish(). 0 or -errno, one line in err.
 */
int bo_seq_start(struct bo_seq_writer *w, int fd, const struct bo_seq_header *h, char *err,
		 size_t errlen);
/*
 * The next chunk: len bytes at offset (which must be where the last ended),
 * data NULL for zeros. A chunk of all-zero bytes is written as a zero
 * record. crc64: the chunk's CRC-64/XZ when the caller has it, or
 * BO_SEQ_NO_CRC. -EINVAL (out of order, too long, across BOs), -errno.
 */
#define BO_SEQ_NO_CRC UINT64_MAX
int bo_seq_put(struct bo_seq_writer *w, uint64_t offset, const void *data, size_t len,
	       uint64_t crc64, char *err, size_t errlen);
/* The end record; -EINVAL if the data did not reach data_bytes. */
int bo_seq_finish(struct bo_seq_writer *w, char *err, size_t errlen);

/*
 * Receives verified contents in order: len bytes at offset, data NULL for
 * zeros. A non-zero return stops the reader with it.
 */
typedef int (*bo_seq_sink)(void *arg, uint64_t offset, const void *data, size_t len);

/*
 * Reads a whole stream from fd: the header (checked; h->bos allocated, the
 * caller frees it), then every record, each data record checked against
 * its CRC-64 before sink sees it, then the end record (count and CRC).
 * -EBADMSG (damaged: the line names the offset), -EPROTO (not a stream of
 * this layout, or records out of order), -ENODATA (the stream ended early),
 * -errno; one line in err.
 */
int bo_seq_read(int fd, struct bo_seq_header *h, bo_seq_sink sink, void *arg, char *err,
		size_t errlen);

/*
 * The same, pulled a record at a time (bo_seq_read() is made of these): for
 * a reader that puts each record's bytes where it wants them (a staging
 * ring) and checks them on another thread. Start reads and checks the
 * header (r->h; bo_seq_reader_end() frees its BOs, also after a failure).
 * Next reads one record head: 0 and *rec (its place checked: the next piece
 * of one BO), 1 after the end record (count and CRC checked), -EPROTO,
 * -EBADMSG, -ENODATA, -errno. After a data record, data reads its rec->len
 * bytes into buf (unchecked) before the next call; bo_seq_check() then
 * checks them against the record's CRC-64 (-EBADMSG, naming the offset).
 */
struct bo_seq_reader {
	int fd;
	struct bo_seq_header h;
	struct bo_seq_writer pos; /* the order the records must follow (its fd unused) */
};

struct bo_seq_record {
	bool zero; /* a zero record: len zero bytes, none in the stream */
	uint64_t offset, len, crc;
};

int bo_seq_reader_start(struct bo_seq_reader *r, int fd, char *err, size_t errlen);
int bo_seq_reader_next(struct bo_seq_reader *r, struct bo_seq_record *rec, char *err,
		       size_t errlen);
int bo_seq_reader_data(struct bo_seq_reader *r, const struct bo_seq_record *rec, void *buf,
		       char *err, size_t errlen);
int bo_seq_check(const struct bo_seq_header *h, const struct bo_seq_record *rec, const void *buf,
		 char *err, size_t errlen);
void bo_seq_reader_end(struct bo_seq_reader *r);

#endif
