/* SPDX-License-Identifier: MIT */
/*
 * amdgpu's debugfs file dri/<minor>/amdgpu_gem_info: every open DRM file of
 * the device, headed "pid %8d command %s:" (the DRM core's file->pid, the
 * last process that used the file, as a pid of the initial namespace),
 * then one line per GEM handle of that file, "\t\t0x%08x: %12lld byte
 * PLACEMENT ...". It lists handles a probe cannot reach, on every kernel
 * that has it (amdgpu_debugfs_gem_info_show(), 4.x to 6.18): before 6.18
 * the only exact count of a file's GEM handles (render_audit.h).
 */
#ifndef AMDGPU_CRIU_GEM_INFO_H
#define AMDGPU_CRIU_GEM_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct gem_info_count {
	uint32_t files;	  /* open files headed with the pid */
	uint32_t handles; /* their GEM handles */
	uint64_t bytes;
};

/* Which files count: those whose header pid this says yes to. */
typedef bool (*gem_info_owner_fn)(void *arg, long pid);

/* Counts the counted files and their handles in the text of f. 0, or -EINVAL for a line it cannot
 * read. */
int gem_info_count(FILE *f, gem_info_owner_fn owner, void *arg, struct gem_info_count *out);

/* The same from <debugfs>/dri/<minor>/amdgpu_gem_info; -errno when it cannot be opened. */
int gem_info_read(const char *debugfs, uint32_t minor, gem_info_owner_fn owner, void *arg,
		  struct gem_info_count *out);

#endif
