// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: DRM_AMDGPU_INFO on the render nodes (amdgpu_kms.c's
 * amdgpu_info_ioctl()), as much of it as libdrm_amdgpu needs:
 *
 *   amdgpu_device_initialize()	ACCEL_WORKING, DEV_INFO, READ_MMR_REG
 *				(GB_ADDR_CONFIG; before gfx9 also the per-SE
 *				raster and tiling registers)
 *   amdgpu_query_heap_info()	VRAM_GTT, VRAM_USAGE, VIS_VRAM_USAGE,
 *				GTT_USAGE
 *   ac_gpu_info-style callers	MEMORY
 *   amdgpu_query_hw_ip_info()	HW_IP_INFO, HW_IP_COUNT: DMA (sdma.c), GFX
 *				and COMPUTE (libdrm 2.4.12x+ asks GFX at
 *				initialisation; here)
 *
 * Values come from the node's properties, so that they agree with its KFD
 * sysfs node: device_id, family from gfx_target_version, CUs, shader
 * engines, clocks, VRAM, and the GPUVM range of the KFD apertures.
 * Other queries fail with -EINVAL, as amdgpu does for unknown ones.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <uapi/drm/amdgpu_drm.h>
#include "kfdsim.h"

/* amdgpu_vm.h / amdgpu_gmc.h of 6.12 */
#define VA_RESERVED_BOTTOM	(1ULL << 16)
#define VA_RESERVED_TOP		((2ULL << 12) + (2ULL << 20) + (2ULL << 20))
#define VM_SIZE			(1ULL << 48)	/* gfx9+: 4 levels, 48 bits */
#define GMC_HOLE_START		0x0000800000000000ULL
#define GMC_HOLE_END		0xffff800000000000ULL

/* MMIO registers (dword offsets) libdrm_amdgpu reads at initialisation */
#define mmGB_ADDR_CONFIG	0x263e
#define mmCC_RB_BACKEND_DISABLE	0x263d
#define mmGB_TILE_MODE0		0x2644	/* 32 of them */
#define mmGB_MACROTILE_MODE0	0x2664	/* 16 of them */
#define mmMC_ARB_RAMCFG		0x9d8
#define mmPA_SC_RASTER_CONFIG	0xa0d4
#define mmPA_SC_RASTER_CONFIG_1	0xa0d5

static struct kfdsim_node *info_node(struct drm_device *dev)
{
	return container_of(dev, struct kfdsim_drm, drm)->node;
}

/* amdgpu's family of a gfx_target_version (major * 10000 + minor * 100 + step) */
static u32 node_family(const struct kfdsim_node *n)
{
	u32 v = n->props[NP_GFX_TARGET_VERSION];
	u32 major = v / 10000, minor = v / 100 % 100, step = v % 100;

	switch (major) {
	case 0:		/* old kernels have no gfx_target_version: Vega10 */
		return AMDGPU_FAMILY_AI;
	case 7:
		return v == 70000 ? AMDGPU_FAMILY_KV : AMDGPU_FAMILY_CI;
	case 8:
		return v == 80001 ? AMDGPU_FAMILY_CZ : AMDGPU_FAMILY_VI;
	case 9:		/* gfx902, gfx909, gfx90c are Raven, Raven2, Renoir */
		return !minor && (step == 2 || step == 9 || step == 12) ?
			AMDGPU_FAMILY_RV : AMDGPU_FAMILY_AI;
	case 10:
		if (minor != 3)
			return AMDGPU_FAMILY_NV;
		switch (step) {
		case 3: return AMDGPU_FAMILY_VGH;
		case 5: return AMDGPU_FAMILY_YC;
		case 6: return AMDGPU_FAMILY_GC_10_3_6;
		case 7: return AMDGPU_FAMILY_GC_10_3_7;
		default: return AMDGPU_FAMILY_NV;
		}
	case 11:
		if (minor == 5)
			return AMDGPU_FAMILY_GC_11_5_0;
		return step >= 3 ? AMDGPU_FAMILY_GC_11_0_1 : AMDGPU_FAMILY_GC_11_0_0;
	case 12:
		return AMDGPU_FAMILY_GC_12_0_0;
	default:
		return AMDGPU_FAMILY_UNKNOWN;
	}
}

static u32 node_num_se(const struct kfdsim_node *n)
{
	u32 sh = n->props[NP_SIMD_ARRAYS_PER_ENGINE];

	if (!sh)
		return 1;
	return max_t(u32, 1, n->props[NP_ARRAY_COUNT] / sh / kfdsim_num_xcc(n));
}

static u32 node_num_cu(const struct kfdsim_node *n)
{
	u32 simd_per_cu = n->props[NP_SIMD_PER_CU];

	return simd_per_cu ? n->props[NP_SIMD_COUNT] / simd_per_cu : 0;
}

