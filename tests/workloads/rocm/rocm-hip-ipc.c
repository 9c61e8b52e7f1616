// SPDX-License-Identifier: MIT
/*
 * rocm-hip-ipc: HIP IPC across two processes (Debian testing's libamdhip64
 * 6.4, host API only, built with gcc -D__HIP_PLATFORM_AMD__), a ZDTM-style
 * workload for checkpointing both together on kfdsim.
 *
 *   rocm-hip-ipc [--size BYTES] READY TRIGGER RESULT
 *
 * The process forks before any HIP call. The parent (the exporter)
 * allocates VRAM on HIP device 0 (hipMalloc), fills it through hipMemcpy
 * and sends hipIpcGetMemHandle's handle down a pipe; the child (the
 * importer) opens it (hipIpcOpenMemHandle) and reads every byte back
 * through hipMemcpy. Run with HSA_ENABLE_IPC_MODE_LEGACY=0, ROCr exports
 * the VRAM as a DMA-BUF (KFD's EXPORT_DMABUF) and hands its fd to the
 * importer over a socket (KFD's IMPORT_DMABUF there). READY gets "gpus N",
 * "child PID" and the parent's "fd N TARGET" lines, READY.child the
 * child's fds. After TRIGGER (both processes checkpointed and restored
 * meanwhile) each re-reads every byte through hipMemcpy, then the memory
 * is shown to be one buffer still: the exporter writes a new pattern that
 * the importer reads, the importer writes one that the exporter reads.
 * Each then allocates, copies both ways, compares and frees new VRAM and
 * creates and uses a new stream; the importer closes its handle and ends.
 * RESULT gets "PASS" or "FAIL <first failure>" of either process (the
 * importer's own result is in RESULT.child). No kernels of its own: with
 * HSA_ENABLE_SDMA=0 and GPU_FORCE_BLIT_COPY_SIZE, HIP's copies are
 * ROCclr's blit kernels, which kfdsim carries out (tests/kfdsim/blit.c).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hip/hip_runtime_api.h>

#include "rocm_common.h"

/* the patterns: the exporter's first, its write after the restore, the importer's */
enum { SEED_FIRST = 11, SEED_EXPORTER = 12, SEED_IMPORTER = 13, SEED_NEW = 14 };

struct side {
	const char *who;
	size_t size;
	void *vram;		/* the exporter's hipMalloc, the importer's mapping of it */
	unsigned char *scratch;
	int in, out;		/* pipe ends to the other process */
	bool peer_reports;	/* the other's failure comes with its RESULT (the exporter's side) */
	struct rc_result res;
};

static bool __attribute__((format(printf, 3, 4))) try_hip(struct side *s, hipError_t e,
							   const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (e == hipSuccess)
		return true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	rc_fail(&s->res, "%s: %s: %s (%d)", s->who, what, hipGetErrorString(e), (int)e);
	return false;
}

/* @p read back through hipMemcpy equals the pattern @seed */
static bool bytes_ok(struct side *s, void *p, uint32_t seed, const char *what)
{
	size_t bad;

	memset(s->scratch, 0, s->size);
	if (!try_hip(s, hipMemcpy(s->scratch, p, s->size, hipMemcpyDeviceToHost),
		     "hipMemcpy of %s back", what))
		return false;
	bad = rc_check(s->scratch, s->size, seed);
	if (bad)
		rc_fail(&s->res, "%s: %s: byte %zu differs after hipMemcpy back", s->who, what,
			bad - 1);
	return !bad;
}

/* @p filled with the pattern @seed through hipMemcpy */
static bool fill(struct side *s, void *p, uint32_t seed, const char *what)
{
	rc_fill(s->scratch, s->size, seed);
	return try_hip(s, hipMemcpy(p, s->scratch, s->size, hipMemcpyHostToDevice),
		       "hipMemcpy to %s", what) &&
	       try_hip(s, hipDeviceSynchronize(), "hipDeviceSynchronize after %s", what);
}

/* one byte to the other process; false (a failure) when it is gone */
static bool tell(struct side *s, char c)
{
	if (write(s->out, &c, 1) == 1)
		return true;
	rc_fail(&s->res, "%s: the other process is gone (write: %s)", s->who, strerror(errno));
	return false;
}

