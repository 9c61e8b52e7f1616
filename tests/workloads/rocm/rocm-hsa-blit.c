// SPDX-License-Identifier: MIT
/*
 * rocm-hsa-blit: kfdsim's model of ROCclr's blit kernels (tests/kfdsim/blit.c)
 * checked through ROCr 6.4 alone, without HIP: a code object made here by
 * hand (an ELF image whose dynamic symbol table names kernel descriptors
 * __amd_rocclr_copyBuffer.kd and __amd_rocclr_fillBufferAligned.kd, no
 * code) is placed in GPU-visible system memory, and AQL dispatches of
 * those descriptors with kernarg segments of ROCclr's layout must leave
 * exactly the bytes the kernels' work-items would, as computed here by
 * running each work-item's loop on the host: contiguous copies with and
 * without a remainder, strided copies (next_chunk above the grid), a tiled
 * fill and a scattered one; then a copy on a 2-D grid (not modelled) must
 * end in the queue error callback and leave the destination untouched.
 *
 *   rocm-hsa-blit
 *
 * Per GPU agent one "STEP ok|FAIL WHAT" line per check; last "RESULT PASS
 * gpus N" or "RESULT FAIL N" (exit status 0 only with PASS).
 */
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define IMG_BYTES	8192	/* the code object: ELF image, descriptors at 4096 */
#define KD_COPY		4096
#define KD_FILL		4160
#define BUF_BYTES	16384	/* source, destination */
#define ARG_BYTES	4096	/* kernarg segment, fill pattern at 2048 */
#define PATTERN_OFF	2048

static int failures;
static volatile int queue_errors;
static volatile hsa_status_t queue_status;

static bool step(bool ok, const char *what, const char *name)
{
	printf("STEP %s %s on %s\n", ok ? "ok" : "FAIL", what, name);
	fflush(stdout);
	failures += !ok;
	return ok;
}

static void queue_error(hsa_status_t st, hsa_queue_t *q, void *data)
{
	(void)q;
	(void)data;
	queue_status = st;
	__atomic_add_fetch(&queue_errors, 1, __ATOMIC_SEQ_CST);
}

struct copy_args {
	uint64_t src, dst, size;
	uint32_t remainder, aligned_size;
	uint64_t end_ptr;
	uint32_t next_chunk;
} __attribute__((packed));

struct fill_args {
	uint64_t buf, pattern;
	uint32_t pattern_size, alignment;
	uint64_t end_ptr;
	uint32_t next_chunk;
} __attribute__((packed));

/* the ELF image of a code object with two descriptors and no code */
static void make_code_object(unsigned char *img)
{
	static const char strtab[] = "\0__amd_rocclr_copyBuffer.kd\0__amd_rocclr_fillBufferAligned.kd";
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + 64);
	Elf64_Dyn *dyn = (Elf64_Dyn *)(img + 256);
	uint32_t *hash = (uint32_t *)(img + 384);
	Elf64_Sym *sym = (Elf64_Sym *)(img + 512);

	memset(img, 0, IMG_BYTES);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_AMDGPU;
	eh->e_phoff = 64;
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	ph->p_type = PT_DYNAMIC;
	ph->p_vaddr = 256;
	dyn[0] = (Elf64_Dyn){.d_tag = DT_HASH, .d_un.d_ptr = 384};
	dyn[1] = (Elf64_Dyn){.d_tag = DT_SYMTAB, .d_un.d_ptr = 512};
	dyn[2] = (Elf64_Dyn){.d_tag = DT_STRTAB, .d_un.d_ptr = 1024};
	dyn[3] = (Elf64_Dyn){.d_tag = DT_NULL};
	hash[0] = 1;	/* nbucket */
	hash[1] = 3;	/* nchain: the number of symbols */
	sym[1] = (Elf64_Sym){.st_name = 1, .st_value = KD_COPY};
	sym[2] = (Elf64_Sym){.st_name = 28, .st_value = KD_FILL};
	memcpy(img + 1024, strtab, sizeof(strtab));
	/* kernel descriptors: kernarg_size (byte 8) as ROCclr's kernels have */
	*(uint32_t *)(img + KD_COPY + 8) = 312;
	*(uint32_t *)(img + KD_FILL + 8) = 304;
}

