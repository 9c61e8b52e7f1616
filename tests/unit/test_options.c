// SPDX-License-Identifier: MIT
/*
 * The options (options/options.h): one table, one parser for the
 * environment and the options file. Every option's default and values;
 * strict numbers, paths and lists; refusals in one printable line naming the
 * option (and the file's line); the environment over the file; options of
 * another stage not checked; the file itself (missing, a FIFO, too large, a
 * NUL byte, a path too long) refused naming it; the documentation's columns.
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

#include "options/options.h"
#include "options/options_file.h"

/* ---- the environment the parser is given ------------------------------------------------- */

#define ENV_MAX 8
static struct {
	const char *name, *value;
} env[ENV_MAX];

static void env_clear(void)
{
	memset(env, 0, sizeof(env));
}

static void env_set(const char *name, const char *value)
{
	for (size_t i = 0; i < ENV_MAX; i++) {
		if (!env[i].name || !strcmp(env[i].name, name)) {
			env[i].name = name;
			env[i].value = value;
			return;
		}
	}
	fail_msg("more than %d test variables", ENV_MAX);
}

static const char *lookup(const char *name)
{
	for (size_t i = 0; i < ENV_MAX && env[i].name; i++)
		if (!strcmp(env[i].name, name))
			return env[i].value;
	return NULL;
}

#define ALL (OPTIONS_DUMP | OPTIONS_RESTORE)

static char err[1024];

/* The options with only name=value set (and no file): 0 or -errno, err filled. */
static int read_one(struct amdgpu_options *o, const char *name, const char *value)
{
	env_clear();
	env_set(name, value);
	return options_read_text(o, ALL, lookup, NULL, "", err, sizeof(err));
}

/* no byte below 0x20 nor above 0x7e: one printable line */
static void assert_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("byte 0x%02x in \"%s\"", *p, s);
}

/* ---- values ------------------------------------------------------------------------------ */

static void defaults(void **state)
{
	struct amdgpu_options o, given;
	size_t n;
	const struct option_def *t = options_table(&n);

	(void)state;
	options_default(&o);
	assert_int_equal(o.engine.mode, COPY_ENGINE_AUTO);
	assert_int_equal(o.engine.sdma_timeout_ms, 60000);
	assert_true(o.parallel_restore);
	assert_int_equal(o.shared_bo, BO_SHARE_SHARE);
	assert_int_equal(o.gem_probe, 4096);
	assert_int_equal(o.gem_census, RENDER_CENSUS_DEBUGFS);
	assert_string_equal(o.debugfs, "/sys/kernel/debug");
	assert_int_equal(o.direct_io, DIRECT_IO_AUTO);
	assert_true(gpu_select_all(&o.gpus));
	assert_string_equal(o.gpus_shown, "");
	assert_true(o.dev_nodes_create);
	assert_true(o.checks.capability && o.checks.vram_size && o.checks.num_gws &&
		    o.checks.caches_count && o.checks.fw_version && o.checks.sdma_fw_version &&
		    o.checks.numa);
	assert_string_equal(o.file, "");

	/* each default the table documents is a value its parser takes, and the default */
	env_clear();
	for (size_t i = 0; i < n; i++) {
		if (!t[i].deflt)
			continue;
		assert_int_equal(read_one(&given, t[i].name, t[i].deflt), 0);
		if (memcmp(&given, &o, sizeof(o)))
			fail_msg("%s=%s is not the default", t[i].name, t[i].deflt);
	}
	/* empty is unset */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(read_one(&given, t[i].name, ""), 0);
		if (memcmp(&given, &o, sizeof(o)))
			fail_msg("%s= (empty) is not the default", t[i].name);
	}
}

