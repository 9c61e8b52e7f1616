/* SPDX-License-Identifier: MIT */
/*
 * The render-node uAPI of Linux 6.18 that the plugin uses to save GEM BOs
 * (docs/kfd-facts.md 12), defined here where Debian's libdrm (2.4.124) does
 * not have it yet. Layouts as in 6.18's include/uapi/drm/amdgpu_drm.h and
 * drm.h; on older kernels each ioctl is EINVAL (a number past the driver's
 * or the core's table) or, for GET_MAPPING_INFO, an unknown GEM_OP.
 */
#ifndef AMDGPU_CRIU_DRM_UAPI_618_H
#define AMDGPU_CRIU_DRM_UAPI_618_H

#include <libdrm/amdgpu_drm.h>
#include <xf86drm.h>

#ifndef DRM_AMDGPU_GEM_LIST_HANDLES
#define DRM_AMDGPU_GEM_LIST_HANDLES	       0x19
#define AMDGPU_GEM_LIST_HANDLES_FLAG_IS_IMPORT (1 << 0)
/* num_entries: in, the capacity of entries; out, the file's handle count */
struct drm_amdgpu_gem_list_handles {
	__u64 entries;
	__u32 num_entries;
	__u32 padding;
};
struct drm_amdgpu_gem_list_handles_entry {
	__u32 gem_handle;
	__u32 flags;
	__u64 size;
	__u64 preferred_domains;
	__u64 alloc_flags; /* bo->flags & AMDGPU_GEM_CREATE_SETTABLE_MASK */
	__u64 alignment;   /* tbo.page_alignment: pages, not bytes */
};
#define DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES                                                          \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_LIST_HANDLES, struct drm_amdgpu_gem_list_handles)
#endif

#ifndef AMDGPU_GEM_OP_GET_MAPPING_INFO
#define AMDGPU_GEM_OP_GET_MAPPING_INFO 2
struct drm_amdgpu_gem_vm_entry {
	__u64 addr;
	__u64 size;
	__u64 offset;
	__u64 flags;
};
#endif

/* 6.18's GEM_OP argument: 6.12's grown by num_entries (GET_MAPPING_INFO) */
struct drm_amdgpu_gem_op_618 {
	__u32 handle;
	__u32 op;
	__u64 value;
	__u32 num_entries; /* in: capacity at value; out: the BO's mappings */
	__u32 padding;
};
#define DRM_IOCTL_AMDGPU_GEM_OP_618                                                                \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct drm_amdgpu_gem_op_618)

#ifndef DRM_IOCTL_GEM_CHANGE_HANDLE
struct drm_gem_change_handle {
	__u32 handle;
	__u32 new_handle;
};
#define DRM_IOCTL_GEM_CHANGE_HANDLE DRM_IOWR(0xD2, struct drm_gem_change_handle)
#endif

/*
 * GEM_CREATE's accepted flags in 6.18 (AMDGPU_GEM_CREATE_SETTABLE_MASK: bits
 * 0-3, 6, 7, 9, 10, 12-16; libdrm 2.4.124 names only some of them)
 */
#define AMDGPU_CRIU_GEM_CREATE_SETTABLE 0x1f6cfull

#endif
