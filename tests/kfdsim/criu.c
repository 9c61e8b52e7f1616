// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: AMDKFD_IOC_CRIU_OP (kfd_chardev.c criu_* of 6.12), sections 3-6
 * of the ABI document.
 *
 * Blob writer (CHECKPOINT): the process record, the device records, a hole
 * for the BO records, then the queue objects (queue.c), the event objects
 * (events.c), and last the BO records written into the hole together with
 * the buckets and the dma-buf fds, which are reserved first and installed
 * in the caller's fd table only when nothing can fail any more.
 *
 * Blob reader (RESTORE): strictly in order, every stage checking that its
 * records fit in priv_data_size: eviction, process record, devices (bind
 * pdds to the given DRM files, user_gpu_id), BOs (block MMU notifications,
 * recreate at the saved idr index, map, export), objects by type, and the
 * final size check. Nothing is rolled back.
 *
 * BO records are 272 bytes (64 GPUs, 6.5 and later) or, with the module
 * parameter bo_priv_size=80, 80 bytes (16 GPUs, before 6.5), to test
 * layout mismatches. The parameter is read at every op.
 *
 * After RESUME, queues restart asynchronously: the "userptr worker" runs
 * restore_delay_ms later (module parameter, default 500 ms, so that tests
 * can see the stopped state), validates the userptr BOs against the VMAs of
 * the process (retrying every restore_delay_ms while they are not covered)
 * and then restores the queues. /sys/kernel/debug/kfdsim/processes shows
 * the state.
 *
 * Locking: every op runs under the target process's mutex (RESUME: the
 * target found by PID, not the caller's).
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/file.h>
#include <linux/fcntl.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/dma-buf.h>
#include <linux/uaccess.h>
#include <drm/drm_gem.h>
#include <drm/drm_vma_manager.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define KFD_CRIU_PRIV_VERSION		1
#define KFD_CRIU_OBJECT_TYPE_QUEUE	0
#define KFD_CRIU_OBJECT_TYPE_EVENT	1
#define KFD_CRIU_OBJECT_TYPE_SVM	2
#define BO_RECORD_HEADER		12	/* user_addr, idr_handle */

static int bo_priv_size = 272;
module_param(bo_priv_size, int, 0644);
MODULE_PARM_DESC(bo_priv_size, "CRIU BO record size: 272 (6.5 and later, default) or 80 (before 6.5)");

static unsigned int restore_delay_ms = 500;
module_param(restore_delay_ms, uint, 0644);
MODULE_PARM_DESC(restore_delay_ms, "delay of the queue restart after CRIU RESUME (ms)");

struct criu_process_priv {
	u32 version;
	u32 xnack_mode;
};

struct criu_device_priv {
	u64 reserved;
};

static u32 bo_rec_size(void)
{
	return READ_ONCE(bo_priv_size) == 80 ? 80 : 272;
}

static u32 bo_rec_gpus(u32 rec)
{
	return (rec - BO_RECORD_HEADER) / 4;
}

/* Legacy rule: kernel-internal BOs at or below the GPUVM base are skipped. */
static bool bo_checkpointable(const struct kfdsim_pdd *pdd, const struct kfdsim_bo *bo)
{
	return !(bo->va && bo->va <= pdd->gpuvm_base);
}

static u32 count_bos(struct kfdsim_process *p)
{
	struct kfdsim_bo *bo;
	u32 i, n = 0;
	int id;

	for (i = 0; i < p->n_pdds; i++)
		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id)
			n += bo_checkpointable(p->pdds[i], bo);
	return n;
}

/* criu_get_process_info(): counts and the size formula of 5.10 */
static int process_info(struct kfdsim_process *p, u32 *num_devices, u32 *num_bos,
			u32 *num_objects, u64 *priv_size)
{
	u32 nq, ne, ns;
	u64 qsize, ssize;
	int ret;

	*num_devices = p->n_pdds;
	*num_bos = count_bos(p);
	ret = kfdsim_queues_checkpoint_info(p, &nq, &qsize);
	if (ret)
		return ret;
	ne = kfdsim_events_count(p);
	ns = kfdsim_svm_checkpoint_info(p, &ssize);
	*num_objects = nq + ne + ns;
	*priv_size = sizeof(struct criu_process_priv) +
		     (u64)*num_devices * sizeof(struct criu_device_priv) +
		     (u64)*num_bos * bo_rec_size() + qsize +
		     (u64)ne * 64 + ssize;
	return 0;
}

