// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: shared virtual memory (AMDKFD_IOC_SVM, kfd_svm.c of 6.12) and its
 * CRIU objects (ABI document 5.9, 7.10).
 *
 * An SVM range is a page interval [start, last] of the process's own CPU
 * address space with attributes: preferred and prefetch location (a user
 * gpu_id, 0 = system memory, 0xFFFFFFFF = undefined), flags, migration
 * granularity (log2 pages) and, per pdd, access / access in place / no
 * access. SET_ATTR works as svm_range_add() does: existing ranges that
 * overlap the interval partly are cloned and split so that the new
 * attributes apply to the overlap only, gaps get new ranges (cut at
 * max_svm_range_pages boundaries) with the default attributes, and the
 * kernel never merges neighbours again. The process's range list keeps the
 * kernel's order (new and cloned ranges go to the tail), which is the order
 * CRIU CHECKPOINT writes them in.
 *
 * Nothing is migrated or mapped: actual_loc and mapped_to_gpu are
 * bookkeeping with the kernel's effect on later splits.
 *
 * CPU unmaps (svm_range_unmap_from_cpu()): what munmap takes from a range's
 * memory leaves the range (cut, split or removed), so that a later
 * allocation at those addresses is not refused as "already allocated by
 * SVM" (libhsakmt 6.x unmaps a destroyed queue's CWSR range and mmap hands
 * the addresses out again). The process's MMU notifier notes each unmap
 * that may hit a range (kfdsim_svm_note_unmap()); they are applied under
 * the process mutex before the ranges are next looked at, as KFD flushes
 * its deferred list (svm_range_list_lock_and_flush_work()). A range a live
 * queue uses (its CWSR area) evicts the process's queues when unmapped, as
 * KFD does ("Freeing queue vital buffer"), at that point rather than at
 * the munmap.
 *
 * CRIU: PROCESS_INFO counts the ranges; CHECKPOINT writes one object per
 * range (24 bytes + 8 * (4 + pdds)) whose attributes come from a GET_ATTR
 * query on the range; RESTORE stores the objects in a pending list (record
 * size from the restoring process's pdd count); RESUME applies them to the
 * target's mm (an undefined PREFETCH_LOC turned into SET_FLAGS 0, a
 * CLR_FLAGS with the complement of the saved flags appended) and always
 * empties the list.
 *
 * Locking: everything under process->mutex, then the mmap lock of the mm
 * the ranges belong to (the same order as the userptr checks).
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/log2.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define KFD_CRIU_OBJECT_TYPE_SVM	2
#define SVM_NATTR_COMMON		4	/* PREFERRED, PREFETCH, SET_FLAGS, GRANULARITY */
#define SVM_LOC_SYSMEM			KFD_IOCTL_SVM_LOCATION_SYSMEM
#define SVM_LOC_UNDEFINED		KFD_IOCTL_SVM_LOCATION_UNDEFINED

struct kfdsim_svm_range {
	struct list_head list;		/* process->svm_ranges, or a work list */
	struct list_head update_list;	/* svm_range_add()'s update/remove lists */
	u64 start, last;		/* pages */
	u32 preferred_loc;
	u32 prefetch_loc;
	u32 actual_loc;			/* 0: system memory, else a user gpu_id */
	u32 flags;
	u8 granularity;
	bool mapped_to_gpu;
	u32 queue_refcount;		/* queues whose CWSR area lies here */
	DECLARE_BITMAP(access, KFDSIM_MAX_GPUS);	/* pdd index */
	DECLARE_BITMAP(aip, KFDSIM_MAX_GPUS);
};

/* The fixed part of a CRIU SVM range object (kfd_criu_svm_range_priv_data) */
struct criu_svm_priv {
	u32 object_type;
	u32 pad;
	u64 start_addr;			/* pages */
	u64 size;			/* pages */
	struct kfd_ioctl_svm_attribute attrs[];
};

struct criu_svm_pending {
	struct list_head list;		/* process->svm_pending */
	struct criu_svm_priv data;	/* followed by its attributes */
};

/* KFD_IS_SVM_API_SUPPORTED(): GFX9 and later dGPUs */
static bool svm_supported(const struct kfdsim_pdd *pdd)
{
	return pdd->dev->props[NP_GFX_TARGET_VERSION] >= 90000;
}

/* kfd_process_gpuidx_from_gpuid(): pdd index of a user gpu_id, or -EINVAL */
static int gpuidx_from_gpuid(struct kfdsim_process *p, u32 gpu_id)
{
	struct kfdsim_pdd *pdd = kfdsim_pdd_by_user_id(p, gpu_id);

	return pdd ? pdd->index : -EINVAL;
}

static void supported_bitmap(struct kfdsim_process *p, unsigned long *bitmap)
{
	u32 i;

	bitmap_zero(bitmap, KFDSIM_MAX_GPUS);
	for (i = 0; i < p->n_pdds; i++)
		if (svm_supported(p->pdds[i]))
			__set_bit(i, bitmap);
}

/*
 * svm_range_set_max_pages(): 1/32 of the smallest VRAM in pages, between
 * 2 MiB and 1 GiB, rounded down to a power of 2.
 */
