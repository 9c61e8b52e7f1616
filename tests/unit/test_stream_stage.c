// SPDX-License-Identifier: MIT
/*
 * The metadata images of a streamed run (plugin/stream_stage.h), against a
 * stream kept as files of a store directory that serves each image once:
 * a dump's flush sends every complete image of the stage (never a .part)
 * and then its manifest, and empties the stage; a restore's fetch asks for
 * the manifests in turn and for every image they name, byte-exact into a
 * new stage; an image a manifest names but the stream lacks, a name that
 * is no image of the plugin, a cut manifest are refused in one line; the
 * stage goes with its files.
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
#include <sys/stat.h>
#include <unistd.h>

#include "common/fullio.h"
#include "plugin/criu_stream.h"
#include "plugin/stream_stage.h"

struct store {
	char dir[64];
	int dir_fd;
	int opened[16]; /* reads, by order of first request */
	char names[16][64];
	int n;
	int reads;
};

static int *served(struct store *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name))
			return &s->opened[i];
	assert_true(s->n < 16);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
	return &s->opened[s->n++];
}

static int store_open(void *arg, const char *name, enum bo_access access)
{
	struct store *s = arg;
	int fd, *count;

	if (access == BO_ACCESS_WRITE)
		return openat(s->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	count = served(s, name);
	if ((*count)++)
		return -ENOENT; /* the streamer serves an image once */
	fd = openat(s->dir_fd, name, O_RDONLY | O_CLOEXEC);
	s->reads++;
	return fd < 0 ? -errno : fd;
}

static int setup(void **state)
{
	struct store *s = calloc(1, sizeof(*s));

	snprintf(s->dir, sizeof(s->dir), "/tmp/stream-stage.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	s->dir_fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct store *s = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	assert_int_equal(system(cmd), 0);
	close(s->dir_fd);
	free(s);
	return 0;
}

static void put(int dir_fd, const char *name, const char *text)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, text, strlen(text)), 0);
	close(fd);
}

static void assert_file(int dir_fd, const char *name, const char *text)
{
	char buf[256] = "";
	int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
	close(fd);
}

static bool exists(int dir_fd, const char *name)
{
	struct stat sb;

	return !fstatat(dir_fd, name, &sb, 0);
}

static void flush_then_fetch(void **state)
{
	struct store *s = *state;
	struct stream_stage dump, rst;
	char err[256] = "", path[256];
	uint32_t count;

	assert_int_equal(stream_stage_open(&dump, "/tmp", store_open, s, err, sizeof(err)), 0);
	put(dump.dir_fd, "amdgpu-kfd-7.img", "process");
	put(dump.dir_fd, "amdgpu-render-8.img", "render");
	put(dump.dir_fd, "amdgpu-kfd-9.img.part", "half");
	assert_int_equal(stream_stage_flush(&dump, err, sizeof(err)), 0);
	assert_true(exists(dump.dir_fd, "amdgpu-kfd-9.img.part")); /* not complete: stays */
	assert_false(exists(dump.dir_fd, "amdgpu-kfd-7.img"));
	assert_true(exists(s->dir_fd, "amdgpu-manifest-0.img"));
	assert_int_equal(stream_stage_flush(&dump, err, sizeof(err)), 0); /* nothing new */
	assert_false(exists(s->dir_fd, "amdgpu-manifest-1.img"));
	assert_int_equal(unlinkat(dump.dir_fd, "amdgpu-kfd-9.img.part", 0), 0);
	put(dump.dir_fd, "amdgpu-hsakmt-5.img", "thunk");
	assert_int_equal(stream_stage_flush(&dump, err, sizeof(err)), 0);
	assert_file(s->dir_fd, "amdgpu-manifest-1.img", "amdgpu-hsakmt-5.img\n");
	snprintf(path, sizeof(path), "%s", dump.path);
	stream_stage_close(&dump);
	assert_int_equal(access(path, F_OK), -1); /* the stage went */

	assert_int_equal(stream_stage_open(&rst, "/tmp", store_open, s, err, sizeof(err)), 0);
	assert_int_equal(stream_stage_fetch(&rst, &count, err, sizeof(err)), 0);
	assert_int_equal(count, 3);
	assert_file(rst.dir_fd, "amdgpu-kfd-7.img", "process");
	assert_file(rst.dir_fd, "amdgpu-render-8.img", "render");
	assert_file(rst.dir_fd, "amdgpu-hsakmt-5.img", "thunk");
	assert_false(exists(rst.dir_fd, "amdgpu-manifest-0.img"));
	/* two manifests, three images, the third manifest asked for and missing */
	assert_int_equal(s->reads, 6);
	for (int i = 0; i < s->n; i++)
		assert_int_equal(s->opened[i], 1);
	stream_stage_close(&rst);
}

static void fetch_refusals(void **state)
{
	struct store *s = *state;
	struct stream_stage st;
	char err[256] = "";
	uint32_t count;

	assert_int_equal(stream_stage_open(&st, "/tmp", store_open, s, err, sizeof(err)), 0);
	assert_int_equal(stream_stage_fetch(&st, &count, err, sizeof(err)), 0);
	assert_int_equal(count, 0); /* no manifest: no image of the plugin */
	stream_stage_close(&st);

	memset(s->opened, 0, sizeof(s->opened));
	put(s->dir_fd, "amdgpu-manifest-0.img", "amdgpu-kfd-1.img\n");
	assert_int_equal(stream_stage_open(&st, "/tmp", store_open, s, err, sizeof(err)), 0);
	assert_int_equal(stream_stage_fetch(&st, &count, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "the image stream has no amdgpu-kfd-1.img, which its manifest "
				 "names: the stream is incomplete");
	stream_stage_close(&st);

	memset(s->opened, 0, sizeof(s->opened));
	put(s->dir_fd, "amdgpu-manifest-0.img", "../etc/passwd\n");
	assert_int_equal(stream_stage_open(&st, "/tmp", store_open, s, err, sizeof(err)), 0);
	assert_int_equal(stream_stage_fetch(&st, &count, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "no image of this plugin"));
	assert_null(strchr(err, '\n'));
	stream_stage_close(&st);

	memset(s->opened, 0, sizeof(s->opened));
	put(s->dir_fd, "amdgpu-manifest-0.img", "amdgpu-kfd-1.img");
	assert_int_equal(stream_stage_open(&st, "/tmp", store_open, s, err, sizeof(err)), 0);
	assert_int_equal(stream_stage_fetch(&st, &count, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "a manifest of the image stream is cut");
	stream_stage_close(&st);
}

/* No CRIU here: the stream's opener says so; an inactive stream leaves a config alone. */
static void criu_opener_outside_criu(void **state)
{
	struct bo_stream_config cfg = {.dir_fd = 3};

	(void)state;
	assert_int_equal(criu_stream_image_open(NULL, "amdgpu-kfd-1.img", BO_ACCESS_READ), -ENOSYS);
	criu_stream_config(&cfg);
	assert_null(cfg.stream_open);
	criu_stream_set_active(CRIU_STREAM_DUMP);
	criu_stream_config(&cfg);
	assert_true(cfg.stream_open == criu_stream_image_open);
	assert_int_equal(criu_stream_image_open(NULL, "amdgpu-kfd-1.img", BO_ACCESS_WRITE),
			 -ENOSYS); /* the symbol is CRIU's */
	criu_stream_set_active(CRIU_STREAM_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(flush_then_fetch, setup, teardown),
		cmocka_unit_test_setup_teardown(fetch_refusals, setup, teardown),
		cmocka_unit_test(criu_opener_outside_criu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
