/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfdsim: a simulator of AMD KFD (/dev/kfd, the KFD sysfs topology) and of
 * amdgpu render nodes, for testing CRIU's amdgpu plugin without a GPU.
 *
 * Internal declarations shared by all files of the module. The model follows
 * the names of drivers/gpu/drm/amd/amdkfd where a concept maps one to one:
 * a "node" is a kfd_topology_device, a "process" a kfd_process, a "pdd" a
 * kfd_process_device, a "bo" a kgd_mem.
 */
#ifndef KFDSIM_H
#define KFDSIM_H

#include <linux/types.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/mutex.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/mmu_notifier.h>
#include <linux/workqueue.h>
#include <linux/atomic.h>
#include <linux/seq_file.h>
#include <linux/wait.h>
#include <linux/spinlock.h>
#include <drm/drm_device.h>
#include <drm/drm_gem_shmem_helper.h>
#include <linux/dma-fence.h>

#define KFDSIM_NAME		"kfdsim"

/* Limits of a machine description (see desc.c). */
#define KFDSIM_MAX_NODES	256
#define KFDSIM_MAX_GPUS		64	/* KFD's MAX_GPU_INSTANCE (6.12) */
#define KFDSIM_MAX_MEM_BANKS	16
#define KFDSIM_MAX_CACHES	1024
#define KFDSIM_MAX_LINKS	256
#define KFDSIM_SIBLING_BYTES	128	/* CACHE_SIBLINGMAP_SIZE */
#define KFDSIM_NAME_SIZE	32	/* KFD_TOPOLOGY_PUBLIC_NAME_SIZE */
#define KFDSIM_MAX_DRM_DEVS	256	/* GPU nodes plus minor-gap placeholders */
#define KFDSIM_MAX_SDMA_SLOTS	256	/* SDMA queues per device and kind */
#define KFDSIM_MAX_QUEUES	1024	/* KFD_MAX_NUM_OF_QUEUES_PER_PROCESS */
#define KFDSIM_MAX_CU_MASK	1024	/* kfd_ioctl_set_cu_mask()'s max_num_cus */

/* ---- topology model (topology.c, desc.c) ---------------------------------- */

/* nodes/N/properties keys, in the order KFD 6.12 prints them. */
enum kfdsim_node_prop {
	NP_CPU_CORES_COUNT,
	NP_SIMD_COUNT,
	NP_MEM_BANKS_COUNT,
	NP_CACHES_COUNT,
	NP_IO_LINKS_COUNT,
	NP_P2P_LINKS_COUNT,
	NP_CPU_CORE_ID_BASE,
	NP_SIMD_ID_BASE,
	NP_MAX_WAVES_PER_SIMD,
	NP_LDS_SIZE_IN_KB,
	NP_GDS_SIZE_IN_KB,
	NP_NUM_GWS,
	NP_WAVE_FRONT_SIZE,
	NP_ARRAY_COUNT,
	NP_SIMD_ARRAYS_PER_ENGINE,
	NP_CU_PER_SIMD_ARRAY,
	NP_SIMD_PER_CU,
	NP_MAX_SLOTS_SCRATCH_CU,
	NP_GFX_TARGET_VERSION,
	NP_VENDOR_ID,
	NP_DEVICE_ID,
	NP_LOCATION_ID,
	NP_DOMAIN,
	NP_DRM_RENDER_MINOR,
	NP_HIVE_ID,
	NP_NUM_SDMA_ENGINES,
	NP_NUM_SDMA_XGMI_ENGINES,
	NP_NUM_SDMA_QUEUES_PER_ENGINE,
	NP_NUM_CP_QUEUES,
	NP_CWSR_SIZE,
	NP_CTL_STACK_SIZE,
	/* GPU nodes only */
	NP_MAX_ENGINE_CLK_FCOMPUTE,
	NP_LOCAL_MEM_SIZE,
	NP_FW_VERSION,
	NP_CAPABILITY,
	NP_DEBUG_PROP,
	NP_SDMA_FW_VERSION,
	NP_UNIQUE_ID,
	NP_NUM_XCC,
	/* every node, last line */
	NP_MAX_ENGINE_CLK_CCOMPUTE,
	NP_COUNT
};

enum kfdsim_prop_class { PC_ALL, PC_GPU, PC_LAST };

struct kfdsim_prop_desc {
	const char *name;
	u8 is64;
	u8 class;
};

extern const struct kfdsim_prop_desc kfdsim_node_props[NP_COUNT];

struct kfdsim_node;

struct kfdsim_mem_bank {
	struct kfdsim_node *node;
	struct attribute attr;		/* "properties" */
	struct kobject *kobj;
	u32 heap_type;
	u64 size_in_bytes;
	u32 flags;
	u32 width;
	u32 mem_clk_max;
};

struct kfdsim_cache {
	struct kfdsim_node *node;
	struct attribute attr;
	struct kobject *kobj;
	u32 processor_id_low;
	u32 level;
	u32 size;
	u32 cache_line_size;
	u32 cache_lines_per_tag;
	u32 association;
	u32 latency;
	u32 type;
	u32 sibling_map_size;		/* bytes used in sibling_map */
	u8 sibling_map[KFDSIM_SIBLING_BYTES];
};

