// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the SDMA engines behind amdgpu command submission (cs.c), and the
 * interpreter of the IBs they run, which also runs the rings of KFD
 * user-mode SDMA queues (queue.c: kfdsim_sdma_run_ring()). Facts:
 * docs/sdma-facts.md sections 2.2 (HW_IP_INFO/COUNT), 4 (packets per
 * generation), 6 (engines); ROCr's BlitSdma for the packets it puts on
 * user-mode queues.
 *
 * Engines: each GPU node has num_sdma_engines + num_sdma_xgmi_engines of
 * them (HW_IP_COUNT), each an ordered workqueue: one job at a time, in
 * queue order. cs.c puts an entity's jobs on one engine while it has jobs
 * pending, otherwise on the least loaded one (drm_sched_pick_best()).
 *
 * Packets (the GPU's generation from gfx_target_version: gfx7/8 SDMA v2/v3,
 * gfx9 v4, gfx10 v5, gfx11 v6, gfx12 v7; header op bits 7:0, sub_op 15:8):
 *   NOP         count bits 29:16: that many more dwords skipped
 *   COPY_LINEAR 7 dw; count = bytes - 1 from v4 on (bytes on v2/v3), 22 bits
 *               wide up to v5, 30 bits on v6/v7; no endian swap
 *   CONST_FILL  5 dw; fillsize bits 31:30: 0 byte (data bits 7:0), 2 dword
 *   FENCE       4 dw; 32-bit value to a 4-byte aligned VA
 *   TRAP        2 dw; a user-mode queue's: the interrupt KFD turns into
 *               kfd_signal_event_interrupt() of int_context bits 27:0 (an
 *               event id; events.c); a CS job's: nothing to interrupt
 *   POLL_REGMEM 6 dw; memory polls (bit 31), func bits 30:28; retry count
 *               0xFFF polls until the job times out, others give up and go
 *               on; a user-mode queue's engine leaves a poll not met for
 *               its next pass. Register polls that flush HDP (the
 *               hdp_flush form, bit 26, or ROCr's: function 0, "always")
 *               are done at once: there is no HDP cache to flush
 *   ATOMIC      8 dw; op bits 31:25, only ADD64 (47, ROCr's decrement of a
 *               completion signal), atomic with respect to the CPU
 *   TIMESTAMP   3 dw; GET_LOCAL/GET_GLOBAL: the 100 MHz GPU clock of
 *               GET_CLOCK_COUNTERS, 64 bits to an 8-byte aligned VA
 * Every address is a GPU VA of the submitting file's VM (48 bits used), read
 * and written page by page through the GPU VM API (kfdsim_gpuvm_page()), or
 * for a user-mode queue of its process's VM on that GPU
 * (kfdsim_queue_va_page()).
 *
 * Failures, as the job's fence error (WAIT_CS returns it):
 *   EFAULT  a VM fault: an unmapped VA, a write to a read-only mapping, an
 *           invalidated userptr. amdgpu (vm_fault_stop=0) logs the fault and
 *           lets the job finish with wrong data; kfdsim stops the job so
 *           that a test sees it.
 *   ETIME   what hangs real hardware: an unknown opcode or sub-op, a packet
 *           cut by the end of the IB, a count with bits above its field
 *           (count = bytes for a 4 MiB packet on v4), a misaligned fence;
 *           also a job hung or polling for sdma_lockup_ms, or whose bytes
 *           take longer than that at sdma_mbps. As amdgpu's job
 *           timeout: the context becomes guilty (its next CS fails with
 *           ECANCELED) and the GPU's reset counter moves (QUERY_STATE2).
 *           kfdsim fails an illegal packet at once instead of after the
 *           lockup timeout.
 *   ECANCELED  a job of a guilty or freed context that had not run.
 * A user-mode queue has no fence: the same errors stop it (queue.c), with a
 * line in dmesg naming the queue, and the opcode of a bad packet.
 *
 * Cost: sdma_mbps (per engine) makes a job take at least bytes / rate. The
 * default, 1600 MB/s, is what AMD measured for the CRIU plugin's SDMA path
 * (16 GB "within 10 seconds", LPC 2021); one engine's link rate (20-27 GB/s
 * on PCIe Gen4) is beyond what a TCG guest copies anyway, so it would not
 * throttle at all.
 *
 * Fault injection (inject.c):
 *   sdma job ERRNO   the job fails with ERRNO without running (ETIME as a
 *                    job timeout: guilty context, GPU reset)
 *   sdma hang ERRNO  the job hangs its engine until its context is freed,
 *                    sdma_lockup_ms passes (ETIME), or "reset" is written to
 *                    the inject file (ERRNO); the context becomes guilty
 *   "reset"          a GPU reset of every GPU: hung jobs and polls end.
 */
