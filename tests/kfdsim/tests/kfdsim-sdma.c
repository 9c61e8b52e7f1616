// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim's SDMA engines through libdrm_amdgpu, as CRIU's amdgpu plugin uses
 * them: HW_IP_COUNT/INFO for DMA on every GPU node, contexts, CS of SDMA
 * IBs (COPY_LINEAR, CONST_FILL, FENCE, NOP, TRAP, POLL_REGMEM) on the first
 * GPU, sequence numbers, WAIT_CS that really waits, dependencies, the
 * errors real hardware and the kernel give (illegal packets, VM faults,
 * bad arguments), every injected fault (debugfs kfdsim/inject), a hung
 * engine that times out instead of hanging, the rate limit (sdma_mbps) and
 * engines working in parallel. Needs the built-in machine (gfx90a: SDMA
 * v4, count = bytes - 1) and debugfs. TAP. "--hw-ip": only the HW IP
 * queries, on whatever machine is loaded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>
#include "tap.h"

#define TOPO "/sys/class/kfd/kfd/topology/nodes"
#define INJECT "/sys/kernel/debug/kfdsim/inject"
#define PARAMS "/sys/module/amdgpu_kfdsim/parameters/"
#define SDMA_STATE "/sys/kernel/debug/kfdsim/sdma"
#define LONG_NS (60ULL * 1000000000ULL) /* a finished job on a loaded TCG host */
#define SHORT_NS (300ULL * 1000000ULL)	/* a job that must not finish */

#define MiB (1024 * 1024)
#define IB_DWORDS 16384
#define DATA_SIZE (4 * MiB + 64 * 1024)

/* SDMA v4 packets (docs/sdma-facts.md section 4) */
#define HDR(op, sub) ((uint32_t)(op) | (uint32_t)(sub) << 8)
#define OP_NOP 0
#define OP_COPY 1
#define OP_FENCE 5
#define OP_TRAP 6
#define OP_POLL 8
#define OP_FILL 11

struct buf {
	amdgpu_bo_handle bo;
	amdgpu_va_handle vah;
	uint64_t va, size;
	uint8_t *cpu;
};

static amdgpu_device_handle dev;
static int fd;
static struct buf ib, src, dst, fb, ro;
static amdgpu_bo_list_handle list;
static uint32_t ib_next;

/* ---- helpers ------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_file(const char *path, const char *s)
{
	int f = open(path, O_WRONLY), r;

	if (f < 0)
		return -errno;
	r = write(f, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -errno;
	close(f);
	return r;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int f = open(path, O_RDONLY);
	ssize_t n;

	if (f < 0)
		return -errno;
	n = read(f, buf, len - 1);
	close(f);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int inject(const char *rule)
{
	return write_file(INJECT, rule);
}

/*
 * Waits (60 s at most) until no "sdma hang" rule is armed any more: the job
 * just submitted has taken it and hangs its engine. Without this, a loaded
 * host may not have started the job yet, and a later job (another
 * context's, or the next test's) takes the rule and hangs instead.
 */
static int hang_taken(void)
{
	char rules[1024];
	double end = now_s() + 60;

	while (now_s() < end) {
		if (read_file(INJECT, rules, sizeof(rules)))
			return -EIO;
		if (!strstr(rules, "sdma hang"))
			return 0;
		usleep(10 * 1000);
	}
	return -ETIMEDOUT;
}

static int set_param(const char *name, unsigned int v)
{
	char path[128], s[32];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	snprintf(s, sizeof(s), "%u", v);
	return write_file(path, s);
}

static unsigned int get_param(const char *name)
{
	char path[128], s[32];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	return read_file(path, s, sizeof(s)) ? 0 : strtoul(s, NULL, 10);
}

static int map_va(struct buf *b)
{
	int r = amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, b->size, 4096, 0, &b->va,
				      &b->vah, 0);

	return r ?: amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_MAP);
}

static int buf_gtt(struct buf *b, uint64_t size)
{
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = size,
		.phys_alignment = 4096,
		.preferred_heap = AMDGPU_GEM_DOMAIN_GTT,
	};
	void *cpu;
	int r;

	b->size = size;
	r = amdgpu_bo_alloc(dev, &req, &b->bo);
	if (r)
		return r;
	r = amdgpu_bo_cpu_map(b->bo, &cpu);
	if (r)
		return r;
	b->cpu = cpu;
	return map_va(b);
}

static int buf_user(struct buf *b, uint64_t size)
{
	void *p;
	int r;

	b->size = size;
	if (posix_memalign(&p, 4096, size))
		return -ENOMEM;
	b->cpu = p;
	memset(p, 0, size);
	r = amdgpu_create_bo_from_user_mem(dev, p, size, &b->bo);
	return r ?: map_va(b);
}

/* an IB slot of @n dwords (256-byte aligned, as HW_IP_INFO asks) */
static uint64_t ib_put(const uint32_t *pk, uint32_t n)
{
	uint32_t off;

	if (ib_next + n > IB_DWORDS)
		ib_next = 0;
	off = ib_next;
	ib_next = (ib_next + n + 63) & ~63u;
	memcpy(ib.cpu + off * 4, pk, n * 4);
	return ib.va + off * 4;
}

static int submit_at(amdgpu_context_handle ctx, uint32_t ip, uint32_t ring, uint64_t ib_va,
		     uint32_t n, struct amdgpu_cs_fence *dep, uint64_t *seq)
{
	struct amdgpu_cs_ib_info ibi = { .ib_mc_address = ib_va, .size = n };
	struct amdgpu_cs_request req = {
		.ip_type = ip,
		.ring = ring,
		.resources = list,
		.number_of_ibs = 1,
		.ibs = &ibi,
		.number_of_dependencies = dep ? 1 : 0,
		.dependencies = dep,
	};
	int r = amdgpu_cs_submit(ctx, 0, &req, 1);

	*seq = req.seq_no;
	return r;
}

static int submit(amdgpu_context_handle ctx, uint32_t ring, const uint32_t *pk, uint32_t n,
		  uint64_t *seq)
{
	return submit_at(ctx, AMDGPU_HW_IP_DMA, ring, ib_put(pk, n), n, NULL, seq);
}

