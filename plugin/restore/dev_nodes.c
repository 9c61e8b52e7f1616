// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "plugin/restore/dev_nodes.h"
#include "plugin/kfd_dev.h"
#include "plugin/log.h"

int render_node_open_at(const char *dir, uint32_t minor)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/renderD%u", dir, minor);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* the name proves nothing: a /dev restored from a checkpoint keeps old nodes */
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode) || major(st.st_rdev) != DRM_MAJOR ||
	    minor(st.st_rdev) != minor) {
		close(fd);
		return -ENXIO;
	}
	return fd;
}

int render_node_open(uint32_t minor)
{
	return render_node_open_at("/dev/dri", minor);
}

const char *render_node_hint(int err)
{
	switch (err) {
	case -ENOENT:
		return ": this /dev has no node for that GPU; give the process the GPU's "
		       "render node (a container: its device list)";
	case -ENXIO:
		return ": the node of that name is another device (a /dev restored from the "
		       "checkpoint keeps the old GPUs' nodes); give the process the GPU's own "
		       "render node";
	case -EPERM:
	case -EACCES:
		return ": a device cgroup or the node's mode denies it";
	default:
		return "";
	}
}

/*
 * dir_fd/name made character device rdev with tmpl's mode and owner (mknod
 * applies the umask; the owner may be a render group); 0 or -errno, and
 * nothing left on failure.
 */
static int mknod_as(int dir_fd, const char *name, dev_t rdev, const struct stat *tmpl)
{
	int ret;

	if (mknodat(dir_fd, name, S_IFCHR | (tmpl->st_mode & 07777), rdev))
		return -errno;
	if (!fchmodat(dir_fd, name, tmpl->st_mode & 07777, 0) &&
	    !fchownat(dir_fd, name, tmpl->st_uid, tmpl->st_gid, AT_SYMLINK_NOFOLLOW))
		return 0;
	ret = -errno;
	unlinkat(dir_fd, name, 0);
	return ret;
}

/* Mode and owner of a render node in dir, to give a new one the same. */
static void node_template(int dir_fd, struct stat *tmpl)
{
	DIR *d = fdopendir(dup(dir_fd));
	struct dirent *de;
	struct stat st;

	memset(tmpl, 0, sizeof(*tmpl));
	tmpl->st_mode = 0666;
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "renderD", 7) ||
		    fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISCHR(st.st_mode) ||
		    major(st.st_rdev) != DRM_MAJOR)
			continue;
		tmpl->st_mode = st.st_mode & 07777;
		tmpl->st_uid = st.st_uid;
		tmpl->st_gid = st.st_gid;
		break;
	}
	closedir(d);
}

int render_node_create_at(const char *dir, uint32_t minor)
{
	char name[32];
	struct stat tmpl;
	int dir_fd, ret = 0;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -errno;
	node_template(dir_fd, &tmpl);
	snprintf(name, sizeof(name), "renderD%u", minor);
	ret = mknod_as(dir_fd, name, makedev(DRM_MAJOR, minor), &tmpl);
	if (ret)
		goto out;
	pr_info("created %s/%s (character device %u:%u, mode %04o, owner %u:%u): this restored "
		"/dev had no node for the GPU chosen (it holds the checkpoint's nodes)",
		dir, name, DRM_MAJOR, minor, (unsigned int)(tmpl.st_mode & 07777),
		(unsigned int)tmpl.st_uid, (unsigned int)tmpl.st_gid);
out:
	close(dir_fd);
	return ret;
}

int render_node_open_task(uint32_t minor, bool create)
{
	int fd = render_node_open(minor), ret;

	if (fd != -ENOENT || !create)
		return fd;
	ret = render_node_create_at("/dev/dri", minor);
	if (ret) {
		pr_err("/dev/dri/renderD%u is missing and cannot be created: %s; give the restored "
		       "process that GPU's render node",
		       minor, strerror(-ret));
		return -ENOENT;
	}
	return render_node_open(minor);
}

/* Mode and owner to give a replaced node: the old one's (0666 root if none). */
static void kfd_node_template(const struct stat *old, bool exists, struct stat *tmpl)
{
	memset(tmpl, 0, sizeof(*tmpl));
	tmpl->st_mode = 0666;
	if (!exists)
		return;
	tmpl->st_mode = old->st_mode & 07777;
	tmpl->st_uid = old->st_uid;
	tmpl->st_gid = old->st_gid;
}

