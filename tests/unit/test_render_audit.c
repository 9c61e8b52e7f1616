// SPDX-License-Identifier: MIT
/*
 * The render-node memory audit (plugin/dump/render_audit.h): amdgpu's fdinfo in
 * the 6.12 and 6.13+ formats; GEM handles counted by GEM_LIST_HANDLES where
 * the kernel has it and by probing GEM_OP otherwise (a model file answers
 * the ioctls); the page-table allowance; a task scan on this test process
 * (its /dev/full fd stands for a render node) that refuses a file with GEM
 * handles and passes one without; before 6.18, the census of handles
 * beyond the probe from amdgpu's debugfs amdgpu_gem_info (a file in a test
 * directory, where the audit's ioctls made this process the owner of the
 * task's files): a handle in a file named after this process refuses,
 * another process's does not, an unreadable file refuses unless
 * AMDGPU_CRIU_GEM_CENSUS=probe; the comparison with the KFD BOs.
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include <libdrm/amdgpu_drm.h>
#include <xf86drm.h>

#include "plugin/dump/gem_info.h"
#include "plugin/dump/render_audit.h"

static const char fdinfo_612[] = "pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t5\n"
				 "drm-driver:\tamdgpu\ndrm-client-id:\t17\npasid:\t32785\n"
				 "drm-memory-vram:\t2052 KiB\ndrm-memory-gtt: \t12 KiB\n"
				 "drm-memory-cpu: \t8 KiB\namd-requested-vram:\t2048 KiB\n"
				 "drm-shared-vram:\t0 KiB\n";

static const char fdinfo_613[] = "drm-driver:\tamdgpu\ndrm-client-id:\t3\n"
				 "drm-total-cpu:\t0\ndrm-shared-cpu:\t0\ndrm-total-gtt:\t12 KiB\n"
				 "drm-total-vram:\t4 MiB\ndrm-resident-vram:\t4 MiB\n"
				 "drm-total-system:\t8 KiB\namd-evicted-vram:\t0 KiB\n";

static void fdinfo_formats(void **state)
{
	struct drm_fdinfo f;

	(void)state;
	assert_int_equal(drm_fdinfo_parse(fdinfo_612, &f), 0);
	assert_string_equal(f.driver, "amdgpu");
	assert_true(f.has_client_id && f.has_memory);
	assert_int_equal(f.client_id, 17);
	assert_int_equal(f.bytes[DRM_REGION_VRAM], 2052 << 10);
	assert_int_equal(f.bytes[DRM_REGION_GTT], 12 << 10);
	assert_int_equal(drm_fdinfo_total(&f), (2052 + 12 + 8) << 10);

	assert_int_equal(drm_fdinfo_parse(fdinfo_613, &f), 0);
	assert_int_equal(f.client_id, 3);
	assert_int_equal(f.bytes[DRM_REGION_VRAM], 4 << 20);
	assert_int_equal(f.bytes[DRM_REGION_CPU], 0);
	assert_int_equal(drm_fdinfo_total(&f), (4 << 20) + (12 << 10)); /* "system" is not ours */

	/* no memory lines: a file of another driver, or a kernel before 5.19 */
	assert_int_equal(drm_fdinfo_parse("pos:\t0\nflags:\t02\n", &f), 0);
	assert_false(f.has_memory || f.has_client_id);
	/* malformed figures are refused, not read as 0 */
	assert_int_equal(drm_fdinfo_parse("drm-total-vram:\tlots\n", &f), -EINVAL);
	assert_int_equal(drm_fdinfo_parse("drm-memory-vram:\t12 KiB junk\n", &f), -EINVAL);
	assert_int_equal(drm_fdinfo_parse("drm-total-vram:\t99999999999999999999 MiB\n", &f),
			 -EINVAL);
}

/* A model render file: handles[i] != 0 is a GEM BO of that size at handle i + 1. */
static struct {
	uint64_t sizes[64];
	bool has_list; /* a 6.18 kernel */
	uint32_t grow; /* LIST_HANDLES: handles that appear at each call (the task runs) */
	uint32_t list_calls;
	int fail_at; /* GEM_OP of this handle fails with EIO */
	uint32_t ops;
} model;