static u64 max_svm_range_pages(void)
{
	u64 min_pages = 0, pages;
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		pages = kfdsim_topo->gpus[i]->vram_size >> 17;
		pages = rounddown_pow_of_two(clamp(pages, 1ULL << 9, 1ULL << 18));
		min_pages = min_not_zero(min_pages, pages);
	}
	return min_pages ?: 1ULL << 9;
}

static u64 range_bytes(const struct kfdsim_svm_range *r)
{
	return (r->last - r->start + 1) << PAGE_SHIFT;
}

/* svm_range_new(): default attributes; reserves system memory without XNACK */
static struct kfdsim_svm_range *range_new(struct kfdsim_process *p, u64 start,
					  u64 last, bool update_mem_usage)
{
	struct kfdsim_svm_range *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return NULL;
	r->start = start;
	r->last = last;
	if (!p->xnack_enabled && update_mem_usage &&
	    kfdsim_reserve_mem_limit(NULL, range_bytes(r), KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)) {
		kfree(r);
		return NULL;
	}
	INIT_LIST_HEAD(&r->list);
	INIT_LIST_HEAD(&r->update_list);
	if (p->xnack_enabled)
		supported_bitmap(p, r->access);
	r->preferred_loc = SVM_LOC_UNDEFINED;
	r->prefetch_loc = SVM_LOC_UNDEFINED;
	r->granularity = 9;
	r->flags = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;
	return r;
}

