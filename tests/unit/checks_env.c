// SPDX-License-Identifier: MIT
/* The KFD_*_CHECK options from the environment (checks_env.h). */
#include <stdlib.h>

#include "checks_env.h"
#include "options/options.h"

static const char *env_lookup(const char *name)
{
	return getenv(name);
}

int checks_read(struct match_checks *c, char *err, size_t len)
{
	struct amdgpu_options o;
	int ret = options_read_text(&o, OPTIONS_RESTORE, env_lookup, NULL, "", err, len);

	*c = o.checks;
	return ret;
}
