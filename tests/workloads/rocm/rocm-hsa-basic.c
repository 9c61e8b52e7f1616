// SPDX-License-Identifier: MIT
/*
 * rocm-hsa-basic: a probe of ROCr's start-up path, for ROCr versions newer
 * than the ZDTM workloads were written against (Debian testing's 6.4, whose
 * thunk is built in): no checkpoint, one line per step.
 *
 *   rocm-hsa-basic [--size BYTES] [--copies] [--aql]
 *
 * hsa_init; every agent ("agent cpu|gpu NAME"); per GPU agent: an
 * allocation from the system's fine-grained pool, filled and read back, one
 * from the GPU's coarse-grained global pool (VRAM; filled and read back
 * when ROCr lets the CPU reach it), a signal stored, waited for and
 * destroyed, an AQL queue created and destroyed, and with --copies copies
 * by hsa_amd_memory_async_copy (see exercise_copies()), with --aql packets on
 * an AQL queue (see exercise_aql()); hsa_shut_down. Each step
 * prints "STEP ok WHAT" or "STEP FAIL WHAT: STATUS"; the last line is
 * "RESULT PASS gpus N" or "RESULT FAIL N" (the exit status is 0 only with
 * PASS).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define MAX_AGENTS 64

static int failures;
static bool copies; /* --copies */
static bool aql;    /* --aql */

static bool step(hsa_status_t st, const char *fmt, const char *arg)
{
	const char *msg = NULL;

	printf("STEP %s ", st == HSA_STATUS_SUCCESS ? "ok" : "FAIL");
	printf(fmt, arg);
	if (st != HSA_STATUS_SUCCESS) {
		hsa_status_string(st, &msg);
		printf(": 0x%x %s", st, msg ? msg : "");
		failures++;
	}
	printf("\n");
	fflush(stdout);
	return st == HSA_STATUS_SUCCESS;
}

struct agents {
	hsa_agent_t a[MAX_AGENTS];
	int n;
};

static hsa_status_t add_agent(hsa_agent_t agent, void *data)
{
	struct agents *ag = data;

	if (ag->n < MAX_AGENTS)
		ag->a[ag->n++] = agent;
	return HSA_STATUS_SUCCESS;
}

struct pool_want {
	bool fine, found;
	hsa_amd_memory_pool_t pool;
};

static hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct pool_want *w = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;

	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) ||
	    seg != HSA_AMD_SEGMENT_GLOBAL ||
	    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags) ||
	    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
					 &alloc) ||
	    !alloc)
		return HSA_STATUS_SUCCESS;
	if (w->fine ? !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
		    : !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
		return HSA_STATUS_SUCCESS;
	w->pool = pool;
	w->found = true;
	return HSA_STATUS_INFO_BREAK;
}

static bool fill_and_check(void *p, size_t size, uint32_t seed)
{
	uint32_t *w = p;
	size_t i, n = size / 4;

	for (i = 0; i < n; i++)
		w[i] = seed ^ (uint32_t)(i * 2654435761u);
	for (i = 0; i < n; i++)
		if (w[i] != (seed ^ (uint32_t)(i * 2654435761u)))
			return false;
	return true;
}

/* allocate from POOL, fill and read back when the CPU may reach it, free */
static void exercise_pool(hsa_amd_memory_pool_t pool, hsa_agent_t cpu, const char *what,
			  const char *name, size_t size, uint32_t seed)
{
	hsa_amd_memory_pool_access_t access = HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;
	char label[160];
	void *p = NULL;

	snprintf(label, sizeof(label), "%s %s", what, name);
	if (!step(hsa_amd_memory_pool_allocate(pool, size, 0, &p), "allocate %s", label))
		return;
	hsa_amd_agent_memory_pool_get_info(cpu, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
					   &access);
	if (access != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED) {
		hsa_status_t st = hsa_amd_agents_allow_access(1, &cpu, NULL, p);

		if (step(st, "cpu access to %s", label))
			step(fill_and_check(p, size, seed) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR,
			     "fill and read back %s", label);
	} else {
		printf("STEP skip fill %s: the CPU may not reach the pool\n", label);
	}
	step(hsa_amd_memory_pool_free(p), "free %s", label);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* waits up to 20 s for SIG to reach 0 (the copy's completion) */
static hsa_status_t wait_done(hsa_signal_t sig)
{
	uint64_t freq = 1000000000ull;
	double end = now_s() + 20;

	hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq);
	while (hsa_signal_load_scacquire(sig) != 0) {
		if (now_s() > end) {
			printf("# signal value %" PRId64 " after 20 s\n",
			       hsa_signal_load_relaxed(sig));
			return HSA_STATUS_ERROR;
		}
		hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0, freq,
					  HSA_WAIT_STATE_BLOCKED);
	}
	return HSA_STATUS_SUCCESS;
}

