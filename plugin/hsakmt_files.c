// SPDX-License-Identifier: MIT
/* libhsakmt's shared files at dump and restore: the why is in hsakmt_files.h. */
#include "plugin/hsakmt_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/fullio.h"
#include "images/kfd_image.h"

const struct hsakmt_paths hsakmt_paths_default = {
	.proc = "/proc",
	.shm_dir = KFD_IMAGE_HSAKMT_SHM_DIR,
	.shm_name = KFD_IMAGE_HSAKMT_SHM_NAME,
	.sem_name = KFD_IMAGE_HSAKMT_SEM_NAME,
};

#define DELETED " (deleted)"

/* one mapping of /proc/PID/maps */
struct mapping {
	unsigned long start, end;
	dev_t dev;
	ino_t ino;
	const char *path; /* into the line */
};

/* what a process maps of libhsakmt's files */
struct scan {
	bool have[2]; /* by name: [0] shm, [1] semaphore */
	unsigned long start[2], end[2];
	bool temp_sem; /* a deleted sem.XXXXXX: maybe the creator's */
	dev_t temp_dev;
	ino_t temp_ino;
};

static int parse_mapping(char *line, struct mapping *m)
{
	unsigned int maj, min;
	unsigned long ino;
	int path_at = 0;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "%lx-%lx %*4s %*x %x:%x %lu %n", &m->start, &m->end, &maj, &min, &ino,
		   &path_at) < 5 ||
	    !path_at)
		return -EINVAL;
	m->dev = makedev(maj, min);
	m->ino = (ino_t)ino;
	m->path = line + path_at;
	return 0;
}

/* "<dir>/<name>" with name exactly `name` */
static bool is_named(const char *path, const char *dir, const char *name)
{
	size_t d = strlen(dir);

	return !strncmp(path, dir, d) && path[d] == '/' && !strcmp(path + d + 1, name);
}

/* "<dir>/sem.XXXXXX (deleted)": glibc's temporary name of a new semaphore */
static bool is_temp_sem(const char *path, const char *dir)
{
	size_t d = strlen(dir), n = strlen(path);

	return !strncmp(path, dir, d) && path[d] == '/' && !strncmp(path + d + 1, "sem.", 4) &&
	       n == d + 1 + 4 + 6 + strlen(DELETED) && !strcmp(path + n - strlen(DELETED), DELETED);
}

static void scan_one(const struct hsakmt_paths *p, const struct mapping *m, struct scan *sc)
{
	const char *names[2] = {p->shm_name, p->sem_name};

	for (int i = 0; i < 2; i++) {
		if (!sc->have[i] && is_named(m->path, p->shm_dir, names[i])) {
			sc->have[i] = true;
			sc->start[i] = m->start;
			sc->end[i] = m->end;
		}
	}
	if (!sc->temp_sem && is_temp_sem(m->path, p->shm_dir)) {
		sc->temp_sem = true;
		sc->temp_dev = m->dev;
		sc->temp_ino = m->ino;
	}
}