static void every_value(void **state)
{
	struct amdgpu_options o;

	(void)state;
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_COPY_ENGINE", "sdma"), 0);
	assert_int_equal(o.engine.mode, COPY_ENGINE_SDMA);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_COPY_ENGINE", "cpu"), 0);
	assert_int_equal(o.engine.mode, COPY_ENGINE_CPU);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SDMA_TIMEOUT_MS", "2500"), 0);
	assert_int_equal(o.engine.sdma_timeout_ms, 2500);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SDMA_TIMEOUT_MS", "4294967295"), 0);
	assert_int_equal(o.engine.sdma_timeout_ms, UINT32_MAX);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_PARALLEL_RESTORE", "0"), 0);
	assert_false(o.parallel_restore);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SHARED_BO", "refuse"), 0);
	assert_int_equal(o.shared_bo, BO_SHARE_REFUSE);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SHARED_BO", "copy"), 0);
	assert_int_equal(o.shared_bo, BO_SHARE_COPY);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_GEM_PROBE", "0"), 0);
	assert_int_equal(o.gem_probe, 0);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_GEM_PROBE", "2147483647"), 0);
	assert_int_equal(o.gem_probe, INT32_MAX);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_GEM_CENSUS", "probe"), 0);
	assert_int_equal(o.gem_census, RENDER_CENSUS_PROBE);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DEBUGFS", "/mnt/debug fs"), 0);
	assert_string_equal(o.debugfs, "/mnt/debug fs");
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DIRECT_IO", "1"), 0);
	assert_int_equal(o.direct_io, DIRECT_IO_ON);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DIRECT_IO", "0"), 0);
	assert_int_equal(o.direct_io, DIRECT_IO_OFF);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DIRECT_IO", "auto"), 0);
	assert_int_equal(o.direct_io, DIRECT_IO_AUTO);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DEV_NODES", "keep"), 0);
	assert_false(o.dev_nodes_create);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_GPUS", "renderD130, 0xbeef"), 0);
	assert_false(gpu_select_all(&o.gpus));
	assert_int_equal(o.gpus.n_minors, 1);
	assert_int_equal(o.gpus.minors[0], 130);
	assert_int_equal(o.gpus.n_gpu_ids, 1);
	assert_int_equal(o.gpus.gpu_ids[0], 0xbeef);
	assert_string_equal(o.gpus_shown, "renderD130, 0xbeef");

	/* the KFD checks, named and spelt as upstream CRIU's plugin has them */
	env_clear();
	env_set("KFD_VRAM_SIZE_CHECK", "0");
	env_set("KFD_NUMA_CHECK", "no");
	env_set("KFD_FW_VER_CHECK", "NO");
	env_set("KFD_CAPABILITY_CHECK", "yes");
	env_set("KFD_NUM_GWS_CHECK", "1");
	env_set("KFD_CACHES_COUNT_CHECK", "0");
	env_set("KFD_SDMA_FW_VER_CHECK", "No");
	assert_int_equal(options_read_text(&o, OPTIONS_RESTORE, lookup, NULL, "", err, sizeof(err)),
			 0);
	assert_false(o.checks.vram_size);
	assert_false(o.checks.numa);
	assert_false(o.checks.fw_version);
	assert_true(o.checks.capability);
	assert_true(o.checks.num_gws);
	assert_false(o.checks.caches_count);
	assert_false(o.checks.sdma_fw_version);
}

/* The refusal of name=value, exactly. */
static void assert_refused(const char *name, const char *value, const char *want)
{
	struct amdgpu_options o;

	assert_int_equal(read_one(&o, name, value), -EINVAL);
	assert_string_equal(err, want);
}

