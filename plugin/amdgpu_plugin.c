// SPDX-License-Identifier: MIT
/*
 * CRIU entry points of the amdgpu plugin.
 *
 * The hooks stay thin: each one calls into a module that can be tested
 * without CRIU. At this stage the plugin registers itself and claims nothing:
 * every process, GPU or not, is left to CRIU and to other plugins. GPU
 * checkpoint/restore hooks are added with the dump and restore modules.
 */
#include <errno.h>

#include "criu-plugin.h"
#include "log.h"

static const char *stage_name(int stage)
{
	switch (stage) {
	case CR_PLUGIN_STAGE__DUMP:
		return "dump";
	case CR_PLUGIN_STAGE__PRE_DUMP:
		return "pre-dump";
	case CR_PLUGIN_STAGE__RESTORE:
		return "restore";
	default:
		return "unknown";
	}
}

static int amdgpu_plugin_init(int stage)
{
	pr_info("initialised for %s", stage_name(stage));
	return 0;
}

static void amdgpu_plugin_fini(int stage, int ret)
{
	pr_info("finished %s (ret %d)", stage_name(stage), ret);
}

CR_PLUGIN_REGISTER("amdgpu_plugin", amdgpu_plugin_init, amdgpu_plugin_fini)
