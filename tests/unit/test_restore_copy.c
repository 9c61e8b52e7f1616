// SPDX-License-Identifier: MIT
/*
 * Parallel restore (plugin/restore/restore_copy.h) across real processes: the test
 * process is the CRIU master with its copier running; a forked child is the
 * restored task, which offers its BOs (memfds standing in for the BOs and
 * their render-node files) and exits. The copier must take the task's fds
 * (pidfd_getfd), write every byte from the images, and report; a task whose
 * manifest names an fd it does not have is refused at once (it then copies
 * itself); damaged contents fail the copy and the master's wait, with the
 * copier's line replayed by the main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd_compare.h"
#include "datapath/bo_stream.h"
#include "plugin/restore/restore_copy.h"

#define ID   3u
#define GPU  0x1000u
#define SIZE (3u << 20) /* a chunk and a half of the default chunk... and more */

struct fixture {
	char dir[64];
	int dir_fd;
	int src, dst; /* the BO at dump time, the restored BO */
	struct shared_state *sh;
	struct restore_copier copier;
};

static int make_memfd(uint64_t size, unsigned int seed)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);
	uint8_t buf[4096];
	uint64_t off;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	for (off = 0; seed && off < size; off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)((off + i) * 2654435761u >> 13 ^ seed);
		assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)off), (ssize_t)sizeof(buf));
	}
	return fd;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct bo_stream_bo bo;
	struct bo_stream_gpu gpu = {.gpu_id = GPU, .bo_count = 1, .bos = &bo};
	struct bo_stream_config cfg = {0};
	struct copy_engine_opts opts = {.mode = COPY_ENGINE_CPU};
	const uint32_t ids[] = {ID};
	char err[256];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/test-restore-copy-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->src = make_memfd(SIZE, 77);
	f->dst = make_memfd(SIZE, 0);
	bo = (struct bo_stream_bo){.size = SIZE, .dmabuf_fd = dup(f->src)};
	cfg.dir_fd = f->dir_fd;
	cfg.image_id = ID;
	if (bo_stream_dump(&cfg, &gpu, 1, err, sizeof(err)))
		return -1;
	f->sh = shared_state_create(ids, 1);
	if (!f->sh || restore_copier_start(&f->copier, f->sh, f->dir_fd, &opts))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char name[64];

	restore_copier_stop(&f->copier);
	shared_state_destroy(f->sh);
	bo_stream_file_name(name, sizeof(name), ID, GPU, "img");
	unlinkat(f->dir_fd, name, 0);
	bo_stream_file_name(name, sizeof(name), ID, GPU, "idx");
	unlinkat(f->dir_fd, name, 0);
	close(f->dir_fd);
	rmdir(f->dir);
	close(f->src);
	close(f->dst);
	free(f);
	return 0;
}

/*
 * The restored task: claims the image, offers its one BO (dma-buf fd
 * dmabuf_fd, render-node file = the dst memfd at offset 0) and exits with
 * 0 when taken, 1 when it must copy itself, 2 on another error.
 */
static int task(struct fixture *f, int dmabuf_fd)
{
	struct bo_stream_bo bo = {.size = SIZE, .dmabuf_fd = dmabuf_fd};
	struct bo_render_map *map = calloc(1, sizeof(*map));
	struct copy_gpu copy = {.gpu_id = GPU, .render_minor = 128};
	struct bo_stream_gpu gpu = {.gpu_id = GPU, .bo_count = 1, .bos = &bo};
	struct bo_render_engine engine;
	struct restore_copy_set set = {.image_id = ID,
				       .pid = 4242,
				       .n = 1,
				       .copy = &copy,
				       .gpus = &gpu,
				       .engines = &engine};
	int ret;

	*map = (struct bo_render_map){.dmabuf_fd = dmabuf_fd, .drm_fd = f->dst, .offset = 0};
	bo_render_engine_init(&engine, map, 1);
	gpu.engine = &engine.engine;
	if (shared_image_begin(f->sh, ID, (uint32_t)getpid(), shared_deadline(5000)))
		return 2;
	ret = restore_copy_offer(f->sh, &set);
	shared_image_end(f->sh, ID, 0, SIZE, 1, shared_deadline(5000));
	return ret == 0 ? 0 : ret == -EAGAIN ? 1 : 2;
}

static int run_task(struct fixture *f, int dmabuf_fd)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (!pid)
		_exit(task(f, dmabuf_fd));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Can this process take an fd of its child (pidfd_getfd: Linux 5.6+, not blocked by a sandbox)? */
static bool pidfd_getfd_works(void)
{
	pid_t child = fork();
	int pidfd, fd = -1, status;

	if (!child) {
		pause();
		_exit(0);
	}
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (pidfd >= 0)
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, 0, 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	if (fd >= 0)
		close(fd);
	if (pidfd >= 0)
		close(pidfd);
	return fd >= 0;
}

static void copier_writes_every_byte(void **state)
{
	struct fixture *f = *state;
	struct shared_image img;

	if (!pidfd_getfd_works()) {
		/* the copier must refuse, and the task copy itself */
		print_message("# pidfd_getfd is not available here: checking the fallback\n");
		assert_int_equal(run_task(f, dup(f->dst)), 1);
		return;
	}
	assert_int_equal(run_task(f, dup(f->dst)), 0); /* taken; the task has ended */
	assert_int_equal(restore_copier_wait(&f->copier, ID, shared_deadline(60000)), 0);
	assert_int_equal(shared_image_get(f->sh, ID, &img, shared_deadline(1000)), 0);
	assert_int_equal(img.handoff, SHARED_HANDOFF_COPIED);
	assert_int_equal(img.copy_error, 0);
	assert_int_equal(img.copy_bytes, SIZE);
	assert_same_bytes(f->src, f->dst, SIZE);
}

static void unknown_fd_is_refused(void **state)
{
	struct fixture *f = *state;
	struct shared_image img;

	assert_int_equal(run_task(f, 1000), 1); /* fd 1000 is not open in the task */
	assert_int_equal(shared_image_get(f->sh, ID, &img, shared_deadline(1000)), 0);
	assert_int_equal(img.handoff, SHARED_HANDOFF_REFUSED);
	/* nothing to wait for: the task copies itself */
	assert_int_equal(restore_copier_wait(&f->copier, ID, shared_deadline(1000)), 0);
}

static void damaged_contents_fail_the_wait(void **state)
{
	struct fixture *f = *state;
	char name[64];
	uint8_t c;
	int fd;

	bo_stream_file_name(name, sizeof(name), ID, GPU, "img");
	fd = openat(f->dir_fd, name, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, SIZE - 5), 1);
	c ^= 1;
	assert_int_equal(pwrite(fd, &c, 1, SIZE - 5), 1);
	close(fd);
	assert_int_equal(run_task(f, dup(f->dst)), 0);
	assert_int_equal(restore_copier_wait(&f->copier, ID, shared_deadline(60000)), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(copier_writes_every_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_fd_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(damaged_contents_fail_the_wait, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
