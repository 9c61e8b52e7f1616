// SPDX-License-Identifier: MIT
/* BO contents of a restored process: by the task, or by the master's copier (restore_copy.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "plugin/criu_stream.h"
#include "plugin/clock.h"
#include "plugin/file_holder.h"
#include "common/escape.h"
#include "common/fullio.h"
#include "plugin/restore/restore_copy.h"
#include "common/thread_fs.h"

#define COPY_SLOT_WAIT_MS (10 * 60 * 1000)
#define SHARED_WAIT_MS	  (30 * 1000)
#define TAKE_WAIT_MS	  (60 * 1000) /* a TAKING copier is quick: fds only */
#define MANIFEST_MAGIC	  0x4d434741u /* "AGCM" */
#define MANIFEST_MAX_GPUS 64u

/* ---- writing the contents (task or copier) ---------------------------------------------- */

int restore_copy_run(const struct copy_engine_opts *opts, struct shared_state *sh, int dir_fd,
		     struct restore_copy_set *set, uint64_t *bytes)
{
	struct bo_sdma_engine **sdma = calloc(set->n + 1, sizeof(*sdma));
	struct bo_stream_config cfg = {.dir_fd = dir_fd, .image_id = set->image_id};
	char why[512];
	uint32_t i, j;
	int ret, slot = -1;

	criu_stream_config(&cfg); /* under criu --stream: from the image stream */
	*bytes = 0;
	for (i = 0; i < set->n; i++)
		for (j = 0; j < set->gpus[i].bo_count; j++)
			*bytes += set->gpus[i].bos[j].size;
	if (!sdma)
		return -ENOMEM;
	/* SDMA where it can be had; the render-node engine (already set) elsewhere */
	ret = copy_engines_open(opts, set->copy, set->n, sdma, set->gpus);
	if (ret)
		goto out;
	ret = shared_copy_slot_take(sh, shared_deadline(COPY_SLOT_WAIT_MS), &slot);
	if (ret) {
		pr_err("pid %u: waited %d s for a BO copy slot held by other restoring tasks: %s",
		       set->pid, COPY_SLOT_WAIT_MS / 1000, strerror(-ret));
		copy_engines_close(NULL, set->copy, set->n, sdma, NULL);
		goto out;
	}
	if (set->n)
		ret = bo_stream_restore(&cfg, set->gpus, set->n, why, sizeof(why));
	shared_copy_slot_put(sh, slot);
	if (ret)
		pr_err("pid %u: BO contents: %s; %s", set->pid, why,
		       ret == -EBADMSG ? "the checkpoint's data is damaged"
		       : ret == -ENOMEM
			       ? "out of memory: the restore left nothing behind, retry it when "
				 "memory is free"
			       : "the restore left nothing behind");
	snprintf(why, sizeof(why), "restore of pid %u:", set->pid);
	copy_engines_close(ret ? NULL : why, set->copy, set->n, sdma, set->gpus);
out:
	free(sdma);
	return ret;
}

void restore_copy_set_free(struct restore_copy_set *set)
{
	uint32_t i, j;

	for (i = 0; i < set->n; i++) {
		for (j = 0; set->gpus && j < set->gpus[i].bo_count; j++)
			if (set->gpus[i].bos[j].dmabuf_fd >= 0)
				close(set->gpus[i].bos[j].dmabuf_fd);
		if (set->gpus)
			free(set->gpus[i].bos);
		if (set->engines)
			bo_render_engine_fini(&set->engines[i]);
	}
	free(set->gpus);
	free(set->engines);
	free(set->copy);
	memset(set, 0, sizeof(*set));
}

/* ---- the manifest: what the copier needs of the task's restore ------------------------- */

struct manifest_head {
	uint32_t magic;
	uint32_t image_id;
	uint32_t pid;
	uint32_t n_gpus;
	uint64_t n_bos;
};

struct manifest_gpu {
	struct copy_gpu copy;
	uint32_t bo_count;
};

