// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: what a CRIU plugin can learn about a render-node file's own GEM
 * BOs, per kernel flavour (module parameter drm_uapi):
 *
 *   612 (default)  Linux 6.12: DRM_AMDGPU_GEM_OP GET_GEM_CREATE_INFO of a
 *                  handle the caller names; no way to list the handles
 *                  (GEM_LIST_HANDLES is an unknown driver ioctl: EINVAL, as
 *                  drm_ioctl() answers for a number past the driver table).
 *   618            Linux 6.18: also DRM_AMDGPU_GEM_LIST_HANDLES (facts:
 *                  docs/kfd-facts.md 12), GEM_OP GET_MAPPING_INFO, the core
 *                  GEM_CHANGE_HANDLE (drm.c routes it here), and fdinfo in
 *                  the 6.13 format (fdinfo.c).
 *
 * GEM_OP (amdgpu_gem_op_ioctl()): the handle (ENOENT), then the op;
 * GET_GEM_CREATE_INFO copies {bo_size, alignment, domains, domain_flags}
 * to `value` (EFAULT); SET_PLACEMENT is not modelled (EINVAL); another op
 * is EINVAL.
 *
 * GEM_LIST_HANDLES: num_entries in is the caller's capacity; out, the
 * number of handles of the file. Entries are written only when they all
 * fit. IS_IMPORT marks objects of another device (PRIME imports that are
 * not self-imports).
 *
 * Both flavours: debugfs dri/<minor>/amdgpu_gem_info, every open file of
 * the device with its owner's pid (the DRM core's file->pid: the last
 * process that used the file) and one line per GEM handle, in amdgpu's
 * format (amdgpu_debugfs_gem_info_show(), amdgpu_bo_print_info()).
 */
#include <linux/debugfs.h>
#include <linux/dma-buf.h>
#include <linux/kernel.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <drm/drm_debugfs.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <uapi/drm/amdgpu_drm.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

static unsigned int drm_uapi = 612;
module_param(drm_uapi, uint, 0644);
MODULE_PARM_DESC(drm_uapi, "render-node uAPI flavour: 612 (Linux 6.12, default) or 618 (Linux 6.18: GEM_LIST_HANDLES, fdinfo drm-total-*)");

bool kfdsim_uapi_618(void)
{
	return READ_ONCE(drm_uapi) >= 618;
}

/*
 * GET_MAPPING_INFO (6.18): num_entries in is the capacity of the array at
 * `value`; out, the number of the object's mappings in this file's VM.
 * The entries are copied only when they all fit (1 to capacity).
 */
static int mapping_info(struct drm_file *file, struct kfdsim_gem *gem,
			struct kfdsim_drm_gem_op *args)
{
	struct kfdsim_gem_vm_entry *entries = NULL;
	u32 n;
	int ret = 0;

	if (args->num_entries > INT_MAX / sizeof(*entries))
		return -EINVAL;
	if (args->num_entries) {
		entries = kvcalloc(args->num_entries, sizeof(*entries), GFP_KERNEL);
		if (!entries)
			return -ENOMEM;
	}
	n = kfdsim_gpuvm_mappings(kfdsim_fpriv_vm(file), gem, entries, args->num_entries);
	if (n && n <= args->num_entries &&
	    copy_to_user(u64_to_user_ptr(args->value), entries, n * sizeof(*entries)))
		ret = -EFAULT;
	args->num_entries = n;
	kvfree(entries);
	return ret;
}

/*
 * drm_gem_change_handle_ioctl() (6.18): the object of `handle` moves to
 * `new_handle` (EINVAL past INT_MAX, ENOENT for no object, the idr's
 * ENOSPC for a handle in use; the same handle is a no-op). An object with
 * a dma-buf is refused (EBUSY): the DRM core's prime handle cache, which
 * 6.18 updates, is not exported to modules.
 */
int kfdsim_gem_change_handle(struct drm_file *file, struct kfdsim_gem_change_handle *args)
{
	struct drm_gem_object *obj;
	int ret;

	if (!kfdsim_uapi_618())
		return -EINVAL; /* 6.12: a core ioctl number past its table */
	if (args->new_handle > INT_MAX)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	ret = 0;
	if (args->handle == args->new_handle)
		goto out;
	if (obj->dma_buf || obj->import_attach) {
		ret = -EBUSY;
		goto out;
	}
	spin_lock(&file->table_lock);
	ret = idr_alloc(&file->object_idr, obj, args->new_handle, args->new_handle + 1,
			GFP_NOWAIT);
	if (ret >= 0) {
		idr_remove(&file->object_idr, args->handle);
		ret = 0;
	}
	spin_unlock(&file->table_lock);
out:
	drm_gem_object_put(obj);
	return ret;
}