/* query_fence_status's return; *expired as it sets it */
static int wait_seq(amdgpu_context_handle ctx, uint32_t ring, uint64_t seq, uint64_t ns,
		    uint32_t *expired)
{
	struct amdgpu_cs_fence f = {
		.context = ctx,
		.ip_type = AMDGPU_HW_IP_DMA,
		.ring = ring,
		.fence = seq,
	};

	*expired = 0;
	return amdgpu_cs_query_fence_status(&f, ns, 0, expired);
}

/* submit on ring 0 and wait: 0, a job error, or -EBUSY if it did not end */
static int run(amdgpu_context_handle ctx, const uint32_t *pk, uint32_t n)
{
	uint32_t expired;
	uint64_t seq;
	int r = submit(ctx, 0, pk, n, &seq);

	if (r)
		return r;
	r = wait_seq(ctx, 0, seq, LONG_NS, &expired);
	return r ?: expired ? 0 : -EBUSY;
}

static uint32_t *pk_copy(uint32_t *p, uint64_t dst_va, uint64_t src_va, uint32_t count)
{
	*p++ = HDR(OP_COPY, 0);
	*p++ = count;
	*p++ = 0;
	*p++ = (uint32_t)src_va;
	*p++ = src_va >> 32;
	*p++ = (uint32_t)dst_va;
	*p++ = dst_va >> 32;
	return p;
}

static uint32_t *pk_fill(uint32_t *p, uint64_t va, uint32_t data, uint32_t fillsize,
			 uint32_t bytes)
{
	*p++ = HDR(OP_FILL, 0) | fillsize << 30;
	*p++ = (uint32_t)va;
	*p++ = va >> 32;
	*p++ = data;
	*p++ = bytes - 1;
	return p;
}

static uint32_t *pk_fence(uint32_t *p, uint64_t va, uint32_t v)
{
	*p++ = HDR(OP_FENCE, 0);
	*p++ = (uint32_t)va;
	*p++ = va >> 32;
	*p++ = v;
	return p;
}

/* poll the dword at @va until it == @ref (retry count 0xFFF: forever) */
static uint32_t *pk_poll(uint32_t *p, uint64_t va, uint32_t ref)
{
	*p++ = HDR(OP_POLL, 0) | 3u << 28 | 1u << 31;
	*p++ = (uint32_t)va;
	*p++ = va >> 32;
	*p++ = ref;
	*p++ = 0xffffffff;
	*p++ = 10 | 0xfffu << 16;
	return p;
}

static volatile uint32_t *fb32(uint32_t i)
{
	return (volatile uint32_t *)fb.cpu + i;
}

static uint32_t query2(amdgpu_context_handle ctx)
{
	uint64_t flags = ~0ULL;

	return amdgpu_cs_query_reset_state2(ctx, &flags) ? ~0u : (uint32_t)flags;
}

static amdgpu_context_handle new_ctx(void)
{
	amdgpu_context_handle ctx = NULL;

	if (amdgpu_cs_ctx_create(dev, &ctx))
		return NULL;
	return ctx;
}

/* raw DRM_AMDGPU_CTX on @f */
static int ctx_raw(int f, uint32_t op, uint32_t flags, uint32_t id, int32_t prio, uint32_t *out)
{
	union drm_amdgpu_ctx a = { .in = { .op = op, .flags = flags, .ctx_id = id, .priority = prio } };
	int r = drmCommandWriteRead(f, DRM_AMDGPU_CTX, &a, sizeof(a));

	if (out)
		*out = a.out.alloc.ctx_id;
	return r;
}

/* raw DRM_AMDGPU_CS on @f with the given chunks */
static int cs_raw(int f, uint32_t ctx_id, uint32_t list_handle, struct drm_amdgpu_cs_chunk *chunks,
		  uint32_t n)
{
	uint64_t ptrs[4];
	union drm_amdgpu_cs cs = { .in = { .ctx_id = ctx_id, .bo_list_handle = list_handle,
					   .num_chunks = n, .chunks = (uintptr_t)ptrs } };
	uint32_t i;

	for (i = 0; i < n; i++)
		ptrs[i] = (uintptr_t)&chunks[i];
	return drmCommandWriteRead(f, DRM_AMDGPU_CS, &cs, sizeof(cs));
}

/* ---- HW IP queries, on every GPU node ---------------------------------- */

static uint64_t prop(const char *node, const char *key)
{
	char path[400], k[64];
	unsigned long long v, out = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/properties", node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (!strcmp(k, key))
			out = v;
	fclose(f);
	return out;
}

/* SDMA IP versions (major << 16 | minor << 8 | rev) of the GPUs in the captures */
static uint32_t sdma_ip_version(uint64_t gfx)
{
	switch (gfx) {
	case 90006: return 0x040200;	/* Vega20 */
	case 90008: return 0x040202;	/* MI100 */
	case 90010: return 0x040400;	/* MI200 */
	case 90402: return 0x040402;	/* MI300 */
	case 90500: return 0x040405;	/* MI350 */
	case 100302: return 0x050200;	/* RDNA2 */
	case 110002: return 0x060000;	/* RDNA3 */
	default: return 0;		/* not checked */
	}
}

/* GC IP versions of the GPUs in the captures (0: not checked) */
static uint32_t gc_ip_version(uint64_t gfx)
{
	switch (gfx) {
	case 90006: return 0x090400;	/* Vega20 */
	case 90008: return 0x090401;	/* MI100 */
	case 90010: return 0x090402;	/* MI200 */
	case 90402: return 0x090403;	/* MI300 */
	case 100302: return 0x0a0302;	/* RDNA2 */
	case 110002: return 0x0b0002;	/* RDNA3 */
	default: return 0;
	}
}

/*
 * GFX and COMPUTE (the GFX IP block, which libdrm 2.4.12x+ asks about at
 * initialisation): one instance, or a GC 9.4.3 partition's XCCs; no GFX
 * ring on the compute-only parts; 4 COMPUTE rings (the context's entities)
 */
