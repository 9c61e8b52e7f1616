// SPDX-License-Identifier: GPL-2.0
/*
 * libdrm_amdgpu on kfdsim's render nodes: for every GPU node of the KFD
 * topology, amdgpu_device_initialize() on /dev/dri/renderD<drm_render_minor>
 * succeeds and what libdrm reports (amdgpu_query_gpu_info(), heap info,
 * DEV_INFO's VA range) agrees with the node's sysfs properties; and the
 * GEM and GPU VM ioctls of the plugin's SDMA path work through libdrm_amdgpu
 * itself: a GTT BO's CPU mapping round trip, a userptr BO, GEM_VA map/unmap
 * with amdgpu_vm_bo_map()'s refusals, a BO list; Linux 6.18's GEM uAPI for
 * CRIU on the drm_uapi=618 flavour (GET_MAPPING_INFO, GEM_CHANGE_HANDLE;
 * both -EINVAL on 6.12). TAP.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <xf86drm.h>
#include "tap.h"

#define TOPO "/sys/class/kfd/kfd/topology/nodes"
#define GPUVM_LIMIT (1ULL << 47)	/* KFD apertures: gpuvm_limit + 1 */

struct props {
	uint64_t device_id, simd_count, simd_per_cu, array_count;
	uint64_t simd_arrays_per_engine, cu_per_simd_array, num_xcc;
	uint64_t drm_render_minor, gfx_target_version, vram;
	int has_minor;
};

static int read_props(const char *path, struct props *p, const char *want,
		      uint64_t *out)
{
	char key[64];
	unsigned long long v;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (want) {
			if (!strcmp(key, want))
				*out = v;
			continue;
		}
#define P(name) if (!strcmp(key, #name)) p->name = v
		P(device_id);
		P(simd_count);
		P(simd_per_cu);
		P(array_count);
		P(simd_arrays_per_engine);
		P(cu_per_simd_array);
		P(num_xcc);
		P(gfx_target_version);
#undef P
		if (!strcmp(key, "drm_render_minor")) {
			p->drm_render_minor = v;
			p->has_minor = 1;
		}
	}
	fclose(f);
	return 0;
}

/* the first FB heap (heap_type 1 public, 2 private) of the node */
static uint64_t node_vram(const char *node)
{
	char path[512];
	uint64_t type, size;
	int i;

	for (i = 0;; i++) {
		snprintf(path, sizeof(path), "%s/mem_banks/%d/properties", node, i);
		if (access(path, R_OK))
			return 0;
		type = size = 0;
		read_props(path, NULL, "heap_type", &type);
		read_props(path, NULL, "size_in_bytes", &size);
		if (type == 1 || type == 2)
			return size;
	}
}

#define BO_SIZE (64 * 1024)
#define VA_BASE (1ULL << 32)	/* above the 64 KiB reserved bottom, below the hole */

static int va_raw(amdgpu_device_handle dev, amdgpu_bo_handle bo, uint64_t off, uint64_t size,
		  uint64_t va, uint32_t op)
{
	return amdgpu_bo_va_op_raw(dev, bo, off, size, va,
				   AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE, op);
}

/* GEM_CREATE, GEM_MMAP: what the CPU writes through one mapping, another reads. */
static amdgpu_bo_handle gtt_round_trip(amdgpu_device_handle dev, const char *path)
{
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = BO_SIZE, .phys_alignment = 4096,
		.preferred_heap = AMDGPU_GEM_DOMAIN_GTT,
	};
	amdgpu_bo_handle bo;
	unsigned int i, bad = 0;
	uint32_t *cpu;
	int r;

	r = amdgpu_bo_alloc(dev, &req, &bo);
	if (!ok(r == 0, "%s: amdgpu_bo_alloc GTT %d KiB (%d)", path, BO_SIZE / 1024, r))
		return NULL;
	r = amdgpu_bo_cpu_map(bo, (void **)&cpu);
	if (ok(r == 0, "%s: amdgpu_bo_cpu_map (%d)", path, r)) {
		for (i = 0; i < BO_SIZE / 4; i++)
			cpu[i] = i * 2654435761u;
		amdgpu_bo_cpu_unmap(bo);
	}
	/* a second mapping of the same fake offset sees the pages the first wrote */
	r = amdgpu_bo_cpu_map(bo, (void **)&cpu);
	if (ok(r == 0, "%s: amdgpu_bo_cpu_map again (%d)", path, r)) {
		for (i = 0; i < BO_SIZE / 4; i++)
			bad += cpu[i] != i * 2654435761u;
		ok(!bad, "%s: GTT BO round trip through two CPU mappings (%u dwords wrong)", path,
		   bad);
		amdgpu_bo_cpu_unmap(bo);
	}
	return bo;
}

