// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kfd_ioctl.h"

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

void kfd_bo_buckets_close_dmabufs(struct kfd_criu_bo_bucket *bos, uint32_t n)
{
	uint32_t i;

	for (i = 0; bos && i < n; i++) {
		if (bos[i].dmabuf_fd != KFD_NO_DMABUF_FD)
			close((int)bos[i].dmabuf_fd);
		bos[i].dmabuf_fd = KFD_NO_DMABUF_FD;
	}
}
