/* SPDX-License-Identifier: MIT */
/*
 * The GPU libraries, loaded at first use.
 *
 * libdrm, libdrm_amdgpu and ISA-L are dlopen()ed when the plugin first meets
 * a GPU, not when CRIU loads the plugin: installed in /usr/lib/criu, the
 * plugin is loaded by every CRIU run on the host, and most runs have no GPU
 * in them. Their load and relocation was most of the plugin's load time.
 *
 * Contract:
 *   gpu_libs_load()  loads all of them, once per process (any thread; they
 *                    are never unloaded): 0, or -ELIBACC with one line naming
 *                    the library and what to install. Every entry point that
 *                    meets a GPU calls it first, to fail in one line.
 *   gpu_libs()       the loaded functions; loads them if that was not done
 *                    yet, and aborts the process with that line if they
 *                    cannot be loaded (a path that skipped gpu_libs_load()).
 *   gpu_libs_use()   tests: these functions instead of the libraries'.
 */
#ifndef AMDGPU_CRIU_COMMON_GPU_LIBS_H
#define AMDGPU_CRIU_COMMON_GPU_LIBS_H

#include <stddef.h>

#include <amdgpu.h>
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <xf86drm.h>

/* The libraries (soname, Debian package) and what is used of each. */
#define GPU_LIBS_LIBRARIES(X)                                                                      \
	X(LIB_DRM, "libdrm.so.2", "libdrm2")                                                       \
	X(LIB_DRM_AMDGPU, "libdrm_amdgpu.so.1", "libdrm-amdgpu1")                                  \
	X(LIB_ISAL, "libisal.so.2", "libisal2")

#define GPU_LIBS_FUNCTIONS(X)                                                                      \
	X(LIB_DRM, drmIoctl)                                                                       \
	X(LIB_DRM_AMDGPU, amdgpu_bo_alloc)                                                         \
	X(LIB_DRM_AMDGPU, amdgpu_bo_cpu_map)                                                       \
	X(LIB_DRM_AMDGPU, amdgpu_bo_cpu_unmap)                                                     \
	X(LIB_DRM_AMDGPU, amdgpu_bo_free)                                                          \
	X(LIB_DRM_AMDGPU, amdgpu_bo_import)                                                        \
	X(LIB_DRM_AMDGPU, amdgpu_bo_list_create)                                                   \
	X(LIB_DRM_AMDGPU, amdgpu_bo_list_destroy)                                                  \
	X(LIB_DRM_AMDGPU, amdgpu_bo_va_op)                                                         \
	X(LIB_DRM_AMDGPU, amdgpu_create_bo_from_user_mem)                                          \
	X(LIB_DRM_AMDGPU, amdgpu_cs_ctx_create)                                                    \
	X(LIB_DRM_AMDGPU, amdgpu_cs_ctx_free)                                                      \
	X(LIB_DRM_AMDGPU, amdgpu_cs_query_fence_status)                                            \
	X(LIB_DRM_AMDGPU, amdgpu_cs_submit)                                                        \
	X(LIB_DRM_AMDGPU, amdgpu_device_deinitialize)                                              \
	X(LIB_DRM_AMDGPU, amdgpu_device_initialize)                                                \
	X(LIB_DRM_AMDGPU, amdgpu_query_hw_ip_count)                                                \
	X(LIB_DRM_AMDGPU, amdgpu_va_range_alloc)                                                   \
	X(LIB_DRM_AMDGPU, amdgpu_va_range_free)                                                    \
	X(LIB_ISAL, crc32_gzip_refl)                                                               \
	X(LIB_ISAL, crc64_ecma_refl)

struct gpu_libs {
#define GPU_LIBS_MEMBER(lib, fn) __typeof__(fn) *fn;
	GPU_LIBS_FUNCTIONS(GPU_LIBS_MEMBER)
#undef GPU_LIBS_MEMBER
};

int gpu_libs_load(char *err, size_t errlen);
const struct gpu_libs *gpu_libs(void);
void gpu_libs_use(const struct gpu_libs *fns);

#endif
