// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: KFD processes (kfd_process.c) and their per-GPU data (pdds).
 *
 * As in KFD, a process object belongs to an mm: every open of /dev/kfd by
 * threads sharing that mm gets the same object. The object lives as long as
 * the mm (an mmu notifier holds one reference, dropped after the mm is torn
 * down) and as long as any /dev/kfd file opened for it. The pdds are made at
 * creation, one per GPU that the creator's device cgroup allows, in topology
 * order, and never change afterwards.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/hashtable.h>
#include <linux/file.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

static DEFINE_HASHTABLE(kfdsim_processes_table, 5);
static DEFINE_MUTEX(kfdsim_processes_mutex);
static struct workqueue_struct *kfdsim_process_wq;
/* fpriv->compute_pdd of every DRM file */
static DEFINE_MUTEX(kfdsim_vm_lock);

/* kfd_flat_memory.c, GFX9 and later (48-bit GPU VA) */
#define LDS_APP_BASE_V9		(1ULL << 48)
#define SCRATCH_APP_BASE_V9	(2ULL << 48)
#define APP_LIMIT(base)		(((base) & 0xFFFFFFFF00000000ULL) | 0xFFFFFFFF)
#define SVM_USER_BASE		(4 * 4096ULL)	/* CWSR TBA/TMA + 2 pages */
#define VA_RESERVED_BOTTOM	(1ULL << 16)	/* AMDGPU_VA_RESERVED_BOTTOM */
#define GPUVM_SIZE		(1ULL << 47)	/* AMDGPU_GMC_HOLE_START */

static struct kfdsim_process *find_process_by_mm(const struct mm_struct *mm)
{
	struct kfdsim_process *p;

	hash_for_each_possible_rcu(kfdsim_processes_table, p, kfd_processes,
				   (uintptr_t)mm)
		if (p->mm == mm)
			return p;
	return NULL;
}

static struct mmu_notifier *kfdsim_alloc_notifier(struct mm_struct *mm)
{
	struct kfdsim_process *p;

	rcu_read_lock();
	p = find_process_by_mm(mm);
	rcu_read_unlock();
	return p ? &p->mmu_notifier : ERR_PTR(-ESRCH);
}

static void kfdsim_free_notifier(struct mmu_notifier *mn)
{
	kfdsim_unref_process(container_of(mn, struct kfdsim_process, mmu_notifier));
}

/* Called with the process already out of the table. */
static void release_internal(struct kfdsim_process *p)
{
	/* SDMA queue passes use the mm */
	kfdsim_queues_stop_polling(p);
	/* Indicate to other users that the mm is no longer valid */
	WRITE_ONCE(p->mm, NULL);
	mmu_notifier_put(&p->mmu_notifier);
}

/* The mm is being torn down (exit or exec). */
static void kfdsim_notifier_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct kfdsim_process *p = container_of(mn, struct kfdsim_process,
						mmu_notifier);

	mutex_lock(&kfdsim_processes_mutex);
	/* module exit may have removed it already */
	if (hlist_unhashed(&p->kfd_processes)) {
		mutex_unlock(&kfdsim_processes_mutex);
		return;
	}
	hash_del_rcu(&p->kfd_processes);
	p->kfd_processes.pprev = NULL;
	mutex_unlock(&kfdsim_processes_mutex);
	synchronize_rcu();
	release_internal(p);
}

/* munmap: SVM ranges lose what was unmapped (svm_range_unmap_from_cpu()) */
static int kfdsim_notifier_invalidate_range_start(struct mmu_notifier *mn,
						  const struct mmu_notifier_range *range)
{
	if (range->event == MMU_NOTIFY_UNMAP)
		kfdsim_svm_note_unmap(container_of(mn, struct kfdsim_process, mmu_notifier),
				      range->start, range->end);
	return 0;
}

static const struct mmu_notifier_ops kfdsim_mmu_notifier_ops = {
	.release = kfdsim_notifier_release,
	.invalidate_range_start = kfdsim_notifier_invalidate_range_start,
	.alloc_notifier = kfdsim_alloc_notifier,
	.free_notifier = kfdsim_free_notifier,
};

static void destroy_pdd(struct kfdsim_pdd *pdd)
{
	idr_destroy(&pdd->alloc_idr);
	if (pdd->drm_file) {
		struct kfdsim_fpriv *fpriv = pdd->drm_priv->driver_priv;

		mutex_lock(&kfdsim_vm_lock);
		fpriv->compute_pdd = NULL;
		mutex_unlock(&kfdsim_vm_lock);
		fput(pdd->drm_file);
	}
	kfree(pdd);
}