/* one hsa_amd_memory_async_copy with a completion signal, waited for */
static bool copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
		 size_t size, hsa_signal_t sig, const char *what, const char *name)
{
	char label[160];
	hsa_status_t st;

	snprintf(label, sizeof(label), "async copy %s on %s", what, name);
	hsa_signal_store_screlease(sig, 1);
	st = hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size, 0, NULL, sig);
	if (!step(st, "%s submitted", label))
		return false;
	return step(wait_done(sig), "%s completes", label);
}

static hsa_status_t same_pattern(const void *p, size_t size, uint32_t seed)
{
	const uint32_t *w = p;
	size_t i;

	for (i = 0; i < size / 4; i++)
		if (w[i] != (seed ^ (uint32_t)(i * 2654435761u))) {
			printf("# word %zu is 0x%08x\n", i, w[i]);
			return HSA_STATUS_ERROR;
		}
	return HSA_STATUS_SUCCESS;
}

/*
 * hsa_amd_memory_async_copy host -> VRAM, VRAM -> host, VRAM -> VRAM (same
 * GPU), VRAM -> host, with a pattern in system memory that must come back;
 * VRAM is only read through the copies. ROCr puts them on SDMA queues
 * (HSA_ENABLE_SDMA=1, set in main()), except what it does with blit
 * kernels on an AQL queue, which kfdsim does not execute, so not tested:
 * copies within one GPU of HSA_FORCE_SDMA_SIZE (1 MiB) or more, and
 * hsa_amd_memory_fill (ROCr's DmaFill is a blit kernel on every GPU).
 */
static void exercise_copies(hsa_agent_t gpu, hsa_agent_t cpu, const char *name, size_t size,
			    struct pool_want *sys, hsa_amd_memory_pool_t vram, uint32_t seed)
{
	void *host = NULL, *back = NULL, *v1 = NULL, *v2 = NULL;
	char label[160];
	hsa_signal_t sig;

	if (size >= (1u << 20))
		size = 65536; /* below HSA_FORCE_SDMA_SIZE: see above */
	snprintf(label, sizeof(label), "copy buffers of %s", name);
	if (!sys->found || !step(hsa_amd_memory_pool_allocate(sys->pool, size, 0, &host) ||
					 hsa_amd_memory_pool_allocate(sys->pool, size, 0, &back) ||
					 hsa_amd_memory_pool_allocate(vram, size, 0, &v1) ||
					 hsa_amd_memory_pool_allocate(vram, size, 0, &v2) ||
					 hsa_amd_agents_allow_access(1, &gpu, NULL, host) ||
					 hsa_amd_agents_allow_access(1, &gpu, NULL, back),
				 "allocate %s", label))
		goto out;
	if (!step(hsa_signal_create(1, 0, NULL, &sig), "signal create for copies on %s", name))
		goto out;
	fill_and_check(host, size, seed);
	memset(back, 0, size);
	if (copy(v1, gpu, host, cpu, size, sig, "host to vram", name) &&
	    copy(back, cpu, v1, gpu, size, sig, "vram to host", name))
		step(same_pattern(back, size, seed),
		     "host to vram to host copies keep the bytes on %s", name);
	memset(back, 0, size);
	if (copy(v2, gpu, v1, gpu, size, sig, "vram to vram", name) &&
	    copy(back, cpu, v2, gpu, size, sig, "vram to host (2)", name))
		step(same_pattern(back, size, seed), "vram to vram copy keeps the bytes on %s",
		     name);
	hsa_signal_destroy(sig);
out:
	if (host)
		hsa_amd_memory_pool_free(host);
	if (back)
		hsa_amd_memory_pool_free(back);
	if (v1)
		hsa_amd_memory_pool_free(v1);
	if (v2)
		hsa_amd_memory_pool_free(v2);
}

/* the queue error callback: what ROCr reports, and how often */
static volatile hsa_status_t queue_status = HSA_STATUS_SUCCESS;
static volatile int queue_errors;

static void queue_error(hsa_status_t st, hsa_queue_t *q, void *data)
{
	(void)q;
	(void)data;
	queue_status = st;
	__atomic_add_fetch(&queue_errors, 1, __ATOMIC_SEQ_CST);
}

