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
 * The restore's half: plugin/restore/gem_restore.h.
 *
 * Functions return 0 or -errno, with one line in err.
 */
#ifndef AMDGPU_CRIU_PLUGIN_DUMP_GEM_DUMP_H
#define AMDGPU_CRIU_PLUGIN_DUMP_GEM_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"
#include "plugin/copy_engines.h"
#include "plugin/gem_list.h"

struct gem_dump_ctx {
	int dir_fd;
	int parent_dir_fd; /* an incremental dump's parent images, or -1 */
	enum bo_write_mode write_mode; /* bo_stream_config.write_mode */
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

#endif