static int model_ioctl(int fd, unsigned long request, void *arg)
{
	(void)fd;
	if (request == DRM_IOCTL_AMDGPU_GEM_OP) {
		struct drm_amdgpu_gem_op *op = arg;
		struct drm_amdgpu_gem_create_in *in = (void *)(uintptr_t)op->value;

		model.ops++;
		if ((int)op->handle == model.fail_at)
			return -EIO;
		if (op->op != AMDGPU_GEM_OP_GET_GEM_CREATE_INFO || !op->handle || op->handle > 64 ||
		    !model.sizes[op->handle - 1])
			return -ENOENT;
		in->bo_size = model.sizes[op->handle - 1];
		return 0;
	}
	if (_IOC_NR(request) == DRM_COMMAND_BASE + 0x19) {
		struct {
			uint64_t entries;
			uint32_t num, pad;
		} *l = arg;
		struct {
			uint32_t handle, flags;
			uint64_t size, domains, alloc_flags, alignment;
		} *e = (void *)(uintptr_t)l->entries;
		uint32_t n = 0, i;

		if (!model.has_list)
			return -EINVAL;
		for (i = 0; i < 64; i++)
			if (model.sizes[i]) {
				if (n < l->num)
					e[n] = (typeof(*e)){.handle = i + 1,
							    .size = model.sizes[i],
							    .flags = i == 0};
				n++;
			}
		n += model.grow * ++model.list_calls;
		l->num = n;
		return 0;
	}
	return -ENOTTY;
}

static void census_by_list_and_by_probe(void **state)
{
	struct gem_census c;

	(void)state;
	memset(&model, 0, sizeof(model));
	model.sizes[0] = 4096;
	model.sizes[40] = 1 << 20;
	model.has_list = true;
	assert_int_equal(gem_census_take(-1, model_ioctl, 16, &c), 0);
	assert_true(c.listed);
	assert_int_equal(c.handles, 2);
	assert_int_equal(c.bytes, 4096 + (1 << 20));
	assert_int_equal(c.imported, 1);
	assert_int_equal(model.ops, 0);

	/* before 6.18: probed up to the limit, so handle 41 is beyond a limit of 16 */
	model.has_list = false;
	assert_int_equal(gem_census_take(-1, model_ioctl, 16, &c), 0);
	assert_false(c.listed);
	assert_int_equal(c.probed, 16);
	assert_int_equal(c.handles, 1);
	assert_int_equal(model.ops, 16);
	assert_int_equal(gem_census_take(-1, model_ioctl, 64, &c), 0);
	assert_int_equal(c.handles, 2);
	assert_int_equal(c.bytes, 4096 + (1 << 20));

	/* an error other than "no such handle" is the census's error */
	model.fail_at = 3;
	assert_int_equal(gem_census_take(-1, model_ioctl, 64, &c), -EIO);

	/* a list that keeps growing (the task runs) is not taken for complete */
	model.fail_at = 0;
	model.has_list = true;
	model.grow = 1;
	assert_int_equal(gem_census_take(-1, model_ioctl, 64, &c), -EAGAIN);
}

static void allowance(void **state)
{
	uint64_t va[2] = {0x7f0000000000ull, 0x7f0000200000ull - 4096};
	uint64_t size[2] = {4096, 8192};

	(void)state;
	assert_int_equal(render_audit_allowance(NULL, NULL, 0), 64 << 10);
	/* one page: a table, a 1 GiB and a 512 GiB directory */
	assert_int_equal(render_audit_allowance(va, size, 1), (64 << 10) + 3 * 4096);
	/* a mapping across a 2 MiB boundary touches two tables */
	assert_int_equal(render_audit_allowance(va + 1, size + 1, 1), (64 << 10) + 4 * 4096);
}

/* This process's /dev/full fd plays a render node of GPU 1234 (not one of the standard streams). */
static dev_t full_rdev;

static int classify(void *arg, dev_t rdev, uint32_t *gpu_id)
{
	(void)arg;
	if (rdev != full_rdev)
		return RENDER_AUDIT_NONE;
	*gpu_id = 1234;
	return RENDER_AUDIT_RENDER;
}

/* A debugfs tree with dri/<minor>/amdgpu_gem_info holding text (NULL: no file). */
static char debugfs_dir[64];

