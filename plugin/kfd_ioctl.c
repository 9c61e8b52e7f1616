// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "plugin/kfd_ioctl.h"

static int do_ioctl(int fd, unsigned long request, void *arg, int retries)
{
	int attempt;

	for (attempt = 0;; attempt++) {
		if (!ioctl(fd, request, arg))
			return 0;
		if ((errno != EINTR && errno != EAGAIN) || attempt >= retries)
			return -errno;
	}
}

int kfd_get_version(int kfd_fd, uint32_t *major, uint32_t *minor)
{
	struct kfd_ioctl_get_version_args args = {0};
	int ret = do_ioctl(kfd_fd, AMDKFD_IOC_GET_VERSION, &args, KFD_IOCTL_RETRIES);

	if (ret)
		return ret;
	*major = args.major_version;
	*minor = args.minor_version;
	return 0;
}

static int restart_safe(uint32_t op)
{
	return op == KFD_CRIU_OP_PROCESS_INFO || op == KFD_CRIU_OP_CHECKPOINT ||
	       op == KFD_CRIU_OP_UNPAUSE;
}

int kfd_criu_op(int kfd_fd, struct kfd_ioctl_criu_args *args)
{
	return do_ioctl(kfd_fd, AMDKFD_IOC_CRIU_OP, args,
			restart_safe(args->op) ? KFD_IOCTL_RETRIES : 0);
}

const char *kfd_criu_op_name(uint32_t op)
{
	switch (op) {
	case KFD_CRIU_OP_PROCESS_INFO:
		return "PROCESS_INFO";
	case KFD_CRIU_OP_CHECKPOINT:
		return "CHECKPOINT";
	case KFD_CRIU_OP_UNPAUSE:
		return "UNPAUSE";
	case KFD_CRIU_OP_RESTORE:
		return "RESTORE";
	case KFD_CRIU_OP_RESUME:
		return "RESUME";
	default:
		return "?";
	}
}

int kfd_alloc_memory(int kfd_fd, struct kfd_ioctl_alloc_memory_of_gpu_args *args)
{
	return do_ioctl(kfd_fd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, args, KFD_IOCTL_RETRIES);
}

int kfd_free_memory(int kfd_fd, uint64_t handle)
{
	struct kfd_ioctl_free_memory_of_gpu_args args = {.handle = handle};

	return do_ioctl(kfd_fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &args, KFD_IOCTL_RETRIES);
}

int kfd_import_dmabuf(int kfd_fd, struct kfd_ioctl_import_dmabuf_args *args)
{
	return do_ioctl(kfd_fd, AMDKFD_IOC_IMPORT_DMABUF, args, KFD_IOCTL_RETRIES);
}

int kfd_map_memory(int kfd_fd, uint64_t handle, uint32_t *ids, uint32_t n, bool map)
{
	struct kfd_ioctl_map_memory_to_gpu_args args = {
		.handle = handle, .device_ids_array_ptr = (uintptr_t)ids, .n_devices = n};
	unsigned long request =
		map ? AMDKFD_IOC_MAP_MEMORY_TO_GPU : AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU;
	int attempt, ret;

	if (!n)
		return 0;
	for (attempt = 0;; attempt++) {
		ret = do_ioctl(kfd_fd, request, &args, KFD_IOCTL_RETRIES);
		if (ret || args.n_success >= n || attempt >= KFD_IOCTL_RETRIES)
			break;
	}
	return ret ? ret : args.n_success == n ? 0 : -EIO;
}

int kfd_dmabuf_gpu(int kfd_fd, int dmabuf_fd, uint32_t *gpu_id)
{
	struct kfd_ioctl_get_dmabuf_info_args args = {.dmabuf_fd = (uint32_t)dmabuf_fd};
	int ret = do_ioctl(kfd_fd, AMDKFD_IOC_GET_DMABUF_INFO, &args, KFD_IOCTL_RETRIES);

	if (!ret)
		*gpu_id = args.gpu_id;
	return ret;
}

void kfd_bo_buckets_close_dmabufs(struct kfd_criu_bo_bucket *bos, uint32_t n)
{
	uint32_t i;

	for (i = 0; bos && i < n; i++) {
		if (bos[i].dmabuf_fd != KFD_NO_DMABUF_FD)
			close((int)bos[i].dmabuf_fd);
		bos[i].dmabuf_fd = KFD_NO_DMABUF_FD;
	}
}