/* path replaced by character device rdev (a new name, then rename over it). */
static int kfd_node_replace(const char *path, dev_t rdev, const struct stat *tmpl)
{
	char tmp[PATH_MAX];
	int ret;

	snprintf(tmp, sizeof(tmp), "%s.amdgpu-criu-%d", path, (int)getpid());
	ret = mknod_as(AT_FDCWD, tmp, rdev, tmpl);
	if (ret)
		return ret;
	if (!rename(tmp, path))
		return 0;
	ret = -errno;
	unlink(tmp);
	return ret;
}

int kfd_node_prepare_at(const char *path, dev_t kfd_rdev, bool create)
{
	struct stat st, tmpl;
	bool exists = !lstat(path, &st);
	int ret;

	if (exists && S_ISCHR(st.st_mode) && st.st_rdev == kfd_rdev)
		return 0;
	if (exists && !S_ISCHR(st.st_mode)) {
		pr_err("%s is not a character device; give the restored process the KFD node "
		       "(%u:%u)",
		       path, major(kfd_rdev), minor(kfd_rdev));
		return -ENXIO;
	}
	if (!create) {
		pr_err("%s is %s, and this host's KFD is %u:%u (%s=keep); give the restored "
		       "process "
		       "the KFD node",
		       path, exists ? "another device" : "missing", major(kfd_rdev),
		       minor(kfd_rdev), DEV_NODES_ENV);
		return exists ? -ENXIO : -ENOENT;
	}
	kfd_node_template(&st, exists, &tmpl);
	ret = kfd_node_replace(path, kfd_rdev, &tmpl);
	if (ret) {
		pr_err("%s is %s and cannot be made this host's KFD node (%u:%u): %s", path,
		       exists ? "another device" : "missing", major(kfd_rdev), minor(kfd_rdev),
		       strerror(-ret));
		return ret;
	}
	if (exists)
		pr_info("replaced %s (%u:%u, the checkpoint host's?) by this host's KFD node "
			"(%u:%u, mode %04o): a restored /dev holds the checkpoint's nodes",
			path, major(st.st_rdev), minor(st.st_rdev), major(kfd_rdev),
			minor(kfd_rdev), (unsigned int)(tmpl.st_mode & 07777));
	else
		pr_info("created %s (%u:%u, mode %04o): the restored /dev had none", path,
			major(kfd_rdev), minor(kfd_rdev), (unsigned int)(tmpl.st_mode & 07777));
	return 0;
}

static int kfd_node_open(const char *path)
{
	int fd = open(path, O_RDWR), ret;

	if (fd >= 0)
		return fd;
	ret = -errno;
	pr_err("cannot open %s in the restored task: %s", path, strerror(-ret));
	return ret;
}

int kfd_node_open_at(const char *path, dev_t kfd_rdev, bool create)
{
	struct stat st;
	int fd, ret = kfd_node_prepare_at(path, kfd_rdev, create);

	if (ret)
		return ret;
	fd = kfd_node_open(path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != kfd_rdev) {
		close(fd);
		pr_err("%s changed while it was opened; not this host's KFD", path);
		return -ENXIO;
	}
	return fd;
}

/* This host's KFD device number, from sysfs (not from a /dev that may be restored). */
static int kfd_sysfs_rdev(dev_t *rdev)
{
	unsigned int maj, min;
	FILE *f = fopen(KFD_SYSFS_DEV, "re");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%u:%u", &maj, &min);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*rdev = makedev(maj, min);
	return 0;
}

int kfd_node_prepare_task(bool create)
{
	dev_t rdev = 0;

	/* no KFD in sysfs (a fake one): nothing to check the node against */
	return kfd_sysfs_rdev(&rdev) ? 0 : kfd_node_prepare_at(KFD_DEVICE_PATH, rdev, create);
}

int kfd_node_open_task(bool create)
{
	dev_t rdev = 0;

	return kfd_sysfs_rdev(&rdev) ? kfd_node_open(KFD_DEVICE_PATH)
				     : kfd_node_open_at(KFD_DEVICE_PATH, rdev, create);
}
