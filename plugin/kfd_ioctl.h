/* SPDX-License-Identifier: MIT */
/*
 * KFD ioctls with the retry policy of docs/kfd-facts.md section 6.4: EINTR and
 * EAGAIN are retried (bounded, with the argument struct the kernel wrote
 * back) only where a retry is safe: PROCESS_INFO (rolled back on failure),
 * CHECKPOINT (changes nothing), UNPAUSE (stays paused on failure),
 * GET_VERSION, GET_DMABUF_INFO (reads only), and the memory ioctls the
 * restore of shared BOs makes in its own KFD process: ALLOC, FREE and
 * IMPORT_DMABUF (a failed one leaves nothing behind), MAP and UNMAP (the
 * same arguments again; n_success says how far the last try got). RESTORE is never retried (not
 * transactional: a second one fails half-way); RESUME is not either (its SVM list is dropped on
 * error). All return 0 or a negative errno.
 */
#ifndef AMDGPU_CRIU_KFD_IOCTL_H
#define AMDGPU_CRIU_KFD_IOCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kfd_ioctl.h>

#define KFD_CRIU_MIN_MAJOR 1
/* 1.7 has the CRIU op but no dma-buf for GTT BOs: their contents would be lost. */
#define KFD_CRIU_MIN_MINOR 8
#define KFD_IOCTL_RETRIES  100

int kfd_get_version(int kfd_fd, uint32_t *major, uint32_t *minor);

/* AMDKFD_IOC_CRIU_OP with the retry policy of args->op. */
int kfd_criu_op(int kfd_fd, struct kfd_ioctl_criu_args *args);

const char *kfd_criu_op_name(uint32_t op);

/* The KFD handle of idr slot `idr` on the GPU of user id gpu_id (KFD's MAKE_HANDLE). */
#define KFD_HANDLE(gpu_id, idr) (((uint64_t)(gpu_id) << 32) | (uint32_t)(idr))

int kfd_alloc_memory(int kfd_fd, struct kfd_ioctl_alloc_memory_of_gpu_args *args);
int kfd_free_memory(int kfd_fd, uint64_t handle);
int kfd_import_dmabuf(int kfd_fd, struct kfd_ioctl_import_dmabuf_args *args);
/* MAP (map true) or UNMAP of `handle` on the n GPUs (user ids) of ids; -EIO if not all. */
int kfd_map_memory(int kfd_fd, uint64_t handle, uint32_t *ids, uint32_t n, bool map);
/* The actual gpu_id of the GPU a dma-buf belongs to (GET_DMABUF_INFO's gpu_id). */
int kfd_dmabuf_gpu(int kfd_fd, int dmabuf_fd, uint32_t *gpu_id);

/* A BO bucket's dmabuf_fd when the BO has no dma-buf (KFD_INVALID_FD). */
#define KFD_NO_DMABUF_FD 0xFFFFFFFFu

/* Closes every dma-buf fd of bos[0..n-1] and marks it KFD_NO_DMABUF_FD. */
void kfd_bo_buckets_close_dmabufs(struct kfd_criu_bo_bucket *bos, uint32_t n);

#endif