/* one AQL packet: the body first, then its header and setup, release */
static uint64_t submit(hsa_queue_t *q, const void *pkt)
{
	uint64_t idx = hsa_queue_add_write_index_screlease(q, 1);
	uint32_t *slot = (uint32_t *)q->base_address + (idx % q->size) * 16;

	memcpy(slot + 1, (const uint32_t *)pkt + 1, 60);
	__atomic_store_n(slot, *(const uint32_t *)pkt, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
	return idx;
}

static uint16_t header(hsa_packet_type_t type)
{
	return type << HSA_PACKET_HEADER_TYPE | 1 << HSA_PACKET_HEADER_BARRIER |
	       HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
	       HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
}

/* the slot of packet IDX: the packet processor set it back to INVALID */
static hsa_status_t slot_released(hsa_queue_t *q, uint64_t idx)
{
	uint16_t h = *((uint16_t *)q->base_address + (idx % q->size) * 32);

	return (h & 0xff) == HSA_PACKET_TYPE_INVALID && hsa_queue_load_read_index_scacquire(q) > idx
		       ? HSA_STATUS_SUCCESS
		       : HSA_STATUS_ERROR;
}

/*
 * AQL packets the packet processor must run (kfdsim: tests/kfdsim/aql.c):
 * a BARRIER_AND with a dependency completes only once the dependency is 0
 * (it has not after 2 s, then does within 20 s of the store), a BARRIER_OR
 * with one satisfied dependency of two completes, each slot goes back to
 * INVALID behind the read index; a kernel dispatch (shader code, which a
 * simulator cannot run) ends in the queue error callback with
 * HSA_STATUS_ERROR_INVALID_PACKET_FORMAT within 60 s, its completion
 * signal untouched: never a silent success, never a hang.
 */
static void exercise_aql(hsa_agent_t gpu, const char *name)
{
	hsa_barrier_and_packet_t bar;
	hsa_barrier_or_packet_t bor;
	hsa_kernel_dispatch_packet_t kd;
	hsa_signal_t dep, dep2, done;
	hsa_queue_t *q = NULL;
	uint64_t idx;
	double end;

	if (!step(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, queue_error, NULL, UINT32_MAX,
				   UINT32_MAX, &q),
		  "aql queue create on %s", name))
		return;
	if (!step(hsa_signal_create(1, 0, NULL, &dep) || hsa_signal_create(0, 0, NULL, &dep2) ||
			  hsa_signal_create(1, 0, NULL, &done),
		  "aql signals on %s", name))
		goto out_queue;
	memset(&bar, 0, sizeof(bar));
	bar.header = header(HSA_PACKET_TYPE_BARRIER_AND);
	bar.dep_signal[1] = dep;
	bar.completion_signal = done;
	idx = submit(q, &bar);
	step(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 2000000000ull,
				       HSA_WAIT_STATE_BLOCKED) == 1 &&
			     hsa_queue_load_read_index_scacquire(q) == idx
		     ? HSA_STATUS_SUCCESS
		     : HSA_STATUS_ERROR,
	     "barrier-and waits for its dependency on %s", name);
	hsa_signal_store_screlease(dep, 0);
	if (step(wait_done(done), "barrier-and completes after its dependency on %s", name))
		step(slot_released(q, idx), "barrier-and slot released on %s", name);

	memset(&bor, 0, sizeof(bor));
	bor.header = header(HSA_PACKET_TYPE_BARRIER_OR);
	hsa_signal_store_screlease(dep, 1);
	bor.dep_signal[0] = dep;
	bor.dep_signal[3] = dep2;
	hsa_signal_store_screlease(done, 1);
	bor.completion_signal = done;
	idx = submit(q, &bor);
	if (step(wait_done(done), "barrier-or completes with one dependency met on %s", name))
		step(slot_released(q, idx), "barrier-or slot released on %s", name);

	memset(&kd, 0, sizeof(kd));
	kd.header = header(HSA_PACKET_TYPE_KERNEL_DISPATCH);
	kd.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	kd.workgroup_size_x = kd.workgroup_size_y = kd.workgroup_size_z = 1;
	kd.grid_size_x = kd.grid_size_y = kd.grid_size_z = 1;
	kd.kernel_object = 0x7f0000001000ull; /* no code object: named by address */
	hsa_signal_store_screlease(done, 1);
	kd.completion_signal = done;
	submit(q, &kd);
	end = now_s() + 60;
	while (!__atomic_load_n(&queue_errors, __ATOMIC_SEQ_CST) && now_s() < end)
		hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 100000000ull,
					  HSA_WAIT_STATE_BLOCKED);
	if (queue_errors)
		printf("# queue error callback: 0x%x\n", queue_status);
	step(queue_errors && queue_status == HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
		     ? HSA_STATUS_SUCCESS
		     : HSA_STATUS_ERROR,
	     "kernel dispatch ends in a queue error (invalid packet format) on %s", name);
	step(hsa_signal_load_scacquire(done) == 1 ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR,
	     "kernel dispatch's completion signal untouched on %s", name);
	queue_errors = 0;
	hsa_signal_destroy(dep);
	hsa_signal_destroy(dep2);
	hsa_signal_destroy(done);