static void test_hw_ip_gfx(amdgpu_device_handle d, const char *path, const char *node,
			   uint64_t gfx)
{
	uint32_t gc = gc_ip_version(gfx), want = gfx / 100 == 904 ? prop(node, "num_xcc") : 1;
	int compute_only = gfx == 90008 || gfx == 90010 || gfx / 100 == 904 || gfx / 100 == 905;
	struct drm_amdgpu_info_hw_ip info;
	uint32_t count = 0, v;
	int r;

	r = amdgpu_query_hw_ip_count(d, AMDGPU_HW_IP_GFX, &count);
	ok(r == 0 && count == want, "%s: HW_IP_COUNT GFX %u (want %u) (%d)", path, count, want, r);
	r = amdgpu_query_hw_ip_count(d, AMDGPU_HW_IP_COMPUTE, &count);
	ok(r == 0 && count == want, "%s: HW_IP_COUNT COMPUTE %u (want %u) (%d)", path, count, want, r);
	memset(&info, 0, sizeof(info));
	r = amdgpu_query_hw_ip_info(d, AMDGPU_HW_IP_GFX, 0, &info);
	memcpy(&v, (char *)&info + 28, sizeof(v));
	ok(r == 0 && info.hw_ip_version_major == gfx / 10000 && info.ib_start_alignment == 32 &&
	   info.ib_size_alignment == 32 && info.available_rings == (compute_only ? 0u : 1u) &&
	   (!gc || v == gc),
	   "%s: HW_IP_INFO GFX v%u.%u, IB alignment 32/32, available_rings 0x%x, "
	   "ip_discovery_version 0x%06x", path, info.hw_ip_version_major,
	   info.hw_ip_version_minor, info.available_rings, v);
	r = amdgpu_query_hw_ip_info(d, AMDGPU_HW_IP_COMPUTE, 0, &info);
	ok(r == 0 && info.available_rings == 0xf && info.ib_start_alignment == 32,
	   "%s: HW_IP_INFO COMPUTE available_rings 0x%x", path, info.available_rings);
	r = amdgpu_query_hw_ip_info(d, AMDGPU_HW_IP_GFX, 1, &info);
	ok(r == -EINVAL, "%s: HW_IP_INFO GFX instance 1: -EINVAL (%d)", path, r);
}

static void test_hw_ip(const char *node)
{
	uint64_t minor = prop(node, "drm_render_minor"), gfx = prop(node, "gfx_target_version");
	uint32_t engines = prop(node, "num_sdma_engines") + prop(node, "num_sdma_xgmi_engines");
	struct drm_amdgpu_info_hw_ip info;
	uint32_t count = 0, major, min;
	amdgpu_device_handle d;
	char path[64];
	int f, r;

	snprintf(path, sizeof(path), "/dev/dri/renderD%" PRIu64, minor);
	f = open(path, O_RDWR | O_CLOEXEC);
	if (!ok(f >= 0 && !amdgpu_device_initialize(f, &major, &min, &d), "%s: initialise", path)) {
		if (f >= 0)
			close(f);
		return;
	}
	r = amdgpu_query_hw_ip_count(d, AMDGPU_HW_IP_DMA, &count);
	if (engines)
		ok(r == 0 && count == engines,
		   "%s: HW_IP_COUNT DMA %u == num_sdma_engines + num_sdma_xgmi_engines %u (%d)",
		   path, count, engines, r);
	else
		ok(r == -EINVAL, "%s: no SDMA engines: HW_IP_COUNT DMA -EINVAL (%d)", path, r);
	memset(&info, 0, sizeof(info));
	r = amdgpu_query_hw_ip_info(d, AMDGPU_HW_IP_DMA, 0, &info);
	if (engines)
		ok(r == 0 && info.hw_ip_version_major == (gfx / 10000 == 9 ? 4 : gfx / 10000 - 5) &&
			   info.ib_start_alignment == 256 && info.ib_size_alignment == 4 &&
			   info.available_rings == (engines >= 2 ? 3u : 1u),
		   "%s: HW_IP_INFO DMA v%u.%u for gfx %" PRIu64
		   ", IB alignment 256/4, available_rings 0x%x",
		   path, info.hw_ip_version_major, info.hw_ip_version_minor, gfx,
		   info.available_rings);
	if (engines && sdma_ip_version(gfx)) {
		/* 6.12's ip_discovery_version is libdrm 2.4.114's _pad (offset 28) */
		uint32_t v;

		memcpy(&v, (char *)&info + 28, sizeof(v));
		ok(v == sdma_ip_version(gfx), "%s: HW_IP_INFO ip_discovery_version 0x%06x (want 0x%06x)",
		   path, v, sdma_ip_version(gfx));
	}
	r = amdgpu_query_hw_ip_info(d, AMDGPU_HW_IP_DMA, 1, &info);
	ok(r == -EINVAL, "%s: HW_IP_INFO DMA instance 1: -EINVAL (%d)", path, r);
	test_hw_ip_gfx(d, path, node, gfx);
	amdgpu_device_deinitialize(d);
	close(f);
}

static int for_each_gpu(void (*fn)(const char *node), char *first, size_t len)
{
	struct dirent **ents;
	int i, n, gpus = 0;

	n = scandir(TOPO, &ents, NULL, versionsort);
	if (n < 0)
		return 0;
	for (i = 0; i < n; i++) {
		char node[300];

		snprintf(node, sizeof(node), "%s/%s", TOPO, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && prop(node, "drm_render_minor") &&
		    prop(node, "simd_count")) {
			if (!gpus++ && first)
				snprintf(first, len, "%s", node);
			if (fn)
				fn(node);
		}
		free(ents[i]);
	}
	free(ents);
	return gpus;
}

/* ---- contexts ------------------------------------------------------------ */

