// SPDX-License-Identifier: MIT
/* Finding CRIU's connection to criu-image-streamer (criu_stream.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "plugin/criu_stream.h"

static bool ends_with(const char *s, const char *name)
{
	size_t ls = strlen(s), ln = strlen(name);

	return ls >= ln && !strcmp(s + ls - ln, name) && (ls == ln || s[ls - ln - 1] == '/');
}

/* The stream whose socket fd is connected to, or CRIU_STREAM_NONE. */
static enum criu_stream fd_stream(int fd, char *peer, size_t len)
{
	struct sockaddr_un addr;
	socklen_t alen = sizeof(addr);
	enum criu_stream s = CRIU_STREAM_NONE;

	memset(&addr, 0, sizeof(addr));
	if (getpeername(fd, (struct sockaddr *)&addr, &alen) || addr.sun_family != AF_UNIX ||
	    alen <= offsetof(struct sockaddr_un, sun_path) || !addr.sun_path[0])
		return CRIU_STREAM_NONE;
	addr.sun_path[sizeof(addr.sun_path) - 1] = '\0';
	if (ends_with(addr.sun_path, CRIU_STREAM_DUMP_SOCKET))
		s = CRIU_STREAM_DUMP;
	else if (ends_with(addr.sun_path, CRIU_STREAM_RESTORE_SOCKET))
		s = CRIU_STREAM_RESTORE;
	if (s != CRIU_STREAM_NONE && peer && len)
		snprintf(peer, len, "%s", addr.sun_path);
	return s;
}

int criu_stream_detect(enum criu_stream *stream, char *peer, size_t len)
{
	struct dirent *de;
	DIR *d;

	*stream = CRIU_STREAM_NONE;
	if (peer && len)
		peer[0] = '\0';
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while (*stream == CRIU_STREAM_NONE && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || fd == dirfd(d))
			continue;
		*stream = fd_stream((int)fd, peer, len);
	}
	closedir(d);
	return 0;
}

criu_stream_open_fn criu_stream_open_symbol(void)
{
	criu_stream_open_fn fn;
	void *sym = dlsym(RTLD_DEFAULT, "img_streamer_open");

	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

int criu_stream_has_image(criu_stream_open_fn stream_open, const char *name)
{
	char path[256], buf[65536];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s", name);
	fd = stream_open(path, O_RDONLY); /* CRIU's O_RSTR */
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return -EIO;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	n = n < 0 ? -errno : 1;
	close(fd);
	return (int)n;
}

/* O_DUMP and O_RSTR of CRIU's image.h: what img_streamer_open() compares its flags with. */
#define CRIU_O_DUMP (O_WRONLY | O_CREAT | O_TRUNC)
#define CRIU_O_RSTR O_RDONLY

static enum criu_stream active_stream;

void criu_stream_set_active(enum criu_stream stream)
{
	active_stream = stream;
}

enum criu_stream criu_stream_active(void)
{
	return active_stream;
}

int criu_stream_image_open(void *arg, const char *name, enum bo_access access)
{
	criu_stream_open_fn stream_open = criu_stream_open_symbol();
	char path[256];
	int fd;

	(void)arg;
	if (!stream_open || active_stream == CRIU_STREAM_NONE ||
	    (access == BO_ACCESS_WRITE) != (active_stream == CRIU_STREAM_DUMP))
		return -ENOSYS;
	snprintf(path, sizeof(path), "%s", name); /* it takes a char * */
	fd = stream_open(path, access == BO_ACCESS_WRITE ? CRIU_O_DUMP : CRIU_O_RSTR);
	if (fd == -ENOENT)
		return -ENOENT;
	return fd < 0 ? -EIO : fd;
}

void criu_stream_config(struct bo_stream_config *cfg)
{
	if (active_stream == CRIU_STREAM_NONE)
		return;
	cfg->stream_open = criu_stream_image_open;
	cfg->stream_arg = NULL;
}

void criu_stream_refusal(const char *stage, const char *peer, char *buf, size_t len)
{
	snprintf(buf, len,
		 "criu %s --stream (images through criu-image-streamer, %s): this CRIU has no "
		 "img_streamer_open() for the plugin to stream GPU images through; %s without "
		 "--stream (images in a directory), or with a CRIU that exports it",
		 stage, peer && *peer ? peer : "its socket", stage);
}
