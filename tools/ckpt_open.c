// SPDX-License-Identifier: MIT
/*
 * The tool's checkpoint commands open a directory's checkpoint through the
 * library the restore uses (checkpoint/ckpt.h), so that they refuse what
 * the restore refuses, with its line, prefixed with the command and the
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/ckpt.h"

int tool_ckpt_open(const char *cmd, const char *dir, struct ckpt *ck)
{
	char err[1024];
	int fd, ret;

	*ck = (struct ckpt){.dir = dir, .dir_fd = -1};
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		cli_err("%s: cannot open image directory %s: %s", cmd, dir, strerror(-ret));
		return ret;
	}
	ret = ckpt_load(fd, ck, err, sizeof(err));
	if (ret)
		cli_err("%s: %s: %s", cmd, dir, err);
	else if (!ckpt_has_gpus(ck)) {
		cli_err("%s: %s holds no amdgpu-kfd-*.img or amdgpu-render-*.img image", cmd, dir);
		ret = -ENOENT;
	}
	if (ret) {
		ckpt_free(ck);
		close(fd);
		ck->dir_fd = -1;
	}
	return ret;
}

void tool_ckpt_close(struct ckpt *ck)
{
	ckpt_free(ck);
	if (ck->dir_fd >= 0)
		close(ck->dir_fd);
	ck->dir_fd = -1;
}

int tool_ckpt_source(const char *cmd, const struct ckpt *ck, struct ckpt_source *src)
{
	char err[1024];
	int ret = ckpt_source_build(ck, src, err, sizeof(err));

	if (ret)
		cli_err("%s: %s: %s", cmd, ck->dir, err);
	return ret;
}

int tool_ckpt_contents(const char *cmd, const struct ckpt *ck)
{
	char err[1024];
	int ret = ckpt_check_contents(ck, err, sizeof(err));

	if (ret)
		cli_err("%s: %s: %s", cmd, ck->dir, err);
	return ret;
}
