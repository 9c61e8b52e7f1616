/* SPDX-License-Identifier: MIT */
/*
 * Reads of an image file with O_DIRECT, many requests in flight (io_uring):
 * a restore's data file read straight into the staging ring, no page-cache
 * copy. One synchronous O_DIRECT read keeps one request at the device at a
 * time; a chunk is cut into DIRECT_READ_SEGMENT pieces, up to
 * DIRECT_READ_DEPTH of them submitted at once, so that the device works on
 * several while the kernel completes others.
 *
 * One reader per file, used by one thread at a time. direct_read_open()
 * says in `why` why the file cannot be read so (file system refuses
 * O_DIRECT, no io_uring, file smaller than asked): the caller then reads
 * through the page cache.
 */
#ifndef AMDGPU_CRIU_DATAPATH_DIRECT_READ_H
#define AMDGPU_CRIU_DATAPATH_DIRECT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIRECT_READ_ALIGN   4096u	 /* buffer, offset and length of a direct request */
#define DIRECT_READ_SEGMENT (512u << 10) /* bytes per request */
#define DIRECT_READ_DEPTH   8u		 /* requests in flight */

struct io_uring;

struct direct_reader {
	int fd;		 /* the file again, with O_DIRECT; -1: closed */
	int buffered_fd; /* the caller's descriptor: unaligned tails */
	uint64_t size;	 /* the file's size */
	struct io_uring *ring;
	uint64_t requests; /* submitted so far (tests: depth was used) */
	uint32_t max_in_flight;
};

/*
 * The file of fd is in memory (tmpfs, ramfs): tmpfs takes O_DIRECT (since
 * Linux 6.6) as a buffered copy, so neither reads nor writes gain by it.
 */
bool direct_io_in_memory(int fd);

/*
 * Opens the file of fd (size bytes) for direct reads, if it has at least
 * min_bytes (smaller files are quicker from the page cache). 0, or a
 * negative errno with why set: -E2BIG (file under min_bytes),
 * -EOPNOTSUPP (a tmpfs or ramfs file: nothing to gain), -EINVAL (O_DIRECT
 * refused by the file system), -ENOSYS, -EPERM (no io_uring here: an
 * old kernel, kernel.io_uring_disabled, a seccomp filter), -ENOMEM. dr is
 * left closed on failure (direct_read_close() is safe on it).
 */
int direct_read_open(struct direct_reader *dr, int fd, uint64_t size, uint64_t min_bytes, char *why,
		     size_t whylen);
/*
 * len bytes at off into buf: the page-aligned part directly (buf must be
 * DIRECT_READ_ALIGN-aligned), a tail that is not (the file's end) through
 * the caller's descriptor. 0, -ENODATA if the file ends first, -EINVAL if
 * the file system refused a direct request after all (the caller reads
 * buffered from then on), or another negative errno.
 */
int direct_read(struct direct_reader *dr, void *buf, size_t len, uint64_t off);
void direct_read_close(struct direct_reader *dr);

#endif