static int criu_process_info(struct kfdsim_process *p,
			     struct kfd_ioctl_criu_args *args)
{
	int ret;

	mutex_lock(&p->mutex);
	if (!p->n_pdds) {
		ret = -ENODEV;
		goto out;
	}
	ret = kfdsim_inject("process_info", "evict");
	if (!ret)
		ret = kfdsim_evict_process_queues(p);
	if (ret)
		goto out;
	p->queues_paused = true;
	args->pid = task_pid_nr_ns(p->lead_thread, task_active_pid_ns(p->lead_thread));
	ret = kfdsim_inject("process_info", "count");
	if (!ret)
		ret = process_info(p, &args->num_devices, &args->num_bos,
				   &args->num_objects, &args->priv_data_size);
	if (ret) {
		kfdsim_restore_process_queues(p);
		p->queues_paused = false;
	}
out:
	mutex_unlock(&p->mutex);
	return ret;
}

/* A dma-buf of @bo and a reserved fd for it (criu_get_prime_handle()). */
static int prime_handle(struct kfdsim_bo *bo, int flags, u32 *fd, struct file **file)
{
	int ret;

	ret = kfdsim_bo_export_dmabuf(bo);
	if (ret)
		return ret;
	ret = get_unused_fd_flags(flags);
	if (ret < 0)
		return ret;
	*fd = ret;
	*file = get_file(bo->dmabuf->file);
	return 0;
}

/* Install the reserved fds, or release them after a failure. */
static void commit_files(struct file **files, struct kfd_criu_bo_bucket *b, u32 n,
			 int err)
{
	u32 i;

	for (i = 0; i < n; i++) {
		if (!files[i])
			continue;
		if (err) {
			fput(files[i]);
			put_unused_fd(b[i].dmabuf_fd);
		} else {
			fd_install(b[i].dmabuf_fd, files[i]);
		}
	}
}

static int checkpoint_bos(struct kfdsim_process *p, u32 num_bos, u8 __user *ubuckets,
			  u8 __user *priv, u64 bo_off)
{
	u32 rec = bo_rec_size(), g = bo_rec_gpus(rec), i, j, k, n = 0;
	struct kfd_criu_bo_bucket *buckets;
	struct file **files;
	u8 *privs;
	int ret = 0;

	buckets = kvcalloc(num_bos ?: 1, sizeof(*buckets), GFP_KERNEL);
	privs = kvcalloc(num_bos ?: 1, rec, GFP_KERNEL);
	files = kvcalloc(num_bos ?: 1, sizeof(*files), GFP_KERNEL);
	if (!buckets || !privs || !files) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->n_pdds; i++) {
		struct kfdsim_pdd *pdd = p->pdds[i];
		struct kfdsim_bo *bo;
		int id;

		idr_for_each_entry(&pdd->alloc_idr, bo, id) {
			struct kfd_criu_bo_bucket *b = &buckets[n];
			u8 *r = privs + (size_t)n * rec;
			u32 flags = bo->alloc_flags;

			if (!bo_checkpointable(pdd, bo))
				continue;
			ret = kfdsim_inject("checkpoint", "bo");
			if (ret)
				goto out;
			b->addr = bo->va;
			b->size = bo->size;
			b->gpu_id = pdd->user_gpu_id;
			b->alloc_flags = flags;
			if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
				memcpy(r, &bo->user_addr, 8);
			memcpy(r + 8, &id, 4);
			if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)) {
				ret = prime_handle(bo, flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE ?
						   O_RDWR : 0, &b->dmabuf_fd, &files[n]);
				if (ret)
					goto out;
			} else {
				b->dmabuf_fd = KFD_INVALID_FD;
			}
			if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
				b->offset = KFDSIM_MMAP_TYPE_DOORBELL |
					    KFDSIM_MMAP_GPU_ID(pdd->dev->gpu_id);
			else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
				b->offset = KFDSIM_MMAP_TYPE_MMIO |
					    KFDSIM_MMAP_GPU_ID(pdd->dev->gpu_id);
			else
				b->offset = drm_vma_node_offset_addr(&bo->gem->shmem.base.vma_node);
			for (j = 0, k = 0; j < p->n_pdds && k < g; j++)
				if (test_bit(j, bo->mapped)) {
					memcpy(r + BO_RECORD_HEADER + 4 * k,
					       &p->pdds[j]->user_gpu_id, 4);
					k++;
				}
			n++;
		}
	}
	if (copy_to_user(ubuckets, buckets, (size_t)n * sizeof(*buckets)) ||
	    copy_to_user(priv + bo_off, privs, (size_t)n * rec))
		ret = -EFAULT;
