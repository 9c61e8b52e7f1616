// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the GPU virtual address space of a render-node file (amdgpu_vm)
 * and DRM_AMDGPU_GEM_VA, as amdgpu_gem.c and amdgpu_vm.c of 6.12 (facts:
 * docs/sdma-facts.md 2.6 and 3).
 *
 * A VM is a list of mappings [start, end) -> (GEM object, offset in it,
 * READABLE/WRITEABLE/EXECUTABLE), addresses masked to 48 bits as amdgpu
 * keeps them. It lives from the file's open to its postclose, after the
 * file's contexts have drained their jobs (which read it through
 * kfdsim_gpuvm_page()). Closing a file's handle of an object removes that
 * object's mappings (amdgpu_gem_object_close()).
 *
 * GEM_VA checks, in the kernel's order: the address against the reserved
 * bottom (64 KiB), the hole and the top (VM size minus trap, seq64 and CSA:
 * also for UNMAP, with the caller's size); the flags; the operation; the
 * handle (ENOENT); then for MAP 4 KiB alignment of address, offset and size,
 * size not 0, offset + size within the object, no overlap with a mapping of
 * the VM (EINVAL, "va ... conflict"). UNMAP finds a mapping of the object by
 * its start address only (ENOENT). CLEAR removes what lies in the range,
 * cutting mappings that cross its ends; REPLACE is CLEAR then MAP.
 *
 * Not modelled (EINVAL): PRT mappings (no object), DELAY_UPDATE is accepted
 * and changes nothing (page tables are not simulated).
 */
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <uapi/drm/amdgpu_drm.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define GPU_PAGE		4096ULL
#define VA_RESERVED_BOTTOM	(1ULL << 16)
#define VA_RESERVED_TOP		((2ULL << 12) + (2ULL << 20) + (2ULL << 20))
#define VM_SIZE			(1ULL << 48)
#define HOLE_START		0x0000800000000000ULL
#define HOLE_END		0xffff800000000000ULL
#define VA_MASK			(VM_SIZE - 1)
#define VALID_FLAGS		(AMDGPU_VM_DELAY_UPDATE | AMDGPU_VM_PAGE_READABLE | \
				 AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_PAGE_EXECUTABLE | \
				 AMDGPU_VM_MTYPE_MASK | AMDGPU_VM_PAGE_NOALLOC)

struct kfdsim_gpuvm {
	struct mutex lock;		/* mappings */
	struct list_head mappings;
};

struct gpuvm_mapping {
	struct list_head link;
	u64 start, end;			/* [start, end), 48-bit */
	u64 offset;			/* of start in the object */
	u32 flags;			/* AMDGPU_VM_PAGE_* */
	struct kfdsim_gem *gem;		/* holds a reference */
};

struct kfdsim_gpuvm *kfdsim_gpuvm_create(void)
{
	struct kfdsim_gpuvm *vm = kzalloc(sizeof(*vm), GFP_KERNEL);

	if (!vm)
		return NULL;
	mutex_init(&vm->lock);
	INIT_LIST_HEAD(&vm->mappings);
	return vm;
}

static void mapping_free(struct gpuvm_mapping *m)
{
	list_del(&m->link);
	drm_gem_object_put(&m->gem->shmem.base);
	kfree(m);
}

/* After the file's jobs are done: nothing reads the VM any more. */
void kfdsim_gpuvm_destroy(struct kfdsim_gpuvm *vm)
{
	struct gpuvm_mapping *m, *tmp;

	if (!vm)
		return;
	list_for_each_entry_safe(m, tmp, &vm->mappings, link)
		mapping_free(m);
	mutex_destroy(&vm->lock);
	kfree(vm);
}

struct kfdsim_gpuvm *kfdsim_fpriv_vm(struct drm_file *file)
{
	struct kfdsim_fpriv *fpriv = file->driver_priv;

	return fpriv->vm;
}

void kfdsim_gpuvm_lock(struct kfdsim_gpuvm *vm)
{
	mutex_lock(&vm->lock);
}

void kfdsim_gpuvm_unlock(struct kfdsim_gpuvm *vm)
{
	mutex_unlock(&vm->lock);
}

static struct gpuvm_mapping *mapping_at(struct kfdsim_gpuvm *vm, u64 va)
{
	struct gpuvm_mapping *m;

	list_for_each_entry(m, &vm->mappings, link)
		if (va >= m->start && va < m->end)
			return m;
	return NULL;
}