static void range_free(struct kfdsim_process *p, struct kfdsim_svm_range *r,
		       bool update_mem_usage)
{
	if (update_mem_usage && !p->xnack_enabled)
		kfdsim_unreserve_mem_limit(NULL, range_bytes(r),
					   KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
	kfree(r);
}

static void copy_attrs(struct kfdsim_svm_range *to, const struct kfdsim_svm_range *from)
{
	to->flags = from->flags;
	to->preferred_loc = from->preferred_loc;
	to->prefetch_loc = from->prefetch_loc;
	to->actual_loc = from->actual_loc;
	to->granularity = from->granularity;
	to->mapped_to_gpu = from->mapped_to_gpu;
	to->queue_refcount = from->queue_refcount;	/* both pieces hold the buffer */
	bitmap_copy(to->access, from->access, KFDSIM_MAX_GPUS);
	bitmap_copy(to->aip, from->aip, KFDSIM_MAX_GPUS);
}

/* svm_range_check_attr() */
static int check_attrs(struct kfdsim_process *p, u32 nattr,
		       const struct kfd_ioctl_svm_attribute *attrs)
{
	u32 i;

	for (i = 0; i < nattr; i++) {
		u32 val = attrs[i].value;
		int gpuidx = KFDSIM_MAX_GPUS;

		switch (attrs[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			if (val != SVM_LOC_SYSMEM && val != SVM_LOC_UNDEFINED)
				gpuidx = gpuidx_from_gpuid(p, val);
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			/* "undefined" is no GPU here */
			if (val != SVM_LOC_SYSMEM)
				gpuidx = gpuidx_from_gpuid(p, val);
			break;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
		case KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE:
		case KFD_IOCTL_SVM_ATTR_NO_ACCESS:
			gpuidx = gpuidx_from_gpuid(p, val);
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			break;
		default:
			return -EINVAL;
		}
		if (gpuidx < 0)
			return -EINVAL;
		if (gpuidx < KFDSIM_MAX_GPUS && !svm_supported(p->pdds[gpuidx]))
			return -EINVAL;
	}
	return 0;
}

/* svm_range_apply_attrs() */
static void apply_attrs(struct kfdsim_process *p, struct kfdsim_svm_range *r, u32 nattr,
			const struct kfd_ioctl_svm_attribute *attrs, bool *update_mapping)
{
	u32 i;
	int idx;

	for (i = 0; i < nattr; i++) {
		switch (attrs[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			r->preferred_loc = attrs[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			r->prefetch_loc = attrs[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
		case KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE:
		case KFD_IOCTL_SVM_ATTR_NO_ACCESS:
			if (!p->xnack_enabled)
				*update_mapping = true;
			idx = gpuidx_from_gpuid(p, attrs[i].value);
			if (attrs[i].type == KFD_IOCTL_SVM_ATTR_NO_ACCESS) {
				__clear_bit(idx, r->access);
				__clear_bit(idx, r->aip);
			} else if (attrs[i].type == KFD_IOCTL_SVM_ATTR_ACCESS) {
				__set_bit(idx, r->access);
				__clear_bit(idx, r->aip);
			} else {
				__clear_bit(idx, r->access);
				__set_bit(idx, r->aip);
			}
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
			*update_mapping = true;
			r->flags |= attrs[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
			*update_mapping = true;
			r->flags &= ~attrs[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			r->granularity = min_t(u32, attrs[i].value, 0x3F);
			break;
		}
	}
}

/* svm_range_is_same_attrs() */
static bool same_attrs(struct kfdsim_process *p, const struct kfdsim_svm_range *r,
		       u32 nattr, const struct kfd_ioctl_svm_attribute *attrs)
{
	u32 i;
	int idx;

	for (i = 0; i < nattr; i++) {
		switch (attrs[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			if (r->preferred_loc != attrs[i].value)
				return false;
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			/* a prefetch always migrates */
			return false;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
		case KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE:
		case KFD_IOCTL_SVM_ATTR_NO_ACCESS:
			idx = gpuidx_from_gpuid(p, attrs[i].value);
			if (attrs[i].type == KFD_IOCTL_SVM_ATTR_NO_ACCESS) {
				if (test_bit(idx, r->access) || test_bit(idx, r->aip))
					return false;
			} else if (attrs[i].type == KFD_IOCTL_SVM_ATTR_ACCESS) {
				if (!test_bit(idx, r->access))
					return false;
			} else if (!test_bit(idx, r->aip)) {
				return false;
			}
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
			if ((r->flags & attrs[i].value) != attrs[i].value)
				return false;
			break;
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
			if (r->flags & attrs[i].value)
				return false;
			break;
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			if (r->granularity != attrs[i].value)
				return false;
			break;
		}
	}
	return true;
}

/*
 * The range of the process with the smallest start above @after (or any
 * when @first) that overlaps [start, last]: the interval tree's order.
 */
static struct kfdsim_svm_range *next_overlap(struct kfdsim_process *p, u64 start, u64 last,
					     const struct kfdsim_svm_range *prev)
{
	struct kfdsim_svm_range *r, *best = NULL;

	list_for_each_entry(r, &p->svm_ranges, list) {
		if (r->last < start || r->start > last)
			continue;
		if (prev && r->start <= prev->start)
			continue;
		if (!best || r->start < best->start)
			best = r;
	}
	return best;
}

/* Does [start, last] (pages) overlap a BO mapped in one of the GPU VMs? */
static bool overlaps_bo_mapping(struct kfdsim_process *p, u64 start, u64 last)
{
	struct kfdsim_bo *bo;
	u32 i;
	int id;

	for (i = 0; i < p->n_pdds; i++)
		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id) {
			u64 span = bo->size;

			if (!bo->mapped_count)
				continue;
			if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
				span *= 2;
			if (bo->va >> PAGE_SHIFT <= last &&
			    (bo->va + span - 1) >> PAGE_SHIFT >= start)
				return true;
		}
	return false;
}

/*
 * svm_range_is_valid(): every page in VMAs that are not device mappings
 * (EFAULT), no BO mapping of a GPU VM there (EADDRINUSE). mmap lock held.
 */
static int range_is_valid(struct kfdsim_process *p, struct mm_struct *mm, u64 start,
			  u64 size)
{
	const unsigned long device_vma = VM_IO | VM_PFNMAP | VM_MIXEDMAP;
	struct vm_area_struct *vma;
	u64 addr = start << PAGE_SHIFT, end = (start + size) << PAGE_SHIFT;

	do {
		vma = vma_lookup(mm, addr);
		if (!vma || (vma->vm_flags & device_vma))
			return -EFAULT;
		addr = min_t(u64, end, vma->vm_end);
	} while (addr < end);
	return overlaps_bo_mapping(p, start, start + size - 1) ? -EADDRINUSE : 0;
}

/* svm_range_split(): @r keeps [start, last], *@new gets the rest */
static int range_split(struct kfdsim_process *p, struct kfdsim_svm_range *r, u64 start,
		       u64 last, struct kfdsim_svm_range **new)
{
	if (r->start != start && r->last != last)
		return -EINVAL;
	if (start < r->start || last > r->last)
		return -EINVAL;
	if (r->start == start)
		*new = range_new(p, last + 1, r->last, false);
	else
		*new = range_new(p, r->start, start - 1, false);
	if (!*new)
		return -ENOMEM;
	copy_attrs(*new, r);
	r->start = start;
	r->last = last;
	return 0;
}

/* ---- CPU unmaps ---------------------------------------------------------------------- */

struct svm_unmap {
	struct list_head list;		/* process->svm_unmaps */
	u64 start, last;		/* pages */
};

/* More noted unmaps than this before a flush: the rest are counted as lost */
#define SVM_UNMAPS_MAX	4096

/* A range now spans [start, last]: widen the bound the notifier filters with */
static void bound_range(struct kfdsim_process *p, const struct kfdsim_svm_range *r)
{
	if (r->start < p->svm_lo)
		WRITE_ONCE(p->svm_lo, r->start);
	if (r->last > p->svm_hi)
		WRITE_ONCE(p->svm_hi, r->last);
}

/*
 * From the MMU notifier (mmap lock held, p->mutex must not be taken): note
 * [start, end) if it may hit a range. A note that cannot be kept (no memory,
 * too many) is counted and reported at the next flush.
 */
void kfdsim_svm_note_unmap(struct kfdsim_process *p, unsigned long start, unsigned long end)
{
	u64 first = start >> PAGE_SHIFT, last = (end >> PAGE_SHIFT) - 1;
	struct svm_unmap *u, *prev;

	if (end <= start || last < READ_ONCE(p->svm_lo) || first > READ_ONCE(p->svm_hi))
		return;
	u = kmalloc(sizeof(*u), GFP_NOWAIT | __GFP_NOWARN);
	spin_lock(&p->svm_unmap_lock);
	prev = list_empty(&p->svm_unmaps) ? NULL :
	       list_last_entry(&p->svm_unmaps, struct svm_unmap, list);
	if (prev && first <= prev->last + 1 && last + 1 >= prev->start) {
		prev->start = min(prev->start, first);
		prev->last = max(prev->last, last);
	} else if (u && p->n_svm_unmaps < SVM_UNMAPS_MAX) {
		u->start = first;
		u->last = last;
		list_add_tail(&u->list, &p->svm_unmaps);
		p->n_svm_unmaps++;
		u = NULL;
	} else {
		p->svm_unmaps_lost = true;
	}
	spin_unlock(&p->svm_unmap_lock);
	kfree(u);
}

/* Takes [first, last] out of @r; @r may go. Returns false on ENOMEM. */
static bool unmap_from_range(struct kfdsim_process *p, struct kfdsim_svm_range *r, u64 first,
			     u64 last, bool *evict)
{
	u64 cut_start = max(first, r->start), cut_last = min(last, r->last);
	struct kfdsim_svm_range *tail;

	if (r->queue_refcount) {
		pr_warn("kfdsim: Freeing queue vital buffer 0x%llx, queue evicted\n",
			r->start << PAGE_SHIFT);
		*evict = true;
	}
	if (cut_start == r->start && cut_last == r->last) {
		list_del(&r->list);
		range_free(p, r, true);
		return true;
	}
	if (cut_start > r->start && cut_last < r->last) {
		/* a hole: the part above it becomes a range of its own */
		if (range_split(p, r, r->start, cut_last, &tail))
			return false;
		list_add_tail(&tail->list, &p->svm_ranges);
	}
	/* the reservation of the pages cut off goes with them */
	if (!p->xnack_enabled)
		kfdsim_unreserve_mem_limit(NULL, (cut_last - cut_start + 1) << PAGE_SHIFT,
					   KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
	if (cut_start == r->start)
		r->start = cut_last + 1;
	else
		r->last = cut_start - 1;
	return true;
}

/* One noted unmap applied to every range it hits; false: try again later */
static bool apply_unmap(struct kfdsim_process *p, const struct svm_unmap *u, bool *evict)
{
	struct kfdsim_svm_range *r, *tmp;

	list_for_each_entry_safe(r, tmp, &p->svm_ranges, list)
		if (r->last >= u->start && r->start <= u->last &&
		    !unmap_from_range(p, r, u->start, u->last, evict))
			return false;
	return true;
}

/* svm_range_list_lock_and_flush_work(): the noted unmaps, under p->mutex */
static void flush_unmaps(struct kfdsim_process *p)
{
	struct kfdsim_svm_range *r;
	LIST_HEAD(todo);
	struct svm_unmap *u, *tmp;
	bool lost, evict = false;
	u64 lo = U64_MAX, hi = 0;

	lockdep_assert_held(&p->mutex);
	spin_lock(&p->svm_unmap_lock);
	list_splice_init(&p->svm_unmaps, &todo);
	p->n_svm_unmaps = 0;
	lost = p->svm_unmaps_lost;
	p->svm_unmaps_lost = false;
	spin_unlock(&p->svm_unmap_lock);
	/* nothing noted: the ranges and their bound stand (the SDMA poller's path) */
	if (list_empty(&todo) && !lost)
		return;
	if (lost)
		pr_warn("kfdsim: pid %d: CPU unmaps of SVM memory were not noted (no memory); its ranges may be stale\n",
			task_tgid_nr(p->lead_thread));
	list_for_each_entry_safe(u, tmp, &todo, list) {
		if (!apply_unmap(p, u, &evict))
			break;
		list_del(&u->list);
		kfree(u);
	}
	if (!list_empty(&todo)) {
		/* ENOMEM splitting a range: the rest waits for the next flush */
		spin_lock(&p->svm_unmap_lock);
		list_splice(&todo, &p->svm_unmaps);
		spin_unlock(&p->svm_unmap_lock);
	}
	/* the bound shrinks back to the ranges left, never below them meanwhile */
	list_for_each_entry(r, &p->svm_ranges, list) {
		lo = min(lo, r->start);
		hi = max(hi, r->last);
	}
	WRITE_ONCE(p->svm_lo, lo);
	WRITE_ONCE(p->svm_hi, hi);
	if (evict)
		kfdsim_evict_process_queues(p);
}

static void free_unmaps(struct kfdsim_process *p)
{
	struct svm_unmap *u, *tmp;

	list_for_each_entry_safe(u, tmp, &p->svm_unmaps, list) {
		list_del(&u->list);
		kfree(u);
	}
}

static void free_list(struct kfdsim_process *p, struct list_head *head, bool update_mem_usage)
{
	struct kfdsim_svm_range *r, *tmp;

	list_for_each_entry_safe(r, tmp, head, list) {
		list_del(&r->list);
		range_free(p, r, update_mem_usage);
	}
}

/* svm_range_split_new(): new ranges for a gap, cut at max_pages boundaries */
static int split_new(struct kfdsim_process *p, u64 start, u64 last,
		     struct list_head *insert_list, struct list_head *update_list)
{
	u64 max_pages = max_svm_range_pages(), l;
	struct kfdsim_svm_range *r;

	while (last >= start) {
		l = min(last, ALIGN_DOWN(start + max_pages, max_pages) - 1);
		r = range_new(p, start, l, true);
		if (!r)
			return -ENOMEM;
		list_add(&r->list, insert_list);
		list_add(&r->update_list, update_list);
		start = l + 1;
	}
	return 0;
}

/*
 * svm_range_add(): clones of partly overlapped ranges split to the update
 * interval, new ranges in the gaps; the process's list is not touched.
 */
static int range_add(struct kfdsim_process *p, u64 start, u64 size, u32 nattr,
		     const struct kfd_ioctl_svm_attribute *attrs,
		     struct list_head *update_list, struct list_head *insert_list,
		     struct list_head *remove_list)
{
	struct kfdsim_svm_range *node, *next, *r, *piece;
	u64 last = start + size - 1, next_start;
	LIST_HEAD(new_list);
	int ret = 0;

	node = next_overlap(p, start, last, NULL);
	while (node) {
		next = next_overlap(p, start, last, node);
		next_start = min(node->last, last) + 1;

		if (same_attrs(p, node, nattr, attrs) && node->mapped_to_gpu) {
			/* nothing to do */
		} else if (node->start < start || node->last > last) {
			r = range_new(p, node->start, node->last, false);
			if (!r) {
				ret = -ENOMEM;
				goto out;
			}
			copy_attrs(r, node);
			list_add(&node->update_list, remove_list);
			list_add(&r->list, insert_list);
			list_add(&r->update_list, update_list);
			if (node->start < start) {
				ret = range_split(p, r, start, r->last, &piece);
				if (ret)
					goto out;
				list_add(&piece->list, insert_list);
			}
			if (node->last > last) {
				ret = range_split(p, r, r->start, last, &piece);
				if (ret)
					goto out;
				list_add(&piece->list, insert_list);
			}
		} else {
			list_add(&node->update_list, update_list);
		}
		if (node->start > start) {
			ret = split_new(p, start, node->start - 1, &new_list, update_list);
			if (ret)
				goto out;
		}
		node = next;
		start = next_start;
	}
	if (start <= last)
		ret = split_new(p, start, last, &new_list, update_list);
out:
	if (ret) {
		free_list(p, insert_list, false);
		free_list(p, &new_list, true);
	} else {
		list_splice(&new_list, insert_list);
	}
	return ret;
}

/*
 * Prefetch (svm_range_trigger_migration()) and mapping, as bookkeeping:
 * a GPU prefetch location moves the range there, system memory moves it
 * back; a migration or an attribute change that updates mappings maps the
 * range on its accessible GPUs.
 */
static void migrate_and_map(struct kfdsim_process *p, struct kfdsim_svm_range *r,
			    bool prefetch, bool update_mapping)
{
	bool migrated = false;

	if (prefetch && r->prefetch_loc != SVM_LOC_UNDEFINED &&
	    !(r->prefetch_loc == 0 && r->actual_loc == 0)) {
		r->actual_loc = r->prefetch_loc;
		migrated = true;
	}
	if (!migrated && !update_mapping)
		return;
	if (p->xnack_enabled && !(r->flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED))
		return;
	if (!bitmap_empty(r->access, KFDSIM_MAX_GPUS) || !bitmap_empty(r->aip, KFDSIM_MAX_GPUS))
		r->mapped_to_gpu = true;
}

/* svm_range_set_attr() on @mm; @start and @size in pages */
static int svm_set_attr(struct kfdsim_process *p, struct mm_struct *mm, u64 start, u64 size,
			u32 nattr, const struct kfd_ioctl_svm_attribute *attrs)
{
	LIST_HEAD(update_list);
	LIST_HEAD(insert_list);
	LIST_HEAD(remove_list);
	struct kfdsim_svm_range *r, *tmp;
	bool update_mapping = false, prefetch = false;
	u32 i;
	int ret;

	ret = check_attrs(p, nattr, attrs);
	if (ret)
		return ret;
	for (i = 0; i < nattr; i++)
		prefetch |= attrs[i].type == KFD_IOCTL_SVM_ATTR_PREFETCH_LOC;

	mmap_write_lock(mm);
	ret = range_is_valid(p, mm, start, size);
	if (!ret)
		ret = range_add(p, start, size, nattr, attrs, &update_list, &insert_list,
				&remove_list);
	if (ret) {
		mmap_write_unlock(mm);
		return ret;
	}
	/* apply as a transaction: new ranges and clones go to the tail */
	list_for_each_entry_safe(r, tmp, &insert_list, list) {
		list_move_tail(&r->list, &p->svm_ranges);
		bound_range(p, r);
	}
	list_for_each_entry(r, &update_list, update_list)
		apply_attrs(p, r, nattr, attrs, &update_mapping);
	list_for_each_entry_safe(r, tmp, &remove_list, update_list) {
		list_del(&r->list);
		range_free(p, r, false);
	}
	list_for_each_entry(r, &update_list, update_list)
		migrate_and_map(p, r, prefetch, update_mapping);
	mmap_write_unlock(mm);
	return 0;
}

/* svm_range_get_attr() on @mm; @start and @size in pages */
static int svm_get_attr(struct kfdsim_process *p, struct mm_struct *mm, u64 start, u64 size,
			u32 nattr, struct kfd_ioctl_svm_attribute *attrs)
{
	DECLARE_BITMAP(access, KFDSIM_MAX_GPUS);
	DECLARE_BITMAP(aip, KFDSIM_MAX_GPUS);
	bool get_preferred = false, get_prefetch = false, get_granularity = false;
	bool get_access = false, get_flags = false;
	u32 location = SVM_LOC_UNDEFINED, prefetch_loc = SVM_LOC_UNDEFINED;
	u32 flags_and = 0xFFFFFFFF, flags_or = 0, i;
	u64 last = start + size - 1;
	struct kfdsim_svm_range *r;
	u8 granularity = 0xFF;
	int ret, idx;

	mmap_read_lock(mm);
	ret = range_is_valid(p, mm, start, size);
	mmap_read_unlock(mm);
	if (ret)
		return ret;

	for (i = 0; i < nattr; i++) {
		switch (attrs[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			get_preferred = true;
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			get_prefetch = true;
			break;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
			get_access = true;
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
			get_flags = true;
			break;
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			get_granularity = true;
			break;
		default:	/* also ACCESS_IN_PLACE and NO_ACCESS */
			return -EINVAL;
		}
	}

	r = next_overlap(p, start, last, NULL);
	if (!r) {
		/* no range: the defaults */
		granularity = 9;
		flags_and = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;
		flags_or = flags_and;
		if (p->xnack_enabled)
			supported_bitmap(p, access);
		else
			bitmap_zero(access, KFDSIM_MAX_GPUS);
		bitmap_zero(aip, KFDSIM_MAX_GPUS);
	} else {
		supported_bitmap(p, access);
		supported_bitmap(p, aip);
	}
	for (; r; r = next_overlap(p, start, last, r)) {
		if (get_preferred) {
			if (r->preferred_loc == SVM_LOC_UNDEFINED ||
			    (location != SVM_LOC_UNDEFINED && location != r->preferred_loc)) {
				location = SVM_LOC_UNDEFINED;
				get_preferred = false;
			} else {
				location = r->preferred_loc;
			}
		}
		if (get_prefetch) {
			if (r->prefetch_loc == SVM_LOC_UNDEFINED ||
			    (prefetch_loc != SVM_LOC_UNDEFINED &&
			     prefetch_loc != r->prefetch_loc)) {
				prefetch_loc = SVM_LOC_UNDEFINED;
				get_prefetch = false;
			} else {
				prefetch_loc = r->prefetch_loc;
			}
		}
		if (get_access) {
			bitmap_and(access, access, r->access, KFDSIM_MAX_GPUS);
			bitmap_and(aip, aip, r->aip, KFDSIM_MAX_GPUS);
		}
		if (get_flags) {
			flags_and &= r->flags;
			flags_or |= r->flags;
		}
		if (get_granularity && r->granularity < granularity)
			granularity = r->granularity;
	}

	for (i = 0; i < nattr; i++) {
		switch (attrs[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			attrs[i].value = location;
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			attrs[i].value = prefetch_loc;
			break;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
			idx = gpuidx_from_gpuid(p, attrs[i].value);
			if (idx < 0)
				return -EINVAL;
			if (test_bit(idx, access))
				attrs[i].type = KFD_IOCTL_SVM_ATTR_ACCESS;
			else if (test_bit(idx, aip))
				attrs[i].type = KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE;
			else
				attrs[i].type = KFD_IOCTL_SVM_ATTR_NO_ACCESS;
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
			attrs[i].value = flags_and;
			break;
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
			attrs[i].value = ~flags_or;
			break;
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			attrs[i].value = granularity;
			break;
		}
	}
	return 0;
}

/* kfd_ioctl_svm_validate(): the caller's size must hold all attributes */
int kfdsim_ioctl_svm_validate(void *data, unsigned int usize)
{
	struct kfd_ioctl_svm_args *args = data;
	size_t expected = struct_size(args, attrs, args->nattr);

	if (expected == SIZE_MAX || usize < expected)
		return -EINVAL;
	return 0;
}

/* kfd_ioctl_svm() and svm_ioctl() */
int kfdsim_ioctl_svm(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_svm_args *args = data;
	u64 start, size;
	int ret;

	if ((args->start_addr & ~PAGE_MASK) || (args->size & ~PAGE_MASK))
		return -EINVAL;
	if (!args->start_addr || !args->size)
		return -EINVAL;
	start = args->start_addr >> PAGE_SHIFT;
	size = args->size >> PAGE_SHIFT;

	mutex_lock(&p->mutex);
	flush_unmaps(p);
	switch (args->op) {
	case KFD_IOCTL_SVM_OP_SET_ATTR:
		ret = svm_set_attr(p, current->mm, start, size, args->nattr, args->attrs);
		break;
	case KFD_IOCTL_SVM_OP_GET_ATTR:
		ret = svm_get_attr(p, current->mm, start, size, args->nattr, args->attrs);
		break;
	default:
		/* svm_ioctl() returns a positive EINVAL: ioctl() returns 22 */
		ret = EINVAL;
		break;
	}
	mutex_unlock(&p->mutex);
	return ret;
}

/* ALLOC_MEMORY_OF_GPU: does [addr, addr + size) hit a registered range? */
bool kfdsim_svm_overlaps(struct kfdsim_process *p, u64 addr, u64 size)
{
	flush_unmaps(p);
	return next_overlap(p, addr >> PAGE_SHIFT, (addr + size - 1) >> PAGE_SHIFT, NULL);
}

/* svm_range_switch_xnack_reserve_mem(): XNACK ranges need no reservation */
int kfdsim_svm_switch_xnack(struct kfdsim_process *p, bool enable)
{
	struct kfdsim_svm_range *r;
	u64 reserved = 0;
	int ret = 0;

	flush_unmaps(p);
	list_for_each_entry(r, &p->svm_ranges, list) {
		if (enable) {
			kfdsim_unreserve_mem_limit(NULL, range_bytes(r),
						   KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
		} else {
			ret = kfdsim_reserve_mem_limit(NULL, range_bytes(r),
						       KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
			if (ret)
				break;
			reserved += range_bytes(r);
		}
	}
	if (ret && reserved)
		kfdsim_unreserve_mem_limit(NULL, reserved, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
	else if (!ret)
		p->xnack_enabled = enable;
	return ret;
}

static void free_pending(struct kfdsim_process *p)
{
	struct criu_svm_pending *m, *tmp;

	list_for_each_entry_safe(m, tmp, &p->svm_pending, list) {
		list_del(&m->list);
		kfree(m);
	}
}

/* Process teardown (svm_range_list_fini()) */
void kfdsim_svm_destroy_process(struct kfdsim_process *p)
{
	free_list(p, &p->svm_ranges, true);
	free_pending(p);
	free_unmaps(p);
}

u32 kfdsim_svm_count(struct kfdsim_process *p, u32 *pending)
{
	struct kfdsim_svm_range *r;
	struct criu_svm_pending *m;
	u32 n = 0;

	flush_unmaps(p);
	if (pending) {
		*pending = 0;
		list_for_each_entry(m, &p->svm_pending, list)
			(*pending)++;
	}
	list_for_each_entry(r, &p->svm_ranges, list)
		n++;
	return n;
}

static u64 svm_priv_size(u32 n_pdds)
{
	return sizeof(struct criu_svm_priv) +
	       (u64)(SVM_NATTR_COMMON + n_pdds) * sizeof(struct kfd_ioctl_svm_attribute);
}

/* svm_range_get_info(): number of ranges and bytes of their objects */
u32 kfdsim_svm_checkpoint_info(struct kfdsim_process *p, u64 *size)
{
	u32 n = kfdsim_svm_count(p, NULL);

	*size = n * svm_priv_size(p->n_pdds);
	return n;
}

/* kfd_criu_checkpoint_svm(): one object per range, attributes queried */
int kfdsim_svm_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off)
{
	u64 rec = svm_priv_size(p->n_pdds);
	struct kfdsim_svm_range *r;
	struct criu_svm_priv *d;
	struct mm_struct *mm;
	u32 i;
	int ret = 0;

	flush_unmaps(p);
	if (list_empty(&p->svm_ranges))
		return 0;
	mm = get_task_mm(p->lead_thread);
	if (!mm)
		return -ESRCH;
	d = kzalloc(rec, GFP_KERNEL);
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	list_for_each_entry(r, &p->svm_ranges, list) {
		memset(d, 0, rec);
		d->object_type = KFD_CRIU_OBJECT_TYPE_SVM;
		d->start_addr = r->start;
		d->size = r->last - r->start + 1;
		d->attrs[0].type = KFD_IOCTL_SVM_ATTR_PREFERRED_LOC;
		d->attrs[1].type = KFD_IOCTL_SVM_ATTR_PREFETCH_LOC;
		d->attrs[2].type = KFD_IOCTL_SVM_ATTR_SET_FLAGS;
		d->attrs[3].type = KFD_IOCTL_SVM_ATTR_GRANULARITY;
		for (i = 0; i < p->n_pdds; i++) {
			d->attrs[SVM_NATTR_COMMON + i].type = KFD_IOCTL_SVM_ATTR_ACCESS;
			d->attrs[SVM_NATTR_COMMON + i].value = p->pdds[i]->user_gpu_id;
		}
		ret = svm_get_attr(p, mm, d->start_addr, d->size, SVM_NATTR_COMMON + p->n_pdds,
				   d->attrs);
		if (ret)
			break;
		if (copy_to_user(priv + *off, d, rec)) {
			ret = -EFAULT;
			break;
		}
		*off += rec;
	}
	kfree(d);
out:
	mmput(mm);
	return ret;
}

/* kfd_criu_restore_svm(): stored until RESUME */
int kfdsim_svm_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max)
{
	u64 rec = svm_priv_size(p->n_pdds);
	struct criu_svm_pending *m;

	m = kzalloc(sizeof(*m) - sizeof(m->data) + rec, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	if (*off + rec > max) {
		kfree(m);
		return -EINVAL;
	}
	if (copy_from_user(&m->data, priv + *off, rec)) {
		kfree(m);
		return -EFAULT;
	}
	*off += rec;
	list_add_tail(&m->list, &p->svm_pending);
	return 0;
}

/* kfd_criu_resume_svm(): apply the stored ranges, always empty the list */
int kfdsim_svm_resume(struct kfdsim_process *p)
{
	u32 nattr = SVM_NATTR_COMMON + p->n_pdds, set_flags = 0xFFFFFFFF, j;
	struct kfd_ioctl_svm_attribute *a;
	struct criu_svm_pending *m;
	struct mm_struct *mm;
	int ret;

	/* an injected set-attribute failure drops the list too */
	ret = kfdsim_inject("resume", "svm");
	if (ret || list_empty(&p->svm_pending)) {
		free_pending(p);
		return ret;
	}
	mm = get_task_mm(p->lead_thread);
	if (!mm) {
		free_pending(p);
		return -ESRCH;
	}
	a = kmalloc_array(nattr + 1, sizeof(*a), GFP_KERNEL);
	if (!a) {
		ret = -ENOMEM;
		goto out;
	}
	list_for_each_entry(m, &p->svm_pending, list) {
		for (j = 0; j < nattr; j++) {
			struct kfd_ioctl_svm_attribute *s = &m->data.attrs[j];

			if (s->type == KFD_IOCTL_SVM_ATTR_PREFETCH_LOC &&
			    s->value == SVM_LOC_UNDEFINED) {
				/* not a valid location to set: a no-op instead */
				s->type = KFD_IOCTL_SVM_ATTR_SET_FLAGS;
				s->value = 0;
			} else if (s->type == KFD_IOCTL_SVM_ATTR_SET_FLAGS) {
				set_flags = s->value;
			}
		}
		memcpy(a, m->data.attrs, nattr * sizeof(*a));
		a[nattr].type = KFD_IOCTL_SVM_ATTR_CLR_FLAGS;
		a[nattr].value = ~set_flags;
		ret = svm_set_attr(p, mm, m->data.start_addr, m->data.size, nattr + 1, a);
		if (ret)
			break;
	}
	kfree(a);
out:
	free_pending(p);
	mmput(mm);
	return ret;
}

/* svm_range_from_addr(): the range holding page @addr, under p->mutex */
static struct kfdsim_svm_range *range_from_addr(struct kfdsim_process *p, u64 addr)
{
	struct kfdsim_svm_range *r;

	list_for_each_entry(r, &p->svm_ranges, list)
		if (addr >= r->start && addr <= r->last)
			return r;
	return NULL;
}

/*
 * kfd_queue_buffer_svm_get(): a queue buffer (the CWSR area) in SVM memory,
 * @addr/@size in bytes: every page must be in ranges mapped to the GPU,
 * accessible by it (ACCESS or ACCESS_IN_PLACE) and GPU_ALWAYS_MAPPED, else
 * EINVAL. The ranges count the queue (queue_refcount). Under p->mutex.
 */
int kfdsim_svm_queue_buffer_get(struct kfdsim_pdd *pdd, u64 addr, u64 size)
{
	struct kfdsim_process *p = pdd->process;
	struct kfdsim_svm_range *r;
	u64 a = addr >> PAGE_SHIFT, n = size >> PAGE_SHIFT;

	lockdep_assert_held(&p->mutex);
	flush_unmaps(p);
	while (n) {
		r = range_from_addr(p, a);
		if (!r || !r->mapped_to_gpu ||
		    (!test_bit(pdd->index, r->access) && !test_bit(pdd->index, r->aip)) ||
		    !(r->flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED))
			return -EINVAL;
		if (r->last - a + 1 >= n)
			break;
		n -= r->last - a + 1;
		a = r->last + 1;
	}
	for (a = addr >> PAGE_SHIFT, n = size >> PAGE_SHIFT; n; ) {
		r = range_from_addr(p, a);
		r->queue_refcount++;
		if (r->last - a + 1 >= n)
			break;
		n -= r->last - a + 1;
		a = r->last + 1;
	}
	return 0;
}

/* kfd_queue_buffer_svm_put(): the ranges still there give their count back */
void kfdsim_svm_queue_buffer_put(struct kfdsim_pdd *pdd, u64 addr, u64 size)
{
	struct kfdsim_svm_range *r;
	u64 first = addr >> PAGE_SHIFT, last = first + (size >> PAGE_SHIFT) - 1;

	lockdep_assert_held(&pdd->process->mutex);
	list_for_each_entry(r, &pdd->process->svm_ranges, list)
		if (r->last >= first && r->start <= last && r->queue_refcount)
			r->queue_refcount--;
}
