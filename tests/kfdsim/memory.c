// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: KFD memory (kfd_chardev.c memory ioctls and the parts of
 * amdgpu_amdkfd_gpuvm.c they rely on).
 *
 * Every BO is a GEM object (shmem helper) of the GPU's DRM device, so that its
 * mmap offset is a real DRM fake offset of the render node, CPU mappings go
 * through the DRM core, and dma-bufs are the DRM core's PRIME exports. Like
 * amdgpu, KFD grants CPU access through the render node only to the DRM file
 * that owns the VM (drm_vma_node_allow()); other files get EACCES from
 * drm_gem_mmap(). "VRAM" contents live in shmem pages like "GTT" ones.
 *
 * GPU mappings are bookkeeping only: a bitmap of the pdds (GPU VMs) a BO is
 * mapped on, with VA-overlap checks per VM.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/dma-buf.h>
#include <linux/uaccess.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define ALLOC_TYPE_MASK (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT | \
			 KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | \
			 KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)

/* amdgpu_amdkfd_gpuvm.c */
#define VRAM_AVAILABLITY_ALIGN	(1ULL << 21)
#define AMDGPU_VM_RESERVED_VRAM	(8ULL << 20)
#define AMDGPU_RESERVE_MEM_LIMIT (3ULL << 29)
#define GPUVM_VA_LIMIT		(1ULL << 48)

DEFINE_MUTEX(kfdsim_mem_lock);
static u64 system_mem_used;

/*
 * Real VRAM is finite: a GPU's KFD budget is its bank's size, or less with
 * vram_limit_mb (MiB, 0 = the bank), which models a smaller GPU or VRAM that
 * other clients (graphics, another driver user) hold. Writable at run time;
 * lowering it below what is allocated makes AVAILABLE_MEMORY 0 and every
 * further VRAM ALLOC (also CRIU RESTORE's) fail with ENOMEM, as in amdgpu.
 */
static unsigned long vram_limit_mb;
module_param(vram_limit_mb, ulong, 0644);
MODULE_PARM_DESC(vram_limit_mb, "VRAM budget per GPU in MiB (0: the memory bank's size)");

u64 kfdsim_vram_budget(const struct kfdsim_node *dev)
{
	u64 limit = (u64)READ_ONCE(vram_limit_mb) << 20;

	return limit && limit < dev->vram_size ? limit : dev->vram_size;
}

static u64 total_mem(void)
{
	return (u64)totalram_pages() << PAGE_SHIFT;
}

/* ESTIMATE_PT_SIZE(amdgpu_amdkfd_total_mem_size) */
static u64 reserved_for_pt(void)
{
	return max(total_mem() >> 14, AMDGPU_VM_RESERVED_VRAM);
}

/* kfd_mem_limit.max_system_mem_limit */
static u64 max_system_mem(void)
{
	u64 mem = total_mem(), limit = mem - (mem >> 6);

	if (limit < 2 * AMDGPU_RESERVE_MEM_LIMIT)
		return limit >> 1;
	return limit - AMDGPU_RESERVE_MEM_LIMIT;
}

/* amdgpu_amdkfd_reserve_mem_limit(); @dev only for VRAM */
int kfdsim_reserve_mem_limit(struct kfdsim_node *dev, u64 size, u32 flags)
{
	int ret = 0;

	mutex_lock(&kfdsim_mem_lock);
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
		if (dev->vram_used + size + reserved_for_pt() > kfdsim_vram_budget(dev))
			ret = -ENOMEM;
		else
			dev->vram_used += size;
	} else if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)) {
		if (system_mem_used + size > max_system_mem())
			ret = -ENOMEM;
		else
			system_mem_used += size;
	}
	mutex_unlock(&kfdsim_mem_lock);
	return ret;
}

void kfdsim_unreserve_mem_limit(struct kfdsim_node *dev, u64 size, u32 flags)
{
	mutex_lock(&kfdsim_mem_lock);
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		dev->vram_used -= size;
	else if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
		system_mem_used -= size;
	mutex_unlock(&kfdsim_mem_lock);
}

