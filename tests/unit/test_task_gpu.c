// SPDX-License-Identifier: MIT
/*
 * Does a task use a GPU (plugin/dump/task_gpu.h), with real tasks of this test:
 * /dev/null stands for the GPU device (the classifier says so for its
 * device number), so a task that opens or maps it "uses a GPU". A task
 * that exited and was reaped is gone, not an error; a zombie uses none; a
 * task with neither fd nor mapping uses none.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/dump/task_gpu.h"

struct gpu_dev {
	dev_t rdev;
	unsigned int asked;
};

static bool is_gpu(void *arg, dev_t rdev)
{
	struct gpu_dev *g = arg;

	g->asked++;
	return rdev == g->rdev;
}

static void gpu_is(struct gpu_dev *g, const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	g->rdev = st.st_rdev;
	g->asked = 0;
}

static int probe(pid_t pid, struct gpu_dev *g)
{
	char err[256] = "";
	int ret = task_gpu_probe("/proc", pid, TASK_GPU_FDS_AND_MAPS, is_gpu, g, err, sizeof(err));

	if (ret < 0)
		print_message("probe: %s\n", err);
	return ret;
}

/* A child that holds `fd` open (or not) and waits on a pipe; returns its pid. */
static pid_t child_waiting(int keep_fd, int *release)
{
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[1]);
		if (keep_fd < 0)
			for (int fd = 3; fd < 64; fd++)
				if (fd != p[0])
					close(fd);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	*release = p[1];
	return pid;
}

static void finish(pid_t pid, int release)
{
	int status;

	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void open_file_is_gpu_use(void **state)
{
	struct gpu_dev g;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	(void)state;
	gpu_is(&g, "/dev/null");
	assert_int_equal(probe(getpid(), &g), TASK_GPU_USES);
	gpu_is(&g, "/dev/zero");
	assert_int_equal(probe(getpid(), &g), TASK_GPU_NONE);
	assert_true(g.asked > 0);
	close(fd);
}

static void mapping_is_gpu_use(void **state)
{
	struct gpu_dev g;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	void *map;

	(void)state;
	assert_true(fd >= 0);
	/* a private mapping of /dev/zero keeps its path in maps; the fd goes */
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	gpu_is(&g, "/dev/zero");
	assert_int_equal(probe(getpid(), &g), TASK_GPU_USES);
	/* the fds alone do not show it */
	assert_int_equal(task_gpu_probe("/proc", getpid(), TASK_GPU_FDS, is_gpu, &g, NULL, 0),
			 TASK_GPU_NONE);
	munmap(map, 4096);
	assert_int_equal(probe(getpid(), &g), TASK_GPU_NONE);
}

static void other_task_without_gpu(void **state)
{
	struct gpu_dev g;
	int release;
	pid_t pid = child_waiting(-1, &release);

	(void)state;
	gpu_is(&g, "/dev/kmsg"); /* nothing of ours has it open */
	assert_int_equal(probe(pid, &g), TASK_GPU_NONE);
	finish(pid, release);
}

static void reaped_task_is_gone(void **state)
{
	struct gpu_dev g;
	int release, status;
	pid_t pid = child_waiting(-1, &release);

	(void)state;
	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	gpu_is(&g, "/dev/null");
	assert_int_equal(probe(pid, &g), TASK_GPU_GONE);
	assert_true(task_gpu_gone("/proc", pid));
	assert_false(task_gpu_gone("/proc", getpid()));
}

static void zombie_uses_none(void **state)
{
	struct gpu_dev g;
	int release, status;
	pid_t pid = child_waiting(0, &release);
	char path[64];
	siginfo_t si;

	(void)state;
	close(release);
	/* exited, not reaped: a zombie keeps its /proc entry and nothing else */
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	assert_int_equal(access(path, F_OK), 0);
	gpu_is(&g, "/dev/null");
	assert_int_equal(probe(pid, &g), TASK_GPU_NONE);
	assert_false(task_gpu_gone("/proc", pid));
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void unlistable_task_is_an_error(void **state)
{
	struct gpu_dev g;
	char err[256] = "";

	(void)state;
	gpu_is(&g, "/dev/null");
	/* ENOTDIR: neither gone nor looked at */
	assert_int_equal(
		task_gpu_probe("/dev/null/x", 1, TASK_GPU_FDS, is_gpu, &g, err, sizeof(err)),
		-ENOTDIR);
	assert_string_equal(err, "pid 1: cannot list /dev/null/x/1/fd: Not a directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_file_is_gpu_use),
		cmocka_unit_test(mapping_is_gpu_use),
		cmocka_unit_test(other_task_without_gpu),
		cmocka_unit_test(reaped_task_is_gone),
		cmocka_unit_test(zombie_uses_none),
		cmocka_unit_test(unlistable_task_is_an_error),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
