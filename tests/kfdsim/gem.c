// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the render node's own buffer objects, as amdgpu_gem.c and
 * amdgpu_bo_list.c of 6.12 (facts: docs/sdma-facts.md 2.3, 2.4, 2.7, 2.8, 7):
 *
 *   DRM_AMDGPU_GEM_CREATE   GTT or VRAM (the IB buffer of an SDMA copy);
 *                           counted against the GPU's memory like KFD BOs
 *   DRM_AMDGPU_GEM_MMAP     the fake offset for a CPU mmap of the render
 *                           node; EPERM for userptr and NO_CPU_ACCESS BOs
 *   DRM_AMDGPU_GEM_USERPTR  a BO over the caller's pages: page-aligned
 *                           address and size, REGISTER unless READONLY
 *                           (EACCES), with VALIDATE one anonymous VMA for
 *                           ANONONLY (EPERM) or any VMA (EFAULT if none)
 *   DRM_AMDGPU_BO_LIST      CREATE, DESTROY (unknown: 0), UPDATE (unknown:
 *                           ENOENT); unknown handles ENOENT, a userptr BO
 *                           of another process EPERM
 *
 * PRIME import of kfdsim's own dma-bufs (the KFD BOs the plugin imports) is
 * the DRM core's: same device, same GEM object, a handle in the importer.
 *
 * Userptr pages are looked up when an SDMA job touches them (gpuvm.c), in
 * the owner's mm, as HMM faults them again at every CS; the MMU notifier and
 * its EAGAIN after an invalidation are not modelled (an unmapped range is a
 * GPU VM fault, EFAULT, at the job).
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <uapi/drm/amdgpu_drm.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define CREATE_FLAGS	(AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED | \
			 AMDGPU_GEM_CREATE_NO_CPU_ACCESS | \
			 AMDGPU_GEM_CREATE_CPU_GTT_USWC | \
			 AMDGPU_GEM_CREATE_VRAM_CLEARED | \
			 AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | \
			 AMDGPU_GEM_CREATE_EXPLICIT_SYNC | \
			 AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE | \
			 AMDGPU_GEM_CREATE_DISCARDABLE | \
			 AMDGPU_GEM_CREATE_COHERENT | \
			 AMDGPU_GEM_CREATE_UNCACHED)
#define USERPTR_FLAGS	(AMDGPU_GEM_USERPTR_READONLY | AMDGPU_GEM_USERPTR_ANONONLY | \
			 AMDGPU_GEM_USERPTR_VALIDATE | AMDGPU_GEM_USERPTR_REGISTER)
#define BO_LIST_MAX	(128 * 1024)

static struct kfdsim_node *file_node(struct drm_device *dev)
{
	return container_of(dev, struct kfdsim_drm, drm)->node;
}

/* Frees what the objects of this file add to a GEM object (drm.c's .free). */
void kfdsim_gem_release_extra(struct kfdsim_gem *gem)
{
	if (gem->userptr_mm)
		mmdrop(gem->userptr_mm);
	if (gem->reserved_node)
		kfdsim_unreserve_mem_limit(gem->reserved_node, gem->shmem.base.size,
					   gem->kfd_flags);
}

static int new_handle(struct drm_file *file, struct kfdsim_gem *gem, u32 *handle)
{
	int ret = drm_gem_handle_create(file, &gem->shmem.base, handle);

	/* the handle holds the object now (or nothing does) */
	drm_gem_object_put(&gem->shmem.base);
	return ret;
}

/* ---- GEM_CREATE, GEM_MMAP ------------------------------------------------------ */

