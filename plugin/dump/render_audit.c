// SPDX-License-Identifier: MIT
/*
 * GPU memory on render-node files that the dump would not save (render_audit.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <libdrm/amdgpu_drm.h>
#include "plugin/drm_uapi_618.h"
#include "plugin/file_holder.h"
#include "plugin/dump/gem_info.h"
#include "plugin/gem_list.h"
#include "plugin/dump/render_audit.h"
#include "common/escape.h"
#include "common/gpu_libs.h"

#define KIB(x) ((unsigned long long)((x) >> 10))

/* ---- fdinfo ---------------------------------------------------------------- */

static int region_of(const char *name, size_t len)
{
	static const char *const names[DRM_REGION_COUNT] = {"cpu", "gtt", "vram"};
	int r;

	for (r = 0; r < DRM_REGION_COUNT; r++)
		if (strlen(names[r]) == len && !strncmp(name, names[r], len))
			return r;
	return -1;
}

/* "<n>", "<n> KiB", "<n> MiB" or "<n> GiB" (the DRM core's units) -> bytes. */
static int parse_size(const char *v, uint64_t *bytes)
{
	char *end;
	unsigned long long n;
	unsigned int shift = 0;

	while (*v == ' ' || *v == '\t')
		v++;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (!strncmp(end, "KiB", 3))
		shift = 10, end += 3;
	else if (!strncmp(end, "MiB", 3))
		shift = 20, end += 3;
	else if (!strncmp(end, "GiB", 3))
		shift = 30, end += 3;
	if (*end && *end != '\n')
		return -EINVAL;
	if (n > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)n << shift;
	return 0;
}

static int parse_line(const char *line, const char *colon, struct drm_fdinfo *out, bool *total_seen)
{
	size_t klen = (size_t)(colon - line);
	const char *v = colon + 1;
	bool total = klen > 10 && !strncmp(line, "drm-total-", 10);
	bool memory = klen > 11 && !strncmp(line, "drm-memory-", 11);
	uint64_t bytes;
	int region;

	while (klen && line[klen - 1] == ' ') /* 6.12 pads "drm-memory-gtt: " */
		klen--;
	if (klen == 10 && !strncmp(line, "drm-driver", 10)) {
		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(out->driver, sizeof(out->driver), "%.*s", (int)strcspn(v, "\n"), v);
		return 0;
	}
	if (klen == 13 && !strncmp(line, "drm-client-id", 13)) {
		out->has_client_id = !parse_size(v, &out->client_id);
		return 0;
	}
	if (!total && !memory)
		return 0;
	region = total ? region_of(line + 10, klen - 10) : region_of(line + 11, klen - 11);
	if (region < 0)
		return 0;
	if (parse_size(v, &bytes))
		return -EINVAL;
	/* 6.13+ prints drm-total-*; where both appear, total wins */
	if (total || !total_seen[region])
		out->bytes[region] = bytes;
	total_seen[region] |= total;
	out->has_memory = true;
	return 0;
}

int drm_fdinfo_parse(const char *text, struct drm_fdinfo *out)
{
	bool total_seen[DRM_REGION_COUNT] = {false};
	const char *line = text;

	memset(out, 0, sizeof(*out));
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		const char *colon = memchr(line, ':', nl ? (size_t)(nl - line) : strlen(line));

		if (colon && parse_line(line, colon, out, total_seen))
			return -EINVAL;
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* ---- GEM handles ------------------------------------------------------------ */

static int list_handles(int fd, render_ioctl_fn ioctl_fn, struct gem_census *out)
{
	struct drm_amdgpu_gem_list_handles_entry *e;
	uint32_t i, n;
	int ret = gem_handles_list(fd, ioctl_fn, &e, &n);

	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		out->handles++;
		out->bytes += e[i].size;
		out->imported += !!(e[i].flags & AMDGPU_GEM_LIST_HANDLES_FLAG_IS_IMPORT);
	}
	out->listed = true;
	free(e);
	return 0;
}

