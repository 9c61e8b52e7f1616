/* SPDX-License-Identifier: MIT */
/*
 * What the small ZDTM-style GPU workloads share (zdtm-gpu-gem,
 * zdtm-gpu-share): the byte pattern they fill and check, the READY file
 * (their own lines, then one "fd N TARGET" per open fd, written atomically)
 * and the RESULT file. Functions return 0 or a negative errno.
 */
#ifndef ZDTM_UTIL_H
#define ZDTM_UTIL_H

#include <stdint.h>

uint8_t zdtm_pattern(uint64_t i, uint8_t seed);
void zdtm_fill(uint8_t *p, uint64_t n, uint8_t seed);
/* -1 if all n bytes hold the pattern, else the first offset that does not */
int64_t zdtm_verify(const uint8_t *p, uint64_t n, uint8_t seed);

/* READY at path: `head` (lines, may be empty), then the fd lines */
int zdtm_write_ready(const char *path, const char *head);
/* RESULT: text and a newline; the exit status, 0 for "PASS" */
int zdtm_result(const char *path, const char *text);

#endif
