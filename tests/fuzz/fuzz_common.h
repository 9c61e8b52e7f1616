/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets (tests/fuzz/fuzz_*.c) share: the process's scratch
 * directory, writing an input into it as one file, and a broken invariant
 * reported as a crash (libFuzzer saves the input that caused it).
 *
 * A target runs one input at a time in one process, so the scratch
 * directory is a per-process singleton: made on first use, emptied by the
 * target after every input, removed at exit.
 */
#ifndef AMDGPU_CRIU_FUZZ_COMMON_H
#define AMDGPU_CRIU_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The scratch directory of this process (see fuzz_tree.h for where). */
const char *fuzz_scratch(void);

/* An fd of the scratch directory (O_DIRECTORY); the caller closes it. Aborts on failure. */
int fuzz_scratch_fd(void);

/* Writes data[0..len-1] as the regular file `name` (0600) in the scratch directory. */
void fuzz_put_file(const char *name, const uint8_t *data, size_t len);

/*
 * Whether inputs may exercise the defects that were found before
 * the fuzz targets existed (FIFOs in place of files, image ids with leading
 * zeros, recorded GPUs without SIMDs): yes, unless FUZZ_STRICT=0 is in the
 * environment. Fixed on main; FUZZ_STRICT=0 fuzzes a tree that still has
 * them without finding them at once and nothing else.
 */
bool fuzz_strict(void);

/* Makes `name` a FIFO in the scratch directory (targets call it only if fuzz_strict()). */
void fuzz_put_fifo(const char *name);

/* Empties the scratch directory (after each input). */
void fuzz_done(void);

/*
 * libFuzzer's hook, defined here for every target: keeps a copy of stderr
 * for fuzz_fail() before -close_fd_mask=3 silences the target's output.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A broken invariant: one line on stderr, then abort() so that libFuzzer keeps the input. */
__attribute__((noreturn, format(printf, 1, 2))) void fuzz_fail(const char *fmt, ...);

#define FUZZ_ASSERT(cond, ...)                                                                     \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fuzz_fail(__VA_ARGS__);                                                    \
	} while (0)

/*
 * A failing reader's message: non-empty, one line, naming `what` (NULL:
 * anything), and not caused by a blocked system call (EINTR).
 */
void fuzz_check_errmsg(const char *err, const char *what);

#endif
