// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: KFD events (kfd_events.c of 6.12): CREATE/DESTROY/SET/RESET_EVENT,
 * WAIT_EVENTS, the event page and its mmap, and the CRIU event objects.
 *
 * Ids (ABI document 2.5): id 0 is reserved at process creation; signal and
 * debug events take slots 1 .. slots-1 of the event page, where a
 * kernel-allocated page (32 KiB of backing) offers 256 slots and a user event
 * page BO (GTT, at least 32 KiB, given with the first CREATE_EVENT) offers
 * size / 8 slots, at most 4096; other events take ids 0x40000000..0x7FFFFFFF.
 * Slots of new signal events are set to "unsignaled" (all ones). Events
 * are signaled by SET_EVENT and by user-mode SDMA queues' TRAP packets
 * (kfdsim_signal_event_interrupt()).
 *
 * Waiting is KFD's (kfd_wait_on_events): a waiter per event waited on,
 * registered on the event; registering consumes an auto-reset event's
 * signal; SET_EVENT activates every waiter registered on the event and keeps
 * an auto-reset event signaled only when nobody waits on it. So one SET_EVENT
 * wakes all threads waiting on an auto-reset event (ROCr's queue destruction
 * relies on it: with "first waiter takes it" both its threads slept for good).
 * Event age (KFD 1.14): every signal event counts its SET_EVENTs (1 at
 * creation, never wrapping to 0 or 1; 0 after a CRIU restore, as KFD's
 * restored events). A waiter that passes a non-zero last_event_age on a
 * signal event is activated at once when the age differs (a signal it has
 * not seen yet, even one another waiter consumed), and a COMPLETE wait
 * writes each such event's current age back, a restored event's 0 too, as
 * KFD does; 0 keeps the old behaviour.
 * ROCr 6.x waits this way, which closes the lost wake-up of ROCr 5.x's
 * queue destruction (see README).
 *
 * Locking: process->mutex serialises creation, destruction and the event
 * page; process->event_lock (a spinlock, so that WAIT_EVENTS can evaluate its
 * condition while sleeping) protects event_idr, the signaled flags and the
 * waiter lists.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <linux/iosys-map.h>
#include <drm/drm_gem.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define KFD_FIRST_NONSIGNAL_EVENT_ID	0x40000000
#define KFD_LAST_NONSIGNAL_EVENT_ID	0x7FFFFFFF
#define KERNEL_PAGE_SLOTS		256
#define SIGNAL_PAGE_BYTES		(KFD_SIGNAL_EVENT_LIMIT * 8)
#define UNSIGNALED_EVENT_SLOT		((u64)-1)
#define KFD_CRIU_OBJECT_TYPE_EVENT	1
#define KFD_EVENT_TIMEOUT_IMMEDIATE	0
#define KFD_EVENT_TIMEOUT_INFINITE	0xFFFFFFFFu

struct kfdsim_event {
	u32 id;
	u32 type;
	bool auto_reset;
	bool signaled;
	u64 event_age;		/* SET_EVENTs + 1; 0 after a restore */
	u8 data[32];		/* memory / HW exception data */
	struct list_head waiters;	/* struct event_waiter, under event_lock */
};

/* kfd_event_waiter: one WAIT_EVENTS call's wait on one event */
struct event_waiter {
	struct list_head node;		/* on ev->waiters while queued */
	struct kfdsim_event *ev;	/* NULL once the event is destroyed */
	bool activated;
	bool queued;
	bool event_age_enabled;		/* last_event_age given, signal event */
};

/* The CRIU event object (ABI document 5.8), 64 bytes. */
struct criu_event_priv {
	u32 object_type;
	u32 pad0;
	u64 user_handle;
	u32 event_id;
	u32 auto_reset;
	u32 type;
	u32 signaled;
	u8 data[32];
};

static bool is_signal_type(u32 type)
{
	return type == KFD_IOC_EVENT_SIGNAL || type == KFD_IOC_EVENT_DEBUG_EVENT;
}

