// SPDX-License-Identifier: MIT
/*
 * Hostile image directories and sysfs trees: each finding of the fuzzing
 * gets a test that failed before its fix.
 *   - a FIFO in place of any file the readers open: refused, never a hang
 *     (the reader runs in a child with an alarm, so a hang fails the test)
 *   - a symbolic link in place of an image: refused, saying so and naming it
 *   - image ids with leading zeros (aliases of another id): refused, naming the file
 *   - image strings shown as text: escaped (str_escape)
 *   - a process image of tiny submessages: refused before protobuf-c unpacks it
 *   - a sparse BO index sized for a huge BO: checked in bounded memory
 * The checkpoint is the synthetic one of two MI308X partitions (synth_ckpt.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "common/escape.h"
#include "file_read.h"
#include "fixtures.h"
#include "datapath/bo_stream.h"
#include "images/kfd_image.h"
#include "images/pb_precheck.h"
#include "synth_ckpt.h"

#define ID 7u
/* A reader that has not answered after this long is taken as blocked (loaded 2-core box, ASan). */
#define HANG_SECONDS 20

static const uint32_t gpu_nodes[] = {2, 3};

struct fixture {
	char dir[64];
	int dir_fd;
	struct kfd_topology topo;
	struct synth_spec spec;
	uint32_t gpu; /* actual = user gpu_id of the first GPU */
	uint64_t sizes[SYNTH_CONTENT_PER_GPU];
};

/* ---- fixture --------------------------------------------------------------------------- */

static void remove_tree(int dir_fd)
{
	DIR *d = fdopendir(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *e;
	int sub;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dir_fd, e->d_name, 0))
			continue;
		sub = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			remove_tree(sub);
			close(sub);
		}
		unlinkat(dir_fd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[512], err[512];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test-hostile-XXXXXX");
	snprintf(path, sizeof(path), "%s/%s", fixtures_dir(), MI308X);
	if (!mkdtemp(f->dir) || topo_load(path, &f->topo, err, sizeof(err)))
		return -1;
	f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->spec = (struct synth_spec){.topo = &f->topo,
				      .nodes = gpu_nodes,
				      .n_nodes = 2,
				      .image_id = ID,
				      .render_id = 20};
	f->gpu = f->topo.nodes[gpu_nodes[0]].gpu_id;
	for (size_t b = 0; b < SYNTH_CONTENT_PER_GPU; b++)
		f->sizes[b] = synth_bo_size(0, b);
	*state = f;
	return f->dir_fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	remove_tree(f->dir_fd);
	close(f->dir_fd);
	rmdir(f->dir);
	topo_free(&f->topo);
	free(f);
	return 0;
}

static void write_checkpoint(struct fixture *f)
{
	char err[512];
	int ret = synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err));

	if (ret)
		fail_msg("synth_write_checkpoint: %s", err);
}

static void write_text(int dir_fd, const char *name, const char *text)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Replaces dir_fd/name by a FIFO (nobody ever writes to it). */
static void make_fifo(int dir_fd, const char *name)
{
	unlinkat(dir_fd, name, 0);
	assert_int_equal(mkfifoat(dir_fd, name, 0600), 0);
}

/* ---- a reader in a child, with a time limit ------------------------------------------------ */

/* A reader under test: 0 if it refused as expected, else a line in why. */
typedef int (*probe_fn)(struct fixture *f, const void *arg, char *why, size_t whylen);

/*
 * Runs probe in a child that SIGALRM kills after HANG_SECONDS: a reader that
 * blocks fails the test instead of hanging the suite.
 */
static void run_bounded(struct fixture *f, probe_fn probe, const void *arg, const char *what)
{
	int fds[2], status = 0;
	char why[1024] = "";
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		alarm(HANG_SECONDS);
		if (probe(f, arg, why, sizeof(why))) {
			n = write(fds[1], why, strlen(why));
			_exit(n < 0 ? 3 : 1);
		}
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = 0;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		fail_msg("%s: the reader blocked for %d s", what, HANG_SECONDS);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s: %s (status 0x%x)", what, why, status);
}

/* err must hold every string of the NULL-terminated list. */
static int expect_err(int ret, const char *err, char *why, size_t whylen, ...)
{
	const char *s;
	va_list ap;

	if (ret >= 0) {
		snprintf(why, whylen, "accepted (returned %d)", ret);
		return 1;
	}
	va_start(ap, whylen);
	while ((s = va_arg(ap, const char *)))
		if (!strstr(err, s)) {
			snprintf(why, whylen, "error lacks \"%s\": %s", s, err);
			va_end(ap);
			return 1;
		}
	va_end(ap);
	return 0;
}

/* ---- finding 1: FIFOs ---------------------------------------------------------------------- */

static int probe_process(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	struct kfd_process_image img;
	char err[512] = "";
	int ret = kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err));

	if (!ret)
		kfd_process_image_free(&img);
	return expect_err(ret, err, why, whylen, "amdgpu-kfd-7.img", arg, NULL);
}

static int probe_render(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	struct render_file_image img;
	char err[512] = "";
	int ret = render_file_image_load(f->dir_fd, 20, &img, err, sizeof(err));

	if (!ret)
		render_file_image_free(&img);
	return expect_err(ret, err, why, whylen, "amdgpu-render-20.img", arg, NULL);
}

