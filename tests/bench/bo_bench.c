// SPDX-License-Identifier: MIT
/*
 * bo_bench: throughput of bo_stream_dump()/bo_stream_restore() on this host,
 * next to the limits measured in the same run.
 *
 * BENCH_GIB GiB (default 2) of BO contents, in memfds standing in for
 * dma-bufs, split over 2 GPUs x 2 BOs, stream through the CPU copy engine into
 * the image directory (argv[1], default "."), and back into fresh memfds,
 * which are compared with the originals afterwards (not timed). Then the same
 * with all-zero BOs (sparse images).
 *
 * Page cache: the dump runs with cfg.sync (fdatasync of the images) and the
 * file-write baseline fdatasyncs too; before the restore and the file-read
 * baseline the files are dropped from the page cache (fdatasync +
 * POSIX_FADV_DONTNEED), so both read from the device (or whatever caches
 * sit under it, e.g. the hypervisor's).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "images/bo_stream.h"

#define GPUS	     2
#define BOS_PER_GPU  2
#define MIB	     (1ull << 20)
#define GIB	     (1ull << 30)
#define IO_BLOCK     (4 * MIB)
#define BASELINE_BUF (256 * MIB)

struct bench {
	int dir_fd;
	uint64_t total;
	int src[GPUS][BOS_PER_GPU];
	int dst[GPUS][BOS_PER_GPU];
	uint64_t bo_size;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static long peak_rss_mib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static void die(const char *what)
{
	fprintf(stderr, "bo_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int memfd_of(uint64_t size, const uint8_t *pattern)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);
	uint64_t off;

	if (fd < 0 || ftruncate(fd, (off_t)size))
		die("memfd");
	for (off = 0; pattern && off < size; off += IO_BLOCK)
		if (pwrite(fd, pattern, IO_BLOCK, (off_t)off) != (ssize_t)IO_BLOCK)
			die("filling a memfd");
	return fd;
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

static void bench_setup(struct bench *b)
{
	uint8_t *pattern = malloc(IO_BLOCK);
	int g, i;

	if (!pattern)
		die("malloc");
	b->bo_size = b->total / (GPUS * BOS_PER_GPU) / IO_BLOCK * IO_BLOCK;
	b->total = b->bo_size * GPUS * BOS_PER_GPU;
	for (g = 0; g < GPUS; g++)
		for (i = 0; i < BOS_PER_GPU; i++) {
			fill_pattern(pattern, IO_BLOCK, (uint64_t)g * 16 + (uint64_t)i + 1);
			b->src[g][i] = memfd_of(b->bo_size, pattern);
			b->dst[g][i] = memfd_of(b->bo_size, NULL);
			/* Allocated up front, like VRAM: the restore measures copies, not shmem
			 * allocation. */
			if (fallocate(b->dst[g][i], 0, 0, (off_t)b->bo_size))
				die("fallocate");
		}
	free(pattern);
}

static void give_fds(struct bench *b, struct bo_stream_gpu *gpus,
		     struct bo_stream_bo bos[GPUS][BOS_PER_GPU], bool restore)
{
	int g, i;

