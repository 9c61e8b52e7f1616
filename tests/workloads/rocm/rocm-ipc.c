// SPDX-License-Identifier: MIT
/*
 * rocm-ipc: what Debian's ROCr 5.2.3 IPC does on this kernel (no
 * checkpoint; a probe for tests/vm/guest/kfdsim/test-rocm-ipc.sh).
 *
 *   rocm-ipc [--size BYTES] HANDLE_FILE
 *   rocm-ipc --attach HANDLE_FILE
 *
 * hsa_init, the first GPU agent's coarse-grained global pool (VRAM), an
 * allocation of BYTES (default 2 MiB), hsa_amd_ipc_memory_create. The
 * handle goes to HANDLE_FILE and the program runs itself again (fork and
 * exec: ROCr is not fork-safe once initialised) with --attach, which does
 * hsa_init and hsa_amd_ipc_memory_attach of that handle to its first GPU
 * agent (and detaches on success). When create failed, the attach runs on
 * a handle shaped as libhsakmt 5.2 would have filled it (HsaSharedMemoryStruct
 * in its fmm.c: share token zero, aperture DGPU, size in pages, the GPU's
 * gpu_id): it shows which KFD ioctl ROCr's attach uses (an all-zero handle
 * names no aperture, and libhsakmt dereferences NULL). One line per step:
 *
 *   STEP status N: TEXT        (N the hsa_status_t, TEXT hsa_status_string)
 *   attach child exit N
 *
 * Exits 0 when it ran to the end, whatever the IPC calls returned (the test
 * script judges); 1 when a step before the IPC calls failed; 2 on usage.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

struct gpu {
	hsa_agent_t agent;
	hsa_amd_memory_pool_t pool;
	bool have_agent, have_pool;
};

/* libhsakmt 5.2's HsaSharedMemoryStruct (fmm.c), the first 8 words of the
 * ROCr handle; ROCr marks a fragment in size_pages' top bit */
struct kmt_share {
	uint32_t token[4], aperture, aperture_idx, size_pages, gpu_id;
};
_Static_assert(sizeof(struct kmt_share) == sizeof(hsa_amd_ipc_memory_t), "handle size");

/* the KFD gpu_id of AGENT's topology node (sysfs); 0 if unknown */
static uint32_t gpu_id_of(hsa_agent_t agent)
{
	uint32_t node = 0, id = 0;
	char path[96];
	FILE *f;

	hsa_agent_get_info(agent, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &node);
	snprintf(path, sizeof(path), "/sys/class/kfd/kfd/topology/nodes/%u/gpu_id", node);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%" SCNu32, &id) != 1)
			id = 0;
		fclose(f);
	}
	return id;
}

/* prints "STEP status N: TEXT"; true on HSA_STATUS_SUCCESS */
static bool report(const char *step, hsa_status_t st)
{
	const char *text = NULL;

	if (hsa_status_string(st, &text) != HSA_STATUS_SUCCESS || !text)
		text = "(no text)";
	printf("%s status %d: %s\n", step, (int)st, text);
	return st == HSA_STATUS_SUCCESS;
}

static hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;
	hsa_amd_segment_t seg;
	uint32_t flags;
	bool alloc;

	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	if (seg != HSA_AMD_SEGMENT_GLOBAL || !alloc ||
	    !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
		return HSA_STATUS_SUCCESS;
	g->pool = pool;
	g->have_pool = true;
	return HSA_STATUS_INFO_BREAK;
}

static hsa_status_t find_gpu(hsa_agent_t agent, void *data)
{
	struct gpu *g = data;
	hsa_device_type_t type;

	hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
	if (type != HSA_DEVICE_TYPE_GPU)
		return HSA_STATUS_SUCCESS;
	g->agent = agent;
	g->have_agent = true;
	hsa_amd_agent_iterate_memory_pools(agent, find_pool, g);
	return HSA_STATUS_INFO_BREAK;
}

/* hsa_init and the first GPU agent (with its VRAM pool); false if none */
static bool init_gpu(struct gpu *g)
{
	char name[64] = "";

	if (!report("hsa_init", hsa_init()))
		return false;
	hsa_iterate_agents(find_gpu, g);
	if (!g->have_agent || !g->have_pool) {
		printf("gpu: %s\n",
		       g->have_agent ? "no coarse-grained global pool" : "no GPU agent");
		return false;
	}
	hsa_agent_get_info(g->agent, HSA_AGENT_INFO_NAME, name);
	printf("gpu: %s\n", name);
	return true;
}

static bool handle_io(const char *path, hsa_amd_ipc_memory_t *h, size_t *len, bool write)
{
	FILE *f = fopen(path, write ? "w" : "r");
	bool ok = f != NULL;

	for (int i = 0; ok && i < 8; i++)
		ok = write ? fprintf(f, "%08" PRIx32 " ", h->handle[i]) > 0
			   : fscanf(f, "%" SCNx32, &h->handle[i]) == 1;
	if (ok)
		ok = write ? fprintf(f, "%zu\n", *len) > 0 : fscanf(f, "%zu", len) == 1;
	if (f && fclose(f))
		ok = false;
	if (!ok)
		printf("handle file %s: cannot %s it\n", path, write ? "write" : "read");
	return ok;
}

static int attach(const char *path)
{
	hsa_amd_ipc_memory_t h;
	struct gpu g = {0};
	void *p = NULL;
	size_t len;

	if (!handle_io(path, &h, &len, false) || !init_gpu(&g))
		return 1;
	if (report("ipc_memory_attach", hsa_amd_ipc_memory_attach(&h, len, 1, &g.agent, &p))) {
		printf("attached at %p\n", p);
		report("ipc_memory_detach", hsa_amd_ipc_memory_detach(p));
	}
	report("hsa_shut_down", hsa_shut_down());
	return 0;
}

int main(int argc, char **argv)
{
	hsa_amd_ipc_memory_t h = {{0}};
	size_t size = 2 << 20;
	struct gpu g = {0};
	const char *path;
	void *p = NULL;
	int status;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--attach"))
		return attach(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--size"))
		size = strtoull(argv[2], NULL, 0);
	else if (argc != 2)
		goto usage;
	if (!size)
		goto usage;
	path = argv[argc - 1];

	if (!init_gpu(&g) ||
	    !report("memory_pool_allocate", hsa_amd_memory_pool_allocate(g.pool, size, 0, &p)))
		return 1;
	printf("allocated %zu bytes at %p\n", size, p);
	if (!report("ipc_memory_create", hsa_amd_ipc_memory_create(p, size, &h))) {
		struct kmt_share s = {.aperture = 1, /* HSA_APERTURE_DGPU */
				      .size_pages = (uint32_t)(size >> 12),
				      .gpu_id = gpu_id_of(g.agent)};

		memcpy(&h, &s, sizeof(h));
		printf("attach: of a shaped handle (token 0, gpu_id %" PRIu32 ")\n", s.gpu_id);
	}
	if (!handle_io(path, &h, &size, true))
		return 1;
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--attach", path, (char *)NULL);
		perror("exec");
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		perror("fork/waitpid");
		return 1;
	}
	printf("attach child exit %d\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	report("memory_pool_free", hsa_amd_memory_pool_free(p));
	report("hsa_shut_down", hsa_shut_down());
	printf("done\n");
	return 0;
usage:
	fprintf(stderr, "usage: rocm-ipc [--size BYTES] HANDLE_FILE | --attach HANDLE_FILE\n");
	return 2;
}