static void write_gem_info(unsigned int minor, const char *text)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dri/%u/amdgpu_gem_info", debugfs_dir, minor);
	unlink(path);
	if (!text)
		return;
	snprintf(path, sizeof(path), "%s/dri", debugfs_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/dri/%u", debugfs_dir, minor);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/dri/%u/amdgpu_gem_info", debugfs_dir, minor);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void remove_debugfs(unsigned int minor)
{
	char path[160];

	write_gem_info(minor, NULL);
	snprintf(path, sizeof(path), "%s/dri/%u", debugfs_dir, minor);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/dri", debugfs_dir);
	rmdir(path);
	rmdir(debugfs_dir);
}

static bool is_42(void *arg, long pid)
{
	(void)arg;
	return pid == 42;
}

static void gem_info_format(void **state)
{
	static const char text[] =
		"pid       42 command app:\n"
		"\t\t0x00000001:        65536 byte VRAM VISIBLE exported as ino:9\n"
		"\t\t0x00001069:         4096 byte GTT CPU_ACCESS_REQUIRED\n"
		"pid        7 command other:\n"
		"\t\t0x00000001:      1048576 byte GTT\n"
		"pid       42 command app:\n"
		"pid        8 command <unknown>:\n";
	struct gem_info_count c;
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");

	(void)state;
	assert_non_null(f);
	assert_int_equal(gem_info_count(f, is_42, NULL, &c), 0);
	fclose(f);
	assert_int_equal(c.files, 2);
	assert_int_equal(c.handles, 2);
	assert_int_equal(c.bytes, 65536 + 4096);

	/* a handle line before any file, or one that does not read, is not amdgpu's */
	f = fmemopen((void *)"\t\t0x00000001: 4096 byte GTT\n", 28, "r");
	assert_int_equal(gem_info_count(f, is_42, NULL, &c), -EINVAL);
	fclose(f);
	f = fmemopen((void *)"pid 42 command a:\nsomething else\n", 33, "r");
	assert_int_equal(gem_info_count(f, is_42, NULL, &c), -EINVAL);
	fclose(f);
}

static char err_last[512];
static struct amdgpu_options defaults; /* options_default(), in main() */

/* The task scan of this process refused with a line containing want. */
static void census_refuses(struct render_audit *a, const char *want)
{
	render_audit_init(a, &defaults);
	a->debugfs = debugfs_dir;
	a->ioctl_fn = model_ioctl;
	a->probe_limit = 64;
	assert_int_equal(render_audit_task(a, getpid(), classify, NULL, err_last, sizeof(err_last)),
			 -EPERM);
	if (!strstr(err_last, want))
		fail_msg("%s: not in \"%s\"", want, err_last);
	render_audit_fini(a);
}