/* arg: {file name, expected phrase}; both the verify and the files check refuse. */
static int probe_bo_files(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	const char *const *s = arg;
	char err[512] = "";
	int ret;

	ret = bo_stream_verify(f->dir_fd, ID, f->gpu, f->sizes, SYNTH_CONTENT_PER_GPU, NULL, err,
			       sizeof(err));
	if (expect_err(ret, err, why, whylen, s[0], s[1], NULL))
		return 1;
	err[0] = 0;
	ret = bo_stream_check_files(f->dir_fd, ID, f->gpu, f->sizes, SYNTH_CONTENT_PER_GPU, err,
				    sizeof(err));
	return expect_err(ret, err, why, whylen, s[0], s[1], NULL);
}

static void bo_name(char *buf, size_t len, const struct fixture *f, const char *ext)
{
	snprintf(buf, len, "amdgpu-bo-%u-%u.%s", ID, f->gpu, ext);
}

static void test_fifo_images(void **state)
{
	struct fixture *f = *state;
	char idx[64], img[64];
	const char *idx_args[] = {idx, "FIFO"}, *img_args[] = {img, "FIFO"};

	write_checkpoint(f);
	bo_name(idx, sizeof(idx), f, "idx");
	bo_name(img, sizeof(img), f, "img");
	make_fifo(f->dir_fd, "amdgpu-kfd-7.img");
	run_bounded(f, probe_process, "FIFO", "FIFO as amdgpu-kfd-7.img");
	make_fifo(f->dir_fd, "amdgpu-render-20.img");
	run_bounded(f, probe_render, "FIFO", "FIFO as amdgpu-render-20.img");
	make_fifo(f->dir_fd, img);
	run_bounded(f, probe_bo_files, img_args, "FIFO as the BO .img");
	make_fifo(f->dir_fd, idx);
	run_bounded(f, probe_bo_files, idx_args, "FIFO as the BO .idx");
}

/* A minimal sysfs tree: generation_id, one CPU node with a memory bank. */
static void write_sysfs(int dir_fd)
{
	assert_int_equal(mkdirat(dir_fd, "sys", 0700), 0);
	assert_int_equal(mkdirat(dir_fd, "sys/nodes", 0700), 0);
	assert_int_equal(mkdirat(dir_fd, "sys/nodes/0", 0700), 0);
	assert_int_equal(mkdirat(dir_fd, "sys/nodes/0/mem_banks", 0700), 0);
	assert_int_equal(mkdirat(dir_fd, "sys/nodes/0/mem_banks/0", 0700), 0);
	write_text(dir_fd, "sys/generation_id", "1\n");
	write_text(dir_fd, "sys/nodes/0/gpu_id", "0\n");
	write_text(dir_fd, "sys/nodes/0/name", "\n");
	write_text(dir_fd, "sys/nodes/0/properties", "cpu_cores_count 4\nsimd_count 0\n");
	write_text(dir_fd, "sys/nodes/0/mem_banks/0/properties",
		   "heap_type 0\nsize_in_bytes 4096\n");
}

/* arg: the sysfs file replaced by a FIFO */
static int probe_sysfs(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	struct kfd_topology t;
	char root[128], err[512] = "";
	int ret;

	snprintf(root, sizeof(root), "%s/sys", f->dir);
	ret = topo_load(root, &t, err, sizeof(err));
	if (!ret)
		topo_free(&t);
	return expect_err(ret, err, why, whylen, (const char *)arg, "FIFO", NULL);
}

static int probe_sysfs_ok(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	struct kfd_topology t;
	char root[128], err[512] = "";
	int ret;

	(void)arg;
	snprintf(root, sizeof(root), "%s/sys", f->dir);
	ret = topo_load(root, &t, err, sizeof(err));
	if (ret)
		snprintf(why, whylen, "the tree does not load: %s", err);
	else
		topo_free(&t);
	return ret;
}

static void test_fifo_sysfs(void **state)
{
	static const char *const files[] = {"generation_id", "nodes/0/gpu_id", "nodes/0/name",
					    "nodes/0/properties", "nodes/0/mem_banks/0/properties"};
	struct fixture *f = *state;
	char name[128];

	write_sysfs(f->dir_fd);
	run_bounded(f, probe_sysfs_ok, NULL, "minimal sysfs tree");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(name, sizeof(name), "sys/%s", files[i]);
		make_fifo(f->dir_fd, name);
		run_bounded(f, probe_sysfs, files[i], name);
		remove_tree(f->dir_fd);
		write_sysfs(f->dir_fd);
	}
}

