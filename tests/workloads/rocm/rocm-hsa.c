// SPDX-License-Identifier: MIT
/*
 * rocm-hsa: a ZDTM-style workload on Debian's ROCr (libhsa-runtime64), for
 * checkpoint/restore on kfdsim with the real ROCm userspace.
 *
 *   rocm-hsa [--gpus N] [--size BYTES] [--churn N] READY TRIGGER RESULT
 *
 * hsa_init, then on each of the first N GPU agents (default all): an
 * allocation from the GPU's coarse-grained global pool (VRAM; filled by
 * the CPU when ROCr lets the CPU agent reach that pool, else only kept),
 * one from the system's fine-grained pool (filled), malloc'd memory locked
 * for the GPU (hsa_amd_memory_lock, a userptr BO; filled), two signals (a
 * plain one and an interrupt one, given values), and an AQL queue whose
 * packet bodies are filled (headers stay INVALID: nothing is dispatched).
 * It writes READY ("gpus N", "gpu INDEX NAME CUS",
 * "buf KIND GPU ADDR SIZE", "fd N TARGET") and
 * waits for TRIGGER (checkpoint and restore happen meanwhile), then checks
 * every filled byte, each signal's value, the queue's ring, ids and size;
 * and that ROCr still works: each signal stored and waited for, new
 * allocations from every pool filled and checked and freed, a new queue
 * created, signals and memory freed (queues are not destroyed and
 * hsa_shut_down is not called: a ROCr 5.2.3 race, see exercise_gpu();
 * --churn N creates and destroys N more queues per GPU to show it). RESULT
 * gets "PASS" or "FAIL <first failure>".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "rocm_common.h"

#define MAX_GPUS 16

struct gpu {
	hsa_agent_t agent;
	char name[64];
	uint32_t cus;
	hsa_amd_memory_pool_t vram_pool;
	bool have_vram_pool, cpu_reaches_vram;
	void *vram, *sys, *locked_host, *locked_gpu;
	hsa_signal_t signal, irq_signal;
	hsa_queue_t *queue;
};

struct workload {
	int n_gpus, want, churn;
	size_t size;
	hsa_agent_t cpu;
	hsa_amd_memory_pool_t sys_pool;
	bool have_cpu, have_sys_pool;
	struct gpu gpu[MAX_GPUS];
	struct rc_result res;
};

static uint32_t seed_of(int gi, int what)
{
	return 0x45A00000u | (uint32_t)gi << 8 | (uint32_t)what;
}

/* a global pool the runtime allocates from, with flag `want` and not `reject` */
static bool pool_is(hsa_amd_memory_pool_t pool, uint32_t want, uint32_t reject)
{
	hsa_amd_segment_t seg;
	uint32_t flags;
	bool alloc;

	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	return seg == HSA_AMD_SEGMENT_GLOBAL && alloc && (flags & want) && !(flags & reject);
}

static hsa_status_t find_vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;

	if (!pool_is(pool, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, 0))
		return HSA_STATUS_SUCCESS;
	g->vram_pool = pool;
	g->have_vram_pool = true;
	return HSA_STATUS_INFO_BREAK;
}

static hsa_status_t find_sys_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct workload *w = data;

	if (!pool_is(pool, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
		     HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
		return HSA_STATUS_SUCCESS;
	w->sys_pool = pool;
	w->have_sys_pool = true;
	return HSA_STATUS_INFO_BREAK;
}

static hsa_status_t find_agent(hsa_agent_t agent, void *data)
{
	struct workload *w = data;
	hsa_device_type_t type;
	struct gpu *g;

	hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
	if (type == HSA_DEVICE_TYPE_CPU && !w->have_cpu) {
		w->cpu = agent;
		w->have_cpu = true;
		hsa_amd_agent_iterate_memory_pools(agent, find_sys_pool, w);
	}
	if (type != HSA_DEVICE_TYPE_GPU || w->n_gpus >= w->want || w->n_gpus >= MAX_GPUS)
		return HSA_STATUS_SUCCESS;
	g = &w->gpu[w->n_gpus++];
	g->agent = agent;
	hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, g->name);
	hsa_agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &g->cus);
	hsa_amd_agent_iterate_memory_pools(agent, find_vram_pool, g);
	return HSA_STATUS_SUCCESS;
}