/* amdgpu_amdkfd_get_available_memory() of a dGPU */
u64 kfdsim_available_memory(struct kfdsim_node *dev)
{
	s64 avail;

	mutex_lock(&kfdsim_mem_lock);
	avail = kfdsim_vram_budget(dev) - dev->vram_used - reserved_for_pt();
	mutex_unlock(&kfdsim_mem_lock);
	if (avail < 0)
		avail = 0;
	return ALIGN_DOWN(avail, VRAM_AVAILABLITY_ALIGN);
}

/*
 * kfd_doorbell_process_slice(): 1024 doorbells of 8 bytes on SOC15 (GFX9+),
 * 4 bytes before. MES-scheduled GPUs (GFX11+) are not modelled separately.
 */
u64 kfdsim_doorbell_slice_size(const struct kfdsim_node *dev)
{
	u32 size = dev->props[NP_GFX_TARGET_VERSION] >= 90000 ? 8 : 4;

	return roundup(size * 1024, PAGE_SIZE);
}

/* Is [addr, addr + size) covered by VMAs of the caller (userptr pinning)? */
static int check_user_range(u64 addr, u64 size)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	u64 end = addr + size;
	int ret = 0;

	if (end < addr)
		return -EFAULT;
	mmap_read_lock(mm);
	while (addr < end) {
		vma = vma_lookup(mm, addr);
		if (!vma) {
			ret = -EFAULT;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
}

/*
 * amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu(); @criu_resume: CRIU RESTORE,
 * userptr validation deferred to the restore worker after RESUME.
 */
int kfdsim_gpuvm_alloc(struct kfdsim_pdd *pdd, u64 va, u64 size, u32 flags,
		       u64 *offset, bool criu_resume, struct kfdsim_bo **out)
{
	struct kfdsim_node *dev = pdd->dev;
	struct kfdsim_bo *bo;
	struct kfdsim_gem *gem;
	u64 user_addr = 0, aligned;
	int ret;

	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
		/* one domain each, VRAM first as in amdgpu */
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT) {
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		if (!*offset)
			return -EINVAL;
		user_addr = untagged_addr(*offset);
	} else if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
			    KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)) {
		if (size > UINT_MAX)
			return -EINVAL;
	} else {
		return -EINVAL;
	}

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	/* AQL ring double-map workaround: half the backing, mapped twice */
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
		size >>= 1;
	aligned = PAGE_ALIGN(size);
	if (!aligned) {
		ret = -EINVAL;
		goto err_free;
	}
	ret = kfdsim_reserve_mem_limit(dev, aligned, flags);
	if (ret)
		goto err_free;

	gem = kfdsim_gem_create(dev, aligned, flags);
	if (IS_ERR(gem)) {
		ret = PTR_ERR(gem);
		goto err_unreserve;
	}
	ret = drm_vma_node_allow(&gem->shmem.base.vma_node, pdd->drm_priv);
	if (ret)
		goto err_put;
	if (user_addr && !criu_resume) {
		ret = check_user_range(user_addr, aligned);
		if (ret)
			goto err_revoke;
	}
	bo->pdd = pdd;
	bo->alloc_flags = flags;
	bo->va = va;
	bo->size = aligned;
	bo->user_addr = user_addr;
	bo->gem = gem;
	*offset = drm_vma_node_offset_addr(&gem->shmem.base.vma_node);
	*out = bo;
	return 0;

err_revoke:
	drm_vma_node_revoke(&gem->shmem.base.vma_node, pdd->drm_priv);
err_put:
	drm_gem_object_put(&gem->shmem.base);
err_unreserve:
	kfdsim_unreserve_mem_limit(dev, aligned, flags);
err_free:
	kfree(bo);
	return ret;
}

