/* SPDX-License-Identifier: MIT */
/*
 * A test-sized file of a directory read whole into memory (image files the
 * unit tests take apart). Include after <cmocka.h>: a file that cannot be
 * read fails the running test.
 */
#ifndef AMDGPU_CRIU_TESTS_FILE_READ_H
#define AMDGPU_CRIU_TESTS_FILE_READ_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of `name` in dir_fd (malloc'd, one spare byte after them), their count in *len. */
uint8_t *file_read_all(int dir_fd, const char *name, size_t *len);

#endif
