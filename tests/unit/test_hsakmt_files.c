// SPDX-License-Identifier: MIT
/*
 * libhsakmt's shared files (plugin/hsakmt_files.h) with this test process as
 * the dumped one and a temporary directory as /dev/shm: the creator of the
 * semaphore (mapping glibc's deleted temporary name) gets the name unlinked,
 * files mapped by name are recorded with their bytes; at restore, missing
 * files are created as recorded, files of the same size are left alone,
 * another size or a symlink is refused with a line naming the file, and an
 * image naming any other path is refused with nothing created (escaped, on
 * one line). A refusal found in any image, entry or existing file leaves
 * nothing behind: every image is checked before a file is created.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "images/kfd_image.h"
#include "plugin/hsakmt_files.h"

struct fixture {
	char shm[64], img[64];
	char shm_path[128], sem_path[128];
	struct hsakmt_paths paths;
	void *maps[2];
	size_t map_len[2];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(f->shm, sizeof(f->shm), "%s/hsakmt-shm-XXXXXX", tmp);
	snprintf(f->img, sizeof(f->img), "%s/hsakmt-img-XXXXXX", tmp);
	assert_non_null(mkdtemp(f->shm));
	assert_non_null(mkdtemp(f->img));
	snprintf(f->shm_path, sizeof(f->shm_path), "%s/hsakmt_shared_mem", f->shm);
	snprintf(f->sem_path, sizeof(f->sem_path), "%s/sem.hsakmt_semaphore", f->shm);
	f->paths = (struct hsakmt_paths){.proc = "/proc",
					 .shm_dir = f->shm,
					 .shm_name = "hsakmt_shared_mem",
					 .sem_name = "sem.hsakmt_semaphore"};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[200];

	for (int i = 0; i < 2; i++)
		if (f->maps[i])
			munmap(f->maps[i], f->map_len[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", f->shm, f->img);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* a shared mapping of a new file at path with len bytes of `byte` */
static void *map_new(const char *path, size_t len, int byte)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	void *p;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, byte, len);
	close(fd);
	return p;
}

/* what libhsakmt does: shm by name; the semaphore as sem_open() makes it */
static void as_libhsakmt(struct fixture *f, int creator)
{
	char tmp[160];

	f->maps[0] = map_new(f->shm_path, 8, 0x11);
	f->map_len[0] = 8;
	if (!creator) {
		f->maps[1] = map_new(f->sem_path, 32, 0x22);
	} else {
		snprintf(tmp, sizeof(tmp), "%s/sem.Ab3xYz", f->shm);
		f->maps[1] = map_new(tmp, 32, 0x22);
		assert_int_equal(link(tmp, f->sem_path), 0);
		assert_int_equal(unlink(tmp), 0);
	}
	f->map_len[1] = 32;
}

static HsakmtFilesEntry *load(struct fixture *f)
{
	HsakmtFilesEntry *e = NULL;
	char why[256];
	int dir = open(f->img, O_RDONLY | O_DIRECTORY);

	assert_int_equal(hsakmt_files_image_load(dir, (uint32_t)getpid(), &e, why, sizeof(why)), 0);
	close(dir);
	return e;
}

static int dump(struct fixture *f, struct hsakmt_dump_result *res, char *why, size_t len)
{
	int dir = open(f->img, O_RDONLY | O_DIRECTORY), ret;

	ret = hsakmt_files_dump(&f->paths, getpid(), dir, res, why, len);
	close(dir);
	return ret;
}

/* The images as the checkpoint loader hands them over, then the restore. */
static int restore(struct fixture *f, unsigned int *created, char *why, size_t len)
{
	int dir = open(f->img, O_RDONLY | O_DIRECTORY), ret;
	HsakmtFilesEntry **images = NULL;
	uint32_t *pids = NULL;
	size_t n = 0, i = 0;

	ret = kfd_image_list(dir, KFD_IMAGE_HSAKMT, &pids, &n, why, len);
	images = calloc(n + 1, sizeof(*images));
	assert_non_null(images);
	for (; !ret && i < n; i++)
		ret = hsakmt_files_image_load(dir, pids[i], &images[i], why, len);
	if (!ret)
		ret = hsakmt_files_restore(&f->paths, images, pids, n, created, why, len);
	for (i = 0; i < n; i++)
		if (images[i])
			hsakmt_files_entry__free_unpacked(images[i], NULL);
	free(images);
	free(pids);
	close(dir);
	return ret;
}