/* A trailing slash on the root gave "...//nodes" in messages. */
static void test_sysfs_trailing_slash(void **state)
{
	struct fixture *f = *state;
	char root[128], err[512] = "", want[160];
	struct kfd_topology t;

	write_sysfs(f->dir_fd);
	write_text(f->dir_fd, "sys/nodes/0/properties", "simd_count x\n");
	snprintf(want, sizeof(want), "%s/sys/nodes/0/properties:", f->dir);
	snprintf(root, sizeof(root), "%s/sys/", f->dir);
	assert_int_equal(topo_load(root, &t, err, sizeof(err)), -EINVAL);
	if (strncmp(err, want, strlen(want)))
		fail_msg("'%s' does not start with '%s'", err, want);
	snprintf(root, sizeof(root), "%s/sys///", f->dir);
	assert_int_equal(topo_load(root, &t, err, sizeof(err)), -EINVAL);
	if (strncmp(err, want, strlen(want)))
		fail_msg("'%s' does not start with '%s'", err, want);
	/* "/" stays "/" (a root of its own is not emptied) */
	assert_true(topo_load("/", &t, err, sizeof(err)) < 0);
	assert_null(strstr(err, "//"));
	assert_int_equal(strncmp(err, "/nodes", 6), 0);
}

/* ---- finding 2: memory bounded before protobuf-c unpacks ------------------------------------ */

/* A growable buffer of protobuf wire bytes. */
struct wire {
	uint8_t *buf;
	size_t len, cap;
};

