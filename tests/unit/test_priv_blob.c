// SPDX-License-Identifier: MIT
/*
 * The private-blob walker on blobs in the kernel's layout (docs/kfd-facts.md
 * section 5): the summary of a valid blob, both BO record sizes, and hostile
 * blobs (every truncation, trailing bytes, wrong counts, unknown object
 * types, queue sizes that overflow, oversized counts, random damage), which
 * must all be refused without reading outside the blob.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "images/priv_blob.h"

#define MAX_BLOB 16384

/* A blob under construction: counts as PROCESS_INFO would report them. */
struct blob {
	uint8_t *buf; /* exactly len bytes on the heap, so ASan sees any overread */
	size_t len;
	uint32_t n_devices, n_bos, n_objects, record;
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void reserve(struct blob *b, size_t n)
{
	assert_true(b->len + n <= MAX_BLOB);
	memset(b->buf + b->len, 0, n);
	b->len += n;
}

static void add_queue(struct blob *b, uint32_t type, uint32_t mqd, uint32_t ctl)
{
	uint8_t *q = b->buf + b->len;

	reserve(b, PRIV_QUEUE_FIXED + mqd + ctl);
	put32(q, PRIV_OBJ_QUEUE);
	put32(q + 68, type);
	put32(q + 108, ctl);
	put32(q + 112, mqd);
	b->n_objects++;
}

static void add_event(struct blob *b)
{
	uint8_t *q = b->buf + b->len;

	reserve(b, PRIV_EVENT_SIZE);
	put32(q, PRIV_OBJ_EVENT);
	b->n_objects++;
}

static void add_svm(struct blob *b)
{
	uint8_t *q = b->buf + b->len;

	reserve(b, 24 + 8 * (4 + (size_t)b->n_devices));
	put32(q, PRIV_OBJ_SVM);
	b->n_objects++;
}

/* 2 GPUs, 3 BOs; queues: compute, SDMA, SDMA over xGMI, compute; 2 events, 1 SVM range. */
static void build(struct blob *b, uint32_t record, uint32_t xnack)
{
	uint8_t *staging = malloc(MAX_BLOB);

	assert_non_null(staging);
	*b = (struct blob){.buf = staging, .n_devices = 2, .n_bos = 3, .record = record};
	reserve(b, 8 + 8 * 2 + 3 * (size_t)record);
	put32(b->buf, PRIV_BLOB_VERSION);
	put32(b->buf + 4, xnack);
	add_queue(b, 0, 2048, 4096);
	add_queue(b, 1, 256, 0);
	add_queue(b, 4, 256, 0);
	add_queue(b, 0, 2048, 100); /* odd size: later records are unaligned */
	add_event(b);
	add_event(b);
	add_svm(b);
	/* shrink to the exact size */
	b->buf = realloc(b->buf, b->len);
	assert_non_null(b->buf);
}

static int parse(const struct blob *b, size_t len, struct priv_blob_summary *s, char *err)
{
	return priv_blob_parse(b->buf, len, b->n_devices, b->n_bos, b->n_objects, b->record, s, err,
			       256);
}

/* The first len bytes of the blob in a heap block of exactly len bytes. */
static uint8_t *prefix(const struct blob *b, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, b->buf, len);
	return p;
}

static void test_valid(void **state)
{
	static const uint32_t records[] = {PRIV_BO_RECORD_NEW, PRIV_BO_RECORD_OLD};
	struct priv_blob_summary s;
	struct blob b;
	char err[256];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		build(&b, records[i], (uint32_t)i);
		assert_int_equal(parse(&b, b.len, &s, err), 0);
		assert_int_equal(s.version, PRIV_BLOB_VERSION);
		assert_int_equal(s.xnack_mode, i);
		assert_int_equal(s.bo_record_size, records[i]);
		assert_int_equal(s.queues, 4);
		assert_int_equal(s.compute_queues, 2);
		assert_int_equal(s.sdma_queues, 2);
		assert_int_equal(s.queue_bytes, 2048 + 4096 + 256 + 256 + 2048 + 100);
		assert_int_equal(s.events, 2);
		assert_int_equal(s.svm_ranges, 1);
		assert_int_equal(priv_blob_detect_bo_record(b.buf, b.len, 2, 3, 7, 0), records[i]);
		free(b.buf);
	}
}

