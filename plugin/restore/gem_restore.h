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
 * Restore (RESTORE_EXT_FILE of the render file, in the restored task, into
 * the file render_fds.h gives for the target GPU, the one whose VM KFD
 * shares): per BO in ascending handle order GEM_CREATE with the recorded
 * size, domains, settable flags and alignment; GEM_CHANGE_HANDLE to the
 * recorded handle when the kernel gave another one (the DRM core gives the
 * lowest free handle, so ascending creation only ever moves a handle up);
 * GEM_VA MAP of each mapping with its recorded flags; GEM_MMAP for the new
 * offset (a vma_map, for UPDATE_VMA_MAP); then all contents through
 * restore_copy_run() (SDMA, or the render-node mmap engine). A kernel
 * without GEM_CHANGE_HANDLE (before 6.18) restores only files whose
 * handles need no move; otherwise the restore fails with that reason. On
 * any failure every BO created is closed again (GEM_CLOSE unmaps it).
 *
 * The dump's half: plugin/dump/gem_dump.h.
 *
 * Functions return 0 or -errno, with one line in err.
 */
#ifndef AMDGPU_CRIU_PLUGIN_RESTORE_GEM_RESTORE_H
#define AMDGPU_CRIU_PLUGIN_RESTORE_GEM_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"
#include "plugin/copy_engines.h"
#include "plugin/gem_list.h"
#include "plugin/restore/shared_state.h"
#include "plugin/restore/vma_map.h"

struct gem_restore_ctx {
	int dir_fd;
	const struct copy_engine_opts *engine_opts;
	struct shared_state *shared; /* copy slots */
	struct copy_gpu gpu;	     /* gpu_id: the image's actual gpu_id; render_minor: local */
	render_ioctl_fn ioctl_fn;
};

/*
 * Restores img's GEM BOs into the render file fd; their CPU mappings go into
 * vmas (old offset on the dump node's minor to new offset, dst_minor the
 * local minor).
 */
int gem_restore_file(const struct gem_restore_ctx *ctx, int fd, const struct render_file_image *img,
		     struct vma_map *vmas, char *err, size_t errlen);

#endif