#include <linux/kernel.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <drm/drm_file.h>
#include <uapi/drm/amdgpu_drm.h>
#include "kfdsim.h"

static unsigned int sdma_mbps = 1600;
module_param(sdma_mbps, uint, 0644);
MODULE_PARM_DESC(sdma_mbps, "SDMA copy and fill rate per engine in MB/s (default 1600, LPC 2021's plugin figure; 0 = unthrottled)");

static unsigned int sdma_lockup_ms = 10000;
module_param(sdma_lockup_ms, uint, 0644);
MODULE_PARM_DESC(sdma_lockup_ms, "SDMA job timeout in ms, as amdgpu's lockup_timeout (default 10000; 0 = never)");

#define VA_MASK			0x0000ffffffffffffULL	/* AMDGPU_GMC_HOLE_MASK */
#define IB_ALIGN_MASK		0x1fULL		/* the INDIRECT packet drops bits 4:0 */

#define SDMA_OP_NOP		0
#define SDMA_OP_COPY		1
#define SDMA_OP_FENCE		5
#define SDMA_OP_TRAP		6
#define SDMA_OP_POLL_REGMEM	8
#define SDMA_OP_ATOMIC		10
#define SDMA_OP_CONST_FILL	11
#define SDMA_OP_TIMESTAMP	13
#define SDMA_SUBOP_COPY_LINEAR	0
#define SDMA_SUBOP_TS_GET_LOCAL	1
#define SDMA_SUBOP_TS_GET_GLOBAL	2
#define SDMA_ATOMIC_ADD64	47

#define HDR_OP(h)		((h) & 0xff)
#define HDR_SUBOP(h)		(((h) >> 8) & 0xff)
#define NOP_COUNT(h)		(((h) >> 16) & 0x3fff)
#define COPY_BACKWARDS		BIT(25)		/* v5 on */
#define COPY_BROADCAST		BIT(27)
#define COPY_SWAP_MASK		(0x3u << 16 | 0x3u << 24)	/* dw2: dst_sw, src_sw */
#define FILL_SIZE(h)		((h) >> 30)
#define FILL_SWAP(h)		(((h) >> 16) & 0x3)
#define POLL_FUNC(h)		(((h) >> 28) & 0x7)
#define POLL_MEM		BIT(31)
#define POLL_HDP_FLUSH		BIT(26)
#define ATOMIC_OP(h)		((h) >> 25)
#define TRAP_CONTEXT(dw)	((dw) & 0x0fffffff)
#define POLL_RETRY(dw)		(((dw) >> 16) & 0xfff)
#define POLL_FOREVER		0xfff

struct kfdsim_sdma_engine {
	struct kfdsim_sdma *sdma;
	struct workqueue_struct *wq;
	atomic_t load;			/* jobs queued or running */
	u32 index;
};

struct kfdsim_sdma {
	struct kfdsim_node *node;
	u32 gen;			/* SDMA IP major: 2, 3 (CIK/VI), 4, 5, 6, 7 */
	u32 minor, rev;			/* of the IP version (HW_IP_INFO) */
	atomic_t reset_counter;		/* amdgpu's gpu_reset_counter */
	wait_queue_head_t wq;		/* context kills and resets */
	u32 n_engines;
	struct kfdsim_sdma_engine engines[];
};

/* One job on its engine, or a pass over a user-mode queue's ring. */
struct run {
	struct kfdsim_job *job;		/* NULL for a user-mode queue */
	struct kfdsim_queue *uq;	/* a KFD SDMA queue (process mutex held) */
	struct kfdsim_sdma_engine *engine;
	struct kfdsim_sdma *sdma;
	ktime_t t0;
	ktime_t deadline;		/* KTIME_MAX: no lockup timeout */
	u64 bytes;			/* copied or filled so far (throttle) */
	u32 count_mask;
	bool count_minus_one;
};

/* The IB being read: a page of it is held while its dwords are used. */
struct ib_cursor {
	u64 va;				/* the next dword */
	u32 left;			/* dwords left in the IB */
	struct page *page;
	u32 off, len;			/* va's offset in page, bytes usable there */
	u64 ring, ring_end;		/* a queue's ring: va wraps at ring_end */
};

