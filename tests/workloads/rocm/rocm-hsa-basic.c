// SPDX-License-Identifier: MIT
/*
 * rocm-hsa-basic: a probe of ROCr's start-up path, for ROCr versions newer
 * than the ZDTM workloads were written against (Debian testing's 6.4, whose
 * thunk is built in): no checkpoint, one line per step.
 *
 *   rocm-hsa-basic [--size BYTES]
 *
 * hsa_init; every agent ("agent cpu|gpu NAME"); per GPU agent: an
 * allocation from the system's fine-grained pool, filled and read back, one
 * from the GPU's coarse-grained global pool (VRAM; filled and read back
 * when ROCr lets the CPU reach it), a signal stored, waited for and
 * destroyed, an AQL queue created and destroyed; hsa_shut_down. Each step
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

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define MAX_AGENTS 64

static int failures;

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
	    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc) ||
	    !alloc)
		return HSA_STATUS_SUCCESS;
	if (w->fine ? !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) :
		      !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
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
	hsa_amd_agent_memory_pool_get_info(cpu, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, &access);
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

static void exercise_gpu(hsa_agent_t gpu, hsa_agent_t cpu, const char *name, size_t size,
			 struct pool_want *sys, uint32_t seed)
{
	struct pool_want vram = { .fine = false };
	hsa_queue_t *q = NULL;
	hsa_signal_t sig;
	uint32_t qmax = 0;

	if (sys->found)
		exercise_pool(sys->pool, cpu, "system memory for", name, size, seed);
	hsa_amd_agent_iterate_memory_pools(gpu, find_pool, &vram);
	if (step(vram.found ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR, "coarse-grained pool of %s", name))
		exercise_pool(vram.pool, cpu, "vram of", name, size, seed + 1);

	if (step(hsa_signal_create(1, 0, NULL, &sig), "signal create on %s", name)) {
		hsa_signal_store_screlease(sig, 0);
		step(hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0, 1000000000ull,
					       HSA_WAIT_STATE_BLOCKED) == 0 ?
		     HSA_STATUS_SUCCESS : HSA_STATUS_ERROR, "signal stored and waited for on %s", name);
		step(hsa_signal_destroy(sig), "signal destroy on %s", name);
	}

	hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &qmax);
	if (step(hsa_queue_create(gpu, qmax < 4096 ? qmax : 4096, HSA_QUEUE_TYPE_SINGLE, NULL,
				  NULL, UINT32_MAX, UINT32_MAX, &q), "queue create on %s", name))
		step(hsa_queue_destroy(q), "queue destroy on %s", name);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "size", required_argument, NULL, 's' }, { 0 } };
	struct pool_want sys = { .fine = true };
	struct agents ag = { .n = 0 };
	hsa_agent_t cpu = { 0 };
	size_t size = 1 << 20;
	bool have_cpu = false;
	int c, i, gpus = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 's')
			return 2;
		size = strtoull(optarg, NULL, 0) & ~(size_t)3;
	}
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
