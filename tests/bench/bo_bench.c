// SPDX-License-Identifier: MIT
/*
 * bo_bench: throughput of bo_stream_dump()/bo_stream_restore() on this host,
 * each next to a limit measured in the same run the same way as the path.
 *
 * BENCH_GIB GiB (default 2) of BO contents, in memfds standing in for
 * dma-bufs, split over BENCH_GPUS GPUs (default 2, at most 8) x 2 BOs, stream
 * through the CPU copy engine into the image directory (argv[1], default
 * "."), and back into fresh memfds, which are compared with the originals
 * afterwards (not timed). BENCH_ROUNDS rounds (default 10), each measuring
 * the dump and its limit back to back, then the restore and its limit,
 * the limit first in odd rounds and second in even ones, so that neither
 * gains from its place (an even number of rounds gives both as many first
 * places). The images are read once, untimed, before the restore and its
 * limit read them: both then find the device (and a virtual disk's host
 * cache) in the same state. Before every timed run the files of the runs
 * before it leave the page cache (see release_files()): each run then
 * writes or reads into memory just freed, as the first run of a round did.
 *
 * Each figure reported is the best of its rounds, and every round is shown.
 * A busy neighbour, the host of a virtual machine taking back freed memory
 * (free page reporting: the next use of such a page costs a fault in the
 * host) or a virtual disk's host can only make a run slower, never faster;
 * on this project's VMs they made single runs of the same path 2-3 times
 * slower at random, which put a median at the mercy of a coin. The path and
 * its limit get the same number of tries, side by side.
 *
 * The limits are the file I/O the path cannot avoid, done alone:
 *   dump     one thread per GPU writes one file of that GPU's bytes as the
 *            path writes its data file: sized first (ftruncate), chunk-sized
 *            pwrite()s, each chunk's writeback started at once
 *            (sync_file_range), fdatasync() at the end (cfg.sync); without
 *            reading a BO or computing a checksum
 *   restore  one thread per GPU reads the path's own data file of that GPU,
 *            the one the restore reads, dropped from the page cache
 *            (fdatasync + POSIX_FADV_DONTNEED) as it is for the restore, in
 *            chunk-sized pread()s: the same blocks on the device
 * A path faster than its limit would mean the limit is wrong.
 *
 * Also measured, for reading the figures: N-thread memcpy, one-thread
 * CRC-64 by ISA-L (the chunks' checksum since index version 3), CRC-32 by
 * ISA-L (version 1 and 2 images) and by zlib, and the share of the
 * path's CPU time spent on checksums (bo_stream_times.checksum_ns, the
 * checksumming threads' CPU time, against the process's from getrusage():
 * CPU time on both sides, so threads waiting for a core do not inflate it).
 *
 * CPU seconds per GiB, of each path and of its limit: getrusage(RUSAGE_SELF)
 * deltas around the timed run, the same window as its wall clock. That is
 * exact here because nothing else of this process runs then: the path's
 * threads are created and joined inside bo_stream_dump()/restore() while
 * the main thread waits, and the limit's threads have mapped their data
 * before the barrier that starts the clocks (then they do the I/O, close
 * and unmap, all inside the window, as the path's threads do). Each
 * figure is the lowest of its rounds, for the reason the best speed is
 * taken: interference (a host fault, a neighbour's cache misses) only adds.
 *
 * BENCH_NEIGHBOUR=N (default 0; `make bench` passes 1) runs every round a
 * second time beside N threads spinning in a forked process, the CPU
 * contention of a node running other jobs: in its own process, its CPU
 * time stays out of this one's getrusage(), and its own (read from its
 * rusage when it is reaped) shows that it ran. It is killed and reaped
 * before the rest and at any exit() (atexit), and dies with this process
 * (PR_SET_PDEATHSIG) on a signal. The peak RSS is the higher of the two
 * passes'; the checksum share is the idle pass's.
 *
 * The last line is JSON, for scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "datapath/bo_index.h"
#include "datapath/bo_stream.h"

#define MAX_GPUS     8
#define BOS_PER_GPU  2
#define MAX_ROUNDS   16
#define MIB	     (1ull << 20)
#define GIB	     (1ull << 30)
#define CHUNK	     BO_STREAM_DEFAULT_CHUNK
#define BASELINE_BUF (256 * MIB)

struct bench {
	int dir_fd;
	bool in_place; /* the BOs are host memory: the dump reads them in place */
	bool direct;   /* the dump writes with O_DIRECT, and so does its limit */
	int gpus;
	uint64_t total;
	uint64_t bo_size;
	int src[MAX_GPUS][BOS_PER_GPU];
	int dst[MAX_GPUS][BOS_PER_GPU];
	int limit_src[MAX_GPUS]; /* the write limit's data (limit_sources()) */
};

/* One path (or limit) run: wall time, CPU time of this process, checksum time. */
struct path_run {
	double wall_s;
	double cpu_s;
	double checksum_s;
	double engine_s, file_s; /* per GPU, on average: its copy side and file side busy */
	long peak_rss_mib;	 /* during the run */
	double machine_s;	 /* the whole machine's busy CPU time during the run */
};

