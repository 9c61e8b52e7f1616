// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: user-mode queues (kfd_chardev.c CREATE/DESTROY_QUEUE, the process
 * queue manager kfd_process_queue_manager.c, the parts of the device queue
 * manager that hand out ids, 6.12's queue-buffer validation of kfd_queue.c),
 * queue eviction, SET_XNACK_MODE, and the doorbell and MMIO mmaps of /dev/kfd.
 *
 * Compute queues do not execute; SDMA queues do (see "user-mode SDMA
 * queues" below). A queue is bookkeeping plus two kernel-owned byte arrays
 * standing for hardware state:
 *
 *   MQD            compute: 2048 bytes per XCC on GFX9 and later, 1024 before;
 *                  SDMA: 512 bytes. Filled at creation with a header
 *                  (struct mqd_image) describing the queue, rest zero.
 *   control stack  compute queues only: ctl_stack_size bytes per XCC. Each
 *                  time an active queue is evicted (preempted), a header
 *                  (struct ctl_stack_image) with a process-wide sequence
 *                  number is written at its start, as if the CP saved waves.
 *
 * Ids (ABI document 2.4): queue ids 0..1023 per process (smallest free); at
 * most 127 queues per device and process (255 on GFX 9.4.3/9.4.4); compute
 * doorbell ids per pdd, smallest free outside the non-CP range reserved for
 * SDMA (0x100..0x1FF and its mirror 0x300..0x3FF); SDMA doorbell ids fixed by
 * engine and queue (0x100 + 0x10 * engine + queue / 2, + 0x200 for odd
 * queues); before SOC15 the doorbell id is the queue id. SDMA slots are
 * per device: one bitmap for SDMA engines (engines * queues per engine
 * slots) and one for XGMI SDMA engines.
 *
 * Eviction (3.2): pdd->evicted counts evictions; queues are active only at
 * 0. Evicting an already-evicted pdd just counts.
 *
 * Locking: process->mutex protects the process's queues, the pdd queue
 * state and the BOs' queue_refs; kfdsim_dqm_lock (inside process->mutex)
 * protects the per-device SDMA bitmaps and MMIO pages.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/highmem.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

DEFINE_MUTEX(kfdsim_dqm_lock);

static unsigned int sdma_queue_poll_us = 1000;
module_param(sdma_queue_poll_us, uint, 0644);
MODULE_PARM_DESC(sdma_queue_poll_us, "How often the engines look at active user-mode SDMA queues' write pointers, in us (default 1000, at least a jiffy)");

#define KFD_MAX_QUEUE_PERCENTAGE	100
#define KFD_MAX_QUEUE_PRIORITY		15
#define KFD_MIN_QUEUE_RING_SIZE		1024
#define DOORBELL_NON_CP_START		0x100
#define DOORBELL_NON_CP_END		0x1FF
#define DOORBELL_MIRROR_OFFSET		512
#define KFD_CRIU_OBJECT_TYPE_QUEUE	0
#define QUEUE_FORMAT_PM4		0
#define QUEUE_FORMAT_AQL		1

struct mqd_image {
	char magic[4];			/* "KSMQ" */
	u32 queue_id;
	u32 type;
	u32 gfx_target_version;
	u64 ring;
	u64 ring_size;
	u64 rptr;
	u64 wptr;
	u64 eop;
	u64 cwsr;
	u32 doorbell_id;
	u32 priority;
};

struct ctl_stack_image {
	char magic[4];			/* "KSCS" */
	u32 queue_id;
	u64 seq;
};

static u32 gfxv(const struct kfdsim_node *dev)
{
	return dev->props[NP_GFX_TARGET_VERSION];
}

static bool is_soc15(const struct kfdsim_node *dev)
{
	return gfxv(dev) >= 90000;
}

static bool is_compute(u32 type)
{
	return type == KFDSIM_QUEUE_COMPUTE;
}

static bool is_sdma(u32 type)
{
	return type == KFDSIM_QUEUE_SDMA || type == KFDSIM_QUEUE_SDMA_XGMI ||
	       type == KFDSIM_QUEUE_SDMA_BY_ENG_ID;
}

static u32 max_queues(const struct kfdsim_node *dev)
{
	u32 v = gfxv(dev) / 100 * 100;

	return v == 90400 ? 255 : 127;	/* GFX 9.4.3 and 9.4.4 */
}

static u32 mqd_size(const struct kfdsim_node *dev, u32 type)
{
	if (is_sdma(type))
		return 512;
	return (is_soc15(dev) ? 2048 : 1024) * kfdsim_num_xcc(dev);
}

static u32 n_sdma(const struct kfdsim_node *dev)
{
	return dev->props[NP_NUM_SDMA_ENGINES];
}

static u32 n_xgmi(const struct kfdsim_node *dev)
{
	return dev->props[NP_NUM_SDMA_XGMI_ENGINES];
}

static u32 sdma_slots(const struct kfdsim_node *dev, bool xgmi)
{
	u32 n = (xgmi ? n_xgmi(dev) : n_sdma(dev)) *
		dev->props[NP_NUM_SDMA_QUEUES_PER_ENGINE];

	return min_t(u32, n, KFDSIM_MAX_SDMA_SLOTS);
}

/* ---- pages shared with user space ------------------------------------------ */

struct page **kfdsim_alloc_pages(u32 n)
{
	struct page **pages = kcalloc(n, sizeof(*pages), GFP_KERNEL);
	u32 i;

	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pages[i]) {
			kfdsim_free_pages(pages, i);
			return NULL;
		}
	}
	return pages;
}

/* Pages still mapped by user space stay alive: the mappings hold references. */
void kfdsim_free_pages(struct page **pages, u32 n)
{
	u32 i;

	if (!pages)
		return;
	for (i = 0; i < n; i++)
		if (pages[i])
			put_page(pages[i]);
	kfree(pages);
}

static int map_pages(struct vm_area_struct *vma, struct page **pages, u32 n)
{
	vma->vm_pgoff = 0;
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE |
		     VM_DONTDUMP);
	return vm_map_pages_zero(vma, pages, n);
}

/* ---- doorbells --------------------------------------------------------------- */

/*
 * kfd_alloc_process_doorbells() and init_doorbell_bitmap(), from
 * CREATE_QUEUE (process mutex held) or mmap (mmap_lock held): the slice is
 * made once, under the innermost doorbell_lock.
 */