static int scan_maps(const struct hsakmt_paths *p, int pid, struct scan *sc, char *why, size_t len)
{
	char path[PATH_MAX], line[PATH_MAX + 128];
	struct mapping m;
	FILE *f;

	memset(sc, 0, sizeof(*sc));
	snprintf(path, sizeof(path), "%s/%d/maps", p->proc, pid);
	f = fopen(path, "re");
	if (!f)
		return errmsg_set(why, len, -errno, "cannot read %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!parse_mapping(line, &m))
			scan_one(p, &m, sc);
	fclose(f);
	return 0;
}

/* The creator's mapping is the named semaphore's inode: unlink the name. */
static int unlink_if_creator(const struct hsakmt_paths *p, int pid, const struct scan *sc,
			     int *unlinked, char *why, size_t len)
{
	char path[PATH_MAX];
	struct stat st;

	*unlinked = 0;
	if (!sc->temp_sem)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/root%s/%s", p->proc, pid, p->shm_dir, p->sem_name);
	if (lstat(path, &st) || st.st_ino != sc->temp_ino || st.st_dev != sc->temp_dev)
		return 0; /* not ours: CRIU saves a nameless one as a ghost anyway */
	if (unlink(path) && errno != ENOENT)
		return errmsg_set(
			why, len, -errno,
			"pid %d created libhsakmt's semaphore; cannot unlink %s/%s so that "
			"CRIU saves it with the process: %s",
			pid, p->shm_dir, p->sem_name, strerror(errno));
	*unlinked = 1;
	return 0;
}

/* the mapped file itself (map_files), else by its name in the process's root */
static int open_mapped(const struct hsakmt_paths *p, int pid, const struct scan *sc, int i,
		       const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%d/map_files/%lx-%lx", p->proc, pid, sc->start[i],
		 sc->end[i]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/%d/root%s/%s", p->proc, pid, p->shm_dir, name);
	return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

/* 0 recorded, 1 not libhsakmt's (skipped), or -errno */
static int record_file(const struct hsakmt_paths *p, int pid, const struct scan *sc, int i,
		       HsakmtFileEntry *e, uint8_t *buf, char *why, size_t len)
{
	const char *name = i ? p->sem_name : p->shm_name;
	struct stat st;
	int fd, ret = 0;

	fd = open_mapped(p, pid, sc, i, name);
	if (fd < 0)
		return errmsg_set(why, len, -errno, "pid %d: cannot read %s/%s: %s", pid,
				  p->shm_dir, name, strerror(errno));
	if (fstat(fd, &st)) {
		ret = errmsg_set(why, len, -errno, "pid %d: cannot stat %s/%s: %s", pid, p->shm_dir,
				 name, strerror(errno));
		goto out;
	}
	/* not libhsakmt's after all: CRIU handles it as any file, nothing to record */
	if (!S_ISREG(st.st_mode) || st.st_size > KFD_IMAGE_HSAKMT_MAX_FILE) {
		ret = 1;
		goto out;
	}
	ret = pread_full(fd, buf, (size_t)st.st_size, 0);
	if (ret) {
		errmsg_set(why, len, ret, "pid %d: cannot read %s/%s: %s", pid, p->shm_dir, name,
			   strerror(-ret));
		goto out;
	}
	e->size = (uint64_t)st.st_size;
	e->mode = st.st_mode & 0777;
	e->contents.data = buf;
	e->contents.len = (size_t)st.st_size;
out:
	close(fd);
	return ret;
}

int hsakmt_files_dump(const struct hsakmt_paths *p, int pid, int dir_fd,
		      struct hsakmt_dump_result *res, char *why, size_t len)
{
	uint8_t bufs[2][KFD_IMAGE_HSAKMT_MAX_FILE];
	HsakmtFileEntry files[2] = {HSAKMT_FILE_ENTRY__INIT, HSAKMT_FILE_ENTRY__INIT};
	HsakmtFileEntry *list[2];
	HsakmtFilesEntry e = HSAKMT_FILES_ENTRY__INIT;
	char paths[2][PATH_MAX];
	struct scan sc;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = scan_maps(p, pid, &sc, why, len);
	if (!ret)
		ret = unlink_if_creator(p, pid, &sc, &res->semaphore_unlinked, why, len);
	for (int i = 0; i < 2 && !ret; i++) {
		if (!sc.have[i])
			continue;
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", p->shm_dir,
			 i ? p->sem_name : p->shm_name);
		files[i].path = paths[i];
		ret = record_file(p, pid, &sc, i, &files[i], bufs[i], why, len);
		if (!ret)
			list[res->recorded++] = &files[i];
		ret = ret > 0 ? 0 : ret;
	}
	if (ret || (!res->recorded && !res->semaphore_unlinked))
		return ret;
	e.n_files = res->recorded;
	e.files = list;
	e.has_semaphore_unlinked = true;
	e.semaphore_unlinked = res->semaphore_unlinked;
	return kfd_image_write(dir_fd, KFD_IMAGE_HSAKMT, (uint32_t)pid, &e.base, why, len);
}

/* One of the two files as the images record it: the first entry naming it. */
struct wanted {
	const HsakmtFileEntry *f;
	uint32_t pid; /* of the image that names it first */
	bool missing; /* not there: to be created */
	bool created; /* by this call, as dev/ino (removed again if a later one fails) */
	dev_t dev;
	ino_t ino;
};

/* The images (the caller's) and the files they name. */
struct restore_plan {
	HsakmtFilesEntry *const *images;
	const uint32_t *ids;
	size_t n;
	struct wanted want[2]; /* hsakmt_files_check_names() allows two names */
	size_t n_want;
};

/*
 * Entry j of image i, whose names are checked (hsakmt_files_check_names()):
 * one size across the images.
 */
static int plan_add(struct restore_plan *plan, size_t i, size_t j, char *why, size_t len)
{
	const HsakmtFileEntry *f = plan->images[i]->files[j];
	size_t k;

	for (k = 0; k < plan->n_want; k++) {
		const struct wanted *w = &plan->want[k];

		if (strcmp(w->f->path, f->path))
			continue;
		if (w->f->size != f->size)
			return errmsg_set(why, len, -EINVAL,
					  "amdgpu-hsakmt-%" PRIu32 ".img records %s with %" PRIu64
					  " bytes, amdgpu-hsakmt-%" PRIu32 ".img with %" PRIu64
					  ": the checkpoint is damaged",
					  w->pid, f->path, w->f->size, plan->ids[i], f->size);
		return 0; /* shared by both processes, as libhsakmt's files are */
	}
	if (plan->n_want == sizeof(plan->want) / sizeof(plan->want[0]))
		return errmsg_set(why, len, -EINVAL, "libhsakmt's files: more than two names");
	plan->want[plan->n_want++] = (struct wanted){.f = f, .pid = plan->ids[i]};
	return 0;
}

/* A file that is there already: left alone if it is a regular file of the recorded size. */
static int check_existing(const HsakmtFileEntry *f, const struct stat *st, char *why, size_t len)
{
	if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size != f->size)
		return errmsg_set(
			why, len, -EEXIST,
			"%s exists here as %s of %lld bytes, the checkpoint's process used "
			"%" PRIu64 " bytes of libhsakmt's: remove it (libhsakmt makes it anew) "
			"and restore again",
			f->path, S_ISREG(st->st_mode) ? "a file" : "a non-regular file",
			(long long)st->st_size, f->size);
	return 0; /* shared with whoever uses it now, as libhsakmt's processes do */
}