static int probe_handles(int fd, render_ioctl_fn ioctl_fn, uint32_t limit, struct gem_census *out)
{
	struct drm_amdgpu_gem_create_in info;
	uint32_t h;

	for (h = 1; h <= limit; h++) {
		struct drm_amdgpu_gem_op op = {
			.handle = h,
			.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
			.value = (uintptr_t)&info,
		};
		int ret = ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_OP, &op);

		if (ret == -ENOENT)
			continue;
		/* not a GEM driver at all (a test's fake node): it holds no GEM BOs */
		if (ret == -ENOTTY && h == 1)
			break;
		if (ret)
			return ret;
		out->handles++;
		out->bytes += info.bo_size;
	}
	out->probed = h > limit ? limit : 0;
	return 0;
}

int gem_census_take(int fd, render_ioctl_fn ioctl_fn, uint32_t probe_limit, struct gem_census *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = list_handles(fd, ioctl_fn, out);
	if (ret != -EOPNOTSUPP)
		return ret;
	return probe_handles(fd, ioctl_fn, probe_limit, out);
}

/* ---- allowance -------------------------------------------------------------- */

static uint64_t blocks(uint64_t va, uint64_t size, unsigned int shift)
{
	return size ? ((va + size - 1) >> shift) - (va >> shift) + 1 : 0;
}

uint64_t render_audit_allowance(const uint64_t *va, const uint64_t *size, size_t n)
{
	uint64_t pages = 0;
	size_t i;

	for (i = 0; i < n; i++)
		pages += blocks(va[i], size[i], 21) + blocks(va[i], size[i], 30) +
			 blocks(va[i], size[i], 39);
	return (64ull << 10) + (pages << 12);
}

/* ---- tasks ------------------------------------------------------------------ */

void render_audit_init(struct render_audit *a, const struct amdgpu_options *o)
{
	memset(a, 0, sizeof(*a));
	a->probe_limit = o->gem_probe;
	a->census = o->gem_census;
	a->debugfs = o->debugfs;
	a->proc = "/proc";
	a->ioctl_fn = render_drm_ioctl;
}

void render_audit_fini(struct render_audit *a)
{
	free(a->files);
	a->files = NULL;
	a->n = a->cap = 0;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

static struct render_audit_file *audited_client(const struct render_audit *a, uint64_t client_id)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->files[i].info.has_client_id && a->files[i].info.client_id == client_id)
			return &a->files[i];
	return NULL;
}

static struct render_audit_file *new_file(struct render_audit *a)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct render_audit_file *f = realloc(a->files, cap * sizeof(*f));

		if (!f)
			return NULL;
		a->files = f;
		a->cap = cap;
	}
	memset(&a->files[a->n], 0, sizeof(a->files[0]));
	return &a->files[a->n++];
}

/* The task's own open file behind its fd: GEM handles belong to it. */
static int census_of(struct render_audit *a, int pidfd, struct render_audit_file *f)
{
	struct drm_version version = {0};
	int fd = task_fd_take(pidfd, f->fd);
	int ret;

	if (fd < 0)
		return fd;
	/*
	 * Any ioctl the DRM core dispatches makes CRIU the file's owner
	 * (drm_file_update_pid(): the last user), so that amdgpu_gem_info then
	 * names every file of the dumped tasks after us (census_task()). An
	 * answer does not matter; VERSION copies nothing with zero lengths.
	 */
	a->ioctl_fn(fd, DRM_IOCTL_VERSION, &version);
	ret = gem_census_take(fd, a->ioctl_fn, a->probe_limit, &f->gem);
	close(fd);
	return ret;
}