static void creator_gets_name_unlinked(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	HsakmtFilesEntry *e;
	char why[256] = "";

	as_libhsakmt(f, 1);
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	assert_true(res.semaphore_unlinked);
	assert_int_equal(res.recorded, 1);
	assert_int_equal(access(f->sem_path, F_OK), -1); /* CRIU sees a nameless file now */
	assert_int_equal(access(f->shm_path, F_OK), 0);
	e = load(f);
	assert_int_equal(e->n_files, 1);
	assert_string_equal(e->files[0]->path, f->shm_path);
	assert_int_equal(e->files[0]->size, 8);
	assert_int_equal(e->files[0]->mode, 0644);
	assert_memory_equal(e->files[0]->contents.data, "\x11\x11\x11\x11\x11\x11\x11\x11", 8);
	assert_true(e->semaphore_unlinked);
	hsakmt_files_entry__free_unpacked(e, NULL);
}

static void user_records_both(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	HsakmtFilesEntry *e;
	char why[256] = "";

	as_libhsakmt(f, 0);
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	assert_false(res.semaphore_unlinked);
	assert_int_equal(res.recorded, 2);
	assert_int_equal(access(f->sem_path, F_OK), 0);
	e = load(f);
	assert_int_equal(e->n_files, 2);
	assert_string_equal(e->files[1]->path, f->sem_path);
	assert_int_equal(e->files[1]->size, 32);
	hsakmt_files_entry__free_unpacked(e, NULL);
}

/* a big file by libhsakmt's name is not libhsakmt's: not recorded, no error */
static void big_file_not_recorded(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	char why[256] = "";

	f->maps[0] = map_new(f->shm_path, 8192, 0x33);
	f->map_len[0] = 8192;
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	assert_int_equal(res.recorded, 0);
	assert_false(res.semaphore_unlinked);
}

static void nothing_mapped_no_image(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	char why[256] = "", name[KFD_IMAGE_NAME_MAX], path[200];

	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	assert_int_equal(res.recorded, 0);
	kfd_image_name(name, sizeof(name), KFD_IMAGE_HSAKMT, (uint32_t)getpid());
	snprintf(path, sizeof(path), "%s/%s", f->img, name);
	assert_int_equal(access(path, F_OK), -1);
}