/* SDMA IP version of a gfx_target_version (amdgpu_discovery.c's pairing) */
static void sdma_version(u32 gfx, u32 *major, u32 *minor, u32 *rev)
{
	*minor = 0;
	*rev = 0;
	switch (gfx / 10000) {
	case 7:
		*major = 2;
		return;
	case 8:
		*major = 3;
		return;
	case 0:			/* no gfx_target_version: Vega10 (drm_info.c) */
	case 9:
		*major = 4;
		switch (gfx) {
		case 90004: *rev = 1; break;				/* Vega12 */
		case 90006: *minor = 2; break;				/* Vega20 */
		case 90008: *minor = 2; *rev = 2; break;		/* MI100 */
		case 90010: *minor = 4; break;				/* MI200 */
		case 90400: case 90401: case 90402:
			*minor = 4; *rev = 2; break;			/* MI300 */
		case 90500: *minor = 4; *rev = 5; break;		/* MI350 */
		}
		return;
	case 10:
		*major = 5;
		*minor = gfx / 100 % 100 == 3 ? 2 : 0;
		return;
	case 11:
		*major = 6;
		*minor = gfx / 100 % 100 == 5 ? 1 : 0;
		return;
	default:
		*major = 7;
		return;
	}
}

static u32 engines_of(const struct kfdsim_node *node)
{
	return node->props[NP_NUM_SDMA_ENGINES] + node->props[NP_NUM_SDMA_XGMI_ENGINES];
}

static void sdma_free(struct kfdsim_sdma *sdma)
{
	u32 i;

	for (i = 0; i < sdma->n_engines; i++)
		if (sdma->engines[i].wq)
			destroy_workqueue(sdma->engines[i].wq);
	kfree(sdma);
}

static struct kfdsim_sdma *sdma_create(struct kfdsim_node *node, u32 n)
{
	struct kfdsim_sdma *sdma;
	u32 i;

	sdma = kzalloc(struct_size(sdma, engines, n), GFP_KERNEL);
	if (!sdma)
		return NULL;
	sdma->node = node;
	sdma->n_engines = n;
	sdma_version(node->props[NP_GFX_TARGET_VERSION], &sdma->gen, &sdma->minor, &sdma->rev);
	atomic_set(&sdma->reset_counter, 0);
	init_waitqueue_head(&sdma->wq);
	for (i = 0; i < n; i++) {
		struct kfdsim_sdma_engine *e = &sdma->engines[i];

		e->sdma = sdma;
		e->index = i;
		atomic_set(&e->load, 0);
		e->wq = alloc_ordered_workqueue("kfdsim_sdma%u.%u", 0, node->gpu_index, i);
		if (!e->wq) {
			sdma_free(sdma);
			return NULL;
		}
	}
	return sdma;
}

void kfdsim_sdma_fini(void)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		struct kfdsim_node *node = kfdsim_topo->gpus[i];

		if (node->sdma)
			sdma_free(node->sdma);
		node->sdma = NULL;
	}
}

/* Engines for every GPU that has SDMA (the others refuse DMA submissions). */
int kfdsim_sdma_init(void)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		struct kfdsim_node *node = kfdsim_topo->gpus[i];
		u32 n = engines_of(node);

		if (!n)
			continue;
		node->sdma = sdma_create(node, n);
		if (!node->sdma) {
			kfdsim_sdma_fini();
			return -ENOMEM;
		}
	}
	return 0;
}

struct kfdsim_sdma_engine *kfdsim_sdma_pick_engine(struct kfdsim_node *node)
{
	struct kfdsim_sdma *sdma = node->sdma;
	struct kfdsim_sdma_engine *best = &sdma->engines[0];
	u32 i;

	for (i = 1; i < sdma->n_engines; i++)
		if (atomic_read(&sdma->engines[i].load) < atomic_read(&best->load))
			best = &sdma->engines[i];
	return best;
}

u32 kfdsim_sdma_reset_counter(struct kfdsim_node *node)
{
	return node->sdma ? atomic_read(&node->sdma->reset_counter) : 0;
}

void kfdsim_sdma_wake(struct kfdsim_node *node)
{
	if (node->sdma)
		wake_up_all(&node->sdma->wq);
}

/* A GPU reset of every GPU (inject file "reset"): stuck jobs end. */
void kfdsim_sdma_reset(void)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		struct kfdsim_sdma *sdma = kfdsim_topo->gpus[i]->sdma;

		if (!sdma)
			continue;
		atomic_inc(&sdma->reset_counter);
		wake_up_all(&sdma->wq);
	}
	pr_info(KFDSIM_NAME ": injected GPU reset\n");
}

/* amdgpu_job_timedout(): the job's context is guilty, the GPU resets */
static int job_hung(struct run *run, int err, const char *why)
{
	struct kfdsim_ctx *ctx;

	if (run->uq) {
		pr_warn_ratelimited(KFDSIM_NAME ": sdma%u: user queue %u %s: the queue stops (error %d)\n",
				    run->sdma->node->gpu_index, run->uq->id, why, err);
		return err;
	}
	ctx = run->job->ctx;
	pr_warn_ratelimited(KFDSIM_NAME ": sdma%u.%u: job of context %u %s: fence error %d, context guilty, GPU reset\n",
			    run->sdma->node->gpu_index, run->engine->index, ctx->id, why, err);
	atomic_set(&ctx->guilty, 1);
	atomic_inc(&run->sdma->reset_counter);
	wake_up_all(&run->sdma->wq);
	return err;
}