/* the copy kernel's work-items, run on the host (offsets into @m) */
static void model_copy(unsigned char *m, const struct copy_args *a, uint64_t base, uint32_t grid)
{
	uint32_t es = a->aligned_size == 16 ? 16 : 4, g;
	uint64_t id, i;

	for (g = 0; g < grid; g++) {
		for (id = g; a->dst + id * es < a->end_ptr; id += a->next_chunk)
			memcpy(m + a->dst - base + id * es, m + a->src - base + id * es, es);
		if (a->remainder && g == 0)
			for (i = a->size - a->remainder; i < a->size; i++)
				m[a->dst - base + i] = m[a->src - base + i];
	}
}

/* the fill kernel's work-items, run on the host */
static void model_fill(unsigned char *m, const struct fill_args *a, uint64_t base,
		       const unsigned char *pat, uint32_t grid)
{
	uint32_t es = a->alignment == 16 || a->alignment == 8 || a->alignment == 4 ||
			      a->alignment == 2 ? a->alignment : 1, g;
	uint64_t e;

	for (g = 0; g < grid; g++)
		for (e = a->buf + (uint64_t)(uint32_t)(g * a->pattern_size) * es; e < a->end_ptr;
		     e += (uint64_t)a->next_chunk * es)
			memcpy(m + e - base, pat, (size_t)a->pattern_size * es);
}

struct rig {
	hsa_queue_t *q;
	hsa_signal_t done;
	unsigned char *img, *args, *mem, *want;	/* mem: source then destination */
};

static uint16_t header(void)
{
	return HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE |
	       1 << HSA_PACKET_HEADER_BARRIER |
	       HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE |
	       HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
}

/* one dispatch of the descriptor at @kd, grid @gx x @gy, published */
static void submit(struct rig *r, uint32_t kd, uint32_t gx, uint32_t gy)
{
	hsa_kernel_dispatch_packet_t p;
	uint64_t idx = hsa_queue_add_write_index_screlease(r->q, 1);
	uint32_t *slot = (uint32_t *)r->q->base_address + (idx % r->q->size) * 16;
	uint32_t first;

	memset(&p, 0, sizeof(p));
	p.setup = (gy > 1 ? 2 : 1) << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	p.workgroup_size_x = 64;
	p.workgroup_size_y = p.workgroup_size_z = 1;
	p.grid_size_x = gx;
	p.grid_size_y = gy;
	p.grid_size_z = 1;
	p.kernel_object = (uint64_t)(uintptr_t)(r->img + kd);
	p.kernarg_address = r->args;
	p.completion_signal = r->done;
	hsa_signal_store_screlease(r->done, 1);
	memcpy(slot + 1, (const uint32_t *)&p + 1, 60);
	first = header() | (uint32_t)p.setup << 16;
	__atomic_store_n(slot, first, __ATOMIC_RELEASE);
	hsa_signal_store_screlease(r->q->doorbell_signal, (hsa_signal_value_t)idx);
}

/* the same, done within 60 s */
static bool dispatch(struct rig *r, uint32_t kd, uint32_t gx, uint32_t gy)
{
	submit(r, kd, gx, gy);
	return hsa_signal_wait_scacquire(r->done, HSA_SIGNAL_CONDITION_EQ, 0, 60000000000ull,
					 HSA_WAIT_STATE_BLOCKED) == 0;
}

/* the source pattern, a stale destination; the host model starts alike */
static void reset_buffers(struct rig *r)
{
	uint32_t i;

	for (i = 0; i < BUF_BYTES; i++) {
		r->mem[i] = (unsigned char)(i * 131 + (i >> 8) + 1);
		r->mem[BUF_BYTES + i] = 0xee;
	}
	memcpy(r->want, r->mem, 2 * BUF_BYTES);
}

static bool same(const struct rig *r)
{
	uint32_t i;

	for (i = 0; i < 2 * BUF_BYTES; i++)
		if (r->mem[i] != r->want[i]) {
			printf("# byte %u of the buffers is 0x%02x, not 0x%02x\n", i, r->mem[i],
			       r->want[i]);
			return false;
		}
	return true;
}

