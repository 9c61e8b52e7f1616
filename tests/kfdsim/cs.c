// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: command submission on the render nodes, as amdgpu_ctx.c and
 * amdgpu_cs.c of 6.12 (facts: docs/sdma-facts.md 2.8):
 *
 *   DRM_AMDGPU_CTX      ALLOC (ids 1..4095), FREE, QUERY_STATE, QUERY_STATE2
 *   DRM_AMDGPU_CS       IB chunks for AMDGPU_HW_IP_DMA, ring 0 or 1 (the
 *                       context's two DMA entities); DEPENDENCIES; a BO
 *                       list or a BO_HANDLES chunk. Out: the sequence
 *                       number of the job on its entity, from 1.
 *   DRM_AMDGPU_WAIT_CS  absolute CLOCK_MONOTONIC timeout; status 1 if it
 *                       expires, the fence's error as the ioctl's
 *
 * A job goes to an SDMA engine of the GPU (sdma.c), runs asynchronously and
 * ends with kfdsim_cs_job_done(). Each entity keeps the fences of its last
 * 32 jobs (amdgpu_sched_jobs); a CS whose slot still holds an unsignaled
 * fence waits for it first (amdgpu_ctx_wait_prev_fence()), so an entity has
 * at most 32 jobs in flight.
 *
 * Lifetime: a context is referenced by its file's idr, by each of its jobs
 * and by the ioctls using it. FREE and file close mark it killed: its jobs
 * that have not run end with ECANCELED, a running one at its next check.
 * File close then waits for every job of the file (kfdsim_ctx_mgr_fini()),
 * before the file's GPU VM goes away.
 *
 * Fault injection: "cs entry ERRNO" fails a CS before anything else
 * (EAGAIN: a userptr invalidation, which libdrm repeats; ECANCELED: as
 * after a GPU reset).
 *
 * Not modelled (EINVAL): IP types other than DMA (as an IP the GPU has
 * not), user fence (FENCE) chunks, syncobj chunks, IBs of one CS on
 * several entities (gang submission), the STABLE_PSTATE ops. Priorities
 * are only checked (EACCES above NORMAL without CAP_SYS_NICE).
 */
#include <linux/kernel.h>
#include <linux/capability.h>
#include <linux/dma-fence.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>
#include <drm/drm_auth.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <uapi/drm/amdgpu_drm.h>
#include "kfdsim.h"

#define CTX_ID_MAX		4096	/* AMDGPU_VM_MAX_NUM_CTX */
#define IB_MAX_DWORDS		0xFFFFF	/* AMDGPU_GFX_SDMA_IB_PACKET_SIZE_MAX_DW */
#define BO_LIST_MAX_ENTRIES	(128 * 1024)

/* Live objects of every file, for debugfs kfdsim/sdma and the unload check */
static atomic_t live_ctxs = ATOMIC_INIT(0);
static atomic_t live_jobs = ATOMIC_INIT(0);
static atomic_t live_fences = ATOMIC_INIT(0);

/* ---- fences ----------------------------------------------------------- */

/* A job's fence; its own lock, as it may outlive the context */
struct cs_fence {
	struct dma_fence base;		/* first: dma_fence_free() frees it all */
	spinlock_t lock;
};

static const char *fence_driver_name(struct dma_fence *f)
{
	return KFDSIM_NAME;
}

static const char *fence_timeline_name(struct dma_fence *f)
{
	return "sdma";
}

static void fence_release(struct dma_fence *f)
{
	atomic_dec(&live_fences);
	dma_fence_free(f);
}

static const struct dma_fence_ops cs_fence_ops = {
	.get_driver_name = fence_driver_name,
	.get_timeline_name = fence_timeline_name,
	.release = fence_release,
};

static struct dma_fence *fence_create(u64 context, u64 seq)
{
	struct cs_fence *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	dma_fence_init(&f->base, &cs_fence_ops, &f->lock, context, seq);
	atomic_inc(&live_fences);
	return &f->base;
}

/* ---- contexts --------------------------------------------------------- */

static struct kfdsim_node *drm_node(struct drm_device *dev)
{
	return container_of(dev, struct kfdsim_drm, drm)->node;
}

static struct kfdsim_ctx_mgr *file_mgr(struct drm_file *file)
{
	return &((struct kfdsim_fpriv *)file->driver_priv)->ctx_mgr;
}

static void ctx_release(struct kref *ref)
{
	struct kfdsim_ctx *ctx = container_of(ref, struct kfdsim_ctx, ref);
	u32 i, j;

	for (i = 0; i < KFDSIM_CTX_RINGS; i++)
		for (j = 0; j < KFDSIM_SCHED_JOBS; j++)
			dma_fence_put(ctx->entities[i].fences[j]);
	mutex_destroy(&ctx->submit_lock);
	kfree(ctx);
	atomic_dec(&live_ctxs);
}

static void ctx_put(struct kfdsim_ctx *ctx)
{
	kref_put(&ctx->ref, ctx_release);
}

static struct kfdsim_ctx *ctx_get(struct kfdsim_ctx_mgr *mgr, u32 id)
{
	struct kfdsim_ctx *ctx;

	mutex_lock(&mgr->lock);
	ctx = idr_find(&mgr->ctx_idr, id);
	if (ctx)
		kref_get(&ctx->ref);
	mutex_unlock(&mgr->lock);
	return ctx;
}

/* Its jobs end at their next check; they hold references of their own. */
static void ctx_kill(struct kfdsim_ctx *ctx)
{
	WRITE_ONCE(ctx->killed, true);
	kfdsim_sdma_wake(ctx->node);
	ctx_put(ctx);
}

void kfdsim_ctx_mgr_init(struct kfdsim_ctx_mgr *mgr)
{
	mutex_init(&mgr->lock);
	idr_init_base(&mgr->ctx_idr, 1);
	atomic_set(&mgr->jobs, 0);
}

/* File close: kill every context, then wait until none of its jobs runs. */
void kfdsim_ctx_mgr_fini(struct kfdsim_ctx_mgr *mgr)
{
	struct kfdsim_ctx *ctx;
	int id;

	mutex_lock(&mgr->lock);
	idr_for_each_entry(&mgr->ctx_idr, ctx, id)
		ctx_kill(ctx);
	idr_destroy(&mgr->ctx_idr);
	mutex_unlock(&mgr->lock);
	wait_var_event(&mgr->jobs, !atomic_read(&mgr->jobs));
	mutex_destroy(&mgr->lock);
}

static int ctx_alloc(struct kfdsim_node *node, struct kfdsim_ctx_mgr *mgr, u32 *id)
{
	struct kfdsim_ctx *ctx;
	u32 i;
	int ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kref_init(&ctx->ref);
	atomic_inc(&live_ctxs);
	ctx->node = node;
	ctx->reset_counter = kfdsim_sdma_reset_counter(node);
	ctx->reset_counter_query = ctx->reset_counter;
	atomic_set(&ctx->guilty, 0);
	mutex_init(&ctx->submit_lock);
	for (i = 0; i < KFDSIM_CTX_RINGS; i++) {
		spin_lock_init(&ctx->entities[i].lock);
		ctx->entities[i].fence_context = dma_fence_context_alloc(1);
		ctx->entities[i].sequence = 1;
	}
	mutex_lock(&mgr->lock);
	ret = idr_alloc(&mgr->ctx_idr, ctx, 1, CTX_ID_MAX, GFP_KERNEL);
	if (ret >= 0)
		ctx->id = *id = ret;
	mutex_unlock(&mgr->lock);
	if (ret < 0) {
		ctx_put(ctx);
		return ret;
	}
	return 0;
}

static int ctx_free(struct kfdsim_ctx_mgr *mgr, u32 id)
{
	struct kfdsim_ctx *ctx;

	mutex_lock(&mgr->lock);
	ctx = idr_remove(&mgr->ctx_idr, id);
	mutex_unlock(&mgr->lock);
	if (!ctx)
		return -EINVAL;
	ctx_kill(ctx);
	return 0;
}

static void ctx_query(struct kfdsim_ctx *ctx, union drm_amdgpu_ctx_out *out, bool v2)
{
	u32 resets = kfdsim_sdma_reset_counter(ctx->node);

	memset(out, 0, sizeof(*out));
	if (v2) {
		if (ctx->reset_counter != resets)
			out->state.flags |= AMDGPU_CTX_QUERY2_FLAGS_RESET;
		if (atomic_read(&ctx->guilty))
			out->state.flags |= AMDGPU_CTX_QUERY2_FLAGS_GUILTY;
		return;
	}
	/* amdgpu_ctx_query(): "unknown" whenever a reset happened since the last query */
	out->state.reset_status = xchg(&ctx->reset_counter_query, resets) == resets ?
		AMDGPU_CTX_NO_RESET : AMDGPU_CTX_UNKNOWN_RESET;
}

static bool priority_valid(s32 prio)
{
	return prio == AMDGPU_CTX_PRIORITY_VERY_LOW || prio == AMDGPU_CTX_PRIORITY_LOW ||
	       prio == AMDGPU_CTX_PRIORITY_NORMAL || prio == AMDGPU_CTX_PRIORITY_HIGH ||
	       prio == AMDGPU_CTX_PRIORITY_VERY_HIGH;
}

int kfdsim_ctx_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_ctx *args = data;
	struct kfdsim_node *node = drm_node(dev);
	struct kfdsim_ctx_mgr *mgr = file_mgr(file);
	u32 op = args->in.op, id = args->in.ctx_id;
	s32 prio = args->in.priority;
	struct kfdsim_ctx *ctx;

	if (!node)
		return -ENODEV;
	if (op < AMDGPU_CTX_OP_ALLOC_CTX || op > AMDGPU_CTX_OP_QUERY_STATE2)
		return -EINVAL;		/* STABLE_PSTATE: not modelled */
	if (args->in.flags)
		return -EINVAL;
	switch (op) {
	case AMDGPU_CTX_OP_ALLOC_CTX:
		if (!priority_valid(prio))
			prio = AMDGPU_CTX_PRIORITY_NORMAL;
		/* amdgpu_ctx_priority_permit() */
		if (prio > AMDGPU_CTX_PRIORITY_NORMAL && !capable(CAP_SYS_NICE) &&
		    !drm_is_current_master(file))
			return -EACCES;
		args->out.alloc.ctx_id = 0;
		return ctx_alloc(node, mgr, &args->out.alloc.ctx_id);
	case AMDGPU_CTX_OP_FREE_CTX:
		return ctx_free(mgr, id);
	default:
		ctx = ctx_get(mgr, id);
		if (!ctx)
			return -EINVAL;
		/* no submit_lock: a CS may wait there for a hung engine */
		ctx_query(ctx, &args->out, op == AMDGPU_CTX_OP_QUERY_STATE2);
		ctx_put(ctx);
		return 0;
	}
}