static void kfdsim_process_wq_release(struct work_struct *work)
{
	struct kfdsim_process *p = container_of(work, struct kfdsim_process,
						release_work);
	u32 i;

	cancel_delayed_work_sync(&p->restore_userptr_work);
	cancel_delayed_work_sync(&p->sdma_poll);
	/* queues hold BO references, the event page may be a BO */
	kfdsim_process_destroy_queues(p);
	kfdsim_events_destroy_process(p);
	kfdsim_svm_destroy_process(p);
	/* BOs first: a BO may be mapped in the VM of any pdd of the process */
	for (i = 0; i < p->n_pdds; i++) {
		struct kfdsim_bo *bo;
		int id;

		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id)
			kfdsim_bo_destroy(bo);
	}
	for (i = 0; i < p->n_pdds; i++)
		destroy_pdd(p->pdds[i]);
	put_task_struct(p->lead_thread);
	mutex_destroy(&p->mutex);
	kfree(p);
}

static void kfdsim_process_ref_release(struct kref *ref)
{
	struct kfdsim_process *p = container_of(ref, struct kfdsim_process, ref);

	INIT_WORK(&p->release_work, kfdsim_process_wq_release);
	queue_work(kfdsim_process_wq, &p->release_work);
}

void kfdsim_unref_process(struct kfdsim_process *p)
{
	kref_put(&p->ref, kfdsim_process_ref_release);
}

static struct kfdsim_pdd *create_pdd(struct kfdsim_process *p,
				     struct kfdsim_node *dev)
{
	struct kfdsim_pdd *pdd = kzalloc(sizeof(*pdd), GFP_KERNEL);

	if (!pdd)
		return NULL;
	pdd->process = p;
	pdd->dev = dev;
	pdd->user_gpu_id = dev->gpu_id;
	idr_init(&pdd->alloc_idr);
	atomic64_set(&pdd->vram_usage, 0);
	/* kfd_init_apertures_v9() */
	pdd->lds_base = LDS_APP_BASE_V9;
	pdd->lds_limit = APP_LIMIT(pdd->lds_base);
	pdd->scratch_base = SCRATCH_APP_BASE_V9;
	pdd->scratch_limit = APP_LIMIT(pdd->scratch_base);
	pdd->gpuvm_base = max(SVM_USER_BASE, VA_RESERVED_BOTTOM);
	pdd->gpuvm_limit = GPUVM_SIZE - 1;
	return pdd;
}

/* kfd_init_apertures(): a pdd per GPU that the device cgroup allows. */
static int init_pdds(struct kfdsim_process *p)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		struct kfdsim_node *dev = kfdsim_topo->gpus[i];
		struct kfdsim_pdd *pdd;

		if (kfdsim_devcgroup_check_permission(dev))
			continue;
		pdd = create_pdd(p, dev);
		if (!pdd)
			return -ENOMEM;
		pdd->index = p->n_pdds;
		p->pdds[p->n_pdds++] = pdd;
	}
	return 0;
}

/* Called with kfdsim_processes_mutex held; returns with one reference. */
static struct kfdsim_process *create_process(struct task_struct *thread)
{
	struct kfdsim_process *p;
	struct mmu_notifier *mn;
	u32 i;
	int err;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	kref_init(&p->ref);
	mutex_init(&p->mutex);
	mutex_init(&p->doorbell_lock);
	INIT_LIST_HEAD(&p->queues);
	INIT_LIST_HEAD(&p->svm_ranges);
	INIT_LIST_HEAD(&p->svm_pending);
	spin_lock_init(&p->svm_unmap_lock);
	INIT_LIST_HEAD(&p->svm_unmaps);
	p->svm_lo = U64_MAX;
	INIT_DELAYED_WORK(&p->restore_userptr_work, kfdsim_restore_userptr_worker);
	kfdsim_queues_init_process(p);
	p->mm = thread->mm;
	p->lead_thread = thread->group_leader;
	err = kfdsim_events_init_process(p);
	if (err)
		goto err_pdds;
	err = init_pdds(p);
	if (err)
		goto err_pdds;

	hash_add_rcu(kfdsim_processes_table, &p->kfd_processes, (uintptr_t)p->mm);
	/* Must be last: from here on the release path owns the object */
	mn = mmu_notifier_get(&kfdsim_mmu_notifier_ops, p->mm);
	if (IS_ERR(mn)) {
		err = PTR_ERR(mn);
		hash_del_rcu(&p->kfd_processes);
		synchronize_rcu();
		goto err_pdds;
	}
	get_task_struct(p->lead_thread);
	return p;

err_pdds:
	idr_destroy(&p->event_idr);
	for (i = 0; i < p->n_pdds; i++) {
		idr_destroy(&p->pdds[i]->alloc_idr);
		kfree(p->pdds[i]);
	}
	mutex_destroy(&p->mutex);
	kfree(p);
	return ERR_PTR(err);
}

