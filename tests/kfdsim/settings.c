// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the per-GPU settings a ROCm process makes once per GPU at start
 * (libhsakmt's hsaKmtOpenKFD, ROCr's agent init), as 6.12's kfd_chardev.c
 * answers them:
 *
 *   SET_MEMORY_POLICY       policies must be COHERENT or NONCOHERENT
 *                           (EINVAL, checked first); unknown gpu_id EINVAL;
 *                           no VM yet ESRCH. Only cik/vi program it (APE1
 *                           range checked, EINVAL); from gfx9 on it is a
 *                           successful no-op and the aperture is ignored.
 *   GET_CLOCK_COUNTERS      always 0; an unknown gpu_id gets GPU counter 0
 *                           ("node without GPU resource"). The GPU counter
 *                           is the RLC's 100 MHz reference clock.
 *   SET_SCRATCH_BACKING_VA  unknown gpu_id EINVAL; no VM ENODEV; kept in
 *                           qpd->sh_hidden_private_base, a u32 (truncated as
 *                           KFD does; only gfx7/8 without HWS use it).
 *   SET_TRAP_HANDLER        unknown gpu_id EINVAL; no VM ESRCH; the
 *                           second-level TBA/TMA, which KFD writes into the
 *                           CWSR TMA page (tma[0], tma[1]).
 *   RUNTIME_ENABLE          (KFD 1.13+, ROCr 6.x at hsa_init) enable: EBUSY
 *                           when enabled already, EEXIST when a GPU of the
 *                           process has queues; keeps r_debug and the TTMP
 *                           setup flag. Disable always succeeds. No
 *                           debugger attaches, so nothing waits.
 *   GET_TILE_CONFIG         (ROCr's image extension) unknown gpu_id EINVAL,
 *                           no VM needed: GB_ADDR_CONFIG as READ_MMR_REG
 *                           gives it, 32 tile and 16 macro-tile modes (0:
 *                           kfdsim's tables are linear, as the registers
 *                           read), counts cut to those, banks/ranks 0.
 *
 * None of it is in KFD's CRIU blobs (process: version, xnack; device:
 * reserved; the CWSR BO lies below gpuvm_base and is not dumped): a restored
 * process has the defaults again, and so does kfdsim's. debugfs
 * kfdsim/processes shows the state ("settings=").
 */
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

static bool policy_valid(u32 policy)
{
	return policy == KFD_IOC_CACHE_POLICY_COHERENT ||
	       policy == KFD_IOC_CACHE_POLICY_NONCOHERENT;
}

/* set_cache_memory_policy() for cik/vi: APE1 disabled (size 0) or aligned */
static bool ape1_valid(u64 base, u64 size)
{
	u64 limit = base + size - 1;

	if (!size)
		return true;
	return limit > base && !(base & 0xFFFF80000000FFFFULL) &&
	       (limit & 0xFFFF80000000FFFFULL) == 0xFFFF;
}

/*
 * The pdd of a user gpu_id that has a VM: unknown gpu_id EINVAL; no VM
 * (kfd_bind_process_to_device() fails) `no_vm`, which each ioctl reports
 * its own way. Under p->mutex.
 */
static int bound_pdd(struct kfdsim_process *p, u32 gpu_id, int no_vm, struct kfdsim_pdd **out)
{
	struct kfdsim_pdd *pdd = kfdsim_pdd_by_user_id(p, gpu_id);

	if (!pdd)
		return -EINVAL;
	if (IS_ERR(kfdsim_bind_process_to_device(pdd)))
		return no_vm;
	*out = pdd;
	return 0;
}

int kfdsim_ioctl_set_memory_policy(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_set_memory_policy_args *args = data;
	struct kfdsim_pdd *pdd;
	int ret = 0;

	if (!policy_valid(args->default_policy) || !policy_valid(args->alternate_policy))
		return -EINVAL;
	mutex_lock(&p->mutex);
	ret = bound_pdd(p, args->gpu_id, -ESRCH, &pdd);
	if (ret || pdd->dev->props[NP_GFX_TARGET_VERSION] >= 90000)
		goto out; /* no asic op from gfx9 on */
	if (!ape1_valid(args->alternate_aperture_base, args->alternate_aperture_size)) {
		ret = -EINVAL;
		goto out;
	}
	pdd->default_policy = args->default_policy;
	pdd->alternate_policy = args->alternate_policy;
	pdd->ape1_base = args->alternate_aperture_base;
	pdd->ape1_size = args->alternate_aperture_size;
	pdd->memory_policy_set = true;
out:
	mutex_unlock(&p->mutex);
	return ret;
}

int kfdsim_ioctl_get_clock_counters(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_get_clock_counters_args *args = data;
	struct kfdsim_pdd *pdd;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	mutex_unlock(&p->mutex);
	args->gpu_clock_counter = pdd ? div_u64(ktime_get_raw_ns(), 10) : 0;
	args->cpu_clock_counter = ktime_get_raw_ns();
	args->system_clock_counter = ktime_get_boottime_ns();
	args->system_clock_freq = 1000000000;
	return 0;
}