static int alloc_process_doorbells(struct kfdsim_pdd *pdd)
{
	u32 n = kfdsim_doorbell_slice_size(pdd->dev) >> PAGE_SHIFT, i;
	struct mutex *lock = &pdd->process->doorbell_lock;
	int ret = 0;

	mutex_lock(lock);
	if (pdd->doorbell_pages)
		goto out;
	pdd->doorbell_pages = kfdsim_alloc_pages(n);
	if (!pdd->doorbell_pages) {
		ret = -ENOMEM;
		goto out;
	}
	pdd->n_doorbell_pages = n;
	if (is_soc15(pdd->dev))
		for (i = DOORBELL_NON_CP_START; i <= DOORBELL_NON_CP_END; i++) {
			set_bit(i, pdd->doorbell_bitmap);
			set_bit(i + DOORBELL_MIRROR_OFFSET, pdd->doorbell_bitmap);
		}
out:
	mutex_unlock(lock);
	return ret;
}

static u32 sdma_engine(const struct kfdsim_node *dev, const struct kfdsim_queue *q)
{
	if (q->type == KFDSIM_QUEUE_SDMA_BY_ENG_ID)
		return q->sdma_engine_id;
	if (q->type == KFDSIM_QUEUE_SDMA_XGMI)
		return n_sdma(dev) + q->sdma_id % max(n_xgmi(dev), 1U);
	return q->sdma_id % max(n_sdma(dev), 1U);
}

static u32 sdma_doorbell(const struct kfdsim_node *dev, const struct kfdsim_queue *q)
{
	u32 engines = q->type == KFDSIM_QUEUE_SDMA ? n_sdma(dev) :
		      q->type == KFDSIM_QUEUE_SDMA_XGMI ? n_xgmi(dev) :
		      q->sdma_engine_id < n_sdma(dev) ? n_sdma(dev) : n_xgmi(dev);
	u32 qn = q->sdma_id / max(engines, 1U);

	return DOORBELL_NON_CP_START + 0x10 * sdma_engine(dev, q) + qn / 2 +
	       (qn & 1) * DOORBELL_MIRROR_OFFSET;
}

/* allocate_doorbell(): @restore_id is the CRIU doorbell id or NULL */
static int allocate_doorbell(struct kfdsim_pdd *pdd, struct kfdsim_queue *q,
			     const u32 *restore_id)
{
	struct kfdsim_node *dev = pdd->dev;
	u32 id;

	if (!is_soc15(dev)) {
		if (restore_id && *restore_id != q->id)
			return -EINVAL;
		q->doorbell_id = q->id;
		return 0;
	}
	if (is_sdma(q->type)) {
		id = sdma_doorbell(dev, q);
		if (restore_id && *restore_id != id)
			return -EINVAL;
		q->doorbell_id = id;
		return 0;
	}
	if (restore_id) {
		if (*restore_id >= KFDSIM_MAX_QUEUES ||
		    __test_and_set_bit(*restore_id, pdd->doorbell_bitmap))
			return -EINVAL;
		q->doorbell_id = *restore_id;
		return 0;
	}
	id = find_first_zero_bit(pdd->doorbell_bitmap, KFDSIM_MAX_QUEUES);
	if (id >= KFDSIM_MAX_QUEUES)
		return -EBUSY;
	set_bit(id, pdd->doorbell_bitmap);
	q->doorbell_id = id;
	return 0;
}

static void deallocate_doorbell(struct kfdsim_pdd *pdd, struct kfdsim_queue *q)
{
	if (is_soc15(pdd->dev) && is_compute(q->type))
		clear_bit(q->doorbell_id, pdd->doorbell_bitmap);
}

/* ---- SDMA slots ---------------------------------------------------------------- */

/* allocate_sdma_queue(): @restore_id is the CRIU sdma_id or NULL */
static int allocate_sdma_queue(struct kfdsim_node *dev, struct kfdsim_queue *q,
			       const u32 *restore_id)
{
	bool xgmi = q->type == KFDSIM_QUEUE_SDMA_XGMI;
	unsigned long *bm;
	u32 slots, i;
	int ret = 0;

	if (q->type == KFDSIM_QUEUE_SDMA_BY_ENG_ID) {
		if (q->sdma_engine_id >= n_sdma(dev) + n_xgmi(dev))
			return -EINVAL;
		xgmi = q->sdma_engine_id >= n_sdma(dev);
	}
	bm = xgmi ? dev->xgmi_sdma_bitmap : dev->sdma_bitmap;
	slots = sdma_slots(dev, xgmi);

	mutex_lock(&kfdsim_dqm_lock);
	if (restore_id) {
		ret = kfdsim_inject("restore", "sdma_slot");
		if (!ret && (*restore_id >= slots || test_bit(*restore_id, bm)))
			ret = -EBUSY;
		if (!ret) {
			set_bit(*restore_id, bm);
			q->sdma_id = *restore_id;
		}
		goto out;
	}
	for (i = 0; i < slots; i++) {
		if (test_bit(i, bm))
			continue;
		if (q->type == KFDSIM_QUEUE_SDMA_BY_ENG_ID &&
		    i % max(xgmi ? n_xgmi(dev) : n_sdma(dev), 1U) !=
		    q->sdma_engine_id - (xgmi ? n_sdma(dev) : 0))
			continue;
		break;
	}
	if (i >= slots) {
		ret = -ENOMEM;	/* "No more SDMA queue to allocate" */
		goto out;
	}
	set_bit(i, bm);
	q->sdma_id = i;
out:
	mutex_unlock(&kfdsim_dqm_lock);
	return ret;
}

static void deallocate_sdma_queue(struct kfdsim_node *dev, struct kfdsim_queue *q)
{
	bool xgmi = q->type == KFDSIM_QUEUE_SDMA_XGMI ||
		    (q->type == KFDSIM_QUEUE_SDMA_BY_ENG_ID &&
		     q->sdma_engine_id >= n_sdma(dev));

	mutex_lock(&kfdsim_dqm_lock);
	clear_bit(q->sdma_id, xgmi ? dev->xgmi_sdma_bitmap : dev->sdma_bitmap);
	mutex_unlock(&kfdsim_dqm_lock);
}

/* ---- queue buffers (kfd_queue.c of 6.12) --------------------------------------- */