static void refusals_say_what_to_use(void **state)
{
	(void)state;
	assert_refused("AMDGPU_CRIU_COPY_ENGINE", "gpu",
		       "AMDGPU_CRIU_COPY_ENGINE=gpu: unknown copy engine; use auto (the default), "
		       "sdma or cpu");
	assert_refused("AMDGPU_CRIU_SHARED_BO", "bogus",
		       "AMDGPU_CRIU_SHARED_BO=bogus: unknown sharing policy; use share (the "
		       "default), refuse or copy");
	assert_refused(
		"AMDGPU_CRIU_PARALLEL_RESTORE", "yes",
		"AMDGPU_CRIU_PARALLEL_RESTORE=yes: unknown switch; use 1 (the default) or 0");
	assert_refused("AMDGPU_CRIU_DIRECT_IO", "on",
		       "AMDGPU_CRIU_DIRECT_IO=on: unknown mode; use auto (the default), 1 or 0");
	assert_refused(
		"AMDGPU_CRIU_DEV_NODES", "yes",
		"AMDGPU_CRIU_DEV_NODES=yes: unknown policy; use create (the default) or keep");
	assert_refused("AMDGPU_CRIU_GEM_CENSUS", "bogus",
		       "AMDGPU_CRIU_GEM_CENSUS=bogus: unknown census; use debugfs (the default) or "
		       "probe");
	assert_refused("KFD_NUMA_CHECK", "maybe",
		       "KFD_NUMA_CHECK=maybe: unknown switch; use 1 or yes (the default), 0 or no");
	assert_refused("AMDGPU_CRIU_SDMA_TIMEOUT_MS", "10s",
		       "AMDGPU_CRIU_SDMA_TIMEOUT_MS=10s: not a number of milliseconds from 1 to "
		       "4294967295 (decimal digits)");
	assert_refused("AMDGPU_CRIU_DEBUGFS", "debug",
		       "AMDGPU_CRIU_DEBUGFS=debug: not an absolute path of at most 255 printable "
		       "bytes");
	/* a list's refusal is gpu_select's, naming the option and the value */
	{
		struct amdgpu_options o;

		assert_int_equal(read_one(&o, "AMDGPU_CRIU_GPUS", "0x0x5eb8"), -EINVAL);
		assert_non_null(strstr(err, "AMDGPU_CRIU_GPUS"));
		assert_non_null(strstr(err, "0x0x5eb8"));
	}
}

/* Numbers are decimal digits: strtoul() alone took a newline, a blank, a sign, 0x. */
static void numbers_are_strict(void **state)
{
	static const char *const names[] = {"AMDGPU_CRIU_SDMA_TIMEOUT_MS", "AMDGPU_CRIU_GEM_PROBE"};
	static const char *const bad[] = {"\n5", " 5", "+5", "\t5", "-0",	   "5\n",
					  "0x5", "05", "5 ", "5s",  "99999999999", "1e3"};
	struct amdgpu_options o;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			if (read_one(&o, names[i], bad[j]) != -EINVAL)
				fail_msg("%s: value %zu accepted", names[i], j);
			assert_printable(err);
		}
	}
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SDMA_TIMEOUT_MS", "0"), -EINVAL);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_SDMA_TIMEOUT_MS", "4294967296"), -EINVAL);
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_GEM_PROBE", "2147483648"), -EINVAL);
}

static void paths_and_lists_are_strict(void **state)
{
	static const char *const gpus[] = {"\n128", "0x0x5eb8", "renderD", "+5", "renderD130;x"};
	char path[OPTIONS_PATH_MAX + 1];
	struct amdgpu_options o;

	(void)state;
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DEBUGFS", "/sys/kernel/debug\n/etc"), -EINVAL);
	assert_printable(err);
	memset(path, 'd', sizeof(path) - 1);
	path[0] = '/';
	path[OPTIONS_PATH_MAX] = '\0';
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DEBUGFS", path), -EINVAL);
	path[OPTIONS_PATH_MAX - 1] = '\0';
	assert_int_equal(read_one(&o, "AMDGPU_CRIU_DEBUGFS", path), 0);
	assert_string_equal(o.debugfs, path);
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
		if (read_one(&o, "AMDGPU_CRIU_GPUS", gpus[i]) != -EINVAL)
			fail_msg("AMDGPU_CRIU_GPUS: value %zu accepted", i);
		assert_printable(err);
	}
}

