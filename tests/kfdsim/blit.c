// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: ROCclr's buffer blit kernels carried out as the copies and fills
 * they perform. Shader code cannot run here; two kernels of ROCclr's blit
 * program (HIP 6.4's libamdhip64, the OpenCL C source it builds with comgr
 * at start, ROCm/clr rocclr/device/blitcl.cpp; their arguments are set in
 * rocclr/device/rocm/rocblit.cpp) are simple enough to reproduce exactly
 * from their arguments and grid, and HIP uses them for every linear copy
 * and fill when it runs without SDMA queues (HSA_ENABLE_SDMA=0 and
 * GPU_FORCE_BLIT_COPY_SIZE, tests/kfdsim/README.md):
 *
 * __amd_rocclr_copyBuffer(uchar *src, uchar *dst, ulong size,
 *     uint remainder, uint aligned_size, ulong end_ptr, uint next_chunk)
 *   kernarg: src 0, dst 8, size 16, remainder 24, aligned_size 28,
 *   end_ptr 32, next_chunk 40. Work-item id (0 <= id < grid x) copies the
 *   elements id, id + next_chunk, ... of aligned_size bytes (16 if
 *   aligned_size is 16, else 4) while &dst[element] < end_ptr; work-item 0
 *   then copies the bytes [size - remainder, size) if remainder != 0.
 *
 * __amd_rocclr_fillBufferAligned(void *buf, uchar *pattern,
 *     uint pattern_size, uint alignment, ulong end_ptr, uint next_chunk)
 *   kernarg: buf 0, pattern 8, pattern_size 16, alignment 20, end_ptr 24,
 *   next_chunk 32. Elements are `alignment` bytes (16, 8, 4, 2, else 1);
 *   work-item id starts at element (uint)(id * pattern_size) and, while
 *   that element's address < end_ptr, writes the pattern_size elements of
 *   the pattern there and moves on by next_chunk elements.
 *
 * Both run as one-dimensional grids without a global offset (ROCclr's
 * NDRange for them has none). Anything else, a grid of more dimensions, a
 * kernarg segment smaller than the arguments, a loop that would never end
 * (next_chunk 0), an end pointer beyond any GPU VA, is not modelled: the
 * dispatch ends in aql.c's queue error, as every other kernel's does. The
 * order of the bytes written differs from a GPU's (which has none
 * defined); overlapping source and destination are copied page by page.
 *
 * Fault injection "blit corrupt ERRNO [COUNT [SKIP]]" flips the first byte
 * a modelled dispatch wrote (a test must see a wrong result caught).
 * debugfs kfdsim/blit: "copies N fills N bytes N corrupted N".
 */
#include <linux/kernel.h>
#include <linux/highmem.h>
#include <linux/atomic.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include "kfdsim.h"

#define COPY_KERNEL		"__amd_rocclr_copyBuffer.kd"
#define FILL_KERNEL		"__amd_rocclr_fillBufferAligned.kd"
#define COPY_ARGS_BYTES		44
#define FILL_ARGS_BYTES		36
#define KD_KERNARG_SIZE		8	/* kernel descriptor: kernarg_size (u32) */
#define VA_LIMIT		BIT_ULL(57)	/* above any GPU VA */
#define PATTERN_MAX		4096
#define FILL_STEPS_MAX		(1U << 22)	/* work-item loop steps of a general fill */

static atomic64_t blit_copies, blit_fills, blit_bytes, blit_corrupted;
static DEFINE_RATELIMIT_STATE(blit_log_rs, 60 * HZ, 4);

struct copy_args {
	u64 src, dst, size;
	u32 remainder, aligned_size;
	u64 end_ptr;
	u32 next_chunk;
} __packed;

struct fill_args {
	u64 buf, pattern;
	u32 pattern_size, alignment;
	u64 end_ptr;
	u32 next_chunk;
} __packed;

/* @len bytes at GPU VA @va to or from @buf; the caller reports a fault */
static int gpu_xfer(struct kfdsim_queue *q, u64 va, void *buf, u32 len, bool write)
{
	return kfdsim_queue_va_access(q, va, buf, len, write, true);
}