static void test_ctx(const char *path)
{
	uint32_t id = 0, id2 = 0;
	int f = open(path, O_RDWR | O_CLOEXEC), r;

	if (!ok(f >= 0, "%s: second open for raw CTX ioctls", path))
		return;
	r = ctx_raw(f, AMDGPU_CTX_OP_ALLOC_CTX, 0, 0, 0, &id);
	ok(r == 0 && id == 1, "CTX ALLOC on a new file: id 1 (%d, %u)", r, id);
	r = ctx_raw(f, AMDGPU_CTX_OP_ALLOC_CTX, 0, 0, 12345, &id2);
	ok(r == 0 && id2 == 2, "CTX ALLOC with an invalid priority: NORMAL, id 2 (%d, %u)", r, id2);
	ok(ctx_raw(f, AMDGPU_CTX_OP_ALLOC_CTX, 1, 0, 0, NULL) == -EINVAL, "CTX ALLOC flags 1: -EINVAL");
	ok(ctx_raw(f, AMDGPU_CTX_OP_QUERY_STATE2, 0, 77, 0, NULL) == -EINVAL,
	   "CTX QUERY_STATE2 of an unknown id: -EINVAL");
	ok(ctx_raw(f, 99, 0, id, 0, NULL) == -EINVAL, "CTX op 99: -EINVAL");
	ok(ctx_raw(f, AMDGPU_CTX_OP_FREE_CTX, 0, id, 0, NULL) == 0, "CTX FREE");
	ok(ctx_raw(f, AMDGPU_CTX_OP_FREE_CTX, 0, id, 0, NULL) == -EINVAL, "CTX FREE again: -EINVAL");
	r = ctx_raw(f, AMDGPU_CTX_OP_ALLOC_CTX, 0, 0, 0, &id);
	ok(r == 0 && id == 1, "CTX ALLOC reuses the smallest free id 1 (%d, %u)", r, id);
	close(f); /* context 1 and 2 are freed with the file */
}

/* ---- copies, fills, fences, sequence numbers ------------------------------ */

static void test_copy(amdgpu_context_handle ctx)
{
	const uint32_t n = 3 * 4096 + 123;
	uint32_t pk[64], *p, i, bad = 0, expired;
	uint64_t seq = 0, seq2 = 0, seq3 = 0;
	int r;

	for (i = 0; i < src.size; i++)
		src.cpu[i] = (uint8_t)(i * 7 + 3);
	memset(dst.cpu, 0xee, dst.size);
	*fb32(0) = 0;
	p = pk_copy(pk, dst.va + 7, src.va + 5, n - 1);
	p = pk_fence(p, fb.va, 0xc0ffee01);
	while ((p - pk) % 8)
		*p++ = 0; /* NOP padding */
	r = submit(ctx, 0, pk, p - pk, &seq);
	ok(r == 0 && seq == 1, "CS: COPY_LINEAR + FENCE, first sequence number 1 (%d, %" PRIu64 ")",
	   r, seq);
	r = wait_seq(ctx, 0, seq, LONG_NS, &expired);
	ok(r == 0 && expired, "WAIT_CS: signaled (%d, expired %u)", r, expired);
	for (i = 0; i < n; i++)
		bad += dst.cpu[7 + i] != src.cpu[5 + i];
	ok(!bad, "%u bytes copied (count = bytes - 1), %u wrong", n, bad);
	ok(dst.cpu[6] == 0xee && dst.cpu[7 + n] == 0xee,
	   "the bytes before and after the range are untouched (0x%02x 0x%02x)", dst.cpu[6],
	   dst.cpu[7 + n]);
	ok(*fb32(0) == 0xc0ffee01, "FENCE wrote 0x%x", *fb32(0));

	r = submit(ctx, 0, pk, p - pk, &seq2);
	r = r ?: submit(ctx, 1, pk, p - pk, &seq3);
	ok(r == 0 && seq2 == 2 && seq3 == 1,
	   "sequence numbers per entity: ring 0 next %" PRIu64 ", ring 1 first %" PRIu64, seq2, seq3);
	r = wait_seq(ctx, 1, seq3, LONG_NS, &expired);
	r = r ?: wait_seq(ctx, 0, ~0ULL, LONG_NS, &expired);
	ok(r == 0 && expired, "WAIT_CS of ring 1 and of ring 0's last (~0) (%d)", r);

	/* the largest packet: 4 MiB, count 0x3FFFFF */
	memset(dst.cpu, 0xee, dst.size);
	p = pk_copy(pk, dst.va, src.va + 1, 4 * MiB - 1);
	r = run(ctx, pk, p - pk);
	for (bad = 0, i = 0; i < 4 * MiB; i++)
		bad += dst.cpu[i] != src.cpu[1 + i];
	ok(r == 0 && !bad && dst.cpu[4 * MiB] == 0xee,
	   "one 4 MiB COPY_LINEAR (count 0x3FFFFF): %d, %u wrong, next byte 0x%02x", r, bad,
	   dst.cpu[4 * MiB]);

	/* fills: dword pattern from an odd address, then a byte fill */
	memset(dst.cpu, 0xee, dst.size);
	p = pk_fill(pk, dst.va + 2, 0x11223344, 2, 4096 + 6);
	p = pk_fill(p, dst.va + 8192, 0x777777ab, 0, 100);
	r = run(ctx, pk, p - pk);
	for (bad = 0, i = 0; i < 4096 + 6; i++)
		bad += dst.cpu[2 + i] != (uint8_t)(0x11223344 >> (8 * (i % 4)));
	ok(r == 0 && !bad && dst.cpu[1] == 0xee && dst.cpu[2 + 4096 + 6] == 0xee,
	   "CONST_FILL dword 0x11223344 over 4102 bytes from offset 2 (%d, %u wrong)", r, bad);
	for (bad = 0, i = 0; i < 100; i++)
		bad += dst.cpu[8192 + i] != 0xab;
	ok(!bad && dst.cpu[8192 + 100] == 0xee, "CONST_FILL byte 0xab over 100 bytes (%u wrong)", bad);

	/* NOP with a count skips its dwords (here: what would be illegal); TRAP */
	p = pk;
	*p++ = HDR(OP_NOP, 0) | 2u << 16;
	*p++ = 0xffffffff;
	*p++ = 0xffffffff;
	*p++ = HDR(OP_TRAP, 0);
	*p++ = 0;
	p = pk_fence(p, fb.va, 0xc0ffee02);
	r = run(ctx, pk, p - pk);
	ok(r == 0 && *fb32(0) == 0xc0ffee02, "NOP count 2 skips 2 dwords, TRAP, FENCE (%d)", r);
}

/* ---- asynchronous execution: WAIT_CS waits, dependencies ------------------- */