struct kfdsim_link {
	struct kfdsim_node *node;
	struct attribute attr;
	struct kobject *kobj;
	u32 type;
	u32 version_major;
	u32 version_minor;
	u32 node_from;
	u32 node_to;
	u32 weight;
	u32 min_latency;
	u32 max_latency;
	u32 min_bandwidth;
	u32 max_bandwidth;
	u32 recommended_transfer_size;
	u32 recommended_sdma_engine_id_mask;
	u32 flags;
};

struct kfdsim_drm;

struct kfdsim_node {
	u32 id;				/* node index = proximity domain */
	u32 gpu_id;			/* 0: CPU node */
	char name[KFDSIM_NAME_SIZE];
	u32 pci_rev;			/* "pci" record: DRM_AMDGPU_INFO pci_rev */
	u64 props[NP_COUNT];
	unsigned long props_given[BITS_TO_LONGS(NP_COUNT)];

	struct kfdsim_mem_bank *mem;
	u32 n_mem;
	struct kfdsim_cache *caches;
	u32 n_caches;
	struct kfdsim_link *io_links;
	u32 n_io_links;
	struct kfdsim_link *p2p_links;
	u32 n_p2p_links;

	/* GPU nodes */
	u32 gpu_index;			/* 0.. among GPU nodes, topology order */
	struct kfdsim_drm *drm;		/* render node of this GPU */
	struct device *pci_fn;		/* amdgpu_sysfs.c: the PCI function's directory */
	u64 vram_size;			/* first FB heap of mem_banks */
	bool large_bar;			/* heap type FB_PUBLIC */
	u64 vram_used;			/* KFD accounting, under kfdsim_mem_lock */
	u32 debug_memory_size;		/* node_props, not in sysfs */
	u32 eop_buffer_size;		/* node_props, not in sysfs */

	/* device queue manager, under kfdsim_dqm_lock (queue.c) */
	unsigned long sdma_bitmap[BITS_TO_LONGS(KFDSIM_MAX_SDMA_SLOTS)];
	unsigned long xgmi_sdma_bitmap[BITS_TO_LONGS(KFDSIM_MAX_SDMA_SLOTS)];
	struct page *mmio_page;		/* HDP flush page (chardev.c mmap) */
	struct kfdsim_sdma *sdma;	/* SDMA engines of amdgpu CS (sdma.c) */

	/* sysfs */
	struct kobject *kobj_node;
	struct kobject *kobj_mem;
	struct kobject *kobj_cache;
	struct kobject *kobj_iolink;
	struct kobject *kobj_p2plink;
	struct kobject *kobj_perf;
	struct attribute attr_gpuid;
	struct attribute attr_name;
	struct attribute attr_props;
};

struct kfdsim_topology {
	u32 n_nodes;
	struct kfdsim_node *nodes;	/* array of n_nodes */
	u32 n_gpus;
	struct kfdsim_node *gpus[KFDSIM_MAX_GPUS];	/* topology order */
	u32 generation_id;
	u64 platform_oem;
	u64 platform_id;
	u64 platform_rev;

	struct kobject *kobj_topology;
	struct kobject *kobj_nodes;
	struct attribute attr_genid;
	struct attribute attr_props;
};

extern struct kfdsim_topology *kfdsim_topo;

static inline bool kfdsim_node_is_gpu(const struct kfdsim_node *n)
{
	return n->gpu_id != 0;
}

static inline u32 kfdsim_num_xcc(const struct kfdsim_node *n)
{
	return n->props[NP_NUM_XCC] ? n->props[NP_NUM_XCC] : 1;
}

/* desc.c */
struct kfdsim_topology *kfdsim_desc_parse(char *buf, size_t len);
void kfdsim_topology_free(struct kfdsim_topology *topo);

/* topology.c */
int kfdsim_topology_finish(struct kfdsim_topology *topo);
struct kfdsim_node *kfdsim_node_by_gpu_id(u32 gpu_id);
int kfdsim_devcgroup_check_permission(const struct kfdsim_node *node);

/* topology_sysfs.c */
int kfdsim_topology_sysfs_init(struct kobject *parent);
void kfdsim_topology_sysfs_fini(void);

/* ---- DRM render nodes (drm.c) -------------------------------------------- */

struct kfdsim_drm {
	struct drm_device drm;
	struct platform_device *pdev;
	struct kfdsim_node *node;	/* NULL: a placeholder for a minor gap */
};

/* A DRM file's contexts (amdgpu_ctx_mgr, cs.c). */
struct kfdsim_ctx_mgr {
	struct mutex lock;		/* ctx_idr */
	struct idr ctx_idr;		/* ids 1..4095 -> struct kfdsim_ctx */
	atomic_t jobs;			/* jobs submitted and not finished (wait_var_event) */
};

/* Per DRM file (drm_file->driver_priv): amdgpu_fpriv's VM ownership. */
struct kfdsim_fpriv {
	struct kfdsim_pdd *compute_pdd;	/* the KFD pdd that acquired this VM */
	struct kfdsim_ctx_mgr ctx_mgr;	/* cs.c */
	struct kfdsim_gpuvm *vm;	/* gpuvm.c: GEM_VA mappings */
	struct mutex bo_list_lock;	/* gem.c: bo_lists */
	struct idr bo_lists;		/* DRM_AMDGPU_BO_LIST ids from 1 */
};