struct manifest_bo {
	uint64_t size;
	uint64_t offset; /* restored mmap offset on the render-node file */
	int32_t dmabuf_fd;
	int32_t drm_fd;
};

/* The render map of the stream BO with dma-buf fd `fd` in engine e; NULL if none. */
static const struct bo_render_map *map_of(const struct bo_render_engine *e, int fd)
{
	uint32_t i;

	for (i = 0; i < e->n_maps; i++)
		if (e->maps[i].dmabuf_fd == fd)
			return &e->maps[i];
	return NULL;
}

static int manifest_write(int fd, const struct restore_copy_set *set)
{
	struct manifest_head h = {.magic = MANIFEST_MAGIC,
				  .image_id = set->image_id,
				  .pid = set->pid,
				  .n_gpus = set->n};
	uint64_t off = sizeof(h);
	uint32_t i, j;
	int ret = 0;

	for (i = 0; i < set->n; i++)
		h.n_bos += set->gpus[i].bo_count;
	for (i = 0; !ret && i < set->n; i++) {
		struct manifest_gpu g = {.copy = set->copy[i], .bo_count = set->gpus[i].bo_count};

		ret = pwrite_full(fd, &g, sizeof(g), off);
		off += sizeof(g);
		for (j = 0; !ret && j < set->gpus[i].bo_count; j++) {
			const struct bo_stream_bo *b = &set->gpus[i].bos[j];
			const struct bo_render_map *m = map_of(&set->engines[i], b->dmabuf_fd);
			struct manifest_bo mb = {.size = b->size,
						 .offset = m ? m->offset : 0,
						 .dmabuf_fd = b->dmabuf_fd,
						 .drm_fd = m ? m->drm_fd : -1};

			ret = m ? pwrite_full(fd, &mb, sizeof(mb), off) : -EINVAL;
			off += sizeof(mb);
		}
	}
	return ret ?: pwrite_full(fd, &h, sizeof(h), 0);
}

int restore_copy_offer(struct shared_state *sh, const struct restore_copy_set *set)
{
	int fd = memfd_create("amdgpu-criu-manifest", MFD_CLOEXEC), ret;
	uint32_t answer = SHARED_HANDOFF_NONE;

	if (fd < 0)
		return -EAGAIN; /* no memfd: the task copies */
	ret = manifest_write(fd, set);
	if (!ret)
		ret = shared_handoff_offer(sh, set->image_id, fd, shared_deadline(SHARED_WAIT_MS));
	if (!ret)
		ret = shared_handoff_settle(sh, set->image_id,
					    shared_deadline(RESTORE_COPY_OFFER_WAIT_MS),
					    shared_deadline(TAKE_WAIT_MS), &answer);
	close(fd);
	if (ret == -EINVAL || ret == -EALREADY)
		return -EAGAIN;
	if (ret)
		return ret;
	if (answer == SHARED_HANDOFF_TAKEN)
		return 0;
	pr_info("pid %u: the master's BO copier %s; the task writes its BO contents itself",
		set->pid,
		answer == SHARED_HANDOFF_REFUSED ? "could not take them" : "did not answer");
	return -EAGAIN;
}

/* ---- the copier (master) ------------------------------------------------------------------ */

struct copier_job {
	struct copier_job *next;
	uint32_t image_id;
	struct restore_copy_set set;
	uint64_t taken_usec;
	/* the task's render-node files, duplicated once each (the maps share them) */
	struct {
		int task_fd, fd;
	} drm[MANIFEST_MAX_GPUS];
	uint32_t n_drm;
};

/* Releases what the job holds (its copy set, its render-node fds); the job
 * itself is its owner's to free, after its image_id and times are read. */
static void job_release(struct copier_job *job)
{
	uint32_t i;

	restore_copy_set_free(&job->set);
	for (i = 0; i < job->n_drm; i++)
		close(job->drm[i].fd);
	job->n_drm = 0;
}

