/* SPDX-License-Identifier: MIT */
/*
 * Render-node files of one restored task, one per local GPU (render minor).
 *
 * The file given to RESTORE as a GPU's drm_fd becomes the owner of its VM,
 * and only that file (or a dup) may map the GPU's BOs. So the application's
 * own render fd for that GPU, the drm_fd and the VMA restores must all use
 * one file: whichever comes first opens it, the others share it.
 *
 * Our own fds sit at high numbers (RENDER_FD_BASE or half the fd limit,
 * whichever is lower) so that the application's fds, restored at their old
 * numbers, cannot land on them, and are close-on-exec. Once CRIU has
 * installed the application's copy, render_fd_for_mapping() hands that copy
 * out instead (found with kcmp(KCMP_FILE)) and closes ours, so the restored
 * application keeps no fd it did not have.
 */
#ifndef AMDGPU_CRIU_RENDER_FDS_H
#define AMDGPU_CRIU_RENDER_FDS_H

#include <stdbool.h>
#include <stdint.h>

#define RENDER_FD_BASE 4096
#define RENDER_FDS_MAX 128

struct render_fd {
	uint32_t minor;
	int fd;
	bool ours; /* false: borrowed from the application (do not close) */
};

struct render_fds {
	struct render_fd items[RENDER_FDS_MAX];
	unsigned int n;
	bool create_nodes; /* AMDGPU_CRIU_DEV_NODES=create: dev_nodes.h */
};

/*
 * The task's file for /dev/dri/renderD<minor>, opened on first use (created
 * in a restored /dev that lacks it: dev_nodes.h). fd or -errno.
 */
int render_fd_get(struct render_fds *t, uint32_t minor);

/* A fd of the same file for a mapping: the application's if it has one. */
int render_fd_for_mapping(struct render_fds *t, uint32_t minor);

/*
 * Once the application's fds are all in place (the first UPDATE_VMA_MAP):
 * our files that the application also has become borrowed (ours closed);
 * our files no mapping needs (needed(minor, arg) false) are closed, the
 * GPU's VM keeps its own reference. So the application keeps only its fds.
 */
void render_fds_settle(struct render_fds *t, bool (*needed)(uint32_t minor, void *arg), void *arg);

/* Closes our own fds (not borrowed ones). */
void render_fds_close(struct render_fds *t);

/* Moves fd to a number >= the high base, close-on-exec; returns it or -errno. */
int render_fd_move_high(int fd);

#endif