/*
 * kfd_create_process(): the process of @thread's mm, created if needed, with
 * a reference for the caller.
 */
struct kfdsim_process *kfdsim_create_process(struct task_struct *thread)
{
	struct kfdsim_process *p;

	if (!(thread->mm && mmget_not_zero(thread->mm)))
		return ERR_PTR(-EINVAL);
	/* Only the pthreads threading model is supported. */
	if (thread->group_leader->mm != thread->mm) {
		mmput(thread->mm);
		return ERR_PTR(-EINVAL);
	}
	/* a process of a previous image (exec) may still be in release */
	flush_workqueue(kfdsim_process_wq);

	mutex_lock(&kfdsim_processes_mutex);
	p = find_process_by_mm(thread->mm);
	if (!p)
		p = create_process(thread);
	if (!IS_ERR(p))
		kref_get(&p->ref);	/* the caller's */
	mutex_unlock(&kfdsim_processes_mutex);
	mmput(thread->mm);
	return p;
}

/*
 * kfd_lookup_process_by_pid() / kfd_get_process(): the KFD process of
 * @task's mm, with a reference, or NULL.
 */
struct kfdsim_process *kfdsim_lookup_process_by_task(struct task_struct *task)
{
	struct kfdsim_process *p;
	struct mm_struct *mm = get_task_mm(task);

	if (!mm)
		return NULL;
	rcu_read_lock();
	p = find_process_by_mm(mm);
	if (p && !kref_get_unless_zero(&p->ref))
		p = NULL;
	rcu_read_unlock();
	mmput(mm);
	return p;
}

/*
 * The KFD process whose pdd acquired the VM of @fpriv (ACQUIRE_VM), with a
 * reference, and that pdd's index; NULL if none. For readers of the VM's
 * figures (fdinfo.c), which must not take the process mutex under
 * kfdsim_vm_lock (ACQUIRE_VM takes them the other way round).
 */
struct kfdsim_process *kfdsim_vm_compute_process(struct kfdsim_fpriv *fpriv, u32 *pdd_index)
{
	struct kfdsim_process *p = NULL;

	mutex_lock(&kfdsim_vm_lock);
	if (fpriv->compute_pdd && kref_get_unless_zero(&fpriv->compute_pdd->process->ref)) {
		p = fpriv->compute_pdd->process;
		*pdd_index = fpriv->compute_pdd->index;
	}
	mutex_unlock(&kfdsim_vm_lock);
	return p;
}

/* debugfs kfdsim/processes: the state tests poll (section 3.2) */
int kfdsim_processes_show(struct seq_file *m, void *v)
{
	struct kfdsim_process *p;
	struct kfdsim_queue *q;
	unsigned int bkt;
	u32 i, nq, running, nsvm, pending, masked;

	mutex_lock(&kfdsim_processes_mutex);
	hash_for_each(kfdsim_processes_table, bkt, p, kfd_processes) {
		mutex_lock(&p->mutex);
		nq = 0;
		running = 0;
		masked = 0;
		list_for_each_entry(q, &p->queues, list) {
			nq++;
			running += q->active;
			masked += !!q->cu_mask_count;
		}
		seq_printf(m, "pid=%d paused=%d blocked=%d evicted_bos=%u xnack=%d queues=%u running=%u queues_running=%d evicted=",
			   task_tgid_nr(p->lead_thread), p->queues_paused,
			   p->block_mmu_notifications, p->evicted_bos, p->xnack_enabled,
			   nq, running, nq == running);
		for (i = 0; i < p->n_pdds; i++)
			seq_printf(m, "%s%u", i ? "," : "", p->pdds[i]->evicted);
		seq_puts(m, " user_gpu_ids=");
		for (i = 0; i < p->n_pdds; i++)
			seq_printf(m, "%s%u", i ? "," : "", p->pdds[i]->user_gpu_id);
		nsvm = kfdsim_svm_count(p, &pending);
		seq_printf(m, " svm_ranges=%u svm_pending=%u cu_masked=%u", nsvm, pending,
			   masked);
		kfdsim_settings_show(m, p);
		seq_putc(m, '\n');
		mutex_unlock(&p->mutex);
	}
	mutex_unlock(&kfdsim_processes_mutex);
	return 0;
}

struct kfdsim_pdd *kfdsim_pdd_by_user_id(struct kfdsim_process *p, u32 id)
{
	u32 i;