int kfdsim_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_gem_create *args = data;
	struct kfdsim_node *node = file_node(dev);
	u64 domains = args->in.domains, size = PAGE_ALIGN(args->in.bo_size);
	struct kfdsim_gem *gem;
	u32 kfd_flags;
	int ret;

	if (!node)
		return -ENODEV;
	if (args->in.domain_flags & ~(u64)CREATE_FLAGS)
		return -EINVAL;
	if (domains & AMDGPU_GEM_DOMAIN_DOORBELL ||
	    domains & ~(u64)AMDGPU_GEM_DOMAIN_MASK ||
	    !(domains & (AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM)) || !size ||
	    size < args->in.bo_size)
		return -EINVAL;
	kfd_flags = domains & AMDGPU_GEM_DOMAIN_VRAM ? KFD_IOC_ALLOC_MEM_FLAGS_VRAM :
						       KFD_IOC_ALLOC_MEM_FLAGS_GTT;
	ret = kfdsim_reserve_mem_limit(node, size, kfd_flags);
	if (ret)
		return ret;
	gem = kfdsim_gem_create(node, size, kfd_flags);
	if (IS_ERR(gem)) {
		kfdsim_unreserve_mem_limit(node, size, kfd_flags);
		return PTR_ERR(gem);
	}
	gem->reserved_node = node;
	gem->no_cpu_access = args->in.domain_flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
	gem->create_domains = domains;
	gem->create_flags = args->in.domain_flags;
	gem->create_alignment = max_t(u64, args->in.alignment, PAGE_SIZE);
	memset(args, 0, sizeof(*args));
	return new_handle(file, gem, &args->out.handle);
}

int kfdsim_gem_mmap_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_gem_mmap *args = data;
	struct drm_gem_object *obj = drm_gem_object_lookup(file, args->in.handle);
	struct kfdsim_gem *gem;
	int ret = 0;

	if (!obj)
		return -ENOENT;
	gem = to_kfdsim_gem(obj);
	if (gem->userptr_mm || gem->no_cpu_access)
		ret = -EPERM;
	else
		args->out.addr_ptr = drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return ret;
}

/* ---- GEM_USERPTR ----------------------------------------------------------------- */

/* VALIDATE: the range in one VMA (ANONONLY: an anonymous one), its pages faulted in. */
static int userptr_validate(u64 addr, u64 size, u32 flags)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	long n, i;
	int ret = 0;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	if (!vma)
		ret = -EFAULT;
	else if (flags & AMDGPU_GEM_USERPTR_ANONONLY && (vma->vm_file || addr + size > vma->vm_end))
		ret = -EPERM;
	for (i = 0; !ret && i < (long)(size >> PAGE_SHIFT); i += n) {
		struct page *page;

		n = get_user_pages(addr + (i << PAGE_SHIFT), 1,
				   flags & AMDGPU_GEM_USERPTR_READONLY ? 0 : FOLL_WRITE, &page);
		if (n != 1)
			ret = n < 0 ? (int)n : -EFAULT;
		else
			put_page(page);
	}
	mmap_read_unlock(mm);
	return ret;
}

int kfdsim_gem_userptr_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_userptr *args = data;
	struct kfdsim_node *node = file_node(dev);
	u64 addr = untagged_addr(args->addr);
	struct kfdsim_gem *gem;
	int ret;

	if (!node)
		return -ENODEV;
	if (offset_in_page(addr | args->size) || !args->size || addr + args->size < addr)
		return -EINVAL;
	if (args->flags & ~USERPTR_FLAGS)
		return -EINVAL;
	/* "to write it we must install an MMU notifier" */
	if (!(args->flags & (AMDGPU_GEM_USERPTR_READONLY | AMDGPU_GEM_USERPTR_REGISTER)))
		return -EACCES;
	if (args->flags & AMDGPU_GEM_USERPTR_VALIDATE) {
		ret = userptr_validate(addr, args->size, args->flags);
		if (ret)
			return ret;
	}
	gem = kfdsim_gem_create(node, args->size, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
	if (IS_ERR(gem))
		return PTR_ERR(gem);
	mmgrab(current->mm);
	gem->userptr_mm = current->mm;
	gem->userptr_addr = addr;
	gem->create_domains = AMDGPU_GEM_DOMAIN_CPU;	/* amdgpu_gem_userptr_ioctl() */
	gem->create_alignment = PAGE_SIZE;
	gem->userptr_readonly = args->flags & AMDGPU_GEM_USERPTR_READONLY;
	return new_handle(file, gem, &args->handle);
}

