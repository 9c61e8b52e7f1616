// SPDX-License-Identifier: MIT
/*
 * rocm-hip: a ZDTM-style workload on HIP (Debian testing's libamdhip64 6.4,
 * host API only, built with gcc -D__HIP_PLATFORM_AMD__), for
 * checkpoint/restore on kfdsim with the real HIP runtime.
 *
 *   rocm-hip [--size BYTES] READY TRIGGER RESULT
 *
 * On every HIP device: VRAM (hipMalloc) filled through hipMemcpy from a
 * pattern, pinned host memory (hipHostMalloc) and malloc'd memory
 * registered with hipHostRegister, both filled by the CPU, a stream used by
 * a hipMemcpyAsync and an event recorded on it and synchronised. READY
 * gets "gpus N", "buf KIND GPU ADDR SIZE" and "fd N TARGET" lines; after
 * TRIGGER (checkpoint and restore meanwhile) every byte of VRAM is read
 * back through the runtime (hipMemcpy) and compared, the host buffers too,
 * the old stream and event used again, then new VRAM allocated, copied
 * both ways, compared and freed, and a new stream created and used. RESULT
 * gets "PASS" or "FAIL <first failure>". No kernels of its own
 * (device-to-device copies, memsets); run with HSA_ENABLE_SDMA=0 and
 * GPU_FORCE_BLIT_COPY_SIZE, HIP does each copy with ROCclr's copy kernel,
 * which kfdsim carries out (tests/kfdsim/blit.c).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hip/hip_runtime_api.h>

#include "rocm_common.h"

#define MAX_GPUS 16

struct gpu {
	void *vram;
	unsigned char *pinned, *reg;
	hipStream_t stream;
	hipEvent_t event;
};

struct workload {
	int n;
	size_t size;
	unsigned char *scratch;
	struct gpu gpu[MAX_GPUS];
	struct rc_result res;
};

#define TRY(w, call, ...) try_hip((w), (call), __VA_ARGS__)

static bool __attribute__((format(printf, 3, 4))) try_hip(struct workload *w, hipError_t e,
							   const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (e == hipSuccess)
		return true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	rc_fail(&w->res, "%s: %s (%d)", what, hipGetErrorString(e), (int)e);
	return false;
}

/* VRAM of device @gi read back through the runtime equals the pattern @seed */
static bool vram_check(struct workload *w, int gi, void *vram, uint32_t seed, const char *what)
{
	size_t bad;

	memset(w->scratch, 0, w->size);
	if (!TRY(w, hipMemcpy(w->scratch, vram, w->size, hipMemcpyDeviceToHost),
		 "gpu %d: hipMemcpy of %s back", gi, what))
		return false;
	bad = rc_check(w->scratch, w->size, seed);
	if (bad)
		rc_fail(&w->res, "gpu %d: %s byte %zu differs after hipMemcpy back", gi, what,
			bad - 1);
	return !bad;
}

static int setup_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];

	if (!TRY(w, hipSetDevice(gi), "gpu %d: hipSetDevice", gi) ||
	    !TRY(w, hipMalloc(&g->vram, w->size), "gpu %d: hipMalloc", gi) ||
	    !TRY(w, hipHostMalloc((void **)&g->pinned, w->size, hipHostMallocDefault),
		 "gpu %d: hipHostMalloc", gi))
		return -1;
	g->reg = aligned_alloc(4096, w->size);
	if (!g->reg) {
		rc_fail(&w->res, "gpu %d: no memory to register", gi);
		return -1;
	}
	rc_fill(g->reg, w->size, 300 + gi);
	rc_fill(g->pinned, w->size, 200 + gi);
	rc_fill(w->scratch, w->size, 100 + gi);
	if (!TRY(w, hipHostRegister(g->reg, w->size, hipHostRegisterDefault),
		 "gpu %d: hipHostRegister", gi) ||
	    !TRY(w, hipMemcpy(g->vram, w->scratch, w->size, hipMemcpyHostToDevice),
		 "gpu %d: hipMemcpy to VRAM", gi) ||
	    !TRY(w, hipStreamCreate(&g->stream), "gpu %d: hipStreamCreate", gi) ||
	    !TRY(w, hipEventCreate(&g->event), "gpu %d: hipEventCreate", gi) ||
	    !TRY(w, hipMemcpyAsync(w->scratch, g->vram, w->size, hipMemcpyDeviceToHost, g->stream),
		 "gpu %d: hipMemcpyAsync", gi) ||
	    !TRY(w, hipEventRecord(g->event, g->stream), "gpu %d: hipEventRecord", gi) ||
	    !TRY(w, hipEventSynchronize(g->event), "gpu %d: hipEventSynchronize", gi))
		return -1;
	return vram_check(w, gi, g->vram, 100 + gi, "VRAM") ? 0 : -1;
}

