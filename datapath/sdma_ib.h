/* SPDX-License-Identifier: MIT */
/*
 * SDMA indirect buffers (IBs) for copying BO contents: the packets the
 * plugin's SDMA copy engine submits through libdrm_amdgpu (amdgpu_cs_submit
 * on AMDGPU_HW_IP_DMA).
 *
 * Formats (docs: docs/sdma-facts.md section 4; the kernel's
 * vega10_, navi10_ and sdma_v6_0_0_pkt_open.h): every generation from SDMA
 * v4 (Vega, MI50 to MI350) to v7 (RDNA4) uses the same header (op bits 7:0,
 * sub_op bits 15:8) and the same 7-dword COPY_LINEAR:
 *   dw0 header op 1 sub_op 0 | dw1 count = bytes - 1 | dw2 0 (no swap, default
 *   cache policy) | dw3-4 source GPU VA lo, hi | dw5-6 destination lo, hi
 * The count is bytes - 1 on v4 and later (the byte count itself only on
 * CIK/VI, which are refused here). The count field is 22 bits wide on v4 and
 * v5, 30 on v6 and v7, but every kernel from v4 on caps one packet at 4 MiB
 * (copy_max_bytes 0x400000), and so does this builder, on all generations.
 * CONST_FILL for zeroing (5 dwords: header op 11 with fillsize 0, as the
 * kernel clears VRAM with it; destination lo, hi; data 0; count = bytes - 1,
 * at most 4 MiB: the restore writes all-zero chunks without moving them) and
 * FENCE (4 dwords: header op 5, address lo, hi (4-byte aligned), value).
 * Padding: NOP dwords (0) up to a multiple of 8 dwords, as the kernel pads
 * its own IBs; a plain NOP is right whether or not the firmware knows burst
 * NOPs.
 *
 * The builder writes into a buffer the caller owns (the CPU mapping of the
 * IB's BO). Every append either fits whole or appends nothing and returns
 * -ENOSPC, so a full IB is submitted and the rest goes into the next one.
 * Errors are negative errno: -EINVAL for a 0-byte request or a misaligned
 * fence address, -EOVERFLOW for a range that wraps the 64-bit address space,
 * -ENOSPC for a buffer too small, -EOPNOTSUPP for a GPU older than SDMA v4.
 */
#ifndef AMDGPU_CRIU_SDMA_IB_H
#define AMDGPU_CRIU_SDMA_IB_H

#include <stdint.h>

enum sdma_gen {
	SDMA_GEN_V4 = 4, /* gfx9: Vega10/12/20, MI50/60, MI100, MI200, MI300, MI350 */
	SDMA_GEN_V5 = 5, /* gfx10: RDNA1, RDNA2 */
	SDMA_GEN_V6 = 6, /* gfx11: RDNA3 */
	SDMA_GEN_V7 = 7, /* gfx12: RDNA4 */
};

#define SDMA_OP_NOP	       0u
#define SDMA_OP_COPY	       1u
#define SDMA_OP_FENCE	       5u
#define SDMA_OP_CONST_FILL     11u
#define SDMA_SUBOP_COPY_LINEAR 0u

#define SDMA_MAX_BYTES		0x400000u /* one COPY_LINEAR or CONST_FILL */
#define SDMA_COPY_LINEAR_DWORDS 7u
#define SDMA_CONST_FILL_DWORDS	5u
#define SDMA_FENCE_DWORDS	4u
#define SDMA_IB_ALIGN_DWORDS	8u

/* The packets above have one layout from v4 to v7: an IB needs no generation. */
struct sdma_ib {
	uint32_t *dw; /* the caller's buffer */
	uint32_t cap; /* its size in dwords */
	uint32_t len; /* dwords written so far */
};

/*
 * The SDMA generation of a GPU from its KFD gfx_target_version (major *
 * 10000 + minor * 100 + stepping, e.g. 90010 for gfx90a): whether this
 * builder's packets are the GPU's. -EOPNOTSUPP below gfx9 (SDMA v2/v3 count
 * bytes, not bytes - 1) and above gfx12 (a format not known here).
 */
int sdma_gen_from_gfx(uint32_t gfx_target_version, enum sdma_gen *gen);

/* An empty IB writing into buf[0 .. cap_dwords) (NULL: no room at all). */
void sdma_ib_init(struct sdma_ib *ib, uint32_t *buf, uint32_t cap_dwords);

/* Dwords that sdma_ib_copy() or sdma_ib_zero() of `bytes` appends (0 for 0). */
uint64_t sdma_ib_copy_dwords(uint64_t bytes);
uint64_t sdma_ib_zero_dwords(uint64_t bytes);

/* COPY_LINEAR packets copying `bytes` from GPU VA `src` to `dst`, 4 MiB each. */
int sdma_ib_copy(struct sdma_ib *ib, uint64_t dst, uint64_t src, uint64_t bytes);

/* CONST_FILL packets writing zeros over `bytes` at `dst`, 4 MiB each. */
int sdma_ib_zero(struct sdma_ib *ib, uint64_t dst, uint64_t bytes);

/* A FENCE writing `value` to `addr` (4-byte aligned) once the packets before it are done. */
int sdma_ib_fence(struct sdma_ib *ib, uint64_t addr, uint32_t value);

/* NOPs up to the next multiple of 8 dwords (an empty IB stays empty). */
int sdma_ib_pad(struct sdma_ib *ib);

#endif
