// SPDX-License-Identifier: MIT
/* gemlib: render-node (GEM) BOs through libdrm_amdgpu (gemlib.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <xf86drm.h>

#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "gemlib.h"

struct gem_dev {
	amdgpu_device_handle dev;
};

struct gem_bo {
	amdgpu_bo_handle bo;
	amdgpu_va_handle va_range;
	uint64_t va, size;
	void *cpu;
	uint32_t handle;
};

int gem_dev_open(int render_fd, struct gem_dev **out)
{
	struct gem_dev *d = calloc(1, sizeof(*d));
	uint32_t major, minor;
	int ret;

	if (!d)
		return -ENOMEM;
	ret = amdgpu_device_initialize(render_fd, &major, &minor, &d->dev);
	if (ret) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void gem_dev_close(struct gem_dev *d)
{
	if (d)
		amdgpu_device_deinitialize(d->dev);
	free(d);
}

int gem_bo_new(struct gem_dev *d, uint64_t size, bool vram, bool gpu_map, struct gem_bo **out)
{
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = size,
		.phys_alignment = 4096,
		.preferred_heap = vram ? AMDGPU_GEM_DOMAIN_VRAM : AMDGPU_GEM_DOMAIN_GTT,
		.flags = vram ? AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED : 0,
	};
	struct gem_bo *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	b->size = size;
	ret = amdgpu_bo_alloc(d->dev, &req, &b->bo);
	if (ret)
		goto err_free;
	ret = amdgpu_bo_export(b->bo, amdgpu_bo_handle_type_kms, &b->handle);
	if (!ret)
		ret = amdgpu_bo_cpu_map(b->bo, &b->cpu);
	if (ret)
		goto err_bo;
	if (gpu_map) {
		ret = amdgpu_va_range_alloc(d->dev, amdgpu_gpu_va_range_general, size, 4096, 0,
					    &b->va, &b->va_range, 0);
		if (!ret)
			ret = amdgpu_bo_va_op(b->bo, 0, size, b->va, 0, AMDGPU_VA_OP_MAP);
		if (ret)
			goto err_bo;
	}
	*out = b;
	return 0;
err_bo:
	gem_bo_free(b);
	return ret;
err_free:
	free(b);
	return ret;
}

void gem_bo_free(struct gem_bo *b)
{
	if (!b)
		return;
	if (b->va)
		amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_UNMAP);
	if (b->va_range)
		amdgpu_va_range_free(b->va_range);
	if (b->cpu)
		amdgpu_bo_cpu_unmap(b->bo);
	amdgpu_bo_free(b->bo);
	free(b);
}

uint8_t *gem_bo_cpu(struct gem_bo *b)
{
	return b->cpu;
}

uint32_t gem_bo_handle(struct gem_bo *b)
{
	return b->handle;
}

int gem_map_dmabuf(int render_fd, int dmabuf_fd, uint64_t size, uint8_t **cpu)
{
	union drm_amdgpu_gem_mmap args = {0};
	uint32_t handle;
	void *p;
	int ret;

	ret = drmPrimeFDToHandle(render_fd, dmabuf_fd, &handle) ? -errno : 0;
	if (ret)
		return ret;
	args.in.handle = handle;
	ret = drmCommandWriteRead(render_fd, DRM_AMDGPU_GEM_MMAP, &args, sizeof(args));
	if (!ret) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, render_fd,
			 (off_t)args.out.addr_ptr);
		ret = p == MAP_FAILED ? -errno : 0;
		if (!ret)
			*cpu = p;
	}
	drmCloseBufferHandle(render_fd, handle);
	return ret;
}

/* Linux 6.18's GEM_OP argument and GET_MAPPING_INFO (not in Debian's libdrm yet) */
struct gem_op_618 {
	uint32_t handle, op;
	uint64_t value;
	uint32_t num_entries, padding;
};
struct gem_vm_entry_618 {
	uint64_t addr, size, offset, flags;
};
#define GEM_OP_GET_MAPPING_INFO 2

int gem_handle_size(int render_fd, uint32_t handle, uint64_t *size)
{
	struct drm_amdgpu_gem_create_in info = {0};
	struct drm_amdgpu_gem_op op = {.handle = handle,
				       .op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
				       .value = (uintptr_t)&info};

	int ret = drmCommandWriteRead(render_fd, DRM_AMDGPU_GEM_OP, &op, sizeof(op));

	if (ret)
		return ret;
	*size = info.bo_size;
	return 0;
}

int gem_handle_mapping(int render_fd, uint32_t handle, struct gem_mapping *m)
{
	struct gem_vm_entry_618 e[2] = {{0}};
	struct gem_op_618 op = {.handle = handle,
				.op = GEM_OP_GET_MAPPING_INFO,
				.value = (uintptr_t)e,
				.num_entries = 2};
	int ret = drmCommandWriteRead(render_fd, DRM_AMDGPU_GEM_OP, &op, sizeof(op));

	if (ret)
		return ret < 0 ? ret : -EIO;
	if (op.num_entries != 1)
		return -ERANGE;
	*m = (struct gem_mapping){
		.addr = e[0].addr, .size = e[0].size, .offset = e[0].offset, .flags = e[0].flags};
	return 0;
}

int gem_import_handle(int render_fd, int dmabuf_fd, uint32_t *handle)
{
	return drmPrimeFDToHandle(render_fd, dmabuf_fd, handle) ? -errno : 0;
}

int gem_bo_unmap_va(struct gem_bo *b)
{
	int ret;

	if (!b->va)
		return -ENOENT;
	ret = amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_UNMAP);
	if (!ret)
		b->va = 0;
	return ret;
}

int gem_bo_export(struct gem_bo *b, int *dmabuf_fd)
{
	uint32_t fd;
	int ret = amdgpu_bo_export(b->bo, amdgpu_bo_handle_type_dma_buf_fd, &fd);

	if (!ret)
		*dmabuf_fd = (int)fd;
	return ret;
}
