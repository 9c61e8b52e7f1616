// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the simulated machine (KFD's topology device list).
 *
 * The description gives the values KFD would have read from CRAT tables and
 * amdgpu; what KFD derives itself is derived here the same way: the entry
 * counts, generation_id, and cwsr_size / ctl_stack_size
 * (kfd_queue_ctx_save_restore_size() of 6.12).
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/device_cgroup.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <drm/drm.h>
#include "kfdsim.h"

struct kfdsim_topology *kfdsim_topo;

#define P32(n, c) { #n, 0, c }
#define P64(n, c) { #n, 1, c }

const struct kfdsim_prop_desc kfdsim_node_props[NP_COUNT] = {
	[NP_CPU_CORES_COUNT]		= P32(cpu_cores_count, PC_ALL),
	[NP_SIMD_COUNT]			= P32(simd_count, PC_ALL),
	[NP_MEM_BANKS_COUNT]		= P32(mem_banks_count, PC_ALL),
	[NP_CACHES_COUNT]		= P32(caches_count, PC_ALL),
	[NP_IO_LINKS_COUNT]		= P32(io_links_count, PC_ALL),
	[NP_P2P_LINKS_COUNT]		= P32(p2p_links_count, PC_ALL),
	[NP_CPU_CORE_ID_BASE]		= P32(cpu_core_id_base, PC_ALL),
	[NP_SIMD_ID_BASE]		= P32(simd_id_base, PC_ALL),
	[NP_MAX_WAVES_PER_SIMD]		= P32(max_waves_per_simd, PC_ALL),
	[NP_LDS_SIZE_IN_KB]		= P32(lds_size_in_kb, PC_ALL),
	[NP_GDS_SIZE_IN_KB]		= P32(gds_size_in_kb, PC_ALL),
	[NP_NUM_GWS]			= P32(num_gws, PC_ALL),
	[NP_WAVE_FRONT_SIZE]		= P32(wave_front_size, PC_ALL),
	[NP_ARRAY_COUNT]		= P32(array_count, PC_ALL),
	[NP_SIMD_ARRAYS_PER_ENGINE]	= P32(simd_arrays_per_engine, PC_ALL),
	[NP_CU_PER_SIMD_ARRAY]		= P32(cu_per_simd_array, PC_ALL),
	[NP_SIMD_PER_CU]		= P32(simd_per_cu, PC_ALL),
	[NP_MAX_SLOTS_SCRATCH_CU]	= P32(max_slots_scratch_cu, PC_ALL),
	[NP_GFX_TARGET_VERSION]		= P32(gfx_target_version, PC_ALL),
	[NP_VENDOR_ID]			= P32(vendor_id, PC_ALL),
	[NP_DEVICE_ID]			= P32(device_id, PC_ALL),
	[NP_LOCATION_ID]		= P32(location_id, PC_ALL),
	[NP_DOMAIN]			= P32(domain, PC_ALL),
	[NP_DRM_RENDER_MINOR]		= P32(drm_render_minor, PC_ALL),
	[NP_HIVE_ID]			= P64(hive_id, PC_ALL),
	[NP_NUM_SDMA_ENGINES]		= P32(num_sdma_engines, PC_ALL),
	[NP_NUM_SDMA_XGMI_ENGINES]	= P32(num_sdma_xgmi_engines, PC_ALL),
	[NP_NUM_SDMA_QUEUES_PER_ENGINE]	= P32(num_sdma_queues_per_engine, PC_ALL),
	[NP_NUM_CP_QUEUES]		= P32(num_cp_queues, PC_ALL),
	[NP_CWSR_SIZE]			= P32(cwsr_size, PC_ALL),
	[NP_CTL_STACK_SIZE]		= P32(ctl_stack_size, PC_ALL),
	[NP_MAX_ENGINE_CLK_FCOMPUTE]	= P32(max_engine_clk_fcompute, PC_GPU),
	[NP_LOCAL_MEM_SIZE]		= P64(local_mem_size, PC_GPU),
	[NP_FW_VERSION]			= P32(fw_version, PC_GPU),
	[NP_CAPABILITY]			= P32(capability, PC_GPU),
	[NP_DEBUG_PROP]			= P64(debug_prop, PC_GPU),
	[NP_SDMA_FW_VERSION]		= P32(sdma_fw_version, PC_GPU),
	[NP_UNIQUE_ID]			= P64(unique_id, PC_GPU),
	[NP_NUM_XCC]			= P32(num_xcc, PC_GPU),
	[NP_MAX_ENGINE_CLK_CCOMPUTE]	= P32(max_engine_clk_ccompute, PC_LAST),
};