/* The page of a userptr object behind its byte @off, from its owner's mm. */
static int userptr_page(struct kfdsim_gem *gem, u64 off, bool write, struct page **page)
{
	struct mm_struct *mm = gem->userptr_mm;
	long n;

	if (write && gem->userptr_readonly)
		return -EACCES;	/* the GPU PTE lacks WRITEABLE: a VM fault */
	if (!mmget_not_zero(mm))
		return -ESRCH;
	mmap_read_lock(mm);
	n = get_user_pages_remote(mm, (gem->userptr_addr + off) & PAGE_MASK, 1,
				  write ? FOLL_WRITE : 0, page, NULL);
	mmap_read_unlock(mm);
	mmput(mm);
	return n == 1 ? 0 : -EFAULT;
}

/* The page of a shmem-backed object behind its byte @off (also KFD BOs'). */
int kfdsim_gem_page(struct kfdsim_gem *gem, u64 off, struct page **page)
{
	struct file *filp = gem->shmem.base.filp;
	struct page *p;

	if (!filp)
		return -EFAULT;	/* an imported foreign dma-buf: not modelled */
	p = shmem_read_mapping_page(filp->f_mapping, off >> PAGE_SHIFT);
	if (IS_ERR(p))
		return PTR_ERR(p);
	*page = p;
	return 0;
}

int kfdsim_gpuvm_page(struct kfdsim_gpuvm *vm, u64 va, bool write, struct page **page,
		      u32 *offset, u32 *len)
{
	struct gpuvm_mapping *m;
	u64 off;
	int ret;

	lockdep_assert_held(&vm->lock);
	m = mapping_at(vm, va);
	if (!m)
		return -EFAULT;
	if (!(m->flags & (write ? AMDGPU_VM_PAGE_WRITEABLE : AMDGPU_VM_PAGE_READABLE)))
		return -EACCES;
	off = m->offset + (va - m->start);
	if (m->gem->userptr_mm)
		ret = userptr_page(m->gem, off, write, page);
	else
		ret = kfdsim_gem_page(m->gem, off, page);
	if (ret)
		return ret;
	*offset = offset_in_page(off);
	*len = min_t(u64, PAGE_SIZE - *offset, m->end - va);
	return 0;
}

/* Drops @gem's mappings from the file's VM: its last handle there is closed. */
void kfdsim_gpuvm_gem_closed(struct drm_file *file, struct kfdsim_gem *gem)
{
	struct kfdsim_gpuvm *vm = kfdsim_fpriv_vm(file);
	struct gpuvm_mapping *m, *tmp;

	if (!vm)
		return;
	mutex_lock(&vm->lock);
	list_for_each_entry_safe(m, tmp, &vm->mappings, link)
		if (m->gem == gem)
			mapping_free(m);
	mutex_unlock(&vm->lock);
}

/*
 * What the VM's GEM_VA mappings hold, for fdinfo.c: bytes of the distinct
 * GEM objects mapped (VRAM and the rest) and the page-table blocks (2 MiB of
 * VA each) the mappings touch, counted per mapping.
 */
