// SPDX-License-Identifier: MIT
/*
 * kfdprobe: asks the real /dev/kfd (amdgpu's KFD, in a VM with no AMD GPU)
 * for its interface version and the number of GPU nodes of this process.
 * Prints "version MAJOR.MINOR" and "gpu_nodes N", one per line, for the
 * guest test to assert on; exits non-zero if an ioctl fails.
 *
 * Built against the guest kernel's own uapi <linux/kfd_ioctl.h> (from the
 * unpacked linux-headers-*-common), not the host's older copy, so the probe
 * speaks exactly the interface of the kernel it runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfd_ioctl.h>

int main(void)
{
	int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("open /dev/kfd: %s\n", strerror(errno));
		return 1;
	}
	struct kfd_ioctl_get_version_args v = { 0 };
	if (ioctl(fd, AMDKFD_IOC_GET_VERSION, &v) != 0) {
		printf("GET_VERSION: %s\n", strerror(errno));
		return 1;
	}
	printf("version %u.%u\n", v.major_version, v.minor_version);
	/* With num_of_nodes 0 the driver only reports how many nodes there are. */
	struct kfd_ioctl_get_process_apertures_new_args a = { 0 };
	if (ioctl(fd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a) != 0) {
		printf("GET_PROCESS_APERTURES_NEW: %s\n", strerror(errno));
		return 1;
	}
	printf("gpu_nodes %u\n", a.num_of_nodes);
	close(fd);
	return 0;
}