/* a copy from source + @so to destination + @dso as ROCclr sets it up,
 * or with @nc / @grid of our own when not 0 */
static void check_copy(struct rig *r, const char *what, const char *name, uint64_t so,
		       uint64_t dso, uint64_t size, uint32_t grid, uint32_t nc, bool force4)
{
	uint64_t base = (uint64_t)(uintptr_t)r->mem;
	struct copy_args a;
	bool aligned = !force4 && !(so % 16) && !(dso % 16);

	reset_buffers(r);
	a.src = base + so;
	a.dst = base + BUF_BYTES + dso;
	a.size = size;
	a.aligned_size = aligned ? 16 : 4;
	a.remainder = (uint32_t)(size % a.aligned_size);
	a.end_ptr = a.dst + size - a.remainder;
	a.next_chunk = nc ? nc : grid;
	memcpy(r->args, &a, sizeof(a));
	model_copy(r->want, &a, base, grid);
	if (step(dispatch(r, KD_COPY, grid, 1), what, name))
		step(same(r), "  bytes as the work-items leave them", name);
}

static void check_fill(struct rig *r, const char *what, const char *name, uint64_t off,
		       uint32_t psize, uint32_t align, uint64_t bytes, uint32_t grid, uint32_t nc)
{
	uint64_t base = (uint64_t)(uintptr_t)r->mem;
	unsigned char *pat = r->args + PATTERN_OFF;
	struct fill_args a;
	uint32_t i;

	reset_buffers(r);
	for (i = 0; i < psize * align; i++)
		pat[i] = (unsigned char)(0x11 * (i + 1));
	a.buf = base + BUF_BYTES + off;
	a.pattern = (uint64_t)(uintptr_t)pat;
	a.pattern_size = psize;
	a.alignment = align;
	a.end_ptr = a.buf + bytes;
	a.next_chunk = nc ? nc : grid * psize;
	memcpy(r->args, &a, sizeof(a));
	model_fill(r->want, &a, base, pat, grid);
	if (step(dispatch(r, KD_FILL, grid, 1), what, name))
		step(same(r), "  bytes as the work-items leave them", name);
}

static void exercise(hsa_agent_t gpu, hsa_amd_memory_pool_t sys, const char *name)
{
	struct rig r = {.q = NULL};
	void *img = NULL, *args = NULL, *mem = NULL;

	if (!step(!hsa_amd_memory_pool_allocate(sys, IMG_BYTES, 0, &img) &&
			  !hsa_amd_memory_pool_allocate(sys, ARG_BYTES, 0, &args) &&
			  !hsa_amd_memory_pool_allocate(sys, 2 * BUF_BYTES, 0, &mem) &&
			  !hsa_amd_agents_allow_access(1, &gpu, NULL, img) &&
			  !hsa_amd_agents_allow_access(1, &gpu, NULL, args) &&
			  !hsa_amd_agents_allow_access(1, &gpu, NULL, mem) &&
			  !hsa_signal_create(1, 0, NULL, &r.done) &&
			  !hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, queue_error, NULL,
					    UINT32_MAX, UINT32_MAX, &r.q),
		  "code object, kernarg, buffers, signal and queue", name))
		goto out;
	r.img = img;
	r.args = args;
	r.mem = mem;
	r.want = malloc(2 * BUF_BYTES);
	if (!r.want)
		goto out;
	make_code_object(r.img);
	/* ROCclr's setups: grid = next_chunk */
	check_copy(&r, "copyBuffer 16-byte aligned, 4096 + 7 bytes (remainder 7)", name, 0, 0,
		   4103, 64, 0, false);
	check_copy(&r, "copyBuffer misaligned (src+5, dst+3), 9999 bytes", name, 5, 3, 9999,
		   1024, 0, false);
	check_copy(&r, "copyBuffer grid above the elements (512 work-items, 40 bytes)", name, 16,
		   32, 40, 512, 0, false);
	/* strides the work-items do not cover: only the elements they reach */
	check_copy(&r, "copyBuffer next_chunk 8 over a grid of 3 (4-byte elements)", name, 0, 0,
		   4000, 3, 8, true);
	check_copy(&r, "copyBuffer next_chunk 100 over a grid of 30 (16-byte elements)", name, 0,
		   0, 12000, 30, 100, false);
	check_fill(&r, "fillBufferAligned 3-byte pattern tiled over 1000 bytes", name, 0, 3, 1,
		   1000, 64, 0);
	check_fill(&r, "fillBufferAligned 16-byte elements, 2 per pattern, the last past the end",
		   name, 16, 2, 16, 4010, 256, 0);
	check_fill(&r, "fillBufferAligned 8-byte elements in strides (grid 3, next_chunk 10)",
		   name, 8, 2, 8, 6000, 3, 10);
	/* not modelled: a queue error, the destination untouched */
	reset_buffers(&r);
	queue_errors = 0;
	{
		struct copy_args a = {.src = (uint64_t)(uintptr_t)r.mem,
				      .dst = (uint64_t)(uintptr_t)r.mem + BUF_BYTES,
				      .size = 64, .aligned_size = 16, .next_chunk = 4};
		a.end_ptr = a.dst + 64;
		memcpy(r.args, &a, sizeof(a));
	}
	submit(&r, KD_COPY, 4, 2);
	{
		time_t end = time(NULL) + 60;

		while (!__atomic_load_n(&queue_errors, __ATOMIC_SEQ_CST) && time(NULL) < end)
			hsa_signal_wait_scacquire(r.done, HSA_SIGNAL_CONDITION_EQ, 0, 100000000ull,
						  HSA_WAIT_STATE_BLOCKED);
	}
	step(queue_errors && queue_status == HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
	     "copyBuffer on a 2-D grid ends in the queue error (invalid packet format)", name);
	step(same(&r), "  the destination untouched", name);
	step(hsa_signal_load_scacquire(r.done) == 1, "  its completion signal untouched", name);
