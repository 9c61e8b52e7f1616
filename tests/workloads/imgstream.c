// SPDX-License-Identifier: MIT
/*
 * A stand-in for criu-image-streamer, written from the protocol CRIU speaks
 * with it (CRIU's images/img-streamer.proto) and from the streamer's command
 * line as CRIU's test/zdtm.py drives it. CRIU connects to
 * IMGDIR/streamer-capture.sock (dump --stream) or streamer-serve.sock
 * (restore --stream); for each image it sends an img_streamer_request_entry
 * (a u32 length and the packed message: field 1, the file name) followed by
 * one end of a pipe (SCM_RIGHTS). When serving, each request is first
 * answered with an img_streamer_reply_entry (field 1, exists).
 *
 *   imgstream [-D IMGDIR] [--progress-fd FD] capture   images -> stdout
 *   imgstream [-D IMGDIR] [--progress-fd FD] serve     stdin -> images
 *   imgstream [-D IMGDIR] [--progress-fd FD] extract   stdin -> IMGDIR files
 *   imgstream ... --store STOREDIR capture|serve       STOREDIR/<name> files
 *                                                      instead of the stream
 *
 * The stream (this program's own, not the real streamer's): "IMGSTRM1",
 * then frames of a u32 image index and a u32 word: NAME_BIT | length with the
 * image's name (first frame of an image, indexes in order), a length with
 * that many bytes of the image, 0 at the image's end; index END_INDEX ends
 * the stream. Images are framed as they arrive, so a dump's images move in
 * parallel; serving first takes the whole stream into memory (memfds), as
 * the real streamer does, since CRIU asks for the images in its own order,
 * and, as it does, serves each image whole before it reads the next request,
 * once: asked again, an image is no more.
 *
 * Progress (FD, as zdtm.py reads it): serve and extract write one line of
 * statistics once the stream is in; capture and serve write "socket-init"
 * once they listen. Status lines go to stderr: "ready" once listening,
 * "image NAME BYTES" per image moved. Exit 0 when CRIU hung up and every
 * image moved; a damaged or truncated stream is refused in one line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_IMAGES 4096
#define MAX_FRAME  (1u << 20)
#define NAME_BIT   0x80000000u
#define END_INDEX  0xffffffffu
#define MAGIC	   "IMGSTRM1"

/* One image: its name and where its bytes are (a store file or a memfd). */
struct image {
	char name[256];
	int fd;
	long long bytes;
};

/* One move of an image between CRIU's pipe and the stream or a file: a
 * thread each when capturing (CRIU keeps several images open), in turn when
 * serving. */
struct transfer {
	pthread_t thread;
	bool threaded;
	struct streamer *s;
	unsigned int index;
	int pipe_fd, file_fd;
	long long bytes;
	int err;
	char name[256];
};

struct streamer {
	const char *imgdir;
	int progress_fd;
	int store; /* STOREDIR, or -1: the stream on stdin/stdout */
	bool capture;
	pthread_mutex_t out_lock;
	struct image images[MAX_IMAGES];
	unsigned int n_images;
	struct transfer moves[MAX_IMAGES];
	unsigned int n_moves;
};

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

static void progress(struct streamer *s, const char *line)
{
	if (s->progress_fd >= 0)
		full_write(s->progress_fd, line, strlen(line));
}

/* One frame onto stdout, whole, between the other images' frames. */
static int put_frame(struct streamer *s, uint32_t index, uint32_t word, const void *buf, size_t len)
{
	uint32_t head[2] = {index, word};
	int ret;

	pthread_mutex_lock(&s->out_lock);
	ret = full_write(STDOUT_FILENO, head, sizeof(head));
	if (!ret && len)
		ret = full_write(STDOUT_FILENO, buf, len);
	pthread_mutex_unlock(&s->out_lock);
	return ret;
}

/* capture: CRIU's pipe -> a store file, or frames on stdout */
static int capture_image(struct transfer *t, char *buf, size_t size)
{
	int ret = 0;
	ssize_t r;

	while (!ret && (r = read(t->pipe_fd, buf, size)) != 0) {
		if (r < 0) {
			ret = errno == EINTR ? 0 : -errno;
			continue;
		}
		ret = t->file_fd < 0 ? put_frame(t->s, t->index, (uint32_t)r, buf, (size_t)r)
				     : full_write(t->file_fd, buf, (size_t)r);
		t->bytes += r;
	}
	if (!ret && t->file_fd < 0)
		ret = put_frame(t->s, t->index, 0, NULL, 0);
	return ret;
}