static void restore_creates_missing_keeps_existing(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	unsigned int created;
	char why[256] = "", buf[40];
	struct stat st;
	int fd;

	as_libhsakmt(f, 0);
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	munmap(f->maps[0], 8), munmap(f->maps[1], 32);
	f->maps[0] = f->maps[1] = NULL;
	unlink(f->shm_path), unlink(f->sem_path);
	/* the semaphore is there with other bytes (another process's): kept */
	fd = open(f->sem_path, O_WRONLY | O_CREAT, 0600);
	memset(buf, 0x77, sizeof(buf));
	assert_int_equal(write(fd, buf, 32), 32);
	close(fd);
	assert_int_equal(restore(f, &created, why, sizeof(why)), 0);
	assert_int_equal(created, 1);
	assert_int_equal(stat(f->shm_path, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_int_equal(st.st_mode & 0777, 0644);
	fd = open(f->shm_path, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 8);
	close(fd);
	assert_memory_equal(buf, "\x11\x11\x11\x11\x11\x11\x11\x11", 8);
	fd = open(f->sem_path, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 32);
	close(fd);
	assert_int_equal((unsigned char)buf[0], 0x77);
	/* a second restore of the same checkpoint: nothing to create */
	assert_int_equal(restore(f, &created, why, sizeof(why)), 0);
	assert_int_equal(created, 0);
}

static void restore_refuses_other_size_and_symlink(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	unsigned int created;
	char why[256] = "";
	int fd;

	as_libhsakmt(f, 1);
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	munmap(f->maps[0], 8);
	f->maps[0] = NULL;
	unlink(f->shm_path);
	fd = open(f->shm_path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EEXIST);
	assert_non_null(strstr(why, f->shm_path));
	assert_non_null(strstr(why, "10 bytes"));
	assert_non_null(strstr(why, "remove it"));
	unlink(f->shm_path);
	assert_int_equal(symlink("/etc/passwd", f->shm_path), 0);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EEXIST);
	assert_non_null(strstr(why, "non-regular"));
}

static void write_entry(struct fixture *f, const char *path, uint64_t size, size_t len)
{
	static uint8_t bytes[64];
	HsakmtFileEntry file = HSAKMT_FILE_ENTRY__INIT, *list[1] = {&file};
	HsakmtFilesEntry e = HSAKMT_FILES_ENTRY__INIT;
	char why[256];
	int dir = open(f->img, O_RDONLY | O_DIRECTORY);

	file.path = (char *)path;
	file.size = size;
	file.mode = 0666;
	file.contents.data = bytes;
	file.contents.len = len;
	e.n_files = 1;
	e.files = list;
	assert_int_equal(kfd_image_write(dir, KFD_IMAGE_HSAKMT, 7, &e.base, why, sizeof(why)), 0);
	close(dir);
}

/* amdgpu-hsakmt-<pid>.img naming paths[0..n-1] with sizes[i] bytes each (mode 0666) */
static void write_image(struct fixture *f, uint32_t pid, const char *const *paths,
			const uint64_t *sizes, size_t n)
{
	static uint8_t bytes[64];
	HsakmtFileEntry files[4], *list[4];
	HsakmtFilesEntry e = HSAKMT_FILES_ENTRY__INIT;
	char why[256];
	int dir = open(f->img, O_RDONLY | O_DIRECTORY);

	assert_true(n <= 4);
	for (size_t i = 0; i < n; i++) {
		files[i] = (HsakmtFileEntry)HSAKMT_FILE_ENTRY__INIT;
		files[i].path = (char *)paths[i];
		files[i].size = sizes[i];
		files[i].mode = 0666;
		files[i].contents.data = bytes;
		files[i].contents.len = (size_t)sizes[i];
		list[i] = &files[i];
	}
	e.n_files = n;
	e.files = list;
	assert_int_equal(kfd_image_write(dir, KFD_IMAGE_HSAKMT, pid, &e.base, why, sizeof(why)), 0);
	close(dir);
}

static void unlink_image(struct fixture *f, uint32_t pid)
{
	char name[KFD_IMAGE_NAME_MAX], path[200];

	kfd_image_name(name, sizeof(name), KFD_IMAGE_HSAKMT, pid);
	snprintf(path, sizeof(path), "%s/%s", f->img, name);
	assert_int_equal(unlink(path), 0);
}

/* no byte below 0x20 (a newline included) nor 0x7f..0xff: one printable line */
static void assert_one_printable_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("byte 0x%02x at %zu of \"%s\"", *p,
				 (size_t)(p - (const unsigned char *)s), s);
}

/* the refusal of a path that is not libhsakmt's names it escaped, on one line */
static void refusal_line_is_escaped(void **state)
{
	struct fixture *f = *state;
	unsigned int created;
	char why[512] = "", path[200];
	const char *paths[1] = {path};
	const uint64_t sizes[1] = {8};

	snprintf(path, sizeof(path), "%s/\x1b]0;x\x07\nforged line\x9b", f->shm);
	write_image(f, 7, paths, sizes, 1);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_one_printable_line(why);
	assert_non_null(strstr(why, "\\x1b]0;x\\x07\\x0aforged line"));
	assert_int_equal(created, 0);

	/* refused as the image is read (not a plain absolute path) */
	unlink_image(f, 7);
	snprintf(path, sizeof(path), "\x1b]0;x\x07\n../forged line");
	write_image(f, 7, paths, sizes, 1);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_one_printable_line(why);
	assert_non_null(strstr(why, "'\\x1b]0;x\\x07\\x0a../forged line' is not a plain"));
}