	for (g = 0; g < GPUS; g++) {
		gpus[g] = (struct bo_stream_gpu){
			.gpu_id = 1000 + (uint32_t)g, .bo_count = BOS_PER_GPU, .bos = bos[g]};
		for (i = 0; i < BOS_PER_GPU; i++) {
			bos[g][i].size = b->bo_size;
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

static double run_stream(struct bench *b, bool restore)
{
	struct bo_stream_config cfg = {.dir_fd = b->dir_fd, .image_id = 1, .sync = true};
	struct bo_stream_gpu gpus[GPUS];
	struct bo_stream_bo bos[GPUS][BOS_PER_GPU];
	char err[256], name[64];
	double t0;
	int g, ret;

	for (g = 0; restore && g < GPUS; g++) {
		snprintf(name, sizeof(name), "amdgpu-bo-1-%d.img", 1000 + g);
		drop_cache(b->dir_fd, name);
	}
	give_fds(b, gpus, bos, restore);
	t0 = now();
	ret = restore ? bo_stream_restore(&cfg, gpus, GPUS, err, sizeof(err))
		      : bo_stream_dump(&cfg, gpus, GPUS, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bo_bench: %s: %s\n", restore ? "restore" : "dump", err);
		exit(1);
	}
	return now() - t0;
}

static void verify(const struct bench *b)
{
	uint8_t *x = malloc(IO_BLOCK), *y = malloc(IO_BLOCK);
	uint64_t off;
	int g, i;

	if (!x || !y)
		die("malloc");
	for (g = 0; g < GPUS; g++)
		for (i = 0; i < BOS_PER_GPU; i++)
			for (off = 0; off < b->bo_size; off += IO_BLOCK)
				if (pread(b->src[g][i], x, IO_BLOCK, (off_t)off) != IO_BLOCK ||
				    pread(b->dst[g][i], y, IO_BLOCK, (off_t)off) != IO_BLOCK ||
				    memcmp(x, y, IO_BLOCK)) {
					fprintf(stderr, "bo_bench: restored contents differ\n");
					exit(1);
				}
	free(x);
	free(y);
}

static double memcpy_gibps(void)
{
	uint8_t *a = malloc(BASELINE_BUF), *c = malloc(BASELINE_BUF);
	double t0, t;
	int i, rounds = 8;

	if (!a || !c)
		die("malloc");
	memset(a, 1, BASELINE_BUF);
	memset(c, 2, BASELINE_BUF);
	t0 = now();
	for (i = 0; i < rounds; i++) {
		memcpy(i % 2 ? a : c, i % 2 ? c : a, BASELINE_BUF);
		__asm__ volatile("" : : "r"(a), "r"(c) : "memory");
	}
	t = now() - t0;
	free(a);
	free(c);
	return gibps((uint64_t)rounds * BASELINE_BUF, t);
}

static double crc32_gibps(void)
{
	uint8_t *a = malloc(BASELINE_BUF);
	volatile uLong sink;
	double t0, t;

	if (!a)
		die("malloc");
	fill_pattern(a, BASELINE_BUF, 7);
	t0 = now();
	sink = crc32_z(0, a, BASELINE_BUF);
	sink = crc32_z(sink, a, BASELINE_BUF);
	t = now() - t0;
	(void)sink;
	free(a);
	return gibps(2 * BASELINE_BUF, t);
}

/* Sequential write (with fdatasync) then cold read of one file of `bytes`. */
static void file_gibps(int dir_fd, uint64_t bytes, double *write_rate, double *read_rate)
{
	const char *name = "bo-bench-baseline.tmp";
	uint8_t *buf = malloc(IO_BLOCK);
	uint64_t off;
	double t0;
	int fd;

	if (!buf)
		die("malloc");
	fill_pattern(buf, IO_BLOCK, 99);
	fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(name);
	t0 = now();
	for (off = 0; off < bytes; off += IO_BLOCK)
		if (pwrite(fd, buf, IO_BLOCK, (off_t)off) != (ssize_t)IO_BLOCK)
			die("baseline write");
	if (fdatasync(fd))
		die("fdatasync");
	*write_rate = gibps(bytes, now() - t0);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = now();
	for (off = 0; off < bytes; off += IO_BLOCK)
		if (pread(fd, buf, IO_BLOCK, (off_t)off) != (ssize_t)IO_BLOCK)
			die("baseline read");
	*read_rate = gibps(bytes, now() - t0);
	close(fd);
	unlinkat(dir_fd, name, 0);
	free(buf);
}

/* The sources become all zero (still allocated, like VRAM): the case of
 * mostly-empty VRAM, whose image is sparse. */
static void zero_sources(struct bench *b)
{
	int g, i;

	for (g = 0; g < GPUS; g++)
		for (i = 0; i < BOS_PER_GPU; i++)
			if (fallocate(b->src[g][i], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				      (off_t)b->bo_size) ||
			    fallocate(b->src[g][i], 0, 0, (off_t)b->bo_size))
				die("zeroing a memfd");
}

/* Bytes the images of the GPUs take on the device. */
static uint64_t images_allocated(int dir_fd)
{
	uint64_t bytes = 0;
	struct stat st;
	char name[64];
	int g;

	for (g = 0; g < GPUS; g++) {
		snprintf(name, sizeof(name), "amdgpu-bo-1-%d.img", 1000 + g);
		if (!fstatat(dir_fd, name, &st, 0))
			bytes += (uint64_t)st.st_blocks * 512;
	}
	return bytes;
}

static void remove_images(int dir_fd)
{
	char name[64];
	int g;

	for (g = 0; g < GPUS; g++) {
		snprintf(name, sizeof(name), "amdgpu-bo-1-%d.img", 1000 + g);
		unlinkat(dir_fd, name, 0);
		snprintf(name, sizeof(name), "amdgpu-bo-1-%d.idx", 1000 + g);
		unlinkat(dir_fd, name, 0);
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	const char *gib = getenv("BENCH_GIB");
	struct bench b = {.total = (uint64_t)(gib && *gib ? strtod(gib, NULL) * GIB : 2 * GIB)};
	double dump_s, restore_s, w, r;
	uint64_t zero_bytes;
	long rss0;

	b.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b.dir_fd < 0)
		die(dir);
	if (b.total < GPUS * BOS_PER_GPU * IO_BLOCK)
		b.total = GPUS * BOS_PER_GPU * IO_BLOCK;
	remove_images(b.dir_fd);
	bench_setup(&b);
	/* The file baseline first: the dump does not get a fresher device than it. */
	file_gibps(b.dir_fd, b.total, &w, &r);
	rss0 = rss_now_mib();
	dump_s = run_stream(&b, false);
	restore_s = run_stream(&b, true);
	printf("bo_bench: %.2f GiB in %d GPUs x %d BOs, CPU engine, chunk %u MiB x %u per GPU, "
	       "images in %s\n",
	       (double)b.total / GIB, GPUS, BOS_PER_GPU, BO_STREAM_DEFAULT_CHUNK >> 20,
	       BO_STREAM_DEFAULT_DEPTH, dir);
	printf("  dump    (fdatasync'd images)         %6.2f GiB/s  (%.2f s)\n",
	       gibps(b.total, dump_s), dump_s);
	printf("  restore (cold images, CRC verified)  %6.2f GiB/s  (%.2f s)\n",
	       gibps(b.total, restore_s), restore_s);
	printf("  peak RSS %ld MiB (%ld MiB before streaming)\n", peak_rss_mib(), rss0);
	verify(&b);
	remove_images(b.dir_fd);
	zero_sources(&b);
	dump_s = run_stream(&b, false);
	zero_bytes = images_allocated(b.dir_fd);
	restore_s = run_stream(&b, true);
	printf("  all-zero BOs: dump %6.2f GiB/s (%.2f s), restore %6.2f GiB/s (%.2f s), "
	       "images %" PRIu64 " KiB on the device\n",
	       gibps(b.total, dump_s), dump_s, gibps(b.total, restore_s), restore_s,
	       zero_bytes >> 10);
	verify(&b);
	remove_images(b.dir_fd);
	printf("limits measured in this run:\n");
	printf("  memcpy, 1 thread                     %6.2f GiB/s\n", memcpy_gibps());
	printf("  zlib crc32_z, 1 thread               %6.2f GiB/s\n", crc32_gibps());
	printf("  file write + fdatasync, 1 stream     %6.2f GiB/s\n", w);
	printf("  file read, cold (FADV_DONTNEED)      %6.2f GiB/s\n", r);
	close(b.dir_fd);
	return 0;
}
