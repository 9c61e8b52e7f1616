// SPDX-License-Identifier: MIT
/*
 * SDMA IB builder: every packet's dwords against the layouts of
 * docs/sdma-facts.md section 4 (COPY_LINEAR 4.3, CONST_FILL
 * 4.4, FENCE 4.5, NOP padding 4.8), the 4 MiB split, odd sizes, and the
 * requests that must append nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "datapath/sdma_ib.h"

#define MIB    (1024u * 1024u)
#define SRC    0x0000123456789000ull /* above 32 bits: both halves matter */
#define DST    0x00007FFF00001000ull
#define CAP    256u
#define CANARY 0xDEADBEEFu

struct fixture {
	uint32_t buf[CAP];
	struct sdma_ib ib;
};

static int setup(void **state)
{
	static struct fixture f;

	for (size_t i = 0; i < CAP; i++)
		f.buf[i] = CANARY;
	sdma_ib_init(&f.ib, f.buf, CAP);
	*state = &f;
	return 0;
}

/* the 7 dwords of a COPY_LINEAR of n bytes from src to dst, as section 4.3 lays them out */
static void expect_copy(const uint32_t *dw, uint64_t dst, uint64_t src, uint32_t n)
{
	const uint32_t want[7] = {
		0x00000001, /* op COPY (1), sub_op LINEAR (0) */
		n - 1,	    /* count: bytes - 1 on SDMA v4 and later */
		0,	    /* no endian swap */
		(uint32_t)src,
		(uint32_t)(src >> 32),
		(uint32_t)dst,
		(uint32_t)(dst >> 32),
	};

	for (int i = 0; i < 7; i++)
		if (dw[i] != want[i])
			fail_msg("COPY_LINEAR dword %d: 0x%08x, want 0x%08x", i, dw[i], want[i]);
}

static void generations(void **state)
{
	static const struct {
		uint32_t gfx;
		int ret;
		enum sdma_gen gen;
	} cases[] = {
		{90000, 0, SDMA_GEN_V4},  /* Vega10 */
		{90008, 0, SDMA_GEN_V4},  /* MI100 */
		{90010, 0, SDMA_GEN_V4},  /* MI210 (gfx90a) */
		{90402, 0, SDMA_GEN_V4},  /* MI300X (gfx942) */
		{90500, 0, SDMA_GEN_V4},  /* MI350 (gfx950) */
		{100100, 0, SDMA_GEN_V5}, /* RDNA1 */
		{100300, 0, SDMA_GEN_V5}, /* RDNA2 */
		{110000, 0, SDMA_GEN_V6}, /* RDNA3 */
		{120001, 0, SDMA_GEN_V7}, /* RDNA4 */
		{80003, -EOPNOTSUPP, 0},  /* gfx803: SDMA v3 counts bytes */
		{70002, -EOPNOTSUPP, 0},  {0, -EOPNOTSUPP, 0}, {130000, -EOPNOTSUPP, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sdma_gen gen = 0;

		assert_int_equal(sdma_gen_from_gfx(cases[i].gfx, &gen), cases[i].ret);
		if (!cases[i].ret)
			assert_int_equal(gen, cases[i].gen);
	}
}

static void copy_one_page(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, 4096), 0);
	assert_int_equal(f->ib.len, 7);
	expect_copy(f->buf, DST, SRC, 4096);
	assert_int_equal(f->buf[1], 0xFFF); /* not 0x1000: the upstream off-by-one */
	assert_int_equal(f->buf[7], CANARY);
}

static void copy_splits_at_4_mib(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, 4 * MIB), 0);
	assert_int_equal(f->ib.len, 7);
	expect_copy(f->buf, DST, SRC, 4 * MIB);
	assert_int_equal(f->buf[1], 0x3FFFFF); /* the largest count of a 22-bit field */

	sdma_ib_init(&f->ib, f->buf, CAP);
	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, 4 * MIB + 1), 0);
	assert_int_equal(f->ib.len, 14);
	expect_copy(f->buf, DST, SRC, 4 * MIB);
	expect_copy(f->buf + 7, DST + 4 * MIB, SRC + 4 * MIB, 1);
	assert_int_equal(f->buf[8], 0);
}

static void copy_odd_sizes(void **state)
{
	struct fixture *f = *state;
	const uint64_t bytes = 12ull * MIB + 3;

	assert_int_equal(sdma_ib_copy(&f->ib, DST + 1, SRC + 3, 1), 0);
	expect_copy(f->buf, DST + 1, SRC + 3, 1);
	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, bytes), 0);
	assert_int_equal(f->ib.len, 7 + 4 * 7);
	for (int i = 0; i < 3; i++)
		expect_copy(f->buf + 7 + 7 * i, DST + i * 4ull * MIB, SRC + i * 4ull * MIB,
			    4 * MIB);
	expect_copy(f->buf + 28, DST + 12ull * MIB, SRC + 12ull * MIB, 3);
	assert_int_equal(sdma_ib_copy_dwords(bytes), 28);
	assert_int_equal(sdma_ib_copy_dwords(0), 0);
	assert_int_equal(sdma_ib_copy_dwords(1), 7);
	assert_int_equal(sdma_ib_copy_dwords(4 * MIB), 7);
}

