// SPDX-License-Identifier: MIT
/*
 * rocm-hsakmt: a ZDTM-style workload on Debian's libhsakmt (the ROCm thunk),
 * for checkpoint/restore on kfdsim with the real ROCm userspace.
 *
 *   rocm-hsakmt [--gpus N] [--size BYTES] READY TRIGGER RESULT
 *
 * On each of the first N GPU nodes (default all) it allocates, through the
 * thunk as ROCr does: VRAM the CPU can reach (HostAccess), VRAM it cannot
 * (the thunk maps it PROT_NONE, MAP_PRIVATE on the render node), system
 * memory (GTT) and userptr memory (hsaKmtRegisterMemory of malloc'd
 * pages), each mapped to the GPU; a signal event; an AQL queue with its
 * ring in system memory (the thunk adds the EOP buffer in VRAM and the
 * CWSR save area). The CPU-reachable memory and the ring are filled with
 * patterns. It writes READY ("gpus N", "gpu NODE MINOR", "buf KIND GPU ADDR SIZE",
 * "fd N TARGET")
 * and waits for TRIGGER (checkpoint and restore happen meanwhile), then
 * checks: every byte of every filled buffer; the PROT_NONE mappings still
 * in place (same address, size, perms, render node); the topology snapshot
 * the thunk kept (its render minors: the application's view does not change
 * when the plugin moves it to other GPUs); each event signals and is waited for; each queue is
 * destroyed once; and the thunk still works: new VRAM allocated, mapped,
 * filled, checked and freed, a new queue created and destroyed, all old
 * memory unmapped and freed, hsaKmtCloseKFD. RESULT gets "PASS" or
 * "FAIL <first failure>"; exit status 0 or 1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hsakmt.h>

#include "rocm_common.h"

#define MAX_GPUS 16

enum buf_kind { VRAM_HOST, VRAM_HIDDEN, GTT, USERPTR, N_KINDS };
static const char *const kind_name[N_KINDS] = {"vram", "vram-no-host-access", "gtt", "userptr"};

struct gpu {
	HSAuint32 node;
	HSAint32 minor; /* in the thunk's topology snapshot, taken before the dump */
	void *buf[N_KINDS];
	HsaEvent *event;
	void *ring, *ptrs; /* AQL ring and its read/write pointers (system memory) */
	HsaQueueResource queue;
	bool queue_live;
};

struct workload {
	int n_gpus;
	size_t size;
	struct gpu gpu[MAX_GPUS];
	struct rc_result res;
};

#define RING_SIZE 4096

static uint32_t seed_of(int gi, int kind)
{
	return 0x5EED0000u | (uint32_t)gi << 8 | (uint32_t)kind;
}

static HsaMemFlags mem_flags(enum buf_kind kind)
{
	HsaMemFlags f = {0};

	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	switch (kind) {
	case VRAM_HOST:
		f.ui32.NonPaged = 1;
		f.ui32.HostAccess = 1;
		f.ui32.NoSubstitute = 1;
		break;
	case VRAM_HIDDEN:
		f.ui32.NonPaged = 1;
		f.ui32.NoSubstitute = 1;
		break;
	default: /* system memory, as ROCr's system pools ask for it */
		f.ui32.HostAccess = 1;
		f.ui32.CoarseGrain = 1;
		break;
	}
	return f;
}

static int alloc_buf(struct workload *w, struct gpu *g, int gi, enum buf_kind kind)
{
	HSAuint64 gpuva = 0;
	HSAKMT_STATUS st;
	void *p = NULL;

	if (kind == USERPTR) {
		if (posix_memalign(&p, 4096, w->size))
			return -ENOMEM;
		st = hsaKmtRegisterMemoryToNodes(p, w->size, 1, &g->node);
	} else {
		st = hsaKmtAllocMemory(kind == GTT ? 0 : g->node, w->size, mem_flags(kind), &p);
	}
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: %s: allocation of %zu bytes: status %d", gi,
			kind_name[kind], w->size, st);
		return -EIO;
	}
	st = hsaKmtMapMemoryToGPUNodes(p, w->size, &gpuva, (HsaMemMapFlags){0}, 1, &g->node);
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: %s: map to GPU: status %d", gi, kind_name[kind], st);
		return -EIO;
	}
	g->buf[kind] = p;
	if (kind != VRAM_HIDDEN)
		rc_fill(p, w->size, seed_of(gi, kind));
	return 0;
}

