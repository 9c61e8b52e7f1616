// SPDX-License-Identifier: MIT
/*
 * The BO contents files of every process image and of every render file's
 * GEM BOs are there and whole (index checksum, sizes, parent chain), so
 * that a missing or cut file is refused before anything is restored; each
 * chunk's checksum is verified while the contents are written (ckpt.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "checkpoint/ckpt.h"
#include "common/errmsg.h"
#include "datapath/bo_stream.h"

/* The saved contents' sizes of one GPU of a process image, in image order. */
static uint32_t gpu_content_sizes(const KfdProcessEntry *e, uint32_t user_gpu_id, uint64_t *sizes)
{
	uint32_t n = 0;

	for (size_t b = 0; b < e->n_bos; b++)
		if (e->bos[b]->gpu_id == user_gpu_id && kfd_bo_contents_saved(e->bos[b]))
			sizes[n++] = e->bos[b]->size;
	return n;
}

static int check_process(const struct ckpt *ck, const struct kfd_process_image *img, char *err,
			 size_t errlen)
{
	const KfdProcessEntry *e = img->entry;
	uint64_t *sizes = calloc(e->n_bos + 1, sizeof(*sizes));
	char why[512];
	int ret = sizes ? 0 : errmsg_set(err, errlen, -ENOMEM, "out of memory");

	for (size_t d = 0; !ret && d < e->n_devices; d++) {
		uint32_t user = e->devices[d]->user_gpu_id;

		if (!img->device_bo_count[d])
			continue;
		ret = bo_stream_check_files(ck->dir_fd, img->id, user, sizes,
					    gpu_content_sizes(e, user, sizes), why, sizeof(why));
		if (ret)
			errmsg_set(err, errlen, ret, "checkpoint file %u (pid %u): BO contents: %s",
				   img->id, e->pid, why);
	}
	free(sizes);
	return ret;
}

static int check_render(const struct ckpt *ck, const struct render_file_image *r, char *err,
			size_t errlen)
{
	const RenderFileEntry *e = r->entry;
	uint64_t *sizes;
	char why[512];
	int ret;

	if (!e->n_gem_bos)
		return 0;
	sizes = render_file_gem_sizes(e);
	if (!sizes)
		return errmsg_set(err, errlen, -ENOMEM, "out of memory");
	ret = bo_stream_check_files(ck->dir_fd, r->id, e->actual_gpu_id, sizes,
				    (uint32_t)e->n_gem_bos, why, sizeof(why));
	if (ret)
		errmsg_set(err, errlen, ret, "render file %u: GEM BO contents: %s", r->id, why);
	free(sizes);
	return ret;
}

int ckpt_check_contents(const struct ckpt *ck, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < ck->n_procs; i++)
		ret = check_process(ck, &ck->procs[i], err, errlen);
	for (size_t i = 0; !ret && i < ck->n_renders; i++)
		ret = check_render(ck, &ck->renders[i], err, errlen);
	return ret;
}
