// SPDX-License-Identifier: MIT
/*
 * Options that mean nothing fail only dumps and restores that involve a
 * GPU (plugin/dump/dump_session.h, plugin/restore/restore.h): a session
 * starts, a run without GPUs goes on, and the first GPU is refused with the
 * line options_read() gave. The options themselves: test_options.
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
#include "options/options.h"
#include "synth_ckpt.h"

#define FILE_ERROR "options file /etc/x.conf line 2: COPY_ENGNE is no option of the plugin"

/* One option set, as the environment gives it. */
static const char *set_name, *set_value;

static const char *lookup(const char *name)
{
	return set_name && !strcmp(name, set_name) ? set_value : NULL;
}

/* The stage's options with name=value (NULL: none): 0, or the error line in err. */
static int read_options(struct amdgpu_options *o, unsigned int stage, const char *name,
			const char *value, char *err, size_t len)
{
	set_name = name;
	set_value = value;
	return options_read_text(o, stage, lookup, NULL, "", err, len);
}

static void dump_session_keeps_the_refusal(void **state)
{
	struct amdgpu_options o;
	struct dump_session s;
	char err[512];

	(void)state;
	assert_int_equal(read_options(&o, OPTIONS_DUMP, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(dump_session_init(&s, &o, ""), 0);
	assert_string_equal(s.gpu_refusal, "");
	assert_int_equal(dump_meets_gpu(&s), 0);
	dump_session_fini(&s);

	assert_int_equal(dump_session_init(&s, &o, FILE_ERROR), 0);
	assert_string_equal(s.gpu_refusal, FILE_ERROR);
	assert_int_equal(dump_meets_gpu(&s), -EINVAL);
	dump_session_fini(&s);

	assert_int_equal(
		read_options(&o, OPTIONS_DUMP, "AMDGPU_CRIU_COPY_ENGINE", "gpu", err, sizeof(err)),
		-EINVAL);
	assert_int_equal(dump_session_init(&s, &o, err), 0);
	assert_non_null(strstr(s.gpu_refusal, "AMDGPU_CRIU_COPY_ENGINE=gpu"));
	assert_int_equal(dump_meets_gpu(&s), -EINVAL);
	/* no /dev/kfd here: no task uses a GPU, so none is refused */
	assert_int_equal(dump_hsakmt_files(&s, -1, getpid()), 0);
	assert_int_equal(dump_render_audit(&s, getpid()), 0);
	dump_session_fini(&s);
}

/* The session takes the options it is given. */
static void dump_session_takes_the_options(void **state)
{
	struct amdgpu_options o;
	struct dump_session s;
	char err[512];

	(void)state;
	assert_int_equal(
		read_options(&o, OPTIONS_DUMP, "AMDGPU_CRIU_SHARED_BO", "refuse", err, sizeof(err)),
		0);
	o.direct_io = DIRECT_IO_ON;
	o.engine.mode = COPY_ENGINE_CPU;
	o.gem_probe = 17;
	assert_int_equal(dump_session_init(&s, &o, NULL), 0);
	assert_int_equal(s.opts.shared_bo, BO_SHARE_REFUSE);
	assert_int_equal(s.opts.direct_io, DIRECT_IO_ON);
	assert_int_equal(s.opts.engine.mode, COPY_ENGINE_CPU);
	assert_int_equal(s.audit.probe_limit, 17);
	assert_string_equal(s.audit.debugfs, "/sys/kernel/debug");
	dump_session_fini(&s);
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
	struct amdgpu_options o;
	char err[512];

	assert_int_equal(read_options(&o, OPTIONS_RESTORE, "AMDGPU_CRIU_PARALLEL_RESTORE", "yes",
				      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "AMDGPU_CRIU_PARALLEL_RESTORE=yes: unknown switch; use 1"));
	assert_int_equal(restore_session_init(&s, d->empty_fd, &o, err), 0);
	assert_false(s.active);
	restore_session_fini(&s, 0);
	assert_int_equal(restore_session_init(&s, d->gpu_fd, &o, err), -EINVAL);
	restore_session_fini(&s, -1);

	assert_int_equal(restore_session_init(&s, d->empty_fd, &o, FILE_ERROR), 0);
	assert_false(s.active);
	restore_session_fini(&s, 0);
	assert_int_equal(restore_session_init(&s, d->gpu_fd, &o, FILE_ERROR), -EINVAL);
	restore_session_fini(&s, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dump_session_keeps_the_refusal),
		cmocka_unit_test(dump_session_takes_the_options),
		cmocka_unit_test_setup_teardown(restore_refuses_only_gpus, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