/* @len bytes from GPU VA @src to GPU VA @dst, page by page */
static int gpu_copy(struct kfdsim_queue *q, u64 dst, u64 src, u64 len)
{
	struct page *sp, *dp;
	u32 soff, doff, sn, dn, n;
	char *s, *d;
	int ret;

	while (len) {
		ret = kfdsim_queue_va_page(q, src, false, &sp, &soff, &sn);
		if (ret)
			return ret;
		ret = kfdsim_queue_va_page(q, dst, true, &dp, &doff, &dn);
		if (ret) {
			put_page(sp);
			return ret;
		}
		n = min3(sn, dn, (u32)min_t(u64, len, PAGE_SIZE));
		s = kmap_local_page(sp);
		d = kmap_local_page(dp);
		memmove(d + doff, s + soff, n);
		kunmap_local(d);
		kunmap_local(s);
		set_page_dirty_lock(dp);
		put_page(dp);
		put_page(sp);
		src += n;
		dst += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/* @len bytes at GPU VA @dst: the @plen-byte pattern repeated, from @phase */
static int gpu_fill(struct kfdsim_queue *q, u64 dst, u64 len, const u8 *pat, u32 plen, u32 phase)
{
	struct page *page;
	u32 off, n, i;
	u8 *d;
	int ret;

	while (len) {
		ret = kfdsim_queue_va_page(q, dst, true, &page, &off, &n);
		if (ret)
			return ret;
		n = (u32)min_t(u64, n, len);
		d = kmap_local_page(page);
		for (i = 0; i < n; i++) {
			d[off + i] = pat[phase];
			if (++phase == plen)
				phase = 0;
		}
		kunmap_local(d);
		set_page_dirty_lock(page);
		put_page(page);
		dst += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/* "blit corrupt": the first byte written, flipped */
static int maybe_corrupt(struct kfdsim_queue *q, u64 va)
{
	u8 b;
	int ret;

	if (!kfdsim_inject("blit", "corrupt"))
		return 0;
	ret = gpu_xfer(q, va, &b, 1, false);
	b ^= 0xff;
	if (!ret)
		ret = gpu_xfer(q, va, &b, 1, true);
	if (!ret)
		atomic64_inc(&blit_corrupted);
	pr_info(KFDSIM_NAME ": gpu%u: blit: byte at 0x%llx flipped (fault injection)\n",
		q->pdd->dev->gpu_index, va);
	return ret;
}

/* elements of @esize bytes from @base with an address below @end */
static u64 elements_below(u64 base, u64 end, u32 esize)
{
	return end > base ? div_u64(end - base + esize - 1, esize) : 0;
}

static int run_copy(struct kfdsim_queue *q, const struct copy_args *a, u32 grid,
		    const char **why)
{
	u32 es = a->aligned_size == 16 ? 16 : 4;
	u64 n = elements_below(a->dst, a->end_ptr, es), nc = a->next_chunk, j, first = 0;
	u64 written = 0, seg, start;
	bool any = false;
	int ret = 0;

	if (a->end_ptr >= VA_LIMIT || a->dst >= VA_LIMIT || a->src >= VA_LIMIT) {
		*why = "blit copy with an address beyond any GPU VA: not modelled";
		return -EINVAL;
	}
	if (grid && n && !nc) {
		*why = "blit copy with next_chunk 0 would never end: not modelled";
		return -EINVAL;
	}
	if (grid && n && nc <= grid) {
		/* every residue of next_chunk has a work-item: all n elements */
		ret = gpu_copy(q, a->dst, a->src, n * es);
		written = n * es;
		any = true;
	} else if (grid && n) {
		/* strides of next_chunk elements, the first grid ones of each */
		for (j = 0; !ret && j < n; j += nc) {
			seg = min_t(u64, grid, n - j);
			ret = gpu_copy(q, a->dst + j * es, a->src + j * es, seg * es);
			written += seg * es;
			any = true;
		}
	}
	/* work-item 0: the remainder bytes */
	if (!ret && grid && a->remainder && a->remainder <= a->size) {
		start = a->size - a->remainder;
		ret = gpu_copy(q, a->dst + start, a->src + start, a->remainder);
		if (!any)
			first = start;
		written += a->remainder;
		any = true;
	}
	if (!ret && any)
		ret = maybe_corrupt(q, a->dst + first);
	if (ret) {
		*why = "GPU VM fault in a blit copy";
		return ret;
	}
	atomic64_inc(&blit_copies);
	atomic64_add(written, &blit_bytes);
	if (__ratelimit(&blit_log_rs))
		pr_info(KFDSIM_NAME ": gpu%u: AQL queue %u: %s carried out: %llu bytes 0x%llx -> 0x%llx (grid %u)\n",
			q->pdd->dev->gpu_index, q->id, COPY_KERNEL, written, a->src, a->dst, grid);
	return 0;
}

/* the general case of a fill: each work-item's loop, step by step */
static int fill_each(struct kfdsim_queue *q, const struct fill_args *a, u32 grid, u32 es,
		     const u8 *pat, u64 *written, const char **why)
{
	u32 plen = a->pattern_size * es, g, steps = 0;
	u64 e, addr;
	int ret;

	for (g = 0; g < grid; g++) {
		e = (u32)(g * a->pattern_size);
		for (addr = a->buf + e * es; addr < a->end_ptr; addr += (u64)a->next_chunk * es) {
			if (!a->next_chunk || ++steps > FILL_STEPS_MAX) {
				*why = a->next_chunk ? "blit fill of too many scattered patterns: not modelled"
						     : "blit fill with next_chunk 0 would never end: not modelled";
				return -EINVAL;
			}
			ret = gpu_fill(q, addr, plen, pat, plen, 0);
			if (ret)
				return ret;
			*written += plen;
		}
	}
	return 0;
}

static int run_fill(struct kfdsim_queue *q, const struct fill_args *a, u32 grid,
		    const char **why)
{
	u32 es = a->alignment == 16 || a->alignment == 8 || a->alignment == 4 ||
		 a->alignment == 2 ? a->alignment : 1;
	u64 plen = (u64)a->pattern_size * es, count, written = 0;
	u8 *pat = NULL;
	int ret;

	if (a->end_ptr >= VA_LIMIT || a->buf >= VA_LIMIT || a->pattern >= VA_LIMIT) {
		*why = "blit fill with an address beyond any GPU VA: not modelled";
		return -EINVAL;
	}
	if (plen > PATTERN_MAX) {
		*why = "blit fill with a pattern over 4096 bytes: not modelled";
		return -EINVAL;
	}
	if (plen) {
		pat = kmalloc(plen, GFP_KERNEL);
		if (!pat) {
			*why = "no memory for a blit fill's pattern";
			return -ENOMEM;
		}
		ret = gpu_xfer(q, a->pattern, pat, plen, false);
		if (ret) {
			*why = "GPU VM fault on a blit fill's pattern";
			goto out;
		}
	}
	if (plen && (u64)grid * a->pattern_size == a->next_chunk) {
		/* the work-items tile the buffer: pattern after pattern */
		count = elements_below(a->buf, a->end_ptr, plen);
		ret = gpu_fill(q, a->buf, count * plen, pat, plen, 0);
		written = count * plen;
	} else {
		ret = fill_each(q, a, grid, es, pat, &written, why);
		if (ret == -EINVAL)
			goto out;
	}
	if (!ret && written)
		ret = maybe_corrupt(q, a->buf);
	if (ret) {
		*why = "GPU VM fault in a blit fill";
		goto out;
	}
	atomic64_inc(&blit_fills);
	atomic64_add(written, &blit_bytes);
	if (__ratelimit(&blit_log_rs))
		pr_info(KFDSIM_NAME ": gpu%u: AQL queue %u: %s carried out: %llu bytes at 0x%llx, pattern of %llu (grid %u)\n",
			q->pdd->dev->gpu_index, q->id, FILL_KERNEL, written, a->buf, plen, grid);
out:
	kfree(pat);
	return ret;
}

int kfdsim_blit_dispatch(struct kfdsim_queue *q, const char *symbol,
			 const struct kfdsim_dispatch *d, const char **why)
{
	bool copy = !strcmp(symbol, COPY_KERNEL), fill = !strcmp(symbol, FILL_KERNEL);
	u32 kernarg_size = 0, need = copy ? COPY_ARGS_BYTES : FILL_ARGS_BYTES;
	struct copy_args ca;
	struct fill_args fa;
	int ret;

	if (!copy && !fill)
		return -ENOENT;
	if (d->dims != 1 || d->grid[1] != 1 || d->grid[2] != 1) {
		*why = "blit kernel on a grid of more than one dimension: not modelled";
		return -EINVAL;
	}
	ret = gpu_xfer(q, d->kernel_object + KD_KERNARG_SIZE, &kernarg_size, 4, false);
	if (!ret && kernarg_size < need) {
		*why = "blit kernel whose descriptor declares fewer kernarg bytes than ROCclr's: not modelled";
		return -EINVAL;
	}
	if (!ret)
		ret = gpu_xfer(q, d->kernarg, copy ? (void *)&ca : (void *)&fa, need, false);
	if (ret) {
		*why = "GPU VM fault on a blit kernel's descriptor or arguments";
		return ret;
	}
	return copy ? run_copy(q, &ca, d->grid[0], why) : run_fill(q, &fa, d->grid[0], why);
}

void kfdsim_blit_show(struct seq_file *m)
{
	seq_printf(m, "copies %lld fills %lld bytes %lld corrupted %lld\n",
		   atomic64_read(&blit_copies), atomic64_read(&blit_fills),
		   atomic64_read(&blit_bytes), atomic64_read(&blit_corrupted));
}