static void test_async(amdgpu_context_handle ctx)
{
	struct amdgpu_cs_fence dep = { .context = ctx, .ip_type = AMDGPU_HW_IP_DMA, .ring = 0 };
	uint32_t pk[32], *p, expired;
	uint64_t seq, seq_b;
	int r;

	*fb32(1) = 0;
	*fb32(2) = 0;
	*fb32(3) = 0;
	p = pk_poll(pk, fb.va + 4, 5);
	p = pk_fence(p, fb.va + 8, 7);
	r = submit(ctx, 0, pk, p - pk, &seq);
	dep.fence = seq;
	p = pk_fence(pk, fb.va + 12, 9);
	r = r ?: submit_at(ctx, AMDGPU_HW_IP_DMA, 1, ib_put(pk, p - pk), p - pk, &dep, &seq_b);
	ok(r == 0, "CS: POLL_REGMEM on a dword, and a job on ring 1 depending on it (%d)", r);
	r = wait_seq(ctx, 0, seq, SHORT_NS, &expired);
	ok(r == 0 && !expired && *fb32(2) == 0,
	   "WAIT_CS with a 300 ms timeout while the poll waits: status busy (%d, expired %u)", r,
	   expired);
	r = wait_seq(ctx, 1, seq_b, SHORT_NS, &expired);
	ok(r == 0 && !expired && *fb32(3) == 0, "the dependent job has not run (%d, expired %u)", r,
	   expired);
	*fb32(1) = 5;
	r = wait_seq(ctx, 0, seq, LONG_NS, &expired);
	ok(r == 0 && expired && *fb32(2) == 7, "CPU writes the value: the poll ends, FENCE 7 (%d)", r);
	r = wait_seq(ctx, 1, seq_b, LONG_NS, &expired);
	ok(r == 0 && expired && *fb32(3) == 9, "then the dependent job runs: FENCE 9 (%d)", r);
}

/* the largest IB the kernel takes: 0xFFFFF dwords of NOPs, in the source BO */
static void test_big_ib(amdgpu_context_handle ctx)
{
	uint32_t expired;
	uint64_t seq;
	double t;
	int r;

	memset(src.cpu, 0, 0xFFFFF * 4);
	t = now_s();
	r = submit_at(ctx, AMDGPU_HW_IP_DMA, 0, src.va, 0xFFFFF, NULL, &seq);
	r = r ?: wait_seq(ctx, 0, seq, LONG_NS, &expired);
	t = now_s() - t;
	ok(r == 0 && expired, "an IB of 0xFFFFF NOP dwords runs (%d, %.2f s)", r, t);
}

/* ---- arguments the kernel refuses ----------------------------------------- */

static void test_errors(amdgpu_context_handle ctx, uint32_t list_handle)
{
	struct drm_amdgpu_cs_chunk_ib cib = { .va_start = ib.va, .ib_bytes = 8,
					      .ip_type = AMDGPU_HW_IP_DMA };
	struct drm_amdgpu_cs_chunk_fence cf = { 0 };
	struct drm_amdgpu_bo_list_in bl = { 0 };
	struct drm_amdgpu_cs_chunk ch[2] = {
		{ .chunk_id = AMDGPU_CHUNK_ID_IB, .length_dw = sizeof(cib) / 4,
		  .chunk_data = (uintptr_t)&cib },
	};
	union drm_amdgpu_wait_cs w = { .in = { .handle = 1, .ip_type = AMDGPU_HW_IP_DMA,
					       .ctx_id = 4000 } };
	uint32_t pk[8] = { 0 }, expired;
	uint64_t seq;
	int r;

	r = submit(ctx, 2, pk, 8, &seq);
	ok(r == -EINVAL, "CS on DMA ring 2 (a context has 2 DMA entities): -EINVAL (%d)", r);
	r = submit_at(ctx, AMDGPU_HW_IP_GFX, 0, ib_put(pk, 8), 8, NULL, &seq);
	ok(r == -EINVAL, "CS on the GFX IP: -EINVAL (%d)", r);
	r = submit_at(ctx, AMDGPU_HW_IP_DMA, 0, ib.va, 0x100000, NULL, &seq);
	ok(r == -EINVAL, "CS of an IB of 0x100000 dwords (cap 0xFFFFF): -EINVAL (%d)", r);
	r = wait_seq(ctx, 0, 1000, 0, &expired);
	ok(r == -EINVAL, "WAIT_CS of a sequence number not submitted yet: -EINVAL (%d)", r);
	r = wait_seq(ctx, 2, 1, 0, &expired);
	ok(r == -EINVAL, "WAIT_CS on ring 2: -EINVAL (%d)", r);
	r = drmCommandWriteRead(fd, DRM_AMDGPU_WAIT_CS, &w, sizeof(w));
	ok(r == -EINVAL, "WAIT_CS of an unknown context: -EINVAL (%d)", r);

	r = cs_raw(fd, 4000, 0, ch, 1);
	ok(r == -EINVAL, "raw CS of an unknown context: -EINVAL (%d)", r);
	r = cs_raw(fd, 1, 0, ch, 0);
	ok(r == -EINVAL, "raw CS without chunks: -EINVAL (%d)", r);
	r = cs_raw(fd, 1, 9999, ch, 1);
	ok(r == -ENOENT, "raw CS with an unknown BO list: -ENOENT (%d)", r);
	ch[1].chunk_id = AMDGPU_CHUNK_ID_BO_HANDLES;
	ch[1].length_dw = sizeof(bl) / 4;
	ch[1].chunk_data = (uintptr_t)&bl;
	r = cs_raw(fd, 1, list_handle, ch, 2);
	ok(r == -EINVAL, "raw CS with a BO list and a BO_HANDLES chunk: -EINVAL (%d)", r);
	ch[1].chunk_id = AMDGPU_CHUNK_ID_FENCE;
	ch[1].length_dw = sizeof(cf) / 4;
	ch[1].chunk_data = (uintptr_t)&cf;
	r = cs_raw(fd, 1, 0, ch, 2);
	ok(r == -EINVAL, "raw CS with a user fence chunk (not modelled): -EINVAL (%d)", r);
	ch[0].length_dw = 2;
	r = cs_raw(fd, 1, 0, ch, 1);
	ok(r == -EINVAL, "raw CS with an IB chunk shorter than its struct: -EINVAL (%d)", r);
}

