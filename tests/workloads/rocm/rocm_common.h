/* SPDX-License-Identifier: MIT */
/*
 * What the ROCm workloads (rocm-hsakmt, rocm-hsa) share: the ZDTM-style
 * file protocol of tests/workloads/gpu (READY, TRIGGER, RESULT, written
 * atomically), the byte patterns they fill memory with, and the checks of
 * the process's own mappings and fds. Built in the VM harness against
 * Debian's ROCm headers (tests/vm/vm-suite.sh, install_rocm).
 */
#ifndef ROCM_COMMON_H
#define ROCM_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* the first failure, as "FAIL <what>" in RESULT; later ones are counted */
struct rc_result {
	char first[512];
	int failures;
};

void rc_fail(struct rc_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* writes TEXT to PATH atomically (PATH.tmp, rename) */
int rc_write_file(const char *path, const char *text);
/* waits until PATH exists (no limit: the test harness has one) */
void rc_wait_file(const char *path);
/* "fd N TARGET" lines of this process's fds, for the harness's fd check */
void rc_append_fds(char *buf, size_t size);
/* a word pattern unique per (seed, byte offset), never zero */
void rc_fill(void *p, size_t size, uint32_t seed);
/* 0, or the offset + 1 of the first byte that differs from rc_fill's */
size_t rc_check(const void *p, size_t size, uint32_t seed);
/* the perms ("rw-s", "---p") and path of the mapping that starts at ADDR
 * and spans SIZE bytes, from /proc/self/maps; -ENOENT if none does */
int rc_mapping(uintptr_t addr, size_t size, char perms[5], char *path, size_t path_size);
/* PASS or FAIL line to RESULT and stdout; exit status */
int rc_finish(const char *result_path, const struct rc_result *r, const char *detail);

#endif