int kfdsim_events_init_process(struct kfdsim_process *p)
{
	int id;

	spin_lock_init(&p->event_lock);
	idr_init(&p->event_idr);
	init_waitqueue_head(&p->event_wq);
	/* id 0 is reserved */
	id = idr_alloc(&p->event_idr, NULL, 0, 1, GFP_KERNEL);
	return id < 0 ? id : 0;
}

void kfdsim_events_destroy_process(struct kfdsim_process *p)
{
	struct kfdsim_event *ev;
	int id;

	idr_for_each_entry(&p->event_idr, ev, id)
		kfree(ev);
	idr_destroy(&p->event_idr);
	if (p->signal_bo) {
		struct iosys_map map = IOSYS_MAP_INIT_VADDR(p->signal_slots);

		drm_gem_vunmap_unlocked(&p->signal_bo->gem->shmem.base, &map);
		p->signal_bo = NULL;
	} else if (p->signal_pages) {
		vunmap(p->signal_slots);
		kfdsim_free_pages(p->signal_pages, SIGNAL_PAGE_BYTES >> PAGE_SHIFT);
		p->signal_pages = NULL;
	}
	p->signal_slots = NULL;
}

/* allocate_signal_page(): the kernel page, 256 slots for old user mode */
static int allocate_signal_page(struct kfdsim_process *p)
{
	u32 n = SIGNAL_PAGE_BYTES >> PAGE_SHIFT;
	struct page **pages;

	pages = kfdsim_alloc_pages(n);
	if (!pages)
		return -ENOMEM;
	p->signal_slots = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!p->signal_slots) {
		kfdsim_free_pages(pages, n);
		return -ENOMEM;
	}
	memset(p->signal_slots, 0xFF, SIGNAL_PAGE_BYTES);
	p->signal_mapped_size = KERNEL_PAGE_SLOTS * 8;
	/* kfdsim_event_mmap() reads it without the process mutex */
	smp_store_release(&p->signal_pages, pages);
	return 0;
}

/* kfd_kmap_event_page(): a user GTT BO becomes the event page */
static int kmap_event_page(struct kfdsim_process *p, u64 handle)
{
	struct kfdsim_pdd *pdd;
	struct kfdsim_bo *bo;
	struct iosys_map map;
	int ret;

	lockdep_assert_held(&p->mutex);
	if (p->signal_slots)
		return -EINVAL;	/* "Event page is already set" */
	pdd = kfdsim_pdd_by_user_id(p, KFDSIM_HANDLE_GPU(handle));
	if (!pdd)
		return -EINVAL;
	pdd = kfdsim_bind_process_to_device(pdd);
	if (IS_ERR(pdd))
		return PTR_ERR(pdd);
	bo = idr_find(&pdd->alloc_idr, KFDSIM_HANDLE_IDR(handle));
	if (!bo)
		return -EINVAL;
	/* amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel() */
	if (!(bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT))
		return -EINVAL;
	/* kfd_event_page_set() */
	if (bo->size < SIGNAL_PAGE_BYTES)
		return -EINVAL;
	ret = drm_gem_vmap_unlocked(&bo->gem->shmem.base, &map);
	if (ret)
		return ret;
	p->signal_slots = map.vaddr;
	p->signal_bo = bo;
	p->signal_handle = handle;
	p->signal_mapped_size = min_t(u64, bo->size, SIGNAL_PAGE_BYTES);
	return 0;
}

/* create_signal_event() / create_other_event(); @restore_id: CRIU id or NULL */
static int create_event(struct kfdsim_process *p, struct kfdsim_event *ev,
			const u32 *restore_id)
{
	int id, start, end, ret;

	lockdep_assert_held(&p->mutex);
	INIT_LIST_HEAD(&ev->waiters);
	if (is_signal_type(ev->type)) {
		if (p->signal_mapped_size &&
		    p->signal_event_count == p->signal_mapped_size / 8)
			return -ENOSPC;
		if (!p->signal_slots) {
			ret = allocate_signal_page(p);
			if (ret)
				return ret;
		}
		start = restore_id ? *restore_id : 0;
		end = restore_id ? *restore_id + 1 : p->signal_mapped_size / 8;
	} else {
		start = restore_id ? *restore_id : KFD_FIRST_NONSIGNAL_EVENT_ID;
		/* 0: up to INT_MAX (KFD_LAST_NONSIGNAL_EVENT_ID) */
		end = restore_id && *restore_id < KFD_LAST_NONSIGNAL_EVENT_ID ?
		      *restore_id + 1 : 0;
	}
	idr_preload(GFP_KERNEL);
	spin_lock(&p->event_lock);
	id = idr_alloc(&p->event_idr, ev, start, end, GFP_NOWAIT);
	spin_unlock(&p->event_lock);
	idr_preload_end();
	if (id < 0)
		return id;
	ev->id = id;
	if (is_signal_type(ev->type)) {
		p->signal_event_count++;
		p->signal_slots[id] = UNSIGNALED_EVENT_SLOT;
	}
	return 0;
}

