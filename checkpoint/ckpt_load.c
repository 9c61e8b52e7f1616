// SPDX-License-Identifier: MIT
/*
 * Loading every plugin image of a CRIU image directory (ckpt.h). Each image
 * is validated by its loader (images/kfd_image.c); the first bad one ends
 * the load with the loader's one-line message.
 */
#include <errno.h>
#include <stdlib.h>

#include "checkpoint/ckpt.h"
#include "common/errmsg.h"
#include "images/ckpt_complete.h"

static int load_procs(struct ckpt *ck, const uint32_t *ids, size_t n, char *err, size_t errlen)
{
	ck->procs = calloc(n ? n : 1, sizeof(*ck->procs));
	if (!ck->procs)
		return errmsg_set(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int ret = kfd_process_image_load(ck->dir_fd, ids[i], &ck->procs[i], err, errlen);

		if (ret)
			return ret;
		ck->n_procs++;
	}
	return 0;
}

static int load_renders(struct ckpt *ck, const uint32_t *ids, size_t n, char *err, size_t errlen)
{
	ck->renders = calloc(n ? n : 1, sizeof(*ck->renders));
	if (!ck->renders)
		return errmsg_set(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int ret = render_file_image_load(ck->dir_fd, ids[i], &ck->renders[i], err, errlen);

		if (ret)
			return ret;
		ck->n_renders++;
	}
	return 0;
}

static int load_dmabufs(struct ckpt *ck, char *err, size_t errlen)
{
	uint32_t *ids = NULL;
	size_t n = 0;
	int ret = kfd_image_list(ck->dir_fd, KFD_IMAGE_DMABUF, &ids, &n, err, errlen);

	if (ret)
		return ret;
	ck->dmabufs = calloc(n + 1, sizeof(*ck->dmabufs));
	ret = ck->dmabufs ? 0 : errmsg_set(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < n; i++) {
		ret = dmabuf_file_image_load(ck->dir_fd, ids[i], &ck->dmabufs[i], err, errlen);
		if (!ret)
			ck->n_dmabufs++;
	}
	free(ids);
	return ret;
}

/* The restore creates the files a libhsakmt image names where missing: these two only. */
static const char *const hsakmt_names[2] = {
	KFD_IMAGE_HSAKMT_SHM_DIR "/" KFD_IMAGE_HSAKMT_SHM_NAME,
	KFD_IMAGE_HSAKMT_SHM_DIR "/" KFD_IMAGE_HSAKMT_SEM_NAME,
};

static int load_hsakmt(struct ckpt *ck, char *err, size_t errlen)
{
	int ret = kfd_image_list(ck->dir_fd, KFD_IMAGE_HSAKMT, &ck->hsakmt_pids, &ck->n_hsakmt, err,
				 errlen);

	if (ret)
		return ret;
	ck->hsakmt = calloc(ck->n_hsakmt ? ck->n_hsakmt : 1, sizeof(*ck->hsakmt));
	if (!ck->hsakmt) {
		ck->n_hsakmt = 0;
		return errmsg_set(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < ck->n_hsakmt; i++) {
		ret = hsakmt_files_image_load(ck->dir_fd, ck->hsakmt_pids[i], &ck->hsakmt[i], err,
					      errlen);
		ret = ret
			      ?: hsakmt_files_check_names(ck->hsakmt[i], ck->hsakmt_pids[i],
							  hsakmt_names, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int load_all(struct ckpt *ck, char *err, size_t errlen)
{
	uint32_t *proc_ids = NULL, *render_ids = NULL;
	size_t n_proc = 0, n_render = 0;
	int ret;

	ret = ckpt_check_complete(ck->dir_fd, err, errlen);
	ret = ret ?: kfd_image_list(ck->dir_fd, KFD_IMAGE_PROCESS, &proc_ids, &n_proc, err, errlen);
	ret = ret
		      ?: kfd_image_list(ck->dir_fd, KFD_IMAGE_RENDER, &render_ids, &n_render, err,
					errlen);
	ret = ret ?: load_procs(ck, proc_ids, n_proc, err, errlen);
	ret = ret ?: load_renders(ck, render_ids, n_render, err, errlen);
	ret = ret ?: load_dmabufs(ck, err, errlen);
	ret = ret ?: load_hsakmt(ck, err, errlen);
	free(proc_ids);
	free(render_ids);
	return ret;
}

int ckpt_load(int dir_fd, struct ckpt *ck, char *err, size_t errlen)
{
	const char *dir = ck->dir;
	int ret;

	*ck = (struct ckpt){.dir = dir, .dir_fd = dir_fd};
	ret = load_all(ck, err, errlen);
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
	for (size_t i = 0; i < ck->n_dmabufs; i++)
		dmabuf_file_image_free(&ck->dmabufs[i]);
	for (size_t i = 0; i < ck->n_hsakmt; i++)
		if (ck->hsakmt[i])
			hsakmt_files_entry__free_unpacked(ck->hsakmt[i], NULL);
	free(ck->procs);
	free(ck->renders);
	free(ck->dmabufs);
	free(ck->hsakmt);
	free(ck->hsakmt_pids);
	*ck = (struct ckpt){.dir = ck->dir, .dir_fd = ck->dir_fd};
}
