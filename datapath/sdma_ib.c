// SPDX-License-Identifier: MIT
/*
 * SDMA IB builder: packet layouts and the splitting rule are in sdma_ib.h.
 */
#include "datapath/sdma_ib.h"

#include <errno.h>
#include <stdbool.h>

#define SDMA_HEADER(op, sub_op) ((uint32_t)(op) | (uint32_t)(sub_op) << 8)

int sdma_gen_from_gfx(uint32_t gfx_target_version, enum sdma_gen *gen)
{
	switch (gfx_target_version / 10000) {
	case 9:
		*gen = SDMA_GEN_V4;
		return 0;
	case 10:
		*gen = SDMA_GEN_V5;
		return 0;
	case 11:
		*gen = SDMA_GEN_V6;
		return 0;
	case 12:
		*gen = SDMA_GEN_V7;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

void sdma_ib_init(struct sdma_ib *ib, uint32_t *buf, uint32_t cap_dwords)
{
	ib->dw = buf;
	ib->cap = buf ? cap_dwords : 0;
	ib->len = 0;
}

static uint64_t packets(uint64_t bytes)
{
	return bytes / SDMA_MAX_BYTES + (bytes % SDMA_MAX_BYTES != 0);
}

uint64_t sdma_ib_copy_dwords(uint64_t bytes)
{
	return packets(bytes) * SDMA_COPY_LINEAR_DWORDS;
}

uint64_t sdma_ib_zero_dwords(uint64_t bytes)
{
	return packets(bytes) * SDMA_CONST_FILL_DWORDS;
}

/* the range [addr, addr + bytes) passes 2^64 (bytes > 0) */
static bool wraps(uint64_t addr, uint64_t bytes)
{
	return addr + bytes - 1 < addr;
}

static bool has_room(const struct sdma_ib *ib, uint64_t need)
{
	return need <= (uint64_t)(ib->cap - ib->len);
}

static void put(struct sdma_ib *ib, uint32_t v)
{
	ib->dw[ib->len++] = v;
}

int sdma_ib_copy(struct sdma_ib *ib, uint64_t dst, uint64_t src, uint64_t bytes)
{
	if (!bytes)
		return -EINVAL;
	if (wraps(dst, bytes) || wraps(src, bytes))
		return -EOVERFLOW;
	if (!has_room(ib, sdma_ib_copy_dwords(bytes)))
		return -ENOSPC;
	while (bytes) {
		uint32_t n = bytes > SDMA_MAX_BYTES ? SDMA_MAX_BYTES : (uint32_t)bytes;

		put(ib, SDMA_HEADER(SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR));
		put(ib, n - 1);
		put(ib, 0);
		put(ib, (uint32_t)src);
		put(ib, (uint32_t)(src >> 32));
		put(ib, (uint32_t)dst);
		put(ib, (uint32_t)(dst >> 32));
		src += n;
		dst += n;
		bytes -= n;
	}
	return 0;
}

int sdma_ib_zero(struct sdma_ib *ib, uint64_t dst, uint64_t bytes)
{
	if (!bytes)
		return -EINVAL;
	if (wraps(dst, bytes))
		return -EOVERFLOW;
	if (!has_room(ib, sdma_ib_zero_dwords(bytes)))
		return -ENOSPC;
	while (bytes) {
		uint32_t n = bytes > SDMA_MAX_BYTES ? SDMA_MAX_BYTES : (uint32_t)bytes;

		put(ib, SDMA_HEADER(SDMA_OP_CONST_FILL, 0));
		put(ib, (uint32_t)dst);
		put(ib, (uint32_t)(dst >> 32));
		put(ib, 0);
		put(ib, n - 1);
		dst += n;
		bytes -= n;
	}
	return 0;
}

int sdma_ib_fence(struct sdma_ib *ib, uint64_t addr, uint32_t value)
{
	if (addr & 3)
		return -EINVAL;
	if (wraps(addr, 4))
		return -EOVERFLOW;
	if (!has_room(ib, SDMA_FENCE_DWORDS))
		return -ENOSPC;
	put(ib, SDMA_HEADER(SDMA_OP_FENCE, 0));
	put(ib, (uint32_t)addr);
	put(ib, (uint32_t)(addr >> 32));
	put(ib, value);
	return 0;
}

int sdma_ib_pad(struct sdma_ib *ib)
{
	uint32_t pad =
		(SDMA_IB_ALIGN_DWORDS - ib->len % SDMA_IB_ALIGN_DWORDS) % SDMA_IB_ALIGN_DWORDS;

	if (!has_room(ib, pad))
		return -ENOSPC;
	while (pad--)
		put(ib, SDMA_HEADER(SDMA_OP_NOP, 0));
	return 0;
}