/* ---- what hardware faults on ------------------------------------------------ */

/* a job that fails with @want; the context is guilty afterwards if @guilty */
static void expect_job_error(const char *what, const uint32_t *pk, uint32_t n, int want,
			     int guilty)
{
	amdgpu_context_handle ctx = new_ctx();
	uint32_t flags, nop[8] = { 0 };
	uint64_t seq;
	int r = ctx ? run(ctx, pk, n) : -1;

	ok(r == want, "%s: fence error %d (want %d)", what, r, want);
	flags = query2(ctx);
	r = submit(ctx, 0, nop, 8, &seq);
	if (guilty)
		ok((flags & (AMDGPU_CTX_QUERY2_FLAGS_GUILTY | AMDGPU_CTX_QUERY2_FLAGS_RESET)) ==
				   (AMDGPU_CTX_QUERY2_FLAGS_GUILTY | AMDGPU_CTX_QUERY2_FLAGS_RESET) &&
			   r == -ECANCELED,
		   "  context guilty after a reset (flags 0x%x), its next CS -ECANCELED (%d)", flags, r);
	else
		ok(!(flags & AMDGPU_CTX_QUERY2_FLAGS_GUILTY) && r == 0,
		   "  context not guilty (flags 0x%x), its next CS works (%d)", flags, r);
	amdgpu_cs_ctx_free(ctx);
}

static void test_faults(void)
{
	uint32_t pk[16], *p;
	uint64_t unmapped = 0x700000000000ULL;

	pk[0] = HDR(3, 0); /* opcode 3 does not exist */
	expect_job_error("unknown opcode 3", pk, 1, -ETIME, 1);
	pk_copy(pk, dst.va, src.va, 4 * MiB); /* count = bytes: bit 22 set */
	expect_job_error("COPY_LINEAR count 0x400000 (bytes, not bytes - 1)", pk, 7, -ETIME, 1);
	pk_copy(pk, dst.va, src.va, 15);
	expect_job_error("COPY_LINEAR cut by the end of the IB (4 of 7 dwords)", pk, 4, -ETIME, 1);
	p = pk_copy(pk, dst.va, src.va, 15);
	pk[0] |= 1u << 8; /* sub-op TILED */
	expect_job_error("COPY sub-op TILED (not modelled)", pk, p - pk, -ETIME, 1);
	p = pk_fence(pk, fb.va + 2, 1);
	expect_job_error("FENCE to a misaligned address", pk, p - pk, -ETIME, 1);
	p = pk_copy(pk, dst.va, unmapped, 4095);
	expect_job_error("COPY_LINEAR from an unmapped VA (VM fault)", pk, p - pk, -EFAULT, 0);
	p = pk_copy(pk, unmapped, src.va, 4095);
	expect_job_error("COPY_LINEAR to an unmapped VA", pk, p - pk, -EFAULT, 0);
	p = pk_copy(pk, dst.va, ro.va + 4000, 4095); /* ro is the highest mapping */
	expect_job_error("COPY_LINEAR reading past the end of the last mapping", pk, p - pk, -EFAULT,
			 0);
	p = pk_copy(pk, ro.va, src.va, 4095);
	expect_job_error("COPY_LINEAR to a read-only mapping", pk, p - pk, -EFAULT, 0);
	p = pk_fill(pk, ro.va, 0, 0, 4);
	expect_job_error("CONST_FILL of a read-only mapping", pk, p - pk, -EFAULT, 0);
	p = pk_copy(pk, dst.va, ro.va, 4095);
	expect_job_error("COPY_LINEAR from a read-only mapping works", pk, p - pk, 0, 0);

	{
		amdgpu_context_handle ctx = new_ctx();
		uint32_t expired;
		uint64_t seq;
		int r = submit_at(ctx, AMDGPU_HW_IP_DMA, 0, unmapped, 8, NULL, &seq);

		r = r ?: wait_seq(ctx, 0, seq, LONG_NS, &expired);
		ok(r == -EFAULT, "an IB at an unmapped VA: fence error -EFAULT (%d)", r);
		amdgpu_cs_ctx_free(ctx);
	}
}

/* ---- injected faults, hung engines, resets ------------------------------------ */