static void wire_put(struct wire *w, const void *p, size_t n)
{
	if (!n)
		return;
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2;
		w->buf = realloc(w->buf, w->cap);
		assert_non_null(w->buf);
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void wire_varint(struct wire *w, uint64_t v)
{
	uint8_t b;

	do {
		b = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		wire_put(w, &b, 1);
		v >>= 7;
	} while (v);
}

/* Field `id` (length-delimited) holding inner. */
static void wire_sub(struct wire *w, uint32_t id, const struct wire *inner)
{
	wire_varint(w, (uint64_t)id << 3 | 2);
	wire_varint(w, inner->len);
	wire_put(w, inner->buf, inner->len);
}

/* Field `id` (varint) = v. */
static void wire_uint(struct wire *w, uint32_t id, uint64_t v)
{
	wire_varint(w, (uint64_t)id << 3);
	wire_varint(w, v);
}

/*
 * amdgpu-kfd-7.img: a KfdProcessEntry (its required fields set, so that
 * protobuf-c unpacks on) whose topology has `nodes` nodes of `props`
 * properties each, every one {key "", value 0}: 6 bytes of wire, ~50 bytes
 * unpacked.
 */
static void write_prop_bomb(struct fixture *f, size_t nodes, size_t props)
{
	static const uint8_t empty_prop[] = {0x22, 0x04, 0x0a, 0x00, 0x10, 0x00};
	struct wire node = {0}, topo = {0}, entry = {0}, empty = {0};
	int fd;

	for (size_t i = 0; i < props; i++)
		wire_put(&node, empty_prop, sizeof(empty_prop));
	wire_uint(&node, 2, 0); /* gpu_id */
	for (size_t i = 0; i < nodes; i++) {
		struct wire indexed = {0};

		wire_uint(&indexed, 1, i); /* index */
		wire_put(&indexed, node.buf, node.len);
		wire_sub(&topo, 1, &indexed); /* KfdTopologyEntry.nodes */
		free(indexed.buf);
	}
	wire_uint(&entry, 1, 1);     /* kfd_major */
	wire_uint(&entry, 2, 17);    /* kfd_minor */
	wire_sub(&entry, 3, &empty); /* kernel_release */
	wire_uint(&entry, 4, 272);   /* bo_record_size */
	wire_uint(&entry, 5, 1);     /* pid */
	wire_uint(&entry, 6, 0);     /* num_objects */
	wire_sub(&entry, 7, &empty); /* priv_data */
	wire_sub(&entry, 10, &topo); /* topology */
	fd = openat(f->dir_fd, "amdgpu-kfd-7.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, entry.buf, entry.len), (ssize_t)entry.len);
	close(fd);
	free(node.buf);
	free(topo.buf);
	free(entry.buf);
}

/*
 * amdgpu-kfd-7.img: a valid-looking KfdProcessEntry (no GPUs) followed by n
 * unknown fields 15 = 0 (a newer writer's, as protobuf-c sees it): 2 bytes
 * of wire each, 25 bytes unpacked.
 */
static void write_unknown_bomb(struct fixture *f, size_t n)
{
	struct wire entry = {0}, empty = {0}, topo = {0}, node = {0};
	int fd;

	wire_uint(&node, 1, 0); /* index */
	wire_uint(&node, 2, 0); /* gpu_id */
	wire_sub(&topo, 1, &node);
	wire_uint(&entry, 1, 1);
	wire_uint(&entry, 2, 17);
	wire_sub(&entry, 3, &empty);
	wire_uint(&entry, 4, 272);
	wire_uint(&entry, 5, 1);
	wire_uint(&entry, 6, 0);
	wire_sub(&entry, 7, &empty);
	wire_sub(&entry, 10, &topo);
	for (size_t i = 0; i < n; i++)
		wire_uint(&entry, 15, 0);
	fd = openat(f->dir_fd, "amdgpu-kfd-7.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, entry.buf, entry.len), (ssize_t)entry.len);
	close(fd);
	free(entry.buf);
	free(topo.buf);
	free(node.buf);
}

/* Peak RSS of this process in KiB. */
static long peak_rss_kib(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* arg: the phrase; the load must fail with it and raise the peak RSS by < 16 MiB. */
static int probe_bounded_load(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	struct kfd_process_image img;
	char err[512] = "";
	long before = peak_rss_kib(), grown;
	int ret = kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err));

	grown = peak_rss_kib() - before;
	if (!ret)
		kfd_process_image_free(&img);
	if (expect_err(ret, err, why, whylen, "amdgpu-kfd-7.img", arg, NULL))
		return 1;
	if (grown >= 16 << 10) {
		snprintf(why, whylen, "peak RSS grew by %ld KiB (limit 16 MiB): %s", grown, err);
		return 1;
	}
	return 0;
}

static void test_property_bomb(void **state)
{
	struct fixture *f = *state;

	/* one node, 400000 properties: 2.4 MB of wire, ~50 MB once unpacked */
	write_prop_bomb(f, 1, 400000);
	run_bounded(f, probe_bounded_load, "more than 1024", "one node with 400000 properties");
	/* within every count limit, but 12x its size once unpacked */
	write_unknown_bomb(f, 600000);
	run_bounded(f, probe_bounded_load, "unpacked", "600000 unknown fields");
}

/*
 * amdgpu-kfd-7.img: a KfdProcessEntry whose topology has `nodes` nodes of
 * `links` io_links each, every link its four required fields 0: 10 bytes of
 * wire, ~90 unpacked and 40 more in the topology model. Within every
 * per-message limit (4096 nodes, 4096 links a node), 4096 x 4096 of them
 * are a 168 MB image that took 2.3 GB to read.
 */
static size_t write_link_bomb(struct fixture *f, size_t nodes, size_t links)
{
	static const uint8_t link[] = {0x42, 0x08, 0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00};
	struct wire node = {0}, topo = {0}, entry = {0}, empty = {0};
	size_t len;
	int fd;

	for (size_t i = 0; i < links; i++)
		wire_put(&node, link, sizeof(link)); /* KfdNodeEntry.io_links */
	wire_uint(&node, 2, 0);			     /* gpu_id */
	for (size_t i = 0; i < nodes; i++) {
		struct wire indexed = {0};

		wire_uint(&indexed, 1, i); /* index */
		wire_put(&indexed, node.buf, node.len);
		wire_sub(&topo, 1, &indexed);
		free(indexed.buf);
	}
	free(node.buf);
	wire_uint(&entry, 1, 1);
	wire_uint(&entry, 2, 17);
	wire_sub(&entry, 3, &empty);
	wire_uint(&entry, 4, 272);
	wire_uint(&entry, 5, 1);
	wire_uint(&entry, 6, 0);
	wire_sub(&entry, 7, &empty);
	wire_sub(&entry, 10, &topo);
	free(topo.buf);
	fd = openat(f->dir_fd, "amdgpu-kfd-7.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, entry.buf, entry.len), (ssize_t)entry.len);
	close(fd);
	len = entry.len;
	free(entry.buf);
	return len;
}

/*
 * The wire of a KfdProcessEntry for pid 17 with no GPUs, one CPU node, priv
 * as its private data and, after it, `tail` (n bytes: repeated fields);
 * written as amdgpu-kfd-7.img. Returns the image's size.
 */
static size_t write_process_entry(struct fixture *f, const struct wire *priv, const void *tail,
				  size_t tail_len, size_t tail_count)
{
	struct wire entry = {0}, empty = {0}, topo = {0}, node = {0};
	size_t len;
	int fd;

	wire_uint(&node, 1, 0);
	wire_uint(&node, 2, 0);
	wire_sub(&topo, 1, &node);
	wire_uint(&entry, 1, 1);
	wire_uint(&entry, 2, 17);
	wire_sub(&entry, 3, &empty);
	wire_uint(&entry, 4, 272);
	wire_uint(&entry, 5, 1);
	wire_uint(&entry, 6, 0);
	wire_sub(&entry, 7, priv);
	wire_sub(&entry, 10, &topo);
	for (size_t i = 0; i < tail_count; i++)
		wire_put(&entry, tail, tail_len);
	fd = openat(f->dir_fd, "amdgpu-kfd-7.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, entry.buf, entry.len), (ssize_t)entry.len);
	close(fd);
	len = entry.len;
	free(entry.buf);
	free(topo.buf);
	free(node.buf);
	return len;
}

/*
 * amdgpu-kfd-7.img: a KfdProcessEntry of `bytes` bytes of private data and
 * no GPUs: it unpacks (1x), then is refused (private data without GPUs).
 */
static size_t write_bulk_image(struct fixture *f, size_t bytes)
{
	struct wire priv = {.buf = calloc(1, bytes), .len = bytes, .cap = bytes};
	size_t len;

	assert_non_null(priv.buf);
	len = write_process_entry(f, &priv, NULL, 0, 0);
	free(priv.buf);
	return len;
}

/*
 * amdgpu-kfd-7.img: a KfdProcessEntry of n BOs, each its five required
 * fields 0 (12 bytes of wire, ~90 unpacked): within the BO count of a
 * process, and refused afterwards (their GPU is unknown).
 */
static size_t write_bo_bomb(struct fixture *f, size_t n)
{
	static const uint8_t bo[] = {0x4a, 0x0a, 0x08, 0x00, 0x10, 0x00,
				     0x18, 0x00, 0x20, 0x00, 0x28, 0x00};
	struct wire empty = {0};

	return write_process_entry(f, &empty, bo, sizeof(bo), n); /* KfdProcessEntry.bos */
}

struct mem_bound {
	const char *phrase; /* the refusal expected */
	size_t file;	    /* the image's bytes */
	unsigned int ratio; /* peak RSS may grow by ratio x file + 16 MiB */
};

/* The load refuses with arg's phrase, growing the peak RSS by at most its bound. */
static int probe_load_memory(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	const struct mem_bound *m = arg;
	struct kfd_process_image img;
	char err[512] = "";
	long before = peak_rss_kib(), grown, limit;
	int ret = kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err));

	grown = peak_rss_kib() - before;
	limit = (long)(m->file * m->ratio >> 10) + (16 << 10);
	fprintf(stderr, "# %zu bytes: peak RSS grew by %ld KiB (%.1fx), limit %ld KiB: %s\n",
		m->file, grown, (double)grown * 1024 / (double)m->file, limit, err);
	if (!ret)
		kfd_process_image_free(&img);
	if (grown > limit) {
		snprintf(why, whylen,
			 "peak RSS grew by %ld KiB for a %zu KiB image (limit %ld): %s", grown,
			 m->file >> 10, limit, err);
		return 1;
	}
	return expect_err(ret, err, why, whylen, "amdgpu-kfd-7.img", m->phrase, NULL);
}

static void test_image_memory_bound(void **state)
{
	struct fixture *f = *state;
	struct mem_bound m;

	/* 1024 nodes of 4096 links: 42 MB, every per-message count within its limit */
	m = (struct mem_bound){"links", write_link_bomb(f, 1024, 4096), 2};
	run_bounded(f, probe_load_memory, &m, "42 MB of topology links");
	/* 2^20 BOs of 12 bytes: dense past what a valid image of 12.6 MB needs */
	m = (struct mem_bound){"unpacked", write_bo_bomb(f, KFD_IMAGE_MAX_BOS), 2};
	run_bounded(f, probe_load_memory, &m, "2^20 BOs of 12 bytes");
	/* a big image that is read: private data, unpacked once (the file, then its copy) */
	m = (struct mem_bound){"no GPUs", write_bulk_image(f, 64u << 20), 3};
	run_bounded(f, probe_load_memory, &m, "64 MiB of private data");
}

/* An allocator for protobuf-c that counts: live bytes at the end, their peak, all requested. */
struct counting {
	uint64_t live, peak, total;
};

static void *count_alloc(void *data, size_t size)
{
	struct counting *c = data;
	size_t *p = malloc(size + sizeof(size_t));

	if (!p)
		return NULL;
	*p = size;
	c->live += size;
	c->total += size;
	if (c->live > c->peak)
		c->peak = c->live;
	return p + 1;
}

static void count_free(void *data, void *ptr)
{
	struct counting *c = data;
	size_t *p = ptr;

	if (!p)
		return;
	c->live -= p[-1];
	free(p - 1);
}

/* pb_precheck's figure is what protobuf-c keeps allocated for the message, at least. */
static void expect_estimate_holds(int dir_fd, const char *name, const ProtobufCMessageDescriptor *d)
{
	struct counting c = {0};
	ProtobufCAllocator a = {.alloc = count_alloc, .free = count_free, .allocator_data = &c};
	uint64_t estimate = 0;
	size_t len;
	uint8_t *buf = file_read_all(dir_fd, name, &len);
	char why[256];
	ProtobufCMessage *m;

	assert_int_equal(pb_precheck(d, buf, len, NULL, 0, UINT32_MAX, &estimate, why, sizeof(why)),
			 0);
	m = protobuf_c_message_unpack(d, &a, len, buf);
	assert_non_null(m);
	print_message("# %s: %zu bytes, estimate %" PRIu64 ", kept %" PRIu64 ", peak %" PRIu64
		      ", requested in all %" PRIu64 "\n",
		      name, len, estimate, c.live, c.peak, c.total);
	if (c.live > estimate)
		fail_msg("%s: protobuf-c kept %" PRIu64 " bytes, estimate %" PRIu64, name, c.live,
			 estimate);
	/* what kfd_image.c lets protobuf-c have at once: valid images stay well under it */
	if (c.peak > estimate + pb_precheck_budget(len))
		fail_msg("%s: protobuf-c held %" PRIu64 " bytes at once, more than %" PRIu64, name,
			 c.peak, estimate + pb_precheck_budget(len));
	protobuf_c_message_free_unpacked(m, &a);
	assert_int_equal(c.live, 0);
	free(buf);
}

static void test_unpacked_estimate(void **state)
{
	struct fixture *f = *state;

	write_checkpoint(f);
	expect_estimate_holds(f->dir_fd, "amdgpu-kfd-7.img", &kfd_process_entry__descriptor);
	expect_estimate_holds(f->dir_fd, "amdgpu-render-20.img", &render_file_entry__descriptor);
	remove_tree(f->dir_fd);
	write_prop_bomb(f, 2, 1000);
	expect_estimate_holds(f->dir_fd, "amdgpu-kfd-7.img", &kfd_process_entry__descriptor);
	write_unknown_bomb(f, 1000);
	expect_estimate_holds(f->dir_fd, "amdgpu-kfd-7.img", &kfd_process_entry__descriptor);
}

/* ---- finding 3: the BO index checked in bounded memory ----------------------------------------
 */

#define BIG_BO (64ull << 30) /* 64 GiB: with 4 KiB chunks, a 64 MiB index */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Sparse amdgpu-bo-7-<gpu>.{idx,img} for one BO of BIG_BO bytes: a valid
 * header with 4 KiB chunks, then holes (so the index checksum is wrong);
 * both files have the sizes that BO needs.
 */
static void write_big_index(struct fixture *f)
{
	uint8_t h[64] = "AMDBOIX1";
	uint64_t chunks = BIG_BO / 4096;
	char name[64];
	int fd;

	put_le32(h + 8, 1);
	put_le32(h + 12, f->gpu);
	put_le32(h + 16, ID);
	put_le32(h + 20, 4096);
	put_le32(h + 24, 1);
	put_le64(h + 32, BIG_BO);
	put_le64(h + 40, chunks);
	bo_name(name, sizeof(name), f, "idx");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(ftruncate(fd, (off_t)(64 + 16 + chunks * 4 + 4)), 0);
	close(fd);
	bo_name(name, sizeof(name), f, "img");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)BIG_BO), 0);
	close(fd);
}