int kfdsim_ioctl_create_event(struct file *filep, struct kfdsim_process *p,
			      void *data)
{
	struct kfd_ioctl_create_event_args *args = data;
	struct kfdsim_event *ev;
	int ret = 0;

	mutex_lock(&p->mutex);
	if (args->event_page_offset) {
		ret = kmap_event_page(p, args->event_page_offset);
		if (ret)
			goto out;
	}
	ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev) {
		ret = -ENOMEM;
		goto out;
	}
	ev->type = args->event_type;
	ev->auto_reset = args->auto_reset != 0;
	ev->event_age = 1;
	ret = create_event(p, ev, NULL);
	if (ret) {
		kfree(ev);
		goto out;
	}
	args->event_id = ev->id;
	args->event_trigger_data = ev->id;
	if (is_signal_type(ev->type)) {
		args->event_page_offset = KFDSIM_MMAP_TYPE_EVENTS;
		args->event_slot_index = ev->id;
	} else {
		args->event_page_offset = 0;
	}
out:
	mutex_unlock(&p->mutex);
	return ret;
}

int kfdsim_ioctl_destroy_event(struct file *filep, struct kfdsim_process *p,
			       void *data)
{
	struct kfd_ioctl_destroy_event_args *args = data;
	struct kfdsim_event *ev;

	mutex_lock(&p->mutex);
	spin_lock(&p->event_lock);
	ev = idr_find(&p->event_idr, args->event_id);
	if (ev) {
		struct event_waiter *w, *tmp;

		idr_remove(&p->event_idr, args->event_id);
		list_for_each_entry_safe(w, tmp, &ev->waiters, node) {
			w->ev = NULL;
			w->queued = false;
			list_del_init(&w->node);
		}
	}
	spin_unlock(&p->event_lock);
	if (ev && is_signal_type(ev->type))
		p->signal_event_count--;
	mutex_unlock(&p->mutex);
	if (!ev)
		return -EINVAL;
	wake_up_all(&p->event_wq);	/* waiters on it fail */
	kfree(ev);
	return 0;
}

/*
 * The last EVENT_TRACE_LEN SET_EVENT and WAIT_EVENTS calls of all processes
 * (debugfs kfdsim/events, after the events): who woke whom, when a workload
 * hangs in a wait.
 */
#define EVENT_TRACE_LEN 64
static struct event_trace {
	unsigned long jiffies;
	pid_t tid;
	char op;		/* 'S' set, 'T' SDMA trap, 'W' wait begins, 'E' wait ends */
	u32 n, ids[4];
	int result;
} event_trace[EVENT_TRACE_LEN];
static unsigned int event_trace_next;
static DEFINE_SPINLOCK(event_trace_lock);

static void trace_event_op(char op, const u32 *ids, u32 n, int result)
{
	struct event_trace *t;
	u32 i;

	spin_lock(&event_trace_lock);
	t = &event_trace[event_trace_next++ % EVENT_TRACE_LEN];
	t->jiffies = jiffies;
	t->tid = task_pid_nr(current);
	t->op = op;
	t->n = n;
	for (i = 0; i < min_t(u32, n, 4); i++)
		t->ids[i] = ids[i];
	t->result = result;
	spin_unlock(&event_trace_lock);
}