/* VA span of a BO in a GPU VM: AQL BOs map their backing twice. */
static u64 bo_va_size(const struct kfdsim_bo *bo)
{
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
		return 2 * bo->size;
	return bo->size;
}

static void unmap_all(struct kfdsim_bo *bo)
{
	bitmap_zero(bo->mapped, KFDSIM_MAX_GPUS);
	bo->mapped_count = 0;
}

/* Frees a BO and its handle (FREE_MEMORY_OF_GPU, process teardown). */
void kfdsim_bo_destroy(struct kfdsim_bo *bo)
{
	struct kfdsim_pdd *pdd = bo->pdd;
	struct drm_gem_object *obj = &bo->gem->shmem.base;

	unmap_all(bo);
	idr_remove(&pdd->alloc_idr, bo->idr);
	drm_vma_node_revoke(&obj->vma_node, pdd->drm_priv);
	if (bo->dmabuf)
		dma_buf_put(bo->dmabuf);
	drm_gem_object_put(obj);
	/* imports reserved nothing (amdgpu_amdkfd_release_notify() of KFD BOs only) */
	if (!bo->imported)
		kfdsim_unreserve_mem_limit(pdd->dev, bo->size, bo->alloc_flags);
	kfree(bo);
}

int kfdsim_ioctl_alloc_memory_of_gpu(struct file *filep, struct kfdsim_process *p,
				     void *data)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args *args = data;
	struct kfdsim_pdd *pdd;
	struct kfdsim_node *dev;
	struct kfdsim_bo *bo;
	u32 flags = args->flags;
	u64 offset = args->mmap_offset;
	int idr_handle;
	int err;

	if (args->size == 0)
		return -EINVAL;

	mutex_lock(&p->mutex);
	/*
	 * The VA (unless a VRAM BO without VA) and a userptr's CPU range must
	 * not overlap registered SVM ranges.
	 */
	if ((!(!args->va_addr && (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)) &&
	     kfdsim_svm_overlaps(p, args->va_addr, args->size)) ||
	    ((flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) &&
	     kfdsim_svm_overlaps(p, args->mmap_offset, args->size))) {
		err = -EADDRINUSE;
		goto err_unlock;
	}
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		err = -EINVAL;
		goto err_unlock;
	}
	dev = pdd->dev;
	if ((flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) &&
	    (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) && !dev->large_bar) {
		err = -EINVAL;
		goto err_unlock;
	}
	pdd = kfdsim_bind_process_to_device(pdd);
	if (IS_ERR(pdd)) {
		err = PTR_ERR(pdd);
		goto err_unlock;
	}
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
		if (args->size != kfdsim_doorbell_slice_size(dev)) {
			err = -EINVAL;
			goto err_unlock;
		}
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
		if (args->size != PAGE_SIZE) {
			err = -EINVAL;
			goto err_unlock;
		}
		/* the HDP flush page exists on SOC15 dGPUs */
		if (dev->props[NP_GFX_TARGET_VERSION] < 90000 || PAGE_SIZE > 4096) {
			err = -ENOMEM;
			goto err_unlock;
		}
	}

	err = kfdsim_gpuvm_alloc(pdd, args->va_addr, args->size, flags, &offset, false, &bo);
	if (err)
		goto err_unlock;

	idr_handle = idr_alloc(&pdd->alloc_idr, bo, 0, 0, GFP_KERNEL);
	if (idr_handle < 0) {
		bo->idr = -1;
		err = -EFAULT;
		goto err_free;
	}
	bo->idr = idr_handle;
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		atomic64_add(bo->size, &pdd->vram_usage);
	mutex_unlock(&p->mutex);

	args->handle = KFDSIM_HANDLE(args->gpu_id, idr_handle);
	args->mmap_offset = offset;
	/* MMIO is mapped through /dev/kfd: a KFD mmap offset */
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		args->mmap_offset = KFDSIM_MMAP_TYPE_MMIO | KFDSIM_MMAP_GPU_ID(args->gpu_id);
	return 0;