/* ---- entities and their fences ------------------------------------------ */

/* amdgpu_ctx_get_entity(): DMA only; instance 0; ring < 2 */
static struct kfdsim_entity *ctx_entity(struct kfdsim_ctx *ctx, u32 ip, u32 inst, u32 ring)
{
	if (ip != AMDGPU_HW_IP_DMA || inst || ring >= KFDSIM_CTX_RINGS || !ctx->node->sdma)
		return NULL;
	return &ctx->entities[ring];
}

/*
 * amdgpu_ctx_get_fence(): a reference on the fence of job @seq (~0: the
 * last one), NULL if it is too old to be kept (signaled), -EINVAL if it
 * was never submitted.
 */
static struct dma_fence *entity_fence(struct kfdsim_entity *e, u64 seq)
{
	struct dma_fence *f;

	spin_lock(&e->lock);
	if (seq == ~0ULL)
		seq = e->sequence - 1;
	if (seq >= e->sequence)
		f = ERR_PTR(-EINVAL);
	else if (seq + KFDSIM_SCHED_JOBS < e->sequence)
		f = NULL;
	else
		f = dma_fence_get(e->fences[seq % KFDSIM_SCHED_JOBS]);
	spin_unlock(&e->lock);
	return f;
}

/* ---- CS ----------------------------------------------------------------- */