void kfdsim_events_trace_show(struct seq_file *m)
{
	unsigned int i, k;
	u32 j;

	spin_lock(&event_trace_lock);
	for (i = 0; i < EVENT_TRACE_LEN; i++) {
		const struct event_trace *t;

		k = event_trace_next + i;
		t = &event_trace[k % EVENT_TRACE_LEN];
		if (!t->op)
			continue;
		seq_printf(m, "trace %lu tid=%d %c result=%d ids=", t->jiffies, t->tid, t->op,
			   t->result);
		for (j = 0; j < min_t(u32, t->n, 4); j++)
			seq_printf(m, "%s%u", j ? "," : "", t->ids[j]);
		seq_putc(m, '\n');
	}
	spin_unlock(&event_trace_lock);
}

/*
 * set_event(): an auto-reset event stays signaled only if nobody waits on
 * it; every waiter on it is activated. Under event_lock.
 */
static void set_event(struct kfdsim_event *ev)
{
	struct event_waiter *w;

	ev->signaled = !ev->auto_reset || list_empty(&ev->waiters);
	/* never wraps back to 0 (age not used) or 1 (never set) */
	if (!(++ev->event_age)) {
		ev->event_age = 2;
		WARN_ONCE(1, "kfdsim: event_age wrap back!");
	}
	list_for_each_entry(w, &ev->waiters, node)
		w->activated = true;
}

/* SET/RESET_EVENT: only CPU-signalable (signal) events */
static int set_signaled(struct kfdsim_process *p, u32 id, bool value)
{
	struct kfdsim_event *ev;
	int ret = 0;

	spin_lock(&p->event_lock);
	ev = idr_find(&p->event_idr, id);
	if (!ev || ev->type != KFD_IOC_EVENT_SIGNAL)
		ret = -EINVAL;
	else if (!value)
		ev->signaled = false;
	else
		set_event(ev);
	spin_unlock(&p->event_lock);
	if (value)
		trace_event_op('S', &id, 1, ret);
	if (!ret && value)
		wake_up_all(&p->event_wq);
	return ret;
}

/* set_event_from_interrupt(): signal and debug events, the slot acknowledged */
static bool set_event_from_interrupt(struct kfdsim_process *p, struct kfdsim_event *ev)
{
	if (!ev || !is_signal_type(ev->type))
		return false;
	WRITE_ONCE(p->signal_slots[ev->id], UNSIGNALED_EVENT_SLOT);
	set_event(ev);
	return true;
}

/* A slot the GPU wrote (not "unsignaled"), in the page's range */
static bool slot_signaled(struct kfdsim_process *p, u32 id)
{
	return id < p->signal_mapped_size / 8 &&
	       READ_ONCE(p->signal_slots[id]) != UNSIGNALED_EVENT_SLOT;
}

/*
 * kfd_signal_event_interrupt(): an interrupt with a context id, of which
 * @valid_id_bits are valid (an SDMA TRAP's int_context: 28). The event
 * with that id is set if its slot was written (ROCr writes the event id
 * there with a FENCE just before the TRAP); if there is none, every
 * signal event whose slot was written is set, as KFD's search does.
 */
void kfdsim_signal_event_interrupt(struct kfdsim_process *p, u32 partial_id, u32 valid_id_bits)
{
	struct kfdsim_event *ev = NULL;
	bool set = false;
	u32 id = partial_id;
	int i;

	spin_lock(&p->event_lock);
	if (!p->signal_slots)
		goto out;
	if (valid_id_bits > 31 || (1U << valid_id_bits) >= KFD_SIGNAL_EVENT_LIMIT) {
		if (slot_signaled(p, id))
			ev = idr_find(&p->event_idr, id);
	} else {
		for (; id < KFD_SIGNAL_EVENT_LIMIT && !ev; id += 1U << valid_id_bits)
			if (slot_signaled(p, id))
				ev = idr_find(&p->event_idr, id);
	}
	if (ev) {
		set = set_event_from_interrupt(p, ev);
		goto out;
	}
	idr_for_each_entry(&p->event_idr, ev, i)
		if (slot_signaled(p, ev->id))
			set |= set_event_from_interrupt(p, ev);
out:
	spin_unlock(&p->event_lock);
	if (set) {
		trace_event_op('T', &partial_id, 1, 0);
		wake_up_all(&p->event_wq);
	}
}

