/* SPDX-License-Identifier: MIT */
/* Unit tests: the matcher's KFD_*_CHECK options from the environment, as the restore reads them. */
#ifndef AMDGPU_CRIU_TESTS_CHECKS_ENV_H
#define AMDGPU_CRIU_TESTS_CHECKS_ENV_H

#include <stddef.h>

#include "topology/match.h"

/* options_read_text() of the restore's options (no options file) into *c: 0 or -errno, err. */
int checks_read(struct match_checks *c, char *err, size_t len);

#endif