/* a copy whose packets cross the 4 GiB line of the address: the high dword carries */
static void copy_crosses_32_bits(void **state)
{
	struct fixture *f = *state;
	const uint64_t src = 0xFFFFF000ull, dst = 0x1FFE00000ull;

	assert_int_equal(sdma_ib_copy(&f->ib, dst, src, 4 * MIB + 4096), 0);
	expect_copy(f->buf + 7, dst + 4 * MIB, src + 4 * MIB, 4096);
	assert_int_equal(f->buf[7 + 4], 1); /* source high dword of the second packet */
}

static void refused_requests_append_nothing(void **state)
{
	struct fixture *f = *state;
	uint32_t small[13];
	struct sdma_ib ib;

	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, 0), -EINVAL);
	assert_int_equal(sdma_ib_copy(&f->ib, DST, UINT64_MAX - 10, 100), -EOVERFLOW);
	assert_int_equal(sdma_ib_copy(&f->ib, UINT64_MAX - 10, SRC, 100), -EOVERFLOW);
	assert_int_equal(sdma_ib_zero(&f->ib, DST, 0), -EINVAL);
	assert_int_equal(sdma_ib_zero(&f->ib, UINT64_MAX, 2), -EOVERFLOW);
	assert_int_equal(sdma_ib_fence(&f->ib, DST + 2, 1), -EINVAL);
	assert_int_equal(f->ib.len, 0);
	assert_int_equal(f->buf[0], CANARY);
	/* a range that ends exactly at 2^64 does not wrap */
	assert_int_equal(sdma_ib_copy(&f->ib, UINT64_MAX - 99, SRC, 100), 0);

	/* 13 dwords: a 4 MiB + 1 copy (14) does not fit and leaves nothing */
	memset(small, 0, sizeof(small));
	sdma_ib_init(&ib, small, 13);
	assert_int_equal(sdma_ib_copy(&ib, DST, SRC, 4 * MIB + 1), -ENOSPC);
	assert_int_equal(ib.len, 0);
	assert_int_equal(sdma_ib_copy(&ib, DST, SRC, 4 * MIB), 0);
	assert_int_equal(sdma_ib_zero(&ib, DST, 4096), 0);
	assert_int_equal(ib.len, 12);
	assert_int_equal(sdma_ib_fence(&ib, DST, 1), -ENOSPC);
	assert_int_equal(ib.len, 12);

	sdma_ib_init(&ib, NULL, 64);
	assert_int_equal(sdma_ib_copy(&ib, DST, SRC, 1), -ENOSPC);
}

static void zero_fill(void **state)
{
	struct fixture *f = *state;
	const uint64_t dst = 0x0000000400000000ull;

	assert_int_equal(sdma_ib_zero(&f->ib, dst + 8, 4 * MIB + 5), 0);
	assert_int_equal(f->ib.len, 10);
	assert_int_equal(sdma_ib_zero_dwords(4 * MIB + 5), 10);
	/* header op CONST_FILL (11), fillsize 0; dst lo, hi; data 0; count bytes - 1 */
	assert_int_equal(f->buf[0], 0x0000000B);
	assert_int_equal(f->buf[1], 8);
	assert_int_equal(f->buf[2], 4);
	assert_int_equal(f->buf[3], 0);
	assert_int_equal(f->buf[4], 0x3FFFFF);
	assert_int_equal(f->buf[5], 0x0000000B);
	assert_int_equal(f->buf[6], 4 * MIB + 8);
	assert_int_equal(f->buf[7], 4);
	assert_int_equal(f->buf[8], 0);
	assert_int_equal(f->buf[9], 4);
}

static void fence_and_pad(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sdma_ib_pad(&f->ib), 0); /* empty stays empty */
	assert_int_equal(f->ib.len, 0);
	assert_int_equal(sdma_ib_copy(&f->ib, DST, SRC, 64), 0);
	assert_int_equal(sdma_ib_fence(&f->ib, 0x0000000200000040ull, 0xCAFE0001), 0);
	assert_int_equal(f->ib.len, 11);
	assert_int_equal(f->buf[7], 0x00000005); /* op FENCE */
	assert_int_equal(f->buf[8], 0x40);
	assert_int_equal(f->buf[9], 2);
	assert_int_equal(f->buf[10], 0xCAFE0001);
	assert_int_equal(sdma_ib_pad(&f->ib), 0);
	assert_int_equal(f->ib.len, 16);
	for (int i = 11; i < 16; i++)
		assert_int_equal(f->buf[i], 0); /* plain NOPs */
	assert_int_equal(f->buf[16], CANARY);
	assert_int_equal(sdma_ib_pad(&f->ib), 0); /* aligned: nothing added */
	assert_int_equal(f->ib.len, 16);
}

static void pad_needs_room(void **state)
{
	uint32_t buf[7];
	struct sdma_ib ib;

	(void)state;
	sdma_ib_init(&ib, buf, 7);
	assert_int_equal(sdma_ib_copy(&ib, DST, SRC, 8), 0);
	assert_int_equal(sdma_ib_pad(&ib), -ENOSPC);
	assert_int_equal(ib.len, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(generations),
		cmocka_unit_test_setup(copy_one_page, setup),
		cmocka_unit_test_setup(copy_splits_at_4_mib, setup),
		cmocka_unit_test_setup(copy_odd_sizes, setup),
		cmocka_unit_test_setup(copy_crosses_32_bits, setup),
		cmocka_unit_test_setup(refused_requests_append_nothing, setup),
		cmocka_unit_test_setup(zero_fill, setup),
		cmocka_unit_test_setup(fence_and_pad, setup),
		cmocka_unit_test(pad_needs_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