out:
	if (files)
		commit_files(files, buckets, n, ret);
	kvfree(files);
	kvfree(privs);
	kvfree(buckets);
	return ret;
}

static int criu_checkpoint(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args)
{
	u8 __user *priv = u64_to_user_ptr(args->priv_data);
	struct kfd_criu_device_bucket *devs = NULL;
	struct criu_process_priv pp;
	u32 nd, nb, no, i;
	u64 size, off = 0, bo_off;
	int ret;

	if (!args->devices || !args->bos || !args->priv_data)
		return -EINVAL;
	mutex_lock(&p->mutex);
	if (!p->n_pdds) {
		ret = -ENODEV;
		goto out;
	}
	if (!p->queues_paused) {
		ret = -EINVAL;
		goto out;
	}
	ret = process_info(p, &nd, &nb, &no, &size);
	if (ret)
		goto out;
	if (nd != args->num_devices || nb != args->num_bos ||
	    no != args->num_objects || size != args->priv_data_size) {
		ret = -EINVAL;
		goto out;
	}
	ret = kfdsim_inject("checkpoint", "process");
	if (ret)
		goto out;
	pp.version = KFD_CRIU_PRIV_VERSION;
	pp.xnack_mode = p->xnack_enabled;
	if (copy_to_user(priv, &pp, sizeof(pp))) {
		ret = -EFAULT;
		goto out;
	}
	off += sizeof(pp);

	ret = kfdsim_inject("checkpoint", "devices");
	if (ret)
		goto out;
	devs = kvcalloc(nd, sizeof(*devs), GFP_KERNEL);
	if (!devs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nd; i++) {
		devs[i].user_gpu_id = p->pdds[i]->user_gpu_id;
		devs[i].actual_gpu_id = p->pdds[i]->dev->gpu_id;
	}
	if (copy_to_user(u64_to_user_ptr(args->devices), devs, nd * sizeof(*devs)) ||
	    clear_user(priv + off, nd * sizeof(struct criu_device_priv))) {
		ret = -EFAULT;
		goto out;
	}
	off += nd * sizeof(struct criu_device_priv);

	/* room for the BOs, written last so that no fd leaks on failure */
	bo_off = off;
	off += (u64)nb * bo_rec_size();
	if (no) {
		ret = kfdsim_inject("checkpoint", "queues");
		if (!ret)
			ret = kfdsim_queues_checkpoint(p, priv, &off);
		if (!ret)
			ret = kfdsim_inject("checkpoint", "events");
		if (!ret)
			ret = kfdsim_events_checkpoint(p, priv, &off);
		if (!ret)
			ret = kfdsim_inject("checkpoint", "svm");
		if (!ret)
			ret = kfdsim_svm_checkpoint(p, priv, &off);
		if (ret)
			goto out;
	}
	ret = checkpoint_bos(p, nb, u64_to_user_ptr(args->bos), priv, bo_off);
out:
	mutex_unlock(&p->mutex);
	kvfree(devs);
	return ret;
}

static int criu_unpause(struct kfdsim_process *p)
{
	int ret;

	mutex_lock(&p->mutex);
	if (!p->queues_paused) {
		ret = -EINVAL;
		goto out;
	}
	ret = kfdsim_inject("unpause", "restore");
	if (!ret)
		ret = kfdsim_restore_process_queues(p);
	if (!ret)
		p->queues_paused = false;
out:
	mutex_unlock(&p->mutex);
	return ret;
}

/* ---- RESTORE ------------------------------------------------------------------------ */

static int restore_process(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args,
			   u64 *off)
{
	struct criu_process_priv pp;
	int ret;

	ret = kfdsim_inject("restore", "process");
	if (ret)
		return ret;
	if (*off + sizeof(pp) > args->priv_data_size)
		return -EINVAL;
	if (copy_from_user(&pp, u64_to_user_ptr(args->priv_data) + *off, sizeof(pp)))
		return -EFAULT;
	*off += sizeof(pp);
	if (pp.version != KFD_CRIU_PRIV_VERSION)
		return -EINVAL;
	if (pp.xnack_mode && !kfdsim_xnack_supported(p))
		return -EPERM;
	p->xnack_enabled = pp.xnack_mode;
	return 0;
}