out_queue:
	step(hsa_queue_destroy(q), "aql queue destroy on %s", name);
}

static void exercise_gpu(hsa_agent_t gpu, hsa_agent_t cpu, const char *name, size_t size,
			 struct pool_want *sys, uint32_t seed)
{
	struct pool_want vram = {.fine = false};
	hsa_queue_t *q = NULL;
	hsa_signal_t sig;
	uint32_t qmax = 0;

	if (sys->found)
		exercise_pool(sys->pool, cpu, "system memory for", name, size, seed);
	hsa_amd_agent_iterate_memory_pools(gpu, find_pool, &vram);
	if (step(vram.found ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR, "coarse-grained pool of %s",
		 name)) {
		exercise_pool(vram.pool, cpu, "vram of", name, size, seed + 1);
		if (copies)
			exercise_copies(gpu, cpu, name, size, sys, vram.pool, seed + 2);
	}

	if (step(hsa_signal_create(1, 0, NULL, &sig), "signal create on %s", name)) {
		hsa_signal_store_screlease(sig, 0);
		step(hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0, 1000000000ull,
					       HSA_WAIT_STATE_BLOCKED) == 0
			     ? HSA_STATUS_SUCCESS
			     : HSA_STATUS_ERROR,
		     "signal stored and waited for on %s", name);
		step(hsa_signal_destroy(sig), "signal destroy on %s", name);
	}

	hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &qmax);
	if (step(hsa_queue_create(gpu, qmax < 4096 ? qmax : 4096, HSA_QUEUE_TYPE_SINGLE, NULL, NULL,
				  UINT32_MAX, UINT32_MAX, &q),
		 "queue create on %s", name))
		step(hsa_queue_destroy(q), "queue destroy on %s", name);
	if (aql)
		exercise_aql(gpu, name);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"size", required_argument, NULL, 's'}, {"copies", no_argument, NULL, 'c'},
		{"aql", no_argument, NULL, 'a'}, {0}};
	struct pool_want sys = {.fine = true};
	struct agents ag = {.n = 0};
	hsa_agent_t cpu = {0};
	size_t size = 1 << 20;
	bool have_cpu = false;
	int c, i, gpus = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'c')
			copies = true;
		else if (c == 'a')
			aql = true;
		else if (c == 's')
			size = strtoull(optarg, NULL, 0) & ~(size_t)3;
		else
			return 2;
	}
	/* copies on SDMA queues where ROCr would decide otherwise (gfx8) */
	setenv("HSA_ENABLE_SDMA", "1", 0);
	if (!step(hsa_init(), "hsa_init%s", ""))
		goto out;
	step(hsa_iterate_agents(add_agent, &ag), "iterate agents%s", "");
	for (i = 0; i < ag.n; i++) {
		hsa_device_type_t type;
		char name[64] = "";

		hsa_agent_get_info(ag.a[i], HSA_AGENT_INFO_DEVICE, &type);
		hsa_agent_get_info(ag.a[i], HSA_AGENT_INFO_NAME, name);
		printf("agent %s %s\n", type == HSA_DEVICE_TYPE_GPU ? "gpu" : "cpu", name);
		if (type == HSA_DEVICE_TYPE_CPU && !have_cpu) {
			cpu = ag.a[i];
			have_cpu = true;
			hsa_amd_agent_iterate_memory_pools(cpu, find_pool, &sys);
		}
	}
	step(have_cpu && sys.found ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR,
	     "a CPU agent with a fine-grained pool%s", "");
	for (i = 0; i < ag.n; i++) {
		hsa_device_type_t type;
		char name[80], agent_name[64] = "";

		hsa_agent_get_info(ag.a[i], HSA_AGENT_INFO_DEVICE, &type);
		if (type != HSA_DEVICE_TYPE_GPU || !have_cpu)
			continue;
		hsa_agent_get_info(ag.a[i], HSA_AGENT_INFO_NAME, agent_name);
		snprintf(name, sizeof(name), "gpu%d(%s)", gpus, agent_name);
		exercise_gpu(ag.a[i], cpu, name, size, &sys, 0x5eed0000u + (uint32_t)gpus * 16);
		gpus++;
	}
	step(hsa_shut_down(), "hsa_shut_down%s", "");
out:
	if (failures)
		printf("RESULT FAIL %d\n", failures);
	else
		printf("RESULT PASS gpus %d\n", gpus);
	return failures ? 1 : 0;
}