static bool killed(struct run *run)
{
	return run->job && READ_ONCE(run->job->ctx->killed);
}

/*
 * Sleeps up to @jiffies, or until the job's context is freed (-ECANCELED),
 * if it is @stuck (hung, polling) its lockup timeout passes (-ETIME), or,
 * if @reset_counter is not NULL, the GPU resets (-EIO).
 */
static int job_sleep(struct run *run, unsigned long jiffies, const u32 *reset_counter,
		     bool stuck)
{
	struct kfdsim_sdma *sdma = run->sdma;
	ktime_t now = ktime_get();

	if (stuck && run->deadline != KTIME_MAX) {
		if (ktime_after(now, run->deadline))
			return job_hung(run, -ETIME, "timed out (sdma_lockup_ms)");
		jiffies = min_t(unsigned long, jiffies,
				nsecs_to_jiffies(ktime_to_ns(ktime_sub(run->deadline, now))) + 1);
	}
	wait_event_timeout(sdma->wq, killed(run) ||
			   (reset_counter && atomic_read(&sdma->reset_counter) != *reset_counter),
			   jiffies);
	if (killed(run))
		return -ECANCELED;
	if (reset_counter && atomic_read(&sdma->reset_counter) != *reset_counter)
		return -EIO;
	return 0;
}

/* An injected hang: until the context is freed, a reset, or the lockup timeout */
static int job_hang(struct run *run, int err)
{
	u32 counter = atomic_read(&run->sdma->reset_counter);
	int ret;

	pr_info(KFDSIM_NAME ": sdma%u.%u: job of context %u hangs (injected)\n",
		run->sdma->node->gpu_index, run->engine->index, run->job->ctx->id);
	do {
		ret = job_sleep(run, MAX_SCHEDULE_TIMEOUT - 1, &counter, true);
	} while (!ret);
	if (ret == -EIO)
		return job_hung(run, err, "hung until a GPU reset");
	return ret;
}

/*
 * The rate limit: the job's bytes so far may not have taken less than
 * bytes / rate. The lockup timeout applies to that modelled time, not to
 * the wall clock: a TCG guest copies far slower than any engine, which is
 * no hang.
 */
static int job_account(struct run *run, u64 bytes)
{
	u32 mbps = READ_ONCE(sdma_mbps), lockup_ms = READ_ONCE(sdma_lockup_ms);
	u64 model_ns;
	ktime_t due;
	int ret;

	run->bytes += bytes;
	cond_resched();
	if (killed(run))
		return -ECANCELED;
	if (!mbps)
		return 0;
	/* MB/s = bytes per microsecond: bytes * 1000 / rate nanoseconds */
	model_ns = div_u64(run->bytes * 1000, mbps);
	if (lockup_ms && model_ns > (u64)lockup_ms * NSEC_PER_MSEC)
		return job_hung(run, -ETIME, "takes longer than sdma_lockup_ms at sdma_mbps");
	due = ktime_add_ns(run->t0, model_ns);
	for (;;) {
		ktime_t now = ktime_get();

		if (!ktime_after(due, now))
			return 0;
		ret = job_sleep(run, max_t(unsigned long, 1,
					   nsecs_to_jiffies(ktime_to_ns(ktime_sub(due, now)))),
				NULL, false);
		if (ret)
			return ret;
	}
}

/* The page behind @va, as the engine's VM walk finds it; a fault is logged */
static int vm_page(struct run *run, u64 va, bool write, struct page **page, u32 *off,
		   u32 *len)
{
	struct kfdsim_gpuvm *vm;
	int ret;

	va &= VA_MASK;
	if (run->uq) {
		ret = kfdsim_queue_va_page(run->uq, va, write, page, off, len);
	} else {
		vm = run->job->vm;
		kfdsim_gpuvm_lock(vm);
		ret = kfdsim_gpuvm_page(vm, va, write, page, off, len);
		kfdsim_gpuvm_unlock(vm);
	}
	if (!ret && !*len) {
		put_page(*page);
		ret = -EFAULT;
	}
	if (ret && run->uq) {
		pr_warn_ratelimited(KFDSIM_NAME ": sdma%u: GPU VM fault at 0x%llx (%s, %d) in user queue %u: the queue stops\n",
				    run->sdma->node->gpu_index, va, write ? "write" : "read", ret,
				    run->uq->id);
		return -EFAULT;
	}
	if (ret) {
		pr_warn_ratelimited(KFDSIM_NAME ": sdma%u.%u: GPU VM fault at 0x%llx (%s, %d) in a job of context %u: fence error EFAULT\n",
				    run->sdma->node->gpu_index, run->engine->index, va,
				    write ? "write" : "read", ret, run->job->ctx->id);
		return -EFAULT;
	}
	return 0;
}

