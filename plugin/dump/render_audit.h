/* SPDX-License-Identifier: MIT */
/*
 * GPU memory on render-node files that the dump would not save.
 *
 * The plugin checkpoints KFD's BOs. A render-node file can also hold BOs of
 * its own (GEM: GEM_CREATE, GEM_USERPTR, PRIME imports; Mesa and
 * libdrm_amdgpu users make them), which KFD's CHECKPOINT does not report.
 * Where the kernel cannot list them (before 6.18) the plugin cannot save
 * them, and a process that has any must not be dumped: its checkpoint
 * would restore without them, silently.
 *
 * Before CRIU dumps any file (its CHECKPOINT_DEVICES hook, once per task of
 * the frozen tree), every render-node fd of a KFD GPU is audited:
 * - its GEM handles, counted exactly: Linux 6.18's GEM_LIST_HANDLES, or
 *   before it GEM_OP GET_GEM_CREATE_INFO on handles 1..probe_limit (the DRM
 *   core gives the lowest free handle, so a file never had a live handle
 *   above that unless it once held that many at the same time);
 * - amdgpu's fdinfo memory figures (drm-total-* from 6.13, drm-memory-*
 *   before), which count every BO in the file's GPU VM: its GEM BOs, KFD's
 *   BOs mapped there, page tables and KFD's own few pages.
 * - before 6.18, what the probe cannot reach: amdgpu's debugfs
 *   amdgpu_gem_info (gem_info.h). The DRM core names a file after its last
 *   user, and the audit's ioctls make that CRIU, so the files it names
 *   after us are the dumped tasks' own; unreadable, the task is refused
 *   unless AMDGPU_CRIU_GEM_CENSUS=probe.
 * A file with GEM handles refuses the dump at once, unless the kernel lists
 * them (6.18): the dump then saves them (gem_dump.h), except PRIME imports of
 * another device's buffers, which are refused; their bytes count as the
 * file's own in the figures below. The figures catch what
 * the probe cannot see: a file of a task without KFD must hold no more than
 * the allowance; a file of a KFD process is compared, when that process's
 * /dev/kfd is dumped, against the KFD BOs mapped on its GPU
 * (render_audit_check_kfd()).
 * The file is reached with pidfd_getfd(), which gives the task's own open
 * file (GEM handles belong to the open file, not to the device).
 */
#ifndef AMDGPU_CRIU_RENDER_AUDIT_H
#define AMDGPU_CRIU_RENDER_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "options/options.h"
#include "plugin/gem_list.h"

/* Handles probed without GEM_LIST_HANDLES (AMDGPU_CRIU_GEM_PROBE overrides). */
#define RENDER_AUDIT_PROBE_DEFAULT 4096u

enum drm_region { DRM_REGION_CPU, DRM_REGION_GTT, DRM_REGION_VRAM, DRM_REGION_COUNT };

/* What a DRM file's fdinfo says. */
struct drm_fdinfo {
	char driver[32];
	uint64_t client_id;
	bool has_client_id;
	bool has_memory;		  /* any drm-total-* or drm-memory-* line */
	uint64_t bytes[DRM_REGION_COUNT]; /* drm-total-*, else drm-memory-* */
};

/* Parses fdinfo text (a NUL-terminated copy). 0, or -EINVAL for a malformed memory line. */
int drm_fdinfo_parse(const char *text, struct drm_fdinfo *out);

static inline uint64_t drm_fdinfo_total(const struct drm_fdinfo *f)
{
	return f->bytes[DRM_REGION_CPU] + f->bytes[DRM_REGION_GTT] + f->bytes[DRM_REGION_VRAM];
}

/* The GEM BOs of one open render-node file. */
struct gem_census {
	bool listed;	   /* GEM_LIST_HANDLES answered: exact */
	uint32_t probed;   /* else: handles 1..probed were asked */
	uint32_t handles;  /* GEM handles found */
	uint64_t bytes;	   /* their sizes */
	uint32_t imported; /* of them, PRIME imports (6.18 tells) */
};

int gem_census_take(int fd, render_ioctl_fn ioctl_fn, uint32_t probe_limit, struct gem_census *out);

/*
 * Bytes of page tables and KFD's own BOs that a VM may hold beside the BOs
 * it maps: 64 KiB, plus 4 KiB per directory and table level entry that the
 * mappings [va, va+size) touch (2 MiB tables, 1 GiB and 512 GiB
 * directories, as amdgpu's four-level tables), counted per mapping.
 */
uint64_t render_audit_allowance(const uint64_t *va, const uint64_t *size, size_t n);

/* One audited render-node file. */
struct render_audit_file {
	pid_t pid;    /* CRIU's pid of the task */
	pid_t ns_pid; /* the task's pid in its own namespace (what KFD reports) */
	int fd;
	uint32_t minor, gpu_id;
	struct drm_fdinfo info;
	struct gem_census gem;
	bool checked; /* compared with its KFD process already */
};

/*
 * How GEM handles beyond the probe are counted before 6.18
 * (AMDGPU_CRIU_GEM_CENSUS): "debugfs" (default) reads amdgpu's
 * amdgpu_gem_info (gem_info.h) under AMDGPU_CRIU_DEBUGFS (default
 * /sys/kernel/debug), and a task it cannot count is refused; "probe"
 * accepts the probe's reach (handles above it, unmapped, go unseen).
 */

struct render_audit {
	struct render_audit_file *files;
	size_t n, cap;
	uint32_t probe_limit;
	const char *proc; /* "/proc"; a test's directory */
	render_ioctl_fn ioctl_fn;
	enum render_census census;
	const char *debugfs; /* where debugfs is mounted */
};

/* What a character device is to the plugin: RENDER_AUDIT_{NONE,KFD,RENDER} (and its GPU). */
enum { RENDER_AUDIT_NONE, RENDER_AUDIT_KFD, RENDER_AUDIT_RENDER };
typedef int (*render_classify_fn)(void *arg, dev_t rdev, uint32_t *gpu_id);

/* Reads the environment; -EINVAL with a line in err for a value that means nothing. */
void render_audit_init(struct render_audit *a, const struct amdgpu_options *o);
void render_audit_fini(struct render_audit *a);

/*
 * Audits every render-node fd of task `pid`. 0; -EPERM with a line in err
 * when a file holds GPU memory the dump would lose (GEM handles the kernel
 * does not list, found by the probe or, for the task's files of each GPU,
 * in amdgpu_gem_info; or, for a task without /dev/kfd, fdinfo figures
 * above the allowance of an empty VM); other -errno when the task could
 * not be audited (also a refusal: the dump cannot know). A file seen
 * before (same DRM client id, e.g. inherited over fork) is audited once.
 */
int render_audit_task(struct render_audit *a, pid_t pid, render_classify_fn classify, void *arg,
		      char *err, size_t errlen);

/*
 * For the KFD process `ns_pid` (PROCESS_INFO's pid), on its GPU `gpu_id`:
 * `kfd_bytes` of KFD BOs mapped there (an AQL queue BO twice) and the
 * allowance of their mappings. -EPERM with a line in err when one of the
 * task's render files of that GPU holds more.
 */
int render_audit_check_kfd(struct render_audit *a, pid_t ns_pid, uint32_t gpu_id,
			   uint64_t kfd_bytes, uint64_t allowance, char *err, size_t errlen);

#endif