static void task_scan(void **state)
{
	struct amdgpu_options opts = defaults;
	struct render_audit a;
	struct stat st;
	char err[512] = "", text[256];
	int fd = open("/dev/full", O_RDWR);
	unsigned int full_minor;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	full_rdev = st.st_rdev;
	full_minor = minor(st.st_rdev);
	snprintf(debugfs_dir, sizeof(debugfs_dir), "/tmp/test-render-audit-XXXXXX");
	assert_non_null(mkdtemp(debugfs_dir));
	snprintf(text, sizeof(text),
		 "pid %8d command test:\npid %8d command init:\n"
		 "\t\t0x00000001: %12d byte GTT\n",
		 (int)getpid(), 1, 4096);
	write_gem_info(full_minor, text);
	memset(&model, 0, sizeof(model));
	render_audit_init(&a, &defaults);
	a.debugfs = debugfs_dir;
	a.ioctl_fn = model_ioctl;
	a.probe_limit = 64;
	assert_int_equal(render_audit_task(&a, getpid(), classify, NULL, err, sizeof(err)), 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.files[0].fd, fd);
	assert_int_equal(a.files[0].gpu_id, 1234);
	assert_int_equal(a.files[0].gem.probed, 64);
	render_audit_fini(&a);

	/* a GEM BO on it: refused, with the pid, fd, GPU and bytes */
	model.sizes[1] = 3 << 20;
	render_audit_init(&a, &defaults);
	a.ioctl_fn = model_ioctl;
	assert_int_equal(render_audit_task(&a, getpid(), classify, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "1 GEM buffer object of 3072 KiB"));
	assert_non_null(strstr(err, "GPU 1234"));
	{
		char want[64];

		snprintf(want, sizeof(want), "pid %d fd %d ", (int)getpid(), fd);
		assert_non_null(strstr(err, want));
	}
	render_audit_fini(&a);

	/* a task that is gone cannot be audited: an error, not a pass */
	render_audit_init(&a, &defaults);
	assert_int_equal(render_audit_task(&a, 0x7ffffff0, classify, NULL, err, sizeof(err)),
			 -ENOENT);
	render_audit_fini(&a);

	/* no GEM handle within the probe, but amdgpu_gem_info lists one in a file the audit owns */
	memset(&model, 0, sizeof(model));
	snprintf(text, sizeof(text), "pid %8d command test:\n\t\t0x00001069: %12d byte GTT\n",
		 (int)getpid(), 65536);
	write_gem_info(full_minor, text);
	census_refuses(&a, "amdgpu_gem_info lists 1 GEM buffer object of 64 KiB");
	/* no file named after this process or the task: it cannot tell, refused */
	write_gem_info(full_minor, "pid        1 command init:\n");
	census_refuses(&a, "names no file after this CRIU");
	/* no amdgpu_gem_info: refused, unless the probe's reach is accepted */
	write_gem_info(full_minor, NULL);
	census_refuses(&a, "cannot read");
	assert_non_null(strstr(err_last, "AMDGPU_CRIU_GEM_CENSUS=probe"));
	opts.gem_census = RENDER_CENSUS_PROBE;
	render_audit_init(&a, &opts);
	a.debugfs = debugfs_dir;
	a.ioctl_fn = model_ioctl;
	assert_int_equal(render_audit_task(&a, getpid(), classify, NULL, err, sizeof(err)), 0);
	render_audit_fini(&a);
	/* the options' probe reach is the audit's */
	opts.gem_probe = 0;
	render_audit_init(&a, &opts);
	assert_int_equal(a.probe_limit, 0);
	assert_string_equal(a.debugfs, "/sys/kernel/debug");
	remove_debugfs(full_minor);
	close(fd);
}

static void kfd_comparison(void **state)
{
	struct render_audit a;
	struct render_audit_file *f;
	char err[512] = "";

	(void)state;
	render_audit_init(&a, &defaults);
	a.n = a.cap = 2;
	a.files = calloc(2, sizeof(*a.files));
	f = &a.files[0];
	f->pid = 900, f->ns_pid = 5, f->fd = 7, f->minor = 128, f->gpu_id = 1234;
	assert_int_equal(drm_fdinfo_parse(fdinfo_612, &f->info), 0); /* 2072 KiB */
	a.files[1] = *f;
	a.files[1].gpu_id = 99;

	/* 2 MiB of KFD BOs and 64 KiB of allowance cover 2072 KiB */
	assert_int_equal(render_audit_check_kfd(&a, 5, 1234, 2 << 20, 64 << 10, err, sizeof(err)),
			 0);
	assert_true(a.files[0].checked);
	assert_false(a.files[1].checked);
	/* 1 MiB of KFD BOs do not: 1048 KiB lost, refused */
	a.files[0].checked = false;
	assert_int_equal(render_audit_check_kfd(&a, 5, 1234, 1 << 20, 0, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "pid 900 fd 7 (renderD128, GPU 1234)"));
	assert_non_null(strstr(err, "1048 KiB of GPU memory"));
	assert_non_null(strstr(err, "the process's KFD BOs 1024 KiB"));
	/* another process's pid matches nothing */
	a.files[1].checked = false;
	assert_int_equal(render_audit_check_kfd(&a, 6, 99, 0, 0, err, sizeof(err)), 0);
	assert_false(a.files[1].checked);
	render_audit_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fdinfo_formats),  cmocka_unit_test(census_by_list_and_by_probe),
		cmocka_unit_test(gem_info_format), cmocka_unit_test(allowance),
		cmocka_unit_test(task_scan),	   cmocka_unit_test(kfd_comparison),
	};

	options_default(&defaults);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
