// SPDX-License-Identifier: MIT
/* The choice of copy engine per GPU (see copy_engines.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "copy_engines.h"
#include "log.h"

#define ENV_ENGINE  "AMDGPU_CRIU_COPY_ENGINE"
#define ENV_TIMEOUT "AMDGPU_CRIU_SDMA_TIMEOUT_MS"

static int mode_get(enum copy_engine_mode *mode)
{
	const char *v = getenv(ENV_ENGINE);

	if (!v || !*v || !strcmp(v, "auto"))
		*mode = COPY_ENGINE_AUTO;
	else if (!strcmp(v, "sdma"))
		*mode = COPY_ENGINE_SDMA;
	else if (!strcmp(v, "cpu"))
		*mode = COPY_ENGINE_CPU;
	else {
		pr_err("%s=%s: unknown copy engine; use auto, sdma or cpu", ENV_ENGINE, v);
		return -EINVAL;
	}
	return 0;
}

/* 0 (the engine's default) when unset; -EINVAL (logged) when not a number of ms. */
static int timeout_ms_get(uint32_t *ms)
{
	const char *v = getenv(ENV_TIMEOUT);
	unsigned long n;
	char *end;

	*ms = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || !n || n > UINT32_MAX) {
		pr_err("%s=%s: not a time in milliseconds (1 to %" PRIu32 ")", ENV_TIMEOUT, v,
		       UINT32_MAX);
		return -EINVAL;
	}
	*ms = (uint32_t)n;
	return 0;
}

int copy_engine_opts_get(struct copy_engine_opts *opts)
{
	int ret = mode_get(&opts->mode);

	return ret ? ret : timeout_ms_get(&opts->sdma_timeout_ms);
}

int copy_engines_open(const struct copy_engine_opts *opts, const struct copy_gpu *gpus, uint32_t n,
		      struct bo_sdma_engine **sdma)
{
	struct bo_sdma_config cfg = {.fence_timeout_ms = opts->sdma_timeout_ms};
	char why[256];
	uint32_t i;
	int ret;

	memset(sdma, 0, n * sizeof(*sdma));
	if (opts->mode == COPY_ENGINE_CPU)
		return 0;
	for (i = 0; i < n; i++) {
		cfg.gpu_id = gpus[i].gpu_id;
		cfg.render_minor = gpus[i].render_minor;
		cfg.gfx_target_version = gpus[i].gfx_target_version;
		ret = bo_sdma_engine_open(&cfg, &sdma[i], why, sizeof(why));
		if (!ret)
			continue;
		if (opts->mode == COPY_ENGINE_SDMA) {
			pr_err("%s; %s=sdma asks for SDMA only (auto would copy with the CPU)", why,
			       ENV_ENGINE);
			copy_engines_close(NULL, gpus, i, sdma);
			return ret;
		}
		pr_warn("%s; the CPU copies this GPU's BO contents instead (slow for VRAM)", why);
	}
	return 0;
}

void copy_engines_close(const char *what, const struct copy_gpu *gpus, uint32_t n,
			struct bo_sdma_engine **sdma)
{
	struct bo_sdma_stats st;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (what && sdma[i]) {
			bo_sdma_engine_stats(sdma[i], &st);
			pr_info("%s GPU %" PRIu32 ": SDMA moved %" PRIu64 " MiB in %" PRIu64
				".%03" PRIu64 " s of engine time (%" PRIu64 " MiB/s), %" PRIu64
				" submissions",
				what, gpus[i].gpu_id, st.bytes >> 20, st.busy_ns / 1000000000u,
				st.busy_ns / 1000000u % 1000u,
				st.busy_ns ? (uint64_t)((double)st.bytes / (1 << 20) * 1e9 /
							(double)st.busy_ns)
					   : 0,
				st.submissions);
		} else if (what) {
			pr_info("%s GPU %" PRIu32 ": BO contents moved by the CPU", what,
				gpus[i].gpu_id);
		}
		bo_sdma_engine_close(sdma[i]);
		sdma[i] = NULL;
	}
}
