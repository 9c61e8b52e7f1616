// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: amdgpu render nodes on the kernel's DRM core.
 *
 * One DRM device (driver name "amdgpu") per simulated GPU, so that
 * /dev/dri/renderD<m>, GEM objects, fake mmap offsets and PRIME dma-bufs are
 * the DRM core's own. The DRM core hands out render minors itself, lowest
 * free first (128..191, then 192 and up in 6.12). To give every GPU the
 * minor of its description, GPUs are registered in ascending minor order and
 * every minor below the wanted one that the DRM core offers instead is kept
 * by a placeholder DRM device (on MI300-class parts the gaps belong to the
 * amdgpu_xcp platform devices' DRM devices, so this is what a real machine
 * looks like too). A minor already taken by another driver fails the load.
 *
 * Each device hangs off its own platform device, as vgem does.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <linux/dma-resv.h>
#include <linux/dma-buf.h>
#include <uapi/linux/kfd_ioctl.h>
#include <uapi/drm/amdgpu_drm.h>
#include "kfdsim.h"

/* amdgpu_drv.c of 6.12 */
#define DRIVER_NAME		"amdgpu"
#define DRIVER_DESC		"AMD GPU"
#define DRIVER_DATE		"20150101"
#define KMS_DRIVER_MAJOR	3
#define KMS_DRIVER_MINOR	59
#define KMS_DRIVER_PATCHLEVEL	0

static struct kfdsim_drm *drm_devs[KFDSIM_MAX_DRM_DEVS];
static u32 n_drm_devs;

/*
 * drm_ioctl(), and 6.18's core GEM_CHANGE_HANDLE for the 6.18 flavour
 * (gem_criu.c): 6.12's core table ends before its number.
 */
static long kfdsim_drm_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct kfdsim_gem_change_handle args;
	long ret;

	if (cmd != DRM_IOCTL_KFDSIM_GEM_CHANGE_HANDLE || !kfdsim_uapi_618())
		return drm_ioctl(filp, cmd, arg);
	if (copy_from_user(&args, (void __user *)arg, sizeof(args)))
		return -EFAULT;
	ret = kfdsim_gem_change_handle(filp->private_data, &args);
	if (!ret && copy_to_user((void __user *)arg, &args, sizeof(args)))
		ret = -EFAULT;
	return ret;
}

/*
 * DEFINE_DRM_GEM_FOPS()'s members with fdinfo, as amdgpu's fops (the GEM
 * macro has no .show_fdinfo), and the ioctl entry above
 */
static const struct file_operations kfdsim_drm_fops = {
	.owner = THIS_MODULE,
	.open = drm_open,
	.release = drm_release,
	.unlocked_ioctl = kfdsim_drm_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
	.fop_flags = FOP_UNSIGNED_OFFSET,
	.show_fdinfo = drm_show_fdinfo,
};

bool kfdsim_is_drm_file(struct file *f)
{
	return f->f_op == &kfdsim_drm_fops;
}

static int kfdsim_drm_open(struct drm_device *dev, struct drm_file *file)
{
	struct kfdsim_fpriv *fpriv = kzalloc(sizeof(*fpriv), GFP_KERNEL);

	if (!fpriv)
		return -ENOMEM;
	fpriv->vm = kfdsim_gpuvm_create();
	if (!fpriv->vm) {
		kfree(fpriv);
		return -ENOMEM;
	}
	kfdsim_ctx_mgr_init(&fpriv->ctx_mgr);
	kfdsim_bo_lists_init(fpriv);
	file->driver_priv = fpriv;
	return 0;
}

static void kfdsim_drm_postclose(struct drm_device *dev, struct drm_file *file)
{
	struct kfdsim_fpriv *fpriv = file->driver_priv;

	/* contexts and their jobs first: jobs use the file's VM */
	kfdsim_ctx_mgr_fini(&fpriv->ctx_mgr);
	kfdsim_gpuvm_destroy(fpriv->vm);
	kfdsim_bo_lists_fini(fpriv);
	/* a KFD pdd holds a file reference while it uses the VM */
	kfree(fpriv);
}