/* serve: an image's bytes from offset 0 -> CRIU's pipe */
static int serve_image(struct transfer *t, char *buf, size_t size)
{
	ssize_t r;

	while ((r = pread(t->file_fd, buf, size, t->bytes)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (full_write(t->pipe_fd, buf, (size_t)r))
			return -errno;
		t->bytes += r;
	}
	return 0;
}

static void *move_image(void *arg)
{
	static __thread char buf[1 << 16];
	struct transfer *t = arg;

	t->err = -(t->s->capture ? capture_image(t, buf, sizeof(buf))
				 : serve_image(t, buf, sizeof(buf)));
	close(t->pipe_fd);
	if (t->file_fd >= 0)
		close(t->file_fd);
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
		if (sk >= 0)
			close(sk);
		return -1;
	}
	return sk;
}

static struct image *find_image(struct streamer *s, const char *name)
{
	for (unsigned int i = 0; i < s->n_images; i++)
		if (!strcmp(s->images[i].name, name))
			return &s->images[i];
	return NULL;
}

/* *fd: where the image of CRIU's request is served from or captured into,
 * -1 for stdout (capture) or for no such image (serve). 0 or -errno. */
static int image_fd(struct streamer *s, const char *name, int *fd)
{
	struct image *im;

	*fd = -1;
	if (s->capture && s->store >= 0)
		*fd = openat(s->store, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	else if (s->store >= 0)
		*fd = openat(s->store, name, O_RDONLY | O_CLOEXEC);
	else if ((im = find_image(s, name)))
		*fd = im->fd; /* -1 once served */
	return *fd < 0 && s->capture && s->store >= 0 ? -errno : 0;
}

/* One request of CRIU's: 0, 1 at its hang-up, -errno. */
static int one_request(struct streamer *s, int sk)
{
	struct transfer *t = &s->moves[s->n_moves];
	int ret = read_request(sk, t->name, sizeof(t->name));

	if (ret)
		return ret;
	if (s->n_moves == MAX_IMAGES - 1)
		return -ENOSPC;
	t->s = s;
	t->index = s->n_moves;
	ret = image_fd(s, t->name, &t->file_fd);
	if (ret)
		return ret;
	if (!s->capture) {
		ret = send_reply(sk, t->file_fd >= 0);
		if (ret || t->file_fd < 0)
			return ret;
	}
	/* an image's name goes first, in the order of the requests */
	if (s->capture && s->store < 0) {
		ret = put_frame(s, t->index, NAME_BIT | (uint32_t)strlen(t->name), t->name,
				strlen(t->name));
		if (ret)
			return ret;
	}
	t->pipe_fd = recv_fd(sk);
	if (t->pipe_fd < 0)
		return t->pipe_fd;
	s->n_moves++;
	if (s->capture) {
		t->threaded = !pthread_create(&t->thread, NULL, move_image, t);
		return t->threaded ? 0 : -EAGAIN;
	}
	/* as the real streamer serves: whole, before the next request, then forgotten */
	move_image(t);
	if (s->store < 0)
		find_image(s, t->name)->fd = -1;
	return 0;
}

/* serve, extract: one frame of the stream on stdin. 0, 1 at its end, -errno. */
static int load_frame(struct streamer *s, char *buf)
{
	uint32_t head[2], len;
	struct image *im;

	if (full_read(STDIN_FILENO, head, sizeof(head)))
		return -EPIPE;
	if (head[0] == END_INDEX)
		return 1;
	len = head[1] & ~NAME_BIT;
	if (head[1] & NAME_BIT) {
		if (head[0] != s->n_images || s->n_images == MAX_IMAGES || !len ||
		    len >= sizeof(im->name))
			return -EPROTO;
		im = &s->images[s->n_images];
		if (full_read(STDIN_FILENO, im->name, len))
			return -EPIPE;
		im->name[len] = '\0';
		if (strchr(im->name, '/') || strlen(im->name) != len || find_image(s, im->name))
			return -EPROTO;
		im->fd = memfd_create(im->name, MFD_CLOEXEC);
		if (im->fd < 0)
			return -errno;
		s->n_images++;
		return 0;
	}
	if (head[0] >= s->n_images || len > MAX_FRAME)
		return -EPROTO;
	im = &s->images[head[0]];
	if (full_read(STDIN_FILENO, buf, len))
		return -EPIPE;
	im->bytes += len;
	return full_write(im->fd, buf, len);
}

/* 0, or 1 once it said why the stream is refused */
static int load_stream(struct streamer *s)
{
	char magic[sizeof(MAGIC) - 1], line[128];
	long long total = 0;
	char *buf = malloc(MAX_FRAME);
	int ret = -ENOMEM;

	if (!buf)
		return ret;
	ret = full_read(STDIN_FILENO, magic, sizeof(magic));
	if (!ret && memcmp(magic, MAGIC, sizeof(magic)))
		ret = -EPROTO;
	while (!ret)
		ret = load_frame(s, buf);
	free(buf);
	if (ret < 0) {
		fprintf(stderr, "imgstream: the stream on stdin is %s\n",
			ret == -EPIPE	 ? "truncated"
			: ret == -EPROTO ? "damaged"
					 : strerror(-ret));
		return 1;
	}
	for (unsigned int i = 0; i < s->n_images; i++)
		total += s->images[i].bytes;
	snprintf(line, sizeof(line), "{\"images\": %u, \"bytes\": %lld}\n", s->n_images, total);
	progress(s, line);
	return 0;
}

/* extract: every image of the stream as IMGDIR/<name> */
static int extract(struct streamer *s)
{
	int dir = open(s->imgdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	char *buf = malloc(MAX_FRAME);

	if (dir < 0 || !buf) {
		ret = dir < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; !ret && i < s->n_images; i++) {
		struct image *im = &s->images[i];
		int fd = openat(dir, im->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		struct transfer t = {.file_fd = im->fd, .pipe_fd = fd};

		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = serve_image(&t, buf, MAX_FRAME);
		close(fd);
		fprintf(stderr, "image %s %lld\n", im->name, im->bytes);
	}
out:
	free(buf);
	if (dir >= 0)
		close(dir);
	return ret;
}

/* capture, serve: listen, take CRIU's requests until it hangs up, join the moves */
static int run_socket(struct streamer *s)
{
	int lsk =
		listen_at(s->imgdir, s->capture ? "streamer-capture.sock" : "streamer-serve.sock");
	int sk, ret = 0;

	if (lsk < 0)
		return -EADDRNOTAVAIL;
	progress(s, "socket-init\n");
	fprintf(stderr, "ready\n");
	sk = accept4(lsk, NULL, NULL, SOCK_CLOEXEC);
	close(lsk);
	if (sk < 0)
		return -errno;
	while (!(ret = one_request(s, sk)))
		;
	close(sk);
	for (unsigned int i = 0; i < s->n_moves; i++) {
		struct transfer *t = &s->moves[i];

		if (t->threaded)
			pthread_join(t->thread, NULL);
		fprintf(stderr, "image %s %lld%s\n", t->name, t->bytes, t->err ? " (failed)" : "");
		if (t->err && ret >= 0)
			ret = -t->err;
	}
	if (ret >= 0 && s->capture && s->store < 0)
		ret = put_frame(s, END_INDEX, 0, NULL, 0);
	return ret < 0 ? ret : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: imgstream [-D IMGDIR] [--progress-fd FD] [--store STOREDIR] "
			"capture|serve|extract\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"images-dir", required_argument, NULL, 'D'},
					     {"progress-fd", required_argument, NULL, 'p'},
					     {"store", required_argument, NULL, 's'},
					     {"version", no_argument, NULL, 'V'},
					     {NULL, 0, NULL, 0}};
	static struct streamer s = {.imgdir = ".",
				    .progress_fd = -1,
				    .store = -1,
				    .out_lock = PTHREAD_MUTEX_INITIALIZER};
	const char *mode, *store = NULL;
	int c, ret;

	while ((c = getopt_long(argc, argv, "D:", opts, NULL)) != -1) {
		switch (c) {
		case 'D':
			s.imgdir = optarg;
			break;
		case 'p':
			s.progress_fd = atoi(optarg);
			break;
		case 's':
			store = optarg;
			break;
		case 'V':
			printf("imgstream 1 (a criu-image-streamer stand-in)\n");
			return 0;
		default:
			return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	mode = argv[optind];
	signal(SIGPIPE, SIG_IGN); /* a reader gone is an error of its write */
	s.capture = !strcmp(mode, "capture");
	if (!s.capture && strcmp(mode, "serve") && strcmp(mode, "extract"))
		return usage();
	if (store && !strcmp(mode, "extract"))
		return usage();
	if (store && (s.store = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "imgstream: %s: %s\n", store, strerror(errno));
		return 1;
	}
	if (s.capture && s.store < 0 && full_write(STDOUT_FILENO, MAGIC, sizeof(MAGIC) - 1))
		return 1;
	ret = s.capture || s.store >= 0 ? 0 : load_stream(&s);
	if (!ret)
		ret = !strcmp(mode, "extract") ? extract(&s) : run_socket(&s);
	if (ret < 0)
		fprintf(stderr, "imgstream: %s: %s\n", mode, strerror(-ret));
	return ret ? 1 : 0;
}