static void test_inject(void)
{
	amdgpu_context_handle ctx = new_ctx(), other = new_ctx();
	uint32_t nop[8] = { 0 }, expired, flags;
	char rules[256];
	uint64_t seq;
	double t;
	int r;

	r = inject("cs entry EAGAIN 3");
	r = r ?: submit(ctx, 0, nop, 8, &seq);
	ok(r == 0 && !read_file(INJECT, rules, sizeof(rules)) && !rules[0],
	   "cs entry EAGAIN x3: libdrm repeats the CS until it passes (%d, rules left '%s')", r,
	   rules);
	inject("cs entry ECANCELED");
	r = submit(ctx, 0, nop, 8, &seq);
	ok(r == -ECANCELED, "cs entry ECANCELED: the CS fails with -ECANCELED (%d)", r);

	inject("sdma job EFAULT");
	r = run(ctx, nop, 8);
	ok(r == -EFAULT, "sdma job EFAULT: fence error -EFAULT (%d)", r);
	inject("sdma job ECANCELED");
	r = run(ctx, nop, 8);
	ok(r == -ECANCELED && !(query2(ctx) & AMDGPU_CTX_QUERY2_FLAGS_GUILTY),
	   "sdma job ECANCELED: fence error -ECANCELED, context not guilty (%d)", r);
	inject("sdma job ETIME");
	r = run(ctx, nop, 8);
	flags = query2(ctx);
	ok(r == -ETIME && (flags & AMDGPU_CTX_QUERY2_FLAGS_GUILTY),
	   "sdma job ETIME: fence error -ETIME, context guilty (%d, flags 0x%x)", r, flags);
	r = submit(ctx, 0, nop, 8, &seq);
	ok(r == -ECANCELED, "  the guilty context's next CS: -ECANCELED (%d)", r);
	flags = query2(other);
	ok(flags == AMDGPU_CTX_QUERY2_FLAGS_RESET,
	   "  another context sees the reset, not guilty (flags 0x%x)", flags);
	amdgpu_cs_ctx_free(ctx);
	amdgpu_cs_ctx_free(other);

	/* a hung engine: WAIT_CS times out, an injected reset ends the job */
	ctx = new_ctx();
	other = new_ctx();
	inject("sdma hang ETIME");
	r = submit(ctx, 0, nop, 8, &seq);
	r = r ?: hang_taken();
	t = now_s();
	r = r ?: wait_seq(ctx, 0, seq, SHORT_NS, &expired);
	t = now_s() - t;
	ok(r == 0 && !expired && t >= 0.25,
	   "sdma hang: WAIT_CS with a 300 ms timeout returns busy after %.2f s (%d)", t, r);
	r = run(other, nop, 8);
	ok(r == 0, "  another context's job runs on another engine meanwhile (%d)", r);
	r = write_file(INJECT, "reset");
	r = r ?: wait_seq(ctx, 0, seq, LONG_NS, &expired);
	flags = query2(ctx);
	ok(r == -ETIME && flags == (AMDGPU_CTX_QUERY2_FLAGS_GUILTY | AMDGPU_CTX_QUERY2_FLAGS_RESET),
	   "  \"reset\": the hung job ends with -ETIME, its context guilty (%d, flags 0x%x)", r,
	   flags);
	amdgpu_cs_ctx_free(ctx);
	amdgpu_cs_ctx_free(other);

	/* freeing the context ends a hung job */
	ctx = new_ctx();
	inject("sdma hang ETIME");
	r = submit(ctx, 0, nop, 8, &seq);
	r = r ?: hang_taken(); /* it hangs now */
	r = r ?: wait_seq(ctx, 0, seq, SHORT_NS, &expired);
	t = now_s();
	amdgpu_cs_ctx_free(ctx);
	ctx = new_ctx();
	r = r ?: run(ctx, nop, 8);
	r = r ?: run(ctx, nop, 8);
	t = now_s() - t;
	ok(r == 0 && t < 20, "sdma hang, context freed: later jobs run (%d, %.2f s)", r, t);
	amdgpu_cs_ctx_free(ctx);

	/* the lockup timeout ends a hung job by itself */
	{
		unsigned int old = get_param("sdma_lockup_ms");

		ctx = new_ctx();
		set_param("sdma_lockup_ms", 500);
		inject("sdma hang ETIME");
		t = now_s();
		r = run(ctx, nop, 8);
		t = now_s() - t;
		ok(r == -ETIME && t >= 0.45 && t < 30,
		   "sdma hang with sdma_lockup_ms 500: -ETIME after %.2f s (%d)", t, r);
		set_param("sdma_lockup_ms", old);
		amdgpu_cs_ctx_free(ctx);
	}
	inject("clear");
}

/* ---- the rate limit and parallel engines ------------------------------------------- */

static void test_rate(void)
{
	amdgpu_context_handle ctx = new_ctx();
	unsigned int old = get_param("sdma_mbps"), old_lockup = get_param("sdma_lockup_ms");
	uint32_t pk[16], *p, expired, expired0 = 0, expired1 = 0;
	uint64_t s0, s1;
	double t1, t2, tp;
	int r;

	pk_copy(pk, dst.va, src.va, 2 * MiB - 1);
	set_param("sdma_mbps", 20);
	t1 = now_s();
	r = run(ctx, pk, 7);
	t1 = now_s() - t1;
	ok(r == 0 && t1 >= 0.1, "sdma_mbps 20: 2 MiB take %.3f s (>= 0.105)", t1);
	t2 = now_s();
	r = submit(ctx, 0, pk, 7, &s0);
	r = r ?: submit(ctx, 0, pk, 7, &s1);
	r = r ?: wait_seq(ctx, 0, s1, LONG_NS, &expired);
	t2 = now_s() - t2;
	ok(r == 0 && expired && t2 >= 0.2,
	   "two such jobs on one ring run one after the other: %.3f s (>= 0.21)", t2);
	/*
	 * Two engines, shown by what they did, not by a time a loaded host may
	 * stretch: ring 0's job polls for a dword that only ring 1's job (a
	 * rate-limited copy, then a FENCE) writes, so it ends only if ring 1's
	 * job runs meanwhile, on another engine. No lockup timeout meanwhile
	 * (the poll waits as long as the host is slow); a "reset" ends a poll
	 * left waiting.
	 */
	set_param("sdma_lockup_ms", 0);
	*fb32(8) = 0;
	*fb32(9) = 0;
	p = pk_poll(pk, fb.va + 32, 0x77);
	p = pk_fence(p, fb.va + 36, 0x78);
	tp = now_s();
	r = submit(ctx, 0, pk, p - pk, &s0);
	p = pk_copy(pk, dst.va, src.va, 2 * MiB - 1);
	p = pk_fence(p, fb.va + 32, 0x77);
	r = r ?: submit(ctx, 1, pk, p - pk, &s1);
	r = r ?: wait_seq(ctx, 1, s1, LONG_NS, &expired1);
	if (!r && expired1)
		r = wait_seq(ctx, 0, s0, LONG_NS, &expired0);
	tp = now_s() - tp;
	ok(r == 0 && expired0 && expired1 && *fb32(9) == 0x78,
	   "rings 0 and 1 run on two engines: ring 0's job waits for ring 1's FENCE, both end "
	   "(%d, expired %u %u; %.3f s)", r, expired0, expired1, tp);
	if (!expired0 || !expired1)
		write_file(INJECT, "reset");
	set_param("sdma_lockup_ms", old_lockup);
	amdgpu_cs_ctx_free(ctx);

	/* the lockup timeout is about the modelled time, not TCG's slowness */
	{
		ctx = new_ctx();
		pk_copy(pk, dst.va, src.va, 4 * MiB - 1);
		set_param("sdma_mbps", 0);
		set_param("sdma_lockup_ms", 1);
		t1 = now_s();
		r = run(ctx, pk, 7);
		t1 = now_s() - t1;
		ok(r == 0, "unthrottled, sdma_lockup_ms 1: a 4 MiB copy taking %.3f s of wall time is no hang (%d)",
		   t1, r);
		pk_copy(pk, dst.va, src.va, 2 * MiB - 1);
		set_param("sdma_mbps", 20);
		set_param("sdma_lockup_ms", 50);
		r = run(ctx, pk, 7);
		ok(r == -ETIME, "sdma_mbps 20, sdma_lockup_ms 50: 2 MiB would take 105 ms: -ETIME (%d)", r);
		set_param("sdma_lockup_ms", old_lockup);
		amdgpu_cs_ctx_free(ctx);
	}
	set_param("sdma_mbps", old);
}