static void test_no_objects_no_bos(void **state)
{
	uint8_t blob[8 + 8] = {0};
	struct priv_blob_summary s;

	(void)state;
	put32(blob, PRIV_BLOB_VERSION);
	assert_int_equal(
		priv_blob_parse(blob, sizeof(blob), 1, 0, 0, PRIV_BO_RECORD_NEW, &s, NULL, 0), 0);
	assert_int_equal(s.queues + s.events + s.svm_ranges, 0);
	/* without BOs both record sizes fit: the fallback decides */
	assert_int_equal(priv_blob_detect_bo_record(blob, sizeof(blob), 1, 0, 0, 80), 80);
	assert_int_equal(priv_blob_detect_bo_record(blob, sizeof(blob), 1, 0, 0, 272), 272);
	assert_int_equal(priv_blob_detect_bo_record(blob, sizeof(blob), 2, 0, 0, 272), 0);
}

static void test_every_truncation(void **state)
{
	struct blob b;
	char err[256];

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	for (size_t len = 0; len < b.len; len++) {
		uint8_t *p = prefix(&b, len);

		err[0] = 0;
		assert_int_equal(priv_blob_parse(p, len, b.n_devices, b.n_bos, b.n_objects,
						 b.record, NULL, err, sizeof(err)),
				 -EINVAL);
		assert_true(err[0] != 0);
		/* zeroed BO records may walk as empty queues with 80-byte records: not 272 */
		assert_int_not_equal(priv_blob_detect_bo_record(p, len, 2, 3, b.n_objects, 0),
				     PRIV_BO_RECORD_NEW);
		free(p);
	}
	free(b.buf);
}

static void test_trailing_bytes(void **state)
{
	struct blob b;
	uint8_t *p;
	char err[256];

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	p = calloc(1, b.len + 8);
	assert_non_null(p);
	memcpy(p, b.buf, b.len);
	assert_int_equal(
		priv_blob_parse(p, b.len + 8, 2, 3, b.n_objects, b.record, NULL, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "left after"));
	free(p);
	free(b.buf);
}