err_free:
	kfdsim_bo_destroy(bo);
err_unlock:
	mutex_unlock(&p->mutex);
	return err;
}

int kfdsim_ioctl_free_memory_of_gpu(struct file *filep, struct kfdsim_process *p,
				    void *data)
{
	struct kfd_ioctl_free_memory_of_gpu_args *args = data;
	struct kfdsim_pdd *pdd;
	struct kfdsim_bo *bo;
	int ret = 0;

	mutex_lock(&p->mutex);
	if (p->signal_handle && p->signal_handle == args->handle) {
		ret = -EPERM;	/* "Free signal BO is not allowed" */
		goto out;
	}
	pdd = kfdsim_pdd_by_user_id(p, KFDSIM_HANDLE_GPU(args->handle));
	if (!pdd) {
		ret = -EINVAL;
		goto out;
	}
	bo = idr_find(&pdd->alloc_idr, KFDSIM_HANDLE_IDR(args->handle));
	if (!bo) {
		ret = -EINVAL;
		goto out;
	}
	/* still mapped: keep the handle for process teardown */
	if (bo->mapped_count) {
		ret = -EBUSY;
		goto out;
	}
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		atomic64_sub(bo->size, &pdd->vram_usage);
	kfdsim_bo_destroy(bo);
out:
	mutex_unlock(&p->mutex);
	return ret;
}

static bool va_overlaps(const struct kfdsim_bo *a, const struct kfdsim_bo *b)
{
	return a->va < b->va + bo_va_size(b) && b->va < a->va + bo_va_size(a);
}

/* amdgpu_vm_bo_map() conflict check in the VM of @peer */
static int check_va_conflict(struct kfdsim_process *p, struct kfdsim_bo *bo,
			     struct kfdsim_pdd *peer)
{
	struct kfdsim_bo *other;
	u32 i;
	int id;

	if (bo->va + bo_va_size(bo) > GPUVM_VA_LIMIT || bo->va + bo_va_size(bo) < bo->va)
		return -EINVAL;
	for (i = 0; i < p->n_pdds; i++)
		idr_for_each_entry(&p->pdds[i]->alloc_idr, other, id)
			if (other != bo && test_bit(peer->index, other->mapped) &&
			    va_overlaps(bo, other))
				return -EINVAL;
	return 0;
}

/* amdgpu_amdkfd_gpuvm_map_memory_to_gpu(): already mapped is a no-op */
int kfdsim_gpuvm_map(struct kfdsim_process *p, struct kfdsim_bo *bo,
		     struct kfdsim_pdd *peer)
{
	int ret;

	if (test_bit(peer->index, bo->mapped))
		return 0;
	ret = check_va_conflict(p, bo, peer);
	if (ret)
		return ret;
	set_bit(peer->index, bo->mapped);
	set_bit(peer->index, bo->attached);
	bo->mapped_count++;
	return 0;
}

static int gpuvm_unmap(struct kfdsim_bo *bo, struct kfdsim_pdd *peer)
{
	/* backs a live queue's ring, pointers, EOP or CWSR area in this VM */
	if (test_bit(peer->index, bo->mapped) && bo->queue_refs[peer->index])
		return -EBUSY;
	/* "If no VMs were reserved, it means the BO wasn't actually mapped" */
	if (!test_and_clear_bit(peer->index, bo->mapped))
		return -EINVAL;
	bo->mapped_count--;
	return 0;
}

static u32 *copy_device_ids(u64 uptr, u32 n, int *err)
{
	u32 *ids = kmalloc_array(n, sizeof(*ids), GFP_KERNEL);

	if (!ids) {
		*err = -ENOMEM;
		return NULL;
	}
	if (copy_from_user(ids, u64_to_user_ptr(uptr), (size_t)n * sizeof(*ids))) {
		kfree(ids);
		*err = -EFAULT;
		return NULL;
	}
	return ids;
}