/* The PPid of pid (/proc); 0 if it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char path[64], line[128];
	pid_t ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "PPid: %d", &ppid) == 1)
			break;
	fclose(f);
	return ppid;
}

static bool descends_from(pid_t pid, pid_t ancestor)
{
	int depth;

	for (depth = 0; pid > 1 && depth < 256; depth++) {
		pid = parent_of(pid);
		if (pid == ancestor)
			return true;
	}
	return false;
}

/* The pid, in our namespace, of our descendant whose innermost pid is `inner`; 0 if none. */
static pid_t outer_pid_of(uint32_t inner)
{
	pid_t self = getpid(), found = 0;
	struct dirent *de;
	DIR *d;

	if (innermost_pid((pid_t)inner) == inner && descends_from((pid_t)inner, self))
		return (pid_t)inner;
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		pid_t p = (pid_t)atoi(de->d_name);

		if (p > 0 && innermost_pid(p) == inner && descends_from(p, self))
			found = p;
	}
	closedir(d);
	return found;
}

/* Our duplicate of the task's render-node fd task_fd, once per job. */
static int job_drm_fd(struct copier_job *job, int pidfd, int task_fd)
{
	uint32_t i;
	int fd;

	for (i = 0; i < job->n_drm; i++)
		if (job->drm[i].task_fd == task_fd)
			return job->drm[i].fd;
	if (job->n_drm == MANIFEST_MAX_GPUS)
		return -EMFILE;
	fd = task_fd_take(pidfd, task_fd);
	if (fd >= 0)
		job->drm[job->n_drm++] = (typeof(job->drm[0])){.task_fd = task_fd, .fd = fd};
	return fd;
}

/*
 * GPU i of the manifest at *off: its BOs' fds duplicated from the task. The
 * render engine owns its map table from the start, so that job_release()
 * releases it on every early return; maps are sorted once all are in.
 */
static int take_gpu(int pidfd, int manifest, uint64_t *off, struct copier_job *job, uint32_t i)
{
	struct restore_copy_set *set = &job->set;
	struct bo_render_engine *e = &set->engines[i];
	struct bo_stream_gpu *g = &set->gpus[i];
	struct manifest_gpu mg;
	struct bo_render_map *maps;
	uint32_t j;
	int ret = pread_full(manifest, &mg, sizeof(mg), *off);

	*off += sizeof(mg);
	if (!ret && mg.bo_count > BO_STREAM_MAX_BOS)
		ret = -EINVAL;
	if (ret)
		return ret;
	set->n = i + 1;
	set->copy[i] = mg.copy;
	g->gpu_id = mg.copy.gpu_id;
	g->bos = calloc(mg.bo_count + 1, sizeof(*g->bos));
	maps = calloc(mg.bo_count + 1, sizeof(*maps));
	bo_render_engine_init(e, maps, 0);
	if (!g->bos || !maps)
		return -ENOMEM;
	for (j = 0; j < mg.bo_count; j++) {
		struct manifest_bo mb;
		int dmabuf, drm;

		ret = pread_full(manifest, &mb, sizeof(mb), *off);
		*off += sizeof(mb);
		if (ret)
			return ret;
		dmabuf = task_fd_take(pidfd, mb.dmabuf_fd);
		if (dmabuf < 0)
			return dmabuf;
		g->bos[j] = (struct bo_stream_bo){.size = mb.size, .dmabuf_fd = dmabuf};
		g->bo_count = j + 1;
		drm = job_drm_fd(job, pidfd, mb.drm_fd);
		if (drm < 0)
			return drm;
		maps[j] = (struct bo_render_map){
			.dmabuf_fd = dmabuf, .drm_fd = drm, .offset = mb.offset};
		e->n_maps = j + 1;
	}
	bo_render_engine_init(e, maps, e->n_maps);
	g->engine = &e->engine;
	return 0;
}