/* Every option's refusal shows a hostile value escaped, on one line. */
static void values_are_shown_escaped(void **state)
{
	static const char hostile[] = "\x1b]0;x\x07\nforged: line";
	struct amdgpu_options o;
	size_t n;
	const struct option_def *t = options_table(&n);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		if (t[i].kind == OPTION_FILE)
			continue;
		if (read_one(&o, t[i].name, hostile) != -EINVAL)
			fail_msg("%s: a hostile value accepted", t[i].name);
		assert_non_null(strstr(err, t[i].name));
		assert_printable(err);
		if (t[i].kind != OPTION_GPUS)
			assert_non_null(strstr(err, "\\x1b]0;x\\x07\\x0aforged: line"));
	}
}

/* A dump does not judge the restore's options, nor a restore the dump's. */
static void stages_read_their_own(void **state)
{
	struct amdgpu_options o;

	(void)state;
	env_clear();
	env_set("AMDGPU_CRIU_PARALLEL_RESTORE", "bogus");
	env_set("AMDGPU_CRIU_SHARED_BO", "refuse");
	assert_int_equal(options_read_text(&o, OPTIONS_DUMP, lookup, NULL, "", err, sizeof(err)),
			 0);
	assert_int_equal(o.shared_bo, BO_SHARE_REFUSE);
	assert_true(o.parallel_restore); /* not read: the default */
	assert_int_equal(options_read_text(&o, OPTIONS_RESTORE, lookup, NULL, "", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "AMDGPU_CRIU_PARALLEL_RESTORE=bogus"));
	env_set("AMDGPU_CRIU_PARALLEL_RESTORE", "0");
	env_set("AMDGPU_CRIU_SHARED_BO", "bogus");
	assert_int_equal(options_read_text(&o, OPTIONS_RESTORE, lookup, NULL, "", err, sizeof(err)),
			 0);
	assert_false(o.parallel_restore);
	assert_int_equal(o.shared_bo, BO_SHARE_SHARE);
	/* both engines' options are both stages' */
	env_set("AMDGPU_CRIU_COPY_ENGINE", "gpu");
	assert_int_equal(options_read_text(&o, OPTIONS_RESTORE, lookup, NULL, "", err, sizeof(err)),
			 -EINVAL);
	env_set("AMDGPU_CRIU_SHARED_BO", "share");
	assert_int_equal(options_read_text(&o, OPTIONS_DUMP, lookup, NULL, "", err, sizeof(err)),
			 -EINVAL);
}

/* ---- the options file ------------------------------------------------------------------------ */

static void file_sets_what_the_environment_does_not(void **state)
{
	static const char text[] = "# a node's defaults\n"
				   "\n"
				   "  AMDGPU_CRIU_COPY_ENGINE = cpu  \n"
				   "AMDGPU_CRIU_SHARED_BO=refuse\r\n"
				   "AMDGPU_CRIU_DEV_NODES=keep\n"
				   "KFD_NUMA_CHECK=no\n"
				   "AMDGPU_CRIU_DIRECT_IO=1";
	struct amdgpu_options o;

	(void)state;
	env_clear();
	env_set("AMDGPU_CRIU_SHARED_BO", "copy");
	env_set("AMDGPU_CRIU_DEV_NODES", ""); /* set empty: the default, not the file's */
	assert_int_equal(options_read_text(&o, ALL, lookup, text, "t.conf", err, sizeof(err)), 0);
	assert_int_equal(o.engine.mode, COPY_ENGINE_CPU);
	assert_int_equal(o.shared_bo, BO_SHARE_COPY); /* the environment's */
	assert_true(o.dev_nodes_create);
	assert_false(o.checks.numa);
	assert_int_equal(o.direct_io, DIRECT_IO_ON);
	assert_int_equal(o.from_file, 3);
	assert_string_equal(o.file, "t.conf");
}

