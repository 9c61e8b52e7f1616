// SPDX-License-Identifier: MIT
/*
 * Loading every plugin image of a CRIU image directory for the checkpoint
 * commands. Each image is validated by its loader (images/kfd_image.c); the
 * first bad one ends the command with the loader's one-line message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "images/ckpt_complete.h"
#include "tools/cli.h"
#include "tools/ckpt.h"

static int load_procs(const char *cmd, struct ckpt *ck, const uint32_t *ids, size_t n)
{
	char err[1024];
	int ret;

	ck->procs = calloc(n ? n : 1, sizeof(*ck->procs));
	if (!ck->procs) {
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ret = kfd_process_image_load(ck->dir_fd, ids[i], &ck->procs[i], err, sizeof(err));
		if (ret) {
			cli_err("%s: %s: %s", cmd, ck->dir, err);
			return ret;
		}
		ck->n_procs++;
	}
	return 0;
}

static int load_renders(const char *cmd, struct ckpt *ck, const uint32_t *ids, size_t n)
{
	char err[1024];
	int ret;

	ck->renders = calloc(n ? n : 1, sizeof(*ck->renders));
	if (!ck->renders) {
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ret = render_file_image_load(ck->dir_fd, ids[i], &ck->renders[i], err, sizeof(err));
		if (ret) {
			cli_err("%s: %s: %s", cmd, ck->dir, err);
			return ret;
		}
		ck->n_renders++;
	}
	return 0;
}

static int list_images(const char *cmd, struct ckpt *ck, enum kfd_image_kind kind, uint32_t **ids,
		       size_t *n)
{
	char err[512];
	int ret = kfd_image_list(ck->dir_fd, kind, ids, n, err, sizeof(err));

	if (ret)
		cli_err("%s: %s: %s", cmd, ck->dir, err);
	return ret;
}

static int load_hsakmt(const char *cmd, struct ckpt *ck)
{
	char err[512];
	int ret;

	ret = list_images(cmd, ck, KFD_IMAGE_HSAKMT, &ck->hsakmt_pids, &ck->n_hsakmt);
	if (ret)
		return ret;
	ck->hsakmt = calloc(ck->n_hsakmt ? ck->n_hsakmt : 1, sizeof(*ck->hsakmt));
	if (!ck->hsakmt) {
		ck->n_hsakmt = 0;
		cli_err("%s: out of memory", cmd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ck->n_hsakmt; i++) {
		ret = hsakmt_files_image_load(ck->dir_fd, ck->hsakmt_pids[i], &ck->hsakmt[i], err,
					      sizeof(err));
		if (ret) {
			cli_err("%s: %s: %s", cmd, ck->dir, err);
			return ret;
		}
	}
	return 0;
}

static int load_all(const char *cmd, struct ckpt *ck)
{
	uint32_t *proc_ids = NULL, *render_ids = NULL;
	size_t n_proc = 0, n_render = 0;
	char err[1024];
	int ret;

	ret = ckpt_check_complete(ck->dir_fd, err, sizeof(err));
	if (ret) {
		cli_err("%s: %s: %s", cmd, ck->dir, err);
		return ret;
	}
	ret = list_images(cmd, ck, KFD_IMAGE_PROCESS, &proc_ids, &n_proc);
	ret = ret ?: list_images(cmd, ck, KFD_IMAGE_RENDER, &render_ids, &n_render);
	if (!ret && !n_proc && !n_render) {
		cli_err("%s: %s holds no amdgpu-kfd-*.img or amdgpu-render-*.img image", cmd,
			ck->dir);
		ret = -ENOENT;
	}
	ret = ret ?: load_procs(cmd, ck, proc_ids, n_proc);
	ret = ret ?: load_renders(cmd, ck, render_ids, n_render);
	ret = ret ?: load_hsakmt(cmd, ck);
	free(proc_ids);
	free(render_ids);
	return ret;
}

int ckpt_load(const char *cmd, const char *dir, struct ckpt *ck)
{
	int ret;

	*ck = (struct ckpt){.dir = dir};
	ck->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ck->dir_fd < 0) {
		ret = -errno;
		cli_err("%s: cannot open image directory %s: %s", cmd, dir, strerror(-ret));
		return ret;
	}
	ret = load_all(cmd, ck);
	if (ret)
		ckpt_free(ck);
	return ret;
}

void ckpt_free(struct ckpt *ck)
{
	for (size_t i = 0; i < ck->n_procs; i++)
		kfd_process_image_free(&ck->procs[i]);
	for (size_t i = 0; i < ck->n_renders; i++)
		render_file_image_free(&ck->renders[i]);
	for (size_t i = 0; i < ck->n_hsakmt; i++)
		if (ck->hsakmt[i])
			hsakmt_files_entry__free_unpacked(ck->hsakmt[i], NULL);
	free(ck->procs);
	free(ck->renders);
	free(ck->hsakmt);
	free(ck->hsakmt_pids);
	if (ck->dir_fd >= 0)
		close(ck->dir_fd);
	*ck = (struct ckpt){.dir_fd = -1};
}