int kfdsim_gem_op_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct kfdsim_drm_gem_op *args = data;
	struct drm_gem_object *obj = drm_gem_object_lookup(file, args->handle);
	struct drm_amdgpu_gem_create_in info = {};
	struct kfdsim_gem *gem;
	int ret = 0;

	if (!obj)
		return -ENOENT;
	gem = to_kfdsim_gem(obj);
	switch (args->op) {
	case AMDGPU_GEM_OP_GET_GEM_CREATE_INFO:
		info.bo_size = obj->size;
		info.alignment = gem->create_alignment ?: PAGE_SIZE;
		info.domains = gem->create_domains;
		info.domain_flags = gem->create_flags;
		if (copy_to_user(u64_to_user_ptr(args->value), &info, sizeof(info)))
			ret = -EFAULT;
		break;
	case KFDSIM_GEM_OP_GET_MAPPING_INFO:
		ret = kfdsim_uapi_618() ? mapping_info(file, gem, args) : -EINVAL;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	drm_gem_object_put(obj);
	return ret;
}

struct list_ctx {
	struct kfdsim_drm_gem_list_entry *entries;
	u32 cap, n;
};

static int list_one(int id, void *ptr, void *data)
{
	struct drm_gem_object *obj = ptr;
	struct kfdsim_gem *gem = to_kfdsim_gem(obj);
	struct list_ctx *ctx = data;
	struct kfdsim_drm_gem_list_entry *e;

	if (ctx->n++ >= ctx->cap)
		return 0;
	e = &ctx->entries[ctx->n - 1];
	e->gem_handle = id;
	e->flags = obj->import_attach ? KFDSIM_GEM_LIST_IS_IMPORT : 0;
	e->size = obj->size;
	e->preferred_domains = gem->create_domains;
	e->alloc_flags = gem->create_flags;
	/* 6.18 lists tbo.page_alignment: pages, where GEM_CREATE took bytes */
	e->alignment = (gem->create_alignment ?: PAGE_SIZE) >> PAGE_SHIFT;
	return 0;
}

int kfdsim_gem_list_handles_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct kfdsim_drm_gem_list_handles *args = data;
	struct list_ctx ctx = { .cap = args->num_entries };
	int ret = 0;

	if (!kfdsim_uapi_618())
		return -EINVAL;
	if (ctx.cap) {
		ctx.entries = kvcalloc(ctx.cap, sizeof(*ctx.entries), GFP_KERNEL);
		if (!ctx.entries)
			return -ENOMEM;
	}
	spin_lock(&file->table_lock);
	idr_for_each(&file->object_idr, list_one, &ctx);
	spin_unlock(&file->table_lock);
	if (ctx.n <= ctx.cap && ctx.n &&
	    copy_to_user(u64_to_user_ptr(args->entries), ctx.entries,
			 ctx.n * sizeof(*ctx.entries)))
		ret = -EFAULT;
	args->num_entries = ctx.n;
	kvfree(ctx.entries);
	return ret;
}

static void gem_info_bo(struct seq_file *m, int id, struct drm_gem_object *obj)
{
	struct kfdsim_gem *gem = to_kfdsim_gem(obj);
	struct dma_buf *dma_buf = READ_ONCE(obj->dma_buf);

	seq_printf(m, "\t\t0x%08x: %12lld byte %s", id, (long long)obj->size,
		   gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM ? "VRAM VISIBLE" : "GTT");
	if (obj->import_attach && dma_buf)
		seq_printf(m, " imported from ino:%lu", file_inode(dma_buf->file)->i_ino);
	else if (dma_buf)
		seq_printf(m, " exported as ino:%lu", file_inode(dma_buf->file)->i_ino);
	seq_puts(m, "\n");
}

static int gem_info_show(struct seq_file *m, void *unused)
{
	struct drm_device *dev = m->private;
	struct drm_file *file;
	int ret;

	ret = mutex_lock_interruptible(&dev->filelist_mutex);
	if (ret)
		return ret;
	list_for_each_entry(file, &dev->filelist, lhead) {
		struct drm_gem_object *obj;
		struct task_struct *task;
		struct pid *pid;
		int id;

		rcu_read_lock();
		pid = rcu_dereference(file->pid);
		task = pid_task(pid, PIDTYPE_TGID);
		seq_printf(m, "pid %8d command %s:\n", pid_nr(pid),
			   task ? task->comm : "<unknown>");
		rcu_read_unlock();
		spin_lock(&file->table_lock);
		idr_for_each_entry(&file->object_idr, obj, id)
			gem_info_bo(m, id, obj);
		spin_unlock(&file->table_lock);
	}
	mutex_unlock(&dev->filelist_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gem_info);

void kfdsim_gem_debugfs_init(struct drm_minor *minor)
{
	debugfs_create_file("amdgpu_gem_info", 0444, minor->debugfs_root, minor->dev,
			    &gem_info_fops);
}