#define TRY(w, call, ...)                                                                          \
	({                                                                                         \
		hsa_status_t st_ = (call);                                                         \
		if (st_ != HSA_STATUS_SUCCESS) {                                                   \
			fprintf(stderr, "%s: status %#x\n", #call, st_);                           \
			rc_fail(&(w)->res, __VA_ARGS__);                                           \
		}                                                                                  \
		st_ == HSA_STATUS_SUCCESS;                                                         \
	})

static bool cpu_can_reach(struct workload *w, hsa_amd_memory_pool_t pool)
{
	hsa_amd_memory_pool_access_t access = HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;

	hsa_amd_agent_memory_pool_get_info(w->cpu, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
					   &access);
	return access != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;
}

/* packet bodies only: a header stays HSA_PACKET_TYPE_INVALID */
static void fill_ring(hsa_queue_t *q, uint32_t seed, bool check, struct workload *w, int gi)
{
	uint8_t *ring = q->base_address;

	for (uint32_t i = 0; i < q->size; i++) {
		uint8_t *body = ring + (size_t)i * 64 + 4;

		if (!check) {
			rc_fill(body, 60, seed + i);
		} else if (rc_check(body, 60, seed + i)) {
			rc_fail(&w->res, "gpu %d: AQL packet %u's body differs", gi, i);
			return;
		}
	}
}

static int setup_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];

	if (!g->have_vram_pool) {
		rc_fail(&w->res, "gpu %d (%s): no coarse-grained global pool", gi, g->name);
		return -ENODEV;
	}
	if (!TRY(w, hsa_amd_memory_pool_allocate(g->vram_pool, w->size, 0, &g->vram),
		 "gpu %d: VRAM pool allocation", gi) ||
	    !TRY(w, hsa_amd_memory_pool_allocate(w->sys_pool, w->size, 0, &g->sys),
		 "gpu %d: system pool allocation", gi) ||
	    !TRY(w, hsa_amd_agents_allow_access(1, &g->agent, NULL, g->sys),
		 "gpu %d: GPU access to system memory", gi))
		return -EIO;
	g->cpu_reaches_vram =
		cpu_can_reach(w, g->vram_pool) &&
		hsa_amd_agents_allow_access(1, &w->cpu, NULL, g->vram) == HSA_STATUS_SUCCESS;
	if (g->cpu_reaches_vram)
		rc_fill(g->vram, w->size, seed_of(gi, 1));
	rc_fill(g->sys, w->size, seed_of(gi, 2));
	if (posix_memalign(&g->locked_host, 4096, w->size))
		return -ENOMEM;
	rc_fill(g->locked_host, w->size, seed_of(gi, 3));
	if (!TRY(w, hsa_amd_memory_lock(g->locked_host, w->size, &g->agent, 1, &g->locked_gpu),
		 "gpu %d: hsa_amd_memory_lock", gi) ||
	    !TRY(w, hsa_signal_create(1000 + gi, 0, NULL, &g->signal), "gpu %d: signal", gi) ||
	    !TRY(w, hsa_amd_signal_create(2000 + gi, 0, NULL, 0, &g->irq_signal),
		 "gpu %d: interrupt signal", gi) ||
	    !TRY(w,
		 hsa_queue_create(g->agent, 256, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
				  UINT32_MAX, &g->queue),
		 "gpu %d: hsa_queue_create", gi))
		return -EIO;
	fill_ring(g->queue, seed_of(gi, 4), false, w, gi);
	return 0;
}

