// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the memory figures amdgpu prints in a render-node file's fdinfo
 * (/proc/PID/fdinfo/FD), which are what a CRIU plugin can read, without
 * the kernel's help, about GPU memory that KFD's BOs do not account for.
 *
 * amdgpu_show_fdinfo() sums every BO that has a bo_va in the file's VM
 * (amdgpu_vm_get_memory(): the VM's status lists), by where it resides:
 *   - GEM BOs with a handle in the file (GEM_CREATE, GEM_USERPTR, PRIME
 *     imports): 6.18 counts them from the handle on; 6.12 only once a VA
 *     mapping of theirs was written (modelled: while mapped);
 *   - KFD BOs attached to this VM: kfd_mem_attach() adds a bo_va at the
 *     first MAP_MEMORY_TO_GPU and only freeing the BO removes it (an
 *     unmapped BO stays counted, a never-mapped one is not); an AQL queue
 *     BO is attached twice; another GPU's VRAM is attached through a
 *     dma-buf, as a GTT object of this device;
 *   - the VM's page tables (their bases sit on the same lists): the root
 *     directory and, modelled here, one 4 KiB table per 2 MiB block that a
 *     mapping touches (amdgpu allocates fewer for 2 MiB fragments, never
 *     more);
 *   - KFD's own BOs of a bound pdd: the 4 KiB IB (kfd_process_device_
 *     reserve_ib_mem()) and the two CWSR trap pages of a dGPU
 *     (kfd_process_device_init_cwsr_dgpu()), both GTT and mapped.
 * Doorbell and MMIO BOs reside in amdgpu's own placements, printed as cpu.
 *
 * Two formats, by the drm_uapi flavour (gem_criu.c): 6.12's
 * "drm-memory-vram:\t<n> KiB" lines, and from 6.13 the DRM core's
 * drm_print_memory_stats() per region ("drm-total-vram:\t<n>[ KiB| MiB]",
 * shared, active, resident, purgeable), with the amd-* lines in both.
 */
#include <linux/idr.h>
#include <linux/kernel.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

#define PT_BYTES	4096ULL
#define KFD_IB_BYTES	4096ULL
#define KFD_CWSR_TBA_TMA_BYTES	(2 * 4096ULL)

enum { PL_CPU, PL_GTT, PL_VRAM, PL_COUNT };

struct mem_stats {
	u64 total[PL_COUNT], shared[PL_COUNT];
	u64 requested_vram, requested_gtt;
};

static void add(struct mem_stats *st, int pl, u64 size, bool shared)
{
	st->total[pl] += size;
	if (shared)
		st->shared[pl] += size;
	if (pl == PL_VRAM)
		st->requested_vram += size;
	else if (pl == PL_GTT)
		st->requested_gtt += size;
}

static int add_handle(int id, void *ptr, void *data)
{
	struct drm_gem_object *obj = ptr;
	struct kfdsim_gem *gem = to_kfdsim_gem(obj);
	int pl = gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM ? PL_VRAM : PL_GTT;

	/* drm_gem_object_is_shared_for_memory_stats(): more than one handle */
	add(data, pl, obj->size, obj->handle_count > 1);
	return 0;
}

