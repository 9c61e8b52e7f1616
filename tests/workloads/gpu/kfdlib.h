/* SPDX-License-Identifier: MIT */
/*
 * kfdlib: a small user-space library that talks to KFD the way the ROCm
 * runtime does: discover GPUs from the KFD topology, open /dev/kfd, acquire
 * a VM on each GPU's render node, allocate and map BOs, create queues and
 * events, mmap doorbells and BOs. Used by the ZDTM-style workloads of this
 * directory (built in the VM harness against the guest kernel's uapi
 * headers). Functions return 0 or a negative errno.
 */
#ifndef KFDLIB_H
#define KFDLIB_H

#include <stddef.h>
#include <stdint.h>
#ifndef __user
#define __user
#endif
#include <linux/kfd_ioctl.h>

#define KFDL_MAX_GPUS	   64
#define KFDL_PAGE	   4096ULL
#define KFDL_MMAP_DOORBELL (3ULL << 62)
#define KFDL_MMAP_EVENTS   (2ULL << 62)
#define KFDL_GPU_SHIFT	   46

struct kfdl_gpu {
	uint32_t gpu_id, node, minor, gfx, num_xcc;
	uint32_t ctl_stack_size, cwsr_size;
	uint64_t total_cwsr; /* CWSR BO size: (cwsr + debug memory) * xcc */
	int render_fd;
	/* the doorbell slice is mapped once, at its DOORBELL BO's VA, as the
	 * ROCm thunk does (CPU and GPU share the address) */
	uint64_t doorbell_va;
};

struct kfdl {
	int kfd;
	int n_gpus; /* the GPUs this process uses (ACQUIRE_VM, render fd) */
	struct kfdl_gpu gpu[KFDL_MAX_GPUS];
	/* every GPU the topology shows this process (device cgroup), in
	 * topology order: KFD makes a pdd for each, used or not */
	int n_visible;
	uint32_t visible_ids[KFDL_MAX_GPUS];
	uint64_t next_va; /* simple VA allocator, 2 MiB aligned */
};

/* a GPU node of the topology as this process sees it now */
struct kfdl_node {
	uint32_t node, gpu_id, minor;
	uint64_t device_id, hive_id;
};

enum kfdl_bo_type { KFDL_VRAM, KFDL_GTT, KFDL_USERPTR, KFDL_DOORBELL, KFDL_MMIO };

struct kfdl_bo {
	enum kfdl_bo_type type;
	int gi; /* index of the owning GPU in kfdl.gpu */
	uint64_t handle, va, size, mmap_offset;
	uint32_t flags;
	uint8_t *cpu; /* CPU mapping (VRAM/GTT: render node; USERPTR: own) */
	void *io;     /* MMIO: the HDP flush page, mmap of /dev/kfd (kfdl_mmap_mmio) */
	uint32_t mapped[KFDL_MAX_GPUS];
	uint32_t n_mapped;
};

struct kfdl_queue {
	int gi;
	struct kfdl_bo bufs[5]; /* ring, rptr, wptr, EOP, CWSR */
	uint32_t queue_id;
	uint64_t doorbell_offset;
	void *doorbell; /* the doorbell slice, mmap of /dev/kfd */
};

const char *kfdl_type_name(enum kfdl_bo_type t);

/* topology -> gpus, open /dev/kfd, open render nodes, ACQUIRE_VM on each */
int kfdl_open(struct kfdl *k);
/* the same for a subset: sel[i] are indexes into the visible GPUs, in the
 * order given (n_sel 0: all) */
int kfdl_open_sel(struct kfdl *k, const int *sel, int n_sel);
/* the visible GPU nodes now (re-read from sysfs): count or negative errno */
int kfdl_nodes(struct kfdl_node *out, int max);
int kfdl_available_memory(struct kfdl *k, uint32_t gpu_id, uint64_t *avail);
int kfdl_mmap_mmio(struct kfdl *k, struct kfdl_bo *bo);
void kfdl_close(struct kfdl *k);
int kfdl_read_prop(uint32_t node, const char *key, uint64_t *v);

uint64_t kfdl_va(struct kfdl *k, uint64_t size);
int kfdl_alloc(struct kfdl *k, int gi, enum kfdl_bo_type t, uint64_t size, struct kfdl_bo *bo);
/* The same without the KFD_IOC_ALLOC_MEM_FLAGS_* in drop_flags (e.g. WRITABLE: GPU read-only). */
int kfdl_alloc_flags(struct kfdl *k, int gi, enum kfdl_bo_type t, uint64_t size,
		     uint32_t drop_flags, struct kfdl_bo *bo);
int kfdl_map(struct kfdl *k, struct kfdl_bo *bo, const uint32_t *gpu_ids, uint32_t n);
int kfdl_unmap(struct kfdl *k, struct kfdl_bo *bo, const uint32_t *gpu_ids, uint32_t n);
int kfdl_unmap_all(struct kfdl *k, struct kfdl_bo *bo);
int kfdl_free(struct kfdl *k, struct kfdl_bo *bo);
/* EXPORT_DMABUF: a dma-buf fd (O_RDWR | O_CLOEXEC) of the BO */
int kfdl_export_dmabuf(struct kfdl *k, const struct kfdl_bo *bo, int *dmabuf_fd);
/* IMPORT_DMABUF on GPU gi at a fresh VA: bo describes the imported BO (not
 * mapped, no CPU view; its type is the exporter's memory, VRAM or GTT) */
int kfdl_import_dmabuf(struct kfdl *k, int gi, int dmabuf_fd, uint64_t size, struct kfdl_bo *bo);

int kfdl_create_queue(struct kfdl *k, int gi, uint32_t type, struct kfdl_queue *q);
int kfdl_destroy_queue(struct kfdl *k, uint32_t queue_id);

int kfdl_create_event(struct kfdl *k, uint32_t type, int auto_reset, uint32_t *id);
int kfdl_set_event(struct kfdl *k, uint32_t id);
/* WAIT_EVENTS on one event: *result is KFD_IOC_WAIT_RESULT_* */
int kfdl_wait_event(struct kfdl *k, uint32_t id, uint32_t timeout_ms, uint32_t *result);
int kfdl_destroy_event(struct kfdl *k, uint32_t id);

/* gpu_ids of this process's devices, as GET_PROCESS_APERTURES_NEW reports them */
int kfdl_apertures(struct kfdl *k, uint32_t *ids, uint32_t *n, uint32_t max);

/* attributes one AMDKFD_IOC_SVM call may carry here (4 common + one per GPU + spare) */
#define KFDL_SVM_MAX_ATTRS (8 + KFDL_MAX_GPUS)
/* AMDKFD_IOC_SVM op (KFD_IOCTL_SVM_OP_*) on [start, start + size) with nattr
 * attributes; GET_ATTR writes its answers back into attrs */
int kfdl_svm(struct kfdl *k, uint64_t start, uint64_t size, uint32_t op,
	     struct kfd_ioctl_svm_attribute *attrs, uint32_t nattr);
/* SET_XNACK_MODE: *mode 0/1 sets, negative queries; the mode now in *mode */
int kfdl_xnack(struct kfdl *k, int32_t *mode);

#endif