static int audit_file(struct render_audit *a, int pidfd, int fd, uint32_t minor, uint32_t gpu_id,
		      pid_t pid, bool *listed, char *err, size_t errlen)
{
	struct render_audit_file *f;
	struct drm_fdinfo info;
	char path[96], buf[8192];
	int ret;

	snprintf(path, sizeof(path), "%s/%d/fdinfo/%d", a->proc, (int)pid, fd);
	ret = read_small(path, buf, sizeof(buf));
	if (!ret)
		ret = drm_fdinfo_parse(buf, &info);
	if (ret) {
		snprintf(err, errlen, "pid %d fd %d (renderD%u): cannot read %s: %s", (int)pid, fd,
			 minor, path, strerror(-ret));
		return ret;
	}
	if (info.has_client_id && (f = audited_client(a, info.client_id))) {
		*listed = f->gem.listed;
		return 0;
	}
	f = new_file(a);
	if (!f)
		return -ENOMEM;
	*f = (struct render_audit_file){
		.pid = pid, .fd = fd, .minor = minor, .gpu_id = gpu_id, .info = info};
	ret = census_of(a, pidfd, f);
	*listed = f->gem.listed;
	if (ret) {
		snprintf(err, errlen,
			 "pid %d fd %d (renderD%u): cannot count its GEM buffer objects: %s; "
			 "refused, "
			 "since the dump could not tell whether it loses GPU memory",
			 (int)pid, fd, minor, strerror(-ret));
		return ret;
	}
	if (f->gem.listed && f->gem.imported) {
		snprintf(err, errlen,
			 "pid %d fd %d (renderD%u, GPU %u): %u of its GEM buffer objects are PRIME "
			 "imports of another device's buffers, which the plugin cannot restore as "
			 "shared: refused; close them before the checkpoint",
			 (int)pid, fd, minor, gpu_id, f->gem.imported);
		return -EPERM;
	}
	/* listed (6.18): the dump saves them (gem_dump.h) */
	if (f->gem.handles && !f->gem.listed) {
		snprintf(
			err, errlen,
			"pid %d fd %d (renderD%u, GPU %u): %u GEM buffer object%s of %llu KiB made "
			"through the render node (Mesa, libdrm_amdgpu), which the plugin can "
			"checkpoint only where the kernel lists them (Linux 6.18+): refused rather "
			"than lose them; free them before the checkpoint or keep the process out "
			"of it",
			(int)pid, fd, minor, gpu_id, f->gem.handles, f->gem.handles == 1 ? "" : "s",
			KIB(f->gem.bytes));
		return -EPERM;
	}
	return 0;
}

/*
 * What the file's listed GEM BOs (saved by the dump) may add to its VM:
 * their sizes and page tables for one mapping each (three levels).
 */
static uint64_t saved_gem_bytes(const struct render_audit_file *f)
{
	return f->gem.listed ? f->gem.bytes + (uint64_t)f->gem.handles * (3u << 12) : 0;
}

static int check_without_kfd(const struct render_audit_file *f, char *err, size_t errlen)
{
	uint64_t total = drm_fdinfo_total(&f->info),
		 allowed = render_audit_allowance(NULL, NULL, 0) + saved_gem_bytes(f);

	if (total <= allowed)
		return 0;
	snprintf(
		err, errlen,
		"pid %d fd %d (renderD%u, GPU %u): its GPU VM holds %llu KiB (fdinfo) and the task "
		"has no /dev/kfd: GPU memory the dump would lose (GEM handles above %u?); refused",
		(int)f->pid, f->fd, f->minor, f->gpu_id, KIB(total),
		f->gem.listed ? 0 : f->gem.probed);
	return -EPERM;
}

/* One render-node fd of the audited task. */
struct task_fd {
	int fd;
	uint32_t minor, gpu_id;
	bool listed; /* its kernel listed its GEM handles (6.18) */
};

/*
 * The task's render-node fds of KFD GPUs (*fds malloc'ed); whether it has
 * /dev/kfd.
 */