static void check_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	size_t off;

	if (g->cpu_reaches_vram && (off = rc_check(g->vram, w->size, seed_of(gi, 1))))
		rc_fail(&w->res, "gpu %d: VRAM byte %zu differs", gi, off - 1);
	if ((off = rc_check(g->sys, w->size, seed_of(gi, 2))))
		rc_fail(&w->res, "gpu %d: system pool byte %zu differs", gi, off - 1);
	if ((off = rc_check(g->locked_host, w->size, seed_of(gi, 3))))
		rc_fail(&w->res, "gpu %d: locked host memory byte %zu differs", gi, off - 1);
	if (hsa_signal_load_scacquire(g->signal) != 1000 + gi)
		rc_fail(&w->res, "gpu %d: signal value %" PRId64, gi,
			hsa_signal_load_scacquire(g->signal));
	if (hsa_signal_load_scacquire(g->irq_signal) != 2000 + gi)
		rc_fail(&w->res, "gpu %d: interrupt signal value %" PRId64, gi,
			hsa_signal_load_scacquire(g->irq_signal));
	if (g->queue->size != 256 || g->queue->type != HSA_QUEUE_TYPE_MULTI)
		rc_fail(&w->res, "gpu %d: queue size %u type %u", gi, g->queue->size,
			g->queue->type);
	fill_ring(g->queue, seed_of(gi, 4), true, w, gi);
}