/* (a) the semaphore there with another size: the shared memory it needs is not created */
static void refusal_creates_nothing(void **state)
{
	struct fixture *f = *state;
	struct hsakmt_dump_result res;
	unsigned int created = 9;
	char why[256] = "", buf[31];
	int fd;

	as_libhsakmt(f, 0);
	assert_int_equal(dump(f, &res, why, sizeof(why)), 0);
	assert_int_equal(res.recorded, 2);
	munmap(f->maps[0], 8), munmap(f->maps[1], 32);
	f->maps[0] = f->maps[1] = NULL;
	unlink(f->shm_path), unlink(f->sem_path);
	fd = open(f->sem_path, O_WRONLY | O_CREAT, 0600);
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EEXIST);
	assert_non_null(strstr(why, "31 bytes"));
	if (!access(f->shm_path, F_OK))
		fail_msg("%s was created, then left by the refusal: %s", f->shm_path, why);
	assert_int_equal(created, 0);
}

/* (b) one image naming the same file twice: refused, nothing created, every time */
static void same_file_twice_refused(void **state)
{
	struct fixture *f = *state;
	unsigned int created = 9;
	char why[256] = "";
	const char *paths[2] = {f->shm_path, f->shm_path};
	const uint64_t sizes[2] = {8, 4};

	write_image(f, 7, paths, sizes, 2);
	for (int attempt = 0; attempt < 2; attempt++) {
		int ret = restore(f, &created, why, sizeof(why));

		if (!access(f->shm_path, F_OK))
			fail_msg("attempt %d: %s was left: %s", attempt, f->shm_path, why);
		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(why, "twice"));
		assert_int_equal(created, 0);
	}
}

/* (c) a valid image, then one naming another path: refused before the first creates anything */
static void later_image_refused_first(void **state)
{
	struct fixture *f = *state;
	unsigned int created = 9;
	char why[256] = "";
	const char *good[1] = {f->shm_path}, *evil[1] = {"/etc/passwd"};
	const uint64_t size[1] = {8};

	write_image(f, 7, good, size, 1);
	write_image(f, 8, evil, size, 1);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "amdgpu-hsakmt-8.img"));
	assert_non_null(strstr(why, "not one of libhsakmt's files"));
	if (!access(f->shm_path, F_OK))
		fail_msg("%s was created, then left by the refusal: %s", f->shm_path, why);
	assert_int_equal(created, 0);
}

/* two processes' images naming the same file with the same size: created once */
static void shared_file_created_once(void **state)
{
	struct fixture *f = *state;
	unsigned int created = 9;
	char why[256] = "";
	const char *paths[1] = {f->shm_path};
	const uint64_t size[1] = {8};
	struct stat st;

	write_image(f, 7, paths, size, 1);
	write_image(f, 8, paths, size, 1);
	assert_int_equal(restore(f, &created, why, sizeof(why)), 0);
	assert_int_equal(created, 1);
	assert_int_equal(stat(f->shm_path, &st), 0);
	assert_int_equal(st.st_size, 8);
}

static void hostile_paths_refused(void **state)
{
	struct fixture *f = *state;
	unsigned int created = 9;
	char why[256] = "", other[160], name[KFD_IMAGE_NAME_MAX], path[200];

	snprintf(other, sizeof(other), "%s/evil", f->shm);
	write_entry(f, other, 8, 8);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not one of libhsakmt's files"));
	assert_int_equal(access(other, F_OK), -1);
	assert_int_equal(created, 0);

	kfd_image_name(name, sizeof(name), KFD_IMAGE_HSAKMT, 7);
	snprintf(path, sizeof(path), "%s/%s", f->img, name);
	unlink(path);
	write_entry(f, f->shm_path, 4096 * 1024, 8); /* size and contents disagree */
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_int_equal(access(f->shm_path, F_OK), -1);

	unlink(path);
	snprintf(other, sizeof(other), "%s/../hsakmt_shared_mem", f->shm);
	write_entry(f, other, 8, 8);
	assert_int_equal(restore(f, &created, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "plain absolute path"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(creator_gets_name_unlinked, setup, teardown),
		cmocka_unit_test_setup_teardown(user_records_both, setup, teardown),
		cmocka_unit_test_setup_teardown(nothing_mapped_no_image, setup, teardown),
		cmocka_unit_test_setup_teardown(big_file_not_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(restore_creates_missing_keeps_existing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(restore_refuses_other_size_and_symlink, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hostile_paths_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(refusal_line_is_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(refusal_creates_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(same_file_twice_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(later_image_refused_first, setup, teardown),
		cmocka_unit_test_setup_teardown(shared_file_created_once, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
