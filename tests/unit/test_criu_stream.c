// SPDX-License-Identifier: MIT
/*
 * Does CRIU stream its images (plugin/criu_stream.h), with real UNIX
 * sockets: a listener bound at DIR/streamer-capture.sock or
 * streamer-serve.sock stands for criu-image-streamer, a socket of this test
 * connected to it for CRIU's. A listener alone, a socket file left behind,
 * a socket of another name or with the name inside a longer one are no
 * stream. The streamer's answers to img_streamer_open() are stood in for by
 * pipes.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/criu_stream.h"

struct dir {
	char path[64];
};

static void make_dir(struct dir *d)
{
	snprintf(d->path, sizeof(d->path), "/tmp/criu-stream-XXXXXX");
	assert_non_null(mkdtemp(d->path));
}

static void remove_dir(struct dir *d, const char *name)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", d->path, name);
	unlink(p);
	assert_int_equal(rmdir(d->path), 0);
}

static void sock_path(const struct dir *d, const char *name, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", d->path, name);
}

/* The streamer's side: a listening socket bound at DIR/name. */
static int listen_at(const struct dir *d, const char *name)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sock_path(d, name, &a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	return fd;
}

/* CRIU's side: connected to DIR/name. */
static int connect_to(const struct dir *d, const char *name)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sock_path(d, name, &a);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static enum criu_stream detect(char *peer, size_t len)
{
	enum criu_stream s = CRIU_STREAM_DUMP + 7;

	assert_int_equal(criu_stream_detect(&s, peer, len), 0);
	return s;
}

static void no_stream_without_connection(void **state)
{
	struct dir d;
	char peer[108] = "x";
	int l;

	(void)state;
	make_dir(&d);
	assert_int_equal(detect(peer, sizeof(peer)), CRIU_STREAM_NONE);
	assert_string_equal(peer, "");
	l = listen_at(&d, CRIU_STREAM_DUMP_SOCKET);
	assert_int_equal(detect(NULL, 0), CRIU_STREAM_NONE); /* a listener is not connected */
	close(l);
	/* the socket file an earlier streamer left: nobody is connected to it */
	assert_int_equal(access(d.path, F_OK), 0);
	assert_int_equal(detect(NULL, 0), CRIU_STREAM_NONE);
	remove_dir(&d, CRIU_STREAM_DUMP_SOCKET);
}

static void connected_capture_is_a_dump_stream(void **state)
{
	struct dir d;
	char peer[108], want[128];
	int l, c;

	(void)state;
	make_dir(&d);
	l = listen_at(&d, CRIU_STREAM_DUMP_SOCKET);
	c = connect_to(&d, CRIU_STREAM_DUMP_SOCKET);
	assert_int_equal(detect(peer, sizeof(peer)), CRIU_STREAM_DUMP);
	snprintf(want, sizeof(want), "%s/%s", d.path, CRIU_STREAM_DUMP_SOCKET);
	assert_string_equal(peer, want);
	close(c);
	assert_int_equal(detect(peer, sizeof(peer)), CRIU_STREAM_NONE);
	close(l);
	remove_dir(&d, CRIU_STREAM_DUMP_SOCKET);
}

static void connected_serve_is_a_restore_stream(void **state)
{
	struct dir d;
	char peer[108];
	int l, c, a;

	(void)state;
	make_dir(&d);
	l = listen_at(&d, CRIU_STREAM_RESTORE_SOCKET);
	c = connect_to(&d, CRIU_STREAM_RESTORE_SOCKET);
	a = accept(l, NULL, NULL); /* the streamer's end, as after its accept() */
	assert_true(a >= 0);
	close(l);
	assert_int_equal(detect(peer, sizeof(peer)), CRIU_STREAM_RESTORE);
	assert_non_null(strstr(peer, "/" CRIU_STREAM_RESTORE_SOCKET));
	close(c);
	close(a);
	remove_dir(&d, CRIU_STREAM_RESTORE_SOCKET);
}

static void other_names_are_no_stream(void **state)
{
	static const char *const names[] = {"other.sock", "x" CRIU_STREAM_DUMP_SOCKET,
					    CRIU_STREAM_RESTORE_SOCKET ".old"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct dir d;
		int l, c;

		make_dir(&d);
		l = listen_at(&d, names[i]);
		c = connect_to(&d, names[i]);
		assert_int_equal(detect(NULL, 0), CRIU_STREAM_NONE);
		close(c);
		close(l);
		remove_dir(&d, names[i]);
	}
}

/* Stand-ins for img_streamer_open(): the image "here.img" holds 200 KiB. */
static char asked[64];
static size_t image_bytes;
static pid_t served; /* the writer of the image served last */

static int write_all(int fd, size_t n)
{
	char buf[4096];

	memset(buf, 0x5a, sizeof(buf));
	while (n) {
		ssize_t w = write(fd, buf, n < sizeof(buf) ? n : sizeof(buf));

		if (w <= 0)
			return -1;
		n -= (size_t)w;
	}
	return 0;
}

static int serve_open(char *filename, int flags)
{
	int p[2];
	pid_t pid;

	assert_int_equal(flags, O_RDONLY);
	snprintf(asked, sizeof(asked), "%s", filename);
	if (strcmp(filename, "here.img"))
		return -ENOENT;
	assert_int_equal(pipe(p), 0);
	pid = fork(); /* the streamer writes more than a pipe holds */
	assert_true(pid >= 0);
	served = pid;
	if (!pid) {
		close(p[0]);
		_exit(write_all(p[1], image_bytes) ? 1 : 0);
	}
	close(p[1]);
	return p[0];
}

static int broken_open(char *filename, int flags)
{
	(void)filename;
	(void)flags;
	return -1;
}

static void stream_says_which_images_it_holds(void **state)
{
	int status;

	(void)state;
	image_bytes = 200 * 1024;
	assert_int_equal(criu_stream_has_image(serve_open, "missing.img"), 0);
	assert_string_equal(asked, "missing.img");
	assert_int_equal(criu_stream_has_image(serve_open, "here.img"), 1);
	assert_string_equal(asked, "here.img");
	assert_int_equal(wait(&status), served); /* the writer wrote it all: read to its end */
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(criu_stream_has_image(broken_open, "here.img"), -EIO);
}

static void refusal_is_one_line_naming_stream(void **state)
{
	char line[600];

	(void)state;
	criu_stream_refusal("dump", "/ckpt/" CRIU_STREAM_DUMP_SOCKET, line, sizeof(line));
	assert_non_null(strstr(line, "criu dump --stream"));
	assert_non_null(strstr(line, "/ckpt/" CRIU_STREAM_DUMP_SOCKET));
	assert_null(strchr(line, '\n'));
	criu_stream_refusal("restore", NULL, line, sizeof(line));
	assert_non_null(strstr(line, "criu restore --stream"));
	assert_null(strchr(line, '\n'));
}

/* This test is no CRIU: the plugin's run-time lookup finds no img_streamer_open(). */
static void no_streamer_symbol_outside_criu(void **state)
{
	(void)state;
	assert_null(criu_stream_open_symbol());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_stream_without_connection),
		cmocka_unit_test(connected_capture_is_a_dump_stream),
		cmocka_unit_test(connected_serve_is_a_restore_stream),
		cmocka_unit_test(other_names_are_no_stream),
		cmocka_unit_test(stream_says_which_images_it_holds),
		cmocka_unit_test(refusal_is_one_line_naming_stream),
		cmocka_unit_test(no_streamer_symbol_outside_criu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