static const struct kfdsim_mem_bank *node_vram_bank(const struct kfdsim_node *n)
{
	u32 i;

	for (i = 0; i < n->n_mem; i++)
		if (n->mem[i].heap_type == 1 || n->mem[i].heap_type == 2)
			return &n->mem[i];
	return NULL;
}

/* amdgpu_ttm_init(): max(3 GiB, TTM's limit of half the system memory) */
u64 kfdsim_gtt_size(void)
{
	struct sysinfo si;

	si_meminfo(&si);
	return max_t(u64, 3ULL << 30, (u64)si.totalram * si.mem_unit / 2);
}

u64 kfdsim_vis_vram_size(const struct kfdsim_node *n)
{
	return n->large_bar ? kfdsim_vram_budget(n) : min_t(u64, kfdsim_vram_budget(n), 256ULL << 20);
}

u64 kfdsim_vram_usage(const struct kfdsim_node *n)
{
	u64 used;

	mutex_lock(&kfdsim_mem_lock);
	used = n->vram_used;
	mutex_unlock(&kfdsim_mem_lock);
	return used;
}

static void fill_dev_info(const struct kfdsim_node *n,
			  struct drm_amdgpu_info_device *di)
{
	const struct kfdsim_mem_bank *bank = node_vram_bank(n);
	u32 se = node_num_se(n), sh = n->props[NP_SIMD_ARRAYS_PER_ENGINE];
	u32 cu_per_sh = n->props[NP_CU_PER_SIMD_ARRAY];
	u32 left = node_num_cu(n), i, j;

	di->device_id = n->props[NP_DEVICE_ID];
	di->pci_rev = n->pci_rev;	/* libdrm names the GPU by (device_id, pci_rev) */
	di->family = node_family(n);
	di->num_shader_engines = se;
	di->num_shader_arrays_per_engine = sh;
	di->num_cu_per_sh = cu_per_sh;
	di->cu_active_number = left;
	/* as many CUs per SE/SH as the node has, in the first 4x4 slots */
	for (i = 0; i < min_t(u32, se, 4); i++) {
		for (j = 0; j < min_t(u32, sh, 4) && left; j++) {
			u32 c = min3(cu_per_sh, left, 32U);

			di->cu_bitmap[i][j] = c == 32 ? ~0U : (1U << c) - 1;
			di->cu_ao_bitmap[i][j] = di->cu_bitmap[i][j] & 0x3;
			left -= c;
		}
	}
	di->gpu_counter_freq = 100000;		/* kHz */
	di->max_engine_clock = n->props[NP_MAX_ENGINE_CLK_FCOMPUTE] * 1000;
	di->max_memory_clock = bank ? bank->mem_clk_max * 1000 : 0;
	di->min_engine_clock = di->max_engine_clock;
	di->min_memory_clock = di->max_memory_clock;
	di->vram_bit_width = bank ? bank->width : 0;
	di->vram_type = n->props[NP_GFX_TARGET_VERSION] < 100000 ?
			AMDGPU_VRAM_TYPE_HBM : AMDGPU_VRAM_TYPE_GDDR6;
	di->num_hw_gfx_contexts = 8;
	di->num_rb_pipes = se * 4;
	di->enabled_rb_pipes_mask = se * 4 >= 32 ? ~0U : (1U << (se * 4)) - 1;
	if (n->props[NP_CPU_CORES_COUNT])
		di->ids_flags |= AMDGPU_IDS_FLAGS_FUSION;
	di->wave_front_size = n->props[NP_WAVE_FRONT_SIZE];
	di->num_shader_visible_vgprs = 256;

	/* amdgpu_info_ioctl(); max is the KFD apertures' gpuvm_limit + 1 */
	di->virtual_address_offset = VA_RESERVED_BOTTOM;
	di->virtual_address_max = min(VM_SIZE - VA_RESERVED_TOP, GMC_HOLE_START);
	di->high_va_offset = GMC_HOLE_END;
	di->high_va_max = GMC_HOLE_END | (VM_SIZE - VA_RESERVED_TOP);
	di->virtual_address_alignment = PAGE_SIZE;
	di->pte_fragment_size = 2 << 20;
	di->gart_page_size = PAGE_SIZE;
}

static bool mmr_allowed(u32 family, u32 reg)
{
	if (reg == mmGB_ADDR_CONFIG)
		return true;
	if (family >= AMDGPU_FAMILY_AI)
		return false;
	return reg == mmCC_RB_BACKEND_DISABLE || reg == mmMC_ARB_RAMCFG ||
	       reg == mmPA_SC_RASTER_CONFIG || reg == mmPA_SC_RASTER_CONFIG_1 ||
	       (reg >= mmGB_TILE_MODE0 && reg < mmGB_TILE_MODE0 + 32) ||
	       (reg >= mmGB_MACROTILE_MODE0 && reg < mmGB_MACROTILE_MODE0 + 16);
}