/* kfd_set_event(): what KFD's exception delivery does to a runtime's event */
int kfdsim_set_event(struct kfdsim_process *p, u32 id)
{
	return set_signaled(p, id, true);
}

int kfdsim_ioctl_set_event(struct file *filep, struct kfdsim_process *p, void *data)
{
	return kfdsim_set_event(p, ((struct kfd_ioctl_set_event_args *)data)->event_id);
}

int kfdsim_ioctl_reset_event(struct file *filep, struct kfdsim_process *p, void *data)
{
	return set_signaled(p, ((struct kfd_ioctl_reset_event_args *)data)->event_id, false);
}

/*
 * init_event_waiter(): registering takes the event's signal (an auto-reset
 * event's is consumed); a waiter not activated yet is queued on the event.
 */
static int init_waiters(struct kfdsim_process *p, struct event_waiter *w, const u32 *ids,
			const u64 *ages, u32 n)
{
	struct kfdsim_event *ev;
	u32 i;

	spin_lock(&p->event_lock);
	for (i = 0; i < n; i++) {
		ev = idr_find(&p->event_idr, ids[i]);
		if (!ev)
			break;
		w[i].ev = ev;
		w[i].activated = ev->signaled;
		ev->signaled = ev->signaled && !ev->auto_reset;
		/* last_event_age 0 is reserved for callers without event age */
		if (ev->type == KFD_IOC_EVENT_SIGNAL && ages[i]) {
			w[i].event_age_enabled = true;
			if (ev->event_age != ages[i])
				w[i].activated = true;
		}
		w[i].queued = !w[i].activated;
		if (w[i].queued)
			list_add_tail(&w[i].node, &ev->waiters);
	}
	spin_unlock(&p->event_lock);
	return i == n ? 0 : -EINVAL;
}

static void free_waiters(struct kfdsim_process *p, struct event_waiter *w, u32 n)
{
	u32 i;

	spin_lock(&p->event_lock);
	for (i = 0; i < n; i++)
		if (w[i].queued)
			list_del(&w[i].node);
	spin_unlock(&p->event_lock);
}

/* test_event_condition(): 0 while waiting, else KFD_IOC_WAIT_RESULT_* + 1 */
static int test_waiters(struct kfdsim_process *p, struct event_waiter *w, u32 n, bool all)
{
	u32 i, activated = 0;
	int ret = 0;

	spin_lock(&p->event_lock);
	for (i = 0; i < n; i++) {
		if (!w[i].ev) {
			ret = KFD_IOC_WAIT_RESULT_FAIL + 1;
			goto out;
		}
		activated += w[i].activated;
	}
	if (all ? activated == n : activated > 0)
		ret = KFD_IOC_WAIT_RESULT_COMPLETE + 1;
out:
	spin_unlock(&p->event_lock);
	return ret;
}

static int read_event_ids(const struct kfd_ioctl_wait_events_args *args, u32 *ids, u64 *ages)
{
	struct kfd_event_data ed;
	u32 i;

	for (i = 0; i < args->num_events; i++) {
		if (copy_from_user(&ed, u64_to_user_ptr(args->events_ptr) + i * sizeof(ed),
				   sizeof(ed)))
			return -EFAULT;
		ids[i] = ed.event_id;
		ages[i] = ed.signal_event_data.last_event_age;
	}
	return 0;
}

/*
 * copy_signaled_event_data(), for signal events: the current age of each
 * activated event whose waiter gave one; EINVAL if an event went meanwhile.
 */