struct cs_parser {
	struct drm_file *file;
	struct kfdsim_ctx *ctx;
	struct kfdsim_entity *entity;
	u32 n_ibs;
	struct kfdsim_ib ibs[KFDSIM_CS_MAX_IBS];
	u32 n_deps;
	struct dma_fence *deps[KFDSIM_CS_MAX_DEPS];
	bool bo_handles;
};

static int parse_ib(struct cs_parser *p, void __user *data, u32 size)
{
	struct drm_amdgpu_cs_chunk_ib ib;
	struct kfdsim_entity *e;

	if (size < sizeof(ib))
		return -EINVAL;
	if (copy_from_user(&ib, data, sizeof(ib)))
		return -EFAULT;
	e = ctx_entity(p->ctx, ib.ip_type, ib.ip_instance, ib.ring);
	if (!e || (p->entity && p->entity != e) || p->n_ibs == KFDSIM_CS_MAX_IBS)
		return -EINVAL;
	if (ib.ib_bytes / 4 > IB_MAX_DWORDS)
		return -EINVAL;
	p->entity = e;
	p->ibs[p->n_ibs].va = ib.va_start;
	p->ibs[p->n_ibs].dwords = ib.ib_bytes / 4;
	p->n_ibs++;
	return 0;
}

/* amdgpu_cs_p2_dependencies(): a fence per entry that has not signaled */
static int parse_deps(struct cs_parser *p, void __user *data, u32 size)
{
	struct kfdsim_ctx_mgr *mgr = file_mgr(p->file);
	u32 i, n = size / sizeof(struct drm_amdgpu_cs_chunk_dep);

	for (i = 0; i < n; i++) {
		struct drm_amdgpu_cs_chunk_dep dep;
		struct kfdsim_entity *e;
		struct kfdsim_ctx *ctx;
		struct dma_fence *f;

		if (copy_from_user(&dep, data + i * sizeof(dep), sizeof(dep)))
			return -EFAULT;
		ctx = ctx_get(mgr, dep.ctx_id);
		if (!ctx)
			return -EINVAL;
		e = ctx_entity(ctx, dep.ip_type, dep.ip_instance, dep.ring);
		f = e ? entity_fence(e, dep.handle) : ERR_PTR(-EINVAL);
		ctx_put(ctx);
		if (IS_ERR(f))
			return PTR_ERR(f);
		if (!f || dma_fence_is_signaled(f)) {
			dma_fence_put(f);
			continue;
		}
		if (p->n_deps == KFDSIM_CS_MAX_DEPS) {
			dma_fence_put(f);
			return -EINVAL;
		}
		p->deps[p->n_deps++] = f;
	}
	return 0;
}