/* ---- BO_LIST ------------------------------------------------------------------------ */

struct bo_list {
	u32 n;
	u32 handles[];
};

void kfdsim_bo_lists_init(struct kfdsim_fpriv *fpriv)
{
	mutex_init(&fpriv->bo_list_lock);
	idr_init_base(&fpriv->bo_lists, 1);
}

void kfdsim_bo_lists_fini(struct kfdsim_fpriv *fpriv)
{
	struct bo_list *list;
	int id;

	idr_for_each_entry(&fpriv->bo_lists, list, id)
		kvfree(list);
	idr_destroy(&fpriv->bo_lists);
	mutex_destroy(&fpriv->bo_list_lock);
}

/* amdgpu_bo_list_create(): every handle a BO of this file the caller may use. */
static struct bo_list *list_from_user(struct drm_file *file, const union drm_amdgpu_bo_list *args)
{
	u32 n = args->in.bo_number, esize = args->in.bo_info_size, i;
	struct drm_amdgpu_bo_list_entry e;
	const char __user *p = u64_to_user_ptr(args->in.bo_info_ptr);
	struct drm_gem_object *obj;
	struct bo_list *list;
	int ret = 0;

	if (n > BO_LIST_MAX)
		return ERR_PTR(-EINVAL);
	list = kvzalloc(struct_size(list, handles, n), GFP_KERNEL);
	if (!list)
		return ERR_PTR(-ENOMEM);
	list->n = n;
	for (i = 0; i < n && !ret; i++) {
		memset(&e, 0, sizeof(e));
		if (copy_from_user(&e, p + (u64)i * esize, min_t(u32, esize, sizeof(e)))) {
			ret = -EFAULT;
			break;
		}
		obj = drm_gem_object_lookup(file, e.bo_handle);
		if (!obj) {
			ret = -ENOENT;
			break;
		}
		if (to_kfdsim_gem(obj)->userptr_mm && to_kfdsim_gem(obj)->userptr_mm != current->mm)
			ret = -EPERM;
		drm_gem_object_put(obj);
		list->handles[i] = e.bo_handle;
	}
	if (ret) {
		kvfree(list);
		return ERR_PTR(ret);
	}
	return list;
}

int kfdsim_bo_list_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_bo_list *args = data;
	struct kfdsim_fpriv *fpriv = file->driver_priv;
	struct bo_list *list = NULL, *old;
	u32 handle = args->in.list_handle;
	int ret;

	if (args->in.operation != AMDGPU_BO_LIST_OP_DESTROY) {
		list = list_from_user(file, args);
		if (IS_ERR(list))
			return PTR_ERR(list);
	}
	mutex_lock(&fpriv->bo_list_lock);
	switch (args->in.operation) {
	case AMDGPU_BO_LIST_OP_CREATE:
		ret = idr_alloc(&fpriv->bo_lists, list, 1, 0, GFP_KERNEL);
		if (ret >= 0) {
			memset(args, 0, sizeof(*args));
			args->out.list_handle = ret;
			list = NULL;
			ret = 0;
		}
		break;
	case AMDGPU_BO_LIST_OP_DESTROY:
		kvfree(idr_remove(&fpriv->bo_lists, handle));
		ret = 0;
		break;
	case AMDGPU_BO_LIST_OP_UPDATE:
		old = idr_replace(&fpriv->bo_lists, list, handle);
		ret = IS_ERR(old) ? PTR_ERR(old) : 0;
		if (!ret) {
			kvfree(old);
			list = NULL;
		}
		break;
	default:
		ret = -EINVAL;
	}
	mutex_unlock(&fpriv->bo_list_lock);
	kvfree(list);
	return ret;
}

int kfdsim_bo_list_check(struct drm_file *file, u32 handle)
{
	struct kfdsim_fpriv *fpriv = file->driver_priv;
	int ret;

	mutex_lock(&fpriv->bo_list_lock);
	ret = idr_find(&fpriv->bo_lists, handle) ? 0 : -ENOENT;
	mutex_unlock(&fpriv->bo_list_lock);
	return ret;
}