/*
 * CPU seconds the whole machine has been busy, all cores together: every
 * process, the kernel's threads and interrupts (/proc/stat's first line,
 * in clock ticks). Next to the process's CPU time it tells whether
 * a run was short of cores (busy time near 2 cores x wall time) or waited
 * for something else with cores idle. 0 where /proc/stat cannot be read.
 */
static double machine_busy_s(void)
{
	unsigned long long v[8];
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return 0;
	/* user, nice, system, irq, softirq, steal: all but idle and iowait */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double gibps(uint64_t bytes, double seconds)
{
	return (double)bytes / (double)GIB / seconds;
}

static long rss_now_mib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	return resident * sysconf(_SC_PAGESIZE) / (long)MIB;
}

/*
 * The peak RSS of the paths alone: reset before each (clear_refs 5, Linux
 * 4.0 on) and read after it (VmHWM), so that the limits' 128 MiB sources
 * are not counted; where the reset is refused, the process's peak.
 */
static void peak_rss_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1) {
			/* not reset: the peak below is the process's */
		}
		close(fd);
	}
}

static long peak_rss_mib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	struct rusage ru;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	if (kib >= 0)
		return kib / 1024;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static void die(const char *what)
{
	fprintf(stderr, "bo_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Page-aligned, as the staging buffers are (O_DIRECT writes need it). */
static void *xmalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n))
		die("malloc");
	return p;
}

/* Incompressible-looking, and different per block so that a mix-up shows. */
static void fill_pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull | 1, *w = (uint64_t *)buf;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		w[i] = s;
	}
}