/* ---- file close with a job still hung --------------------------------------- */

static void test_close(const char *path)
{
	int status = -1;
	double t = now_s();
	pid_t pid = fork();

	if (!pid) {
		/* raw ioctls: libdrm would hand the child the parent's device and file */
		struct drm_amdgpu_cs_chunk_ib cib = { .ib_bytes = 32, .ip_type = AMDGPU_HW_IP_DMA };
		struct drm_amdgpu_cs_chunk ch = { .chunk_id = AMDGPU_CHUNK_ID_IB,
						  .length_dw = sizeof(cib) / 4,
						  .chunk_data = (uintptr_t)&cib };
		int f = open(path, O_RDWR | O_CLOEXEC);
		uint32_t id = 0;

		if (f < 0 || ctx_raw(f, AMDGPU_CTX_OP_ALLOC_CTX, 0, 0, 0, &id))
			_exit(2);
		inject("sdma hang ETIME");
		if (cs_raw(f, id, 0, &ch, 1))
			_exit(3);
		usleep(300 * 1000); /* exits with the job hung */
		_exit(0);
	}
	alarm(60);
	waitpid(pid, &status, 0);
	alarm(0);
	t = now_s() - t;
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && t < 30,
	   "a process exits with a hung job: its file closes in %.2f s (status 0x%x)", t, status);
	inject("clear");
}

/* debugfs kfdsim/sdma: nothing alive, no engine with a job */
static void test_nothing_left(void)
{
	char state[4096], *load;
	int idle = 1;

	if (!ok(!read_file(SDMA_STATE, state, sizeof(state)), "read " SDMA_STATE))
		return;
	for (load = strstr(state, " load "); load; load = strstr(load + 1, " load ")) {
		char *end = strchr(load, '\n'), *q;

		for (q = load + 6; q < end; q++)
			if (*q != ' ' && *q != '0')
				idle = 0;
	}
	ok(!strncmp(state, "contexts 0 jobs 0 fences 0\n", 27) && idle,
	   "all files closed: no context, job or fence alive, engines idle");
	diag("%s", state);
}

int main(int argc, char **argv)
{
	char node[300] = "", path[64];
	amdgpu_context_handle ctx;
	uint32_t major, minor, list_handle = 0;
	amdgpu_bo_handle bos[5];
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ok(for_each_gpu(test_hw_ip, node, sizeof(node)) > 0, "GPU nodes found"))
		return tap_done();
	if (argc > 1 && !strcmp(argv[1], "--hw-ip")) /* any machine: HW IP queries only */
		return tap_done();
	snprintf(path, sizeof(path), "/dev/dri/renderD%" PRIu64, prop(node, "drm_render_minor"));
	diag("%s: %s, gfx_target_version %" PRIu64, node, path, prop(node, "gfx_target_version"));
	if (!ok(prop(node, "gfx_target_version") / 10000 == 9, "the first GPU is gfx9 (SDMA v4)"))
		return tap_done();
	test_ctx(path);

	fd = open(path, O_RDWR | O_CLOEXEC);
	r = fd < 0 ? -errno : amdgpu_device_initialize(fd, &major, &minor, &dev);
	if (!ok(r == 0, "%s: amdgpu_device_initialize (%d)", path, r))
		return tap_done();
	inject("clear");
	r = buf_gtt(&ib, IB_DWORDS * 4);
	r = r ?: buf_gtt(&src, DATA_SIZE);
	r = r ?: buf_user(&dst, DATA_SIZE);
	r = r ?: buf_gtt(&fb, 4096);
	ro.size = 4096;
	r = r ?: amdgpu_bo_alloc(dev,
				 &(struct amdgpu_bo_alloc_request){ .alloc_size = 4096,
								    .phys_alignment = 4096,
								    .preferred_heap =
									    AMDGPU_GEM_DOMAIN_GTT },
				 &ro.bo);
	r = r ?: amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, 4096, 4096, 0, &ro.va,
				       &ro.vah, 0);
	r = r ?: amdgpu_bo_va_op_raw(dev, ro.bo, 0, 4096, ro.va, AMDGPU_VM_PAGE_READABLE,
				     AMDGPU_VA_OP_MAP);
	bos[0] = ib.bo;
	bos[1] = src.bo;
	bos[2] = dst.bo;
	bos[3] = fb.bo;
	bos[4] = ro.bo;
	r = r ?: amdgpu_bo_list_create(dev, 5, bos, NULL, &list);
	if (!ok(r == 0, "IB, GTT source, userptr destination, fence page, read-only page, BO list (%d)",
		r))
		return tap_done();
	{
		struct drm_amdgpu_bo_list_entry e = { .bo_handle = 0 };

		amdgpu_bo_export(ib.bo, amdgpu_bo_handle_type_kms, &e.bo_handle);
		amdgpu_bo_list_create_raw(dev, 1, &e, &list_handle);
	}
	ctx = new_ctx();
	if (!ok(ctx != NULL, "amdgpu_cs_ctx_create"))
		return tap_done();
	test_copy(ctx);
	test_async(ctx);
	test_big_ib(ctx);
	test_errors(ctx, list_handle);
	amdgpu_cs_ctx_free(ctx);
	test_faults();
	test_inject();
	test_rate();
	test_close(path);
	inject("clear");
	amdgpu_bo_list_destroy(list);
	amdgpu_bo_list_destroy_raw(dev, list_handle);
	r = amdgpu_device_deinitialize(dev);
	ok(r == 0, "amdgpu_device_deinitialize");
	close(fd);
	test_nothing_left();
	return tap_done();
}
