/* SPDX-License-Identifier: MIT */
/*
 * Which local GPUs a restore may use, as the operator names them
 * (AMDGPU_CRIU_GPUS), for runtimes whose device cgroup is not in place
 * while CRIU restores: crun installs a container's device filter only after
 * the restore, so the plugin would otherwise see, and may choose, every GPU
 * of the node (runc puts CRIU into the container's cgroup first, and the
 * cgroup alone then hides the other GPUs); and for orchestrators that know a
 * GPU by a stable identity (a device plugin or DRA driver: its PCI address),
 * as render minors and gpu_ids may change across reboots.
 *
 * The value: GPUs separated by commas, spaces or tabs, each
 *   - a render node: "renderD130" or "/dev/dri/renderD130" (a DRM minor);
 *   - a KFD gpu_id: decimal without a leading zero, or hex with 0x;
 *   - a PCI address: "0000:c1:00.0" (domain of 4 to 8 hex digits, bus,
 *     device, function; "c1:00.0" for domain 0), as KFD shows the node (a
 *     partition adds its index to the function);
 *   - a KFD unique_id: 16 hex digits, with or without 0x (amdgpu's sysfs
 *     unique_id), naming every partition of that device;
 * digits and nothing else (no sign, no other white space, no second 0x).
 * Unset or empty: every GPU. At most GPU_SELECT_MAX entries of each kind. A
 * refusal shows the value escaped (common/escape.h).
 */
#ifndef AMDGPU_CRIU_GPU_SELECT_H
#define AMDGPU_CRIU_GPU_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_SELECT_ENV "AMDGPU_CRIU_GPUS"
#define GPU_SELECT_MAX 128

struct gpu_select_pci {
	uint32_t domain;
	uint32_t location_id; /* KFD's: bus << 8 | device << 3 | function */
};

struct gpu_select {
	unsigned int n_minors, n_gpu_ids, n_pcis, n_unique_ids;
	uint32_t minors[GPU_SELECT_MAX];
	uint32_t gpu_ids[GPU_SELECT_MAX];
	struct gpu_select_pci pcis[GPU_SELECT_MAX];
	uint64_t unique_ids[GPU_SELECT_MAX];
};

/* What a GPU is known by (gpu_select_identity() of a KFD node). */
struct gpu_identity {
	uint32_t gpu_id, render_minor, domain, location_id;
	uint64_t unique_id; /* 0: none */
};

/* Parses text (NULL: every GPU). 0, or -EINVAL with one line in err. */
int gpu_select_parse(struct gpu_select *sel, const char *text, char *err, size_t errlen);

/* No GPU named: every GPU may be used. */
bool gpu_select_all(const struct gpu_select *sel);

/* May this GPU be used? */
bool gpu_select_allows(const struct gpu_select *sel, const struct gpu_identity *id);

struct kfd_node;
struct kfd_topology;
struct gpu_identity gpu_select_identity(const struct kfd_node *g);

/*
 * The topology's GPUs sel allows: node indexes into out (room for
 * t->n_nodes) of the accessible GPU nodes with a gpu_id and a render minor;
 * their count. *unnamed (if not NULL) gets the number of such GPUs sel
 * leaves out.
 */
size_t gpu_select_nodes(const struct gpu_select *sel, const struct kfd_topology *t, uint32_t *out,
			size_t *unnamed);

/*
 * Every entry of sel names a GPU of t (one gpu_select_nodes() counts): 0, or
 * -ENODEV with one line in err naming the first entry that names none, its
 * property and value, and the values of that property t's GPUs have.
 */
int gpu_select_check(const struct gpu_select *sel, const struct kfd_topology *t, char *err,
		     size_t errlen);

#endif