/* Reads the manifest (fd ours) and duplicates every fd it names from the task. */
static int take_set(int pidfd, int manifest, uint32_t image_id, struct copier_job *job)
{
	struct restore_copy_set *set = &job->set;
	struct manifest_head h;
	uint64_t off = sizeof(h);
	uint32_t i;
	int ret = pread_full(manifest, &h, sizeof(h), 0);

	if (!ret && (h.magic != MANIFEST_MAGIC || h.image_id != image_id ||
		     h.n_gpus > MANIFEST_MAX_GPUS || h.n_bos > BO_STREAM_MAX_BOS))
		ret = -EINVAL;
	if (ret)
		return ret;
	set->image_id = image_id;
	set->pid = h.pid;
	set->copy = calloc(h.n_gpus + 1, sizeof(*set->copy));
	set->gpus = calloc(h.n_gpus + 1, sizeof(*set->gpus));
	set->engines = calloc(h.n_gpus + 1, sizeof(*set->engines));
	if (!set->copy || !set->gpus || !set->engines)
		return -ENOMEM;
	for (i = 0; !ret && i < h.n_gpus; i++)
		ret = take_gpu(pidfd, manifest, &off, job, i);
	return ret;
}

/* Takes one offer: the task's fds into a job, queued; the answer recorded either way. */
static void take_offer(struct restore_copier *c, uint32_t id, uint32_t pid, int manifest_fd)
{
	struct copier_job *job = calloc(1, sizeof(*job));
	pid_t outer = outer_pid_of(pid);
	int pidfd = outer ? task_pidfd(outer) : -ESRCH, manifest = -1, ret;

	ret = !job ? -ENOMEM : pidfd < 0 ? pidfd : 0;
	if (!ret) {
		manifest = task_fd_take(pidfd, manifest_fd);
		ret = manifest < 0 ? manifest : take_set(pidfd, manifest, id, job);
	}
	if (manifest >= 0)
		close(manifest);
	if (pidfd >= 0)
		close(pidfd);
	if (ret) {
		pr_warn("file %u: the BO copier cannot take the contents of pid %u (%s): the task "
			"writes them itself",
			id, pid, strerror(-ret));
		if (job)
			job_release(job);
		free(job);
		shared_handoff_answer(c->sh, id, 0, shared_deadline(SHARED_WAIT_MS));
		return;
	}
	job->image_id = id;
	job->taken_usec = clock_usec();
	/* TAKEN before the worker can see it: its COPIED must come after */
	shared_handoff_answer(c->sh, id, 1, shared_deadline(SHARED_WAIT_MS));
	pthread_mutex_lock(&c->lock);
	if (c->tail)
		c->tail->next = job;
	else
		c->head = job;
	c->tail = job;
	pthread_cond_signal(&c->queued);
	pthread_mutex_unlock(&c->lock);
}

static bool stopping(const struct restore_copier *c)
{
	return __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE);
}

/* The copier's lines (its thread-local sink) into the shared log, for the main thread. */
static void flush_log(struct restore_copier *c, struct log_sink *local)
{
	pthread_mutex_lock(&c->lock);
	log_sink_append(&c->log, local);
	pthread_mutex_unlock(&c->lock);
	local->used = 0;
	local->dropped = 0;
}

static void block_signals(void)
{
	sigset_t all;

	/* CRIU's handlers (SIGCHLD above all) run on CRIU's own thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *taker_main(void *arg)
{
	const struct timespec pause = {.tv_nsec = 1000000};
	struct restore_copier *c = arg;
	struct log_sink local = {0};
	uint32_t id, pid;
	int fd;

	thread_own_fs(); /* else CRIU cannot setns() into a restored mount namespace */
	block_signals();
	log_sink_set(&local);
	while (!stopping(c)) {
		if (shared_handoff_next(c->sh, &id, &pid, &fd, shared_deadline(SHARED_WAIT_MS))) {
			nanosleep(&pause, NULL);
			continue;
		}
		take_offer(c, id, pid, fd);
		flush_log(c, &local);
	}
	flush_log(c, &local);
	return NULL;
}

