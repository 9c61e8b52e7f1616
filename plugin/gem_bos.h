/* SPDX-License-Identifier: MIT */
/*
 * A render-node file's own BOs (GEM: GEM_CREATE by Mesa, libdrm_amdgpu and
 * the like), saved where the kernel can list them (Linux 6.18:
 * GEM_LIST_HANDLES, GEM_OP GET_MAPPING_INFO, GEM_CHANGE_HANDLE; facts in
 * docs/gem-dmabuf-facts.md) and restored into the same file, with their
 * handles, GPU VA mappings, CPU mappings and contents. Where the kernel
 * cannot list them, nothing is recorded here: the audit before the dump
 * (render_audit.h) has refused any file that holds GEM memory.
 *
 * Dump (DUMP_EXT_FILE of the render file; CRIU's fd is the task's own open
 * file, so it has the task's handles): GEM_LIST_HANDLES; per handle, in
 * ascending order, its mappings (GET_MAPPING_INFO), its mmap offset
 * (GEM_MMAP: what the application's CPU mappings use) and a dma-buf
 * (PRIME_HANDLE_TO_FD) whose contents bo_stream saves as
 * amdgpu-bo-<file id>-<actual gpu_id>.{img,idx}, before the render image
 * that lists them is written (ckpt_complete.h). Refused, in one line naming
 * the handle: a PRIME import of another device's buffer (the plugin would
 * restore a private copy of someone else's memory), and a handle whose
 * object is a KFD BO (its dma-buf is one KFD's CHECKPOINT hands over: the
 * caller's check), which a GEM restore would split from KFD's.
 *
 * Restore (RESTORE_EXT_FILE of the render file, in the restored task, into
 * the file render_fds.h gives for the target GPU, the one whose VM KFD
 * shares): per BO in ascending handle order GEM_CREATE with the recorded
 * size, domains, settable flags and alignment; GEM_CHANGE_HANDLE to the
 * recorded handle when the kernel gave another one (the DRM core gives the
 * lowest free handle, so ascending creation only ever moves a handle up);
 * GEM_VA MAP of each mapping with its recorded flags; GEM_MMAP for the new
 * offset (gem_vmas, for UPDATE_VMA_MAP); then all contents through
 * restore_copy_run() (SDMA, or the render-node mmap engine). A kernel
 * without GEM_CHANGE_HANDLE (before 6.18) restores only files whose
 * handles need no move; otherwise the restore fails with that reason. On
 * any failure every BO created is closed again (GEM_CLOSE unmaps it).
 *
 * Functions return 0 or -errno, with one line in err.
 */
#ifndef AMDGPU_CRIU_GEM_BOS_H
#define AMDGPU_CRIU_GEM_BOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "copy_engines.h"
#include "kfd_image.h"
#include "render_audit.h"
#include "shared_state.h"

/* ---- dump ------------------------------------------------------------------- */

struct gem_dump_ctx {
	int dir_fd;
	int parent_dir_fd; /* an incremental dump's parent images, or -1 */
	const struct copy_engine_opts *engine_opts;
	struct copy_gpu gpu; /* the file's GPU: gpu_id is the actual one (file names) */
	render_ioctl_fn ioctl_fn;
	/*
	 * Called with each BO's dma-buf before anything is written: nonzero
	 * (and a line in err) refuses the dump, e.g. a dma-buf KFD's
	 * CHECKPOINT handed over for one of its BOs. NULL: no check.
	 */
	int (*check_dmabuf)(void *arg, int dmabuf_fd, uint32_t handle, char *err, size_t errlen);
	void *check_arg;
};

/*
 * Records the GEM BOs of the render file fd into e->gem_bos (freed with
 * gem_dump_entry_free()) and writes their contents. 0 with no BOs where
 * the kernel cannot list them (-EOPNOTSUPP from GEM_LIST_HANDLES). On
 * failure the contents files written are removed.
 */
int gem_dump_file(const struct gem_dump_ctx *ctx, int fd, uint32_t id, RenderFileEntry *e,
		  char *err, size_t errlen);
void gem_dump_entry_free(RenderFileEntry *e);

/* ---- restore ---------------------------------------------------------------- */

/* A restored GEM BO's CPU mapping offset, old (dump node) to new. */
struct gem_vma {
	uint32_t old_minor;  /* the render file's minor on the dump node */
	uint32_t dst_minor;  /* the local render minor the BO now lives on */
	uint64_t old_offset; /* gem_bo_entry.mmap_offset */
	uint64_t size;
	uint64_t new_offset;
};

struct gem_vmas {
	struct gem_vma *v; /* sorted by (old_minor, old_offset) */
	size_t n;
};

struct gem_restore_ctx {
	int dir_fd;
	const struct copy_engine_opts *engine_opts;
	struct shared_state *shared; /* copy slots */
	struct copy_gpu gpu;	     /* gpu_id: the image's actual gpu_id; render_minor: local */
	render_ioctl_fn ioctl_fn;
};

/* Restores img's GEM BOs into the render file fd; their CPU offsets go into vmas. */
int gem_restore_file(const struct gem_restore_ctx *ctx, int fd, const struct render_file_image *img,
		     struct gem_vmas *vmas, char *err, size_t errlen);

/* The restored GEM BO whose old CPU mapping range holds pgoff on old_minor, or NULL. */
const struct gem_vma *gem_vmas_find(const struct gem_vmas *m, uint32_t old_minor, uint64_t pgoff);
/* Does any restored GEM BO live on this local minor? */
bool gem_vmas_on_minor(const struct gem_vmas *m, uint32_t dst_minor);
void gem_vmas_free(struct gem_vmas *m);

#endif
