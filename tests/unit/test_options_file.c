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
#include <limits.h>
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

/* no byte below 0x20 nor above 0x7e: one printable line */
static void assert_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("byte 0x%02x in \"%s\"", *p, s);
}

/*
 * AMDGPU_CRIU_CONFIG naming a path longer than the caller's buffer: refused
 * in one line, never read cut short (where it would name another file).
 */
static void long_paths(void **state)
{
	char base[64], cut[PATH_MAX], named[PATH_MAX + 8], sub[PATH_MAX], err[512] = "";
	char small[256], path[PATH_MAX];
	unsigned int applied = 9;
	size_t n;
	FILE *f;
	int ret;

	(void)state;
	clear_options();
	snprintf(base, sizeof(base), "/tmp/test-options-XXXXXX");
	assert_non_null(mkdtemp(base));
	/* cut: a file whose path is 255 bytes; named: that path and one more byte */
	n = (size_t)snprintf(cut, sizeof(cut), "%s/", base);
	memset(cut + n, 'a', 255 - n);
	cut[255] = '\0';
	f = fopen(cut, "w");
	assert_non_null(f);
	fputs("AMDGPU_CRIU_GEM_CENSUS=probe\n", f);
	fclose(f);
	snprintf(named, sizeof(named), "%sx", cut);
	setenv(OPTIONS_FILE_ENV, named, 1);
	ret = options_file_apply(small, sizeof(small), &applied, err, sizeof(err));
	if (getenv("AMDGPU_CRIU_GEM_CENSUS"))
		fail_msg("a path of 256 bytes was read cut to 255 (another file): returned %d, %u "
			 "options applied",
			 ret, applied);
	assert_int_equal(ret, -ENAMETOOLONG);
	assert_int_equal(applied, 0);
	assert_non_null(strstr(err, OPTIONS_FILE_ENV));
	assert_non_null(strstr(err, "256 bytes"));
	assert_printable(err);

	/* a path of 300 bytes (two directories deep) is read whole into a PATH_MAX buffer */
	n = (size_t)snprintf(sub, sizeof(sub), "%s/", base);
	memset(sub + n, 'd', 200);
	sub[n + 200] = '\0';
	assert_int_equal(mkdir(sub, 0700), 0);
	n = (size_t)snprintf(path, sizeof(path), "%s/", sub);
	memset(path + n, 'f', 295 - n);
	strcpy(path + 295, ".conf");
	assert_int_equal(strlen(path), 300);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("AMDGPU_CRIU_GEM_CENSUS=probe\n", f);
	fclose(f);
	setenv(OPTIONS_FILE_ENV, path, 1);
	assert_int_equal(options_file_apply(named, sizeof(named), &applied, err, sizeof(err)), 0);
	assert_int_equal(applied, 1);
	assert_string_equal(named, path);
	unsetenv("AMDGPU_CRIU_GEM_CENSUS");
	unlink(path);
	rmdir(sub);

	/* longer than PATH_MAX: refused before anything is opened */
	memset(named, 'p', sizeof(named) - 1);
	named[0] = '/';
	named[sizeof(named) - 1] = '\0';
	setenv(OPTIONS_FILE_ENV, named, 1);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)),
			 -ENAMETOOLONG);
	assert_printable(err);

	unlink(cut);
	rmdir(base);
	clear_options();
}

/* The file's name and a line of it shown escaped, on one line. */
static void messages_are_printable(void **state)
{
	char path[256], err[512] = "";
	unsigned int applied;

	(void)state;
	clear_options();
	setenv(OPTIONS_FILE_ENV, "/nonexistent/\x1b]0;x\x07\nforged: line", 1);
	assert_int_equal(options_file_apply(path, sizeof(path), &applied, err, sizeof(err)),
			 -ENOENT);
	assert_printable(err);
	assert_non_null(strstr(err, "/nonexistent/\\x1b]0;x\\x07\\x0aforged: line"));
	assert_int_equal(
		options_text_apply("\x1b]0;x\x07 forged\n", "t.conf", &applied, err, sizeof(err)),
		-EINVAL);
	assert_printable(err);
	assert_int_equal(
		options_text_apply("AMDGPU_\x1b[2J=1\n", "t.conf", &applied, err, sizeof(err)),
		-EINVAL);
	assert_printable(err);
	clear_options();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_set_what_the_environment_does_not),
		cmocka_unit_test(bad_lines_are_refused),
		cmocka_unit_test(files),
		cmocka_unit_test(long_paths),
		cmocka_unit_test(messages_are_printable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