/* The BO mapping in @pdd's VM containing GPU VA @addr, and its start. */
static struct kfdsim_bo *lookup_mapping(struct kfdsim_pdd *pdd, u64 addr,
					u64 *start, u64 *last)
{
	struct kfdsim_process *p = pdd->process;
	struct kfdsim_bo *bo;
	u32 i;
	int id;

	for (i = 0; i < p->n_pdds; i++)
		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id) {
			u64 halves = bo->alloc_flags &
				     KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM ? 2 : 1;

			if (!test_bit(pdd->index, bo->mapped) || addr < bo->va ||
			    addr >= bo->va + halves * bo->size)
				continue;
			/* AQL BOs are two mappings of the same backing */
			*start = addr >= bo->va + bo->size ? bo->va + bo->size : bo->va;
			*last = *start + bo->size - 1;
			return bo;
		}
	return NULL;
}

/* kfd_queue_buffer_get() */
static int queue_buffer_get(struct kfdsim_pdd *pdd, u64 addr,
			    struct kfdsim_bo **pbo, u64 expected_size)
{
	struct kfdsim_bo *bo;
	u64 start, last, a = addr >> PAGE_SHIFT, size = expected_size >> PAGE_SHIFT;

	*pbo = NULL;
	if (!addr)
		return 0;
	bo = lookup_mapping(pdd, addr, &start, &last);
	if (!bo)
		return -EINVAL;
	if (a != start >> PAGE_SHIFT ||
	    (size != 0 && a + size - 1 != last >> PAGE_SHIFT))
		return -EINVAL;
	bo->queue_refs[pdd->index]++;
	*pbo = bo;
	return 0;
}

static void queue_release_buffers(struct kfdsim_queue *q)
{
	u32 i;

	if (q->cwsr_svm_size) {
		kfdsim_svm_queue_buffer_put(q->pdd, q->cwsr, q->cwsr_svm_size);
		q->cwsr_svm_size = 0;
	}
	for (i = 0; i < ARRAY_SIZE(q->bufs); i++)
		if (q->bufs[i]) {
			q->bufs[i]->queue_refs[q->pdd->index]--;
			q->bufs[i] = NULL;
		}
}

/* kfd_queue_acquire_buffers() */
static int queue_acquire_buffers(struct kfdsim_pdd *pdd, struct kfdsim_queue *q)
{
	struct kfdsim_node *dev = pdd->dev;
	u64 ring_size = q->ring_size, total_cwsr;
	int err;

	total_cwsr = ALIGN((u64)(dev->props[NP_CWSR_SIZE] + dev->debug_memory_size) *
			   kfdsim_num_xcc(dev), PAGE_SIZE);
	err = queue_buffer_get(pdd, q->wptr, &q->bufs[0], PAGE_SIZE);
	if (err)
		goto out_err;
	err = queue_buffer_get(pdd, q->rptr, &q->bufs[1], PAGE_SIZE);
	if (err)
		goto out_err;
	/* GFX7/8 AQL rings are mapped twice: half the size each */
	if (q->format == QUEUE_FORMAT_AQL && gfxv(dev) < 90000)
		ring_size /= 2;
	err = queue_buffer_get(pdd, q->ring, &q->bufs[2], ring_size);
	if (err)
		goto out_err;
	/* only compute queues need an EOP buffer and a CWSR area */
	if (!is_compute(q->type))
		return 0;
	if (q->eop) {
		if (q->eop_size < dev->eop_buffer_size) {
			err = -EINVAL;
			goto out_err;
		}
		err = queue_buffer_get(pdd, q->eop, &q->bufs[3], q->eop_size);
		if (err)
			goto out_err;
	}
	if (q->ctl_stack_size != dev->props[NP_CTL_STACK_SIZE] ||
	    q->cwsr_size < dev->props[NP_CWSR_SIZE]) {
		err = -EINVAL;
		goto out_err;
	}
	err = queue_buffer_get(pdd, q->cwsr, &q->bufs[4], total_cwsr);
	if (!err)
		return 0;
	/* or always-mapped SVM memory (libhsakmt 6.x with SVMAPI_SUPPORTED) */
	err = kfdsim_svm_queue_buffer_get(pdd, q->cwsr, total_cwsr);
	if (err)
		goto out_err;
	q->cwsr_svm_size = total_cwsr;
	return 0;

out_err:
	queue_release_buffers(q);
	return err;
}

/* ---- user-mode SDMA and AQL queues ---------------------------------------------- */

/*
 * SDMA queues execute, and so do AQL compute queues (aql.c, the same poller:
 * pointers are 64-bit packet indices there, the packets are the CP's). The hardware finds new work by polling the write
 * pointer in memory (KFD's SDMA MQDs enable the engine's wptr poll at
 * write_pointer_address; the doorbell only hurries it), runs the packets
 * between the read and write pointers and writes the read pointer back to
 * read_pointer_address. Here a delayed work per process does that for each
 * active SDMA queue every sdma_queue_poll_us, under the process mutex (so
 * an eviction, a CRIU checkpoint or a destruction waits for the pass and
 * then sees an idle engine); it is rescheduled only while the process has
 * an active SDMA queue that has not stopped, and cancelled when the mm
 * goes (kfdsim_queues_stop_polling()) and at process release. Pointers are
 * byte offsets: 64-bit and monotonic from SDMA v4 (gfx9) on, 32-bit and
 * wrapped into the ring before. The packets are sdma.c's
 * (kfdsim_sdma_run_ring()); every address is a GPU VA of the queue's pdd:
 * a KFD BO mapped there, or an SVM range (the CPU address). A bad packet,
 * a VM fault or a write pointer outside the ring stops the queue (a dmesg
 * line names it) until it is destroyed.
 */

/*
 * The page behind GPU VA @va in @q's VM, for sdma.c (process mutex held,
 * the mm referenced by the poller): as kfdsim_gpuvm_page() does for a
 * render-node VM.
 */