static void bad_lines_are_refused(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"AMDGPU_CRIU_COPY_ENGINE=sdma\nKFD_SECRET=1\n",
		 "options file t.conf line 2: KFD_SECRET is no option of the plugin "
		 "(`amdgpu-criu options` lists them)"},
		{"# ok\nAMDGPU_CRIU_COPY_ENGINE\n",
		 "options file t.conf line 2: \"AMDGPU_CRIU_COPY_ENGINE\" is no NAME=VALUE"},
		{"AMDGPU_CRIU_GEM_PROBE=1\n\nAMDGPU_CRIU_GEM_PROBE=2\n",
		 "options file t.conf line 3: AMDGPU_CRIU_GEM_PROBE set again (first on line 1)"},
		{"AMDGPU_CRIU_CONFIG=/etc/other.conf\n",
		 "options file t.conf line 1: AMDGPU_CRIU_CONFIG is read from the environment "
		 "only"},
		{"# engine\nAMDGPU_CRIU_COPY_ENGINE=gpu\n",
		 "options file t.conf line 2: AMDGPU_CRIU_COPY_ENGINE=gpu: unknown copy engine; "
		 "use "
		 "auto (the default), sdma or cpu"},
	};
	struct amdgpu_options o;

	(void)state;
	env_clear();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(options_read_text(&o, ALL, lookup, cases[i].text, "t.conf", err,
						   sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, cases[i].want);
	}
	/* a bad value the environment overrides is not the file's error */
	env_set("AMDGPU_CRIU_COPY_ENGINE", "sdma");
	assert_int_equal(
		options_read_text(&o, ALL, lookup, cases[4].text, "t.conf", err, sizeof(err)), 0);
	/* hostile bytes in a line or a name: shown escaped */
	assert_int_equal(options_read_text(&o, ALL, lookup, "\x1b]0;x\x07 forged\n", "t.conf", err,
					   sizeof(err)),
			 -EINVAL);
	assert_printable(err);
	assert_int_equal(options_read_text(&o, ALL, lookup, "AMDGPU_\x1b[2J=1\n", "t\n.conf", err,
					   sizeof(err)),
			 -EINVAL);
	assert_printable(err);
}

static char dir[64];

/* dir/name holds text; AMDGPU_CRIU_CONFIG names it. */
static void write_file(const char *name, const char *text, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	env_set(OPTIONS_FILE_ENV, path);
}

static void files(void **state)
{
	char fifo[128], path[128], *big;
	struct amdgpu_options o;

	(void)state;
	env_clear();
	snprintf(dir, sizeof(dir), "/tmp/test-options-XXXXXX");
	assert_non_null(mkdtemp(dir));

	write_file("ok.conf", "AMDGPU_CRIU_GEM_CENSUS=probe\n", 29);
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), 0);
	assert_int_equal(o.from_file, 1);
	assert_non_null(strstr(o.file, "ok.conf"));
	assert_int_equal(o.gem_census, RENDER_CENSUS_PROBE);

	/* named but missing */
	env_set(OPTIONS_FILE_ENV, "/nonexistent/amdgpu.conf");
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "options file /nonexistent/amdgpu.conf: "));

	/* a FIFO never blocks the plugin */
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	env_set(OPTIONS_FILE_ENV, fifo);
	assert_true(options_read(&o, ALL, lookup, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "FIFO"));
	unlink(fifo);

	/* too large, or with a NUL byte */
	big = calloc(1, OPTIONS_FILE_MAX + 10);
	assert_non_null(big);
	memset(big, '#', OPTIONS_FILE_MAX + 9);
	write_file("big.conf", big, OPTIONS_FILE_MAX + 9);
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), -EFBIG);
	write_file("nul.conf", "AMDGPU_CRIU_GEM_PROBE=1\0\n", 25);
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NUL byte"));
	free(big);

	/* a name with hostile bytes: shown escaped */
	env_set(OPTIONS_FILE_ENV, "/nonexistent/\x1b]0;x\x07\nforged: line");
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), -ENOENT);
	assert_printable(err);
	assert_non_null(strstr(err, "/nonexistent/\\x1b]0;x\\x07\\x0aforged: line"));

	for (size_t i = 0; i < 3; i++) {
		static const char *const names[] = {"ok.conf", "big.conf", "nul.conf"};

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	env_clear();
}