/* GEM object of a BO (amdgpu_bo). */
struct kfdsim_gem {
	struct drm_gem_shmem_object shmem;
	u32 kfd_flags;			/* KFD_IOC_ALLOC_MEM_FLAGS_* of the KFD BO */
	atomic64_t bar_debt_ns;		/* CPU read cost not yet slept (bar.c) */
	/* render-node BOs (gem.c) */
	struct kfdsim_node *reserved_node;	/* GEM_CREATE: memory counted there */
	bool no_cpu_access;			/* AMDGPU_GEM_CREATE_NO_CPU_ACCESS */
	u64 create_domains, create_flags;	/* GEM_CREATE's, for GEM_OP and GEM_LIST_HANDLES */
	u64 create_alignment;
	struct mm_struct *userptr_mm;		/* GEM_USERPTR: the owner (mmgrab) */
	u64 userptr_addr;
	bool userptr_readonly;
};

static inline struct kfdsim_gem *to_kfdsim_gem(struct drm_gem_object *obj)
{
	return container_of(obj, struct kfdsim_gem, shmem.base);
}

/* ---- render-node BOs (gem.c) and GPU VMs (gpuvm.c) ------------------------ */

int kfdsim_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_gem_mmap_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_gem_userptr_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_bo_list_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_gem_va_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
void kfdsim_gem_release_extra(struct kfdsim_gem *gem);
void kfdsim_bo_lists_init(struct kfdsim_fpriv *fpriv);
void kfdsim_bo_lists_fini(struct kfdsim_fpriv *fpriv);
/* 0 if @handle is a live BO list of @file (DRM_AMDGPU_BO_LIST), else -ENOENT. */
int kfdsim_bo_list_check(struct drm_file *file, u32 handle);

/* One render-node open file's GPU virtual address space (amdgpu_vm). */
struct kfdsim_gpuvm *kfdsim_gpuvm_create(void);
void kfdsim_gpuvm_destroy(struct kfdsim_gpuvm *vm);
struct kfdsim_gpuvm *kfdsim_fpriv_vm(struct drm_file *file);
void kfdsim_gpuvm_lock(struct kfdsim_gpuvm *vm);	/* a mutex: may sleep */
void kfdsim_gpuvm_unlock(struct kfdsim_gpuvm *vm);
/*
 * The page behind GPU VA @va for a read (@write false) or a write, with the
 * caller holding the lock: *page gets a reference (put_page() it), *offset
 * is @va's offset in it, *len the bytes from @va to the end of that page or
 * of the mapping, whichever is first. -EFAULT: @va not mapped (a GPU page
 * fault on real hardware); -EACCES: mapped without the needed permission
 * (AMDGPU_VM_PAGE_WRITEABLE / READABLE, or a READONLY userptr written).
 */
int kfdsim_gpuvm_page(struct kfdsim_gpuvm *vm, u64 va, bool write, struct page **page,
		      u32 *offset, u32 *len);
void kfdsim_gpuvm_gem_closed(struct drm_file *file, struct kfdsim_gem *gem);
/* The page of a shmem-backed object behind its byte @off (a reference). */
int kfdsim_gem_page(struct kfdsim_gem *gem, u64 off, struct page **page);
/* Bytes of the distinct GEM objects mapped (VRAM, the rest) and page-table blocks touched. */
void kfdsim_gpuvm_stats(struct kfdsim_gpuvm *vm, u64 *vram, u64 *gtt, u64 *pt_blocks);
struct kfdsim_gem_vm_entry;
/*
 * The mappings of @gem in @vm, as GET_MAPPING_INFO reports them (flags:
 * GEM_VA's AMDGPU_VM_PAGE_*, which 6.18 keeps in the mapping): at most @cap
 * into @out; the number of mappings is returned.
 */
u32 kfdsim_gpuvm_mappings(struct kfdsim_gpuvm *vm, struct kfdsim_gem *gem,
			  struct kfdsim_gem_vm_entry *out, u32 cap);

/* fdinfo.c: amdgpu's memory figures of a render-node file; drm_uapi flavour */
#define KFDSIM_PT_BLOCK		(2ULL << 20)	/* VA one page-table block maps */
static inline u64 kfdsim_pt_blocks(u64 va, u64 size)
{
	return size ? (va + size - 1) / KFDSIM_PT_BLOCK - va / KFDSIM_PT_BLOCK + 1 : 0;
}
struct drm_printer;
void kfdsim_show_fdinfo(struct drm_printer *p, struct drm_file *file);
bool kfdsim_uapi_618(void);

/* gem_criu.c: Linux 6.18's DRM_AMDGPU_GEM_LIST_HANDLES (docs/kfd-facts.md 12) */
#define KFDSIM_DRM_AMDGPU_GEM_LIST_HANDLES	0x19
#define KFDSIM_GEM_LIST_IS_IMPORT		(1 << 0)
struct kfdsim_drm_gem_list_handles {
	__u64 entries;
	__u32 num_entries;
	__u32 padding;
};
struct kfdsim_drm_gem_list_entry {
	__u32 gem_handle;
	__u32 flags;
	__u64 size;
	__u64 preferred_domains;
	__u64 alloc_flags;
	__u64 alignment;
};
#define DRM_IOCTL_KFDSIM_GEM_LIST_HANDLES \
	DRM_IOWR(DRM_COMMAND_BASE + KFDSIM_DRM_AMDGPU_GEM_LIST_HANDLES, \
		 struct kfdsim_drm_gem_list_handles)