	for (i = 0; i < p->n_pdds; i++)
		if (p->pdds[i]->user_gpu_id == id)
			return p->pdds[i];
	return NULL;
}

struct kfdsim_pdd *kfdsim_pdd_by_dev(struct kfdsim_process *p,
				     struct kfdsim_node *dev)
{
	u32 i;

	for (i = 0; i < p->n_pdds; i++)
		if (p->pdds[i]->dev == dev)
			return p->pdds[i];
	return NULL;
}

/* kfd_bind_process_to_device(): the pdd must have a VM. */
struct kfdsim_pdd *kfdsim_bind_process_to_device(struct kfdsim_pdd *pdd)
{
	if (!pdd->drm_priv)
		return ERR_PTR(-ENODEV);
	return pdd;
}

/*
 * kfd_process_device_init_vm(): make the VM of an amdgpu DRM file the
 * process's compute VM on this GPU. On success the pdd keeps the caller's
 * reference to @drm_file. Like 6.12, any amdgpu DRM file is accepted (render
 * or not, of this GPU or another).
 */
int kfdsim_pdd_init_vm(struct kfdsim_pdd *pdd, struct file *drm_file)
{
	struct drm_file *drm_priv;
	struct kfdsim_fpriv *fpriv;
	int ret = 0;

	if (pdd->drm_priv)
		return -EBUSY;
	/* amdgpu_file_to_fpriv() */
	if (!kfdsim_is_drm_file(drm_file))
		return -EINVAL;
	drm_priv = drm_file->private_data;
	fpriv = drm_priv->driver_priv;

	mutex_lock(&kfdsim_vm_lock);
	/* already a compute VM (of this or another KFD process)? */
	if (fpriv->compute_pdd)
		ret = -EINVAL;
	else
		fpriv->compute_pdd = pdd;
	mutex_unlock(&kfdsim_vm_lock);
	if (ret)
		return ret;
	pdd->drm_priv = drm_priv;
	pdd->drm_file = drm_file;
	return 0;
}

int kfdsim_ioctl_acquire_vm(struct file *filep, struct kfdsim_process *p,
			    void *data)
{
	struct kfd_ioctl_acquire_vm_args *args = data;
	struct kfdsim_pdd *pdd;
	struct file *drm_file;
	int ret;

	drm_file = fget(args->drm_fd);
	if (!drm_file)
		return -EINVAL;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		ret = -EINVAL;
		goto err;
	}
	if (pdd->drm_file) {
		ret = pdd->drm_file == drm_file ? 0 : -EBUSY;
		goto err;
	}
	ret = kfdsim_pdd_init_vm(pdd, drm_file);
	if (ret)
		goto err;
	/* On success, the pdd keeps the drm_file reference */
	mutex_unlock(&p->mutex);
	return 0;

err:
	mutex_unlock(&p->mutex);
	fput(drm_file);
	return ret;
}

int kfdsim_process_init(void)
{
	kfdsim_process_wq = alloc_workqueue("kfdsim_process_wq", WQ_UNBOUND, 0);
	return kfdsim_process_wq ? 0 : -ENOMEM;
}

/*
 * Module exit: processes whose mm still lives (no /dev/kfd file open any
 * more, else the module could not be unloaded) are released now
 * (kfd_cleanup_processes()).
 */
void kfdsim_process_fini(void)
{
	struct kfdsim_process *p, *tmp;
	struct hlist_node *hn;
	LIST_HEAD(cleanup);
	unsigned int bkt;

	mutex_lock(&kfdsim_processes_mutex);
	hash_for_each_safe(kfdsim_processes_table, bkt, hn, p, kfd_processes) {
		hash_del_rcu(&p->kfd_processes);
		p->kfd_processes.pprev = NULL;	/* see kfdsim_notifier_release() */
		list_add(&p->cleanup_list, &cleanup);
	}
	mutex_unlock(&kfdsim_processes_mutex);
	synchronize_rcu();
	list_for_each_entry_safe(p, tmp, &cleanup, cleanup_list)
		release_internal(p);
	/* wait for the free_notifier callbacks, then for the release works */
	mmu_notifier_synchronize();
	destroy_workqueue(kfdsim_process_wq);
}

int kfdsim_events_debug_show(struct seq_file *m, void *v)
{
	struct kfdsim_process *p;
	unsigned int bkt;

	mutex_lock(&kfdsim_processes_mutex);
	hash_for_each(kfdsim_processes_table, bkt, p, kfd_processes)
		kfdsim_events_show(m, p);
	mutex_unlock(&kfdsim_processes_mutex);
	kfdsim_events_trace_show(m);
	return 0;
}
