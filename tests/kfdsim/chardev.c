// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: /dev/kfd and the KFD ioctl dispatcher (kfd_chardev.c of 6.12).
 *
 * Dispatcher rules (ABI document section 1.2), first failure wins:
 *   _IOC_NR outside [AMDKFD_COMMAND_START, AMDKFD_COMMAND_END)   ENOTTY
 *   caller is not the owner (CRIU_OP: nor the owner's ptracer)  EBADF
 *   no handler                                                  EINVAL
 *   CRIU_OP without CAP_CHECKPOINT_RESTORE / CAP_SYS_ADMIN      EACCES
 *   copy-in of the caller's _IOC_SIZE, rest zero-filled          EFAULT
 *   size validator (SVM: 24 + 8 * nattr bytes at least)         EINVAL
 *   handler
 *   copy-out of the caller's size when the kernel's cmd has OUT,
 *   even after a handler error                                  EFAULT
 * The handler is chosen by _IOC_NR only; the direction used for copying is
 * the kernel's, the size the caller's.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/device.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <linux/capability.h>
#include <linux/ptrace.h>
#include <linux/sched/signal.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

typedef int kfdsim_ioctl_t(struct file *filep, struct kfdsim_process *p, void *data);

struct kfdsim_ioctl_desc {
	unsigned int cmd;
	int flags;
	kfdsim_ioctl_t *func;
	int (*validate)(void *kdata, unsigned int usize);
	const char *name;
};

#define KFD_IOC_FLAG_CHECKPOINT_RESTORE BIT(0)

#define AMDKFD_IOCTL_DEF(ioctl, _func, _flags)				\
	[_IOC_NR(ioctl)] = { .cmd = ioctl, .func = _func, .flags = _flags, .name = #ioctl }

/* with a size validator of the copied-in arguments */
#define AMDKFD_IOCTL_DEF_V(ioctl, _func, _validate, _flags)		\
	[_IOC_NR(ioctl)] = { .cmd = ioctl, .func = _func, .flags = _flags,	\
			     .validate = _validate, .name = #ioctl }

/* kfd_ioctl_dbg_*_deprecated: the old debugger interface is gone */
static int kfd_ioctl_dbg_deprecated(struct file *f, struct kfdsim_process *p, void *data)
{
	return -EPERM;
}

static int kfd_ioctl_get_version(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_get_version_args *args = data;

	args->major_version = KFD_IOCTL_MAJOR_VERSION;
	args->minor_version = KFD_IOCTL_MINOR_VERSION;
	return 0;
}

static void fill_apertures(struct kfd_process_device_apertures *pa,
			   const struct kfdsim_pdd *pdd)
{
	/* the actual gpu_id, not the user one */
	pa->gpu_id = pdd->dev->gpu_id;
	pa->lds_base = pdd->lds_base;
	pa->lds_limit = pdd->lds_limit;
	pa->gpuvm_base = pdd->gpuvm_base;
	pa->gpuvm_limit = pdd->gpuvm_limit;
	pa->scratch_base = pdd->scratch_base;
	pa->scratch_limit = pdd->scratch_limit;
}

static int kfd_ioctl_get_process_apertures(struct file *f, struct kfdsim_process *p,
					   void *data)
{
	struct kfd_ioctl_get_process_apertures_args *args = data;
	u32 i;

	args->num_of_nodes = 0;
	mutex_lock(&p->mutex);
	for (i = 0; i < p->n_pdds; i++) {
		fill_apertures(&args->process_apertures[args->num_of_nodes], p->pdds[i]);
		if (++args->num_of_nodes >= NUM_OF_SUPPORTED_GPUS)
			break;
	}
	mutex_unlock(&p->mutex);
	return 0;
}

static int kfd_ioctl_get_process_apertures_new(struct file *f, struct kfdsim_process *p,
					       void *data)
{
	struct kfd_ioctl_get_process_apertures_new_args *args = data;
	struct kfd_process_device_apertures *pa;
	u32 i;
	int ret;

	if (args->num_of_nodes == 0) {
		/* the number of nodes, so that user space can allocate */
		mutex_lock(&p->mutex);
		args->num_of_nodes = p->n_pdds;
		mutex_unlock(&p->mutex);
		return 0;
	}
	/* kfd_topology_get_num_devices() (stable fix in 6.12.y) */
	if (args->num_of_nodes > kfdsim_topo->n_nodes)
		return -EINVAL;
	pa = kcalloc(args->num_of_nodes, sizeof(*pa), GFP_KERNEL);
	if (!pa)
		return -ENOMEM;
	mutex_lock(&p->mutex);
	for (i = 0; i < min(p->n_pdds, args->num_of_nodes); i++)
		fill_apertures(&pa[i], p->pdds[i]);
	mutex_unlock(&p->mutex);
	args->num_of_nodes = i;
	ret = copy_to_user(u64_to_user_ptr(args->kfd_process_device_apertures_ptr), pa,
			   i * sizeof(*pa));
	kfree(pa);
	return ret ? -EFAULT : 0;
}

/*
 * The 6.12 table. Entries without a handler are ioctls not modelled yet;
 * they fail at the "no handler" step (EINVAL).
 */
static const struct kfdsim_ioctl_desc kfdsim_ioctls[] = {
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_VERSION, kfd_ioctl_get_version, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_CREATE_QUEUE, kfdsim_ioctl_create_queue, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DESTROY_QUEUE, kfdsim_ioctl_destroy_queue, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_MEMORY_POLICY, kfdsim_ioctl_set_memory_policy, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_CLOCK_COUNTERS, kfdsim_ioctl_get_clock_counters, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_PROCESS_APERTURES,
			 kfd_ioctl_get_process_apertures, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_UPDATE_QUEUE, kfdsim_ioctl_update_queue, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_CREATE_EVENT, kfdsim_ioctl_create_event, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DESTROY_EVENT, kfdsim_ioctl_destroy_event, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_EVENT, kfdsim_ioctl_set_event, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_RESET_EVENT, kfdsim_ioctl_reset_event, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_WAIT_EVENTS, kfdsim_ioctl_wait_events, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DBG_REGISTER_DEPRECATED, kfd_ioctl_dbg_deprecated, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, kfd_ioctl_dbg_deprecated, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, kfd_ioctl_dbg_deprecated, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, kfd_ioctl_dbg_deprecated, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_SCRATCH_BACKING_VA, kfdsim_ioctl_set_scratch_backing_va, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_TILE_CONFIG, kfdsim_ioctl_get_tile_config, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_TRAP_HANDLER, kfdsim_ioctl_set_trap_handler, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
			 kfd_ioctl_get_process_apertures_new, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_ACQUIRE_VM, kfdsim_ioctl_acquire_vm, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, kfdsim_ioctl_alloc_memory_of_gpu, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_FREE_MEMORY_OF_GPU, kfdsim_ioctl_free_memory_of_gpu, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_MAP_MEMORY_TO_GPU, kfdsim_ioctl_map_memory_to_gpu, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
			 kfdsim_ioctl_unmap_memory_from_gpu, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_CU_MASK, kfdsim_ioctl_set_cu_mask, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_QUEUE_WAVE_STATE, NULL, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_GET_DMABUF_INFO, kfdsim_ioctl_get_dmabuf_info, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_IMPORT_DMABUF, kfdsim_ioctl_import_dmabuf, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_ALLOC_QUEUE_GWS, NULL, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SMI_EVENTS, NULL, 0),
	AMDKFD_IOCTL_DEF_V(AMDKFD_IOC_SVM, kfdsim_ioctl_svm, kfdsim_ioctl_svm_validate, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_SET_XNACK_MODE, kfdsim_ioctl_set_xnack_mode, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_CRIU_OP, kfdsim_ioctl_criu_op,
			 KFD_IOC_FLAG_CHECKPOINT_RESTORE),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_AVAILABLE_MEMORY, kfdsim_ioctl_available_memory, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_EXPORT_DMABUF, kfdsim_ioctl_export_dmabuf, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_RUNTIME_ENABLE, kfdsim_ioctl_runtime_enable, 0),
	AMDKFD_IOCTL_DEF(AMDKFD_IOC_DBG_TRAP, NULL, 0),
};

#define AMDKFD_CORE_IOCTL_COUNT ARRAY_SIZE(kfdsim_ioctls)

static long kfd_ioctl(struct file *filep, unsigned int cmd, unsigned long arg)
{
	struct kfdsim_process *process = filep->private_data;
	const struct kfdsim_ioctl_desc *ioctl;
	unsigned int nr = _IOC_NR(cmd);
	char stack_kdata[128];
	char *kdata = NULL;
	unsigned int usize, asize;
	bool ptrace_attached = false;
	int retcode;

	if (nr >= AMDKFD_CORE_IOCTL_COUNT || nr < AMDKFD_COMMAND_START ||
	    nr >= AMDKFD_COMMAND_END)
		return -ENOTTY;
	ioctl = &kfdsim_ioctls[nr];
	usize = asize = _IOC_SIZE(cmd);
	asize = max(asize, _IOC_SIZE(ioctl->cmd));
	/* do not trust user space: the kernel's direction */
	cmd = ioctl->cmd;

	/*
	 * Only the process that opened /dev/kfd may use the fd; for CRIU_OP also
	 * the ptrace parent of its thread-group leader.
	 */
	rcu_read_lock();
	if ((ioctl->flags & KFD_IOC_FLAG_CHECKPOINT_RESTORE) &&
	    ptrace_parent(process->lead_thread) == current)
		ptrace_attached = true;
	rcu_read_unlock();
	if (process->lead_thread != current->group_leader && !ptrace_attached)
		return -EBADF;

	if (unlikely(!ioctl->func)) {
		pr_notice_ratelimited(KFDSIM_NAME ": %s is not modelled yet\n", ioctl->name);
		return -EINVAL;
	}

	/* older Docker cannot grant CAP_CHECKPOINT_RESTORE: CAP_SYS_ADMIN too */
	if (unlikely(ioctl->flags & KFD_IOC_FLAG_CHECKPOINT_RESTORE) &&
	    !capable(CAP_CHECKPOINT_RESTORE) && !capable(CAP_SYS_ADMIN))
		return -EACCES;

	if (cmd & (IOC_IN | IOC_OUT)) {
		if (asize <= sizeof(stack_kdata)) {
			kdata = stack_kdata;
		} else {
			kdata = kmalloc(asize, GFP_KERNEL);
			if (!kdata)
				return -ENOMEM;
		}
		if (asize > usize)
			memset(kdata + usize, 0, asize - usize);
	}
	if (cmd & IOC_IN) {
		if (copy_from_user(kdata, (void __user *)arg, usize)) {
			retcode = -EFAULT;
			goto out;
		}
	} else if (cmd & IOC_OUT) {
		memset(kdata, 0, usize);
	}

	if (ioctl->validate) {
		retcode = ioctl->validate(kdata, usize);
		if (retcode)
			goto out;
	}

	/* fault injection: "<ioctl name without AMDKFD_IOC_> entry ERRNO" */
	retcode = kfdsim_inject(ioctl->name + strlen("AMDKFD_IOC_"), "entry");
	if (!retcode)
		retcode = ioctl->func(filep, process, kdata);

	if (cmd & IOC_OUT)
		if (copy_to_user((void __user *)arg, kdata, usize))
			retcode = -EFAULT;
out:
	if (kdata != stack_kdata)
		kfree(kdata);
	return retcode;
}

static int kfd_open(struct inode *inode, struct file *filep)
{
	struct kfdsim_process *process;

	if (iminor(inode) != 0)
		return -ENODEV;
	if (in_compat_syscall())
		return -EPERM;
	process = kfdsim_create_process(current);
	if (IS_ERR(process))
		return PTR_ERR(process);
	/* the file owns the reference of kfdsim_create_process() */
	filep->private_data = process;
	return 0;
}

static int kfd_release(struct inode *inode, struct file *filep)
{
	struct kfdsim_process *process = filep->private_data;

	if (process)
		kfdsim_unref_process(process);
	return 0;
}

/*
 * kfd_mmap(): acts on the KFD process of the caller (not on the process that
 * opened the file); the gpu_id field is an actual id. RESERVED_MEM (APU
 * CWSR areas) is not modelled: there are no APUs.
 */
static int kfd_mmap(struct file *filep, struct vm_area_struct *vma)
{
	u64 vm_pgoff = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct kfdsim_process *process;
	struct kfdsim_node *dev = NULL;
	u32 gpu_id = KFDSIM_MMAP_GET_GPU_ID(vm_pgoff);
	int ret;

	/* kfd_get_process(current) */
	if (!current->mm || current->group_leader->mm != current->mm)
		return -EINVAL;
	process = kfdsim_lookup_process_by_task(current);
	if (!process)
		return -EINVAL;
	if (gpu_id)
		dev = kfdsim_node_by_gpu_id(gpu_id);
	switch (vm_pgoff & KFDSIM_MMAP_TYPE_MASK) {
	case KFDSIM_MMAP_TYPE_DOORBELL:
		ret = dev ? kfdsim_doorbell_mmap(dev, process, vma) : -ENODEV;
		break;
	case KFDSIM_MMAP_TYPE_EVENTS:
		ret = kfdsim_event_mmap(process, vma);
		break;
	case KFDSIM_MMAP_TYPE_MMIO:
		ret = dev ? kfdsim_mmio_mmap(dev, process, vma) : -ENODEV;
		break;
	default:	/* RESERVED_MEM */
		ret = dev ? -EINVAL : -ENODEV;
		break;
	}
	kfdsim_unref_process(process);
	return ret;
}

static const struct file_operations kfd_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = kfd_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.open = kfd_open,
	.release = kfd_release,
	.mmap = kfd_mmap,
};