static int list_task_fds(const struct render_audit *a, pid_t pid, render_classify_fn classify,
			 void *arg, struct task_fd **fds, size_t *n, bool *has_kfd, char *err,
			 size_t errlen)
{
	char path[64];
	struct dirent *d;
	size_t cap = 0;
	DIR *dir;
	int ret = 0;

	*fds = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "%s/%d/fd", a->proc, (int)pid);
	dir = opendir(path);
	if (!dir) {
		ret = -errno;
		snprintf(err, errlen, "pid %d: cannot list %s: %s", (int)pid, path, strerror(-ret));
		return ret;
	}
	while (!ret && (d = readdir(dir))) {
		struct stat st;
		uint32_t gpu_id = 0;
		int kind;

		if (d->d_name[0] == '.' || fstatat(dirfd(dir), d->d_name, &st, 0) ||
		    !S_ISCHR(st.st_mode))
			continue;
		kind = classify(arg, st.st_rdev, &gpu_id);
		*has_kfd |= kind == RENDER_AUDIT_KFD;
		if (kind != RENDER_AUDIT_RENDER)
			continue;
		if (*n == cap) {
			struct task_fd *more =
				realloc(*fds, (cap = cap ? 2 * cap : 8) * sizeof(*more));

			if (!more) {
				ret = -ENOMEM;
				break;
			}
			*fds = more;
		}
		(*fds)[(*n)++] = (struct task_fd){
			.fd = atoi(d->d_name), .minor = minor(st.st_rdev), .gpu_id = gpu_id};
	}
	closedir(dir);
	return ret;
}

/*
 * The files amdgpu_gem_info names after this CRIU (their last user since
 * 6.7) or after the task (their opener before 6.7, when file->pid never
 * changes). It prints pids of the initial namespace, where CRIU runs.
 */
struct census_owners {
	long us, task;
};

static bool owned_by_tree(void *arg, long pid)
{
	const struct census_owners *o = arg;

	return pid == o->us || pid == o->task;
}

static int census_refusal(const struct render_audit *a, pid_t pid, const struct task_fd *t, int ret,
			  const struct gem_info_count *c, char *err, size_t errlen)
{
	if (!ret && !c->files) {
		snprintf(
			err, errlen,
			"pid %d fd %d (renderD%u, GPU %u): %s/dri/%u/amdgpu_gem_info names no file "
			"after this CRIU (pid %d) or the task, so it cannot count the task's GEM "
			"handles beyond the probe's %u (CRIU in a PID namespace of its own?): "
			"refused; run CRIU in the initial PID namespace, or set "
			"AMDGPU_CRIU_GEM_CENSUS=probe to accept the probe's reach",
			(int)pid, t->fd, t->minor, t->gpu_id, a->debugfs, t->minor, (int)getpid(),
			a->probe_limit);
		return -EPERM;
	}
	if (ret) {
		snprintf(err, errlen,
			 "pid %d fd %d (renderD%u, GPU %u): cannot read %s/dri/%u/amdgpu_gem_info "
			 "(%s), which alone counts GEM handles beyond the probe's %u on a kernel "
			 "that cannot list them (before Linux 6.18): refused; mount debugfs there "
			 "(or name it with AMDGPU_CRIU_DEBUGFS), or set "
			 "AMDGPU_CRIU_GEM_CENSUS=probe to accept the probe's reach",
			 (int)pid, t->fd, t->minor, t->gpu_id, a->debugfs, t->minor, strerror(-ret),
			 a->probe_limit);
		return ret == -ENOMEM ? ret : -EPERM;
	}
	snprintf(err, errlen,
		 "pid %d fd %d (renderD%u, GPU %u): amdgpu_gem_info lists %u GEM buffer object%s "
		 "of %llu KiB in the dumped tasks' render files, beyond the probe's %u handles: "
		 "made through the render node (Mesa, libdrm_amdgpu), which the plugin can "
		 "checkpoint only where the kernel lists them (Linux 6.18+): refused rather than "
		 "lose them",
		 (int)pid, t->fd, t->minor, t->gpu_id, c->handles, c->handles == 1 ? "" : "s",
		 KIB(c->bytes), a->probe_limit);
	return -EPERM;
}