/* Which of the wanted files are missing; those there must fit. Creates nothing. */
static int plan_check(struct restore_plan *plan, char *why, size_t len)
{
	struct stat st;
	int ret;

	for (size_t k = 0; k < plan->n_want; k++) {
		const HsakmtFileEntry *f = plan->want[k].f;

		if (lstat(f->path, &st)) {
			if (errno != ENOENT)
				return errmsg_set(why, len, -errno, "cannot stat %s: %s", f->path,
						  strerror(errno));
			plan->want[k].missing = true;
			continue;
		}
		ret = check_existing(f, &st, why, len);
		if (ret)
			return ret;
	}
	return 0;
}

static int create_file(struct wanted *w, char *why, size_t len)
{
	const HsakmtFileEntry *f = w->f;
	struct stat st;
	int fd, ret;

	fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, f->mode & 0666);
	if (fd < 0 && errno == EEXIST) {
		/* made meanwhile (a libhsakmt process starting): as if it had been there */
		if (lstat(f->path, &st))
			return errmsg_set(why, len, -errno, "cannot stat %s: %s", f->path,
					  strerror(errno));
		return check_existing(f, &st, why, len);
	}
	if (fd < 0)
		return errmsg_set(why, len, -errno, "cannot create %s for the restored process: %s",
				  f->path, strerror(errno));
	ret = fstat(fd, &st) ? -errno : 0;
	if (!ret) {
		w->created = true;
		w->dev = st.st_dev;
		w->ino = st.st_ino;
		ret = pwrite_full(fd, f->contents.data, f->contents.len, 0);
	}
	if (!ret && fchmod(fd, f->mode & 0666))
		ret = -errno;
	close(fd);
	if (ret)
		return errmsg_set(why, len, ret, "cannot create %s for the restored process: %s",
				  f->path, strerror(-ret));
	return 0;
}

/* Removes what this call created (by its inode: never a file someone made since). */
static void plan_undo(struct restore_plan *plan)
{
	struct stat st;

	for (size_t k = 0; k < plan->n_want; k++) {
		struct wanted *w = &plan->want[k];

		if (w->created && !lstat(w->f->path, &st) && st.st_dev == w->dev &&
		    st.st_ino == w->ino)
			unlink(w->f->path);
		w->created = false;
	}
}

/*
 * Everything is checked first (every image, every entry, the files there
 * already), then the missing files are created: a refusal leaves nothing
 * behind, and a creation that fails midway removes the ones made before it.
 */
int hsakmt_files_restore(const struct hsakmt_paths *p, HsakmtFilesEntry *const *images,
			 const uint32_t *pids, size_t n, unsigned int *created, char *why,
			 size_t len)
{
	struct restore_plan plan = {.images = images, .ids = pids, .n = n};
	char names[2][PATH_MAX];
	const char *const name_list[2] = {names[0], names[1]};
	size_t k;
	int ret = 0;

	*created = 0;
	snprintf(names[0], sizeof(names[0]), "%s/%s", p->shm_dir, p->shm_name);
	snprintf(names[1], sizeof(names[1]), "%s/%s", p->shm_dir, p->sem_name);
	for (size_t i = 0; !ret && i < plan.n; i++) {
		ret = hsakmt_files_check_names(plan.images[i], plan.ids[i], name_list, why, len);
		for (size_t j = 0; !ret && j < plan.images[i]->n_files; j++)
			ret = plan_add(&plan, i, j, why, len);
	}
	ret = ret ?: plan_check(&plan, why, len);
	for (k = 0; !ret && k < plan.n_want; k++)
		if (plan.want[k].missing)
			ret = create_file(&plan.want[k], why, len);
	if (ret)
		plan_undo(&plan);
	for (k = 0; k < plan.n_want; k++)
		*created += plan.want[k].created;
	return ret;
}