/*
 * waits for the other process's byte @want ('f': it failed, EOF: it
 * ended); the exporter takes the importer's failure from its RESULT, so
 * that RESULT names the first failure itself
 */
static bool hear(struct side *s, char want)
{
	char c = 0;

	if (read(s->in, &c, 1) == 1 && c == want)
		return true;
	if (c != 'f' || !s->peer_reports)
		rc_fail(&s->res, "%s: the other process %s (waited for '%c')", s->who,
			c == 'f' ? "failed" : "ended", want);
	return false;
}

/* new VRAM allocated, copied both ways, compared and freed; a new stream used */
static void exercise(struct side *s)
{
	hipStream_t st = NULL;
	void *v = NULL;

	if (try_hip(s, hipMalloc(&v, s->size), "hipMalloc after the restore") &&
	    fill(s, v, SEED_NEW, "new VRAM"))
		bytes_ok(s, v, SEED_NEW, "new VRAM");
	if (v)
		try_hip(s, hipFree(v), "hipFree of new VRAM");
	if (try_hip(s, hipStreamCreate(&st), "hipStreamCreate after the restore")) {
		try_hip(s, hipMemcpyAsync(s->scratch, s->vram, s->size, hipMemcpyDeviceToHost, st),
			"hipMemcpyAsync on a new stream");
		try_hip(s, hipStreamSynchronize(st), "hipStreamSynchronize of a new stream");
		try_hip(s, hipStreamDestroy(st), "hipStreamDestroy");
	}
}

static int importer(struct side *s, const char *ready, const char *trigger, const char *result)
{
	char fds[4096] = "";
	hipIpcMemHandle_t h;

	if (read(s->in, &h, sizeof(h)) != sizeof(h)) {
		rc_fail(&s->res, "importer: no handle from the exporter");
		goto out;
	}
	if (!try_hip(s, hipSetDevice(0), "hipSetDevice") ||
	    !try_hip(s, hipIpcOpenMemHandle(&s->vram, h, hipIpcMemLazyEnablePeerAccess),
		     "hipIpcOpenMemHandle") ||
	    !bytes_ok(s, s->vram, SEED_FIRST, "the imported VRAM"))
		goto out;
	rc_append_fds(fds, sizeof(fds));
	rc_write_file(ready, fds);
	printf("importer: %p imported, %zu bytes\n", s->vram, s->size);
	if (!tell(s, 'r'))
		goto out;
	rc_wait_file(trigger);
	if (!bytes_ok(s, s->vram, SEED_FIRST, "the imported VRAM after the restore") ||
	    !tell(s, 'c') || !hear(s, 'w') ||
	    !bytes_ok(s, s->vram, SEED_EXPORTER, "the exporter's write, read by the importer") ||
	    !fill(s, s->vram, SEED_IMPORTER, "the imported VRAM") || !tell(s, 'x'))
		goto out;
	exercise(s);
	try_hip(s, hipIpcCloseMemHandle(s->vram), "hipIpcCloseMemHandle");
out:
	if (s->res.failures)
		tell(s, 'f');
	return rc_finish(result, &s->res, "");
}

/* this process's socket fds */
static int sockets(void)
{
	char target[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		ssize_t len = readlinkat(dirfd(d), de->d_name, target, sizeof(target));

		if (len >= 7 && !memcmp(target, "socket:", 7))
			n++;
	}
	closedir(d);
	return n;
}

/*
 * ROCr's socket server closes its end of the importer's connection after
 * the importer's last message: READY must list the fds the exporter keeps
 * (the server's listening socket, not that connection). Waits (60 s at
 * most, a loaded machine's scheduling) until @want sockets are left.
 */
static bool sockets_settle(struct side *s, int want)
{
	int i, n = -1;

	for (i = 0; i < 6000; i++) {
		n = sockets();
		if (n == want)
			return true;
		usleep(10000);
	}
	rc_fail(&s->res, "exporter: %d sockets open, %d expected after the import", n, want);
	return false;
}

