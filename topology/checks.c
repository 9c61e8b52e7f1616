// SPDX-License-Identifier: MIT
/*
 * Relaxable matcher checks and the upstream CRIU environment variables that
 * switch them (plugins/amdgpu: KFD_*_CHECK). This is the only place in the
 * matcher that reads the environment.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topology/match.h"
#include "common/escape.h"

void match_checks_default(struct match_checks *checks)
{
	checks->capability = true;
	checks->vram_size = true;
	checks->num_gws = true;
	checks->caches_count = true;
	checks->fw_version = true;
	checks->sdma_fw_version = true;
	checks->numa = true;
}

/* Same spellings as upstream CRIU's getenv_bool(); unset keeps the default. */
static int option_switch(const char *var, const char *s, bool *value, char *errbuf, size_t errlen)
{
	char shown[ESCAPE_LEN(32)];

	if (!s)
		return 0;
	if (!strcmp(s, "0") || !strcasecmp(s, "NO")) {
		*value = false;
		return 0;
	}
	if (!strcmp(s, "1") || !strcasecmp(s, "YES")) {
		*value = true;
		return 0;
	}
	snprintf(errbuf, errlen, "invalid value %s=\"%s\": expected 0, 1, NO or YES", var,
		 str_escape(s, shown, sizeof(shown)));
	return -EINVAL;
}

int match_checks_read(struct match_checks *checks, const char *(*lookup)(const char *name),
		      char *errbuf, size_t errlen)
{
	const struct {
		const char *var;
		bool *value;
	} vars[] = {
		{"KFD_CAPABILITY_CHECK", &checks->capability},
		{"KFD_VRAM_SIZE_CHECK", &checks->vram_size},
		{"KFD_NUM_GWS_CHECK", &checks->num_gws},
		{"KFD_CACHES_COUNT_CHECK", &checks->caches_count},
		{"KFD_FW_VER_CHECK", &checks->fw_version},
		{"KFD_SDMA_FW_VER_CHECK", &checks->sdma_fw_version},
		{"KFD_NUMA_CHECK", &checks->numa},
	};
	int ret;

	match_checks_default(checks);
	if (errlen)
		errbuf[0] = '\0';
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		ret = option_switch(vars[i].var, lookup(vars[i].var), vars[i].value, errbuf,
				    errlen);
		if (ret)
			return ret;
	}
	return 0;
}