static int copy_event_ages(struct kfdsim_process *p, const struct event_waiter *w,
			   const u32 *ids, u32 n, u64 *ages,
			   const struct kfd_ioctl_wait_events_args *args)
{
	struct kfd_event_data __user *data = u64_to_user_ptr(args->events_ptr);
	struct kfdsim_event *ev;
	u32 i;

	/* by id: a waiter not queued is not told when its event goes */
	spin_lock(&p->event_lock);
	for (i = 0; i < n; i++) {
		ev = idr_find(&p->event_idr, ids[i]);
		if (!w[i].ev || ev != w[i].ev) {
			spin_unlock(&p->event_lock);
			return -EINVAL;
		}
		/* age + 1, 0: nothing to tell (a restored event's age is 0) */
		ages[i] = w[i].activated && w[i].event_age_enabled ? ev->event_age + 1 : 0;
	}
	spin_unlock(&p->event_lock);
	for (i = 0; i < n; i++) {
		if (!ages[i]--)
			continue;
		/* as KFD, also a restored event's 0: the waiter then waits without age */
		if (copy_to_user(&data[i].signal_event_data.last_event_age, &ages[i],
				 sizeof(ages[i])))
			return -EFAULT;
	}
	return 0;
}

int kfdsim_ioctl_wait_events(struct file *filep, struct kfdsim_process *p,
			     void *data)
{
	struct kfd_ioctl_wait_events_args *args = data;
	struct event_waiter *w = NULL;
	unsigned long deadline;
	long timeout;
	u32 *ids, n = args->num_events;
	u64 *ages;
	int ret, r;

	ids = kvmalloc_array(n ?: 1, sizeof(*ids), GFP_KERNEL);
	ages = kvmalloc_array(n ?: 1, sizeof(*ages), GFP_KERNEL);
	w = kvcalloc(n ?: 1, sizeof(*w), GFP_KERNEL);
	if (!ids || !ages || !w) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_event_ids(args, ids, ages);
	if (ret)
		goto out;
	ret = init_waiters(p, w, ids, ages, n);
	if (ret) {
		free_waiters(p, w, n);
		goto out;
	}
	if (args->timeout == KFD_EVENT_TIMEOUT_IMMEDIATE)
		timeout = 0;
	else if (args->timeout == KFD_EVENT_TIMEOUT_INFINITE)
		timeout = MAX_SCHEDULE_TIMEOUT;
	else
		timeout = msecs_to_jiffies(args->timeout) + 1;
	deadline = jiffies + timeout;

	r = test_waiters(p, w, n, args->wait_for_all);
	trace_event_op('W', ids, n, r);
	if (!r && timeout) {
		timeout = wait_event_interruptible_timeout(p->event_wq,
			(r = test_waiters(p, w, n, args->wait_for_all)), timeout);
		if (timeout < 0) {
			/* as KFD: the restarted call gets the remaining time */
			if (args->timeout != KFD_EVENT_TIMEOUT_INFINITE)
				args->timeout = jiffies_to_msecs(max(0L, (long)(deadline - jiffies) - 1));
			ret = -ERESTARTSYS;
		}
	}
	if (!ret && r == KFD_IOC_WAIT_RESULT_COMPLETE + 1)
		ret = copy_event_ages(p, w, ids, n, ages, args);
	free_waiters(p, w, n);
	trace_event_op('E', ids, n, ret ? ret : r);
	if (!ret)
		args->wait_result = r ? r - 1 : KFD_IOC_WAIT_RESULT_TIMEOUT;
out:
	kvfree(w);
	kvfree(ages);
	kvfree(ids);
	return ret;
}

/*
 * kfd_event_mmap(): the kernel-allocated page, at most 32 KiB. Like KFD it
 * takes no process mutex (the caller holds mmap_lock, which USERPTR ALLOC
 * takes under the mutex); the page, once published, lives as long as the
 * process.
 */
int kfdsim_event_mmap(struct kfdsim_process *p, struct vm_area_struct *vma)
{
	u64 size = vma->vm_end - vma->vm_start;
	struct page **pages = smp_load_acquire(&p->signal_pages);

	if (size > SIGNAL_PAGE_BYTES)
		return -EINVAL;
	/* no page, or a user BO page (not modelled through /dev/kfd) */
	if (!pages)
		return -EINVAL;
	vma->vm_pgoff = 0;
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP);
	return vm_map_pages_zero(vma, pages, size >> PAGE_SHIFT);
}

/* ---- CRIU ---------------------------------------------------------------------- */