/*
 * The BO of a memory handle (MAP/UNMAP prelude): the owning pdd by the
 * handle's user gpu_id (EINVAL), for MAP (@bind) a pdd with a VM (ENODEV),
 * then the idr index (ENOMEM, as kfd_process_device_translate_handle()
 * failing in both ioctls). Called with p->mutex held; NULL and *@err on
 * failure.
 */
static struct kfdsim_bo *kfdsim_bo_by_handle(struct kfdsim_process *p, u64 handle,
					     bool bind, int *err)
{
	struct kfdsim_pdd *pdd;
	struct kfdsim_bo *bo;

	pdd = kfdsim_pdd_by_user_id(p, KFDSIM_HANDLE_GPU(handle));
	if (!pdd) {
		*err = -EINVAL;
		return NULL;
	}
	if (bind) {
		pdd = kfdsim_bind_process_to_device(pdd);
		if (IS_ERR(pdd)) {
			*err = PTR_ERR(pdd);
			return NULL;
		}
	}
	bo = idr_find(&pdd->alloc_idr, KFDSIM_HANDLE_IDR(handle));
	if (!bo)
		*err = -ENOMEM;
	return bo;
}

int kfdsim_ioctl_map_memory_to_gpu(struct file *filep, struct kfdsim_process *p,
				   void *data)
{
	struct kfd_ioctl_map_memory_to_gpu_args *args = data;
	struct kfdsim_pdd *peer;
	struct kfdsim_bo *bo;
	u32 *devices_arr;
	u32 i;
	int err = 0;

	if (!args->n_devices || args->n_success > args->n_devices)
		return -EINVAL;
	devices_arr = copy_device_ids(args->device_ids_array_ptr, args->n_devices, &err);
	if (!devices_arr)
		return err;

	mutex_lock(&p->mutex);
	bo = kfdsim_bo_by_handle(p, args->handle, true, &err);
	if (!bo)
		goto out;
	for (i = args->n_success; i < args->n_devices; i++) {
		peer = kfdsim_pdd_by_user_id(p, devices_arr[i]);
		if (!peer) {
			err = -EINVAL;
			goto out;
		}
		peer = kfdsim_bind_process_to_device(peer);
		if (IS_ERR(peer)) {
			err = PTR_ERR(peer);
			goto out;
		}
		/* the reservation and the page-table wait are interruptible */
		err = kfdsim_inject("map_memory_to_gpu", "gpu");
		if (!err)
			err = kfdsim_gpuvm_map(p, bo, peer);
		if (err)
			goto out;
		args->n_success = i + 1;
	}
	/* page-table update wait and TLB flushes: nothing to simulate */
out:
	mutex_unlock(&p->mutex);
	kfree(devices_arr);
	return err;
}

int kfdsim_ioctl_unmap_memory_from_gpu(struct file *filep, struct kfdsim_process *p,
				       void *data)
{
	struct kfd_ioctl_unmap_memory_from_gpu_args *args = data;
	struct kfdsim_pdd *peer;
	struct kfdsim_bo *bo;
	u32 *devices_arr;
	u32 i;
	int err = 0;

	if (!args->n_devices || args->n_success > args->n_devices)
		return -EINVAL;
	devices_arr = copy_device_ids(args->device_ids_array_ptr, args->n_devices, &err);
	if (!devices_arr)
		return err;

	mutex_lock(&p->mutex);
	bo = kfdsim_bo_by_handle(p, args->handle, false, &err);
	if (!bo)
		goto out;
	for (i = args->n_success; i < args->n_devices; i++) {
		peer = kfdsim_pdd_by_user_id(p, devices_arr[i]);
		if (!peer) {
			err = -EINVAL;
			goto out;
		}
		err = gpuvm_unmap(bo, peer);
		if (err)
			goto out;
		args->n_success = i + 1;
	}
out:
	mutex_unlock(&p->mutex);
	kfree(devices_arr);
	return err;
}

