// SPDX-License-Identifier: MIT
/* The metadata images of a streamed run, staged in memory (stream_stage.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/fullio.h"
#include "common/regfile.h"
#include "plugin/stream_stage.h"

#define PART_SUFFIX ".part"

/* The first of the default parents that is a directory: memory file systems. */
static const char *default_parent(void)
{
	static const char *const dirs[] = {"/dev/shm", "/run"};
	struct stat sb;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!stat(dirs[i], &sb) && S_ISDIR(sb.st_mode))
			return dirs[i];
	return dirs[0];
}

int stream_stage_open(struct stream_stage *st, const char *parent, bo_stream_open_fn open_fn,
		      void *open_arg, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	st->dir_fd = -1;
	st->open = open_fn;
	st->open_arg = open_arg;
	snprintf(st->path, sizeof(st->path), "%s/amdgpu-criu-stream-XXXXXX",
		 parent ? parent : default_parent());
	if (!mkdtemp(st->path))
		return errmsg_set(err, errlen, -errno,
				  "cannot make a staging directory %s for the streamed images: %s",
				  st->path, strerror(errno));
	st->dir_fd = open(st->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dir_fd < 0) {
		int ret = -errno;

		rmdir(st->path);
		return errmsg_set(err, errlen, ret, "cannot open %s: %s", st->path, strerror(-ret));
	}
	return 0;
}

void stream_stage_close(struct stream_stage *st)
{
	struct dirent *de;
	DIR *d;

	if (st->dir_fd < 0)
		return;
	d = fdopendir(st->dir_fd);
	if (d) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d); /* closes dir_fd */
	} else {
		close(st->dir_fd);
	}
	rmdir(st->path);
	st->dir_fd = -1;
}

/* ---- dump ------------------------------------------------------------------------------- */

/* bytes (len) into the stream as image `name`. */
static int send_bytes(struct stream_stage *st, const char *name, const void *buf, size_t len,
		      char *err, size_t errlen)
{
	int fd = st->open(st->open_arg, name, BO_ACCESS_WRITE), ret;

	if (fd < 0)
		return errmsg_set(err, errlen, fd, "the image stream did not take %s: %s", name,
				  strerror(-fd));
	ret = write_full(fd, buf, len);
	if (close(fd) && !ret)
		ret = -errno;
	if (ret)
		errmsg_set(err, errlen, ret, "sending %s into the image stream: %s", name,
			   strerror(-ret));
	return ret;
}

/* The staged file, whole, into buf (malloc'd). */
static int read_staged(struct stream_stage *st, const char *name, uint8_t **buf, size_t *len,
		       char *err, size_t errlen)
{
	char why[128];
	struct stat sb;
	int fd = regfile_open(st->dir_fd, name, why, sizeof(why)), ret;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return errmsg_set(err, errlen, fd, "staged image %s: %s", name, why);
	ret = fstat(fd, &sb) ? -errno : 0;
	if (!ret && (uint64_t)sb.st_size > STREAM_STAGE_MAX_IMAGE)
		ret = -EFBIG;
	*len = ret ? 0 : (size_t)sb.st_size;
	*buf = ret ? NULL : malloc(*len ? *len : 1);
	if (!ret && !*buf)
		ret = -ENOMEM;
	if (!ret)
		ret = pread_full(fd, *buf, *len, 0);
	close(fd);
	if (ret) {
		free(*buf);
		*buf = NULL;
		errmsg_set(err, errlen, ret, "staged image %s: %s", name, strerror(-ret));
	}
	return ret;
}

static int send_staged(struct stream_stage *st, const char *name, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int ret = read_staged(st, name, &buf, &len, err, errlen);

	if (ret)
		return ret;
	ret = send_bytes(st, name, buf, len, err, errlen);
	free(buf);
	if (!ret && unlinkat(st->dir_fd, name, 0))
		ret = errmsg_set(err, errlen, -errno, "staged image %s: %s", name, strerror(errno));
	return ret;
}

/* Appends name and a newline to the manifest being built. */
static int manifest_add(char **m, size_t *len, const char *name)
{
	size_t n = strlen(name);
	char *grown = realloc(*m, *len + n + 1);

	if (!grown)
		return -ENOMEM;
	memcpy(grown + *len, name, n);
	grown[*len + n] = '\n';
	*m = grown;
	*len += n + 1;
	return 0;
}

static bool is_part(const char *name)
{
	size_t n = strlen(name), p = strlen(PART_SUFFIX);

	return n > p && !strcmp(name + n - p, PART_SUFFIX);
}