out:
	if (r.q)
		hsa_queue_destroy(r.q);
	if (r.done.handle)
		hsa_signal_destroy(r.done);
	free(r.want);
	if (img)
		hsa_amd_memory_pool_free(img);
	if (args)
		hsa_amd_memory_pool_free(args);
	if (mem)
		hsa_amd_memory_pool_free(mem);
}

static hsa_status_t fine_pool(hsa_amd_memory_pool_t pool, void *data)
{
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;

	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) ||
	    seg != HSA_AMD_SEGMENT_GLOBAL ||
	    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags) ||
	    !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) ||
	    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
					 &alloc) ||
	    !alloc)
		return HSA_STATUS_SUCCESS;
	*(hsa_amd_memory_pool_t *)data = pool;
	return HSA_STATUS_INFO_BREAK;
}

struct agents {
	hsa_agent_t cpu, gpu[64];
	bool have_cpu;
	int gpus;
};

static hsa_status_t add_agent(hsa_agent_t agent, void *data)
{
	struct agents *ag = data;
	hsa_device_type_t type;

	hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
	if (type == HSA_DEVICE_TYPE_CPU && !ag->have_cpu) {
		ag->cpu = agent;
		ag->have_cpu = true;
	} else if (type == HSA_DEVICE_TYPE_GPU && ag->gpus < 64) {
		ag->gpu[ag->gpus++] = agent;
	}
	return HSA_STATUS_SUCCESS;
}

int main(void)
{
	hsa_amd_memory_pool_t sys = {0};
	struct agents ag = {.gpus = 0};
	char name[64];
	int i;

	if (hsa_init()) {
		printf("STEP FAIL hsa_init\nRESULT FAIL 1\n");
		return 1;
	}
	hsa_iterate_agents(add_agent, &ag);
	if (ag.have_cpu)
		hsa_amd_agent_iterate_memory_pools(ag.cpu, fine_pool, &sys);
	if (!step(ag.have_cpu && sys.handle && ag.gpus, "a CPU with a fine-grained pool, GPUs",
		  "the system"))
		goto out;
	for (i = 0; i < ag.gpus; i++) {
		snprintf(name, sizeof(name), "gpu%d", i);
		exercise(ag.gpu[i], sys, name);
	}
	hsa_shut_down();
out:
	if (failures)
		printf("RESULT FAIL %d\n", failures);
	else
		printf("RESULT PASS gpus %d\n", ag.gpus);
	return failures ? 1 : 0;
}