static void check_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	size_t bad;

	if (!TRY(w, hipSetDevice(gi), "gpu %d: hipSetDevice after the restore", gi))
		return;
	vram_check(w, gi, g->vram, 100 + gi, "restored VRAM");
	bad = rc_check(g->pinned, w->size, 200 + gi);
	if (bad)
		rc_fail(&w->res, "gpu %d: pinned host byte %zu differs", gi, bad - 1);
	bad = rc_check(g->reg, w->size, 300 + gi);
	if (bad)
		rc_fail(&w->res, "gpu %d: registered host byte %zu differs", gi, bad - 1);
	/* the restored stream and event work: VRAM -> pinned, then compared */
	if (TRY(w, hipMemcpyAsync(g->pinned, g->vram, w->size, hipMemcpyDeviceToHost, g->stream),
		"gpu %d: hipMemcpyAsync on the restored stream", gi) &&
	    TRY(w, hipEventRecord(g->event, g->stream), "gpu %d: hipEventRecord after the restore",
		gi) &&
	    TRY(w, hipEventSynchronize(g->event), "gpu %d: hipEventSynchronize after the restore",
		gi)) {
		bad = rc_check(g->pinned, w->size, 100 + gi);
		if (bad)
			rc_fail(&w->res, "gpu %d: async copy byte %zu differs after the restore", gi,
				bad - 1);
	}
	/* registered memory as the source of a copy to VRAM */
	if (TRY(w, hipMemcpy(g->vram, g->reg, w->size, hipMemcpyHostToDevice),
		"gpu %d: hipMemcpy from registered memory after the restore", gi))
		vram_check(w, gi, g->vram, 300 + gi, "VRAM written from registered memory");
}

static void exercise_gpu(struct workload *w, int gi)
{
	hipStream_t s = NULL;
	void *v = NULL;

	if (!TRY(w, hipSetDevice(gi), "gpu %d: hipSetDevice", gi))
		return;
	rc_fill(w->scratch, w->size, 400 + gi);
	if (TRY(w, hipMalloc(&v, w->size), "gpu %d: hipMalloc after the restore", gi) &&
	    TRY(w, hipMemcpy(v, w->scratch, w->size, hipMemcpyHostToDevice),
		"gpu %d: hipMemcpy to new VRAM", gi))
		vram_check(w, gi, v, 400 + gi, "new VRAM");
	if (v)
		TRY(w, hipFree(v), "gpu %d: hipFree of new VRAM", gi);
	if (TRY(w, hipStreamCreate(&s), "gpu %d: hipStreamCreate after the restore", gi)) {
		TRY(w, hipMemcpyAsync(w->scratch, w->gpu[gi].vram, w->size, hipMemcpyDeviceToHost, s),
		    "gpu %d: hipMemcpyAsync on a new stream", gi);
		TRY(w, hipStreamSynchronize(s), "gpu %d: hipStreamSynchronize of a new stream", gi);
		TRY(w, hipStreamDestroy(s), "gpu %d: hipStreamDestroy", gi);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"size", required_argument, NULL, 's'},
					     {NULL, 0, NULL, 0}};
	static struct workload w = {.size = 1 << 20};
	char ready[8192], detail[256];
	const char *result;
	int c, i;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 's') {
			fprintf(stderr, "usage: rocm-hip [--size BYTES] READY TRIGGER RESULT\n");
			return 2;
		}
		w.size = strtoull(optarg, NULL, 0) & ~4095ULL;
	}
	if (argc - optind != 3 || !w.size) {
		fprintf(stderr, "usage: rocm-hip [--size BYTES] READY TRIGGER RESULT\n");
		return 2;
	}
	result = argv[optind + 2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	w.scratch = malloc(w.size);
	if (!w.scratch || !TRY(&w, hipGetDeviceCount(&w.n), "hipGetDeviceCount") || w.n < 1) {
		if (!w.res.failures)
			rc_fail(&w.res, "no HIP device (%d)", w.n);
		return rc_finish(result, &w.res, "");
	}
	if (w.n > MAX_GPUS)
		w.n = MAX_GPUS;
	for (i = 0; i < w.n; i++)
		if (setup_gpu(&w, i))
			return rc_finish(result, &w.res, "");
	snprintf(ready, sizeof(ready), "gpus %d\n", w.n);
	for (i = 0; i < w.n; i++)
		snprintf(ready + strlen(ready), sizeof(ready) - strlen(ready),
			 "buf pinned %d %p %zu\nbuf registered %d %p %zu\n", i,
			 (void *)w.gpu[i].pinned, w.size, i, (void *)w.gpu[i].reg, w.size);
	rc_append_fds(ready, sizeof(ready));
	rc_write_file(argv[optind], ready);
	printf("ready: %d HIP devices, %zu bytes per buffer\n", w.n, w.size);

	rc_wait_file(argv[optind + 1]);
	for (i = 0; i < w.n; i++)
		check_gpu(&w, i);
	for (i = 0; i < w.n; i++)
		exercise_gpu(&w, i);
	snprintf(detail, sizeof(detail), "gpus %d size %zu\n", w.n, w.size);
	return rc_finish(result, &w.res, detail);
}