int kfdsim_queue_va_page(struct kfdsim_queue *q, u64 va, bool write, struct page **page,
			 u32 *offset, u32 *len)
{
	struct kfdsim_pdd *pdd = q->pdd;
	struct mm_struct *mm = pdd->process->mm;
	struct kfdsim_bo *bo;
	u64 start, last, off, uaddr;
	long n;

	lockdep_assert_held(&pdd->process->mutex);
	bo = lookup_mapping(pdd, va, &start, &last);
	if (bo) {
		if (bo->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
				       KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP))
			return -EFAULT;
		if (write && !(bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE))
			return -EACCES;
		off = va - start;
		*len = min_t(u64, PAGE_SIZE - offset_in_page(off), last + 1 - va);
		*offset = offset_in_page(off);
		if (!(bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
			return kfdsim_gem_page(bo->gem, off, page);
		uaddr = bo->user_addr + off;
	} else if (kfdsim_svm_overlaps(pdd->process, va & PAGE_MASK, PAGE_SIZE)) {
		uaddr = va;
		*offset = offset_in_page(va);
		*len = PAGE_SIZE - *offset;
	} else {
		return -EFAULT;
	}
	if (!mm)
		return -ESRCH;
	mmap_read_lock(mm);
	n = get_user_pages_remote(mm, uaddr & PAGE_MASK, 1, write ? FOLL_WRITE : 0, page, NULL);
	mmap_read_unlock(mm);
	return n == 1 ? 0 : -EFAULT;
}

/*
 * @len bytes at GPU VA @va of @q's VM to or from @buf, page by page (process
 * mutex held); a page written is marked dirty. A fault is logged unless
 * @quiet (a caller that reports it itself).
 */
int kfdsim_queue_va_access(struct kfdsim_queue *q, u64 va, void *buf, u32 len, bool write,
			   bool quiet)
{
	struct page *page;
	u32 off, n;
	int ret;

	while (len) {
		ret = kfdsim_queue_va_page(q, va, write, &page, &off, &n);
		if (ret) {
			if (!quiet)
				pr_warn_ratelimited(KFDSIM_NAME ": gpu%u: AQL queue %u: GPU VM fault at 0x%llx (%s, %d)\n",
						    q->pdd->dev->gpu_index, q->id, va,
						    write ? "write" : "read", ret);
			return ret;
		}
		n = min(n, len);
		if (write) {
			memcpy_to_page(page, off, buf, n);
			set_page_dirty_lock(page);
		} else {
			memcpy_from_page(buf, page, off, n);
		}
		put_page(page);
		va += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static bool is_aql(const struct kfdsim_queue *q)
{
	return q->type == KFDSIM_QUEUE_COMPUTE && q->format == QUEUE_FORMAT_AQL;
}

/* a queue whose packets the poller runs: SDMA, and AQL (aql.c) */
static bool user_queue_runs(const struct kfdsim_queue *q)
{
	return (is_sdma(q->type) || is_aql(q)) && q->active && !q->stopped;
}

/*
 * A pointer at @addr: 64-bit from SDMA v4 on, else 32-bit. @bo is the
 * queue's reference to its BO (none after a CRIU restore): a GTT or VRAM
 * BO is read directly, without a walk of the VM at every pass.
 */
static int queue_pointer(struct kfdsim_queue *q, struct kfdsim_bo *bo, u64 addr, u64 *value,
			 bool write)
{
	u32 size = gfxv(q->pdd->dev) >= 90000 || is_aql(q) ? 8 : 4, off, len;
	struct page *page;
	int ret;

	if (bo && (bo->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_VRAM)) &&
	    (!write || (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)) &&
	    addr >= bo->va && addr + size <= bo->va + bo->size && !((addr - bo->va) & (size - 1))) {
		ret = kfdsim_gem_page(bo->gem, addr - bo->va, &page);
		off = offset_in_page(addr - bo->va);
		len = PAGE_SIZE - off;
	} else {
		ret = kfdsim_queue_va_page(q, addr, write, &page, &off, &len);
	}
	if (ret)
		return ret;
	if (len < size) {
		put_page(page);
		return -EFAULT;
	}
	if (write) {
		memcpy_to_page(page, off, (const char *)value, size);
	} else {
		*value = 0;
		memcpy_from_page((char *)value, page, off, size);
	}
	put_page(page);
	return 0;
}

static void user_queue_pass(struct kfdsim_queue *q)
{
	struct kfdsim_node *dev = q->pdd->dev;
	u64 rptr, wptr, start;
	int ret;

	ret = queue_pointer(q, q->bufs[1], q->rptr, &rptr, false);
	if (!ret)
		ret = queue_pointer(q, q->bufs[0], q->wptr, &wptr, false);
	if (ret) {
		pr_warn_ratelimited(KFDSIM_NAME ": %s%u: user queue %u: read or write pointer not readable (%d): the queue stops\n",
				    is_aql(q) ? "gpu" : "sdma", dev->gpu_index, q->id, ret);
		q->stopped = true;
		return;
	}
	if (rptr == wptr)
		return;
	start = rptr;
	if (is_aql(q))
		ret = kfdsim_aql_run(q, &rptr, wptr);
	else
		ret = kfdsim_sdma_run_ring(q, sdma_engine(dev, q), &rptr, wptr);
	if (rptr != start && queue_pointer(q, q->bufs[1], q->rptr, &rptr, true) && !ret)
		ret = -EFAULT;
	if (ret)
		q->stopped = true;
}

static void user_queues_poll(struct work_struct *work)
{
	struct kfdsim_process *p = container_of(to_delayed_work(work), struct kfdsim_process,
						sdma_poll);
	struct mm_struct *mm = READ_ONCE(p->mm);
	struct kfdsim_queue *q;
	bool again = false;

	if (!mm || !mmget_not_zero(mm))
		return;
	mutex_lock(&p->mutex);
	list_for_each_entry(q, &p->queues, list)
		if (user_queue_runs(q))
			user_queue_pass(q);
	list_for_each_entry(q, &p->queues, list)
		again |= user_queue_runs(q);
	if (again && !p->sdma_poll_stopped)
		queue_delayed_work(system_wq, &p->sdma_poll,
				   usecs_to_jiffies(READ_ONCE(sdma_queue_poll_us)) ?: 1);
	mutex_unlock(&p->mutex);
	/* the last user: its teardown cancels this work, so not from here */
	mmput_async(mm);
}

/* A queue may have become active: the engines look at it (process mutex held). */
static void user_queues_kick(struct kfdsim_process *p)
{
	struct kfdsim_queue *q;

	lockdep_assert_held(&p->mutex);
	if (p->sdma_poll_stopped)
		return;
	list_for_each_entry(q, &p->queues, list)
		if (user_queue_runs(q)) {
			queue_delayed_work(system_wq, &p->sdma_poll, 0);
			return;
		}
}

void kfdsim_queues_init_process(struct kfdsim_process *p)
{
	INIT_DELAYED_WORK(&p->sdma_poll, user_queues_poll);
}

/* The mm goes (or the module): no more passes. Not under the process mutex. */
void kfdsim_queues_stop_polling(struct kfdsim_process *p)
{
	mutex_lock(&p->mutex);
	p->sdma_poll_stopped = true;
	mutex_unlock(&p->mutex);
	cancel_delayed_work_sync(&p->sdma_poll);
}

/* ---- queue objects -------------------------------------------------------------- */

static void init_mqd(struct kfdsim_queue *q)
{
	struct mqd_image m = {
		.magic = "KSMQ",
		.queue_id = q->id,
		.type = q->type,
		.gfx_target_version = gfxv(q->pdd->dev),
		.ring = q->ring,
		.ring_size = q->ring_size,
		.rptr = q->rptr,
		.wptr = q->wptr,
		.eop = q->eop,
		.cwsr = q->cwsr,
		.doorbell_id = q->doorbell_id,
		.priority = q->priority,
	};

	memcpy(q->mqd, &m, min_t(u32, sizeof(m), q->mqd_size));
}

static void free_queue(struct kfdsim_queue *q)
{
	kvfree(q->mqd);
	kvfree(q->ctl_stack);
	kfree(q);
}

/* QUEUE_IS_ACTIVE(): a ring, a percentage and not evicted */
static bool queue_is_active(const struct kfdsim_queue *q)
{
	return q->ring && q->ring_size && q->percent && !q->pdd->evicted;
}

/* Preemption of an active queue: the CP saves the waves' control stack. */
static void save_ctl_stack(struct kfdsim_process *p, struct kfdsim_queue *q)
{
	struct ctl_stack_image c = { .magic = "KSCS", .queue_id = q->id };

	if (!q->ctl_stack || q->ctl_stack_bytes < sizeof(c))
		return;
	c.seq = ++p->ctl_stack_seq;
	memcpy(q->ctl_stack, &c, sizeof(c));
}

/*
 * pqm_create_queue() and create_queue_cpsch(). @qd: CRIU queue data (then
 * @mqd and @ctl_stack are the saved images), else a new queue.
 */
static int create_queue(struct kfdsim_process *p, struct kfdsim_pdd *pdd,
			struct kfdsim_queue *q,
			const struct kfdsim_criu_queue_priv *qd,
			const u8 *mqd, const u8 *ctl_stack)
{
	struct kfdsim_node *dev = pdd->dev;
	int ret;

	if (pdd->queue_count >= max_queues(dev))
		return -ENOSPC;
	if (qd) {
		if (qd->q_id >= KFDSIM_MAX_QUEUES)
			return -EINVAL;
		if (__test_and_set_bit(qd->q_id, p->queue_slot_bitmap))
			return -ENOSPC;
		q->id = qd->q_id;
	} else {
		q->id = find_first_zero_bit(p->queue_slot_bitmap, KFDSIM_MAX_QUEUES);
		if (q->id >= KFDSIM_MAX_QUEUES)
			return -ENOMEM;	/* "Cannot open more queues" */
		set_bit(q->id, p->queue_slot_bitmap);
	}
	q->pdd = pdd;

	if (is_sdma(q->type)) {
		ret = allocate_sdma_queue(dev, q, qd ? &qd->sdma_id : NULL);
		if (ret)
			goto err_slot;
	}
	ret = allocate_doorbell(pdd, q, qd ? &qd->doorbell_id : NULL);
	if (ret)
		goto err_sdma;

	q->mqd_size = mqd_size(dev, q->type);
	q->mqd = kvzalloc(q->mqd_size, GFP_KERNEL);
	if (qd)
		q->ctl_stack_bytes = qd->ctl_stack_size;
	else if (is_compute(q->type))
		q->ctl_stack_bytes = q->ctl_stack_size * kfdsim_num_xcc(dev);
	if (q->ctl_stack_bytes)
		q->ctl_stack = kvzalloc(q->ctl_stack_bytes, GFP_KERNEL);
	if (!q->mqd || (q->ctl_stack_bytes && !q->ctl_stack)) {
		ret = -ENOMEM;
		goto err_doorbell;
	}
	if (qd) {
		/* restore_mqd(): 6.12 does not check the MQD format */
		memcpy(q->mqd, mqd, min(q->mqd_size, qd->mqd_size));
		if (q->ctl_stack_bytes)
			memcpy(q->ctl_stack, ctl_stack, q->ctl_stack_bytes);
	} else {
		init_mqd(q);
	}
	q->active = queue_is_active(q);
	list_add(&q->list, &p->queues);
	pdd->queue_count++;
	user_queues_kick(p);
	return 0;

err_doorbell:
	deallocate_doorbell(pdd, q);
err_sdma:
	if (is_sdma(q->type))
		deallocate_sdma_queue(dev, q);
err_slot:
	clear_bit(q->id, p->queue_slot_bitmap);
	return ret;
}

static void destroy_queue(struct kfdsim_process *p, struct kfdsim_queue *q)
{
	struct kfdsim_pdd *pdd = q->pdd;

	list_del(&q->list);
	queue_release_buffers(q);
	deallocate_doorbell(pdd, q);
	if (is_sdma(q->type))
		deallocate_sdma_queue(pdd->dev, q);
	clear_bit(q->id, p->queue_slot_bitmap);
	pdd->queue_count--;
	free_queue(q);
}

/* Process teardown: queues, then the doorbell slices. */
void kfdsim_process_destroy_queues(struct kfdsim_process *p)
{
	struct kfdsim_queue *q, *tmp;
	u32 i;

	list_for_each_entry_safe(q, tmp, &p->queues, list)
		destroy_queue(p, q);
	for (i = 0; i < p->n_pdds; i++) {
		kfdsim_free_pages(p->pdds[i]->doorbell_pages, p->pdds[i]->n_doorbell_pages);
		p->pdds[i]->doorbell_pages = NULL;
	}
}

/* ---- ioctls ---------------------------------------------------------------------- */

/* set_queue_properties_from_user() */
static int queue_props_from_user(struct kfd_ioctl_create_queue_args *args,
				 struct kfdsim_queue *q)
{
	if ((args->queue_percentage & 0xFF) > KFD_MAX_QUEUE_PERCENTAGE)
		return -EINVAL;
	if (args->queue_priority > KFD_MAX_QUEUE_PRIORITY)
		return -EINVAL;
	if (args->ring_base_address &&
	    !access_ok(u64_to_user_ptr(args->ring_base_address), sizeof(u64)))
		return -EFAULT;
	if (!is_power_of_2(args->ring_size) && args->ring_size != 0)
		return -EINVAL;
	if (args->ring_size < KFD_MIN_QUEUE_RING_SIZE)
		args->ring_size = KFD_MIN_QUEUE_RING_SIZE;
	if (!access_ok(u64_to_user_ptr(args->read_pointer_address), sizeof(u32)))
		return -EFAULT;
	if (!access_ok(u64_to_user_ptr(args->write_pointer_address), sizeof(u32)))
		return -EFAULT;
	if (args->eop_buffer_address &&
	    !access_ok(u64_to_user_ptr(args->eop_buffer_address), sizeof(u32)))
		return -EFAULT;
	if (args->ctx_save_restore_address &&
	    !access_ok(u64_to_user_ptr(args->ctx_save_restore_address), sizeof(u32)))
		return -EFAULT;

	q->percent = args->queue_percentage & 0xFF;
	q->priority = args->queue_priority;
	q->ring = args->ring_base_address;
	q->ring_size = args->ring_size;
	q->rptr = args->read_pointer_address;
	q->wptr = args->write_pointer_address;
	q->eop = args->eop_buffer_address;
	q->eop_size = args->eop_buffer_size;
	q->cwsr = args->ctx_save_restore_address;
	q->cwsr_size = args->ctx_save_restore_size;
	q->ctl_stack_size = args->ctl_stack_size;

	switch (args->queue_type) {
	case KFD_IOC_QUEUE_TYPE_COMPUTE:
		q->type = KFDSIM_QUEUE_COMPUTE;
		q->format = QUEUE_FORMAT_PM4;
		break;
	case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL:
		q->type = KFDSIM_QUEUE_COMPUTE;
		q->format = QUEUE_FORMAT_AQL;
		break;
	case KFD_IOC_QUEUE_TYPE_SDMA:
		q->type = KFDSIM_QUEUE_SDMA;
		break;
	case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
		q->type = KFDSIM_QUEUE_SDMA_XGMI;
		break;
	case KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID:
		q->type = KFDSIM_QUEUE_SDMA_BY_ENG_ID;
		q->sdma_engine_id = args->sdma_engine_id;
		break;
	default:
		return -ENOTSUPP;
	}
	return 0;
}

int kfdsim_ioctl_create_queue(struct file *filep, struct kfdsim_process *p,
			      void *data)
{
	struct kfd_ioctl_create_queue_args *args = data;
	struct kfdsim_node *dev;
	struct kfdsim_pdd *pdd;
	struct kfdsim_queue *q;
	int err;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	err = queue_props_from_user(args, q);
	if (err)
		goto err_free;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		err = -EINVAL;
		goto err_unlock;
	}
	dev = pdd->dev;
	if (IS_ERR(kfdsim_bind_process_to_device(pdd))) {
		err = -ESRCH;
		goto err_unlock;
	}
	err = alloc_process_doorbells(pdd);
	if (err)
		goto err_unlock;
	q->pdd = pdd;
	err = queue_acquire_buffers(pdd, q);
	if (err)
		goto err_unlock;
	err = create_queue(p, pdd, q, NULL, NULL, NULL);
	if (err)
		goto err_buffers;

	args->queue_id = q->id;
	/* built from the user gpu_id passed in (ABI document 2.2) */
	args->doorbell_offset = KFDSIM_MMAP_TYPE_DOORBELL | KFDSIM_MMAP_GPU_ID(args->gpu_id);
	if (is_soc15(dev))
		args->doorbell_offset |= (u64)q->doorbell_id * 8 &
					 (kfdsim_doorbell_slice_size(dev) - 1);
	mutex_unlock(&p->mutex);
	return 0;

err_buffers:
	queue_release_buffers(q);
err_unlock:
	mutex_unlock(&p->mutex);
err_free:
	kfree(q);
	return err;
}

int kfdsim_ioctl_destroy_queue(struct file *filep, struct kfdsim_process *p,
			       void *data)
{
	struct kfd_ioctl_destroy_queue_args *args = data;
	struct kfdsim_queue *q;
	int ret = -EINVAL;

	mutex_lock(&p->mutex);
	list_for_each_entry(q, &p->queues, list)
		if (q->id == args->queue_id) {
			destroy_queue(p, q);
			ret = 0;
			break;
		}
	mutex_unlock(&p->mutex);
	return ret;
}

static struct kfdsim_queue *queue_by_id(struct kfdsim_process *p, u32 id)
{
	struct kfdsim_queue *q;

	list_for_each_entry(q, &p->queues, list)
		if (q->id == id)
			return q;
	return NULL;
}

/*
 * kfd_ioctl_update_queue() and pqm_update_queue_properties(): the checks of
 * CREATE_QUEUE for percentage, priority, ring address and size (raised to
 * 1024, but the struct is not copied back: the ioctl is write-only); an
 * unknown queue EFAULT; a new ring (address and size non-zero) must be one
 * GPU mapping of exactly that size (EFAULT) and replaces the old ring's
 * buffer reference; address 0 disables the queue. The queue is active
 * again only with a ring, a percentage and no eviction.
 */
int kfdsim_ioctl_update_queue(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_update_queue_args *args = data;
	struct kfdsim_queue *q;
	struct kfdsim_bo *ring_bo;
	u32 ring_size = args->ring_size;
	int ret = 0;

	if ((args->queue_percentage & 0xFF) > KFD_MAX_QUEUE_PERCENTAGE)
		return -EINVAL;
	if (args->queue_priority > KFD_MAX_QUEUE_PRIORITY)
		return -EINVAL;
	if (args->ring_base_address &&
	    !access_ok(u64_to_user_ptr(args->ring_base_address), sizeof(u64)))
		return -EFAULT;
	if (!is_power_of_2(ring_size) && ring_size != 0)
		return -EINVAL;
	if (ring_size < KFD_MIN_QUEUE_RING_SIZE)
		ring_size = KFD_MIN_QUEUE_RING_SIZE;

	mutex_lock(&p->mutex);
	q = queue_by_id(p, args->queue_id);
	if (!q) {
		ret = -EFAULT;
		goto out;
	}
	if (args->ring_base_address) {
		if (queue_buffer_get(q->pdd, args->ring_base_address, &ring_bo, ring_size)) {
			ret = -EFAULT;
			goto out;
		}
		if (q->bufs[2])
			q->bufs[2]->queue_refs[q->pdd->index]--;
		q->bufs[2] = ring_bo;
	}
	q->ring = args->ring_base_address;
	q->ring_size = ring_size;
	q->percent = args->queue_percentage & 0xFF;
	q->priority = args->queue_priority;
	/* update_queue_cpsch(): the MQD follows, the queue is (de)activated */
	init_mqd(q);
	if (q->active && !queue_is_active(q))
		save_ctl_stack(p, q);
	q->active = queue_is_active(q);
	user_queues_kick(p);
out:
	mutex_unlock(&p->mutex);
	return ret;
}

/*
 * kfd_ioctl_set_cu_mask() and pqm_update_mqd(): num_cu_mask a non-zero
 * multiple of 32 (EINVAL), bits beyond 1024 dropped (not read), mask
 * copied (EFAULT), unknown queue EFAULT, on GFX10+ CUs enabled in pairs
 * (EINVAL). Kept with the queue; not part of the MQD image, so CRIU does
 * not save it (ABI document 5.7).
 */
int kfdsim_ioctl_set_cu_mask(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_set_cu_mask_args *args = data;
	u32 count = args->num_cu_mask, i, pair;
	struct kfdsim_queue *q;
	u32 *mask;
	int ret = 0;

	if (count % 32)
		return -EINVAL;
	if (!count)
		return -EINVAL;
	count = min_t(u32, count, KFDSIM_MAX_CU_MASK);
	mask = kzalloc(count / 8, GFP_KERNEL);
	if (!mask)
		return -ENOMEM;
	if (copy_from_user(mask, u64_to_user_ptr(args->cu_mask_ptr), count / 8)) {
		kfree(mask);
		return -EFAULT;
	}
	mutex_lock(&p->mutex);
	q = queue_by_id(p, args->queue_id);
	if (!q) {
		ret = -EFAULT;
		goto out;
	}
	if (gfxv(q->pdd->dev) >= 100000) {
		for (i = 0; i < count; i += 2) {
			pair = (mask[i / 32] >> (i % 32)) & 0x3;
			if (pair && pair != 0x3) {
				ret = -EINVAL;
				goto out;
			}
		}
	}
	memset(q->cu_mask, 0, sizeof(q->cu_mask));
	memcpy(q->cu_mask, mask, count / 8);
	q->cu_mask_count = count;
out:
	mutex_unlock(&p->mutex);
	kfree(mask);
	return ret;
}

/* kfd_process_xnack_mode(): GFX 9.0.1 .. 10.1.0 can retry faults */
bool kfdsim_xnack_supported(struct kfdsim_process *p)
{
	u32 i;

	for (i = 0; i < p->n_pdds; i++) {
		u32 v = gfxv(p->pdds[i]->dev);

		if (v < 90001 || v >= 100100)
			return false;
	}
	return true;
}

int kfdsim_ioctl_set_xnack_mode(struct file *filep, struct kfdsim_process *p,
				void *data)
{
	struct kfd_ioctl_set_xnack_mode_args *args = data;
	int ret = 0;

	mutex_lock(&p->mutex);
	if (args->xnack_enabled >= 0) {
		if (!list_empty(&p->queues))
			ret = -EBUSY;
		else if (args->xnack_enabled && !kfdsim_xnack_supported(p))
			ret = -EPERM;
		else if (!!args->xnack_enabled != p->xnack_enabled)	/* else a no-op */
			ret = kfdsim_svm_switch_xnack(p, args->xnack_enabled);
	} else {
		args->xnack_enabled = p->xnack_enabled;
	}
	mutex_unlock(&p->mutex);
	return ret;
}

/* ---- eviction ---------------------------------------------------------------------- */

static void evict_pdd(struct kfdsim_process *p, struct kfdsim_pdd *pdd)
{
	struct kfdsim_queue *q;

	if (pdd->evicted++)
		return;
	list_for_each_entry(q, &p->queues, list)
		if (q->pdd == pdd && q->active) {
			save_ctl_stack(p, q);
			q->active = false;
		}
}

static void restore_pdd(struct kfdsim_process *p, struct kfdsim_pdd *pdd)
{
	struct kfdsim_queue *q;

	if (!pdd->evicted || --pdd->evicted)
		return;
	list_for_each_entry(q, &p->queues, list)
		if (q->pdd == pdd)
			q->active = queue_is_active(q);
}

/*
 * kfd_process_evict_queues(): on failure the pdds evicted by this call are
 * restored again. Fault injection: "evict gpu ERRNO" (per pdd).
 */
int kfdsim_evict_process_queues(struct kfdsim_process *p)
{
	u32 i, j;
	int ret;

	lockdep_assert_held(&p->mutex);
	for (i = 0; i < p->n_pdds; i++) {
		ret = kfdsim_inject("evict", "gpu");
		if (ret) {
			for (j = 0; j < i; j++)
				restore_pdd(p, p->pdds[j]);
			return ret;
		}
		evict_pdd(p, p->pdds[i]);
	}
	return 0;
}

/* kfd_process_restore_queues(). Fault injection: "restore_queues gpu ERRNO". */
int kfdsim_restore_process_queues(struct kfdsim_process *p)
{
	int ret = 0, r;
	u32 i;

	lockdep_assert_held(&p->mutex);
	for (i = 0; i < p->n_pdds; i++) {
		r = kfdsim_inject("restore_queues", "gpu");
		if (r) {
			ret = ret ?: r;
			continue;
		}
		restore_pdd(p, p->pdds[i]);
	}
	user_queues_kick(p);
	return ret;
}

/* ---- CRIU -------------------------------------------------------------------------- */

/* kfd_process_get_queue_info(): count and blob size, EOPNOTSUPP for other types */
int kfdsim_queues_checkpoint_info(struct kfdsim_process *p, u32 *count, u64 *size)
{
	struct kfdsim_queue *q;
	int ret;

	*count = 0;
	*size = 0;
	list_for_each_entry(q, &p->queues, list) {
		ret = kfdsim_inject("process_info", "queue_type");
		if (ret)
			return ret;
		if (q->type != KFDSIM_QUEUE_COMPUTE && q->type != KFDSIM_QUEUE_SDMA &&
		    q->type != KFDSIM_QUEUE_SDMA_XGMI)
			return -EOPNOTSUPP;
		(*count)++;
		*size += sizeof(struct kfdsim_criu_queue_priv) + q->mqd_size +
			 q->ctl_stack_bytes;
	}
	return 0;
}

/* kfd_criu_checkpoint_queues(): per pdd in pdd order, per pdd in list order */
int kfdsim_queues_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off)
{
	struct kfdsim_criu_queue_priv qd;
	struct kfdsim_queue *q;
	u32 i;

	for (i = 0; i < p->n_pdds; i++)
		list_for_each_entry(q, &p->queues, list) {
			if (q->pdd != p->pdds[i])
				continue;
			/* checkpoint_mqd() needs a preempted queue */
			if (q->active)
				return -EINVAL;
			memset(&qd, 0, sizeof(qd));
			qd.object_type = KFD_CRIU_OBJECT_TYPE_QUEUE;
			qd.q_address = q->ring;
			qd.q_size = q->ring_size;
			qd.read_ptr_addr = q->rptr;
			qd.write_ptr_addr = q->wptr;
			qd.eop_ring_buffer_address = q->eop;
			qd.ctx_save_restore_area_address = q->cwsr;
			qd.gpu_id = q->pdd->user_gpu_id;
			qd.type = q->type;
			qd.format = q->format;
			qd.q_id = q->id;
			qd.priority = q->priority;
			qd.q_percent = q->percent;
			qd.doorbell_id = q->doorbell_id;
			qd.sdma_id = q->sdma_id;
			qd.eop_ring_buffer_size = q->eop_size;
			qd.ctx_save_restore_area_size = q->cwsr_size;
			qd.ctl_stack_size = q->ctl_stack_bytes;
			qd.mqd_size = q->mqd_size;
			if (copy_to_user(priv + *off, &qd, sizeof(qd)) ||
			    copy_to_user(priv + *off + sizeof(qd), q->mqd, q->mqd_size) ||
			    copy_to_user(priv + *off + sizeof(qd) + q->mqd_size,
					 q->ctl_stack, q->ctl_stack_bytes))
				return -EFAULT;
			*off += sizeof(qd) + q->mqd_size + q->ctl_stack_bytes;
		}
	return 0;
}