static void copy_job(struct restore_copier *c, struct copier_job *job, struct log_sink *local)
{
	uint64_t bytes = 0;
	int ret = restore_copy_run(&c->opts, c->sh, c->dir_fd, &job->set, &bytes);

	if (!ret)
		pr_info("pid %u: the master's BO copier wrote %" PRIu64 " MiB in %" PRIu64
			" ms while CRIU restored the task",
			job->set.pid, bytes >> 20, (clock_usec() - job->taken_usec) / 1000);
	job_release(job);
	flush_log(c, local);
	shared_handoff_copied(c->sh, job->image_id, ret, bytes, clock_usec() - job->taken_usec,
			      shared_deadline(SHARED_WAIT_MS));
}

static void *worker_main(void *arg)
{
	struct restore_copier *c = arg;
	struct log_sink local = {0};
	struct copier_job *job;

	thread_own_fs(); /* else CRIU cannot setns() into a restored mount namespace */
	block_signals();
	log_sink_set(&local);
	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (!c->head && !stopping(c))
			pthread_cond_wait(&c->queued, &c->lock);
		job = c->head;
		if (job) {
			c->head = job->next;
			if (!c->head)
				c->tail = NULL;
		}
		pthread_mutex_unlock(&c->lock);
		if (!job)
			break;
		if (stopping(c)) { /* the restore has ended: nobody waits for it */
			job_release(job);
			shared_handoff_copied(c->sh, job->image_id, -ECANCELED, 0, 0,
					      shared_deadline(SHARED_WAIT_MS));
		} else {
			copy_job(c, job, &local);
		}
		free(job);
	}
	return NULL;
}

/* Tells every thread to end; joins the workers. */
static void stop_workers(struct restore_copier *c)
{
	unsigned int i;

	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->queued);
	pthread_mutex_unlock(&c->lock);
	for (i = 0; i < c->n_workers; i++)
		pthread_join(c->workers[i], NULL);
	c->n_workers = 0;
}

int restore_copier_start(struct restore_copier *c, struct shared_state *sh, int dir_fd,
			 const struct copy_engine_opts *opts)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->sh = sh;
	c->opts = *opts;
	c->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	if (c->dir_fd < 0)
		return -errno;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->queued, NULL);
	for (ret = 0; !ret && c->n_workers < RESTORE_COPY_WORKERS; c->n_workers++)
		ret = -pthread_create(&c->workers[c->n_workers], NULL, worker_main, c);
	if (ret)
		c->n_workers--; /* the one that failed */
	else
		ret = -pthread_create(&c->taker, NULL, taker_main, c);
	if (ret) {
		stop_workers(c);
		close(c->dir_fd);
		pthread_cond_destroy(&c->queued);
		pthread_mutex_destroy(&c->lock);
		return ret;
	}
	c->running = true;
	return 0;
}

static void replay_log(struct restore_copier *c)
{
	pthread_mutex_lock(&c->lock);
	log_sink_replay(&c->log, "");
	pthread_mutex_unlock(&c->lock);
}

int restore_copier_wait(struct restore_copier *c, uint32_t id, uint64_t deadline_ms)
{
	const struct timespec pause = {.tv_nsec = 2000000};
	struct shared_image img;
	int ret;

	for (;;) {
		ret = shared_image_get(c->sh, id, &img, deadline_ms);
		if (ret)
			break;
		if (img.handoff != SHARED_HANDOFF_TAKEN && img.handoff != SHARED_HANDOFF_TAKING &&
		    img.handoff != SHARED_HANDOFF_OFFERED) {
			ret = img.handoff == SHARED_HANDOFF_COPIED ? img.copy_error : 0;
			break;
		}
		if (shared_deadline(0) >= deadline_ms) {
			ret = -ETIMEDOUT;
			break;
		}
		nanosleep(&pause, NULL);
	}
	if (c->running)
		replay_log(c);
	return ret;
}

void restore_copier_stop(struct restore_copier *c)
{
	if (!c->running)
		return;
	/* the taker first: no job is queued after the workers have drained the queue */
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->taker, NULL);
	stop_workers(c);
	replay_log(c);
	close(c->dir_fd);
	pthread_cond_destroy(&c->queued);
	pthread_mutex_destroy(&c->lock);
	c->running = false;
}