static int make_queue(struct workload *w, struct gpu *g, int gi)
{
	HSAKMT_STATUS st;

	st = hsaKmtAllocMemory(0, RING_SIZE, mem_flags(GTT), &g->ring);
	if (st == HSAKMT_STATUS_SUCCESS)
		st = hsaKmtAllocMemory(0, 4096, mem_flags(GTT), &g->ptrs);
	if (st == HSAKMT_STATUS_SUCCESS)
		st = hsaKmtMapMemoryToGPUNodes(g->ring, RING_SIZE, &(HSAuint64){0},
					       (HsaMemMapFlags){0}, 1, &g->node);
	if (st == HSAKMT_STATUS_SUCCESS)
		st = hsaKmtMapMemoryToGPUNodes(g->ptrs, 4096, &(HSAuint64){0}, (HsaMemMapFlags){0},
					       1, &g->node);
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: queue memory: status %d", gi, st);
		return -EIO;
	}
	memset(g->ptrs, 0, 4096);
	/* ROCr passes its own read and write pointers for an AQL queue */
	g->queue.Queue_read_ptr_aql = (HSAuint64 *)g->ptrs;
	g->queue.Queue_write_ptr_aql = (HSAuint64 *)g->ptrs + 1;
	st = hsaKmtCreateQueue(g->node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
			       g->ring, RING_SIZE, NULL, &g->queue);
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: hsaKmtCreateQueue (AQL): status %d", gi, st);
		return -EIO;
	}
	g->queue_live = true;
	rc_fill(g->ring, RING_SIZE, seed_of(gi, 0x40));
	*g->queue.Queue_write_ptr_aql = 7;
	return 0;
}

static int setup_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	HsaEventDescriptor ed = {.EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = g->node};
	HSAKMT_STATUS st;

	for (int k = 0; k < N_KINDS; k++)
		if (alloc_buf(w, g, gi, k))
			return -EIO;
	st = hsaKmtCreateEvent(&ed, false, false, &g->event);
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: hsaKmtCreateEvent: status %d", gi, st);
		return -EIO;
	}
	return make_queue(w, g, gi);
}

static int find_gpus(struct workload *w, int want)
{
	HsaSystemProperties sys;
	HsaNodeProperties np;

	if (hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "hsaKmtAcquireSystemProperties failed");
		return -EIO;
	}
	for (HSAuint32 n = 0; n < sys.NumNodes && w->n_gpus < want && w->n_gpus < MAX_GPUS; n++) {
		if (hsaKmtGetNodeProperties(n, &np) != HSAKMT_STATUS_SUCCESS)
			continue;
		if (!np.NumFComputeCores)
			continue;
		w->gpu[w->n_gpus].node = n;
		w->gpu[w->n_gpus].minor = np.DrmRenderMinor;
		w->n_gpus++;
	}
	if (!w->n_gpus) {
		rc_fail(&w->res, "the thunk sees no GPU node (%u nodes)", sys.NumNodes);
		return -ENODEV;
	}
	return 0;
}

/* the PROT_NONE private render-node mapping the thunk made for hidden VRAM */
static void check_hidden_mapping(struct workload *w, int gi)
{
	char perms[5], path[256];
	void *p = w->gpu[gi].buf[VRAM_HIDDEN];

	if (rc_mapping((uintptr_t)p, w->size, perms, path, sizeof(path))) {
		rc_fail(&w->res, "gpu %d: no mapping of %zu bytes at %p (VRAM without host access)",
			gi, w->size, p);
		return;
	}
	if (strcmp(perms, "---p") || strncmp(path, "/dev/dri/renderD", 16))
		rc_fail(&w->res, "gpu %d: VRAM without host access at %p is mapped %s %s", gi, p,
			perms, path);
}

static void check_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	HsaNodeProperties np;
	size_t off;

	for (int k = 0; k < N_KINDS; k++) {
		if (k == VRAM_HIDDEN)
			continue;
		off = rc_check(g->buf[k], w->size, seed_of(gi, k));
		if (off)
			rc_fail(&w->res, "gpu %d: %s: byte %zu differs", gi, kind_name[k], off - 1);
	}
	check_hidden_mapping(w, gi);
	off = rc_check(g->ring, RING_SIZE, seed_of(gi, 0x40));
	if (off)
		rc_fail(&w->res, "gpu %d: AQL ring byte %zu differs", gi, off - 1);
	if (*g->queue.Queue_write_ptr_aql != 7)
		rc_fail(&w->res, "gpu %d: AQL write pointer %" PRIu64 ", not 7", gi,
			(uint64_t)*g->queue.Queue_write_ptr_aql);
	if (hsaKmtGetNodeProperties(g->node, &np) != HSAKMT_STATUS_SUCCESS ||
	    np.DrmRenderMinor != g->minor || !np.NumFComputeCores)
		rc_fail(&w->res,
			"gpu %d: node %u has render minor %d in the thunk's topology, not %d", gi,
			g->node, np.DrmRenderMinor, g->minor);
}