static int restore_devices(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args,
			   u64 *off)
{
	struct kfd_criu_device_bucket *devs;
	u32 i;
	int ret;

	ret = kfdsim_inject("restore", "devices");
	if (ret)
		return ret;
	if (args->num_devices != p->n_pdds)
		return -EINVAL;
	if (*off + (u64)args->num_devices * sizeof(struct criu_device_priv) >
	    args->priv_data_size)
		return -EINVAL;
	devs = kvmalloc_array(args->num_devices, sizeof(*devs), GFP_KERNEL);
	if (!devs)
		return -ENOMEM;
	if (copy_from_user(devs, u64_to_user_ptr(args->devices),
			   args->num_devices * sizeof(*devs))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < args->num_devices; i++) {
		struct kfdsim_node *dev;
		struct kfdsim_pdd *pdd;
		struct file *drm_file;

		if (!devs[i].user_gpu_id) {
			ret = -EINVAL;
			goto out;
		}
		dev = kfdsim_node_by_gpu_id(devs[i].actual_gpu_id);
		pdd = dev ? kfdsim_pdd_by_dev(p, dev) : NULL;
		if (!pdd) {
			ret = -EINVAL;
			goto out;
		}
		pdd->user_gpu_id = devs[i].user_gpu_id;
		if (pdd->drm_file) {
			ret = -EINVAL;
			goto out;
		}
		drm_file = fget(devs[i].drm_fd);
		if (!drm_file) {
			ret = -EINVAL;
			goto out;
		}
		/* the kernel does not check that the file belongs to @dev */
		if (kfdsim_pdd_init_vm(pdd, drm_file)) {
			fput(drm_file);
			ret = -EINVAL;
			goto out;
		}
	}
	/* device records: reserved, not read */
	*off += (u64)args->num_devices * sizeof(struct criu_device_priv);
out:
	kvfree(devs);
	return ret;
}

/* A new DRM fake offset if the BO got its old one (ABI document 13.7). */
static int fresh_offset(struct kfdsim_bo *bo, u64 old)
{
	struct drm_gem_object *obj = &bo->gem->shmem.base;
	struct drm_vma_offset_node tmp;
	int ret;

	if (drm_vma_node_offset_addr(&obj->vma_node) != old)
		return 0;
	memset(&tmp, 0, sizeof(tmp));
	drm_gem_free_mmap_offset(obj);
	/* hold the old range while the object gets a new one */
	ret = drm_vma_offset_add(obj->dev->vma_offset_manager, &tmp,
				 obj->size >> PAGE_SHIFT);
	if (!ret) {
		ret = drm_gem_create_mmap_offset(obj);
		drm_vma_offset_remove(obj->dev->vma_offset_manager, &tmp);
	} else {
		ret = drm_gem_create_mmap_offset(obj);
	}
	return ret;
}

static int restore_bo(struct kfdsim_process *p, struct kfd_criu_bo_bucket *b,
		      const u8 *r, struct file **file)
{
	u32 flags = b->alloc_flags, idr_handle, gpuid, j;
	struct kfdsim_pdd *pdd, *peer;
	struct kfdsim_bo *bo;
	u64 offset = 0, user_addr;
	int ret, h;

	ret = kfdsim_inject("restore", "bo");
	if (ret)
		return ret;
	memcpy(&user_addr, r, 8);
	memcpy(&idr_handle, r + 8, 4);
	pdd = kfdsim_pdd_by_user_id(p, b->gpu_id);
	if (!pdd)
		return -ENODEV;
	if (idr_handle > INT_MAX)
		return -EINVAL;

	/* criu_restore_memory_of_gpu() */
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
		if (b->size != kfdsim_doorbell_slice_size(pdd->dev))
			return -EINVAL;
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
		if (b->size != PAGE_SIZE)
			return -EINVAL;
		if (pdd->dev->props[NP_GFX_TARGET_VERSION] < 90000 || PAGE_SIZE > 4096)
			return -ENOMEM;
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		offset = user_addr;
	}
	if (!pdd->drm_priv)
		return -ENODEV;
	ret = kfdsim_gpuvm_alloc(pdd, b->addr, b->size, flags, &offset, true, &bo);
	if (ret)
		return ret;
	h = idr_alloc(&pdd->alloc_idr, bo, idr_handle, idr_handle + 1, GFP_KERNEL);
	if (h < 0) {
		bo->idr = -1;
		kfdsim_bo_destroy(bo);
		return -ENOMEM;
	}
	bo->idr = h;
	if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)) {
		ret = fresh_offset(bo, b->offset);
		if (ret)
			return ret;
		offset = drm_vma_node_offset_addr(&bo->gem->shmem.base.vma_node);
	}
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
		b->restored_offset = KFDSIM_MMAP_TYPE_DOORBELL |
				     KFDSIM_MMAP_GPU_ID(pdd->dev->gpu_id);
	else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		b->restored_offset = KFDSIM_MMAP_TYPE_MMIO |
				     KFDSIM_MMAP_GPU_ID(pdd->dev->gpu_id);
	else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT)
		b->restored_offset = offset;
	else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
		b->restored_offset = offset;
		atomic64_add(bo->size, &pdd->vram_usage);
	}

	/* map on the saved GPUs (user ids, the first 0 ends the list) */
	for (j = 0; j < p->n_pdds && j < bo_rec_gpus(bo_rec_size()); j++) {
		memcpy(&gpuid, r + BO_RECORD_HEADER + 4 * j, 4);
		if (!gpuid)
			break;
		peer = kfdsim_pdd_by_user_id(p, gpuid);
		if (!peer)
			return -EINVAL;
		peer = kfdsim_bind_process_to_device(peer);
		if (IS_ERR(peer))
			return PTR_ERR(peer);
		ret = kfdsim_inject("restore", "map");
		if (!ret)
			ret = kfdsim_gpuvm_map(p, bo, peer);
		if (ret)
			return ret;
	}
	if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT))
		return prime_handle(bo, O_RDWR, &b->dmabuf_fd, file);
	b->dmabuf_fd = KFD_INVALID_FD;
	return 0;
}