static int kfd_char_dev_major = -1;
static struct class *kfd_class;
struct device *kfdsim_device;

int kfdsim_chardev_init(void)
{
	int err;

	BUILD_BUG_ON(AMDKFD_CORE_IOCTL_COUNT != AMDKFD_COMMAND_END);
	kfd_char_dev_major = register_chrdev(0, "kfd", &kfd_fops);
	if (kfd_char_dev_major < 0)
		return kfd_char_dev_major;
	kfd_class = class_create("kfd");
	if (IS_ERR(kfd_class)) {
		err = PTR_ERR(kfd_class);
		goto err_class;
	}
	kfdsim_device = device_create(kfd_class, NULL, MKDEV(kfd_char_dev_major, 0),
				      NULL, "kfd");
	if (IS_ERR(kfdsim_device)) {
		err = PTR_ERR(kfdsim_device);
		goto err_device;
	}
	return 0;

err_device:
	class_destroy(kfd_class);
err_class:
	unregister_chrdev(kfd_char_dev_major, "kfd");
	return err;
}

void kfdsim_chardev_fini(void)
{
	device_destroy(kfd_class, MKDEV(kfd_char_dev_major, 0));
	class_destroy(kfd_class);
	unregister_chrdev(kfd_char_dev_major, "kfd");
}