/* kfd_queue.c (6.12): sizes of the CWSR area and of the control stack. */
#define SGPR_SIZE_PER_CU	0x4000
#define LDS_SIZE_PER_CU		0x10000
#define HWREG_SIZE_PER_CU	0x1000
#define CTX_SAVE_HEADER_SIZE	40	/* SIZEOF_HSA_USER_CONTEXT_SAVE_AREA_HEADER */
#define DEBUGGER_BYTES_PER_WAVE	32
#define DEBUGGER_BYTES_ALIGN	64

static u32 vgpr_size_per_cu(u32 gfxv)
{
	if (gfxv / 100 * 100 == 90400 || gfxv == 90010 || gfxv == 90008)
		return 0x80000;
	if (gfxv == 110000 || gfxv == 110001 || gfxv == 120000 || gfxv == 120001)
		return 0x60000;
	return 0x40000;
}

static void ctx_save_restore_size(struct kfdsim_node *n)
{
	u64 *p = n->props;
	u32 gfxv = p[NP_GFX_TARGET_VERSION];
	u32 cu_num, wave_num, wg_data, ctl_stack, arrays;

	if (gfxv < 80001 || !p[NP_SIMD_PER_CU] || !p[NP_SIMD_ARRAYS_PER_ENGINE])
		return;
	cu_num = p[NP_SIMD_COUNT] / p[NP_SIMD_PER_CU] / kfdsim_num_xcc(n);
	/* props->array_count is per XCC; sysfs shows it times num_xcc */
	arrays = p[NP_ARRAY_COUNT] / kfdsim_num_xcc(n);
	if (gfxv < 100100)
		wave_num = min(cu_num * 40, arrays / (u32)p[NP_SIMD_ARRAYS_PER_ENGINE] * 512);
	else
		wave_num = cu_num * 32;
	wg_data = ALIGN(cu_num * (vgpr_size_per_cu(gfxv) + SGPR_SIZE_PER_CU +
				  LDS_SIZE_PER_CU + HWREG_SIZE_PER_CU), PAGE_SIZE);
	ctl_stack = wave_num * (gfxv >= 100100 ? 12 : 8) + 8;
	ctl_stack = ALIGN(CTX_SAVE_HEADER_SIZE + ctl_stack, PAGE_SIZE);
	if (gfxv / 10000 * 10000 == 100000)
		ctl_stack = min(ctl_stack, 0x7000U);

	/* node_props.debug_memory_size, eop_buffer_size (not in sysfs) */
	n->debug_memory_size = ALIGN(wave_num * DEBUGGER_BYTES_PER_WAVE,
				     DEBUGGER_BYTES_ALIGN);
	n->eop_buffer_size = gfxv == 80002 ? 0x8000 : 4096;

	if (!test_bit(NP_CTL_STACK_SIZE, n->props_given))
		p[NP_CTL_STACK_SIZE] = ctl_stack;
	if (!test_bit(NP_CWSR_SIZE, n->props_given))
		p[NP_CWSR_SIZE] = ctl_stack + wg_data;
}

static int check_count(struct kfdsim_node *n, enum kfdsim_node_prop k, u32 actual)
{
	if (test_bit(k, n->props_given) && n->props[k] != actual) {
		pr_err(KFDSIM_NAME ": node %u: %s %llu but %u entries described\n",
		       n->id, kfdsim_node_props[k].name, n->props[k], actual);
		return -EINVAL;
	}
	n->props[k] = actual;
	return 0;
}

static int check_links(struct kfdsim_topology *topo, struct kfdsim_node *n,
		       struct kfdsim_link *l, u32 cnt)
{
	u32 i;

