// SPDX-License-Identifier: MIT
/*
 * A stand-in for criu-image-streamer that speaks its protocol with CRIU
 * (CRIU's images/img-streamer.proto): CRIU connects to IMGDIR/<socket>,
 * and for each image sends an img_streamer_request_entry (a u32 length and
 * the packed message: field 1, the file name) followed by one end of a pipe
 * (SCM_RIGHTS). When serving, each request is first answered with an
 * img_streamer_reply_entry (field 1, exists).
 *
 *   imgstream capture IMGDIR STOREDIR   CRIU dump --stream: each image CRIU
 *                                       writes is kept as STOREDIR/<name>
 *   imgstream serve IMGDIR STOREDIR     CRIU restore --stream: each image is
 *                                       read from STOREDIR/<name>
 *
 * Images move in threads, one per image, as CRIU keeps several open. It
 * prints "ready" once it listens and, at the end, one line per image moved
 * ("image NAME BYTES"), and exits 0 when CRIU hung up and every image moved.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_IMAGES 4096

struct image {
	pthread_t thread;
	char name[256];
	int pipe_fd, file_fd;
	bool capture;
	long long bytes;
	int err;
};

static struct image images[MAX_IMAGES];
static int n_images;

static int full_read(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int full_write(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *move_image(void *arg)
{
	struct image *im = arg;
	int from = im->capture ? im->pipe_fd : im->file_fd;
	int to = im->capture ? im->file_fd : im->pipe_fd;
	static __thread char buf[1 << 16];
	ssize_t r;

	while ((r = read(from, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || full_write(to, buf, (size_t)r)) {
			im->err = errno ? errno : EIO;
			break;
		}
		im->bytes += r;
	}
	close(im->pipe_fd);
	close(im->file_fd);
	return NULL;
}

/* A request: 0, 1 at CRIU's hang-up, -errno. */
static int read_request(int sk, char *name, size_t len)
{
	uint8_t msg[512];
	uint32_t size;
	int ret = full_read(sk, &size, sizeof(size));

	if (ret == -EPIPE)
		return 1;
	if (ret)
		return ret;
	if (size < 2 || size > sizeof(msg) || full_read(sk, msg, size))
		return -EPROTO;
	/* field 1, length-delimited, one length byte (names are short) */
	if (msg[0] != 0x0a || msg[1] >= 0x80 || (size_t)msg[1] + 2 != size || msg[1] >= len)
		return -EPROTO;
	memcpy(name, msg + 2, msg[1]);
	name[msg[1]] = '\0';
	return strchr(name, '/') ? -EPROTO : 0;
}

static int send_reply(int sk, bool exists)
{
	uint8_t msg[6] = {2, 0, 0, 0, 0x08, exists};

	return full_write(sk, msg, sizeof(msg));
}

static int recv_fd(int sk)
{
	char c, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sk, &mh, MSG_CMSG_CLOEXEC) <= 0)
		return -EPROTO;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

static int listen_at(const char *imgdir, const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s", imgdir, name);
	unlink(a.sun_path);
	if (sk < 0 || bind(sk, (struct sockaddr *)&a, sizeof(a)) || listen(sk, 1)) {
		perror("imgstream: listen");
		return -1;
	}
	return sk;
}

/* One request of CRIU's: 0, 1 at its hang-up, -errno. */
static int one_request(int sk, int store, bool capture)
{
	struct image *im = &images[n_images];
	int ret = read_request(sk, im->name, sizeof(im->name));

	if (ret)
		return ret;
	if (n_images == MAX_IMAGES - 1)
		return -ENOSPC;
	im->capture = capture;
	if (capture) {
		im->file_fd =
			openat(store, im->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	} else {
		im->file_fd = openat(store, im->name, O_RDONLY | O_CLOEXEC);
		ret = send_reply(sk, im->file_fd >= 0);
		if (ret || im->file_fd < 0)
			return ret;
	}
	if (im->file_fd < 0)
		return -errno;
	im->pipe_fd = recv_fd(sk);
	if (im->pipe_fd < 0)
		return im->pipe_fd;
	if (pthread_create(&im->thread, NULL, move_image, im))
		return -EAGAIN;
	n_images++;
	return 0;
}

int main(int argc, char **argv)
{
	int lsk, sk, store, ret = 0, i;
	bool capture;

	if (argc != 4 || (strcmp(argv[1], "capture") && strcmp(argv[1], "serve"))) {
		fprintf(stderr, "usage: imgstream capture|serve IMGDIR STOREDIR\n");
		return 2;
	}
	capture = !strcmp(argv[1], "capture");
	store = open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	lsk = listen_at(argv[2], capture ? "streamer-capture.sock" : "streamer-serve.sock");
	if (store < 0 || lsk < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	sk = accept4(lsk, NULL, NULL, SOCK_CLOEXEC);
	close(lsk);
	while (sk >= 0 && !(ret = one_request(sk, store, capture)))
		;
	for (i = 0; i < n_images; i++) {
		pthread_join(images[i].thread, NULL);
		printf("image %s %lld%s\n", images[i].name, images[i].bytes,
		       images[i].err ? " (failed)" : "");
		if (images[i].err)
			ret = -images[i].err;
	}
	if (sk < 0 || ret < 0)
		fprintf(stderr, "imgstream: %s\n", strerror(sk < 0 ? errno : -ret));
	return sk >= 0 && ret >= 0 ? 0 : 1;
}
