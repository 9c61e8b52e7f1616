// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/restore/kfd_probe.h"
#include "plugin/log.h"
#include "images/priv_blob.h"
#include "plugin/restore/dev_nodes.h"

#define PROBE_BO_SIZE  4096ull
#define PROBE_VA_ALIGN (2ull << 20)

static int kfd_call(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg) ? -errno : 0;
}

/* The GPUVM aperture of gpu_id in this KFD process (which must have a VM there). */
static int gpuvm_aperture(int kfd_fd, uint32_t gpu_id, uint64_t *base, uint64_t *limit)
{
	struct kfd_ioctl_get_process_apertures_new_args a = {0};
	struct kfd_process_device_apertures *ap = NULL;
	uint32_t i;
	int ret;

	ret = kfd_call(kfd_fd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a); /* the count */
	if (ret)
		return ret;
	if (!a.num_of_nodes)
		return -ENODEV;
	ap = calloc(a.num_of_nodes, sizeof(*ap));
	if (!ap)
		return -ENOMEM;
	a.kfd_process_device_apertures_ptr = (uintptr_t)ap;
	ret = kfd_call(kfd_fd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
	if (ret)
		goto out;
	ret = -ENODEV;
	for (i = 0; i < a.num_of_nodes; i++) {
		if (ap[i].gpu_id == gpu_id) {
			*base = ap[i].gpuvm_base;
			*limit = ap[i].gpuvm_limit;
			ret = 0;
			break;
		}
	}
out:
	free(ap);
	return ret;
}

int kfd_probe_bo_record(int kfd_fd, uint32_t gpu_id, uint32_t render_minor, uint32_t *record,
			char *err, size_t errlen)
{
	struct kfd_ioctl_criu_args info = {.op = KFD_CRIU_OP_PROCESS_INFO};
	struct kfd_ioctl_criu_args unpause = {.op = KFD_CRIU_OP_UNPAUSE};
	struct kfd_ioctl_alloc_memory_of_gpu_args alloc = {0};
	struct kfd_ioctl_acquire_vm_args acquire = {.gpu_id = gpu_id};
	uint64_t base = 0, limit = 0;
	bool allocated = false, paused = false;
	int drm_fd, ret, undo;

	drm_fd = render_node_open(render_minor);
	if (drm_fd < 0)
		return errmsg_set(err, errlen, drm_fd, "cannot open renderD%u: %s", render_minor,
				  strerror(-drm_fd));
	acquire.drm_fd = (uint32_t)drm_fd;
	ret = kfd_call(kfd_fd, AMDKFD_IOC_ACQUIRE_VM, &acquire);
	if (ret) {
		errmsg_set(err, errlen, ret, "ACQUIRE_VM of GPU %u: %s", gpu_id, strerror(-ret));
		goto out;
	}
	ret = gpuvm_aperture(kfd_fd, gpu_id, &base, &limit);
	if (ret) {
		errmsg_set(err, errlen, ret, "GPUVM aperture of GPU %u: %s", gpu_id,
			   strerror(-ret));
		goto out;
	}
	/* above the base: KFD does not checkpoint BOs at or below it */
	alloc.va_addr = (base + PROBE_VA_ALIGN) & ~(PROBE_VA_ALIGN - 1);
	if (alloc.va_addr < base || alloc.va_addr + PROBE_BO_SIZE - 1 > limit) {
		ret = errmsg_set(err, errlen, -ERANGE,
				 "GPU %u: no room for a BO in its GPUVM aperture 0x%llx-0x%llx",
				 gpu_id, (unsigned long long)base, (unsigned long long)limit);
		goto out;
	}
	alloc.size = PROBE_BO_SIZE;
	alloc.gpu_id = gpu_id;
	alloc.flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
	ret = kfd_call(kfd_fd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &alloc);
	if (ret) {
		errmsg_set(err, errlen, ret, "ALLOC_MEMORY_OF_GPU (4 KiB GTT on GPU %u): %s",
			   gpu_id, strerror(-ret));
		goto out;
	}
	allocated = true;
	ret = kfd_criu_op(kfd_fd, &info);
	if (ret) {
		errmsg_set(err, errlen, ret, "PROCESS_INFO of our own KFD process: %s",
			   strerror(-ret));
		goto out;
	}
	paused = true;
	*record = info.num_bos == 1
			  ? priv_blob_bo_record_from_info(info.priv_data_size, info.num_devices, 1,
							  info.num_objects)
			  : 0;
	if (!*record)
		ret = errmsg_set(err, errlen, -EPROTO,
				 "PROCESS_INFO of one BO and no object says %u BOs, %u objects, %u "
				 "devices, %llu bytes: no 80- or 272-byte BO records",
				 info.num_bos, info.num_objects, info.num_devices,
				 (unsigned long long)info.priv_data_size);
out:
	/* undo failures leave our own process paused or holding 4 KiB: the
	 * measurement stands, so they are only logged */
	if (paused) {
		undo = kfd_criu_op(kfd_fd, &unpause);
		if (undo)
			pr_warn("layout probe: UNPAUSE of our own KFD process: %s",
				strerror(-undo));
	}
	if (allocated) {
		struct kfd_ioctl_free_memory_of_gpu_args f = {.handle = alloc.handle};

		undo = kfd_call(kfd_fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
		if (undo)
			pr_warn("layout probe: FREE_MEMORY_OF_GPU: %s", strerror(-undo));
	}
	close(drm_fd);
	return ret;
}