/* Verify and the files check refuse the index, growing the peak RSS by < 16 MiB. */
static int probe_big_index(struct fixture *f, const void *arg, char *why, size_t whylen)
{
	const uint64_t size = BIG_BO;
	char err[512] = "";
	long before = peak_rss_kib(), grown;
	int ret;

	(void)arg;
	ret = bo_stream_verify(f->dir_fd, ID, f->gpu, &size, 1, NULL, err, sizeof(err));
	if (expect_err(ret, err, why, whylen, "index checksum mismatch", NULL))
		return 1;
	ret = bo_stream_check_files(f->dir_fd, ID, f->gpu, &size, 1, err, sizeof(err));
	if (expect_err(ret, err, why, whylen, "index checksum mismatch", NULL))
		return 1;
	grown = peak_rss_kib() - before;
	if (grown >= 16 << 10) {
		snprintf(why, whylen, "peak RSS grew by %ld KiB (limit 16 MiB)", grown);
		return 1;
	}
	return 0;
}

static void test_big_sparse_index(void **state)
{
	struct fixture *f = *state;

	write_big_index(f);
	run_bounded(f, probe_big_index, NULL, "sparse index of a 64 GiB BO");
}

/*
 * The check's cost does not grow with an index's holes: a sparse index of a
 * huge BO, its own checksum right (as anyone can compute it for zeros), is
 * checked reading a few KiB where it used to read and checksum every byte
 * of it (4 s for a 2 TiB BO, minutes for 2^48 bytes; per GPU, in the
 * restore's master and in inspect). Bytes read come from /proc/self/io
 * (rchar): a measure that does not depend on the machine's speed.
 */
