/* SPDX-License-Identifier: MIT */
/*
 * Comparing two files' first bytes in the unit tests (BO memfds, image
 * files). By pread(), never mmap(): a read fault on a hole of a tmpfs file
 * through a shared mapping allocates the page (TMPDIR is /dev/shm in make
 * check), which would change the files under test. Include after <cmocka.h>:
 * a difference or a short read fails the running test.
 */
#ifndef AMDGPU_CRIU_TESTS_FD_COMPARE_H
#define AMDGPU_CRIU_TESTS_FD_COMPARE_H

#include <stdint.h>

/* Bytes [0, size) of fds a and b are equal; else fails naming the first 64 KiB block that differs.
 */
void assert_same_bytes(int a, int b, uint64_t size);

#endif