int stream_stage_flush(struct stream_stage *st, char *err, size_t errlen)
{
	char manifest[64], *m = NULL;
	struct dirent *de;
	size_t len = 0;
	int ret = 0, fd = dup(st->dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return errmsg_set(err, errlen, -errno, "staged images: %s", strerror(errno));
	}
	rewinddir(d);
	while (!ret && (de = readdir(d)))
		if (de->d_name[0] != '.' && !is_part(de->d_name)) {
			ret = send_staged(st, de->d_name, err, errlen);
			if (!ret && manifest_add(&m, &len, de->d_name))
				ret = errmsg_set(err, errlen, -ENOMEM, "no memory for a manifest");
		}
	closedir(d);
	if (!ret && len) {
		snprintf(manifest, sizeof(manifest), STREAM_STAGE_MANIFEST, st->manifests);
		ret = send_bytes(st, manifest, m, len, err, errlen);
		st->manifests += !ret;
	}
	free(m);
	return ret;
}

/* ---- restore ---------------------------------------------------------------------------- */

/* Image `name` from the stream, whole, into *buf (malloc'd); -ENOENT if it has none. */
static int fetch_bytes(struct stream_stage *st, const char *name, uint8_t **buf, size_t *len,
		       char *err, size_t errlen)
{
	size_t cap = 4096;
	ssize_t n;
	int fd = st->open(st->open_arg, name, BO_ACCESS_READ), ret = 0;

	*buf = NULL;
	*len = 0;
	if (fd == -ENOENT)
		return -ENOENT;
	if (fd < 0)
		return errmsg_set(err, errlen, fd, "the image stream did not give %s: %s", name,
				  strerror(-fd));
	*buf = malloc(cap);
	while (!ret && *buf) {
		if (*len == cap) {
			uint8_t *grown =
				cap < STREAM_STAGE_MAX_IMAGE ? realloc(*buf, cap * 2) : NULL;

			if (!grown) {
				ret = cap < STREAM_STAGE_MAX_IMAGE ? -ENOMEM : -EFBIG;
				break;
			}
			*buf = grown;
			cap *= 2;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		*len += (size_t)n;
	}
	if (!*buf)
		ret = -ENOMEM;
	close(fd);
	if (ret) {
		free(*buf);
		*buf = NULL;
		errmsg_set(err, errlen, ret, "reading %s from the image stream: %s", name,
			   strerror(-ret));
	}
	return ret;
}

/* A name a manifest may give: one of ours, a plain file name. */
static bool name_ok(const char *name)
{
	return !strncmp(name, "amdgpu-", 7) && strlen(name) < 128 && !strchr(name, '/') &&
	       !is_part(name);
}

static int fetch_one(struct stream_stage *st, const char *name, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int fd, ret;

	if (!name_ok(name))
		return errmsg_set(err, errlen, -EPROTO,
				  "a manifest of the image stream names \"%.64s\", no image of "
				  "this plugin",
				  name);
	ret = fetch_bytes(st, name, &buf, &len, err, errlen);
	if (ret == -ENOENT)
		return errmsg_set(err, errlen, -ENOENT,
				  "the image stream has no %s, which its manifest names: the "
				  "stream is incomplete",
				  name);
	if (ret)
		return ret;
	fd = openat(st->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ret = fd < 0 ? -errno : write_full(fd, buf, len);
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	free(buf);
	if (ret)
		errmsg_set(err, errlen, ret, "staging %s: %s", name, strerror(-ret));
	return ret;
}

/* Every image the manifest (len bytes) names; *count grows by their number. */
static int fetch_listed(struct stream_stage *st, char *m, size_t len, uint32_t *count, char *err,
			size_t errlen)
{
	char *line = m, *nl;
	int ret = 0;

	if (len && m[len - 1] != '\n')
		return errmsg_set(err, errlen, -EPROTO, "a manifest of the image stream is cut");
	while (!ret && line < m + len && (nl = memchr(line, '\n', (size_t)(m + len - line)))) {
		*nl = '\0';
		if (++*count > STREAM_STAGE_MAX_NAMES)
			return errmsg_set(err, errlen, -E2BIG,
					  "the image stream's manifests name more than %u images",
					  STREAM_STAGE_MAX_NAMES);
		ret = fetch_one(st, line, err, errlen);
		line = nl + 1;
	}
	return ret;
}

int stream_stage_fetch(struct stream_stage *st, uint32_t *count, char *err, size_t errlen)
{
	char manifest[64];
	uint8_t *m;
	size_t len;
	int ret;

	*count = 0;
	for (;;) {
		snprintf(manifest, sizeof(manifest), STREAM_STAGE_MANIFEST, st->manifests);
		ret = fetch_bytes(st, manifest, &m, &len, err, errlen);
		if (ret == -ENOENT)
			return 0;
		if (ret)
			return ret;
		if (memchr(m, '\0', len))
			ret = errmsg_set(err, errlen, -EPROTO, "%s is no manifest", manifest);
		else
			ret = fetch_listed(st, (char *)m, len, count, err, errlen);
		free(m);
		if (ret)
			return ret;
		st->manifests++;
	}
}