int kfdsim_ioctl_set_scratch_backing_va(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_set_scratch_backing_va_args *args = data;
	struct kfdsim_pdd *pdd;
	int ret;

	mutex_lock(&p->mutex);
	/* kfd_bind_process_to_device()'s own error: ENODEV without a VM */
	ret = bound_pdd(p, args->gpu_id, -ENODEV, &pdd);
	if (!ret)
		pdd->sh_hidden_private_base = (u32)args->va_addr;
	mutex_unlock(&p->mutex);
	return ret;
}

int kfdsim_ioctl_set_trap_handler(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_set_trap_handler_args *args = data;
	struct kfdsim_pdd *pdd;
	int ret;

	mutex_lock(&p->mutex);
	ret = bound_pdd(p, args->gpu_id, -ESRCH, &pdd);
	if (!ret) {
		pdd->trap_tba = args->tba_addr;
		pdd->trap_tma = args->tma_addr;
	}
	mutex_unlock(&p->mutex);
	return ret;
}

/* " settings=" for debugfs: per pdd, DEFAULT/ALTERNATE policy (- unset),
 * scratch backing VA, trap TBA/TMA; under p->mutex */
void kfdsim_settings_show(struct seq_file *m, struct kfdsim_process *p)
{
	u32 i;

	seq_puts(m, " settings=");
	for (i = 0; i < p->n_pdds; i++) {
		struct kfdsim_pdd *pdd = p->pdds[i];

		if (pdd->memory_policy_set)
			seq_printf(m, "%s%u/%u", i ? "," : "", pdd->default_policy,
				   pdd->alternate_policy);
		else
			seq_printf(m, "%s-/-", i ? "," : "");
		seq_printf(m, "/%#x/%#llx/%#llx", pdd->sh_hidden_private_base, pdd->trap_tba,
			   pdd->trap_tma);
	}
	seq_printf(m, " runtime=%s%s", p->runtime_enabled ? "enabled" : "disabled",
		   p->ttmp_setup ? ",ttmp" : "");
}

/*
 * kfd_ioctl_runtime_enable(): runtime_enable()/runtime_disable() without a
 * debugger (debug_trap_enabled never set: DBG_TRAP is not modelled), and
 * without the per-GPU trap setup, which only programs hardware.
 */
int kfdsim_ioctl_runtime_enable(struct file *f, struct kfdsim_process *p, void *data)
{
	struct kfd_ioctl_runtime_enable_args *args = data;
	int ret = 0;
	u32 i;

	mutex_lock(&p->mutex);
	if (!(args->mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK)) {
		p->runtime_enabled = false;
		p->r_debug = 0;
		p->ttmp_setup = false;
		goto out;
	}
	if (p->runtime_enabled) {
		ret = -EBUSY;
		goto out;
	}
	for (i = 0; i < p->n_pdds; i++) {
		if (p->pdds[i]->queue_count) {
			ret = -EEXIST;
			goto out;
		}
	}
	p->runtime_enabled = true;
	p->r_debug = args->r_debug;
	p->ttmp_setup = !!(args->mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK);
out:
	mutex_unlock(&p->mutex);
	return ret;
}

/* amdgpu_amdkfd_get_tile_config(): gfx.config's arrays have these sizes */
#define TILE_CONFIGS		32
#define MACRO_TILE_CONFIGS	16

int kfdsim_ioctl_get_tile_config(struct file *f, struct kfdsim_process *p, void *data)
{
	static const u32 tile[TILE_CONFIGS], macro[MACRO_TILE_CONFIGS];
	struct kfd_ioctl_get_tile_config_args *args = data;
	struct kfdsim_pdd *pdd;

	mutex_lock(&p->mutex);
	pdd = kfdsim_pdd_by_user_id(p, args->gpu_id);
	mutex_unlock(&p->mutex);
	if (!pdd)
		return -EINVAL;
	args->gb_addr_config = kfdsim_gb_addr_config(pdd->dev);
	args->num_banks = 0;
	args->num_ranks = 0;
	args->num_tile_configs = min_t(u32, args->num_tile_configs, TILE_CONFIGS);
	if (copy_to_user(u64_to_user_ptr(args->tile_config_ptr), tile,
			 args->num_tile_configs * sizeof(u32))) {
		args->num_tile_configs = 0;
		return -EFAULT;
	}
	args->num_macro_tile_configs = min_t(u32, args->num_macro_tile_configs,
					     MACRO_TILE_CONFIGS);
	if (copy_to_user(u64_to_user_ptr(args->macro_tile_config_ptr), macro,
			 args->num_macro_tile_configs * sizeof(u32))) {
		args->num_macro_tile_configs = 0;
		return -EFAULT;
	}
	return 0;
}
