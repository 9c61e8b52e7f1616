// SPDX-License-Identifier: MIT
/*
 * The plugin's options file (plugin/options_file.h): NAME=VALUE lines set
 * the options the environment does not (the environment wins), comments
 * and blank lines are skipped; an unknown name, a line without '=', a file
 * named by AMDGPU_CRIU_CONFIG that is missing, a FIFO, a file over 64 KiB
 * or with a NUL byte are refused with a line naming the file (and line).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/options_file.h"

static void clear_options(void)
{
	size_t i;

	for (i = 0; OPTIONS_FILE_NAMES[i]; i++)
		unsetenv(OPTIONS_FILE_NAMES[i]);
	unsetenv(OPTIONS_FILE_ENV);
}

static void lines_set_what_the_environment_does_not(void **state)
{
	static const char text[] = "# a node's defaults\n"
				   "\n"
				   "  AMDGPU_CRIU_COPY_ENGINE = cpu  \n"
				   "AMDGPU_CRIU_SHARED_BO=refuse\r\n"
				   "AMDGPU_CRIU_DIRECT_IO=1";
	unsigned int applied;
	char err[256] = "";

	(void)state;
	clear_options();
	setenv("AMDGPU_CRIU_SHARED_BO", "copy", 1);
	assert_int_equal(options_text_apply(text, "t.conf", &applied, err, sizeof(err)), 0);
	assert_int_equal(applied, 2);
	assert_string_equal(getenv("AMDGPU_CRIU_COPY_ENGINE"), "cpu");
	assert_string_equal(getenv("AMDGPU_CRIU_SHARED_BO"), "copy"); /* the environment's */
	assert_string_equal(getenv("AMDGPU_CRIU_DIRECT_IO"), "1");
	clear_options();
}

static void bad_lines_are_refused(void **state)
{
	unsigned int applied;
	char err[256];

	(void)state;
	clear_options();
	assert_int_equal(options_text_apply("AMDGPU_CRIU_COPY_ENGINE=sdma\nKFD_SECRET=1\n",
					    "t.conf", &applied, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf line 2: KFD_SECRET is no option of the plugin"));
	assert_int_equal(options_text_apply("# ok\nAMDGPU_CRIU_COPY_ENGINE\n", "t.conf", &applied,
					    err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf line 2: \"AMDGPU_CRIU_COPY_ENGINE\" is no NAME=VALUE"));
	clear_options();
}

static char dir[64];

static void write_file(const char *name, const char *text, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	setenv(OPTIONS_FILE_ENV, path, 1);
}

static void files(void **state)
{
	char path[256], err[512], fifo[128], *big;
	unsigned int applied;

	(void)state;
	clear_options();
	snprintf(dir, sizeof(dir), "/tmp/test-options-XXXXXX");
	assert_non_null(mkdtemp(dir));

	write_file("ok.conf", "AMDGPU_CRIU_GEM_CENSUS=probe\n", 29);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)), 0);
	assert_int_equal(applied, 1);
	assert_non_null(strstr(path, "ok.conf"));
	assert_string_equal(getenv("AMDGPU_CRIU_GEM_CENSUS"), "probe");
	unsetenv("AMDGPU_CRIU_GEM_CENSUS");

	/* named but missing */
	setenv(OPTIONS_FILE_ENV, "/nonexistent/amdgpu.conf", 1);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/amdgpu.conf: "));

	/* a FIFO never blocks the plugin */
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	setenv(OPTIONS_FILE_ENV, fifo, 1);
	assert_true(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "FIFO"));
	unlink(fifo);

	/* too large, or with a NUL byte */
	big = calloc(1, OPTIONS_FILE_MAX + 10);
	assert_non_null(big);
	memset(big, '#', OPTIONS_FILE_MAX + 9);
	write_file("big.conf", big, OPTIONS_FILE_MAX + 9);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)),
			 -EFBIG);
	write_file("nul.conf", "AMDGPU_CRIU_GEM_PROBE=1\0\n", 25);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "NUL byte"));
	free(big);

	snprintf(path, sizeof(path), "%s/ok.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/big.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nul.conf", dir);
	unlink(path);
	rmdir(dir);
	clear_options();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_set_what_the_environment_does_not),
		cmocka_unit_test(bad_lines_are_refused),
		cmocka_unit_test(files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