/* amdgpu_gem_object_mmap(): BOs without CPU-accessible pages cannot be mapped */
static int kfdsim_gem_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct kfdsim_gem *gem = to_kfdsim_gem(obj);
	int ret;

	if (gem->kfd_flags & (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR |
			      KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
			      KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) || gem->no_cpu_access)
		return -EPERM;
	/*
	 * As amdgpu: libhsakmt maps every VRAM BO that is not host-accessible
	 * with mmap(PROT_NONE, MAP_PRIVATE | MAP_FIXED) on the render node (for
	 * debugger access). Without VM_MAYWRITE the mapping can never become
	 * writable and is no longer a COW mapping, which the shmem helper
	 * would refuse.
	 */
	if (is_cow_mapping(vma->vm_flags) && !(vma->vm_flags & VM_ACCESS_FLAGS))
		vm_flags_clear(vma, VM_MAYWRITE);
	/* "gem_mmap entry ENOMEM": the shmem pages cannot be had */
	ret = kfdsim_inject("gem_mmap", "entry");
	if (ret)
		return ret;
	return drm_gem_shmem_object_mmap(obj, vma);
}

/*
 * Pages a CPU fault on a BO maps at once. amdgpu's TTM maps 16
 * (TTM_BO_VM_NUM_PREFAULT); kfdsim maps 1 by default because under qemu TCG
 * 16 made the plugin's reads (4 MiB windows mmapped one after another)
 * 2.6 times slower: 512 MiB in 5.3 s instead of 2.0, while one 512 MiB
 * window took 2.1 s instead of 2.4 and 64 KiB windows 1.7 s instead of 2.9
 * (measured in the VM; the cause is not understood).
 */
static unsigned int prefault = 1;
module_param(prefault, uint, 0644);
MODULE_PARM_DESC(prefault, "pages mapped per CPU fault on a BO (amdgpu: 16; default 1)");

/*
 * The shmem helper's fault handler maps page (address - vm_start) of the
 * object, ignoring vm_pgoff: fine for whole-object mappings only. amdgpu
 * (TTM) lets a mapping start inside the BO, so fault with the offset. Like
 * ttm_bo_vm_fault_reserved(), map the faulting page and up to prefault - 1
 * after it (within the mapping and the object).
 */
static vm_fault_t kfdsim_gem_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct drm_gem_shmem_object *shmem = to_drm_gem_shmem_obj(obj);
	pgoff_t first = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	pgoff_t page = ((vmf->address - vma->vm_start) >> PAGE_SHIFT) + first;
	pgoff_t last = min_t(pgoff_t, obj->size >> PAGE_SHIFT, first + vma_pages(vma));
	unsigned long address = vmf->address & PAGE_MASK;
	vm_fault_t ret;
	int i = 0;

	dma_resv_lock(obj->resv, NULL);
	if (page >= obj->size >> PAGE_SHIFT || !shmem->pages || shmem->madv < 0) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	for (i = 0; i < max(prefault, 1U) && page < last; i++, page++) {
		ret = vmf_insert_pfn(vma, address, page_to_pfn(shmem->pages[page]));
		if (ret & VM_FAULT_ERROR) {
			/* as TTM: only the faulting page's error counts */
			if (i)
				ret = VM_FAULT_NOPAGE;
			break;
		}
		address += PAGE_SIZE;
	}
out:
	dma_resv_unlock(obj->resv);
	if (i)
		kfdsim_bar_fault(to_kfdsim_gem(obj), i, vmf->flags & FAULT_FLAG_WRITE);
	return ret;
}

/* open/close are the helper's (page references); set up at init */
static struct vm_operations_struct kfdsim_gem_vm_ops = {
	.fault = kfdsim_gem_fault,
};

static void kfdsim_gem_free(struct drm_gem_object *obj)
{
	kfdsim_gem_release_extra(to_kfdsim_gem(obj));
	drm_gem_shmem_object_free(obj);
}

/* amdgpu_gem_object_close(): the file's mappings of the object go */
static void kfdsim_gem_close(struct drm_gem_object *obj, struct drm_file *file)
{
	kfdsim_gpuvm_gem_closed(file, to_kfdsim_gem(obj));
}

static const struct drm_gem_object_funcs kfdsim_gem_funcs = {
	.free = kfdsim_gem_free,
	.close = kfdsim_gem_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = kfdsim_gem_mmap,
	.vm_ops = &kfdsim_gem_vm_ops,
};