/* kfd_criu_restore_queue(): the queue is created evicted (pdd->evicted > 0) */
int kfdsim_queue_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max)
{
	struct kfdsim_criu_queue_priv qd;
	struct kfdsim_pdd *pdd;
	struct kfdsim_queue *q;
	u64 extra;
	u8 *buf;
	int ret;

	if (*off + sizeof(qd) > max)
		return -EINVAL;
	if (copy_from_user(&qd, priv + *off, sizeof(qd)))
		return -EFAULT;
	*off += sizeof(qd);
	extra = (u64)qd.ctl_stack_size + qd.mqd_size;
	if (*off + extra > max)
		return -EINVAL;
	buf = kvmalloc(extra ?: 1, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, priv + *off, extra)) {
		ret = -EFAULT;
		goto out;
	}
	*off += extra;
	pdd = kfdsim_pdd_by_user_id(p, qd.gpu_id);
	if (!pdd) {
		ret = -EINVAL;
		goto out;
	}
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q) {
		ret = -ENOMEM;
		goto out;
	}
	/* set_queue_properties_from_criu() */
	q->type = qd.type;
	q->format = qd.format;
	q->ring = qd.q_address;
	q->ring_size = qd.q_size;
	q->rptr = qd.read_ptr_addr;
	q->wptr = qd.write_ptr_addr;
	q->eop = qd.eop_ring_buffer_address;
	q->eop_size = qd.eop_ring_buffer_size;
	q->cwsr = qd.ctx_save_restore_area_address;
	q->cwsr_size = qd.ctx_save_restore_area_size;
	q->ctl_stack_size = qd.ctl_stack_size;
	q->priority = qd.priority;
	q->percent = qd.q_percent;
	ret = alloc_process_doorbells(pdd);
	if (!ret)
		ret = create_queue(p, pdd, q, &qd, buf, buf + qd.mqd_size);
	if (ret)
		kfree(q);
