/* SPDX-License-Identifier: MIT */
/*
 * libhsakmt's shared files: what the plugin does about them, and why.
 *
 * libhsakmt (ROCm's thunk, every ROCr/HIP process) creates two files in
 * hsaKmtOpenKFD and keeps them mapped until hsaKmtCloseKFD:
 *   /dev/shm/hsakmt_shared_mem     shm_open, 8 bytes (a magic and a count of
 *                                  IOMMUv2 perf-counter slots), fd kept open
 *   /dev/shm/sem.hsakmt_semaphore  sem_open: glibc writes a temporary
 *                                  sem.XXXXXX, links it to that name and
 *                                  unlinks the temporary name
 * and hsaKmtCloseKFD unlinks both names, even while other processes still
 * use them. Two problems follow for CRIU, which treats them as ordinary
 * tmpfs files:
 *   - the process that created the semaphore maps it by the temporary name,
 *     which is deleted while the inode lives on under the real name: CRIU
 *     refuses the dump ("Can't create link remap ... Use link-remap
 *     option"), and --link-remap only moves the problem to the restore (the
 *     link it makes is gone on another node or after a reboot);
 *   - a restore where the names do not exist (another node, a reboot, any
 *     thunk process that closed meanwhile) fails in CRIU ("Can't open file
 *     dev/shm/hsakmt_shared_mem on restore"), after the GPU state is back.
 *
 * The choice (the upstream plugin re-creates the files at restore too; the
 * creator's case is ours):
 *   dump, for each process before CRIU looks at its mappings (PAUSE_DEVICES):
 *     - if it created the semaphore (maps a deleted sem.XXXXXX whose inode is
 *       sem.hsakmt_semaphore's), the name is unlinked: the semaphore then has
 *       no name, and CRIU saves its 32 bytes with the process as a ghost file,
 *       as for any deleted file. libhsakmt itself unlinks the name on every
 *       close; the next hsaKmtOpenKFD creates a new one. The semaphore only
 *       guards the perf-counter table, which nothing on a dGPU uses.
 *     - each of the two files it maps by name is recorded (path, size, mode,
 *       contents) in amdgpu-hsakmt-<pid>.img; a file by such a name that is
 *       not libhsakmt's (not regular, or over 4 KiB) is left to CRIU.
 *   restore, in the CRIU master before any task exists:
 *     - a recorded file that does not exist is created with the recorded
 *       size, mode and contents (O_EXCL, O_NOFOLLOW; only these two names);
 *     - one that exists with the same size is left alone: other running
 *       processes share it, as libhsakmt's processes always do, whatever its
 *       contents (libhsakmt re-initialises the table when its magic is wrong);
 *     - one that exists with another size, or is not a regular file, is
 *       refused in one line before anything is restored (CRIU would fail on
 *       its size later);
 *     - every image and entry is checked before anything is created (known
 *       names only, a name once per image, one size for a name the images
 *       of several processes share), and so are the files already there: a
 *       refusal creates nothing, and a creation that fails midway removes
 *       the files this restore created before it (a retry must find what
 *       the first attempt found). Paths in messages are escaped.
 * Paths are those of CRIU's mount namespace root; a restore with --root (a
 * container) is not handled here yet.
 */
#ifndef AMDGPU_CRIU_HSAKMT_FILES_H
#define AMDGPU_CRIU_HSAKMT_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"

/* Where to look: the real ones in production, others in unit tests. */
struct hsakmt_paths {
	const char *proc;     /* "/proc" */
	const char *shm_dir;  /* "/dev/shm": as the process sees it and as restored */
	const char *shm_name; /* "hsakmt_shared_mem" */
	const char *sem_name; /* "sem.hsakmt_semaphore" */
};

extern const struct hsakmt_paths hsakmt_paths_default;

struct hsakmt_dump_result {
	unsigned int recorded;	/* files recorded in the image */
	int semaphore_unlinked; /* the process had created the semaphore */
};

/*
 * Dump side, for process `pid` (CRIU's pid of it) before CRIU collects its
 * mappings: unlinks the semaphore's name if the process created it, records
 * the files it maps by name into amdgpu-hsakmt-<pid>.img in dir_fd (no image
 * if it maps neither and created nothing). 0, or -errno with one line in why.
 */
int hsakmt_files_dump(const struct hsakmt_paths *paths, int pid, int dir_fd,
		      struct hsakmt_dump_result *res, char *why, size_t len);

/*
 * Restore side, before any task exists: the n libhsakmt images (of the
 * processes pids; loaded by the checkpoint loader, borrowed) applied as
 * described above. *created gets the number of files created. 0, or -errno
 * with one line in why.
 */
int hsakmt_files_restore(const struct hsakmt_paths *paths, HsakmtFilesEntry *const *images,
			 const uint32_t *pids, size_t n, unsigned int *created, char *why,
			 size_t len);

#endif
