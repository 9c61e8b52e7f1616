// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath/bo_stream.h"
#include "images/ckpt_complete.h"
#include "common/errmsg.h"
#include "images/kfd_image.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int ckpt_check_complete(int dir_fd, char *err, size_t errlen)
{
	char kfd_name[KFD_IMAGE_NAME_MAX];
	struct dirent *de;
	uint32_t id, *ids = NULL;
	size_t n_ids;
	int fd, ret = 0;
	DIR *dir;

	/*
	 * The listing's own refusals first (an id with leading zeros): else a
	 * lone amdgpu-kfd-01.img would be reported as BO contents missing
	 * amdgpu-kfd-1.img, a file the user does not have.
	 */
	ret = kfd_image_list(dir_fd, KFD_IMAGE_PROCESS, &ids, &n_ids, err, errlen);
	free(ids);
	if (ret)
		return ret;
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errmsg_set(err, errlen, -errno, "cannot read the image directory: %s",
				  strerror(errno));
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		close(fd);
		return errmsg_set(err, errlen, ret, "cannot read the image directory: %s",
				  strerror(-ret));
	}
	while (!ret && (de = readdir(dir))) {
		if (!strncmp(de->d_name, "amdgpu-", 7) &&
		    ends_with(de->d_name, KFD_IMAGE_PART_SUFFIX)) {
			ret = errmsg_set(err, errlen, -ENODATA,
					 "incomplete checkpoint: %s is an image the dump never "
					 "finished writing (the dump was cut short): dump again",
					 de->d_name);
			break;
		}
		/* contents of a KFD process or of a render file's GEM BOs */
		if (bo_stream_file_image_id(de->d_name, &id) ||
		    kfd_image_exists(dir_fd, KFD_IMAGE_PROCESS, id) != -ENOENT ||
		    kfd_image_exists(dir_fd, KFD_IMAGE_RENDER, id) != -ENOENT)
			continue;
		kfd_image_name(kfd_name, sizeof(kfd_name), KFD_IMAGE_PROCESS, id);
		ret = errmsg_set(err, errlen, -ENODATA,
				 "incomplete checkpoint: %s has no %s (nor amdgpu-render-%u.img), "
				 "which the dump writes last (the dump was cut short): dump again",
				 de->d_name, kfd_name, id);
	}
	closedir(dir);
	return ret;
}