/* after the checks: the thunk and KFD still do everything */
static void exercise_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	HSAKMT_STATUS st;
	HSAuint64 gpuva;
	void *p = NULL;

	st = hsaKmtSetEvent(g->event);
	if (st == HSAKMT_STATUS_SUCCESS)
		st = hsaKmtWaitOnEvent(g->event, 10000);
	if (st != HSAKMT_STATUS_SUCCESS)
		rc_fail(&w->res, "gpu %d: event set + wait: status %d", gi, st);
	if (hsaKmtDestroyEvent(g->event) != HSAKMT_STATUS_SUCCESS)
		rc_fail(&w->res, "gpu %d: hsaKmtDestroyEvent failed", gi);
	if (hsaKmtDestroyQueue(g->queue.QueueId) != HSAKMT_STATUS_SUCCESS)
		rc_fail(&w->res, "gpu %d: hsaKmtDestroyQueue of the restored queue failed", gi);
	g->queue_live = false;
	if (make_queue(w, g, gi) == 0 &&
	    hsaKmtDestroyQueue(g->queue.QueueId) != HSAKMT_STATUS_SUCCESS)
		rc_fail(&w->res, "gpu %d: hsaKmtDestroyQueue of a new queue failed", gi);
	st = hsaKmtAllocMemory(g->node, w->size, mem_flags(VRAM_HOST), &p);
	if (st == HSAKMT_STATUS_SUCCESS)
		st = hsaKmtMapMemoryToGPUNodes(p, w->size, &gpuva, (HsaMemMapFlags){0}, 1,
					       &g->node);
	if (st != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w->res, "gpu %d: new VRAM after the restore: status %d", gi, st);
		return;
	}
	rc_fill(p, w->size, seed_of(gi, 0x80));
	if (rc_check(p, w->size, seed_of(gi, 0x80)))
		rc_fail(&w->res, "gpu %d: new VRAM does not keep its bytes", gi);
	if (hsaKmtUnmapMemoryToGPU(p) != HSAKMT_STATUS_SUCCESS || hsaKmtFreeMemory(p, w->size))
		rc_fail(&w->res, "gpu %d: new VRAM: unmap or free failed", gi);
	for (int k = 0; k < N_KINDS; k++) {
		if (hsaKmtUnmapMemoryToGPU(g->buf[k]) != HSAKMT_STATUS_SUCCESS)
			rc_fail(&w->res, "gpu %d: %s: unmap failed", gi, kind_name[k]);
		st = k == USERPTR ? hsaKmtDeregisterMemory(g->buf[k])
				  : hsaKmtFreeMemory(g->buf[k], w->size);
		if (st != HSAKMT_STATUS_SUCCESS)
			rc_fail(&w->res, "gpu %d: %s: free failed: status %d", gi, kind_name[k],
				st);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rocm-hsakmt [--gpus N] [--size BYTES] READY TRIGGER RESULT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"gpus", required_argument, NULL, 'g'},
					     {"size", required_argument, NULL, 's'},
					     {NULL, 0, NULL, 0}};
	static struct workload w = {.size = 1 << 20};
	char ready[8192], detail[256];
	int want = MAX_GPUS, c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'g')
			want = atoi(optarg);
		else if (c == 's')
			w.size = strtoull(optarg, NULL, 0) & ~4095ULL;
		else
			usage();
	}
	if (argc - optind != 3 || want < 1 || !w.size)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) {
		rc_fail(&w.res, "hsaKmtOpenKFD failed");
		return rc_finish(argv[optind + 2], &w.res, "");
	}
	if (find_gpus(&w, want))
		return rc_finish(argv[optind + 2], &w.res, "");
	for (int i = 0; i < w.n_gpus; i++)
		if (setup_gpu(&w, i))
			return rc_finish(argv[optind + 2], &w.res, "");
	snprintf(ready, sizeof(ready), "gpus %d\n", w.n_gpus);
	for (int i = 0; i < w.n_gpus; i++)
		snprintf(ready + strlen(ready), sizeof(ready) - strlen(ready), "gpu %u %d\n",
			 w.gpu[i].node, w.gpu[i].minor);
	for (int i = 0; i < w.n_gpus; i++)
		for (int k = 0; k < N_KINDS; k++)
			snprintf(ready + strlen(ready), sizeof(ready) - strlen(ready),
				 "buf %s %d %p %zu\n", kind_name[k], i, w.gpu[i].buf[k], w.size);
	rc_append_fds(ready, sizeof(ready));
	rc_write_file(argv[optind], ready);
	printf("ready: %d GPUs, %zu bytes per buffer\n", w.n_gpus, w.size);

	rc_wait_file(argv[optind + 1]);
	for (int i = 0; i < w.n_gpus; i++)
		check_gpu(&w, i);
	for (int i = 0; i < w.n_gpus; i++)
		exercise_gpu(&w, i);
	if (hsaKmtCloseKFD() != HSAKMT_STATUS_SUCCESS)
		rc_fail(&w.res, "hsaKmtCloseKFD failed");
	snprintf(detail, sizeof(detail), "gpus %d size %zu\n", w.n_gpus, w.size);
	return rc_finish(argv[optind + 2], &w.res, detail);
}