static uint64_t bytes_read(void)
{
	unsigned long long v = 0;
	char line[128];
	FILE *io = fopen("/proc/self/io", "re");

	assert_non_null(io);
	while (fgets(line, sizeof(line), io))
		if (sscanf(line, "rchar: %llu", &v) == 1)
			break;
	fclose(io);
	return v;
}

/* zlib's CRC-32 of n zero bytes, by doubling (crc32_combine): what an attacker computes */
static uLong crc32_of_zeros(uint64_t n)
{
	static const Bytef zero[1];
	uLong acc = crc32(0, Z_NULL, 0), pw = crc32(0, zero, 1);
	uint64_t pw_len = 1;

	for (; n; n >>= 1) {
		if (n & 1)
			acc = crc32_combine(acc, pw, (z_off_t)pw_len);
		pw = crc32_combine(pw, pw, (z_off_t)pw_len);
		pw_len <<= 1;
	}
	return acc;
}

/*
 * amdgpu-bo-7-<gpu>.{idx,img} for one BO of `size` bytes in 4 KiB chunks,
 * both files sparse: the index's header and BO table, then holes (every
 * entry zero), then its checksum (right unless `bad_crc`).
 */
static void write_sparse_index(struct fixture *f, uint32_t version, uint64_t size, bool bad_crc)
{
	static const char *const magic[] = {"", "AMDBOIX1", "AMDBOIX2", "AMDBOIX3"};
	const uint64_t chunks = size / 4096, bo_rec = version == 1 ? 16 : 24;
	const uint64_t entries = chunks * (version == 1 ? 4 : 32);
	uint8_t h[64 + 24] = {0}, tail[4];
	char name[64];
	uLong crc;
	int fd;

	memcpy(h, magic[version], 8);
	put_le32(h + 8, version);
	put_le32(h + 12, f->gpu);
	put_le32(h + 16, ID);
	put_le32(h + 20, 4096);
	put_le32(h + 24, 1);
	put_le64(h + 32, size);
	put_le64(h + 40, chunks);
	put_le64(h + 64, size); /* the BO: size, offset 0 (, gpu_va 0) */
	crc = crc32(0, h, (uInt)(64 + bo_rec));
	crc = crc32_combine(crc, crc32_of_zeros(entries), (z_off_t)entries);
	put_le32(tail, (uint32_t)crc ^ (bad_crc ? 1 : 0));
	bo_name(name, sizeof(name), f, "idx");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, h, 64 + bo_rec, 0), (ssize_t)(64 + bo_rec));
	assert_int_equal(pwrite(fd, tail, 4, (off_t)(64 + bo_rec + entries)), 4);
	close(fd);
	bo_name(name, sizeof(name), f, "img");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* The files check and describe on the index written last: their result, bytes read by each. */