/*
 * 6.18's DRM_AMDGPU_GEM_OP argument, grown by num_entries for
 * GET_MAPPING_INFO: the ioctl table takes this size, so a 6.12 caller's
 * 16 bytes arrive zero-filled to 24 (drm_ioctl()).
 */
struct kfdsim_drm_gem_op {
	__u32 handle;
	__u32 op;
	__u64 value;
	__u32 num_entries;
	__u32 padding;
};
#define DRM_IOCTL_KFDSIM_GEM_OP \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct kfdsim_drm_gem_op)
#define KFDSIM_GEM_OP_GET_MAPPING_INFO	2
struct kfdsim_gem_vm_entry {
	__u64 addr, size, offset, flags;
};
/* 6.18's core DRM_IOCTL_GEM_CHANGE_HANDLE (nr 0xD2, past 6.12's core table) */
struct kfdsim_gem_change_handle {
	__u32 handle;
	__u32 new_handle;
};
#define DRM_IOCTL_KFDSIM_GEM_CHANGE_HANDLE DRM_IOWR(0xD2, struct kfdsim_gem_change_handle)
int kfdsim_gem_op_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_gem_change_handle(struct drm_file *file, struct kfdsim_gem_change_handle *args);
int kfdsim_gem_list_handles_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
struct drm_minor;
void kfdsim_gem_debugfs_init(struct drm_minor *minor);	/* amdgpu_gem_info */

/* ---- CPU access to VRAM (bar.c) --------------------------------------------- */

void kfdsim_bar_fault(struct kfdsim_gem *gem, unsigned int pages, bool write);

int kfdsim_drm_init(void);
void kfdsim_drm_fini(void);
bool kfdsim_is_drm_file(struct file *f);
/* drm_info.c */
int kfdsim_drm_info_ioctl(struct drm_device *dev, void *data,
			  struct drm_file *filp);
u64 kfdsim_gtt_size(void);
u64 kfdsim_vis_vram_size(const struct kfdsim_node *n);
u64 kfdsim_vram_usage(const struct kfdsim_node *n);

/*
 * amdgpu_sysfs.c: a GPU's device directory (/sys/class/drm/cardN/device):
 * before its platform device is added, kfdsim_amdgpu_sysfs_attach() puts it
 * under a device named by the GPU's PCI address and gives it amdgpu's
 * device files; kfdsim_amdgpu_sysfs_detach() after it is unregistered.
 */
int kfdsim_amdgpu_sysfs_attach(struct platform_device *pdev, struct kfdsim_node *node);
void kfdsim_amdgpu_sysfs_detach(struct kfdsim_node *node);
/*
 * amdgpu_hwmon.c: the GPU's hwmon device (devres of the added platform
 * device), and the group of its clock and load files (attach gives it)
 */
int kfdsim_amdgpu_hwmon_add(struct platform_device *pdev, struct kfdsim_node *node);
extern const struct attribute_group kfdsim_amdgpu_pm_group;
struct kfdsim_gem *kfdsim_gem_create(struct kfdsim_node *node, u64 size,
				     u32 kfd_flags);
struct dma_buf;
struct kfdsim_gem *kfdsim_gem_from_dmabuf(struct dma_buf *dmabuf);
struct kfdsim_node *kfdsim_gem_node(struct kfdsim_gem *gem);

/* ---- command submission (cs.c) and SDMA engines (sdma.c) -------------------- */

#define KFDSIM_CTX_RINGS	2	/* amdgpu_ctx_num_entities[AMDGPU_HW_IP_DMA] */
#define KFDSIM_SCHED_JOBS	32	/* amdgpu_sched_jobs: fences kept per entity */
#define KFDSIM_CS_MAX_IBS	4	/* IB chunks per CS (all on one entity) */
#define KFDSIM_CS_MAX_DEPS	64	/* DEPENDENCIES entries per CS */

struct kfdsim_sdma;
struct kfdsim_sdma_engine;
struct kfdsim_gpuvm;

/*
 * amdgpu_ctx_entity: ring index @ring of a context. Its jobs run in order on
 * one engine at a time; when it has none pending, the next job goes to the
 * least loaded engine (drm_sched_entity_select_rq()).
 */
struct kfdsim_entity {
	spinlock_t lock;			/* everything below */
	u64 fence_context;
	u64 sequence;				/* the next job's; from 1 */
	struct dma_fence *fences[KFDSIM_SCHED_JOBS];	/* by sequence % 32 */
	struct kfdsim_sdma_engine *engine;	/* while pending */
	u32 pending;				/* jobs queued or running */
};

/* amdgpu_ctx: one DRM_AMDGPU_CTX id of a file, on its GPU. */
struct kfdsim_ctx {
	struct kref ref;			/* idr, jobs, ioctls in progress */
	struct kfdsim_node *node;
	u32 id;
	u32 reset_counter;			/* the GPU's at creation */
	u32 reset_counter_query;		/* the GPU's at the last QUERY_STATE (xchg) */
	atomic_t guilty;			/* a job of it hung: CS ECANCELED */
	bool killed;				/* freed: its jobs end (WRITE_ONCE) */
	struct mutex submit_lock;		/* CS: waiting for a slot, then pushing */
	struct kfdsim_entity entities[KFDSIM_CTX_RINGS];
};