/* A BO_HANDLES chunk: a list of this CS only; its handles must exist */
static int parse_bo_handles(struct cs_parser *p, void __user *data, u32 size)
{
	struct drm_amdgpu_bo_list_in in;
	u32 i, esize;

	if (p->bo_handles || size < sizeof(in))
		return -EINVAL;
	p->bo_handles = true;
	if (copy_from_user(&in, data, sizeof(in)))
		return -EFAULT;
	if (in.bo_number > BO_LIST_MAX_ENTRIES)
		return -EINVAL;
	esize = min_t(u32, in.bo_info_size, sizeof(struct drm_amdgpu_bo_list_entry));
	for (i = 0; i < in.bo_number; i++) {
		struct drm_amdgpu_bo_list_entry entry = { };
		struct drm_gem_object *obj;

		if (copy_from_user(&entry, u64_to_user_ptr(in.bo_info_ptr) +
				   (u64)i * in.bo_info_size, esize))
			return -EFAULT;
		obj = drm_gem_object_lookup(p->file, entry.bo_handle);
		if (!obj)
			return -ENOENT;
		drm_gem_object_put(obj);
	}
	return 0;
}

static int parse_chunk(struct cs_parser *p, u64 __user *chunks, u32 i)
{
	struct drm_amdgpu_cs_chunk chunk;
	void __user *data;
	u64 ptr;
	u32 size;

	if (copy_from_user(&ptr, chunks + i, sizeof(ptr)) ||
	    copy_from_user(&chunk, u64_to_user_ptr(ptr), sizeof(chunk)))
		return -EFAULT;
	data = u64_to_user_ptr(chunk.chunk_data);
	if (chunk.length_dw > U32_MAX / 4)
		return -EINVAL;
	size = chunk.length_dw * 4;
	switch (chunk.chunk_id) {
	case AMDGPU_CHUNK_ID_IB:
		return parse_ib(p, data, size);
	case AMDGPU_CHUNK_ID_DEPENDENCIES:
	case AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES:
		return parse_deps(p, data, size);
	case AMDGPU_CHUNK_ID_BO_HANDLES:
		return parse_bo_handles(p, data, size);
	case AMDGPU_CHUNK_ID_FENCE:
	case AMDGPU_CHUNK_ID_SYNCOBJ_IN:
	case AMDGPU_CHUNK_ID_SYNCOBJ_OUT:
	case AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_WAIT:
	case AMDGPU_CHUNK_ID_SYNCOBJ_TIMELINE_SIGNAL:
	case AMDGPU_CHUNK_ID_CP_GFX_SHADOW:
		pr_info_once(KFDSIM_NAME ": CS chunk %u not modelled yet (EINVAL)\n", chunk.chunk_id);
		return -EINVAL;
	default:
		return -EINVAL;
	}
}