static void expect_cheap_check(struct fixture *f, uint64_t size, int want, const char *phrase)
{
	struct bo_stream_chain chain;
	uint64_t before, check_bytes, describe_bytes;
	char err[512] = "";
	int ret;

	before = bytes_read();
	ret = bo_stream_check_files(f->dir_fd, ID, f->gpu, &size, 1, err, sizeof(err));
	check_bytes = bytes_read() - before;
	print_message("# BO of %" PRIu64 " GiB: files check %d, %" PRIu64 " bytes read: %s\n",
		      size >> 30, ret, check_bytes, err);
	if (check_bytes > (1u << 20))
		fail_msg("the check of the index of a %" PRIu64 " GiB BO read %" PRIu64
			 " bytes (at most 1 MiB)",
			 size >> 30, check_bytes);
	assert_int_equal(ret, want);
	if (phrase)
		assert_non_null(strstr(err, phrase));
	before = bytes_read();
	ret = bo_stream_describe(f->dir_fd, ID, f->gpu, &size, 1, &chain, err, sizeof(err));
	describe_bytes = bytes_read() - before;
	if (describe_bytes > (1u << 20))
		fail_msg("describing a %" PRIu64 " GiB BO read %" PRIu64 " bytes (at most 1 MiB)",
			 size >> 30, describe_bytes);
	assert_int_equal(ret, want);
	if (!want)
		assert_true(chain.level_bytes[0] == size && !chain.levels);
}

static void test_sparse_index_cost(void **state)
{
	/* 256 GiB: a 256 MiB index; 8 TiB: 8 GiB (ext4 holds files up to 16 TiB) */
	static const uint64_t sizes[] = {256ull << 30, 8ull << 40};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* version 1: all-zero entries are valid (level 0, CRC-32 0): checked, not read */
		write_sparse_index(f, 1, sizes[i], false);
		expect_cheap_check(f, sizes[i], 0, NULL);
		write_sparse_index(f, 1, sizes[i], true);
		expect_cheap_check(f, sizes[i], -EBADMSG, "index checksum mismatch");
		/* version 3: chunk 1 all zero claims offset 0, not its own */
		write_sparse_index(f, 3, sizes[i], false);
		expect_cheap_check(f, sizes[i], -EINVAL, "chunk 1 refers to level 0 offset 0x0");
	}
}

/*
 * A version 1 index whose entries are partly data, partly holes, of BOs of
 * odd sizes (one empty): the holes' entries count as zero where they fall,
 * across BOs, as a read would find them; the data's as written.
 */
static void test_sparse_index_mixed(void **state)
{
	static const uint64_t sizes[] = {(9ull << 20) + 4096, 0, 4096, (11ull << 20) + 12288};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct fixture *f = *state;
	uint64_t chunks = 0, total = 0, off = 0, len;
	struct bo_stream_chain chain;
	uint8_t *idx, *p;
	char name[64], err[512] = "";
	int fd;

	for (size_t i = 0; i < N; i++) {
		chunks += (sizes[i] + 4095) / 4096;
		total += sizes[i];
	}
	len = 64 + N * 16 + chunks * 4 + 4;
	idx = calloc(1, len);
	assert_non_null(idx);
	memcpy(idx, "AMDBOIX1", 8);
	put_le32(idx + 8, 1);
	put_le32(idx + 12, f->gpu);
	put_le32(idx + 16, ID);
	put_le32(idx + 20, 4096);
	put_le32(idx + 24, N);
	put_le64(idx + 32, total);
	put_le64(idx + 40, chunks);
	for (size_t i = 0; i < N; i++) {
		put_le64(idx + 64 + i * 16, sizes[i]);
		put_le64(idx + 64 + i * 16 + 8, off);
		off += sizes[i];
	}
	/* entries of the second and fourth data page: 0xffffffff (what chunks checksum is moot) */
	memset(idx + 4096 + 100, 0xff, 4096 - 200);
	memset(idx + 3 * 4096 + 8, 0xff, 4096 - 16);
	put_le32(idx + len - 4, (uint32_t)crc32(0, idx, (uInt)(len - 4)));
	bo_name(name, sizeof(name), f, "idx");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	/* only the pages holding bytes other than zero: the others stay holes */
	for (p = idx; p < idx + len; p += 4096) {
		size_t n = (size_t)(idx + len - p < 4096 ? idx + len - p : 4096);
		bool zero = true;

		for (size_t k = 0; k < n && zero; k++)
			zero = !p[k];
		if (!zero)
			assert_int_equal(pwrite(fd, p, n, p - idx), (ssize_t)n);
	}
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	close(fd);
	bo_name(name, sizeof(name), f, "img");
	fd = openat(f->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)total), 0);
	close(fd);
	free(idx);

	assert_int_equal(bo_stream_check_files(f->dir_fd, ID, f->gpu, sizes, N, err, sizeof(err)),
			 0);
	assert_int_equal(
		bo_stream_describe(f->dir_fd, ID, f->gpu, sizes, N, &chain, err, sizeof(err)), 0);
	assert_true(chain.level_bytes[0] == total && !chain.levels && !chain.zero_bytes);
	/* the chunks themselves: zeros whose CRC-32 is not 0 (nor 0xffffffff) */
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, f->gpu, sizes, N, NULL, err, sizeof(err)),
			 -EBADMSG);
}