struct kfdsim_ib {
	u64 va;					/* GPU VA of the first dword */
	u32 dwords;
};

/* amdgpu_job: one CS; runs on an engine's workqueue (sdma.c). */
struct kfdsim_job {
	struct work_struct work;
	struct kfdsim_ctx *ctx;			/* holds a reference */
	struct kfdsim_ctx_mgr *mgr;		/* counts the job */
	struct kfdsim_entity *entity;
	struct kfdsim_sdma_engine *engine;	/* where it runs */
	struct kfdsim_gpuvm *vm;		/* the file's: alive until mgr drains */
	struct dma_fence *fence;		/* holds a reference */
	u32 n_ibs;
	struct kfdsim_ib ibs[KFDSIM_CS_MAX_IBS];
	u32 n_deps;
	struct dma_fence *deps[];		/* each holds a reference */
};

/* cs.c */
void kfdsim_ctx_mgr_init(struct kfdsim_ctx_mgr *mgr);
void kfdsim_ctx_mgr_fini(struct kfdsim_ctx_mgr *mgr);
int kfdsim_ctx_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int kfdsim_wait_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
/* the engine is done with @job (@err: its fence error, 0 for none) */
void kfdsim_cs_job_done(struct kfdsim_job *job, int err);
void kfdsim_cs_show(struct seq_file *m);
void kfdsim_cs_fini(void);

/* sdma.c */
int kfdsim_sdma_init(void);
void kfdsim_sdma_fini(void);
struct kfdsim_sdma_engine *kfdsim_sdma_pick_engine(struct kfdsim_node *node);
void kfdsim_sdma_queue(struct kfdsim_sdma_engine *engine, struct kfdsim_job *job);
u32 kfdsim_sdma_reset_counter(struct kfdsim_node *node);
void kfdsim_sdma_wake(struct kfdsim_node *node);
void kfdsim_sdma_reset(void);
void kfdsim_sdma_show(struct seq_file *m);
struct kfdsim_queue;
int kfdsim_sdma_run_ring(struct kfdsim_queue *q, u32 engine, u64 *rptr, u64 wptr);
struct drm_amdgpu_info_hw_ip;
int kfdsim_sdma_hw_ip_count(struct kfdsim_node *node, u32 type, u32 *count);
int kfdsim_sdma_hw_ip_info(struct kfdsim_node *node, u32 type, u32 instance,
			   struct drm_amdgpu_info_hw_ip *info);

/* ---- KFD processes (process.c) ------------------------------------------- */

struct kfdsim_process;

struct kfdsim_pdd {
	struct kfdsim_process *process;
	struct kfdsim_node *dev;	/* actual GPU */
	u32 index;			/* position in process->pdds */
	u32 user_gpu_id;

	struct file *drm_file;		/* VM owner, holds a reference */
	struct drm_file *drm_priv;

	struct idr alloc_idr;		/* idr index -> struct kfdsim_bo */
	atomic64_t vram_usage;

	u64 lds_base, lds_limit;
	u64 scratch_base, scratch_limit;
	u64 gpuvm_base, gpuvm_limit;

	/* queues (queue.c), under process->mutex */
	u32 evicted;			/* qpd->evicted: queues run only at 0 */
	u32 queue_count;		/* user queues on this device */
	unsigned long doorbell_bitmap[BITS_TO_LONGS(KFDSIM_MAX_QUEUES)];
	struct page **doorbell_pages;	/* the process doorbell slice */
	u32 n_doorbell_pages;

	/* settings.c, under process->mutex; not checkpointed (as KFD) */
	bool memory_policy_set;		/* cik/vi only */
	u32 default_policy, alternate_policy;
	u64 ape1_base, ape1_size;
	u32 sh_hidden_private_base;	/* SET_SCRATCH_BACKING_VA */
	u64 trap_tba, trap_tma;		/* SET_TRAP_HANDLER */
};

struct kfdsim_process {
	struct hlist_node kfd_processes;	/* kfdsim_processes_table */
	struct list_head cleanup_list;		/* module exit */
	struct mm_struct *mm;			/* key only, not referenced */
	struct task_struct *lead_thread;
	struct mmu_notifier mmu_notifier;
	struct kref ref;
	struct work_struct release_work;
	struct mutex mutex;
	/*
	 * Doorbell slices (pdd->doorbell_pages and the reserved bits of
	 * pdd->doorbell_bitmap). KFD's mmap path takes no process lock (its
	 * caller holds mmap_lock, and ALLOC of a USERPTR BO takes mmap_lock
	 * under the process mutex), so this lock is innermost: taken under
	 * mutex or mmap_lock, it never takes either.
	 */
	struct mutex doorbell_lock;

	u32 n_pdds;	/* pdds are fixed at creation: readable without a lock */
	struct kfdsim_pdd *pdds[KFDSIM_MAX_GPUS];

	/* queues (queue.c), under mutex */
	struct list_head queues;		/* pqm->queues: newest first */
	unsigned long queue_slot_bitmap[BITS_TO_LONGS(KFDSIM_MAX_QUEUES)];
	bool xnack_enabled;

	/* RUNTIME_ENABLE (settings.c), under mutex; not checkpointed (as KFD) */
	bool runtime_enabled;
	bool ttmp_setup;
	u64 r_debug;