void kfdsim_gpuvm_stats(struct kfdsim_gpuvm *vm, u64 *vram, u64 *gtt, u64 *pt_blocks)
{
	struct gpuvm_mapping *m, *e;

	*vram = *gtt = *pt_blocks = 0;
	if (!vm)
		return;
	mutex_lock(&vm->lock);
	list_for_each_entry(m, &vm->mappings, link) {
		bool seen = false;

		*pt_blocks += kfdsim_pt_blocks(m->start, m->end - m->start);
		list_for_each_entry(e, &vm->mappings, link) {
			if (e == m)
				break;
			seen |= e->gem == m->gem;
		}
		if (seen)
			continue;
		if (m->gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
			*vram += m->gem->shmem.base.size;
		else
			*gtt += m->gem->shmem.base.size;
	}
	mutex_unlock(&vm->lock);
}

u32 kfdsim_gpuvm_mappings(struct kfdsim_gpuvm *vm, struct kfdsim_gem *gem,
			  struct kfdsim_gem_vm_entry *out, u32 cap)
{
	struct gpuvm_mapping *m;
	u32 n = 0;

	if (!vm)
		return 0;
	mutex_lock(&vm->lock);
	list_for_each_entry(m, &vm->mappings, link) {
		if (m->gem != gem)
			continue;
		if (n < cap)
			out[n] = (struct kfdsim_gem_vm_entry){ .addr = m->start,
				.size = m->end - m->start, .offset = m->offset,
				.flags = m->flags };
		n++;
	}
	mutex_unlock(&vm->lock);
	return n;
}

/* ---- DRM_AMDGPU_GEM_VA ------------------------------------------------------ */

/* amdgpu_gem_va_ioctl()'s address checks; *va gets the 48-bit address. */
static int check_range(u64 *va, u64 size)
{
	u64 addr = *va;

	if (addr < VA_RESERVED_BOTTOM)
		return -EINVAL;
	if (addr >= HOLE_START && addr < HOLE_END)
		return -EINVAL;
	addr &= VA_MASK;
	if (size > VM_SIZE || addr + size > VM_SIZE - VA_RESERVED_TOP)
		return -EINVAL;
	*va = addr;
	return 0;
}

/* Removes what of [start, end) is mapped, cutting mappings that cross its ends. */
static int clear_range(struct kfdsim_gpuvm *vm, u64 start, u64 end)
{
	struct gpuvm_mapping *m, *tmp, *tail;

	list_for_each_entry_safe(m, tmp, &vm->mappings, link) {
		if (m->end <= start || m->start >= end)
			continue;
		if (m->start < start && m->end > end) {
			/* the range is inside: keep both ends */
			tail = kmemdup(m, sizeof(*m), GFP_KERNEL);
			if (!tail)
				return -ENOMEM;
			drm_gem_object_get(&m->gem->shmem.base);
			tail->offset += end - m->start;
			tail->start = end;
			list_add(&tail->link, &m->link);
			m->end = start;
		} else if (m->start < start) {
			m->end = start;
		} else if (m->end > end) {
			m->offset += end - m->start;
			m->start = end;
		} else {
			mapping_free(m);
		}
	}
	return 0;
}

static int map(struct kfdsim_gpuvm *vm, struct kfdsim_gem *gem, u64 va, u64 offset, u64 size,
	       u32 flags)
{
	u64 bo_size = gem->shmem.base.size;
	struct gpuvm_mapping *m;

	if (!IS_ALIGNED(va | offset | size, GPU_PAGE) || !size || offset + size < offset ||
	    offset + size > bo_size)
		return -EINVAL;
	list_for_each_entry(m, &vm->mappings, link)
		if (va < m->end && m->start < va + size)
			return -EINVAL;	/* "va ... conflict with ..." */
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->start = va;
	m->end = va + size;
	m->offset = offset;
	m->flags = flags;
	m->gem = gem;
	drm_gem_object_get(&gem->shmem.base);
	list_add(&m->link, &vm->mappings);
	return 0;
}

static int unmap(struct kfdsim_gpuvm *vm, struct kfdsim_gem *gem, u64 va)
{
	struct gpuvm_mapping *m;

	list_for_each_entry(m, &vm->mappings, link)
		if (m->gem == gem && m->start == va) {
			mapping_free(m);
			return 0;
		}
	return -ENOENT;
}

int kfdsim_gem_va_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_va *args = data;
	struct kfdsim_gpuvm *vm = kfdsim_fpriv_vm(file);
	struct drm_gem_object *obj;
	u64 va = args->va_address;
	int ret;

	ret = check_range(&va, args->map_size);
	if (ret)
		return ret;
	if (args->flags & ~VALID_FLAGS)
		return -EINVAL;
	switch (args->operation) {
	case AMDGPU_VA_OP_MAP:
	case AMDGPU_VA_OP_UNMAP:
	case AMDGPU_VA_OP_CLEAR:
	case AMDGPU_VA_OP_REPLACE:
		break;
	default:
		return -EINVAL;
	}
	if (!vm)
		return -ENODEV;
	obj = NULL;
	if (args->operation != AMDGPU_VA_OP_CLEAR) {
		obj = drm_gem_object_lookup(file, args->handle);
		if (!obj)
			return -ENOENT;
	}
	mutex_lock(&vm->lock);
	switch (args->operation) {
	case AMDGPU_VA_OP_MAP:
		ret = map(vm, to_kfdsim_gem(obj), va, args->offset_in_bo, args->map_size,
			  args->flags);
		break;
	case AMDGPU_VA_OP_UNMAP:
		ret = unmap(vm, to_kfdsim_gem(obj), va);
		break;
	case AMDGPU_VA_OP_CLEAR:
		ret = clear_range(vm, va, va + args->map_size);
		break;
	case AMDGPU_VA_OP_REPLACE:
		ret = clear_range(vm, va, va + args->map_size);
		if (!ret)
			ret = map(vm, to_kfdsim_gem(obj), va, args->offset_in_bo,
				  args->map_size, args->flags);
		break;
	}
	mutex_unlock(&vm->lock);
	if (obj)
		drm_gem_object_put(obj);
	return ret;
}
