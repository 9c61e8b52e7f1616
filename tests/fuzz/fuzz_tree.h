/* SPDX-License-Identifier: MIT */
/*
 * File trees for the fuzz targets that read directories (sysfs topologies,
 * CRIU image directories): a scratch directory per process, and a flat,
 * mutation-friendly text encoding of a tree that a fuzz input carries.
 *
 * Encoding ("fuzz tree"), as `head` prints several files:
 *
 *   ==> nodes/0/properties <==
 *   cpu_cores_count 20
 *   simd_count 0
 *   ==> nodes/0/gpu_id <==
 *   0
 *
 * An entry is a header line "==> NAME <==" optionally followed by " KIND",
 * then its content: every byte up to the next "\n==> " (the newline belongs
 * to the content) or the end of the input. Bytes before the first header are
 * ignored. KIND is one of
 *   (none)      a regular file holding the content
 *   dir         an empty directory (content ignored)
 *   size N      a regular file holding the content, then truncated or
 *               extended (a hole) to N bytes, N <= FUZZ_TREE_MAX_SIZE: how a
 *               file that does not end with a newline is given (content and
 *               a newline, cut back), and how a large sparse file is made
 *   symlink     a symbolic link whose target is the content without its
 *               final newline; only relative targets without ".." are made,
 *               so nothing outside the tree can be reached
 *   fifo        a named pipe, made only if fuzz_strict() (fuzz_common.h:
 *               a FIFO blocks readers that open it without O_NONBLOCK)
 * NAME is a relative path; parent directories are made as needed. Names with
 * empty, "." or ".." components, absolute names, names longer than
 * FUZZ_TREE_MAX_NAME and entries past FUZZ_TREE_MAX_ENTRIES are skipped, as
 * is an entry that cannot be made (a file where a directory is needed). A
 * repeated name replaces the earlier file. Malformed input is never an
 * error: whatever can be made is made.
 */
#ifndef AMDGPU_CRIU_FUZZ_TREE_H
#define AMDGPU_CRIU_FUZZ_TREE_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_TREE_MAX_ENTRIES 2048
#define FUZZ_TREE_MAX_NAME    200
#define FUZZ_TREE_MAX_DEPTH   16
#define FUZZ_TREE_MAX_SIZE    (64ull << 20)

/* "==> " and " <==": for the seed writer and dictionaries. */
#define FUZZ_TREE_HEAD "==> "
#define FUZZ_TREE_TAIL " <=="

/*
 * A fresh directory for this process, under /dev/shm if it is there (tmpfs:
 * no disk traffic) else $TMPDIR or /tmp. path must hold 256 bytes. Aborts on
 * failure: a fuzz target cannot run without it.
 */
void fuzz_scratch_make(char *path, size_t len);

/* Removes everything below dir (not dir itself); aborts if that fails. */
void fuzz_scratch_clear(const char *dir);

/* Removes dir and everything below it. */
void fuzz_scratch_remove(const char *dir);

/* Makes the entries of the encoded tree data[0..len-1] below dir. */
void fuzz_tree_write(const char *dir, const uint8_t *data, size_t len);

#endif