/* the importer's RESULT: its failure becomes the exporter's */
static void importer_result(struct side *s, pid_t child, const char *path)
{
	char line[512] = "";
	int st = 0;
	FILE *f;

	if (waitpid(child, &st, 0) != child)
		rc_fail(&s->res, "exporter: waitpid of the importer: %s", strerror(errno));
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		rc_fail(&s->res, "importer: no RESULT (status 0x%x)", st);
	else if (strncmp(line, "PASS", 4))
		rc_fail(&s->res, "%s", strtok(strncmp(line, "FAIL ", 5) ? line : line + 5, "\n"));
	if (f)
		fclose(f);
}

static int exporter(struct side *s, pid_t child, char **files, const char *child_result)
{
	char ready[8192], detail[128];
	hipIpcMemHandle_t h;
	int n = 0, socks;

	if (!try_hip(s, hipGetDeviceCount(&n), "hipGetDeviceCount") ||
	    !try_hip(s, hipSetDevice(0), "hipSetDevice") ||
	    !try_hip(s, hipMalloc(&s->vram, s->size), "hipMalloc") ||
	    !fill(s, s->vram, SEED_FIRST, "VRAM") || !bytes_ok(s, s->vram, SEED_FIRST, "VRAM"))
		goto out;
	socks = sockets();
	if (!try_hip(s, hipIpcGetMemHandle(&h, s->vram), "hipIpcGetMemHandle"))
		goto out;
	if (write(s->out, &h, sizeof(h)) != sizeof(h)) {
		rc_fail(&s->res, "exporter: the handle could not be sent: %s", strerror(errno));
		goto out;
	}
	/* the handle's socket server listens: one socket more than before */
	if (!hear(s, 'r') || !sockets_settle(s, socks + 1))
		goto out;
	snprintf(ready, sizeof(ready), "gpus %d\nchild %d\n", n, (int)child);
	rc_append_fds(ready, sizeof(ready));
	rc_write_file(files[0], ready);
	printf("ready: %d HIP devices, %zu bytes exported to %d\n", n, s->size, (int)child);
	rc_wait_file(files[1]);
	if (!bytes_ok(s, s->vram, SEED_FIRST, "the exported VRAM after the restore") ||
	    !hear(s, 'c') || !fill(s, s->vram, SEED_EXPORTER, "the exported VRAM") ||
	    !tell(s, 'w') || !hear(s, 'x') ||
	    !bytes_ok(s, s->vram, SEED_IMPORTER, "the importer's write, read by the exporter"))
		goto out;
	exercise(s);
out:
	if (s->res.failures)
		tell(s, 'f');
	close(s->out);
	importer_result(s, child, child_result);
	if (s->vram)
		try_hip(s, hipFree(s->vram), "hipFree");
	snprintf(detail, sizeof(detail), "gpus %d size %zu child %d\n", n, s->size, (int)child);
	return rc_finish(files[2], &s->res, detail);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"size", required_argument, NULL, 's'},
					     {NULL, 0, NULL, 0}};
	struct side s = {.size = 1 << 20};
	char cready[512], cresult[512];
	int down[2], up[2], c;
	pid_t child;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 's')
			goto usage;
		s.size = strtoull(optarg, NULL, 0) & ~4095ULL;
	}
	if (argc - optind != 3 || !s.size)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN); /* a write to a process gone is a failure, not death */
	snprintf(cready, sizeof(cready), "%s.child", argv[optind]);
	snprintf(cresult, sizeof(cresult), "%s.child", argv[optind + 2]);
	s.scratch = malloc(s.size);
	if (!s.scratch || pipe(down) || pipe(up)) {
		perror("rocm-hip-ipc: setup");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("rocm-hip-ipc: fork");
		return 1;
	}
	if (!child) {
		s.who = "importer", s.in = down[0], s.out = up[1];
		close(down[1]), close(up[0]);
		return importer(&s, cready, argv[optind + 1], cresult);
	}
	s.who = "exporter", s.in = up[0], s.out = down[1], s.peer_reports = true;
	close(down[0]), close(up[1]);
	return exporter(&s, child, argv + optind, cresult);
usage:
	fprintf(stderr, "usage: rocm-hip-ipc [--size BYTES] READY TRIGGER RESULT\n");
	return 2;
}