static void parser_fini(struct cs_parser *p)
{
	while (p->n_deps)
		dma_fence_put(p->deps[--p->n_deps]);
	if (p->ctx)
		ctx_put(p->ctx);
}

/* Waits for the entity's slot, then hands the job to an engine. */
static int push_job(struct cs_parser *p, u64 *seq)
{
	struct kfdsim_entity *e = p->entity;
	struct kfdsim_ctx_mgr *mgr = file_mgr(p->file);
	struct kfdsim_sdma_engine *engine;
	struct dma_fence *prev, *fence;
	struct kfdsim_job *job;
	long r;
	int ret;

	job = kzalloc(struct_size(job, deps, p->n_deps), GFP_KERNEL);
	if (!job)
		return -ENOMEM;
	ret = mutex_lock_interruptible(&p->ctx->submit_lock);
	if (ret)
		goto err_job;
	/* amdgpu_ctx_wait_prev_fence(): the job 32 back must have ended */
	spin_lock(&e->lock);
	prev = dma_fence_get(e->fences[e->sequence % KFDSIM_SCHED_JOBS]);
	spin_unlock(&e->lock);
	if (prev) {
		r = dma_fence_wait(prev, true);
		dma_fence_put(prev);
		if (r) {
			ret = r;
			goto err_unlock;
		}
	}
	fence = fence_create(e->fence_context, 0);
	if (!fence) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	job->ctx = p->ctx;
	kref_get(&p->ctx->ref);
	job->mgr = mgr;
	job->entity = e;
	job->vm = kfdsim_fpriv_vm(p->file);
	job->fence = fence;
	job->n_ibs = p->n_ibs;
	memcpy(job->ibs, p->ibs, sizeof(p->ibs));
	job->n_deps = p->n_deps;
	memcpy(job->deps, p->deps, p->n_deps * sizeof(p->deps[0]));
	p->n_deps = 0;		/* the job owns them now */

	spin_lock(&e->lock);
	*seq = e->sequence++;
	fence->seqno = *seq;
	dma_fence_put(e->fences[*seq % KFDSIM_SCHED_JOBS]);
	e->fences[*seq % KFDSIM_SCHED_JOBS] = dma_fence_get(fence);
	if (!e->pending++)
		e->engine = kfdsim_sdma_pick_engine(p->ctx->node);
	engine = e->engine;
	spin_unlock(&e->lock);
	atomic_inc(&mgr->jobs);
	atomic_inc(&live_jobs);
	kfdsim_sdma_queue(engine, job);
	mutex_unlock(&p->ctx->submit_lock);
	return 0;

err_unlock:
	mutex_unlock(&p->ctx->submit_lock);
err_job:
	kfree(job);
	return ret;
}

void kfdsim_cs_job_done(struct kfdsim_job *job, int err)
{
	struct kfdsim_entity *e = job->entity;
	struct kfdsim_ctx_mgr *mgr = job->mgr;
	u32 i;

	if (err)
		dma_fence_set_error(job->fence, err);
	dma_fence_signal(job->fence);
	dma_fence_put(job->fence);
	spin_lock(&e->lock);
	if (!--e->pending)
		e->engine = NULL;
	spin_unlock(&e->lock);
	for (i = 0; i < job->n_deps; i++)
		dma_fence_put(job->deps[i]);
	ctx_put(job->ctx);
	kfree(job);
	atomic_dec(&live_jobs);
	/* the file may be gone once jobs is 0: wake_up_var() does not touch it */
	if (atomic_dec_and_test(&mgr->jobs))
		wake_up_var(&mgr->jobs);
}