/*
 * GB_ADDR_CONFIG (gfx9 layout): 4 pipes, 2 compressed fragments, 16 banks,
 * 4 RBs per SE, and the node's number of shader engines. Other registers
 * read as 0 (no harvested RBs, linear tiling tables).
 */
u32 kfdsim_gb_addr_config(const struct kfdsim_node *n)
{
	return 2 | 1 << 6 | 4 << 12 | (ilog2(node_num_se(n)) & 3) << 19 | 2 << 26;
}

/*
 * The GC IP version (major << 16 | minor << 8 | rev) of a gfx_target_version,
 * as IP discovery reports it: the same numbers from gfx10 on, gfx9 parts
 * by their chips (amdgpu_discovery.c); 0 before Vega10 (no discovery).
 */
static u32 gc_ip_version(u32 gfx)
{
	switch (gfx) {
	case 0:				/* no gfx_target_version: Vega10 */
	case 90000: return 0x090001;	/* Vega10 */
	case 90002: return 0x090100;	/* Raven */
	case 90004: return 0x090201;	/* Vega12 */
	case 90006: return 0x090400;	/* Vega20 */
	case 90008: return 0x090401;	/* MI100 */
	case 90009: return 0x090202;	/* Raven2 */
	case 90010: return 0x090402;	/* MI200 */
	case 90012: return 0x090300;	/* Renoir */
	case 90400: case 90401: case 90402:
		return 0x090403;	/* MI300 */
	}
	if (gfx < 90000)
		return 0;
	return (gfx / 10000) << 16 | (gfx / 100 % 100) << 8 | gfx % 100;
}

/* GC 9.4.3 and later gfx9 (MI300, MI350): gfx_v9_4_3, partitions (XCP) */
static bool gc_is_v9_4_3(u32 gc)
{
	return gc >= 0x090403 && gc < 0x0a0000;
}

/*
 * HW_IP_COUNT of GFX and COMPUTE (both the GFX IP block): 1, or with the
 * partition manager of GC 9.4.3+ the XCCs of the render node's partition.
 */
static int gfx_hw_ip_count(const struct kfdsim_node *n, u32 *count)
{
	*count = gc_is_v9_4_3(gc_ip_version(n->props[NP_GFX_TARGET_VERSION])) ?
		 kfdsim_num_xcc(n) : 1;
	return 0;
}

/*
 * amdgpu_hw_ip_info() for GFX and COMPUTE: the GFX IP block's version
 * (gfx_v9_0 is 9.0 for every gfx9 before 9.4.3, gfx_v9_4_3 9.4), IB
 * alignment 32/32, rings as the context entities (GFX 1, COMPUTE 4) cut to
 * the ready ones: no GFX ring on the compute-only GC 9.4.1/9.4.2/9.4.3+,
 * 8 compute rings (amdgpu_num_kcq).
 */
static int gfx_hw_ip_info(const struct kfdsim_node *n, u32 type, u32 instance,
			  struct drm_amdgpu_info_hw_ip *info)
{
	u32 gfx = n->props[NP_GFX_TARGET_VERSION], gc = gc_ip_version(gfx);
	bool compute_only = gc == 0x090401 || gc == 0x090402 || gc_is_v9_4_3(gc);
	u32 rings = type == AMDGPU_HW_IP_COMPUTE ? 4 : compute_only ? 0 : 1;

	if (instance >= AMDGPU_HW_IP_INSTANCE_MAX_COUNT)
		return -EINVAL;
	info->hw_ip_version_major = gc ? gc >> 16 : gfx / 10000;
	info->hw_ip_version_minor = gc_is_v9_4_3(gc) ? 4 : 0;
	info->capabilities_flags = 0;
	info->ib_start_alignment = 32;
	info->ib_size_alignment = 32;
	info->available_rings = (1U << rings) - 1;
	info->ip_discovery_version = gc;
	return 0;
}

static u32 mmr_value(const struct kfdsim_node *n, u32 reg)
{
	return reg == mmGB_ADDR_CONFIG ? kfdsim_gb_addr_config(n) : 0;
}

static int read_mmr(const struct kfdsim_node *n, struct drm_amdgpu_info *info,
		    void __user *out, u32 size)
{
	u32 count = info->read_mmr_reg.count, off = info->read_mmr_reg.dword_offset;
	u32 family = node_family(n), i;
	u32 *regs;
	int ret = 0;

	if (!count || count > 128)
		return -EINVAL;
	regs = kcalloc(count, sizeof(*regs), GFP_KERNEL);
	if (!regs)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		if (!mmr_allowed(family, off + i)) {
			ret = -EFAULT;	/* amdgpu: "unallowed offset" */
			goto out;
		}
		regs[i] = mmr_value(n, off + i);
	}
	if (copy_to_user(out, regs, min_t(u32, size, count * sizeof(*regs))))
		ret = -EFAULT;