	/* SVM (svm.c), under mutex: ranges in the kernel's list order */
	struct list_head svm_ranges;
	struct list_head svm_pending;		/* CRIU RESTORE -> RESUME */
	/*
	 * CPU unmaps that may hit a range, noted by the MMU notifier (which
	 * must not take the mutex) under svm_unmap_lock and applied under the
	 * mutex before the ranges are next looked at. svm_lo/svm_hi (pages,
	 * written under the mutex, read by the notifier) bound every range
	 * registered since the last flush.
	 */
	spinlock_t svm_unmap_lock;
	struct list_head svm_unmaps;
	u32 n_svm_unmaps;
	bool svm_unmaps_lost;
	u64 svm_lo, svm_hi;

	/* CRIU state (criu.c, section 3.2 of the ABI document), under mutex */
	bool queues_paused;
	bool block_mmu_notifications;
	u32 evicted_bos;			/* pending userptr restores */
	struct delayed_work restore_userptr_work;

	/* user-mode SDMA queues' engine passes (queue.c) */
	struct delayed_work sdma_poll;
	bool sdma_poll_stopped;			/* under mutex: the mm is gone */
	u64 ctl_stack_seq;			/* stamps saved control stacks */

	/* events (events.c): idr and signaled flags under event_lock */
	spinlock_t event_lock;
	struct idr event_idr;
	wait_queue_head_t event_wq;
	u32 signal_event_count;
	u64 signal_mapped_size;			/* bytes of slots user space may use */
	u64 signal_handle;			/* user event page BO, 0: kernel page */
	u64 *signal_slots;			/* kernel address of the slots */
	struct page **signal_pages;		/* kernel-allocated page */
	struct kfdsim_bo *signal_bo;		/* user page BO (vmapped) */
};

int kfdsim_process_init(void);
struct kfdsim_process *kfdsim_lookup_process_by_task(struct task_struct *task);
int kfdsim_processes_show(struct seq_file *m, void *v);
int kfdsim_events_debug_show(struct seq_file *m, void *v);
void kfdsim_events_show(struct seq_file *m, struct kfdsim_process *p);
void kfdsim_events_trace_show(struct seq_file *m);
void kfdsim_process_fini(void);
struct kfdsim_process *kfdsim_create_process(struct task_struct *thread);
void kfdsim_unref_process(struct kfdsim_process *p);
struct kfdsim_process *kfdsim_vm_compute_process(struct kfdsim_fpriv *fpriv, u32 *pdd_index);
struct kfdsim_pdd *kfdsim_pdd_by_user_id(struct kfdsim_process *p, u32 id);
struct kfdsim_pdd *kfdsim_pdd_by_dev(struct kfdsim_process *p,
				     struct kfdsim_node *dev);
struct kfdsim_pdd *kfdsim_bind_process_to_device(struct kfdsim_pdd *pdd);
int kfdsim_pdd_init_vm(struct kfdsim_pdd *pdd, struct file *drm_file);

/* ---- memory (memory.c) ----------------------------------------------------- */

#define KFDSIM_HANDLE(gpu_id, idr)	(((u64)(gpu_id) << 32) | (u32)(idr))
#define KFDSIM_HANDLE_GPU(h)		((u32)((h) >> 32))
#define KFDSIM_HANDLE_IDR(h)		((u32)((h) & 0xFFFFFFFF))

/* /dev/kfd mmap offsets (kfd_priv.h) */
#define KFDSIM_MMAP_TYPE_SHIFT		62
#define KFDSIM_MMAP_TYPE_MASK		(0x3ULL << KFDSIM_MMAP_TYPE_SHIFT)
#define KFDSIM_MMAP_TYPE_DOORBELL	(0x3ULL << KFDSIM_MMAP_TYPE_SHIFT)
#define KFDSIM_MMAP_TYPE_EVENTS		(0x2ULL << KFDSIM_MMAP_TYPE_SHIFT)
#define KFDSIM_MMAP_TYPE_RESERVED_MEM	(0x1ULL << KFDSIM_MMAP_TYPE_SHIFT)
#define KFDSIM_MMAP_TYPE_MMIO		(0x0ULL << KFDSIM_MMAP_TYPE_SHIFT)
#define KFDSIM_MMAP_GPU_ID_SHIFT	46
#define KFDSIM_MMAP_GPU_ID_MASK		(0xFFFFULL << KFDSIM_MMAP_GPU_ID_SHIFT)
#define KFDSIM_MMAP_GPU_ID(id)		(((u64)(id) << KFDSIM_MMAP_GPU_ID_SHIFT) & \
					 KFDSIM_MMAP_GPU_ID_MASK)
#define KFDSIM_MMAP_GET_GPU_ID(off)	(((off) & KFDSIM_MMAP_GPU_ID_MASK) >> \
					 KFDSIM_MMAP_GPU_ID_SHIFT)

