// SPDX-License-Identifier: MIT
/*
 * ckpt_check_complete(): a directory left by a cut dump (BO contents
 * without their process image, a .part image) is refused naming the file;
 * kfd_image_write() leaves no .part behind and refuses an existing image.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "images/ckpt_complete.h"
#include "images/kfd_image.h"

struct dir {
	char path[64];
	int fd;
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	snprintf(d->path, sizeof(d->path), "/tmp/test_ckpt_complete.XXXXXX");
	assert_non_null(mkdtemp(d->path));
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->fd >= 0);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	close(d->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->path);
	assert_int_equal(system(cmd), 0);
	free(d);
	return 0;
}

static void touch(const struct dir *d, const char *name)
{
	int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static void empty_and_complete_dirs_pass(void **state)
{
	struct dir *d = *state;
	char err[512] = "";

	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), 0);
	touch(d, "amdgpu-kfd-5.img");
	touch(d, "amdgpu-bo-5-1234.img");
	touch(d, "amdgpu-bo-5-1234.idx");
	touch(d, "amdgpu-render-9.img");
	touch(d, "pages-1.img");
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), 0);
}

static void contents_without_process_image(void **state)
{
	struct dir *d = *state;
	char err[512] = "";

	touch(d, "amdgpu-kfd-5.img");
	touch(d, "amdgpu-bo-7-1234.img");
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "incomplete checkpoint: amdgpu-bo-7-1234.img has no "
				    "amdgpu-kfd-7.img"));
	assert_null(strchr(err, '\n'));
	/* the index alone too */
	assert_int_equal(unlinkat(d->fd, "amdgpu-bo-7-1234.img", 0), 0);
	touch(d, "amdgpu-bo-7-1234.idx");
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "amdgpu-bo-7-1234.idx has no amdgpu-kfd-7.img"));
}

static void part_file_is_incomplete(void **state)
{
	struct dir *d = *state;
	char err[512] = "";

	touch(d, "amdgpu-kfd-6.img.part");
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "incomplete checkpoint: amdgpu-kfd-6.img.part "));
}

static void lookalike_names_are_ignored(void **state)
{
	struct dir *d = *state;
	char err[512] = "";

	touch(d, "amdgpu-bo-x-1.img");
	touch(d, "amdgpu-bo-7-1.imgx");
	touch(d, "amdgpu-bo-7.img");
	touch(d, "amdgpu-bo--1-2.idx");
	touch(d, "other.part");
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), 0);
}

static void image_write_leaves_no_part(void **state)
{
	struct dir *d = *state;
	RenderFileEntry e = RENDER_FILE_ENTRY__INIT;
	char err[512] = "";

	e.minor = 128;
	assert_int_equal(kfd_image_write(d->fd, KFD_IMAGE_RENDER, 3, &e.base, err, sizeof(err)), 0);
	assert_int_equal(faccessat(d->fd, "amdgpu-render-3.img", F_OK, 0), 0);
	assert_int_equal(faccessat(d->fd, "amdgpu-render-3.img.part", F_OK, 0), -1);
	assert_int_equal(ckpt_check_complete(d->fd, err, sizeof(err)), 0);
	/* an image that exists is never replaced */
	assert_int_equal(kfd_image_write(d->fd, KFD_IMAGE_RENDER, 3, &e.base, err, sizeof(err)),
			 -EEXIST);
	assert_non_null(strstr(err, "cannot create amdgpu-render-3.img: File exists"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(empty_and_complete_dirs_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(contents_without_process_image, setup, teardown),
		cmocka_unit_test_setup_teardown(part_file_is_incomplete, setup, teardown),
		cmocka_unit_test_setup_teardown(lookalike_names_are_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(image_write_leaves_no_part, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