static int kfd_bo_placement(const struct kfdsim_bo *bo, const struct kfdsim_pdd *vm_pdd)
{
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		return bo->pdd->dev == vm_pdd->dev ? PL_VRAM : PL_GTT;
	if (bo->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
		return PL_GTT;
	return PL_CPU;	/* doorbell, MMIO remap */
}

/* KFD's BOs attached to the VM of @p's pdd @index, with their page tables. */
static void add_kfd(struct mem_stats *st, struct kfdsim_process *p, u32 index, u64 *pt_blocks)
{
	struct kfdsim_pdd *vm_pdd = p->pdds[index];
	struct kfdsim_bo *bo;
	u32 i;
	int id;

	add(st, PL_GTT, KFD_IB_BYTES + KFD_CWSR_TBA_TMA_BYTES, false);
	*pt_blocks += 2;
	mutex_lock(&p->mutex);
	for (i = 0; i < p->n_pdds; i++) {
		idr_for_each_entry(&p->pdds[i]->alloc_idr, bo, id) {
			u32 copies = bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM ? 2 : 1;

			if (!test_bit(index, bo->attached))
				continue;
			while (copies--)
				add(st, kfd_bo_placement(bo, vm_pdd), bo->size, !!bo->dmabuf);
			*pt_blocks += kfdsim_pt_blocks(bo->va, bo->size);
		}
	}
	mutex_unlock(&p->mutex);
}

static void collect(struct drm_file *file, struct mem_stats *st)
{
	struct kfdsim_fpriv *fpriv = file->driver_priv;
	struct kfdsim_process *p;
	u64 vram, gtt, pt_blocks;
	u32 index;

	kfdsim_gpuvm_stats(fpriv->vm, &vram, &gtt, &pt_blocks);
	if (kfdsim_uapi_618()) {
		spin_lock(&file->table_lock);
		idr_for_each(&file->object_idr, add_handle, st);
		spin_unlock(&file->table_lock);
	} else {
		add(st, PL_VRAM, vram, false);
		add(st, PL_GTT, gtt, false);
	}
	p = kfdsim_vm_compute_process(fpriv, &index);
	if (p) {
		add_kfd(st, p, index, &pt_blocks);
		kfdsim_unref_process(p);
	}
	/* the root directory and the tables */
	add(st, PL_VRAM, PT_BYTES * (1 + pt_blocks), false);
}

static void show_612(struct drm_printer *p, const struct mem_stats *st)
{
	drm_printf(p, "drm-memory-vram:\t%llu KiB\n", st->total[PL_VRAM] / 1024);
	drm_printf(p, "drm-memory-gtt: \t%llu KiB\n", st->total[PL_GTT] / 1024);
	drm_printf(p, "drm-memory-cpu: \t%llu KiB\n", st->total[PL_CPU] / 1024);
	drm_printf(p, "amd-requested-vram:\t%llu KiB\n", st->requested_vram / 1024);
	drm_printf(p, "amd-requested-gtt:\t%llu KiB\n", st->requested_gtt / 1024);
	drm_printf(p, "drm-shared-vram:\t%llu KiB\n", st->shared[PL_VRAM] / 1024);
	drm_printf(p, "drm-shared-gtt:\t%llu KiB\n", st->shared[PL_GTT] / 1024);
	drm_printf(p, "drm-shared-cpu:\t%llu KiB\n", st->shared[PL_CPU] / 1024);
}

static void show_613(struct drm_printer *p, const struct mem_stats *st)
{
	static const char *const names[PL_COUNT] = { "cpu", "gtt", "vram" };
	int pl;

	for (pl = 0; pl < PL_COUNT; pl++) {
		struct drm_memory_stats ds = {
			.shared = st->shared[pl],
			.private = st->total[pl] - st->shared[pl],
			.resident = st->total[pl],
		};

		drm_print_memory_stats(p, &ds, DRM_GEM_OBJECT_RESIDENT | DRM_GEM_OBJECT_PURGEABLE,
				       names[pl]);
	}
	drm_printf(p, "amd-evicted-vram:\t0 KiB\n");
	drm_printf(p, "amd-requested-vram:\t%llu KiB\n", st->requested_vram / 1024);
	drm_printf(p, "amd-requested-gtt:\t%llu KiB\n", st->requested_gtt / 1024);
}

/* drm_driver.show_fdinfo, after the DRM core's drm-driver and drm-client-id lines */
void kfdsim_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct mem_stats st = {};

	collect(file, &st);
	drm_printf(p, "pasid:\t%u\n", (u32)(file->client_id & 0xffff) + 0x8000);
	if (kfdsim_uapi_618())
		show_613(p, &st);
	else
		show_612(p, &st);
}