/* kgd_mem */
struct kfdsim_bo {
	struct kfdsim_pdd *pdd;		/* owner */
	int idr;			/* handle index in pdd->alloc_idr */
	u32 alloc_flags;
	u64 va;
	u64 size;			/* backing size, page aligned */
	u64 user_addr;			/* USERPTR */
	struct kfdsim_gem *gem;
	struct dma_buf *dmabuf;		/* cached export, or the imported one */
	bool imported;			/* IMPORT_DMABUF: no memory reservation */
	unsigned long mapped[BITS_TO_LONGS(KFDSIM_MAX_GPUS)];	/* pdd index */
	/* kfd_mem_attach(): a bo_va in that pdd's VM from the first map until the BO is freed */
	unsigned long attached[BITS_TO_LONGS(KFDSIM_MAX_GPUS)];
	u32 mapped_count;
	u16 queue_refs[KFDSIM_MAX_GPUS];	/* bo_va->queue_refcount per VM */
};

void kfdsim_bo_destroy(struct kfdsim_bo *bo);
int kfdsim_bo_export_dmabuf(struct kfdsim_bo *bo);
int kfdsim_gpuvm_alloc(struct kfdsim_pdd *pdd, u64 va, u64 size, u32 flags,
		       u64 *offset, bool criu_resume, struct kfdsim_bo **out);
int kfdsim_gpuvm_map(struct kfdsim_process *p, struct kfdsim_bo *bo,
		     struct kfdsim_pdd *peer);
u64 kfdsim_available_memory(struct kfdsim_node *node);
int kfdsim_reserve_mem_limit(struct kfdsim_node *dev, u64 size, u32 flags);
void kfdsim_unreserve_mem_limit(struct kfdsim_node *dev, u64 size, u32 flags);
u64 kfdsim_doorbell_slice_size(const struct kfdsim_node *node);