static int restore_bos(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args,
		       u64 *off)
{
	u32 rec = bo_rec_size(), n = args->num_bos, i = 0;
	struct kfd_criu_bo_bucket *buckets = NULL;
	struct file **files = NULL;
	u8 *privs = NULL;
	int ret;

	ret = kfdsim_inject("restore", "bos");
	if (ret)
		return ret;
	if (*off + (u64)n * rec > args->priv_data_size)
		return -EINVAL;
	/* until RESUME (amdgpu_amdkfd_block_mmu_notifications()) */
	p->block_mmu_notifications = true;
	if (!n)
		return 0;
	buckets = kvmalloc_array(n, sizeof(*buckets), GFP_KERNEL);
	privs = kvmalloc_array(n, rec, GFP_KERNEL);
	files = kvcalloc(n, sizeof(*files), GFP_KERNEL);
	if (!buckets || !privs || !files) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(buckets, u64_to_user_ptr(args->bos), n * sizeof(*buckets)) ||
	    copy_from_user(privs, u64_to_user_ptr(args->priv_data) + *off, (size_t)n * rec)) {
		ret = -EFAULT;
		goto out;
	}
	*off += (u64)n * rec;
	for (i = 0; i < n; i++) {
		ret = restore_bo(p, &buckets[i], privs + (size_t)i * rec, &files[i]);
		if (ret)
			goto out;
	}
	/* the buckets only, so that the caller sees restored_offset and fds */
	if (copy_to_user(u64_to_user_ptr(args->bos), buckets, n * sizeof(*buckets)))
		ret = -EFAULT;
out:
	if (files)
		commit_files(files, buckets, i, ret);
	kvfree(files);
	kvfree(privs);
	kvfree(buckets);
	return ret;
}