/*
 * AMDGPU_CRIU_CONFIG naming a path longer than the buffer: refused in one
 * line, never read cut short (where it would name another file); a long
 * path that fits is read whole.
 */
static void long_paths(void **state)
{
	char base[64], cut[PATH_MAX], named[PATH_MAX + 8], sub[PATH_MAX], small[256];
	static char path[PATH_MAX];
	struct amdgpu_options o;
	char *text = NULL;
	size_t n;
	FILE *f;

	(void)state;
	env_clear();
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
	assert_int_equal(options_file_read(named, small, sizeof(small), &text, err, sizeof(err)),
			 -ENAMETOOLONG);
	assert_null(text);
	assert_non_null(strstr(err, OPTIONS_FILE_ENV));
	assert_non_null(strstr(err, "256 bytes"));
	assert_printable(err);

	/* a path of 300 bytes (two directories deep) is read whole */
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
	env_set(OPTIONS_FILE_ENV, path);
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), 0);
	assert_int_equal(o.from_file, 1);
	assert_int_equal(o.gem_census, RENDER_CENSUS_PROBE);
	unlink(path);
	rmdir(sub);

	/* longer than PATH_MAX: refused before anything is opened */
	memset(named, 'p', sizeof(named) - 1);
	named[0] = '/';
	named[sizeof(named) - 1] = '\0';
	env_set(OPTIONS_FILE_ENV, named);
	assert_int_equal(options_read(&o, ALL, lookup, err, sizeof(err)), -ENAMETOOLONG);
	assert_printable(err);

	unlink(cut);
	rmdir(base);
	env_clear();
}

/* ---- the documentation's columns ------------------------------------------------------------- */

static const struct option_def *def_of(const char *name)
{
	size_t n;
	const struct option_def *t = options_table(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	fail_msg("%s is not in the table", name);
	return NULL;
}

static void documentation(void **state)
{
	char values[320];
	size_t n;
	const struct option_def *t = options_table(&n);

	(void)state;
	options_values_text(def_of("AMDGPU_CRIU_COPY_ENGINE"), values, sizeof(values));
	assert_string_equal(values, "`auto`, `sdma`, `cpu`");
	options_values_text(def_of("AMDGPU_CRIU_PARALLEL_RESTORE"), values, sizeof(values));
	assert_string_equal(values, "`1`, `0`");
	options_values_text(def_of("AMDGPU_CRIU_DEV_NODES"), values, sizeof(values));
	assert_string_equal(values, "`create`, `keep`");
	options_values_text(def_of("AMDGPU_CRIU_SDMA_TIMEOUT_MS"), values, sizeof(values));
	assert_string_equal(values, "`60000` (1 to 4294967295)");
	options_values_text(def_of("AMDGPU_CRIU_COPY_ENGINE"), values, 8);
	assert_string_equal(values, "`auto`,");
	/* every option has its help, a stage, and a name of its own */
	for (size_t i = 0; i < n; i++) {
		assert_true(t[i].help && *t[i].help && t[i].stages);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(t[i].name, t[j].name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(every_value),
		cmocka_unit_test(refusals_say_what_to_use),
		cmocka_unit_test(numbers_are_strict),
		cmocka_unit_test(paths_and_lists_are_strict),
		cmocka_unit_test(values_are_shown_escaped),
		cmocka_unit_test(stages_read_their_own),
		cmocka_unit_test(file_sets_what_the_environment_does_not),
		cmocka_unit_test(bad_lines_are_refused),
		cmocka_unit_test(files),
		cmocka_unit_test(long_paths),
		cmocka_unit_test(documentation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
