// SPDX-License-Identifier: MIT
/*
 * Options that mean nothing fail only dumps and restores that involve a
 * GPU (plugin/dump/dump_session.h, plugin/restore/restore.h): a session starts, a run without
 * GPUs goes on, and the first GPU is refused with the option's line. The
 * options file's own error is handed to the sessions the same way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "plugin/dump/dump_render.h"
#include "plugin/dump/dump_session.h"
#include "plugin/restore/restore.h"
#include "topology/match.h"
#include "plugin/restore/dev_nodes.h"
#include "plugin/restore/restore_copy.h"
#include "synth_ckpt.h"

#define FILE_ERROR "options file /etc/x.conf line 2: COPY_ENGNE is no option of the plugin"

/* Options from the environment (match_checks_read()'s lookup). */
static const char *env_lookup(const char *name)
{
	return getenv(name);
}

static void dump_session_keeps_the_refusal(void **state)
{
	struct dump_session s;

	(void)state;
	unsetenv("AMDGPU_CRIU_COPY_ENGINE");
	assert_int_equal(dump_session_init(&s, ""), 0);
	assert_string_equal(s.gpu_refusal, "");
	assert_int_equal(dump_meets_gpu(&s), 0);
	dump_session_fini(&s);

	assert_int_equal(dump_session_init(&s, FILE_ERROR), 0);
	assert_string_equal(s.gpu_refusal, FILE_ERROR);
	assert_int_equal(dump_meets_gpu(&s), -EINVAL);
	dump_session_fini(&s);

	setenv("AMDGPU_CRIU_COPY_ENGINE", "gpu", 1);
	assert_int_equal(dump_session_init(&s, NULL), 0);
	assert_non_null(strstr(s.gpu_refusal, "AMDGPU_CRIU_COPY_ENGINE=gpu"));
	assert_int_equal(dump_meets_gpu(&s), -EINVAL);
	/* no /dev/kfd here: no task uses a GPU, so none is refused */
	assert_int_equal(dump_hsakmt_files(&s, -1, getpid()), 0);
	assert_int_equal(dump_render_audit(&s, getpid()), 0);
	dump_session_fini(&s);
	unsetenv("AMDGPU_CRIU_COPY_ENGINE");
}

/* no byte below 0x20 nor above 0x7e: one printable line */
static void assert_printable(const char *what, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("%s: byte 0x%02x in its refusal", what, *p);
}

/* An option's value as the environment gives it: shown escaped, on one line. */
static void values_are_shown_escaped(void **state)
{
	static const char *const dump_vars[] = {
		"AMDGPU_CRIU_COPY_ENGINE", "AMDGPU_CRIU_SDMA_TIMEOUT_MS", "AMDGPU_CRIU_SHARED_BO",
		"AMDGPU_CRIU_DIRECT_IO",   "AMDGPU_CRIU_GEM_PROBE",	  "AMDGPU_CRIU_GEM_CENSUS",
	};
	static const char hostile[] = "\x1b]0;x\x07\nforged: line";
	struct match_checks checks;
	struct dump_session s;
	char why[512];
	bool on;

	(void)state;
	for (size_t i = 0; i < sizeof(dump_vars) / sizeof(dump_vars[0]); i++) {
		setenv(dump_vars[i], hostile, 1);
		assert_int_equal(dump_session_init(&s, NULL), 0);
		assert_non_null(strstr(s.gpu_refusal, dump_vars[i]));
		assert_printable(dump_vars[i], s.gpu_refusal);
		assert_non_null(strstr(s.gpu_refusal, "\\x1b]0;x\\x07\\x0aforged: line"));
		dump_session_fini(&s);
		unsetenv(dump_vars[i]);
	}
	setenv("AMDGPU_CRIU_PARALLEL_RESTORE", hostile, 1);
	assert_int_equal(restore_copy_parallel_get(&on, why, sizeof(why)), -EINVAL);
	assert_printable("AMDGPU_CRIU_PARALLEL_RESTORE", why);
	unsetenv("AMDGPU_CRIU_PARALLEL_RESTORE");
	setenv("AMDGPU_CRIU_DEV_NODES", hostile, 1);
	assert_int_equal(dev_nodes_policy(&on, why, sizeof(why)), -EINVAL);
	assert_printable("AMDGPU_CRIU_DEV_NODES", why);
	unsetenv("AMDGPU_CRIU_DEV_NODES");
	setenv("KFD_NUMA_CHECK", hostile, 1);
	assert_int_equal(match_checks_read(&checks, env_lookup, why, sizeof(why)), -EINVAL);
	assert_printable("KFD_NUMA_CHECK", why);
	unsetenv("KFD_NUMA_CHECK");
}