int kfdsim_ioctl_available_memory(struct file *filep, struct kfdsim_process *p,
				  void *data)
{
	struct kfd_ioctl_get_available_memory_args *args = data;
	struct kfdsim_pdd *pdd;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	if (pdd)
		args->available = kfdsim_available_memory(pdd->dev);
	mutex_unlock(&p->mutex);
	return pdd ? 0 : -EINVAL;
}

/* kfd_mem_export_dmabuf(): one dma-buf per BO, read-write if WRITABLE */
int kfdsim_bo_export_dmabuf(struct kfdsim_bo *bo)
{
	struct dma_buf *dmabuf;

	if (bo->dmabuf)
		return 0;
	/* amdgpu_gem_prime_export() refuses userptr BOs */
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
		return -EPERM;
	if (!(bo->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)))
		return -EINVAL;
	dmabuf = drm_gem_prime_export(&bo->gem->shmem.base,
				      bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE ?
				      DRM_RDWR : 0);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	bo->dmabuf = dmabuf;
	return 0;
}

int kfdsim_ioctl_export_dmabuf(struct file *filep, struct kfdsim_process *p,
			       void *data)
{
	struct kfd_ioctl_export_dmabuf_args *args = data;
	struct kfdsim_node *dev;
	struct kfdsim_pdd *pdd;
	struct kfdsim_bo *bo;
	struct dma_buf *dmabuf;
	int ret;

	mutex_lock(&p->mutex);
	/* the handle's gpu part is looked up as an actual gpu_id */
	dev = kfdsim_node_by_gpu_id(KFDSIM_HANDLE_GPU(args->handle));
	pdd = dev ? kfdsim_pdd_by_dev(p, dev) : NULL;
	bo = pdd ? idr_find(&pdd->alloc_idr, KFDSIM_HANDLE_IDR(args->handle)) : NULL;
	if (!bo) {
		mutex_unlock(&p->mutex);
		return -EINVAL;
	}
	ret = kfdsim_bo_export_dmabuf(bo);
	dmabuf = bo->dmabuf;
	if (!ret)
		get_dma_buf(dmabuf);
	mutex_unlock(&p->mutex);
	if (ret)
		return ret;

	ret = dma_buf_fd(dmabuf, args->flags);
	if (ret < 0) {
		dma_buf_put(dmabuf);
		return ret;
	}
	/* the fd owns the reference now */
	args->dmabuf_fd = ret;
	return 0;
}

/* The domain flags of a kfdsim GEM object (its preferred domain) */
static u32 gem_domain_flags(struct kfdsim_gem *gem)
{
	return gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM ?
	       KFD_IOC_ALLOC_MEM_FLAGS_VRAM : KFD_IOC_ALLOC_MEM_FLAGS_GTT;
}

/*
 * dma_buf_get() and the checks of amdgpu's import and get_dmabuf_info: a
 * PRIME export of a kfdsim render node whose object is VRAM or GTT.
 */
static struct dma_buf *get_kfdsim_dmabuf(int fd, struct kfdsim_gem **gem)
{
	struct dma_buf *dmabuf = dma_buf_get(fd);

	if (IS_ERR(dmabuf))
		return dmabuf;
	*gem = kfdsim_gem_from_dmabuf(dmabuf);
	if (!*gem || !((*gem)->kfd_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM |
					    KFD_IOC_ALLOC_MEM_FLAGS_GTT))) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	return dmabuf;
}

/*
 * amdgpu_amdkfd_gpuvm_import_dmabuf_fd(): a dma-buf of this GPU's DRM device
 * gives the exporter's object itself (its domain); one of another GPU is
 * attached as a new GTT object of this device (amdgpu_dma_buf_create_obj()).
 * The result is WRITABLE|EXECUTABLE, keeps the dma-buf (a CRIU checkpoint
 * hands out that one), and reserves no memory.
 */
