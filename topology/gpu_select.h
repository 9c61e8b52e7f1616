/* SPDX-License-Identifier: MIT */
/*
 * Which local GPUs a restore may use, as the operator names them
 * (AMDGPU_CRIU_GPUS), for runtimes whose device cgroup is not in place
 * while CRIU restores: crun installs a container's device filter only after
 * the restore, so the plugin would otherwise see, and may choose, every GPU
 * of the node (runc puts CRIU into the container's cgroup first, and the
 * cgroup alone then hides the other GPUs).
 *
 * The value: GPUs separated by commas, spaces or tabs, each a render node
 * ("renderD130" or "/dev/dri/renderD130", a DRM render minor) or a KFD
 * gpu_id (decimal without a leading zero, or hex with 0x), its digits and
 * nothing else (no sign, no other white space, no second 0x). Unset or
 * empty: every GPU. At most GPU_SELECT_MAX entries. A refusal shows the
 * value escaped (common/escape.h).
 */
#ifndef AMDGPU_CRIU_GPU_SELECT_H
#define AMDGPU_CRIU_GPU_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_SELECT_ENV "AMDGPU_CRIU_GPUS"
#define GPU_SELECT_MAX 128

struct gpu_select {
	unsigned int n_minors, n_gpu_ids;
	uint32_t minors[GPU_SELECT_MAX];
	uint32_t gpu_ids[GPU_SELECT_MAX];
};

/* Parses text (NULL: every GPU). 0, or -EINVAL with one line in err. */
int gpu_select_parse(struct gpu_select *sel, const char *text, char *err, size_t errlen);

/* No GPU named: every GPU may be used. */
bool gpu_select_all(const struct gpu_select *sel);

/* May the GPU with this gpu_id and render minor be used? */
bool gpu_select_allows(const struct gpu_select *sel, uint32_t gpu_id, uint32_t render_minor);

/*
 * The topology's GPUs sel allows: node indexes into out (room for
 * t->n_nodes) of the accessible GPU nodes with a gpu_id and a render minor;
 * their count. *unnamed (if not NULL) gets the number of such GPUs sel
 * leaves out.
 */
struct kfd_topology;
size_t gpu_select_nodes(const struct gpu_select *sel, const struct kfd_topology *t, uint32_t *out,
			size_t *unnamed);

#endif
