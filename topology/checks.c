// SPDX-License-Identifier: MIT
/*
 * Relaxable matcher checks: all on unless the KFD_*_CHECK options
 * (options/options.h, named as upstream CRIU's plugins/amdgpu names them)
 * turn one off.
 */
#include "topology/match.h"

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