static void exercise_gpu(struct workload *w, int gi)
{
	struct gpu *g = &w->gpu[gi];
	hsa_queue_t *q;
	void *p;

	/* an interrupt signal's waiter sleeps in KFD (WAIT_EVENTS) until SET_EVENT */
	hsa_signal_store_screlease(g->irq_signal, 7);
	if (hsa_signal_wait_scacquire(g->irq_signal, HSA_SIGNAL_CONDITION_EQ, 7,
				      10ULL * 1000 * 1000 * 1000, HSA_WAIT_STATE_BLOCKED) != 7)
		rc_fail(&w->res, "gpu %d: interrupt signal wait", gi);
	hsa_signal_store_screlease(g->signal, 8);
	if (hsa_signal_wait_scacquire(g->signal, HSA_SIGNAL_CONDITION_EQ, 8, UINT64_MAX,
				      HSA_WAIT_STATE_ACTIVE) != 8)
		rc_fail(&w->res, "gpu %d: signal wait", gi);
	if (TRY(w, hsa_amd_memory_pool_allocate(g->vram_pool, w->size, 0, &p), "gpu %d: new VRAM",
		gi))
		TRY(w, hsa_amd_memory_pool_free(p), "gpu %d: free of new VRAM", gi);
	if (TRY(w, hsa_amd_memory_pool_allocate(w->sys_pool, w->size, 0, &p),
		"gpu %d: new system memory", gi)) {
		rc_fill(p, w->size, seed_of(gi, 5));
		if (rc_check(p, w->size, seed_of(gi, 5)))
			rc_fail(&w->res, "gpu %d: new system memory does not keep its bytes", gi);
		TRY(w, hsa_amd_memory_pool_free(p), "gpu %d: free of new system memory", gi);
	}
	/*
	 * Queues are created, not destroyed: ROCr 5.2.3's hsa_queue_destroy can
	 * hang for good (the mechanism needs no checkpoint and no simulator; it
	 * showed here after restores, about once in ten processes). Every AQL queue's signals
	 * share one auto-reset KFD event, and ROCr's event thread waits on it
	 * too: when the destroy handshake's SET_EVENT comes before the
	 * destroying thread sleeps, the event thread's own next WAIT_EVENTS
	 * consumes it (KFD's semantics), and the destroying thread sleeps with
	 * nothing left to wake it. Traced on kfdsim (debugfs kfdsim/events);
	 * later ROCr passes the event age (KFD 1.14) to close this. --churn N
	 * destroys N queues per GPU, to show it. hsa_shut_down would destroy
	 * ROCr's own queues the same way: the process exits without it.
	 */
	TRY(w,
	    hsa_queue_create(g->agent, 128, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
			     UINT32_MAX, &q),
	    "gpu %d: new queue", gi);
	for (int i = 0; i < w->churn && !w->res.failures; i++) {
		/* where a hang is, in the output */
		fprintf(stderr, "gpu %d: churn queue %d\n", gi, i);
		if (TRY(w,
			hsa_queue_create(g->agent, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
					 UINT32_MAX, &q),
			"gpu %d: churn queue %d", gi, i))
			TRY(w, hsa_queue_destroy(q), "gpu %d: destroy of churn queue %d", gi, i);
	}
	TRY(w, hsa_signal_destroy(g->signal), "gpu %d: signal destroy", gi);
	TRY(w, hsa_signal_destroy(g->irq_signal), "gpu %d: interrupt signal destroy", gi);
	TRY(w, hsa_amd_memory_unlock(g->locked_host), "gpu %d: unlock", gi);
	TRY(w, hsa_amd_memory_pool_free(g->vram), "gpu %d: VRAM free", gi);
	TRY(w, hsa_amd_memory_pool_free(g->sys), "gpu %d: system memory free", gi);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rocm-hsa [--gpus N] [--size BYTES] [--churn N] READY TRIGGER RESULT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"churn", required_argument, NULL, 'c'},
					     {"gpus", required_argument, NULL, 'g'},
					     {"size", required_argument, NULL, 's'},
					     {NULL, 0, NULL, 0}};
	static struct workload w = {.size = 1 << 20, .want = MAX_GPUS};
	char ready[8192], detail[256];
	const char *result;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'c')
			w.churn = atoi(optarg);
		else if (c == 'g')
			w.want = atoi(optarg);
		else if (c == 's')
			w.size = strtoull(optarg, NULL, 0) & ~4095ULL;
		else
			usage();
	}
	if (argc - optind != 3 || w.want < 1 || !w.size)
		usage();
	result = argv[optind + 2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!TRY(&w, hsa_init(), "hsa_init"))
		return rc_finish(result, &w.res, "");
	hsa_iterate_agents(find_agent, &w);
	if (!w.n_gpus || !w.have_cpu || !w.have_sys_pool) {
		rc_fail(&w.res,
			"ROCr shows %d GPU agents, %s CPU agent, %s fine-grained system pool",
			w.n_gpus, w.have_cpu ? "a" : "no", w.have_sys_pool ? "a" : "no");
		return rc_finish(result, &w.res, "");
	}
	for (int i = 0; i < w.n_gpus; i++)
		if (setup_gpu(&w, i))
			return rc_finish(result, &w.res, "");
	snprintf(ready, sizeof(ready), "gpus %d\n", w.n_gpus);
	for (int i = 0; i < w.n_gpus; i++)
		snprintf(ready + strlen(ready), sizeof(ready) - strlen(ready),
			 "gpu %d %s %u vram-cpu %d\n", i, w.gpu[i].name, w.gpu[i].cus,
			 w.gpu[i].cpu_reaches_vram);
	for (int i = 0; i < w.n_gpus; i++)
		snprintf(ready + strlen(ready), sizeof(ready) - strlen(ready),
			 "buf system %d %p %zu\nbuf locked %d %p %zu\n", i, w.gpu[i].sys, w.size, i,
			 w.gpu[i].locked_host, w.size);
	rc_append_fds(ready, sizeof(ready));
	rc_write_file(argv[optind], ready);
	printf("ready: %d GPU agents (%s), %zu bytes per buffer\n", w.n_gpus, w.gpu[0].name,
	       w.size);

	rc_wait_file(argv[optind + 1]);
	for (int i = 0; i < w.n_gpus; i++)
		check_gpu(&w, i);
	for (int i = 0; i < w.n_gpus; i++)
		exercise_gpu(&w, i);
	snprintf(detail, sizeof(detail), "gpus %d size %zu\n", w.n_gpus, w.size);
	return rc_finish(result, &w.res, detail);
}