int kfdsim_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_cs *cs = data;
	struct kfdsim_node *node = drm_node(dev);
	struct cs_parser p = { .file = file };
	u64 __user *chunks = u64_to_user_ptr(cs->in.chunks);
	u32 i;
	u64 seq;
	int ret;

	ret = kfdsim_inject("cs", "entry");
	if (ret)
		return ret;
	if (!node)
		return -ENODEV;
	if (!cs->in.num_chunks)
		return -EINVAL;
	p.ctx = ctx_get(file_mgr(file), cs->in.ctx_id);
	if (!p.ctx)
		return -EINVAL;
	if (atomic_read(&p.ctx->guilty)) {
		ret = -ECANCELED;
		goto out;
	}
	for (i = 0; i < cs->in.num_chunks; i++) {
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			goto out;
		}
		ret = parse_chunk(&p, chunks, i);
		if (ret)
			goto out;
		cond_resched();
	}
	if (!p.n_ibs) {
		ret = -EINVAL;
		goto out;
	}
	if (cs->in.bo_list_handle) {
		ret = p.bo_handles ? -EINVAL : kfdsim_bo_list_check(file, cs->in.bo_list_handle);
		if (ret)
			goto out;
	}
	ret = push_job(&p, &seq);
	if (!ret) {
		memset(&cs->out, 0, sizeof(cs->out));
		cs->out.handle = seq;
	}
out:
	parser_fini(&p);
	return ret;
}

/* amdgpu_gem_timeout(): an absolute CLOCK_MONOTONIC time in jiffies from now */
static unsigned long wait_jiffies(u64 timeout_ns)
{
	unsigned long j;
	s64 left;

	if ((s64)timeout_ns < 0)
		return MAX_SCHEDULE_TIMEOUT;
	left = (s64)timeout_ns - ktime_get_ns();
	if (left < 0)
		return 0;
	j = nsecs_to_jiffies(left);
	return j >= MAX_SCHEDULE_TIMEOUT ? MAX_SCHEDULE_TIMEOUT - 1 : j;
}

int kfdsim_wait_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_wait_cs *wait = data;
	unsigned long timeout = wait_jiffies(wait->in.timeout);
	struct kfdsim_entity *e;
	struct kfdsim_ctx *ctx;
	struct dma_fence *f;
	long r;

	if (!drm_node(dev))
		return -ENODEV;
	ctx = ctx_get(file_mgr(file), wait->in.ctx_id);
	if (!ctx)
		return -EINVAL;
	e = ctx_entity(ctx, wait->in.ip_type, wait->in.ip_instance, wait->in.ring);
	f = e ? entity_fence(e, wait->in.handle) : ERR_PTR(-EINVAL);
	if (IS_ERR(f)) {
		r = PTR_ERR(f);
	} else if (f) {
		r = dma_fence_wait_timeout(f, true, timeout);
		if (r > 0 && f->error)
			r = f->error;
		dma_fence_put(f);
	} else {
		r = 1;
	}
	ctx_put(ctx);
	if (r < 0)
		return r;
	memset(wait, 0, sizeof(*wait));
	wait->out.status = r == 0;
	return 0;
}

/* debugfs kfdsim/sdma: what every file has alive (all 0 once they are closed) */
void kfdsim_cs_show(struct seq_file *m)
{
	seq_printf(m, "contexts %d jobs %d fences %d\n", atomic_read(&live_ctxs),
		   atomic_read(&live_jobs), atomic_read(&live_fences));
}

/* Module unload: every file is closed, so anything alive is a leak. */
void kfdsim_cs_fini(void)
{
	WARN(atomic_read(&live_ctxs) || atomic_read(&live_jobs) || atomic_read(&live_fences),
	     KFDSIM_NAME ": leaked %d contexts, %d jobs, %d fences\n", atomic_read(&live_ctxs),
	     atomic_read(&live_jobs), atomic_read(&live_fences));
}