	for (i = 0; i < cnt; i++) {
		l[i].node = n;
		if (l[i].node_to >= topo->n_nodes || l[i].node_to == n->id) {
			pr_err(KFDSIM_NAME ": node %u: link %u to bad node %u\n",
			       n->id, i, l[i].node_to);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A CPU node's system memory bank of unknown size (mkdesc.sh: not in the
 * capture) gets what KFD's virtual CRAT reports (kfd_fill_mem_info_for_cpu):
 * the managed pages of the guest's NUMA node with the node's index, or all
 * of the guest's memory for node 0 of a guest without NUMA. ROCr needs a
 * CPU node's system memory (its system pools); rocminfo aborts without.
 */
static void fill_system_memory(struct kfdsim_node *n)
{
	u64 pages = 0;
	u32 j, z;

	if (n->id < MAX_NUMNODES && node_online(n->id)) {
		for (z = 0; z < MAX_NR_ZONES; z++)
			pages += zone_managed_pages(&NODE_DATA(n->id)->node_zones[z]);
	} else if (n->id == 0) {
		pages = totalram_pages();
	}
	for (j = 0; j < n->n_mem; j++)
		if (n->mem[j].heap_type == 0 && !n->mem[j].size_in_bytes)
			n->mem[j].size_in_bytes = pages << PAGE_SHIFT;
}

/*
 * Consistency checks and derived values; fills topo->gpus. A description that
 * KFD could not have produced (duplicate gpu_id or render minor, counts that
 * disagree with the entries, links to missing nodes) is rejected.
 */
int kfdsim_topology_finish(struct kfdsim_topology *topo)
{
	u32 i, j;
	int ret;

	topo->n_gpus = 0;
	for (i = 0; i < topo->n_nodes; i++) {
		struct kfdsim_node *n = &topo->nodes[i];

		for (j = 0; j < n->n_mem; j++)
			n->mem[j].node = n;
		for (j = 0; j < n->n_caches; j++)
			n->caches[j].node = n;
		ret = check_count(n, NP_MEM_BANKS_COUNT, n->n_mem) ?:
		      check_count(n, NP_CACHES_COUNT, n->n_caches) ?:
		      check_count(n, NP_IO_LINKS_COUNT, n->n_io_links) ?:
		      check_count(n, NP_P2P_LINKS_COUNT, n->n_p2p_links) ?:
		      check_links(topo, n, n->io_links, n->n_io_links) ?:
		      check_links(topo, n, n->p2p_links, n->n_p2p_links);
		if (ret)
			return ret;
		/* KFD prints local_mem_size 0 on every node since 5.x */
		n->props[NP_LOCAL_MEM_SIZE] = 0;
		if (!kfdsim_node_is_gpu(n)) {
			fill_system_memory(n);
			continue;
		}

		if (topo->n_gpus == KFDSIM_MAX_GPUS) {
			pr_err(KFDSIM_NAME ": more than %d GPU nodes\n", KFDSIM_MAX_GPUS);
			return -E2BIG;
		}
		for (j = 0; j < topo->n_gpus; j++) {
			struct kfdsim_node *o = topo->gpus[j];

			if (o->gpu_id == n->gpu_id ||
			    o->props[NP_DRM_RENDER_MINOR] == n->props[NP_DRM_RENDER_MINOR]) {
				pr_err(KFDSIM_NAME ": nodes %u and %u share gpu_id or render minor\n",
				       o->id, n->id);
				return -EINVAL;
			}
		}
		if (n->props[NP_DRM_RENDER_MINOR] < 128 ||
		    n->props[NP_DRM_RENDER_MINOR] >= 128 + KFDSIM_MAX_DRM_DEVS) {
			pr_err(KFDSIM_NAME ": node %u: render minor %llu not in 128..%d\n",
			       n->id, n->props[NP_DRM_RENDER_MINOR],
			       128 + KFDSIM_MAX_DRM_DEVS - 1);
			return -EINVAL;
		}
		if (!test_bit(NP_NUM_XCC, n->props_given))
			n->props[NP_NUM_XCC] = 1;
		n->gpu_index = topo->n_gpus;
		topo->gpus[topo->n_gpus++] = n;

		for (j = 0; j < n->n_mem; j++) {
			if (n->mem[j].heap_type == 1 || n->mem[j].heap_type == 2) {
				n->vram_size = n->mem[j].size_in_bytes;
				n->large_bar = n->mem[j].heap_type == 1;
				break;
			}
		}
		ctx_save_restore_size(n);
	}
	if (!topo->generation_id)
		topo->generation_id = 1 + topo->n_gpus;
	return 0;
}

struct kfdsim_node *kfdsim_node_by_gpu_id(u32 gpu_id)
{
	u32 i;

	if (!gpu_id)
		return NULL;
	for (i = 0; i < kfdsim_topo->n_gpus; i++)
		if (kfdsim_topo->gpus[i]->gpu_id == gpu_id)
			return kfdsim_topo->gpus[i];
	return NULL;
}

/*
 * kfd_devcgroup_check_permission(): may the caller's device cgroup use the
 * GPU's render node? devcgroup_check_permission() is exported and is a stub
 * returning 0 without CONFIG_CGROUP_DEVICE and CONFIG_CGROUP_BPF.
 */
int kfdsim_devcgroup_check_permission(const struct kfdsim_node *node)
{
	return devcgroup_check_permission(DEVCG_DEV_CHAR, DRM_MAJOR,
					  node->props[NP_DRM_RENDER_MINOR],
					  DEVCG_ACC_WRITE | DEVCG_ACC_READ);
}