static void test_wrong_counts(void **state)
{
	struct blob b;
	char err[256];

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	assert_int_equal(priv_blob_parse(b.buf, b.len, 2, 3, b.n_objects + 1, b.record, NULL, err,
					 sizeof(err)),
			 -EINVAL);
	assert_int_equal(priv_blob_parse(b.buf, b.len, 2, 3, b.n_objects - 1, b.record, NULL, err,
					 sizeof(err)),
			 -EINVAL);
	assert_int_equal(
		priv_blob_parse(b.buf, b.len, 3, 3, b.n_objects, b.record, NULL, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(
		priv_blob_parse(b.buf, b.len, 2, 2, b.n_objects, b.record, NULL, err, sizeof(err)),
		-EINVAL);
	/* the other kernel's record size, and one no kernel uses */
	assert_int_equal(priv_blob_parse(b.buf, b.len, 2, 3, b.n_objects, PRIV_BO_RECORD_OLD, NULL,
					 err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
		priv_blob_parse(b.buf, b.len, 2, 3, b.n_objects, 100, NULL, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "neither"));
	free(b.buf);
}

static void test_oversized_counts(void **state)
{
	struct blob b;
	char err[256];

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	/* 64-bit arithmetic: no wrap-around makes a huge count look small */
	assert_int_equal(priv_blob_parse(b.buf, b.len, UINT32_MAX, 3, b.n_objects, b.record, NULL,
					 err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(priv_blob_parse(b.buf, b.len, 2, UINT32_MAX, b.n_objects, b.record, NULL,
					 err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "too short"));
	assert_int_equal(
		priv_blob_parse(b.buf, b.len, 2, 3, UINT32_MAX, b.record, NULL, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(priv_blob_parse(NULL, 0, 0, 0, 0, b.record, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(priv_blob_parse(NULL, 16, 1, 0, 0, b.record, NULL, err, sizeof(err)),
			 -EINVAL);
	free(b.buf);
}

/* Offset of the first object (the first queue). */
static size_t first_object(const struct blob *b)
{
	return 8 + 8 * (size_t)b->n_devices + (size_t)b->n_bos * b->record;
}

static void test_unknown_object_type(void **state)
{
	struct blob b;
	char err[256];

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	put32(b.buf + first_object(&b), 3);
	assert_int_equal(parse(&b, b.len, NULL, err), -EINVAL);
	assert_non_null(strstr(err, "unknown type 3"));
	free(b.buf);
}

static void test_queue_sizes(void **state)
{
	static const uint32_t bad[][2] = {
		{UINT32_MAX, 0},
		{0, UINT32_MAX},
		{UINT32_MAX, UINT32_MAX},
		{PRIV_MAX_QUEUE_SIZE, 1},
		{PRIV_MAX_QUEUE_SIZE - 1, 0}, /* fits the cap, not the blob */
	};
	struct blob b;
	char err[256];
	size_t q;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		build(&b, PRIV_BO_RECORD_NEW, 0);
		q = first_object(&b);
		put32(b.buf + q + 112, bad[i][0]);
		put32(b.buf + q + 108, bad[i][1]);
		assert_int_equal(parse(&b, b.len, NULL, err), -EINVAL);
		assert_non_null(strstr(err, "overruns"));
		free(b.buf);
	}
}

/* Random damage anywhere: parsed or refused, never outside the blob (ASan). */
static void test_random_damage(void **state)
{
	uint64_t seed = 0x1234567;
	struct blob b;
	size_t refused = 0;

	(void)state;
	build(&b, PRIV_BO_RECORD_NEW, 0);
	for (int i = 0; i < 4000; i++) {
		uint8_t *p = prefix(&b, b.len);

		for (int k = 0; k < 1 + i % 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			p[(seed >> 33) % b.len] ^= (uint8_t)(1u << ((seed >> 20) % 8));
		}
		refused +=
			priv_blob_parse(p, b.len, 2, 3, b.n_objects, b.record, NULL, NULL, 0) != 0;
		free(p);
	}
	print_message("# random damage: %zu of 4000 refused\n", refused);
	assert_true(refused > 0);
	free(b.buf);
}

static void test_release(void **state)
{
	static const struct {
		const char *release;
		uint32_t record;
	} cases[] = {
		{"6.12.48+deb13-amd64", 272},
		{"6.5.0", 272},
		{"6.4.16-1-generic", 80},
		{"5.15.0-91-generic", 80},
		{"6.1.0-28-amd64", 80},
		{"7.0.1", 272},
		{"10.2", 272},
		{"6.18.44-fc-v595", 272},
		{"", 0},
		{"abc", 0},
		{"6", 0},
		{"6.", 0},
		{".5", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(priv_bo_record_for_release(cases[i].release), cases[i].record);
	assert_int_equal(priv_bo_record_for_release(NULL), 0);
}

/*
 * The restore probe's arithmetic (one BO, no objects): the sizes KFD reports
 * for each layout give that layout back, the sizes a blob of the other
 * layout (or a broken count) would have give 0.
 */
static void test_record_from_info(void **state)
{
	static const uint32_t records[] = {PRIV_BO_RECORD_OLD, PRIV_BO_RECORD_NEW};
	uint8_t blob[8 + 8 * 8 + 2 * 272] = {0};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		uint32_t rec = records[i];

		for (uint32_t devs = 0; devs <= 8; devs++) {
			uint64_t one = 8 + 8ull * devs + rec;

			assert_int_equal(priv_blob_bo_record_from_info(one, devs, 1, 0), rec);
			assert_int_equal(priv_blob_bo_record_from_info(one + rec, devs, 2, 0), rec);
			/* what priv_blob_parse accepts for that size and those counts */
			assert_int_equal(priv_blob_parse(blob, one, devs, 1, 0, rec, NULL, NULL, 0),
					 0);
			/* the device count is part of the head: one more or less is refused */
			assert_int_equal(priv_blob_bo_record_from_info(one, devs + 1, 1, 0), 0);
			assert_int_equal(priv_blob_bo_record_from_info(one + 8, devs, 1, 0), 0);
			assert_int_equal(priv_blob_bo_record_from_info(one - 1, devs, 1, 0), 0);
			/* two BOs of one size each do not divide into records */
			assert_int_equal(priv_blob_bo_record_from_info(one + 1, devs, 2, 0), 0);
			/* objects have sizes the counts do not tell */
			assert_int_equal(priv_blob_bo_record_from_info(one, devs, 1, 1), 0);
			/* no BO: nothing to measure */
			assert_int_equal(priv_blob_bo_record_from_info(one, devs, 0, 0), 0);
		}
	}
	/* only 80 and 272: 176 (44 GPU ids) is not a layout */
	assert_int_equal(priv_blob_bo_record_from_info(8 + 16 + 176, 2, 1, 0), 0);
	assert_int_equal(priv_blob_bo_record_from_info(8 + 16 + 2 * 80, 2, 1, 0), 0);
	assert_int_equal(priv_blob_bo_record_from_info(0, 0, 1, 0), 0);
	assert_int_equal(priv_blob_bo_record_from_info(7, 0, 1, 0), 0);
	assert_int_equal(priv_blob_bo_record_from_info(UINT64_MAX, UINT32_MAX, 1, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_no_objects_no_bos),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_wrong_counts),
		cmocka_unit_test(test_oversized_counts),
		cmocka_unit_test(test_unknown_object_type),
		cmocka_unit_test(test_queue_sizes),
		cmocka_unit_test(test_random_damage),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_record_from_info),
	};

	return cmocka_run_group_tests_name("priv_blob", tests, NULL, NULL);
}