out:
	kvfree(buf);
	return ret;
}

/* ---- mmap ----------------------------------------------------------------------------- */

/*
 * kfd_doorbell_mmap(): exactly one doorbell slice. Like KFD it takes no
 * process mutex (mmap_lock is held; see doorbell_lock); the slice, once
 * made, lives as long as the process.
 */
int kfdsim_doorbell_mmap(struct kfdsim_node *dev, struct kfdsim_process *p,
			 struct vm_area_struct *vma)
{
	struct kfdsim_pdd *pdd;
	int ret;

	pdd = kfdsim_pdd_by_dev(p, dev);
	if (!pdd)
		return -EINVAL;
	if (vma->vm_end - vma->vm_start != kfdsim_doorbell_slice_size(dev))
		return -EINVAL;
	ret = alloc_process_doorbells(pdd);
	if (ret)
		return ret;
	return map_pages(vma, pdd->doorbell_pages, pdd->n_doorbell_pages);
}

/* kfd_mmio_mmap(): the HDP flush page, one 4 KiB page */
int kfdsim_mmio_mmap(struct kfdsim_node *dev, struct kfdsim_process *p,
		     struct vm_area_struct *vma)
{
	int ret = 0;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE || PAGE_SIZE > 4096)
		return -EINVAL;
	mutex_lock(&kfdsim_dqm_lock);
	if (!dev->mmio_page)
		dev->mmio_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!dev->mmio_page)
		ret = -ENOMEM;
	else
		ret = map_pages(vma, &dev->mmio_page, 1);
	mutex_unlock(&kfdsim_dqm_lock);
	return ret;
}

/* Module exit: no mapping can be left (a mapping pins the /dev/kfd file). */
void kfdsim_queue_fini(void)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++)
		if (kfdsim_topo->gpus[i]->mmio_page) {
			put_page(kfdsim_topo->gpus[i]->mmio_page);
			kfdsim_topo->gpus[i]->mmio_page = NULL;
		}
}