/* Writes the CHUNK bytes of pattern over and over, size bytes in all. */
static void memfd_fill(int fd, uint64_t size, const uint8_t *pattern)
{
	uint64_t off;

	for (off = 0; off < size; off += CHUNK)
		if (pwrite(fd, pattern, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			die("filling a memfd");
}

static int memfd_of(uint64_t size, const uint8_t *pattern)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die("memfd");
	if (pattern)
		memfd_fill(fd, size, pattern);
	return fd;
}

static void bench_setup(struct bench *b)
{
	uint8_t *pattern = xmalloc(CHUNK), *zeros = calloc(1, CHUNK);
	int g, i;

	if (!zeros)
		die("calloc");
	b->bo_size = b->total / ((uint64_t)b->gpus * BOS_PER_GPU) / CHUNK * CHUNK;
	b->total = b->bo_size * (uint64_t)b->gpus * BOS_PER_GPU;
	for (g = 0; g < b->gpus; g++)
		for (i = 0; i < BOS_PER_GPU; i++) {
			fill_pattern(pattern, CHUNK, (uint64_t)g * 16 + (uint64_t)i + 1);
			b->src[g][i] = memfd_of(b->bo_size, pattern);
			/* Written once, like VRAM that exists before the restore: the
			 * restore measures copies, not shmem allocation (fallocate alone
			 * leaves the pages to be cleared at their first fault, which made
			 * the first round's restore 3x slower). */
			b->dst[g][i] = memfd_of(b->bo_size, zeros);
		}
	free(zeros);
	free(pattern);
}

static void give_fds(struct bench *b, struct bo_stream_gpu *gpus,
		     struct bo_stream_bo bos[][BOS_PER_GPU], bool restore)
{
	int g, i;

	for (g = 0; g < b->gpus; g++) {
		gpus[g] = (struct bo_stream_gpu){
			.gpu_id = 1000 + (uint32_t)g, .bo_count = BOS_PER_GPU, .bos = bos[g]};
		for (i = 0; i < BOS_PER_GPU; i++) {
			bos[g][i].size = b->bo_size;
			bos[g][i].host_memory = b->in_place; /* read in place by dumps only */
			bos[g][i].dmabuf_fd = dup(restore ? b->dst[g][i] : b->src[g][i]);
		}
	}
}

/* Writes back and evicts a file's pages so that the next read comes from the device. */
static void drop_cache(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(name);
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static void image_name(char *name, size_t len, int gpu, const char *ext)
{
	snprintf(name, len, "amdgpu-bo-1-%d.%s", 1000 + gpu, ext);
}

/* AMDGPU_CRIU_DIRECT_IO as the plugin takes it: 1, 0, or auto (unset). */
static enum bo_write_mode write_mode_env(void)
{
	const char *env = getenv("AMDGPU_CRIU_DIRECT_IO");

	if (env && !strcmp(env, "1"))
		return BO_WRITE_DIRECT;
	if (env && !strcmp(env, "0"))
		return BO_WRITE_BUFFERED;
	return BO_WRITE_AUTO;
}

static struct path_run run_stream(struct bench *b, bool restore)
{
	/* BENCH_DIRECT_READ=1: the restore reads with O_DIRECT (io_uring) whatever
	 * the size, 0: through the page cache; else as the plugin does (AUTO) */
	const char *dr = getenv("BENCH_DIRECT_READ");
	struct bo_stream_config cfg = {.dir_fd = b->dir_fd,
				       .image_id = 1,
				       .sync = true,
				       .write_mode = write_mode_env(),
				       .read_mode = dr && !strcmp(dr, "1")   ? BO_READ_DIRECT
						    : dr && !strcmp(dr, "0") ? BO_READ_BUFFERED
									     : BO_READ_AUTO};
	struct bo_stream_gpu gpus[MAX_GPUS];
	struct bo_stream_bo bos[MAX_GPUS][BOS_PER_GPU];
	struct path_run r = {0};
	char err[256], name[64];
	double t0, c0;
	int g, ret;

	for (g = 0; restore && g < b->gpus; g++) {
		image_name(name, sizeof(name), g, "img");
		drop_cache(b->dir_fd, name);
	}
	give_fds(b, gpus, bos, restore);
	peak_rss_reset();
	c0 = cpu_now();
	r.machine_s = machine_busy_s();
	t0 = now();
	ret = restore ? bo_stream_restore(&cfg, gpus, (uint32_t)b->gpus, err, sizeof(err))
		      : bo_stream_dump(&cfg, gpus, (uint32_t)b->gpus, err, sizeof(err));
	r.wall_s = now() - t0;
	r.cpu_s = cpu_now() - c0;
	r.machine_s = machine_busy_s() - r.machine_s;
	r.peak_rss_mib = peak_rss_mib();
	if (ret) {
		fprintf(stderr, "bo_bench: %s: %s\n", restore ? "restore" : "dump", err);
		exit(1);
	}
	for (g = 0; g < b->gpus; g++) {
		if (restore && cfg.read_mode == BO_READ_DIRECT && !gpus[g].direct_read) {
			fprintf(stderr, "bo_bench: the restore's GPU %d read buffered: %s\n", g,
				gpus[g].read_note);
			exit(1);
		}
		if (!restore && gpus[g].direct_io != b->direct) {
			fprintf(stderr,
				"bo_bench: the dump's GPU %d wrote %s, its limit %s: not "
				"measured the same way\n",
				g, gpus[g].direct_io ? "with O_DIRECT" : "buffered",
				b->direct ? "with O_DIRECT" : "buffered");
			exit(1);
		}
		if (!restore && !b->direct &&
		    gpus[g].in_place_bytes != (b->in_place ? b->bo_size * BOS_PER_GPU : 0)) {
			fprintf(stderr,
				"bo_bench: the dump's GPU %d read %" PRIu64
				" bytes of its BOs in place, not %s\n",
				g, gpus[g].in_place_bytes, b->in_place ? "all" : "none");
			exit(1);
		}
		r.checksum_s += (double)gpus[g].times.checksum_ns * 1e-9;
		r.engine_s += (double)gpus[g].times.engine_ns * 1e-9 / b->gpus;
		r.file_s += (double)gpus[g].times.file_ns * 1e-9 / b->gpus;
	}
	return r;
}

/* ---- the limits: the path's file I/O alone, one thread per GPU ---- */

struct io_job {
	int dir_fd;
	int gpu;
	uint64_t bytes;
	bool read; /* the GPU's image (the path's data file); else a limit file */
	/* write: what it writes, LIMIT_SOURCE bytes cycled through, mapped from source_fd */
	const uint8_t *source;
	int source_fd;
	bool direct; /* write with O_DIRECT */
	pthread_barrier_t *start;
	int err;
};

/*
 * The write limit's data comes from memory, as the dump's comes from the BOs
 * (or its staging ring): LIMIT_SOURCE bytes per thread, more than this
 * host's last-level cache (32 MiB), cycled through. Writing one 4 MiB
 * buffer over and over, as it did, read it from the cache: faster than any
 * path that writes gigabytes of distinct data can be.
 */
#define LIMIT_SOURCE (128 * MIB)

static size_t limit_source_len(uint64_t bytes)
{
	return bytes < LIMIT_SOURCE ? (size_t)bytes : LIMIT_SOURCE;
}

static size_t source_len(const struct io_job *j)
{
	return limit_source_len(j->bytes);
}

/*
 * The write limit's data, made once as the BOs are (memfd_of(), a chunk's
 * pattern over and over), so that each run finds the same memory for the
 * path and its limit (release_files()). Allocated per run, the sources
 * (128 MiB a GPU, 1 GiB for 8 GPUs) took part of the memory just freed,
 * which the limit's writes then lacked and the path's did not.
 */
static void limit_sources(struct bench *b)
{
	uint8_t *pattern = xmalloc(CHUNK);
	int g;

	for (g = 0; g < b->gpus; g++) {
		fill_pattern(pattern, CHUNK, 99 + (uint64_t)g);
		b->limit_src[g] = memfd_of(limit_source_len(b->bo_size * BOS_PER_GPU), pattern);
	}
	free(pattern);
}

/* The dump's data file is sized up front (bo_stream_job.c), its writes'
 * writeback started chunk by chunk when it syncs: the same here. */
static int limit_write(int fd, const struct io_job *j)
{
	uint64_t off;

	if (ftruncate(fd, (off_t)j->bytes))
		return errno;
	for (off = 0; off < j->bytes; off += CHUNK) {
		if (pwrite(fd, j->source + off % source_len(j), CHUNK, (off_t)off) !=
		    (ssize_t)CHUNK)
			return errno ? errno : EIO;
		sync_file_range(fd, (off_t)off, CHUNK, SYNC_FILE_RANGE_WRITE);
	}
	return fdatasync(fd) ? errno : 0;
}

static int limit_read(int fd, const struct io_job *j)
{
	uint8_t *buf = xmalloc(CHUNK);
	uint64_t off;
	int err = 0;

	for (off = 0; !err && off < j->bytes; off += CHUNK)
		if (pread(fd, buf, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			err = errno ? errno : EIO;
	free(buf);
	return err;
}

static void limit_name(char *name, size_t len, int gpu)
{
	snprintf(name, len, "bo-bench-limit-%d.tmp", gpu);
}

static void *io_main(void *arg)
{
	struct io_job *j = arg;
	uint8_t *source = NULL;
	char name[64];
	int fd;

	if (j->read) {
		image_name(name, sizeof(name), j->gpu, "img");
		fd = openat(j->dir_fd, name, O_RDONLY | O_CLOEXEC);
	} else {
		limit_name(name, sizeof(name), j->gpu);
		fd = openat(j->dir_fd, name,
			    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (j->direct ? O_DIRECT : 0),
			    0600);
		/* mapped before the clock starts; unmapped before the path's peak RSS */
		source = mmap(NULL, source_len(j), PROT_READ, MAP_SHARED | MAP_POPULATE,
			      j->source_fd, 0);
		if (source == MAP_FAILED)
			die("mapping the limit's source");
		j->source = source;
	}
	pthread_barrier_wait(j->start);
	if (fd < 0)
		j->err = errno;
	else
		j->err = j->read ? limit_read(fd, j) : limit_write(fd, j);
	if (fd >= 0)
		close(fd);
	if (source)
		munmap(source, source_len(j));
	return NULL;
}

/*
 * One thread per GPU writing its share of the bytes (or cold-reading the
 * GPU's image): wall, CPU and machine time from the barrier to the last
 * join. The cache drop and the threads' mapping of their data (MAP_POPULATE)
 * are done when the barrier opens, so the CPU time is the I/O's, as the
 * path's is its own.
 */
static struct path_run limit_run(struct bench *b, bool read)
{
	struct io_job jobs[MAX_GPUS];
	pthread_t th[MAX_GPUS];
	pthread_barrier_t start;
	struct path_run l = {0};
	char name[64];
	double t0, c0;
	int g;

	for (g = 0; read && g < b->gpus; g++) {
		image_name(name, sizeof(name), g, "img");
		drop_cache(b->dir_fd, name);
	}
	pthread_barrier_init(&start, NULL, (unsigned int)b->gpus + 1);
	for (g = 0; g < b->gpus; g++) {
		jobs[g] = (struct io_job){.dir_fd = b->dir_fd,
					  .gpu = g,
					  .bytes = b->bo_size * BOS_PER_GPU,
					  .read = read,
					  .direct = b->direct,
					  .source_fd = b->limit_src[g],
					  .start = &start};
		if (pthread_create(&th[g], NULL, io_main, &jobs[g]))
			die("pthread_create");
	}
	pthread_barrier_wait(&start);
	c0 = cpu_now();
	l.machine_s = machine_busy_s();
	t0 = now();
	for (g = 0; g < b->gpus; g++)
		pthread_join(th[g], NULL);
	l.wall_s = now() - t0;
	l.cpu_s = cpu_now() - c0;
	l.machine_s = machine_busy_s() - l.machine_s;
	pthread_barrier_destroy(&start);
	for (g = 0; g < b->gpus; g++)
		if (jobs[g].err) {
			errno = jobs[g].err;
			die(read ? "limit: reading its file" : "limit: writing its file");
		}
	return l;
}

static void remove_limit_files(struct bench *b)
{
	char name[64];
	int g;

	for (g = 0; g < MAX_GPUS; g++) {
		limit_name(name, sizeof(name), g);
		unlinkat(b->dir_fd, name, 0);
	}
}

/* ---- figures for reading the results ---- */

struct memcpy_job {
	size_t len;
	double gibps;
};

static void *memcpy_main(void *arg)
{
	struct memcpy_job *j = arg;
	uint8_t *a = xmalloc(j->len), *c = xmalloc(j->len);
	double t0;
	int i, rounds = 8;

	memset(a, 1, j->len);
	memset(c, 2, j->len);
	t0 = now();
	for (i = 0; i < rounds; i++) {
		memcpy(i % 2 ? a : c, i % 2 ? c : a, j->len);
		__asm__ volatile("" : : "r"(a), "r"(c) : "memory");
	}
	j->gibps = gibps((uint64_t)rounds * j->len, now() - t0);
	free(a);
	free(c);
	return NULL;
}

/* Sum of N threads' memcpy rates, N = GPUs (the CPU engine's copies). */
static double memcpy_gibps(int threads)
{
	struct memcpy_job jobs[MAX_GPUS];
	pthread_t th[MAX_GPUS];
	double sum = 0;
	int t;

	for (t = 0; t < threads; t++) {
		jobs[t] = (struct memcpy_job){.len = BASELINE_BUF / (size_t)threads};
		if (pthread_create(&th[t], NULL, memcpy_main, &jobs[t]))
			die("pthread_create");
	}
	for (t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		sum += jobs[t].gibps;
	}
	return sum;
}

enum checksum_kind { SUM_CRC_ISAL, SUM_CRC_ZLIB, SUM_CRC64 };

/* One thread's checksum rate over BASELINE_BUF in chunks: the CRC-32 of
 * version 1 and 2 images (ISA-L), zlib's for comparison, and the CRC-64
 * that version 3 images are verified and compared by. */
static double checksum_gibps(enum checksum_kind kind)
{
	uint8_t *a = xmalloc(BASELINE_BUF);
	volatile uint64_t sink = 0;
	double t0, t;
	uint64_t off;

	fill_pattern(a, BASELINE_BUF, 7);
	t0 = now();
	for (off = 0; off < BASELINE_BUF; off += CHUNK) {
		if (kind == SUM_CRC64)
			sink = bo_index_crc64(0, a + off, CHUNK);
		else
			sink = kind == SUM_CRC_ISAL ? bo_index_crc32(0, a + off, CHUNK)
						    : (uint32_t)crc32_z(0, a + off, CHUNK);
	}
	t = now() - t0;
	(void)sink;
	free(a);
	return gibps(BASELINE_BUF, t);
}

/* ---- all-zero BOs ---- */

/* The sources become all zero, written (allocated and cleared, like VRAM;
 * fallocate() alone would leave the pages to be cleared at the dump's first
 * touch, which is the stand-in's cost, not a BO's): the case of
 * mostly-empty VRAM, whose image is sparse. */
static void zero_sources(struct bench *b)
{
	uint8_t *zeros = calloc(1, CHUNK);
	int g, i;

	if (!zeros)
		die("calloc");
	for (g = 0; g < b->gpus; g++)
		for (i = 0; i < BOS_PER_GPU; i++)
			memfd_fill(b->src[g][i], b->bo_size, zeros);
	free(zeros);
}

/* Bytes the images of the GPUs take on the device. */
static uint64_t images_allocated(struct bench *b)
{
	uint64_t bytes = 0;
	struct stat st;
	char name[64];
	int g;

	for (g = 0; g < b->gpus; g++) {
		image_name(name, sizeof(name), g, "img");
		if (!fstatat(b->dir_fd, name, &st, 0))
			bytes += (uint64_t)st.st_blocks * 512;
	}
	return bytes;
}

static void remove_images(struct bench *b)
{
	char name[64];
	int g;

	for (g = 0; g < MAX_GPUS; g++) {
		image_name(name, sizeof(name), g, "img");
		unlinkat(b->dir_fd, name, 0);
		image_name(name, sizeof(name), g, "idx");
		unlinkat(b->dir_fd, name, 0);
	}
}

static void verify(const struct bench *b)
{
	uint8_t *x = xmalloc(CHUNK), *y = xmalloc(CHUNK);
	uint64_t off;
	int g, i;

	for (g = 0; g < b->gpus; g++)
		for (i = 0; i < BOS_PER_GPU; i++)
			for (off = 0; off < b->bo_size; off += CHUNK)
				if (pread(b->src[g][i], x, CHUNK, (off_t)off) != CHUNK ||
				    pread(b->dst[g][i], y, CHUNK, (off_t)off) != CHUNK ||
				    memcmp(x, y, CHUNK)) {
					fprintf(stderr,
						"bo_bench: restored contents differ (gpu %d, "
						"BO %d, offset 0x%" PRIx64 ")\n",
						g, i, off);
					exit(1);
				}
	free(x);
	free(y);
}

/* ---- main ---- */

static double best(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static double lowest(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static long env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		fprintf(stderr, "bo_bench: %s=%s: want a whole number from %ld to %ld\n", name, s,
			min, max);
		exit(2);
	}
	return v;
}

/* A pass of all rounds: GiB/s and CPU seconds per GiB of each run. */
struct figures {
	double dump[MAX_ROUNDS], dump_limit[MAX_ROUNDS];
	double restore[MAX_ROUNDS], restore_limit[MAX_ROUNDS];
	double dump_cpu[MAX_ROUNDS], dump_limit_cpu[MAX_ROUNDS];
	double restore_cpu[MAX_ROUNDS], restore_limit_cpu[MAX_ROUNDS];
	double cpu_s, checksum_s;
	long peak_rss_mib; /* of the paths' runs */
};

/* What a pass reports: the best speed and the lowest CPU per GiB of its rounds. */
struct summary {
	double dump, dump_limit, restore, restore_limit;
	double dump_cpu, dump_limit_cpu, restore_cpu, restore_limit_cpu;
};

static struct summary summarize(const struct figures *f, int rounds)
{
	return (struct summary){.dump = best(f->dump, rounds),
				.dump_limit = best(f->dump_limit, rounds),
				.restore = best(f->restore, rounds),
				.restore_limit = best(f->restore_limit, rounds),
				.dump_cpu = lowest(f->dump_cpu, rounds),
				.dump_limit_cpu = lowest(f->dump_limit_cpu, rounds),
				.restore_cpu = lowest(f->restore_cpu, rounds),
				.restore_limit_cpu = lowest(f->restore_limit_cpu, rounds)};
}

/* The path's run and its limit's: wall and CPU seconds, and the path's sides. */
static void print_run(const char *pass, int round, const char *what, const struct path_run *r,
		      const struct path_run *limit)
{
	fprintf(stderr,
		"bo_bench: %sround %d: %s %.2f s, CPU %.2f s, machine busy %.2f s (limit %.2f s, "
		"CPU %.2f s, machine busy %.2f s): per GPU, copy side busy %.2f s, file side "
		"%.2f s\n",
		pass, round, what, r->wall_s, r->cpu_s, r->machine_s, limit->wall_s, limit->cpu_s,
		limit->machine_s, r->engine_s, r->file_s);
}

/*
 * Before each timed run, path or limit: the limit's files removed and the
 * images (which the restore still needs) written back and dropped from the
 * page cache, so that every run finds the memory they held just freed. On
 * this project's VMs (free page reporting) memory the guest did not free a
 * moment before costs a fault in the host at its first touch: 1 GiB
 * written beside a file just written took 2.0-2.6 s, the same into memory
 * just freed 0.3-0.7 s. Without this, a round's second run (path or limit)
 * was often 2-3 times slower than its first, most likely because it found
 * part of its memory taken by the host (docs/measurements.md).
 */
static void release_files(struct bench *b)
{
	char name[64];
	int g;

	remove_limit_files(b);
	for (g = 0; g < b->gpus; g++) {
		image_name(name, sizeof(name), g, "img");
		if (faccessat(b->dir_fd, name, F_OK, 0) == 0)
			drop_cache(b->dir_fd, name);
	}
}

/* One path and its limit, back to back, in the round's order; both runs returned. */
static void measure(struct bench *b, bool restore, bool limit_first, const char *pass, int round,
		    struct path_run *r, struct path_run *l)
{
	if (limit_first) {
		release_files(b);
		*l = limit_run(b, restore);
	}
	if (!restore)
		remove_images(b);
	release_files(b);
	*r = run_stream(b, restore);
	if (!limit_first) {
		release_files(b);
		*l = limit_run(b, restore);
	}
	print_run(pass, round, restore ? "restore" : "dump", r, l);
}

/* All rounds; pass prefixes the progress lines ("" or "neighbour "). */
static void run_rounds(struct bench *b, int rounds, struct figures *f, const char *pass)
{
	double gib = (double)b->total / GIB;
	struct path_run r, l;
	bool limit_first;
	int k, restore;

	for (k = 0; k < rounds; k++) {
		limit_first = k % 2 == 0;
		for (restore = 0; restore < 2; restore++) {
			if (restore)
				limit_run(b, true); /* the untimed first read (top of file) */
			measure(b, restore, limit_first, pass, k + 1, &r, &l);
			(restore ? f->restore : f->dump)[k] = gibps(b->total, r.wall_s);
			(restore ? f->restore_limit : f->dump_limit)[k] = gibps(b->total, l.wall_s);
			(restore ? f->restore_cpu : f->dump_cpu)[k] = r.cpu_s / gib;
			(restore ? f->restore_limit_cpu : f->dump_limit_cpu)[k] = l.cpu_s / gib;
			f->cpu_s += r.cpu_s;
			if (r.peak_rss_mib > f->peak_rss_mib)
				f->peak_rss_mib = r.peak_rss_mib;
			f->checksum_s += r.checksum_s;
		}
		verify(b);
		fprintf(stderr,
			"bo_bench: %sround %d (limits %s): dump %.2f (limit %.2f, %.2f), restore "
			"%.2f (limit %.2f, %.2f) GiB/s\n",
			pass, k + 1, limit_first ? "first" : "second", f->dump[k], f->dump_limit[k],
			f->dump[k] / f->dump_limit[k], f->restore[k], f->restore_limit[k],
			f->restore[k] / f->restore_limit[k]);
	}
	remove_limit_files(b);
}

/* ---- the CPU neighbour ---- */

static pid_t neighbour_pid;
static double neighbour_t0;

static void *spin_main(void *arg)
{
	volatile unsigned long spins = 0;

	(void)arg;
	for (;;)
		spins++;
	return NULL;
}

/*
 * Forks the neighbour and returns once its threads spin. A process of its
 * own, not threads here: getrusage(RUSAGE_SELF) would count them. Forked
 * while this process has no other thread, so pthread_create() is safe in it.
 */
static void neighbour_start(int threads)
{
	pid_t parent = getpid(), pid;
	int ready[2], t;
	pthread_t th;
	char c;

	if (pipe2(ready, O_CLOEXEC))
		die("pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* killed with this process whatever ends it, a signal included */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		close(ready[0]);
		for (t = 1; t < threads; t++)
			if (pthread_create(&th, NULL, spin_main, NULL))
				_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		close(ready[1]);
		spin_main(NULL);
		_exit(0);
	}
	neighbour_pid = pid;
	neighbour_t0 = now();
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		errno = ECHILD;
		die("the neighbour did not start its threads");
	}
	close(ready[0]);
	fprintf(stderr, "bo_bench: neighbour pid %d, %d thread%s spinning\n", (int)pid, threads,
		threads == 1 ? "" : "s");
}

/*
 * Kills and reaps the neighbour: its CPU seconds (all its threads', from
 * its rusage) and wall seconds. false if none ran or it ended before it
 * was killed (the pass then did not have it all along).
 */
static bool neighbour_stop(double *cpu_s, double *wall_s)
{
	struct rusage ru;
	int status;
	pid_t pid = neighbour_pid;

	if (pid <= 0)
		return false;
	neighbour_pid = 0;
	kill(pid, SIGKILL);
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			return false;
	*wall_s = now() - neighbour_t0;
	*cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* exit() anywhere, die() included, leaves no neighbour behind */
static void neighbour_at_exit(void)
{
	double cpu_s, wall_s;

	neighbour_stop(&cpu_s, &wall_s);
}

/*
 * Whether the dump will write with O_DIRECT here (bo_write_mode's rule for
 * AUTO, bo_stream_auto_buffered(); where the file system takes it): its
 * limit then does too, and the dump's own choice is checked against this
 * one.
 */
static bool direct_io_here(const struct bench *b)
{
	enum bo_write_mode mode = write_mode_env();
	int fd;

	if (mode == BO_WRITE_BUFFERED)
		return false;
	if (mode == BO_WRITE_AUTO &&
	    bo_stream_auto_buffered(b->dir_fd, b->bo_size * BOS_PER_GPU, 0, NULL, 0))
		return false;
	fd = openat(b->dir_fd, "bo-bench-direct.tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0600);
	if (fd >= 0)
		close(fd);
	unlinkat(b->dir_fd, "bo-bench-direct.tmp", 0);
	return fd >= 0;
}

static double env_gib(void)
{
	const char *s = getenv("BENCH_GIB");
	char *end;
	double v;

	if (!s || !*s)
		return 2;
	v = strtod(s, &end);
	if (*end || !(v > 0 && v <= 1024)) {
		fprintf(stderr,
			"bo_bench: BENCH_GIB=%s: want a number of GiB above 0, at most 1024\n", s);
		exit(2);
	}
	return v;
}

/* Both rows of a pass, each path beside its limit. */
static void print_rows(const struct summary *s)
{
	printf("  %-44s %6.2f  %9.3f  %-52s %6.2f  %9.3f  %.2f\n",
	       "dump (read BO, CRC-64, write, fdatasync)", s->dump, s->dump_cpu,
	       "write + fdatasync, a file per GPU, chunk requests", s->dump_limit,
	       s->dump_limit_cpu, s->dump / s->dump_limit);
	printf("  %-44s %6.2f  %9.3f  %-52s %6.2f  %9.3f  %.2f\n",
	       "restore (cold read, CRC-64, write BO)", s->restore, s->restore_cpu,
	       "cold read, a file per GPU, chunk requests", s->restore_limit, s->restore_limit_cpu,
	       s->restore / s->restore_limit);
}

static bool above_limit(const struct summary *s)
{
	return s->dump > s->dump_limit || s->restore > s->restore_limit;
}

/* A pass's figures as JSON members, every key ending in sfx. */
static void json_pass(const struct summary *s, const char *sfx)
{
	printf(",\"dump_gibps%s\":%.3f,\"dump_limit_gibps%s\":%.3f,\"dump_ratio%s\":%.3f,"
	       "\"restore_gibps%s\":%.3f,\"restore_limit_gibps%s\":%.3f,\"restore_ratio%s\":%.3f,"
	       "\"dump_cpu_s_per_gib%s\":%.4f,\"dump_limit_cpu_s_per_gib%s\":%.4f,"
	       "\"restore_cpu_s_per_gib%s\":%.4f,\"restore_limit_cpu_s_per_gib%s\":%.4f",
	       sfx, s->dump, sfx, s->dump_limit, sfx, s->dump / s->dump_limit, sfx, s->restore, sfx,
	       s->restore_limit, sfx, s->restore / s->restore_limit, sfx, s->dump_cpu, sfx,
	       s->dump_limit_cpu, sfx, s->restore_cpu, sfx, s->restore_limit_cpu);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	struct bench b = {.total = (uint64_t)(env_gib() * GIB)};
	int rounds = (int)env_long("BENCH_ROUNDS", 10, 1, MAX_ROUNDS);
	int neighbours = (int)env_long("BENCH_NEIGHBOUR", 0, 0, 64);
	double share, neighbour_cpu_s = 0, neighbour_wall_s = 0;
	struct figures f = {0}, fn = {0};
	struct summary idle, busy = {0};
	struct path_run zd, zr;
	uint64_t zero_bytes;
	long rss0, peak;

	b.gpus = (int)env_long("BENCH_GPUS", 2, 1, MAX_GPUS);
	b.in_place = env_long("BENCH_IN_PLACE", 1, 0, 1);
	if (atexit(neighbour_at_exit))
		die("atexit");
	b.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b.dir_fd < 0)
		die(dir);
	if (b.total < (uint64_t)b.gpus * BOS_PER_GPU * CHUNK)
		b.total = (uint64_t)b.gpus * BOS_PER_GPU * CHUNK;
	remove_images(&b);
	remove_limit_files(&b);
	bench_setup(&b);
	b.direct = direct_io_here(&b);
	limit_sources(&b);
	rss0 = rss_now_mib();
	run_rounds(&b, rounds, &f, "");
	idle = summarize(&f, rounds);
	peak = f.peak_rss_mib;
	if (neighbours) {
		neighbour_start(neighbours);
		run_rounds(&b, rounds, &fn, "neighbour ");
		if (!neighbour_stop(&neighbour_cpu_s, &neighbour_wall_s)) {
			fprintf(stderr, "bo_bench: the neighbour ended before its pass did\n");
			exit(1);
		}
		busy = summarize(&fn, rounds);
		if (fn.peak_rss_mib > peak)
			peak = fn.peak_rss_mib;
	}
	share = f.cpu_s > 0 ? f.checksum_s / f.cpu_s : 0;

	printf("bo_bench: %.2f GiB in %d GPUs x %d BOs (host memory), CPU engine, chunk %u MiB x "
	       "%u per GPU, images in %s; %s; the dump writes %s; best of %d rounds\n",
	       (double)b.total / GIB, b.gpus, BOS_PER_GPU, CHUNK >> 20, BO_STREAM_DEFAULT_DEPTH,
	       dir,
	       b.in_place && !b.direct ? "the dump reads the BOs in place (no staging copy)"
				       : "the dump copies the BOs through staging",
	       b.direct ? "with O_DIRECT (and so does its limit)" : "through the page cache",
	       rounds);
	printf("  %-44s %6s  %9s  %-52s %6s  %9s  %s\n", "path", "GiB/s", "CPU s/GiB",
	       "its limit, measured the same way", "GiB/s", "CPU s/GiB", "ratio");
	print_rows(&idle);
	if (neighbours) {
		printf("  the same rounds beside %d thread%s spinning in another process (its CPU "
		       "%.1f s in %.1f s):\n",
		       neighbours, neighbours == 1 ? "" : "s", neighbour_cpu_s, neighbour_wall_s);
		print_rows(&busy);
	}
	printf("  CPU s/GiB: this process's CPU time (getrusage) in the timed run per GiB, the "
	       "lowest of the rounds; ratio: path / limit GiB/s\n");
	if (above_limit(&idle) || (neighbours && above_limit(&busy)))
		printf("  a path above its limit: noise if the rounds (on stderr) spread more than "
		       "they differ; a limit that stays below over more rounds (BENCH_ROUNDS) is "
		       "wrong\n");
	printf("  peak RSS %ld MiB (%ld MiB before streaming; %.1f MiB per GPU of streaming)\n",
	       peak, rss0, (double)(peak - rss0) / b.gpus);
	printf("  checksums: %.1f %% of the paths' CPU time (%.2f of %.2f s)\n", share * 100,
	       f.checksum_s, f.cpu_s);

	remove_images(&b);
	zero_sources(&b);
	zd = run_stream(&b, false);
	zero_bytes = images_allocated(&b);
	zr = run_stream(&b, true);
	verify(&b);
	remove_images(&b);
	printf("  all-zero BOs: dump %.2f GiB/s, restore %.2f GiB/s, images %" PRIu64
	       " KiB on the device\n",
	       gibps(b.total, zd.wall_s), gibps(b.total, zr.wall_s), zero_bytes >> 10);
	printf("  for reading the figures: memcpy %d threads %.2f GiB/s; 1 thread: CRC-64 (ISA-L, "
	       "the chunks' checksum) %.2f GiB/s, CRC-32 (version 2 images) ISA-L %.2f, zlib "
	       "%.2f GiB/s\n",
	       b.gpus, memcpy_gibps(b.gpus), checksum_gibps(SUM_CRC64),
	       checksum_gibps(SUM_CRC_ISAL), checksum_gibps(SUM_CRC_ZLIB));
	printf("{\"gib\":%.3f,\"gpus\":%d,\"rounds\":%d", (double)b.total / GIB, b.gpus, rounds);
	json_pass(&idle, "");
	printf(",\"peak_rss_mib\":%ld,\"checksum_share\":%.4f,\"dump_direct_io\":%s,"
	       "\"dump_in_place\":%s,\"neighbour_threads\":%d",
	       peak, share, b.direct ? "true" : "false", b.in_place && !b.direct ? "true" : "false",
	       neighbours);
	if (neighbours) {
		printf(",\"neighbour_cpu_s\":%.3f", neighbour_cpu_s);
		json_pass(&busy, "_neighbour");
	}
	printf("}\n");
	close(b.dir_fd);
	return 0;
}