static int illegal(struct run *run, u64 va, u32 header, const char *why)
{
	pr_warn_ratelimited(KFDSIM_NAME ": sdma%u.%u: illegal packet at 0x%llx (header 0x%08x, opcode %u sub-op %u): %s; real hardware hangs\n",
			    run->sdma->node->gpu_index, run->engine->index, va & VA_MASK, header,
			    HDR_OP(header), HDR_SUBOP(header), why);
	return job_hung(run, -ETIME, "hit an illegal packet");
}

/* @n dwords of the IB; -ENODATA if the IB ends first */
static int ib_read(struct run *run, struct ib_cursor *c, u32 *dw, u32 n)
{
	u32 i;
	int ret;

	if (n > c->left)
		return -ENODATA;
	for (i = 0; i < n; i++) {
		if (c->ring_end && c->va == c->ring_end) {
			c->va = c->ring;
			c->len = 0;
		}
		if (c->len < 4) {
			if (c->page)
				put_page(c->page);
			c->page = NULL;
			ret = vm_page(run, c->va, false, &c->page, &c->off, &c->len);
			if (ret)
				return ret;
			if (c->len < 4)	/* a mapping ends on a page boundary: never */
				return -EFAULT;
		}
		memcpy_from_page((char *)&dw[i], c->page, c->off, 4);
		c->va += 4;
		c->off += 4;
		c->len -= 4;
		c->left--;
	}
	return 0;
}

static u64 va_of(u32 lo, u32 hi)
{
	return ((u64)hi << 32 | lo) & VA_MASK;
}

/* bytes of a COPY_LINEAR or CONST_FILL count field; 0: not a valid count */
static u64 count_bytes(struct run *run, u32 count)
{
	if (count & ~run->count_mask)
		return 0;
	return run->count_minus_one ? (u64)count + 1 : count;
}

static void move_bytes(struct page *dp, u32 doff, struct page *sp, u32 soff, u32 n)
{
	char *s = kmap_local_page(sp);
	char *d = kmap_local_page(dp);

	memmove(d + doff, s + soff, n);
	kunmap_local(d);
	kunmap_local(s);
}

