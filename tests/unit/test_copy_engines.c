// SPDX-License-Identifier: MIT
/*
 * plugin/copy_engines.c: the environment's options (AMDGPU_CRIU_COPY_ENGINE,
 * AMDGPU_CRIU_SDMA_TIMEOUT_MS) and the per-GPU choice: auto falls back to the
 * CPU for a GPU whose SDMA cannot be set up, sdma fails with every engine
 * closed, cpu opens nothing (libdrm_amdgpu is fake_amdgpu.c's model).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "fake_amdgpu.h"
#include "plugin/copy_engines.h"

/* GPUs whose render nodes do not exist here (minors past any real one), and an old GPU. */
static const struct copy_gpu gpus[] = {
	{.gpu_id = 0x1111, .render_minor = 4000, .gfx_target_version = 90010},
	{.gpu_id = 0x2222, .render_minor = 4001, .gfx_target_version = 80003},
};

static void test_choice(void **state)
{
	struct copy_engine_opts o = {0};
	struct bo_sdma_engine *sdma[2] = {(void *)1, (void *)1};

	(void)state;
	fake_amdgpu_reset();
	o.mode = COPY_ENGINE_CPU;
	assert_int_equal(copy_engines_open(&o, gpus, 2, sdma, NULL), 0);
	assert_null(sdma[0]);
	assert_null(sdma[1]);

	/* auto: no render node, no SDMA format: both fall back, with a warning each */
	o.mode = COPY_ENGINE_AUTO;
	sdma[0] = sdma[1] = (void *)1;
	assert_int_equal(copy_engines_open(&o, gpus, 2, sdma, NULL), 0);
	assert_null(sdma[0]);
	assert_null(sdma[1]);

	/* sdma: the first GPU without it fails the whole */
	o.mode = COPY_ENGINE_SDMA;
	assert_int_equal(copy_engines_open(&o, gpus, 2, sdma, NULL), -ENOENT);
	assert_int_equal(copy_engines_open(&o, &gpus[1], 1, sdma, NULL), -EOPNOTSUPP);
	assert_null(sdma[0]);
	copy_engines_close("test", gpus, 2, sdma, NULL);
	assert_true(fake_amdgpu_all_released());
}

/* A small-BAR GPU's VRAM BOs not allocated CPU-visible: only SDMA may copy them. */
static void test_small_bar(void **state)
{
	struct copy_gpu g = {.gpu_id = 0x3333,
			     .render_minor = 4002,
			     .gfx_target_version = 90010,
			     .small_bar = true,
			     .invisible_bos = 3};
	struct copy_engine_opts o = {.mode = COPY_ENGINE_CPU};
	struct bo_sdma_engine *sdma[1];

	(void)state;
	fake_amdgpu_reset();
	assert_int_equal(copy_engines_open(&o, &g, 1, sdma, NULL), -EOPNOTSUPP);
	o.mode = COPY_ENGINE_AUTO; /* no render node here: SDMA cannot be set up */
	assert_int_equal(copy_engines_open(&o, &g, 1, sdma, NULL), -EOPNOTSUPP);
	g.invisible_bos = 0; /* only PUBLIC VRAM and GTT: the CPU sees them */
	assert_int_equal(copy_engines_open(&o, &g, 1, sdma, NULL), 0);
	g.invisible_bos = 3;
	g.small_bar = false; /* large BAR: all VRAM is visible */
	o.mode = COPY_ENGINE_CPU;
	assert_int_equal(copy_engines_open(&o, &g, 1, sdma, NULL), 0);
	assert_true(fake_amdgpu_all_released());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_small_bar),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