/*
 * Before 6.18 the probe reaches handles 1..probe_limit only. amdgpu_gem_info
 * counts every handle of every file; the audit's ioctls made this CRIU the
 * last user of each file of the dumped tasks, so the files it names after
 * us are exactly those, this task's and the ones audited before (which had
 * none: any handle refuses, the kernel cannot save them). Before 6.7 it
 * names a file after its opener, the task. Finding no file at all means it
 * cannot tell (another PID namespace): refused. Once per GPU.
 */
static int census_task(const struct render_audit *a, pid_t pid, const struct task_fd *fds, size_t n,
		       char *err, size_t errlen)
{
	struct census_owners owners = {.us = (long)getpid(), .task = (long)pid};
	struct gem_info_count c;
	size_t i, j;
	int ret;

	if (a->census == RENDER_CENSUS_PROBE)
		return 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && (fds[j].minor != fds[i].minor || fds[j].listed); j++)
			;
		if (fds[i].listed || j < i)
			continue;
		ret = gem_info_read(a->debugfs, fds[i].minor, owned_by_tree, &owners, &c);
		if (ret || !c.files || c.handles)
			return census_refusal(a, pid, &fds[i], ret, &c, err, errlen);
	}
	return 0;
}

int render_audit_task(struct render_audit *a, pid_t pid, render_classify_fn classify, void *arg,
		      char *err, size_t errlen)
{
	struct task_fd *fds;
	size_t first = a->n, n, i;
	bool has_kfd = false;
	int pidfd = -1, ret;
	pid_t ns_pid = 0;

	ret = list_task_fds(a, pid, classify, arg, &fds, &n, &has_kfd, err, errlen);
	if (!ret && n) {
		pidfd = task_pidfd(pid);
		if (pidfd < 0) {
			ret = pidfd;
			snprintf(err, errlen, "pid %d: pidfd_open: %s", (int)pid, strerror(-ret));
		}
	}
	for (i = 0; !ret && i < n; i++)
		ret = audit_file(a, pidfd, fds[i].fd, fds[i].minor, fds[i].gpu_id, pid,
				 &fds[i].listed, err, errlen);
	if (pidfd >= 0)
		close(pidfd);
	for (i = first; !ret && i < a->n; i++) {
		if (!ns_pid)
			ns_pid = (pid_t)innermost_pid(pid) ?: pid;
		a->files[i].ns_pid = ns_pid;
		if (!has_kfd && a->files[i].info.has_memory)
			ret = check_without_kfd(&a->files[i], err, errlen);
	}
	if (!ret)
		ret = census_task(a, pid, fds, n, err, errlen);
	free(fds);
	return ret;
}

int render_audit_check_kfd(struct render_audit *a, pid_t ns_pid, uint32_t gpu_id,
			   uint64_t kfd_bytes, uint64_t allowance, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		struct render_audit_file *f = &a->files[i];
		uint64_t total = drm_fdinfo_total(&f->info);

		if (f->checked || f->ns_pid != ns_pid || f->gpu_id != gpu_id || !f->info.has_memory)
			continue;
		f->checked = true;
		allowance += saved_gem_bytes(f);
		if (total <= kfd_bytes + allowance)
			continue;
		snprintf(err, errlen,
			 "pid %d fd %d (renderD%u, GPU %u): its GPU VM holds %llu KiB (fdinfo), "
			 "the process's KFD BOs %llu KiB and page tables%s at most %llu KiB: "
			 "%llu KiB of GPU memory the dump would lose (GEM handles above %u?); "
			 "refused",
			 (int)f->pid, f->fd, f->minor, gpu_id, KIB(total), KIB(kfd_bytes),
			 f->gem.listed && f->gem.handles ? " and listed GEM BOs" : "",
			 KIB(allowance), KIB(total - kfd_bytes - allowance),
			 f->gem.listed ? 0 : f->gem.probed);
		return -EPERM;
	}
	return 0;
}