/* ioctl handlers (memory.c, chardev.c) */
int kfdsim_ioctl_acquire_vm(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_alloc_memory_of_gpu(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_free_memory_of_gpu(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_map_memory_to_gpu(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_unmap_memory_from_gpu(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_available_memory(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_export_dmabuf(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_import_dmabuf(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_get_dmabuf_info(struct file *f, struct kfdsim_process *p, void *data);

/* ---- queues (queue.c) ------------------------------------------------------ */

/* Internal queue types (enum kfd_queue_type of 6.12), not the uapi values. */
enum kfdsim_queue_type {
	KFDSIM_QUEUE_COMPUTE = 0,
	KFDSIM_QUEUE_SDMA = 1,
	KFDSIM_QUEUE_HIQ = 2,
	KFDSIM_QUEUE_DIQ = 3,
	KFDSIM_QUEUE_SDMA_XGMI = 4,
	KFDSIM_QUEUE_SDMA_BY_ENG_ID = 5,
};

/* The fixed part of a CRIU queue object (ABI document 5.7), 120 bytes. */
struct kfdsim_criu_queue_priv {
	u32 object_type;
	u32 pad0;
	u64 q_address;
	u64 q_size;
	u64 read_ptr_addr;
	u64 write_ptr_addr;
	u64 doorbell_off;
	u64 eop_ring_buffer_address;
	u64 ctx_save_restore_area_address;
	u32 gpu_id;
	u32 type;
	u32 format;
	u32 q_id;
	u32 priority;
	u32 q_percent;
	u32 doorbell_id;
	u32 gws;
	u32 sdma_id;
	u32 eop_ring_buffer_size;
	u32 ctx_save_restore_area_size;
	u32 ctl_stack_size;
	u32 mqd_size;
	u32 pad1;
};

struct kfdsim_queue {
	struct list_head list;		/* process->queues */
	struct kfdsim_pdd *pdd;
	u32 id;
	u32 type;			/* enum kfdsim_queue_type */
	u32 format;			/* 0 PM4, 1 AQL */
	u32 doorbell_id;
	u32 sdma_id;			/* SDMA queues: slot in the device bitmap */
	u32 sdma_engine_id;
	u32 priority, percent;
	u64 ring, ring_size, rptr, wptr, eop, eop_size, cwsr;
	u32 cwsr_size, ctl_stack_size;
	struct kfdsim_bo *bufs[5];	/* wptr, rptr, ring, eop, cwsr (6.12 tracking) */
	u64 cwsr_svm_size;		/* CWSR area in SVM ranges: bytes counted, else 0 */
	u32 mqd_size;
	u8 *mqd;			/* kernel-owned "hardware" image */
	u32 ctl_stack_bytes;
	u8 *ctl_stack;
	bool active;
	bool stopped;			/* a bad packet, fault or queue error stopped it */
	u32 cu_mask_count;		/* SET_CU_MASK: bits, 0 = none */
	u32 cu_mask[KFDSIM_MAX_CU_MASK / 32];
};

int kfdsim_ioctl_create_queue(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_destroy_queue(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_set_xnack_mode(struct file *f, struct kfdsim_process *p, void *data);

/* settings.c */
int kfdsim_ioctl_set_memory_policy(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_get_clock_counters(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_set_scratch_backing_va(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_set_trap_handler(struct file *f, struct kfdsim_process *p, void *data);
void kfdsim_settings_show(struct seq_file *m, struct kfdsim_process *p);
int kfdsim_ioctl_runtime_enable(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_get_tile_config(struct file *f, struct kfdsim_process *p, void *data);
u32 kfdsim_gb_addr_config(const struct kfdsim_node *n);
int kfdsim_ioctl_update_queue(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_set_cu_mask(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_evict_process_queues(struct kfdsim_process *p);
int kfdsim_restore_process_queues(struct kfdsim_process *p);
void kfdsim_process_destroy_queues(struct kfdsim_process *p);
int kfdsim_queues_checkpoint_info(struct kfdsim_process *p, u32 *count, u64 *size);
int kfdsim_queues_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off);
int kfdsim_queue_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max);
bool kfdsim_xnack_supported(struct kfdsim_process *p);
int kfdsim_doorbell_mmap(struct kfdsim_node *dev, struct kfdsim_process *p,
			 struct vm_area_struct *vma);
int kfdsim_mmio_mmap(struct kfdsim_node *dev, struct kfdsim_process *p,
		     struct vm_area_struct *vma);
void kfdsim_queue_fini(void);
int kfdsim_queue_va_page(struct kfdsim_queue *q, u64 va, bool write, struct page **page,
			 u32 *offset, u32 *len);
/* @len bytes at GPU VA @va of @q's VM to (@write) or from @buf, a page written
 * marked dirty; a fault logged unless @quiet; process mutex held */
int kfdsim_queue_va_access(struct kfdsim_queue *q, u64 va, void *buf, u32 len, bool write,
			   bool quiet);
void kfdsim_queues_init_process(struct kfdsim_process *p);
void kfdsim_queues_stop_polling(struct kfdsim_process *p);

/* aql.c: the packets between the read and write indices of an AQL queue
 * (process mutex held); advances *rptr, stops the queue on a queue error */
int kfdsim_aql_run(struct kfdsim_queue *q, u64 *rptr, u64 wptr);

/* blit.c: a kernel dispatch of ROCclr's copy or fill blit kernels carried
 * out on the queue's VM (process mutex held). 0: done; -ENOENT: @symbol is
 * not a modelled kernel; else a queue error, *why says which. */
struct kfdsim_dispatch {
	u64 kernel_object;	/* the kernel descriptor's GPU VA */
	u64 kernarg;
	u32 grid[3];		/* work-items per dimension */
	u16 dims;		/* setup: 1..3 */
};
int kfdsim_blit_dispatch(struct kfdsim_queue *q, const char *symbol,
			 const struct kfdsim_dispatch *d, const char **why);
void kfdsim_blit_show(struct seq_file *m);
extern struct mutex kfdsim_dqm_lock;

/* ---- events (events.c) ---------------------------------------------------- */

int kfdsim_events_init_process(struct kfdsim_process *p);
void kfdsim_events_destroy_process(struct kfdsim_process *p);
int kfdsim_ioctl_create_event(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_destroy_event(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_set_event(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_reset_event(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_wait_events(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_event_mmap(struct kfdsim_process *p, struct vm_area_struct *vma);
u32 kfdsim_events_count(struct kfdsim_process *p);
int kfdsim_events_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off);
int kfdsim_event_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max);
void kfdsim_signal_event_interrupt(struct kfdsim_process *p, u32 partial_id, u32 valid_id_bits);
int kfdsim_set_event(struct kfdsim_process *p, u32 id);

/* ---- SVM (svm.c) ---------------------------------------------------------- */

int kfdsim_ioctl_svm(struct file *f, struct kfdsim_process *p, void *data);
int kfdsim_ioctl_svm_validate(void *data, unsigned int usize);
bool kfdsim_svm_overlaps(struct kfdsim_process *p, u64 addr, u64 size);
int kfdsim_svm_switch_xnack(struct kfdsim_process *p, bool enable);
void kfdsim_svm_destroy_process(struct kfdsim_process *p);
void kfdsim_svm_note_unmap(struct kfdsim_process *p, unsigned long start, unsigned long end);
u32 kfdsim_svm_count(struct kfdsim_process *p, u32 *pending);
u32 kfdsim_svm_checkpoint_info(struct kfdsim_process *p, u64 *size);
int kfdsim_svm_checkpoint(struct kfdsim_process *p, u8 __user *priv, u64 *off);
int kfdsim_svm_restore(struct kfdsim_process *p, u8 __user *priv, u64 *off, u64 max);
int kfdsim_svm_resume(struct kfdsim_process *p);
int kfdsim_svm_queue_buffer_get(struct kfdsim_pdd *pdd, u64 addr, u64 size);
void kfdsim_svm_queue_buffer_put(struct kfdsim_pdd *pdd, u64 addr, u64 size);

/* ---- CRIU_OP (criu.c) ------------------------------------------------------ */

int kfdsim_ioctl_criu_op(struct file *f, struct kfdsim_process *p, void *data);
void kfdsim_restore_userptr_worker(struct work_struct *work);

/* ---- fault injection (inject.c) -------------------------------------------- */

int kfdsim_inject(const char *point, const char *stage);
int kfdsim_debugfs_init(void);
void kfdsim_debugfs_fini(void);

/* ---- page arrays shared with user space (events.c) ------------------------- */

struct page **kfdsim_alloc_pages(u32 n);
void kfdsim_free_pages(struct page **pages, u32 n);

/* ---- /dev/kfd (chardev.c) -------------------------------------------------- */

int kfdsim_chardev_init(void);
void kfdsim_chardev_fini(void);
extern struct device *kfdsim_device;

/* kfdsim_main.c */
u64 kfdsim_vram_budget(const struct kfdsim_node *dev);
extern struct mutex kfdsim_mem_lock;	/* node->vram_used */

#endif /* KFDSIM_H */