static struct drm_gem_object *kfdsim_gem_create_object(struct drm_device *dev,
						       size_t size)
{
	struct kfdsim_gem *gem = kzalloc(sizeof(*gem), GFP_KERNEL);

	if (!gem)
		return ERR_PTR(-ENOMEM);
	/* drm_gem_shmem_free() frees the shmem object: it must come first */
	BUILD_BUG_ON(offsetof(struct kfdsim_gem, shmem) != 0);
	gem->shmem.base.funcs = &kfdsim_gem_funcs;
	return &gem->shmem.base;
}

/* amdgpu_ioctls_kms[]: the queries libdrm_amdgpu needs (drm_info.c) */
static const struct drm_ioctl_desc kfdsim_drm_ioctls[] = {
	DRM_IOCTL_DEF_DRV(AMDGPU_INFO, kfdsim_drm_info_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	/* gem.c, gpuvm.c */
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_CREATE, kfdsim_gem_create_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_MMAP, kfdsim_gem_mmap_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_USERPTR, kfdsim_gem_userptr_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_VA, kfdsim_gem_va_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(KFDSIM_GEM_OP, kfdsim_gem_op_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	/* gem_criu.c: EINVAL unless the 6.18 flavour */
	DRM_IOCTL_DEF_DRV(KFDSIM_GEM_LIST_HANDLES, kfdsim_gem_list_handles_ioctl,
			  DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_BO_LIST, kfdsim_bo_list_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	/* cs.c */
	DRM_IOCTL_DEF_DRV(AMDGPU_CTX, kfdsim_ctx_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_CS, kfdsim_cs_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_WAIT_CS, kfdsim_wait_cs_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
};

static const struct drm_driver kfdsim_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_RENDER,
	.open = kfdsim_drm_open,
	.postclose = kfdsim_drm_postclose,
	.show_fdinfo = kfdsim_show_fdinfo,	/* fdinfo.c */
	.debugfs_init = kfdsim_gem_debugfs_init,	/* gem_criu.c */
	.gem_create_object = kfdsim_gem_create_object,
	.gem_prime_import_sg_table = drm_gem_shmem_prime_import_sg_table,
	.ioctls = kfdsim_drm_ioctls,
	.num_ioctls = ARRAY_SIZE(kfdsim_drm_ioctls),
	.fops = &kfdsim_drm_fops,
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
	.date = DRIVER_DATE,
	.major = KMS_DRIVER_MAJOR,
	.minor = KMS_DRIVER_MINOR,
	.patchlevel = KMS_DRIVER_PATCHLEVEL,
};

/*
 * The kfdsim GEM object behind a dma-buf, if the dma-buf is a PRIME export
 * of a kfdsim render node (amdgpu's "dma_buf->ops == &amdgpu_dmabuf_ops"
 * and same-driver checks), else NULL.
 */
struct kfdsim_gem *kfdsim_gem_from_dmabuf(struct dma_buf *dmabuf)
{
	struct drm_gem_object *obj;

	if (dmabuf->ops->release != drm_gem_dmabuf_release)
		return NULL;
	obj = dmabuf->priv;
	if (!obj || obj->funcs != &kfdsim_gem_funcs)
		return NULL;
	return to_kfdsim_gem(obj);
}

/* The GPU node of a GEM object's DRM device */
struct kfdsim_node *kfdsim_gem_node(struct kfdsim_gem *gem)
{
	return container_of(gem->shmem.base.dev, struct kfdsim_drm, drm)->node;
}

/* A GEM object for a BO of @node, with a fake mmap offset. */
struct kfdsim_gem *kfdsim_gem_create(struct kfdsim_node *node, u64 size,
				     u32 kfd_flags)
{
	struct drm_gem_shmem_object *shmem;
	struct kfdsim_gem *gem;
	int ret;

	shmem = drm_gem_shmem_create(&node->drm->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	gem = to_kfdsim_gem(&shmem->base);
	gem->kfd_flags = kfd_flags;
	ret = drm_gem_create_mmap_offset(&shmem->base);
	if (ret) {
		drm_gem_object_put(&shmem->base);
		return ERR_PTR(ret);
	}
	return gem;
}

static void remove_drm_dev(struct kfdsim_drm *kd)
{
	struct platform_device *pdev = kd->pdev;
	struct kfdsim_node *node = kd->node;

	if (node)
		node->drm = NULL;
	drm_dev_unregister(&kd->drm);
	devres_release_group(&pdev->dev, NULL);
	platform_device_unregister(pdev);
	if (node)
		kfdsim_amdgpu_sysfs_detach(node);
}

/*
 * A DRM device on a platform device of its own. The DRM core picks the
 * render minor when the device is allocated: if it is @want's, the platform
 * device becomes that GPU's amdgpu device (amdgpu_sysfs.c: its PCI
 * address's directory, amdgpu's device files) before it is added, and gets
 * amdgpu's hwmon device (amdgpu_hwmon.c) once it is.
 */
static struct kfdsim_drm *add_drm_dev(u32 seq, struct kfdsim_node *want)
{
	struct platform_device *pdev;
	struct kfdsim_drm *kd;
	bool gpu = false, added = false;
	int ret;

	pdev = platform_device_alloc("kfdsim_drm", seq);
	if (!pdev)
		return ERR_PTR(-ENOMEM);
	/* platform_device_add()'s name, already for the DRM core's "unique" */
	ret = dev_set_name(&pdev->dev, "kfdsim_drm.%u", seq);
	if (ret)
		goto err_put;
	if (!devres_open_group(&pdev->dev, NULL, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_put;
	}
	ret = dma_coerce_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err_devres;
	kd = devm_drm_dev_alloc(&pdev->dev, &kfdsim_drm_driver, struct kfdsim_drm, drm);
	if (IS_ERR(kd)) {
		ret = PTR_ERR(kd);
		goto err_devres;
	}
	kd->pdev = pdev;
	if (kd->drm.render->index == want->props[NP_DRM_RENDER_MINOR]) {
		ret = kfdsim_amdgpu_sysfs_attach(pdev, want);
		if (ret)
			goto err_devres;
		gpu = true;
		kd->node = want;
	}
	ret = platform_device_add(pdev);
	if (ret)
		goto err_devres;
	added = true;
	if (gpu)
		ret = kfdsim_amdgpu_hwmon_add(pdev, want);
	ret = ret ?: drm_dev_register(&kd->drm, 0);
	if (ret)
		goto err_devres;
	return kd;

err_devres:
	devres_release_group(&pdev->dev, NULL);
	if (added)
		platform_device_del(pdev);
err_put:
	platform_device_put(pdev);
	if (gpu)
		kfdsim_amdgpu_sysfs_detach(want);
	return ERR_PTR(ret);
}

static int cmp_minor(const void *a, const void *b)
{
	const struct kfdsim_node *x = *(struct kfdsim_node *const *)a;
	const struct kfdsim_node *y = *(struct kfdsim_node *const *)b;

	return (int)x->props[NP_DRM_RENDER_MINOR] - (int)y->props[NP_DRM_RENDER_MINOR];
}

void kfdsim_drm_fini(void)
{
	while (n_drm_devs)
		remove_drm_dev(drm_devs[--n_drm_devs]);
}

int kfdsim_drm_init(void)
{
	struct kfdsim_node *order[KFDSIM_MAX_GPUS];
	u32 n = kfdsim_topo->n_gpus, i, gaps = 0;
	int ret;

	kfdsim_gem_vm_ops.open = drm_gem_shmem_vm_ops.open;
	kfdsim_gem_vm_ops.close = drm_gem_shmem_vm_ops.close;
	memcpy(order, kfdsim_topo->gpus, n * sizeof(order[0]));
	sort(order, n, sizeof(order[0]), cmp_minor, NULL);

	for (i = 0; i < n; i++) {
		u32 want = order[i]->props[NP_DRM_RENDER_MINOR];

		for (;;) {
			struct kfdsim_drm *kd;
			u32 got;

			if (n_drm_devs == KFDSIM_MAX_DRM_DEVS) {
				ret = -E2BIG;
				goto err;
			}
			kd = add_drm_dev(n_drm_devs, order[i]);
			if (IS_ERR(kd)) {
				ret = PTR_ERR(kd);
				goto err;
			}
			drm_devs[n_drm_devs++] = kd;
			got = kd->drm.render->index;
			if (got == want) {
				order[i]->drm = kd;
				break;
			}
			if (got > want) {
				pr_err(KFDSIM_NAME ": render minor %u is in use (next free: %u); another DRM driver loaded?\n",
				       want, got);
				ret = -EBUSY;
				goto err;
			}
			gaps++;	/* keep it: a placeholder for minor @got */
		}
	}
	pr_info(KFDSIM_NAME ": %u render nodes, %u placeholder DRM devices\n", n, gaps);
	return 0;

err:
	kfdsim_drm_fini();
	return ret;
}