/* GEM_VA as amdgpu_vm_bo_map()/amdgpu_gem_va_ioctl() check it. */
static void va_cases(amdgpu_device_handle dev, amdgpu_bo_handle bo, const char *path)
{
	int r;

	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE, AMDGPU_VA_OP_MAP);
	ok(r == 0, "%s: GEM_VA MAP at 0x%llx (%d)", path, VA_BASE, r);
	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE + 2 * BO_SIZE + 256, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP at a VA not 4 KiB aligned: -EINVAL (%d)", path, r);
	r = va_raw(dev, bo, 256, BO_SIZE - 4096, VA_BASE + 2 * BO_SIZE, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP at an offset not 4 KiB aligned: -EINVAL (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE + 4096, VA_BASE + 2 * BO_SIZE, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP past the BO's end: -EINVAL (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE + BO_SIZE / 2, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP overlapping a mapping: -EINVAL (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE, 0x1000, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP in the reserved first 64 KiB: -EINVAL (%d)", path, r);
	/* the hole's first page: below 2^48 - the reserved top, so only the hole check refuses */
	r = va_raw(dev, bo, 0, BO_SIZE, 1ULL << 47, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP at 2^47, in the hole: -EINVAL (%d)", path, r);
	/* the high half's last 64 KiB: 48 bits once sign bits are dropped, in the reserved top */
	r = va_raw(dev, bo, 0, BO_SIZE, 0ULL - BO_SIZE, AMDGPU_VA_OP_MAP);
	ok(r == -EINVAL, "%s: MAP in the reserved top of the VA space: -EINVAL (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE, AMDGPU_VA_OP_UNMAP);
	ok(r == 0, "%s: GEM_VA UNMAP (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE, AMDGPU_VA_OP_UNMAP);
	ok(r == -ENOENT, "%s: UNMAP of what is not mapped: -ENOENT (%d)", path, r);
	r = va_raw(dev, bo, 0, BO_SIZE, VA_BASE + BO_SIZE / 2, AMDGPU_VA_OP_MAP);
	ok(r == 0, "%s: the range is free again: MAP (%d)", path, r);
	r = amdgpu_bo_va_op(bo, 0, BO_SIZE, VA_BASE + BO_SIZE / 2, 0, AMDGPU_VA_OP_UNMAP);
	ok(r == 0, "%s: amdgpu_bo_va_op UNMAP (%d)", path, r);
}

/* GEM_USERPTR of this process's anonymous pages, mapped and unmapped; a BO list of both. */
static void userptr_and_list(amdgpu_device_handle dev, amdgpu_bo_handle gtt, const char *path)
{
	amdgpu_bo_handle user = NULL, bos[2];
	amdgpu_bo_list_handle list;
	void *mem;
	int r;

	mem = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ok(mem != MAP_FAILED, "%s: mmap %d KiB", path, BO_SIZE / 1024))
		return;
	r = amdgpu_create_bo_from_user_mem(dev, mem, BO_SIZE, &user);
	ok(r == 0, "%s: amdgpu_create_bo_from_user_mem (%d)", path, r);
	if (r)
		goto out;
	r = amdgpu_bo_va_op(user, 0, BO_SIZE, VA_BASE + 4 * BO_SIZE, 0, AMDGPU_VA_OP_MAP);
	ok(r == 0, "%s: userptr BO: GEM_VA MAP (%d)", path, r);
	r = amdgpu_bo_va_op(user, 0, BO_SIZE, VA_BASE + 4 * BO_SIZE, 0, AMDGPU_VA_OP_UNMAP);
	ok(r == 0, "%s: userptr BO: GEM_VA UNMAP (%d)", path, r);

	bos[0] = gtt;
	bos[1] = user;
	r = amdgpu_bo_list_create(dev, 2, bos, NULL, &list);
	ok(r == 0, "%s: amdgpu_bo_list_create of 2 BOs (%d)", path, r);
	if (!r) {
		r = amdgpu_bo_list_update(list, 1, bos, NULL);
		ok(r == 0, "%s: amdgpu_bo_list_update (%d)", path, r);
		r = amdgpu_bo_list_destroy(list);
		ok(r == 0, "%s: amdgpu_bo_list_destroy (%d)", path, r);
	}
	r = amdgpu_bo_free(user);
	ok(r == 0, "%s: userptr BO freed (%d)", path, r);
out:
	munmap(mem, BO_SIZE);
}

/*
 * Linux 6.18's GEM uAPI for CRIU, absent from this libdrm's headers: the
 * grown GEM_OP argument with GET_MAPPING_INFO, and the core
 * GEM_CHANGE_HANDLE (kfdsim's drm_uapi=618 flavour, gem_criu.c).
 */
struct gem_op_618 {
	uint32_t handle, op;
	uint64_t value;
	uint32_t num_entries, padding;
};
struct gem_vm_entry {
	uint64_t addr, size, offset, flags;
};
struct gem_change_handle {
	uint32_t handle, new_handle;
};
#define IOCTL_GEM_OP_618	 DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct gem_op_618)
#define IOCTL_GEM_CHANGE_HANDLE	 DRM_IOWR(0xD2, struct gem_change_handle)
#define GEM_OP_GET_MAPPING_INFO	 2
#define VM_PAGE_READ_WRITE	 (AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE)
#define UAPI_PARAM		 "/sys/module/amdgpu_kfdsim/parameters/drm_uapi"

static int set_uapi(const char *v)
{
	int fd = open(UAPI_PARAM, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, v, strlen(v)) == (ssize_t)strlen(v) ? 0 : -errno;
	close(fd);
	return ret;
}

static int raw(int fd, unsigned long req, void *arg)
{
	return drmIoctl(fd, req, arg) ? -errno : 0;
}

static uint32_t gem_new(int fd)
{
	union drm_amdgpu_gem_create c = {.in = {.bo_size = BO_SIZE,
						.alignment = 4096,
						.domains = AMDGPU_GEM_DOMAIN_GTT}};

	return raw(fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &c) ? 0 : c.out.handle;
}

static int mapping_info(int fd, uint32_t handle, struct gem_vm_entry *e, uint32_t cap,
			uint32_t *n)
{
	struct gem_op_618 op = {.handle = handle, .op = GEM_OP_GET_MAPPING_INFO,
				.value = (uintptr_t)e, .num_entries = cap};
	int r = raw(fd, IOCTL_GEM_OP_618, &op);

	*n = op.num_entries;
	return r;
}

static int change_handle(int fd, uint32_t handle, uint32_t new_handle)
{
	struct gem_change_handle c = {.handle = handle, .new_handle = new_handle};

	return raw(fd, IOCTL_GEM_CHANGE_HANDLE, &c);
}

static void gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = {.handle = handle};

	raw(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

static void uapi_618(int fd, const char *path)
{
	struct drm_amdgpu_gem_va va = {.operation = AMDGPU_VA_OP_MAP,
				       .flags = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE,
				       .va_address = VA_BASE + (1ULL << 24),
				       .map_size = BO_SIZE};
	struct gem_vm_entry e[2] = {0};
	uint32_t h = gem_new(fd), h2 = gem_new(fd), n = 0;
	int r;

	if (!ok(h && h2, "%s: 6.18 uAPI: two GEM BOs (%u, %u)", path, h, h2))
		return;
	va.handle = h;
	ok(raw(fd, DRM_IOCTL_AMDGPU_GEM_VA, &va) == 0, "%s: 6.18 uAPI: GEM_VA MAP", path);
	r = mapping_info(fd, h, e, 1, &n);
	ok(r == -EINVAL, "%s: 6.12 flavour: GEM_OP GET_MAPPING_INFO -EINVAL (%d)", path, r);
	r = change_handle(fd, h, 1000);
	ok(r == -EINVAL, "%s: 6.12 flavour: GEM_CHANGE_HANDLE -EINVAL (%d)", path, r);
	if (!ok(set_uapi("618") == 0, "%s: kfdsim switched to 6.18", path))
		goto out;
	r = mapping_info(fd, h, NULL, 0, &n);
	ok(r == 0 && n == 1, "%s: GET_MAPPING_INFO with no room: the count, 1 (%d, %u)", path, r,
	   n);
	r = mapping_info(fd, h, e, 2, &n);
	ok(r == 0 && n == 1 && e[0].addr == va.va_address && e[0].size == BO_SIZE &&
		   e[0].offset == 0 && e[0].flags == VM_PAGE_READ_WRITE,
	   "%s: GET_MAPPING_INFO: addr 0x%llx size %llu offset %llu flags 0x%llx (GEM_VA's) "
	   "(%d)",
	   path, (unsigned long long)e[0].addr, (unsigned long long)e[0].size,
	   (unsigned long long)e[0].offset, (unsigned long long)e[0].flags, r);
	r = mapping_info(fd, h2, e, 2, &n);
	ok(r == 0 && n == 0, "%s: GET_MAPPING_INFO of an unmapped BO: 0 (%d, %u)", path, r, n);
	r = change_handle(fd, h, 1000);
	ok(r == 0, "%s: GEM_CHANGE_HANDLE %u -> 1000 (%d)", path, h, r);
	r = mapping_info(fd, h, e, 2, &n);
	ok(r == -ENOENT, "%s: the old handle is gone: -ENOENT (%d)", path, r);
	r = mapping_info(fd, 1000, e, 2, &n);
	ok(r == 0 && n == 1 && e[0].addr == va.va_address,
	   "%s: the object keeps its mapping under handle 1000 (%d, %u)", path, r, n);
	r = change_handle(fd, 1000, 1000);
	ok(r == 0, "%s: CHANGE_HANDLE to itself: a no-op (%d)", path, r);
	r = change_handle(fd, 1000, h2);
	ok(r == -ENOSPC, "%s: CHANGE_HANDLE to a handle in use: -ENOSPC (%d)", path, r);
	r = change_handle(fd, 1000, 0x80000000u);
	ok(r == -EINVAL, "%s: CHANGE_HANDLE past INT_MAX: -EINVAL (%d)", path, r);
	r = change_handle(fd, 4242, 4243);
	ok(r == -ENOENT, "%s: CHANGE_HANDLE of no object: -ENOENT (%d)", path, r);
	h = 1000;
	ok(set_uapi("612") == 0, "%s: kfdsim back to 6.12", path);
out:
	va.handle = h;
	va.operation = AMDGPU_VA_OP_UNMAP;
	raw(fd, DRM_IOCTL_AMDGPU_GEM_VA, &va);
	gem_close(fd, h);
	gem_close(fd, h2);
}

static void test_gem(amdgpu_device_handle dev, const char *path)
{
	amdgpu_bo_handle bo = gtt_round_trip(dev, path);

	if (!bo)
		return;
	va_cases(dev, bo, path);
	userptr_and_list(dev, bo, path);
	ok(amdgpu_bo_free(bo) == 0, "%s: GTT BO freed", path);
	uapi_618(amdgpu_device_get_fd(dev), path);
}

static void test_node(const char *node, const struct props *p)
{
	uint32_t major = 0, minor = 0, hi = 0;
	struct drm_amdgpu_info_device di;
	struct amdgpu_heap_info heap;
	struct amdgpu_gpu_info gi;
	amdgpu_device_handle dev;
	uint64_t xcc = p->num_xcc ? p->num_xcc : 1;
	char path[64];
	uint32_t dummy;
	int fd, r;

	snprintf(path, sizeof(path), "/dev/dri/renderD%" PRIu64, p->drm_render_minor);
	diag("%s: %s, device_id 0x%" PRIx64 ", gfx_target_version %" PRIu64,
	     node, path, p->device_id, p->gfx_target_version);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (!ok(fd >= 0, "%s: open", path)) {
		diag("%s", strerror(errno));
		return;
	}
	r = amdgpu_device_initialize(fd, &major, &minor, &dev);
	if (!ok(r == 0 && major == 3, "%s: amdgpu_device_initialize (%d, DRM %u.%u)",
		path, r, major, minor)) {
		close(fd);
		return;
	}

	r = amdgpu_query_gpu_info(dev, &gi);
	ok(r == 0 && gi.asic_id == p->device_id && gi.family_id >= AMDGPU_FAMILY_CI,
	   "%s: gpu_info asic_id 0x%x == device_id, family %u", path, gi.asic_id,
	   gi.family_id);
	ok(gi.cu_active_number * p->simd_per_cu == p->simd_count,
	   "%s: cu_active_number %u * simd_per_cu %" PRIu64 " == simd_count %" PRIu64,
	   path, gi.cu_active_number, p->simd_per_cu, p->simd_count);
	ok(gi.num_shader_engines * gi.num_shader_arrays_per_engine * xcc == p->array_count &&
	   gi.num_shader_arrays_per_engine == p->simd_arrays_per_engine,
	   "%s: %u SEs x %u SHs x %" PRIu64 " XCCs == array_count %" PRIu64, path,
	   gi.num_shader_engines, gi.num_shader_arrays_per_engine, xcc, p->array_count);

	memset(&heap, 0, sizeof(heap));
	r = amdgpu_query_heap_info(dev, AMDGPU_GEM_DOMAIN_VRAM, 0, &heap);
	ok(r == 0 && heap.heap_size == p->vram && heap.heap_usage <= heap.heap_size,
	   "%s: VRAM heap %" PRIu64 " == mem_banks size %" PRIu64 " (used %" PRIu64 ")",
	   path, (uint64_t)heap.heap_size, p->vram, (uint64_t)heap.heap_usage);
	r = amdgpu_query_heap_info(dev, AMDGPU_GEM_DOMAIN_GTT, 0, &heap);
	ok(r == 0 && heap.heap_size > 0, "%s: GTT heap %" PRIu64, path,
	   (uint64_t)heap.heap_size);

	memset(&di, 0, sizeof(di));
	r = amdgpu_query_info(dev, AMDGPU_INFO_DEV_INFO, sizeof(di), &di);
	ok(r == 0 && di.virtual_address_offset < di.virtual_address_max &&
	   di.virtual_address_max == GPUVM_LIMIT && di.cu_active_number == gi.cu_active_number,
	   "%s: DEV_INFO VA [0x%llx, 0x%llx) ends at the KFD gpuvm_limit + 1", path,
	   (unsigned long long)di.virtual_address_offset,
	   (unsigned long long)di.virtual_address_max);
	r = amdgpu_query_sw_info(dev, amdgpu_sw_info_address32_hi, &hi);
	ok(r == 0 && hi, "%s: sw_info address32_hi 0x%x (high VA range set up)", path, hi);
	r = amdgpu_query_info(dev, 0xff, sizeof(dummy), &dummy);
	ok(r == -EINVAL, "%s: unknown AMDGPU_INFO query: -EINVAL (%d)", path, r);
	test_gem(dev, path);

	r = amdgpu_device_deinitialize(dev);
	ok(r == 0, "%s: amdgpu_device_deinitialize", path);
	close(fd);
}

int main(void)
{
	struct dirent **ents;
	int i, n, gpus = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	n = scandir(TOPO, &ents, NULL, versionsort);
	if (n < 0) {
		ok(0, "%s: %s", TOPO, strerror(errno));
		return tap_done();
	}
	for (i = 0; i < n; i++) {
		char node[300], path[400];
		uint64_t gpu_id = 0;
		struct props p = { 0 };

		if (ents[i]->d_name[0] == '.')
			goto next;
		snprintf(node, sizeof(node), "%s/%s", TOPO, ents[i]->d_name);
		snprintf(path, sizeof(path), "%s/gpu_id", node);
		{
			FILE *f = fopen(path, "r");

			if (f) {
				if (fscanf(f, "%" SCNu64, &gpu_id) != 1)
					gpu_id = 0;
				fclose(f);
			}
		}
		snprintf(path, sizeof(path), "%s/properties", node);
		if (!gpu_id || read_props(path, &p, NULL, NULL) || !p.has_minor ||
		    !p.drm_render_minor)
			goto next;
		p.vram = node_vram(node);
		gpus++;
		test_node(node, &p);
next:
		free(ents[i]);
	}
	free(ents);
	ok(gpus > 0, "%d GPU nodes with a render node", gpus);
	return tap_done();
}