/* ---- finding 7: symbolic links ------------------------------------------------------------ */

static void test_symlinked_images(void **state)
{
	struct fixture *f = *state;
	char idx[64];
	const char *idx_args[] = {idx, "symbolic links are refused"};

	write_checkpoint(f);
	/* a link to a valid image of the same directory is refused all the same */
	assert_int_equal(renameat(f->dir_fd, "amdgpu-kfd-7.img", f->dir_fd, "real.img"), 0);
	assert_int_equal(symlinkat("real.img", f->dir_fd, "amdgpu-kfd-7.img"), 0);
	run_bounded(f, probe_process, "symbolic links are refused", "symlinked process image");
	assert_int_equal(renameat(f->dir_fd, "amdgpu-render-20.img", f->dir_fd, "real-r.img"), 0);
	assert_int_equal(symlinkat("real-r.img", f->dir_fd, "amdgpu-render-20.img"), 0);
	run_bounded(f, probe_render, "symbolic links are refused", "symlinked render image");
	bo_name(idx, sizeof(idx), f, "idx");
	assert_int_equal(renameat(f->dir_fd, idx, f->dir_fd, "real.idx"), 0);
	assert_int_equal(symlinkat("real.idx", f->dir_fd, idx), 0);
	run_bounded(f, probe_bo_files, idx_args, "symlinked BO index");
}

/* ---- finding 4: one spelling of an image id ------------------------------------------------ */

static void copy_file(int dir_fd, const char *from, const char *to)
{
	char buf[1 << 16];
	int in = openat(dir_fd, from, O_RDONLY | O_CLOEXEC);
	int out = openat(dir_fd, to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void test_leading_zero_ids(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";
	uint32_t *ids = NULL;
	size_t n = 0;

	write_checkpoint(f);
	/* next to the real one: the copies are not listed as the same process again */
	copy_file(f->dir_fd, "amdgpu-kfd-7.img", "amdgpu-kfd-07.img");
	copy_file(f->dir_fd, "amdgpu-kfd-7.img", "amdgpu-kfd-007.img");
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_PROCESS, &ids, &n, err, sizeof(err)),
			 -EINVAL);
	assert_null(ids);
	assert_true(strstr(err, "amdgpu-kfd-07.img") || strstr(err, "amdgpu-kfd-007.img"));
	assert_non_null(strstr(err, "leading zero"));
	/* alone: the message names the file the user has, not amdgpu-kfd-7.img */
	assert_int_equal(unlinkat(f->dir_fd, "amdgpu-kfd-7.img", 0), 0);
	assert_int_equal(unlinkat(f->dir_fd, "amdgpu-kfd-007.img", 0), 0);
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_PROCESS, &ids, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "amdgpu-kfd-07.img"));
	/* render images alike */
	copy_file(f->dir_fd, "amdgpu-render-20.img", "amdgpu-render-020.img");
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_RENDER, &ids, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "amdgpu-render-020.img"));
	/* "0" itself is the canonical spelling of id 0 */
	assert_int_equal(unlinkat(f->dir_fd, "amdgpu-render-020.img", 0), 0);
	copy_file(f->dir_fd, "amdgpu-render-20.img", "amdgpu-render-0.img");
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_RENDER, &ids, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 0);
	free(ids);
}

/* ---- finding 5: image strings shown as text ------------------------------------------------- */

static void test_escape(void **state)
{
	char buf[ESCAPE_BUF], small[8];

	(void)state;
	assert_string_equal(str_escape("6.12.48+deb13-amd64", buf, sizeof(buf)),
			    "6.12.48+deb13-amd64");
	assert_string_equal(str_escape("a\033[2J\nb\\\xc3\xa9", buf, sizeof(buf)),
			    "a\\x1b[2J\\x0ab\\\\\\xc3\\xa9");
	assert_string_equal(str_escape(NULL, buf, sizeof(buf)), "");
	/* too long: whole escapes and "...", never a cut escape */
	assert_string_equal(str_escape("abcdefgh", small, sizeof(small)), "abcd...");
	assert_string_equal(str_escape("abcdefg", small, sizeof(small)), "abcdefg");
	assert_string_equal(str_escape("ab\n\n", small, sizeof(small)), "ab...");
	assert_string_equal(str_escape("ab\n", small, sizeof(small)), "ab\\x0a");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	// clang-format off
	const struct CMUnitTest tests[] = {
		T(test_fifo_images),
		T(test_fifo_sysfs),
		T(test_sysfs_trailing_slash),
		T(test_symlinked_images),
		T(test_leading_zero_ids),
		T(test_property_bomb),
		T(test_unpacked_estimate),
		T(test_image_memory_bound),
		T(test_big_sparse_index),
		T(test_sparse_index_cost),
		T(test_sparse_index_mixed),
		cmocka_unit_test(test_escape),
	};
	// clang-format on

	return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
