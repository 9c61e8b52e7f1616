// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plugin/kfd_dev.h"
#include "plugin/kfd_ioctl.h"

static pthread_mutex_t kfd_lock = PTHREAD_MUTEX_INITIALIZER;
static int kfd_fd = -1;
static unsigned int kfd_refs;

int kfd_dev_get(void)
{
	int ret;

	pthread_mutex_lock(&kfd_lock);
	if (kfd_fd < 0) {
		kfd_fd = open(KFD_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		if (kfd_fd < 0) {
			ret = -errno;
			pthread_mutex_unlock(&kfd_lock);
			return ret;
		}
	}
	kfd_refs++;
	ret = kfd_fd;
	pthread_mutex_unlock(&kfd_lock);
	return ret;
}

void kfd_dev_put(void)
{
	pthread_mutex_lock(&kfd_lock);
	if (kfd_refs && !--kfd_refs) {
		close(kfd_fd);
		kfd_fd = -1;
	}
	pthread_mutex_unlock(&kfd_lock);
}

int kfd_dev_rdev(dev_t *rdev)
{
	struct stat st;

	if (stat(KFD_DEVICE_PATH, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENODEV;
	*rdev = st.st_rdev;
	return 0;
}

bool kfd_is_render_rdev(dev_t rdev)
{
	return major(rdev) == DRM_MAJOR && minor(rdev) >= DRM_RENDER_BASE;
}

int kfd_dev_check_version(uint32_t *major_out, uint32_t *minor_out, char *err, size_t errlen)
{
	uint32_t maj = 0, min = 0;
	int fd = kfd_dev_get(), ret;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", KFD_DEVICE_PATH, strerror(-fd));
		return fd;
	}
	ret = kfd_get_version(fd, &maj, &min);
	kfd_dev_put();
	if (ret) {
		snprintf(err, errlen, "KFD GET_VERSION failed: %s", strerror(-ret));
		return ret;
	}
	if (maj != KFD_CRIU_MIN_MAJOR || min < KFD_CRIU_MIN_MINOR) {
		snprintf(err, errlen,
			 "KFD %u.%u is too old for checkpoint/restore (needs %u.%u, Linux 5.19 or "
			 "later): upgrade the kernel or amdgpu DKMS driver",
			 maj, min, KFD_CRIU_MIN_MAJOR, KFD_CRIU_MIN_MINOR);
		return -EOPNOTSUPP;
	}
	*major_out = maj;
	*minor_out = min;
	return 0;
}