static int restore_objects(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args,
			   u64 *off)
{
	u8 __user *priv = u64_to_user_ptr(args->priv_data);
	u32 i, type;
	int ret;

	ret = kfdsim_inject("restore", "objects");
	if (ret)
		return ret;
	for (i = 0; i < args->num_objects; i++) {
		if (*off + sizeof(type) > args->priv_data_size)
			return -EINVAL;
		if (get_user(type, (u32 __user *)(priv + *off)))
			return -EFAULT;
		switch (type) {
		case KFD_CRIU_OBJECT_TYPE_QUEUE:
			ret = kfdsim_queue_restore(p, priv, off, args->priv_data_size);
			break;
		case KFD_CRIU_OBJECT_TYPE_EVENT:
			ret = kfdsim_event_restore(p, priv, off, args->priv_data_size);
			break;
		case KFD_CRIU_OBJECT_TYPE_SVM:
			ret = kfdsim_svm_restore(p, priv, off, args->priv_data_size);
			break;
		default:
			ret = -EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int criu_restore(struct kfdsim_process *p, struct kfd_ioctl_criu_args *args)
{
	u64 off = 0;
	int ret;

	if (!args->devices || !args->priv_data || !args->priv_data_size ||
	    !args->num_devices || (args->num_bos && !args->bos))
		return -EINVAL;
	mutex_lock(&p->mutex);
	/* nothing may run before the memory is in place */
	ret = kfdsim_inject("restore", "evict");
	if (!ret)
		ret = kfdsim_evict_process_queues(p);
	if (!ret)
		ret = restore_process(p, args, &off);
	if (!ret)
		ret = restore_devices(p, args, &off);
	if (!ret)
		ret = restore_bos(p, args, &off);
	if (!ret)
		ret = restore_objects(p, args, &off);
	if (!ret)
		ret = kfdsim_inject("restore", "end");
	if (!ret && off != args->priv_data_size)
		ret = -EINVAL;
	mutex_unlock(&p->mutex);
	return ret;
}

/* ---- RESUME -------------------------------------------------------------------------- */

/* Are the userptr BOs' CPU ranges mapped now? (amdgpu's validation) */
static bool userptrs_valid(struct kfdsim_process *p)
{
	struct mm_struct *mm = READ_ONCE(p->mm);
	struct vm_area_struct *vma;
	struct kfdsim_bo *bo;
	bool valid = true;
	u64 addr, end;
	u32 i;
	int id;

	if (!mm || !mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	for (i = 0; i < p->n_pdds && valid; i++)
		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id) {
			if (!(bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
				continue;
			for (addr = bo->user_addr, end = addr + bo->size; addr < end;
			     addr = vma->vm_end) {
				vma = vma_lookup(mm, addr);
				if (!vma) {
					valid = false;
					break;
				}
			}
			if (!valid)
				break;
		}
	mmap_read_unlock(mm);
	mmput(mm);
	return valid;
}

/* amdgpu_amdkfd_restore_userptr_worker() and kgd2kfd_resume_mm() */
void kfdsim_restore_userptr_worker(struct work_struct *work)
{
	struct kfdsim_process *p = container_of(to_delayed_work(work), struct kfdsim_process,
						restore_userptr_work);

	mutex_lock(&p->mutex);
	if (!p->evicted_bos || p->block_mmu_notifications)
		goto out;
	if (!userptrs_valid(p)) {
		schedule_delayed_work(&p->restore_userptr_work,
				      msecs_to_jiffies(READ_ONCE(restore_delay_ms)));
		goto out;
	}
	p->evicted_bos = 0;
	kfdsim_restore_process_queues(p);
out:
	mutex_unlock(&p->mutex);
}

static int criu_resume(struct kfd_ioctl_criu_args *args)
{
	struct kfdsim_process *target;
	struct task_struct *task;
	struct pid *pid;
	int ret;

	ret = kfdsim_inject("resume", "lookup");
	if (ret)
		return ret;
	/* in the caller's PID namespace */
	pid = find_get_pid(args->pid);
	task = pid ? get_pid_task(pid, PIDTYPE_PID) : NULL;
	put_pid(pid);
	if (!task)
		return -ESRCH;
	target = kfdsim_lookup_process_by_task(task);
	put_task_struct(task);
	if (!target)
		return -ESRCH;

	mutex_lock(&target->mutex);
	/* the pending SVM ranges, applied to the target's mm; list emptied */
	ret = kfdsim_svm_resume(target);
	if (ret)
		goto out;
	target->evicted_bos++;
	if (!target->block_mmu_notifications) {
		ret = -EINVAL;
		goto out;
	}
	target->block_mmu_notifications = false;
	schedule_delayed_work(&target->restore_userptr_work,
			      msecs_to_jiffies(READ_ONCE(restore_delay_ms)));
out:
	mutex_unlock(&target->mutex);
	kfdsim_unref_process(target);
	return ret;
}

int kfdsim_ioctl_criu_op(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_criu_args *args = data;
	static const char * const names[] = {
		"process_info", "checkpoint", "unpause", "restore", "resume",
	};
	int ret;

	if (args->op < ARRAY_SIZE(names)) {
		ret = kfdsim_inject(names[args->op], "entry");
		if (ret)
			return ret;
	}
	switch (args->op) {
	case KFD_CRIU_OP_PROCESS_INFO:
		return criu_process_info(p, args);
	case KFD_CRIU_OP_CHECKPOINT:
		return criu_checkpoint(p, args);
	case KFD_CRIU_OP_UNPAUSE:
		return criu_unpause(p);
	case KFD_CRIU_OP_RESTORE:
		return criu_restore(p, args);
	case KFD_CRIU_OP_RESUME:
		return criu_resume(args);
	default:
		return -EINVAL;
	}
}