static int copy_linear(struct run *run, u64 dst, u64 src, u64 bytes)
{
	while (bytes) {
		struct page *sp, *dp;
		u32 soff, slen, doff, dlen, n;
		int ret;

		ret = vm_page(run, src, false, &sp, &soff, &slen);
		if (ret)
			return ret;
		ret = vm_page(run, dst, true, &dp, &doff, &dlen);
		if (ret) {
			put_page(sp);
			return ret;
		}
		n = min_t(u64, bytes, min(slen, dlen));
		move_bytes(dp, doff, sp, soff, n);
		put_page(dp);
		put_page(sp);
		src += n;
		dst += n;
		bytes -= n;
		ret = job_account(run, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* @pat: the fill's 4 bytes in memory order; @phase: bytes of it already written */
static void fill_bytes(struct page *page, u32 off, u32 n, const u8 pat[4], u64 phase)
{
	u8 *p = kmap_local_page(page);
	u32 i;

	if (pat[0] == pat[1] && pat[0] == pat[2] && pat[0] == pat[3]) {
		memset(p + off, pat[0], n);
	} else {
		for (i = 0; i < n; i++)
			p[off + i] = pat[(phase + i) & 3];
	}
	kunmap_local(p);
}

static int const_fill(struct run *run, u64 dst, u32 data, bool bytewise, u64 bytes)
{
	u8 pat[4];
	u64 done = 0;

	if (bytewise)
		memset(pat, data & 0xff, sizeof(pat));
	else
		memcpy(pat, &data, sizeof(pat));	/* little endian, as the GPU */
	while (done < bytes) {
		struct page *page;
		u32 off, len, n;
		int ret;

		ret = vm_page(run, dst + done, true, &page, &off, &len);
		if (ret)
			return ret;
		n = min_t(u64, bytes - done, len);
		fill_bytes(page, off, n, pat, done);
		put_page(page);
		done += n;
		ret = job_account(run, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* @size bytes at an address aligned to them (FENCE, TIMESTAMP): one page */
static int write_value(struct run *run, u64 addr, const void *value, u32 size)
{
	struct page *page;
	u32 off, len;
	int ret;

	ret = vm_page(run, addr, true, &page, &off, &len);
	if (ret)
		return ret;
	memcpy_to_page(page, off, value, size);
	put_page(page);
	return 0;
}

/* ATOMIC ADD64: atomic against the CPU, which may update the same signal */
static int atomic_add64(struct run *run, u64 addr, u64 value)
{
	struct page *page;
	u32 off, len;
	char *p;
	int ret;

	ret = vm_page(run, addr, true, &page, &off, &len);
	if (ret)
		return ret;
	p = kmap_local_page(page);
	atomic64_add((s64)value, (atomic64_t *)(p + off));
	kunmap_local(p);
	put_page(page);
	return 0;
}

static bool poll_met(u32 func, u32 v, u32 ref)
{
	switch (func) {
	case 0: return true;
	case 1: return v < ref;
	case 2: return v <= ref;
	case 3: return v == ref;
	case 4: return v != ref;
	case 5: return v >= ref;
	default: return v > ref;
	}
}

/* dw: the 6 dwords of a POLL_REGMEM with mem_poll set */
static int poll_mem(struct run *run, const u32 *dw)
{
	u64 addr = va_of(dw[1], dw[2]);
	u32 retries = POLL_RETRY(dw[5]), tries, v;
	int ret;

	for (tries = 0;; tries++) {
		struct page *page;
		u32 off, len;

		ret = vm_page(run, addr, false, &page, &off, &len);
		if (ret)
			return ret;
		memcpy_from_page((char *)&v, page, off, sizeof(v));
		put_page(page);
		if (poll_met(POLL_FUNC(dw[0]), v & dw[4], dw[3]))
			return 0;
		/* a user queue polls again at its next pass (see sdma_queue.c) */
		if (run->uq)
			return retries == POLL_FOREVER ? -EAGAIN : 0;
		if (retries != POLL_FOREVER && tries >= retries)
			return 0;	/* the engine gives up and goes on */
		ret = job_sleep(run, 1, NULL, true);
		if (ret)
			return ret;
	}
}

/* Runs the packet whose header @h was read at @va; the cursor is after it */
static int run_packet(struct run *run, struct ib_cursor *c, u64 va, u32 h)
{
	u32 dw[8], skip;
	u64 bytes, ts;
	int ret;

	dw[0] = h;
	switch (HDR_OP(h)) {
	case SDMA_OP_NOP:
		for (skip = NOP_COUNT(h); skip; skip--) {
			ret = ib_read(run, c, &dw[1], 1);
			if (ret)
				return ret;
		}
		return 0;
	case SDMA_OP_COPY:
		if (HDR_SUBOP(h) != SDMA_SUBOP_COPY_LINEAR)
			return illegal(run, va, h, "COPY sub-op not modelled");
		if ((h & COPY_BROADCAST) || (run->sdma->gen >= 5 && (h & COPY_BACKWARDS)))
			return illegal(run, va, h, "broadcast or backwards COPY_LINEAR not modelled");
		ret = ib_read(run, c, &dw[1], 6);
		if (ret)
			return ret;
		bytes = count_bytes(run, dw[1]);
		if (!bytes)
			return illegal(run, va, h, "COPY_LINEAR count beyond its field");
		if (dw[2] & COPY_SWAP_MASK)
			return illegal(run, va, h, "COPY_LINEAR endian swap not modelled");
		return copy_linear(run, va_of(dw[5], dw[6]), va_of(dw[3], dw[4]), bytes);
	case SDMA_OP_CONST_FILL:
		ret = ib_read(run, c, &dw[1], 4);
		if (ret)
			return ret;
		bytes = count_bytes(run, dw[4]);
		if (!bytes)
			return illegal(run, va, h, "CONST_FILL count beyond its field");
		if ((FILL_SIZE(h) != 0 && FILL_SIZE(h) != 2) || FILL_SWAP(h))
			return illegal(run, va, h, "CONST_FILL fill size or swap not modelled");
		return const_fill(run, va_of(dw[1], dw[2]), dw[3], FILL_SIZE(h) == 0, bytes);
	case SDMA_OP_FENCE:
		ret = ib_read(run, c, &dw[1], 3);
		if (ret)
			return ret;
		if (dw[1] & 3)
			return illegal(run, va, h, "FENCE address not 4-byte aligned");
		return write_value(run, va_of(dw[1], dw[2]), &dw[3], sizeof(dw[3]));
	case SDMA_OP_TRAP:
		ret = ib_read(run, c, &dw[1], 1);
		if (!ret && run->uq)
			kfdsim_signal_event_interrupt(run->uq->pdd->process, TRAP_CONTEXT(dw[1]), 28);
		return ret;
	case SDMA_OP_ATOMIC:
		ret = ib_read(run, c, &dw[1], 7);
		if (ret)
			return ret;
		if (ATOMIC_OP(h) != SDMA_ATOMIC_ADD64 || (h & BIT(16)))
			return illegal(run, va, h, "ATOMIC operation other than ADD64 not modelled");
		if (dw[1] & 7)
			return illegal(run, va, h, "ATOMIC address not 8-byte aligned");
		return atomic_add64(run, va_of(dw[1], dw[2]), (u64)dw[4] << 32 | dw[3]);
	case SDMA_OP_TIMESTAMP:
		if (HDR_SUBOP(h) != SDMA_SUBOP_TS_GET_LOCAL &&
		    HDR_SUBOP(h) != SDMA_SUBOP_TS_GET_GLOBAL)
			return illegal(run, va, h, "TIMESTAMP sub-op not modelled");
		ret = ib_read(run, c, &dw[1], 2);
		if (ret)
			return ret;
		if (dw[1] & 7)
			return illegal(run, va, h, "TIMESTAMP address not 8-byte aligned");
		/* GET_CLOCK_COUNTERS' GPU clock: 100 MHz */
		ts = div_u64(ktime_get_raw_ns(), 10);
		return write_value(run, va_of(dw[1], dw[2]), &ts, sizeof(ts));
	case SDMA_OP_POLL_REGMEM:
		ret = ib_read(run, c, &dw[1], 5);
		if (ret)
			return ret;
		/*
		 * HDP flushes: the hdp_flush form, or ROCr's register poll with
		 * function 0 ("always"); nothing is cached between CPU and "VRAM"
		 */
		if (!(h & POLL_MEM) && ((h & POLL_HDP_FLUSH) || !POLL_FUNC(h)))
			return 0;
		if (!(h & POLL_MEM))
			return illegal(run, va, h, "register polls not modelled");
		if (POLL_FUNC(h) == 7 || (dw[1] & 3))
			return illegal(run, va, h, "POLL_REGMEM function 7 or misaligned address");
		return poll_mem(run, dw);
	default:
		return illegal(run, va, h, "unknown opcode");
	}
}

static int run_ib(struct run *run, const struct kfdsim_ib *ib)
{
	struct ib_cursor c = {
		.va = ib->va & ~IB_ALIGN_MASK,
		.left = ib->dwords,
	};
	int ret = 0;

	while (c.left) {
		u64 va = c.va;
		u32 h = 0;

		/* a long IB of small packets must not hog the CPU or outlive a FREE */
		cond_resched();
		if (killed(run)) {
			ret = -ECANCELED;
			break;
		}
		ret = ib_read(run, &c, &h, 1);
		if (!ret)
			ret = run_packet(run, &c, va, h);
		if (ret == -ENODATA)
			ret = illegal(run, va, h, "packet runs past the end of the IB");
		if (ret)
			break;
	}
	if (c.page)
		put_page(c.page);
	return ret;
}

/*
 * A pass of a user-mode SDMA queue's engine over its ring (sdma_queue.c
 * calls it with the process mutex held) on engine @engine: the packets from *@rptr to @wptr,
 * byte offsets (monotonic from SDMA v4 on, ROCr's 64-bit pointers; wrapped
 * into the ring before). *@rptr moves past each packet done. Returns 0 when
 * the engine caught up or waits (a memory poll not met yet, a packet not
 * complete up to @wptr: the next pass goes on there), else the error that
 * stops the queue (logged).
 */
int kfdsim_sdma_run_ring(struct kfdsim_queue *q, u32 engine, u64 *rptr, u64 wptr)
{
	struct kfdsim_sdma *sdma = q->pdd->dev->sdma;
	u64 mask = q->ring_size - 1, avail = wptr - *rptr;
	struct run run = {
		.uq = q,
		.sdma = sdma,
		.t0 = ktime_get(),
		.deadline = KTIME_MAX,
	};
	struct ib_cursor c = {
		.va = q->ring + (*rptr & mask),
		.ring = q->ring,
		.ring_end = q->ring + q->ring_size,
	};
	int ret = 0;

	if (!sdma)
		return -ENODEV;
	run.engine = &sdma->engines[engine % sdma->n_engines];
	run.count_mask = sdma->gen >= 6 ? 0x3fffffff : 0x3fffff;
	run.count_minus_one = sdma->gen >= 4;
	if (sdma->gen < 4)
		avail &= mask;
	if (avail > q->ring_size || (avail & 3)) {
		pr_warn_ratelimited(KFDSIM_NAME ": sdma%u: user queue %u: write pointer 0x%llx is not within the ring from read pointer 0x%llx: the queue stops\n",
				    sdma->node->gpu_index, q->id, wptr, *rptr);
		return -EINVAL;
	}
	c.left = avail / 4;
	while (c.left) {
		u64 va = c.va;
		u32 left = c.left, h = 0;

		cond_resched();
		ret = ib_read(&run, &c, &h, 1);
		if (!ret)
			ret = run_packet(&run, &c, va, h);
		if (ret == -EAGAIN || ret == -ENODATA) {
			ret = 0;
			break;
		}
		if (ret)
			break;
		*rptr += (u64)(left - c.left) * 4;
		if (sdma->gen < 4)
			*rptr &= mask;
	}
	if (c.page)
		put_page(c.page);
	return ret;
}

static int run_job(struct run *run)
{
	struct kfdsim_job *job = run->job;
	u32 i;
	int ret;

	/* drm_sched: jobs of a guilty or killed entity are not run */
	if (killed(run) || atomic_read(&job->ctx->guilty))
		return -ECANCELED;
	for (i = 0; i < job->n_deps; i++) {
		while (!dma_fence_is_signaled(job->deps[i])) {
			if (killed(run))
				return -ECANCELED;
			dma_fence_wait_timeout(job->deps[i], false, msecs_to_jiffies(10));
		}
	}
	run->t0 = ktime_get();
	run->deadline = sdma_lockup_ms ? ktime_add_ms(run->t0, sdma_lockup_ms) : KTIME_MAX;
	ret = kfdsim_inject("sdma", "job");
	if (ret == -ETIME)
		return job_hung(run, ret, "timed out (injected)");
	if (ret)
		return ret;
	ret = kfdsim_inject("sdma", "hang");
	if (ret)
		return job_hang(run, ret);
	for (i = 0; i < job->n_ibs && !ret; i++)
		ret = run_ib(run, &job->ibs[i]);
	return ret;
}

static void job_work(struct work_struct *work)
{
	struct kfdsim_job *job = container_of(work, struct kfdsim_job, work);
	struct kfdsim_sdma_engine *engine = job->engine;
	struct run run = {
		.job = job,
		.engine = engine,
		.sdma = engine->sdma,
		.count_mask = engine->sdma->gen >= 6 ? 0x3fffffff : 0x3fffff,
		.count_minus_one = engine->sdma->gen >= 4,
	};
	int ret = run_job(&run);

	atomic_dec(&engine->load);
	kfdsim_cs_job_done(job, ret);
}

void kfdsim_sdma_queue(struct kfdsim_sdma_engine *engine, struct kfdsim_job *job)
{
	job->engine = engine;
	atomic_inc(&engine->load);
	INIT_WORK(&job->work, job_work);
	queue_work(engine->wq, &job->work);
}

/* debugfs kfdsim/sdma: per GPU, the reset counter and each engine's jobs */
void kfdsim_sdma_show(struct seq_file *m)
{
	u32 i, j;

	kfdsim_cs_show(m);
	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		struct kfdsim_sdma *sdma = kfdsim_topo->gpus[i]->sdma;

		if (!sdma)
			continue;
		seq_printf(m, "gpu %u sdma v%u.%u.%u resets %d load", i, sdma->gen, sdma->minor,
			   sdma->rev, atomic_read(&sdma->reset_counter));
		for (j = 0; j < sdma->n_engines; j++)
			seq_printf(m, " %d", atomic_read(&sdma->engines[j].load));
		seq_puts(m, "\n");
	}
}

int kfdsim_sdma_hw_ip_count(struct kfdsim_node *node, u32 type, u32 *count)
{
	/* other IP types: not modelled (amdgpu: EINVAL for IPs it has not) */
	if (type != AMDGPU_HW_IP_DMA)
		pr_notice_ratelimited(KFDSIM_NAME ": HW_IP_COUNT of IP type %u is not modelled yet (EINVAL)\n",
				      type);
	if (type != AMDGPU_HW_IP_DMA || !node->sdma)
		return -EINVAL;
	*count = node->sdma->n_engines;
	return 0;
}

/* amdgpu_hw_ip_info() for AMDGPU_HW_IP_DMA */
int kfdsim_sdma_hw_ip_info(struct kfdsim_node *node, u32 type, u32 instance,
			   struct drm_amdgpu_info_hw_ip *info)
{
	struct kfdsim_sdma *sdma = node->sdma;

	if (type != AMDGPU_HW_IP_DMA)
		pr_notice_ratelimited(KFDSIM_NAME ": HW_IP_INFO of IP type %u is not modelled yet (EINVAL)\n",
				      type);
	if (type != AMDGPU_HW_IP_DMA || !sdma || instance)
		return -EINVAL;
	info->hw_ip_version_major = sdma->gen;
	info->hw_ip_version_minor = sdma->minor;
	info->capabilities_flags = 0;
	info->ib_start_alignment = 256;
	info->ib_size_alignment = 4;
	info->available_rings = (1U << min_t(u32, KFDSIM_CTX_RINGS, sdma->n_engines)) - 1;
	/* IP discovery exists from Vega10 on: major << 16 | minor << 8 | rev */
	info->ip_discovery_version = sdma->gen >= 4 ?
		sdma->gen << 16 | sdma->minor << 8 | sdma->rev : 0;
	return 0;
}