u32 kfdsim_events_count(struct kfdsim_process *p)
{
	struct kfdsim_event *ev;
	u32 n = 0;
	int id;

	spin_lock(&p->event_lock);
	idr_for_each_entry(&p->event_idr, ev, id)
		n++;
	spin_unlock(&p->event_lock);
	return n;
}

static u32 exception_data_size(u32 type)
{
	if (type == KFD_IOC_EVENT_MEMORY)
		return sizeof(struct kfd_hsa_memory_exception_data);
	if (type == KFD_IOC_EVENT_HW_EXCEPTION)
		return sizeof(struct kfd_hsa_hw_exception_data);
	return 0;
}

/* kfd_criu_checkpoint_events(): id order, the page handle in the first one */
int kfdsim_events_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off)
{
	struct criu_event_priv *privs, *e;
	struct kfdsim_event *ev;
	u32 n = kfdsim_events_count(p), i = 0;
	int id, ret = 0;

	BUILD_BUG_ON(sizeof(struct criu_event_priv) != 64);
	if (!n)
		return 0;
	privs = kvcalloc(n, sizeof(*privs), GFP_KERNEL);
	if (!privs)
		return -ENOMEM;
	spin_lock(&p->event_lock);
	idr_for_each_entry(&p->event_idr, ev, id) {
		if (i == n)
			break;
		e = &privs[i];
		e->object_type = KFD_CRIU_OBJECT_TYPE_EVENT;
		if (i == 0 && p->signal_slots)
			e->user_handle = p->signal_handle;
		e->event_id = ev->id;
		e->auto_reset = ev->auto_reset;
		e->type = ev->type;
		e->signaled = ev->signaled;
		memcpy(e->data, ev->data, exception_data_size(ev->type));
		i++;
	}
	spin_unlock(&p->event_lock);
	if (copy_to_user(priv + *off, privs, i * sizeof(*privs)))
		ret = -EFAULT;
	else
		*off += i * sizeof(*privs);
	kvfree(privs);
	return ret;
}

/* kfd_criu_restore_event() */
int kfdsim_event_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max)
{
	struct criu_event_priv e;
	struct kfdsim_event *ev;
	int ret;

	if (*off + sizeof(e) > max)
		return -EINVAL;
	if (copy_from_user(&e, priv + *off, sizeof(e)))
		return -EFAULT;
	*off += sizeof(e);
	if (e.event_id > INT_MAX)
		return -EINVAL;
	if (e.user_handle) {
		ret = kmap_event_page(p, e.user_handle);
		if (ret)
			return ret;
	}
	switch (e.type) {
	case KFD_IOC_EVENT_SIGNAL:
	case KFD_IOC_EVENT_DEBUG_EVENT:
		if (e.event_id >= KFD_SIGNAL_EVENT_LIMIT)
			return -EINVAL;
		break;
	case KFD_IOC_EVENT_MEMORY:
	case KFD_IOC_EVENT_HW_EXCEPTION:
		break;
	default:
		return -EINVAL;
	}
	ev = kzalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		return -ENOMEM;
	ev->type = e.type;
	ev->auto_reset = e.auto_reset;
	ev->signaled = e.signaled;
	memcpy(ev->data, e.data, exception_data_size(e.type));
	ret = create_event(p, ev, &e.event_id);
	if (ret)
		kfree(ev);
	return ret;
}

/* debugfs kfdsim/events: one line per event of p (waiters: WAIT_EVENTS calls on it) */
void kfdsim_events_show(struct seq_file *m, struct kfdsim_process *p)
{
	struct kfdsim_event *ev;
	struct event_waiter *w;
	u32 waiters;
	int id;

	spin_lock(&p->event_lock);
	idr_for_each_entry(&p->event_idr, ev, id) {
		waiters = 0;
		list_for_each_entry(w, &ev->waiters, node)
			waiters++;
		seq_printf(m, "pid=%d event=%u type=%u auto_reset=%d signaled=%d waiters=%u\n",
			   task_tgid_nr(p->lead_thread), ev->id, ev->type, ev->auto_reset,
			   ev->signaled, waiters);
	}
	spin_unlock(&p->event_lock);
}