static int import_dmabuf(struct kfdsim_pdd *pdd, int fd, u64 va, struct kfdsim_bo **out)
{
	struct drm_device *drm = &pdd->dev->drm->drm;
	struct kfdsim_gem *exp_gem, *gem;
	struct drm_gem_object *obj;
	struct dma_buf *dmabuf;
	struct kfdsim_bo *bo;
	u32 domain;
	int ret;

	dmabuf = get_kfdsim_dmabuf(fd, &exp_gem);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (exp_gem->shmem.base.dev == drm) {
		obj = &exp_gem->shmem.base;
		drm_gem_object_get(obj);
		domain = gem_domain_flags(exp_gem);
	} else {
		obj = drm_gem_prime_import(drm, dmabuf);
		if (IS_ERR(obj)) {
			ret = PTR_ERR(obj);
			goto err_put_dmabuf;
		}
		domain = KFD_IOC_ALLOC_MEM_FLAGS_GTT;
		to_kfdsim_gem(obj)->kfd_flags = domain;
		ret = drm_gem_create_mmap_offset(obj);
		if (ret)
			goto err_put_obj;
	}
	gem = to_kfdsim_gem(obj);
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo) {
		ret = -ENOMEM;
		goto err_put_obj;
	}
	ret = drm_vma_node_allow(&obj->vma_node, pdd->drm_priv);
	if (ret)
		goto err_free;
	bo->pdd = pdd;
	bo->alloc_flags = domain | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
			  KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
	bo->va = va;
	bo->size = obj->size;
	bo->gem = gem;
	bo->dmabuf = dmabuf;
	bo->imported = true;
	*out = bo;
	return 0;

err_free:
	kfree(bo);
err_put_obj:
	drm_gem_object_put(obj);
err_put_dmabuf:
	dma_buf_put(dmabuf);
	return ret;
}

int kfdsim_ioctl_import_dmabuf(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_import_dmabuf_args *args = data;
	struct kfdsim_pdd *pdd;
	struct kfdsim_bo *bo;
	int idr_handle, ret;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		ret = -EINVAL;
		goto out;
	}
	pdd = kfdsim_bind_process_to_device(pdd);
	if (IS_ERR(pdd)) {
		ret = PTR_ERR(pdd);
		goto out;
	}
	ret = import_dmabuf(pdd, args->dmabuf_fd, args->va_addr, &bo);
	if (ret)
		goto out;
	idr_handle = idr_alloc(&pdd->alloc_idr, bo, 0, 0, GFP_KERNEL);
	if (idr_handle < 0) {
		bo->idr = -1;
		kfdsim_bo_destroy(bo);
		ret = -EFAULT;
		goto out;
	}
	bo->idr = idr_handle;
	args->handle = KFDSIM_HANDLE(args->gpu_id, idr_handle);
out:
	mutex_unlock(&p->mutex);
	return ret;
}

/*
 * kfd_ioctl_get_dmabuf_info(): needs a GPU the caller may see (EINVAL);
 * size, domain flags (PUBLIC for CPU-visible VRAM), the exporter GPU's
 * actual gpu_id; KFD BOs carry no metadata (metadata_size 0 when asked).
 */
int kfdsim_ioctl_get_dmabuf_info(struct file *filep, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_get_dmabuf_info_args *args = data;
	struct kfdsim_node *dev = NULL;
	struct dma_buf *dmabuf;
	struct kfdsim_gem *gem;
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++)
		if (!kfdsim_devcgroup_check_permission(kfdsim_topo->gpus[i])) {
			dev = kfdsim_topo->gpus[i];
			break;
		}
	if (!dev)
		return -EINVAL;
	dmabuf = get_kfdsim_dmabuf(args->dmabuf_fd, &gem);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	args->size = gem->shmem.base.size;
	if (args->metadata_ptr)
		args->metadata_size = 0;
	args->flags = gem_domain_flags(gem);
	if ((gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) &&
	    (gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC))
		args->flags |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
	args->gpu_id = kfdsim_gem_node(gem)->gpu_id;
	dma_buf_put(dmabuf);
	return 0;
}