/* Numbers are digits only: strtoul() alone took a leading newline, blank or sign. */
static void numbers_are_digits(void **state)
{
	static const char *const vars[] = {"AMDGPU_CRIU_SDMA_TIMEOUT_MS", "AMDGPU_CRIU_GEM_PROBE"};
	static const char *const bad[] = {"\n5", " 5", "+5", "\t5", "-0", "5\n", "0x5"};
	struct dump_session s;

	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			setenv(vars[i], bad[j], 1);
			assert_int_equal(dump_session_init(&s, NULL), 0);
			if (!strstr(s.gpu_refusal, vars[i]))
				fail_msg("%s=\"%s\" (value %zu) accepted", vars[i],
					 j ? bad[j] : "\\n5", j);
			assert_printable(vars[i], s.gpu_refusal);
			dump_session_fini(&s);
		}
		setenv(vars[i], "5", 1);
		assert_int_equal(dump_session_init(&s, NULL), 0);
		assert_string_equal(s.gpu_refusal, "");
		dump_session_fini(&s);
		unsetenv(vars[i]);
	}
}

struct dirs {
	char empty[64], gpu[64];
	int empty_fd, gpu_fd;
	struct kfd_topology topo;
};

static int setup(void **state)
{
	static const uint32_t nodes[] = {2, 3};
	struct dirs *d = calloc(1, sizeof(*d));
	char path[512], err[512];
	struct synth_spec spec;

	if (!d)
		return -1;
	snprintf(d->empty, sizeof(d->empty), "/tmp/test-option-errors-XXXXXX");
	snprintf(d->gpu, sizeof(d->gpu), "/tmp/test-option-errors-XXXXXX");
	snprintf(path, sizeof(path), "%s/%s", fixtures_dir(), MI308X);
	if (!mkdtemp(d->empty) || !mkdtemp(d->gpu) || topo_load(path, &d->topo, err, sizeof(err)))
		return -1;
	d->empty_fd = open(d->empty, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d->gpu_fd = open(d->gpu, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	spec = (struct synth_spec){.topo = &d->topo, .nodes = nodes, .n_nodes = 2, .image_id = 7};
	*state = d;
	if (d->empty_fd < 0 || d->gpu_fd < 0 ||
	    synth_write_checkpoint(d->gpu_fd, &spec, err, sizeof(err))) {
		print_message("setup: %s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	struct dirs *d = *state;
	char cmd[256];

	close(d->empty_fd);
	close(d->gpu_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d->empty, d->gpu);
	assert_int_equal(system(cmd), 0);
	topo_free(&d->topo);
	free(d);
	return 0;
}

/* The refusal comes before anything of this node is looked at: the images stay as they were. */
static void restore_refuses_only_gpus(void **state)
{
	struct dirs *d = *state;
	struct restore_session s;

	setenv("AMDGPU_CRIU_PARALLEL_RESTORE", "yes", 1);
	assert_int_equal(restore_session_init(&s, d->empty_fd, NULL), 0);
	assert_false(s.active);
	restore_session_fini(&s, 0);
	assert_int_equal(restore_session_init(&s, d->gpu_fd, NULL), -EINVAL);
	restore_session_fini(&s, -1);
	unsetenv("AMDGPU_CRIU_PARALLEL_RESTORE");

	assert_int_equal(restore_session_init(&s, d->empty_fd, FILE_ERROR), 0);
	assert_false(s.active);
	restore_session_fini(&s, 0);
	assert_int_equal(restore_session_init(&s, d->gpu_fd, FILE_ERROR), -EINVAL);
	restore_session_fini(&s, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dump_session_keeps_the_refusal),
		cmocka_unit_test(values_are_shown_escaped),
		cmocka_unit_test(numbers_are_digits),
		cmocka_unit_test_setup_teardown(restore_refuses_only_gpus, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