out:
	kfree(regs);
	return ret;
}

static void fill_heap(struct drm_amdgpu_heap_info *h, u64 total, u64 used)
{
	h->total_heap_size = total;
	h->usable_heap_size = total;
	h->heap_usage = used;
	h->max_allocation = total;
}

int kfdsim_drm_info_ioctl(struct drm_device *dev, void *data,
			  struct drm_file *filp)
{
	struct drm_amdgpu_info *info = data;
	void __user *out = u64_to_user_ptr(info->return_pointer);
	u32 size = info->return_size;
	struct kfdsim_node *n = info_node(dev);
	union {
		struct drm_amdgpu_info_device dev_info;
		struct drm_amdgpu_info_vram_gtt vram_gtt;
		struct drm_amdgpu_memory_info mem;
		struct drm_amdgpu_info_hw_ip hw_ip;
		u64 u64;
		u32 u32;
	} *v;
	size_t len;
	int ret = 0;

	if (!n)		/* a placeholder for another driver's minor */
		return -ENODEV;
	if (!size || !info->return_pointer)
		return -EINVAL;
	if (info->query == AMDGPU_INFO_READ_MMR_REG)
		return read_mmr(n, info, out, size);

	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	switch (info->query) {
	case AMDGPU_INFO_ACCEL_WORKING:
		v->u32 = 1;
		len = sizeof(v->u32);
		break;
	case AMDGPU_INFO_DEV_INFO:
		fill_dev_info(n, &v->dev_info);
		len = sizeof(v->dev_info);
		break;
	case AMDGPU_INFO_VRAM_GTT:
		v->vram_gtt.vram_size = kfdsim_vram_budget(n);
		v->vram_gtt.vram_cpu_accessible_size = kfdsim_vis_vram_size(n);
		v->vram_gtt.gtt_size = kfdsim_gtt_size();
		len = sizeof(v->vram_gtt);
		break;
	case AMDGPU_INFO_MEMORY:
		fill_heap(&v->mem.vram, kfdsim_vram_budget(n), kfdsim_vram_usage(n));
		fill_heap(&v->mem.cpu_accessible_vram, kfdsim_vis_vram_size(n),
			  n->large_bar ? kfdsim_vram_usage(n) : 0);
		fill_heap(&v->mem.gtt, kfdsim_gtt_size(), 0);
		len = sizeof(v->mem);
		break;
	case AMDGPU_INFO_HW_IP_INFO:	/* DMA: sdma.c */
		if (info->query_hw_ip.type == AMDGPU_HW_IP_GFX ||
		    info->query_hw_ip.type == AMDGPU_HW_IP_COMPUTE)
			ret = gfx_hw_ip_info(n, info->query_hw_ip.type,
					     info->query_hw_ip.ip_instance, &v->hw_ip);
		else
			ret = kfdsim_sdma_hw_ip_info(n, info->query_hw_ip.type,
						     info->query_hw_ip.ip_instance, &v->hw_ip);
		if (ret)
			goto out;
		len = sizeof(v->hw_ip);
		break;
	case AMDGPU_INFO_HW_IP_COUNT:
		if (info->query_hw_ip.type == AMDGPU_HW_IP_GFX ||
		    info->query_hw_ip.type == AMDGPU_HW_IP_COMPUTE)
			ret = gfx_hw_ip_count(n, &v->u32);
		else
			ret = kfdsim_sdma_hw_ip_count(n, info->query_hw_ip.type, &v->u32);
		if (ret)
			goto out;
		len = sizeof(v->u32);
		break;
	case AMDGPU_INFO_VRAM_USAGE:
		v->u64 = kfdsim_vram_usage(n);
		len = sizeof(v->u64);
		break;
	case AMDGPU_INFO_VIS_VRAM_USAGE:
		v->u64 = n->large_bar ? kfdsim_vram_usage(n) : 0;
		len = sizeof(v->u64);
		break;
	case AMDGPU_INFO_GTT_USAGE:
		v->u64 = 0;	/* KFD system memory is not GTT-accounted here */
		len = sizeof(v->u64);
		break;
	default:
		pr_notice_ratelimited(KFDSIM_NAME ": AMDGPU_INFO query %#x is not modelled yet (EINVAL)\n",
				      info->query);
		ret = -EINVAL;
		goto out;
	}
	if (copy_to_user(out, v, min_t(size_t, size, len)))
		ret = -EFAULT;
out:
	kfree(v);
	return ret;
}
