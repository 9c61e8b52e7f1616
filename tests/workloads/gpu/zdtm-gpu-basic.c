// SPDX-License-Identifier: MIT
/*
 * zdtm-gpu-basic: ZDTM-style workload for KFD checkpoint/restore.
 *
 *   zdtm-gpu-basic [OPTIONS] READY TRIGGER RESULT
 *       sets up, on every used GPU: VRAM, GTT, USERPTR, DOORBELL and
 *       MMIO_REMAP BOs (VRAM/GTT/USERPTR filled with patterns), an AQL queue
 *       with its doorbell mmap'ed,
 *       and signal events; writes READY, waits for the file TRIGGER
 *       (checkpoint/restore happen meanwhile), re-verifies everything and
 *       writes "PASS" or "FAIL <first difference>" to RESULT (and stdout);
 *       exits 0 or 1. Verified, in this order: every byte of every CPU-mapped
 *       BO, ring contents and wptr of each queue, a write + read back through
 *       every doorbell mapping (and MMIO page, --mmio); the fd table (same numbers,
 *       same files; render nodes may change minor); GET_PROCESS_APERTURES_NEW
 *       (ABI 2.2/7.8: one entry per GPU the process may see, *actual* ids, in
 *       topology order); each event unsignaled, signaled after SET_EVENT,
 *       destroyable once; each queue id destroyable once; each BO's mapping
 *       set (UNMAP on a GPU it is not mapped on: EINVAL; on its GPUs: ok) and
 *       handle (FREE). GTT BOs are mapped on their GPU and the next one, VRAM
 *       on all.
 *
 *   READY: "gpus N bos N queues N events N", then "gpu USER_ID NODE MINOR",
 *   "visible ID...", "fd N TARGET", "bo TYPE GPU CPUADDR SIZE",
 *   "child PID", "thread N TID", "svm ADDR SIZE", "xnack 0|1" lines.
 *   TRIGGER may hold "map USER_ID ACTUAL_ID" lines: the GPU now expected
 *   behind a user gpu_id (default: the same id, no remap).
 *   While waiting, a file TRIGGER.probe holding a number N makes the process
 *   run the non-destructive checks (bytes, doorbells/MMIO, fds, apertures,
 *   render fds, events unsignaled) and write "PASS N" or "FAIL N ..." to
 *   RESULT.probe; it keeps waiting (repeated checkpoints, --leave-running).
 *   With --big-bo-fill, a file TRIGGER.mutate holding a generation G > the
 *   last one rewrites a tenth of the big BO: its 4 MiB blocks b with
 *   b % 10 == G % 10 get generation G's words (a dump's chunk each); every
 *   later check expects each page's latest generation. "DONE G" goes to
 *   RESULT.mutate (incremental checkpoints: what changed between dumps).
 *
 * Options:
 *   --gpus N|LIST   use only the first N visible GPUs, or these visible
 *                   indexes (e.g. 0,2 or 0-1); KFD still makes a pdd for each
 *                   visible GPU (the apertures check expects all of them)
 *   --bos N         N more BOs of every type, round-robin over the used GPUs,
 *                   sizes 4 KiB .. 252 KiB, varied mapping sets (none, own,
 *                   own+next, all)
 *   --ro-bo         one more VRAM BO (1 MiB + 4 KiB) on the first GPU without
 *                   WRITABLE (GPU read-only; after a restore its dma-buf is
 *                   read-only too), filled by the CPU, every byte checked
 *   --big-bo-fill   every byte of the --big-bo BO written (a word pattern
 *                   unique per page and word, never zero) and checked,
 *                   instead of 64 pages: BO contents that cost what real
 *                   data costs (no holes in the image), for benchmarks
 *   --host-mem SIZE SIZE bytes of anonymous host memory (K/M/G), every word
 *                   written (a pattern unique per page and word) and checked:
 *                   process memory that CRIU itself restores, next to the
 *                   GPU memory the plugin restores (parallel restore)
 *   --big-bo SIZE   one more VRAM BO of SIZE bytes (K/M/G suffixes) on the
 *                   first GPU; only the first and last page and 62 pages
 *                   spread over it are written; checked: those pages' bytes,
 *                   and every other page must be zero. kfdsim's shmem helper
 *                   populates the whole BO at mmap: the guest needs SIZE of
 *                   free RAM
 *   --threads N     N worker threads; each owns BOs of every type on one GPU,
 *                   a queue (AQL or SDMA) and events, and verifies its own
 *                   state concurrently with the others; they set up one at
 *                   a time unless --parallel-setup (kfdsim deadlocked when a
 *                   USERPTR ALLOC and a doorbell mmap of two threads met:
 *                   test-kfdsim-parallel-setup.sh keeps it from returning)
 *   --fork          a child process (forked before /dev/kfd is opened) with
 *                   its own KFD process and the same kind of state, files
 *                   READY.child, RESULT.child; RESULT gets "PASS" only if
 *                   both pass, then "parent ..." and "child ..." lines
 *   --kfd-twice     open /dev/kfd a second time once set up and keep the fd
 *                   (same KFD process: KFD has one per address space; a
 *                   dump must refuse it, tests/vm/.../test-cr-kfd-twice.sh)
 *   --mmio          also mmap each GPU's MMIO_REMAP BO (the HDP flush page)
 *                   through /dev/kfd at its mmap_offset, as ROCr does, and
 *                   write + read back through it after the restore
 *   --render-fds    verify the application's render-node fds: each is a
 *                   char device 226:m, DRM_IOCTL_VERSION says amdgpu 3.x,
 *                   AMDGPU_INFO works and its device_id is that of node m,
 *                   node m's gpu_id is the one expected behind the user
 *                   gpu_id (TRIGGER "map" lines) and in the apertures; a
 *                   fresh VRAM BO on the user gpu_id gets a handle with that
 *                   id and can be CPU-mapped through that fd (it is the DRM
 *                   file bound to the VM) and mapped on the GPU
 *   --svm           three anonymous regions (64, 16, 256 pages) registered
 *                   as SVM ranges (AMDKFD_IOC_SVM SET_ATTR) with varied
 *                   attributes: preferred and prefetch location (a used
 *                   GPU or system memory), ACCESS / ACCESS_IN_PLACE /
 *                   NO_ACCESS per used GPU, flags (GPU_RO, GPU_EXEC,
 *                   HIVE_LOCAL, GPU_READ_MOSTLY, EXT_COHERENT,
 *                   GPU_ALWAYS_MAPPED set, COHERENT or HOST_ACCESS cleared),
 *                   granularity; parts of two regions changed again (range
 *                   splits); filled with a pattern. Checked: GET_ATTR of
 *                   every page returns exactly what was set (user gpu_ids,
 *                   access for every visible GPU; a lost range would read as
 *                   the defaults, which no page has), then every byte
 *   --xnack         SET_XNACK_MODE 1 right after opening /dev/kfd (before
 *                   any queue). Always checked (before the queues go and
 *                   after): the XNACK query (-1) answers 1 with --xnack,
 *                   else 0
 *   --sabotage WHAT negative control, applied after TRIGGER, before the
 *                   checks: byte, big-bo, thread, child, doorbell, mmio,
 *                   render-reopen, render-swap, fd, event, queue, map,
 *                   apertures, big-bo-zero (a byte of a page that must be
 *                   zero), svm (region 1's granularity changed in the
 *                   kernel), svm-byte, xnack (the mode flipped once no queue
 *                   is left, before the last XNACK check); the self-check
 *                   must then FAIL
 *
 *   zdtm-gpu-basic --poke PID ADDR
 *       flips one byte at ADDR of process PID through /proc/PID/mem (for
 *       negative controls); exits 0 if written, 1 with the error if not.
 */
#include "kfdlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_EVENTS    3
#define MAX_THREADS 64
#define MAX_FDS	    256

/* amdgpu DRM uapi (amdgpu_drm.h), the two queries used here */
struct wl_amdgpu_info {
	uint64_t return_pointer;
	uint32_t return_size;
	uint32_t query;
	uint32_t u[4];
};
#define WL_AMDGPU_INFO_ACCEL_WORKING 0x00
#define WL_AMDGPU_INFO_DEV_INFO	     0x16
#define WL_IOCTL_AMDGPU_INFO	     DRM_IOW(DRM_COMMAND_BASE + 0x05, struct wl_amdgpu_info)

struct owner {
	int id; /* 0: main thread, 1..: worker threads */
	int gi; /* threads: their GPU */
	struct kfdl_bo *bos;
	int n_bos, cap;
	struct kfdl_queue queues[KFDL_MAX_GPUS];
	int n_queues;
	uint32_t events[N_EVENTS];
	pthread_t th;
	pid_t tid;
};

static struct kfdl k;
static struct owner owners[MAX_THREADS + 1];
static int n_owners;
static struct kfdl_bo big;
static uint32_t ap_ids[KFDL_MAX_GPUS], n_ap;
static uint32_t map_user[KFDL_MAX_GPUS], map_actual[KFDL_MAX_GPUS];
static int n_map;
static struct {
	int fd;
	char target[256];
} fds0[MAX_FDS];
static int n_fds0;

static int opt_sel[KFDL_MAX_GPUS], opt_nsel, opt_first_n;
static int opt_bos, opt_threads, opt_fork, opt_render, opt_mmio, opt_svm, opt_xnack;
static int opt_kfd_twice;
static uint64_t opt_big, opt_host_mem;
static uint64_t *host_mem; /* --host-mem */
static int opt_big_fill, opt_ro_bo;
static struct kfdl_bo ro_bo;
static const char *opt_sabotage = "";
static int is_child;
static pid_t child_pid;
static const char *ready_path, *trigger_path, *result_path;
static char child_ready[4096], child_result[4096];

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static int opt_parallel_setup;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go_phase; /* 1: threads set up, 2: verify */
static int n_ready_threads;
static volatile int triggered;

/* probe mode: failures come back here instead of ending the process */
static __thread jmp_buf *probe_jb;
static char probe_msg[512];
/* SIGSEGV/SIGBUS while touching a doorbell or MMIO page; volatile: the
 * store must not move past the volatile access it guards */
static __thread sigjmp_buf *volatile io_jb;

static uint8_t pattern(uint32_t seed, uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + (uint64_t)seed * 29 + 0x5a);
}

static const char *role(void)
{
	return is_child ? "child" : "parent";
}

static void write_file(const char *path, const char *text)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fputs(text, f);
	if (fclose(f) == 0)
		rename(tmp, path);
}

/* the child's result line (its RESULT.child), after it ended */
static void collect_child(char *buf, size_t len)
{
	FILE *f;
	int st;

	snprintf(buf, len, "child FAIL no result");
	if (child_pid <= 0)
		return;
	if (!triggered)
		kill(child_pid, SIGKILL);
	while (waitpid(child_pid, &st, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	f = fopen(child_result, "r");
	if (f) {
		char line[600];

		if (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, len, "child %s", line);
		}
		fclose(f);
	}
}

__attribute__((format(printf, 1, 2), noreturn)) static void finish_fail(const char *fmt, ...)
{
	char msg[512], out[2048], cl[700] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (probe_jb) {
		snprintf(probe_msg, sizeof(probe_msg), "%s", msg);
		longjmp(*probe_jb, 1);
	}
	pthread_mutex_lock(&fail_lock); /* first failure wins; others wait for exit */
	if (opt_fork && !is_child) {
		collect_child(cl, sizeof(cl));
		snprintf(out, sizeof(out), "FAIL parent: %s\nparent FAIL %s\n%s\n", msg, msg, cl);
	} else {
		snprintf(out, sizeof(out), "FAIL %s\n", msg);
	}
	printf("%s", out);
	fflush(stdout);
	if (result_path)
		write_file(result_path, out);
	_exit(1);
}

static void need(int rc, const char *what)
{
	if (rc)
		finish_fail("setup: %s: %s", what, strerror(-rc));
}

static void io_signal(int sig)
{
	if (io_jb)
		siglongjmp(*io_jb, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* write VALUE through P and read it back; 0 if the page is usable */
static int io_poke(volatile uint64_t *p, uint64_t value, uint64_t *got)
{
	sigjmp_buf jb;
	int sig;

	if (!p)
		return -1;
	sig = sigsetjmp(jb, 1);
	if (sig) {
		io_jb = NULL;
		return sig;
	}
	io_jb = &jb;
	*p = value;
	*got = *p;
	io_jb = NULL;
	return 0;
}

/* ---- setup ---- */

static struct kfdl_bo *new_bo(struct owner *o)
{
	if (o->n_bos == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 16;
		o->bos = realloc(o->bos, o->cap * sizeof(*o->bos));
		if (!o->bos)
			finish_fail("setup: out of memory");
	}
	return &o->bos[o->n_bos];
}

static uint32_t bo_seed(const struct owner *o, int b)
{
	return (uint32_t)o->id * 100003u + (uint32_t)b + (is_child ? 7777u : 0u);
}

static void fill(struct owner *o, int b)
{
	struct kfdl_bo *bo = &o->bos[b];
	uint32_t seed = bo_seed(o, b);
	uint64_t i;

	if (bo->cpu)
		for (i = 0; i < bo->size; i++)
			bo->cpu[i] = pattern(seed, i);
}

/*
 * One BO of type T on GPU index G with SIZE, mapped on MAPSET GPUs:
 * 0 none, 1 own, 2 own + next, 3 all.
 */
static void add_bo(struct owner *o, int g, enum kfdl_bo_type t, uint64_t size, int mapset)
{
	uint32_t ids[KFDL_MAX_GPUS];
	struct kfdl_bo *b = new_bo(o);
	char what[96];
	int n = 0, i;

	snprintf(what, sizeof(what), "alloc %s of %" PRIu64 " bytes on gpu %u", kfdl_type_name(t),
		 size, k.gpu[g].gpu_id);
	need(kfdl_alloc(&k, g, t, size, b), what);
	o->n_bos++;
	fill(o, o->n_bos - 1);
	if (mapset == 3) {
		for (i = 0; i < k.n_gpus; i++)
			ids[n++] = k.gpu[i].gpu_id;
	} else if (mapset >= 1) {
		ids[n++] = k.gpu[g].gpu_id;
		if (mapset == 2 && k.n_gpus > 1)
			ids[n++] = k.gpu[(g + 1) % k.n_gpus].gpu_id;
	}
	if (n) {
		snprintf(what, sizeof(what), "map %s of gpu %u on %d GPUs", kfdl_type_name(t),
			 k.gpu[g].gpu_id, n);
		need(kfdl_map(&k, b, ids, n), what);
	}
}

static void add_queue(struct owner *o, int g, uint32_t type)
{
	struct kfdl_queue *q = &o->queues[o->n_queues];
	char what[64];
	uint64_t i;

	snprintf(what, sizeof(what), "%s queue on gpu %u",
		 type == KFD_IOC_QUEUE_TYPE_SDMA ? "SDMA" : "AQL", k.gpu[g].gpu_id);
	need(kfdl_create_queue(&k, g, type, q), what);
	/* a write pointer value and ring contents: bytes to re-verify */
	for (i = 0; i < KFDL_PAGE; i++)
		q->bufs[0].cpu[i] = pattern(100 + o->id * 64 + o->n_queues, i);
	*(volatile uint64_t *)q->bufs[2].cpu = 0x40 + o->n_queues;
	/* ring the doorbell (kfdsim: ordinary memory) */
	*(volatile uint64_t *)((uint8_t *)q->doorbell + (q->doorbell_offset & (2 * KFDL_PAGE - 1) &
							 ~7ULL)) = 0x40 + o->n_queues;
	o->n_queues++;
}

static void add_events(struct owner *o)
{
	int i;

	for (i = 0; i < N_EVENTS; i++)
		need(kfdl_create_event(&k, KFD_IOC_EVENT_SIGNAL, i == 0, &o->events[i]),
		     "CREATE_EVENT");
}

/* the main owner: what zdtm-gpu-basic always had, plus --bos and --big-bo */
static void setup_main(struct owner *o)
{
	static const uint64_t sizes[5] = {65536, 16384, 16384, 8192, 4096};
	int g, t, i;

	for (g = 0; g < k.n_gpus; g++) {
		for (t = KFDL_VRAM; t <= KFDL_MMIO; t++) {
			add_bo(o, g, t, sizes[t],
			       t == KFDL_VRAM	? 3
			       : t == KFDL_GTT	? 2
			       : t == KFDL_MMIO ? 0
						: 1);
			if (t == KFDL_MMIO && opt_mmio)
				need(kfdl_mmap_mmio(&k, &o->bos[o->n_bos - 1]), "mmap MMIO page");
		}
		add_queue(o, g, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
	}
	for (i = 0; i < opt_bos; i++)
		for (t = KFDL_VRAM; t <= KFDL_MMIO; t++) {
			uint64_t sz = t == KFDL_DOORBELL ? 8192
				      : t == KFDL_MMIO	 ? 4096
							 : KFDL_PAGE * (1 + (i * 37 + t * 11) % 63);

			add_bo(o, i % k.n_gpus, t, sz, (i + t) % 4);
		}
	add_events(o);
}

static void setup_thread_state(struct owner *o)
{
	static const uint64_t sizes[5] = {32768, 12288, 8192, 8192, 4096};
	int t;

	for (t = KFDL_VRAM; t <= KFDL_MMIO; t++)
		add_bo(o, o->gi, t, sizes[t] + (t < KFDL_DOORBELL ? o->id * KFDL_PAGE : 0),
		       t == KFDL_MMIO	? 0
		       : t == KFDL_VRAM ? 3
					: 1);
	add_queue(o, o->gi, o->id % 2 ? KFD_IOC_QUEUE_TYPE_COMPUTE_AQL : KFD_IOC_QUEUE_TYPE_SDMA);
	add_events(o);
}

static uint64_t big_page(uint64_t j, uint64_t npages)
{
	return j * (npages - 1) / 63; /* j = 0..63: first .. last page */
}

/* --big-bo-fill: word w of page pg, distinct for every word and never zero */
static uint64_t fill_word(uint64_t pg, uint64_t w)
{
	uint64_t x = (pg << 9 | w) + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return (x ^ (x >> 31)) | 1;
}

#define WORDS_PER_PAGE (KFDL_PAGE / sizeof(uint64_t))

/* --host-mem: word w of the region, never zero, differs from the big BO's words */
static uint64_t host_word(uint64_t w)
{
	return fill_word(w / WORDS_PER_PAGE ^ (1ULL << 50), w % WORDS_PER_PAGE);
}

static void setup_host_mem(void)
{
	uint64_t i, n = opt_host_mem / sizeof(uint64_t);

	host_mem = mmap(NULL, opt_host_mem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0);
	if (host_mem == MAP_FAILED)
		finish_fail("setup: --host-mem %" PRIu64 ": %s", opt_host_mem, strerror(errno));
	for (i = 0; i < n; i++)
		host_mem[i] = host_word(i);
}

static void check_host_mem(void)
{
	uint64_t i, n = opt_host_mem / sizeof(uint64_t);

	for (i = 0; host_mem && i < n; i++)
		if (host_mem[i] != host_word(i))
			finish_fail("host memory: word %" PRIu64 " is 0x%016" PRIx64
				    ", want 0x%016" PRIx64,
				    i, host_mem[i], host_word(i));
}

/* TRIGGER.mutate: the latest generation applied, per tenth of the big BO (0:
 * the setup's words), and the unit of a tenth (the plugin's chunk) */
static uint64_t big_gen, tenth_gen[10];
#define MUTATE_BLOCK_PAGES 1024u

/* The generation page pg holds. */
static uint64_t page_gen(uint64_t pg)
{
	return tenth_gen[pg / MUTATE_BLOCK_PAGES % 10];
}

/* fill_word() of generation gen (0: the setup's words) */
static uint64_t gen_word(uint64_t pg, uint64_t w, uint64_t gen)
{
	return fill_word(gen ? pg ^ (gen << 40) : pg, w);
}

static void fill_page(uint64_t pg)
{
	uint64_t *w = (uint64_t *)(big.cpu + pg * KFDL_PAGE), gen = page_gen(pg), i;

	for (i = 0; i < WORDS_PER_PAGE; i++)
		w[i] = gen_word(pg, i, gen);
}

#define RO_BO_SIZE ((1u << 20) + 4096u)

static void setup_ro_bo(void)
{
	uint64_t i;

	need(kfdl_alloc_flags(&k, 0, KFDL_VRAM, RO_BO_SIZE, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
			      &ro_bo),
	     "alloc the read-only VRAM BO");
	need(kfdl_map(&k, &ro_bo, &k.gpu[0].gpu_id, 1), "map the read-only VRAM BO");
	for (i = 0; i < RO_BO_SIZE; i++)
		ro_bo.cpu[i] = pattern(910000, i);
}

static void setup_big(void)
{
	uint64_t npages = opt_big / KFDL_PAGE, j, i, avail_kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %" SCNu64, &avail_kb) == 1)
			break;
	if (f)
		fclose(f);
	/* the shmem helper allocates every page of the BO at mmap */
	if (avail_kb * 1024 < opt_big + (256ULL << 20))
		finish_fail("setup: --big-bo %" PRIu64 " needs that much free RAM plus 256 MiB, "
			    "MemAvailable is %" PRIu64 " KiB",
			    opt_big, avail_kb);
	need(kfdl_alloc(&k, 0, KFDL_VRAM, opt_big, &big), "alloc the big VRAM BO");
	need(kfdl_map(&k, &big, &k.gpu[0].gpu_id, 1), "map the big VRAM BO");
	if (opt_big_fill) {
		for (j = 0; j < npages; j++)
			fill_page(j);
		return;
	}
	for (j = 0; j < 64; j++)
		for (i = 0; i < KFDL_PAGE; i++)
			big.cpu[big_page(j, npages) * KFDL_PAGE + i] =
				pattern(900000 + (uint32_t)j, i);
}

/* ---- checks ---- */

static void check_bytes(const char *name, uint32_t seed, const uint8_t *p, uint64_t size)
{
	uint64_t i;

	for (i = 0; i < size; i++)
		if (p[i] != pattern(seed, i))
			finish_fail("%s: byte %" PRIu64 " is 0x%02x, want 0x%02x", name, i, p[i],
				    pattern(seed, i));
}

/* ---- SVM ranges (--svm) and the XNACK mode (--xnack) ---- */

#define SVM_REGIONS 3
#define SVM_UNDEF   0xFFFFFFFFu

/* What GET_ATTR must answer for one page: the workload's model of the
 * attributes it set (user gpu_ids, as the application knows them) */
struct svm_page {
	uint32_t pref, prefetch, flags, gran;
	uint8_t access[KFDL_MAX_GPUS]; /* per visible GPU: ACCESS, ACCESS_IN_PLACE or NO_ACCESS */
};

struct svm_region {
	uint8_t *cpu;
	uint64_t pages;
	struct svm_page *model;
};

static struct svm_region svm[SVM_REGIONS];

static struct kfd_ioctl_svm_attribute svm_at(uint32_t type, uint32_t value)
{
	return (struct kfd_ioctl_svm_attribute){.type = type, .value = value};
}

static int visible_index(uint32_t user_id)
{
	int i;

	for (i = 0; i < k.n_visible; i++)
		if (k.visible_ids[i] == user_id)
			return i;
	return -1;
}

/* a new range's attributes (svm_range_new()): XNACK gives every GPU access */
static void svm_page_default(struct svm_page *pg)
{
	int i;

	memset(pg, 0, sizeof(*pg));
	pg->pref = pg->prefetch = SVM_UNDEF;
	pg->flags = KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT;
	pg->gran = 9;
	for (i = 0; i < k.n_visible; i++)
		pg->access[i] =
			opt_xnack ? KFD_IOCTL_SVM_ATTR_ACCESS : KFD_IOCTL_SVM_ATTR_NO_ACCESS;
}

static void svm_page_apply(struct svm_page *pg, const struct kfd_ioctl_svm_attribute *at,
			   uint32_t nattr)
{
	uint32_t i;

	for (i = 0; i < nattr; i++) {
		switch (at[i].type) {
		case KFD_IOCTL_SVM_ATTR_PREFERRED_LOC:
			pg->pref = at[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_PREFETCH_LOC:
			pg->prefetch = at[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_ACCESS:
		case KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE:
		case KFD_IOCTL_SVM_ATTR_NO_ACCESS:
			pg->access[visible_index(at[i].value)] = (uint8_t)at[i].type;
			break;
		case KFD_IOCTL_SVM_ATTR_SET_FLAGS:
			pg->flags |= at[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_CLR_FLAGS:
			pg->flags &= ~at[i].value;
			break;
		case KFD_IOCTL_SVM_ATTR_GRANULARITY:
			pg->gran = at[i].value < 63 ? at[i].value : 63;
			break;
		}
	}
}

/* SET_ATTR on pages [first, first + n) of region r, and the same in the model */
static void svm_set(int r, uint64_t first, uint64_t n, struct kfd_ioctl_svm_attribute *at,
		    uint32_t nattr)
{
	char what[96];
	uint64_t p;

	snprintf(what, sizeof(what), "SVM SET_ATTR of region %d pages %" PRIu64 "-%" PRIu64, r,
		 first, first + n - 1);
	need(kfdl_svm(&k, (uintptr_t)svm[r].cpu + first * KFDL_PAGE, n * KFDL_PAGE,
		      KFD_IOCTL_SVM_OP_SET_ATTR, at, nattr),
	     what);
	for (p = first; p < first + n; p++)
		svm_page_apply(&svm[r].model[p], at, nattr);
}

static uint32_t svm_seed(int r)
{
	return 500000u + (uint32_t)r + (is_child ? 7777u : 0u);
}

/* GET_ATTR of every page against the model, then every byte */
static void check_svm(void)
{
	struct kfd_ioctl_svm_attribute at[KFDL_SVM_MAX_ATTRS];
	static const char *const names[] = {"PREFERRED_LOC", "PREFETCH_LOC", "SET_FLAGS",
					    "CLR_FLAGS", "GRANULARITY"};
	char name[96];
	uint64_t p;
	int r, i, rc;

	for (r = 0; r < SVM_REGIONS && svm[r].cpu; r++) {
		for (p = 0; p < svm[r].pages; p++) {
			const struct svm_page *pg = &svm[r].model[p];
			uint64_t addr = (uintptr_t)svm[r].cpu + p * KFDL_PAGE;
			uint32_t want[5] = {pg->pref, pg->prefetch, pg->flags, ~pg->flags,
					    pg->gran};

			at[0] = svm_at(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0);
			at[1] = svm_at(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0);
			at[2] = svm_at(KFD_IOCTL_SVM_ATTR_SET_FLAGS, 0);
			at[3] = svm_at(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, 0);
			at[4] = svm_at(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0);
			for (i = 0; i < k.n_visible; i++)
				at[5 + i] = svm_at(KFD_IOCTL_SVM_ATTR_ACCESS, k.visible_ids[i]);
			rc = kfdl_svm(&k, addr, KFDL_PAGE, KFD_IOCTL_SVM_OP_GET_ATTR, at,
				      5 + (uint32_t)k.n_visible);
			if (rc)
				finish_fail("SVM region %d page %" PRIu64 " (0x%" PRIx64
					    "): GET_ATTR: %s",
					    r, p, addr, strerror(-rc));
			for (i = 0; i < 5; i++)
				if (at[i].value != want[i])
					finish_fail("SVM region %d page %" PRIu64 " (0x%" PRIx64
						    "): %s is 0x%x, want 0x%x",
						    r, p, addr, names[i], at[i].value, want[i]);
			for (i = 0; i < k.n_visible; i++)
				if (at[5 + i].type != pg->access[i])
					finish_fail("SVM region %d page %" PRIu64 " (0x%" PRIx64
						    "): access of gpu %u is attribute %u, want %u",
						    r, p, addr, k.visible_ids[i], at[5 + i].type,
						    pg->access[i]);
		}
		snprintf(name, sizeof(name), "SVM region %d at %p", r, (void *)svm[r].cpu);
		check_bytes(name, svm_seed(r), svm[r].cpu, svm[r].pages * KFDL_PAGE);
	}
}

/*
 * Three anonymous regions registered as SVM ranges with varied attributes
 * (locations, access per GPU, flags, granularity); two are then changed in
 * part, so the kernel splits them (5 ranges, or more for the XNACK default
 * access). Filled with a pattern.
 */
static void setup_svm(void)
{
	static const uint64_t pages[SVM_REGIONS] = {64, 16, 256};
	uint32_t u0 = k.gpu[0].gpu_id, ul = k.gpu[k.n_gpus - 1].gpu_id;
	struct kfd_ioctl_svm_attribute at[KFDL_SVM_MAX_ATTRS];
	struct svm_page dflt;
	uint32_t n;
	uint64_t p, i;
	int r, g;

	for (r = 0; r < SVM_REGIONS; r++) {
		void *m = mmap(NULL, pages[r] * KFDL_PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			finish_fail("setup: mmap of SVM region %d: %s", r, strerror(errno));
		svm[r].cpu = m;
		svm[r].pages = pages[r];
		svm[r].model = calloc(pages[r], sizeof(*svm[r].model));
		if (!svm[r].model)
			finish_fail("setup: out of memory");
		for (p = 0; p < pages[r]; p++)
			svm_page_default(&svm[r].model[p]);
		for (i = 0; i < pages[r] * KFDL_PAGE; i++)
			svm[r].cpu[i] = pattern(svm_seed(r), i);
	}
	/* region 0: GPU 0 preferred and accessing, GPU 1 in place, read-only
	 * for GPUs; pages 16-31 then preferred in system memory, prefetched to
	 * the last GPU, no access for GPU 1, not coherent, executable */
	n = 0;
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, u0);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_ACCESS, u0);
	if (k.n_gpus > 1)
		at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, k.gpu[1].gpu_id);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_RO);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_GRANULARITY, 4);
	svm_set(0, 0, 64, at, n);
	n = 0;
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, ul);
	if (k.n_gpus > 1)
		at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_NO_ACCESS, k.gpu[1].gpu_id);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_COHERENT);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_EXEC);
	svm_set(0, 16, 16, at, n);
	/* region 1: every used GPU has access, prefetched to system memory,
	 * hive-local, read-mostly, ext-coherent, not host-accessible, granularity 0 */
	n = 0;
	for (g = 0; g < k.n_gpus; g++)
		at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_ACCESS, k.gpu[g].gpu_id);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_HIVE_LOCAL |
							       KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY |
							       KFD_IOCTL_SVM_FLAG_EXT_COHERENT);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_HOST_ACCESS);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0);
	svm_set(1, 0, 16, at, n);
	/* region 2: the last GPU preferred, GPU 0 in place, always mapped,
	 * granularity 12; its last 64 pages then prefetched to GPU 0, granularity 6 */
	n = 0;
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, ul);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, u0);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_GRANULARITY, 12);
	svm_set(2, 0, 256, at, n);
	n = 0;
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, u0);
	at[n++] = svm_at(KFD_IOCTL_SVM_ATTR_GRANULARITY, 6);
	svm_set(2, 192, 64, at, n);
	/* a range lost at restore reads back as the defaults: no page may look like them */
	svm_page_default(&dflt);
	for (r = 0; r < SVM_REGIONS; r++)
		for (p = 0; p < svm[r].pages; p++)
			if (!memcmp(&svm[r].model[p], &dflt, sizeof(dflt)))
				finish_fail("setup: SVM region %d page %" PRIu64
					    " has the default attributes",
					    r, p);
	/* the model must agree with the kernel before any checkpoint */
	check_svm();
}

/* SET_XNACK_MODE query: the mode this process set (0 unless --xnack) */
static void check_xnack(void)
{
	int32_t mode = -1;
	int rc = kfdl_xnack(&k, &mode);

	if (rc == -EPERM && !opt_xnack)
		return; /* a kernel without SVM: no XNACK either */
	if (rc)
		finish_fail("SET_XNACK_MODE query: %s", strerror(-rc));
	if (mode != opt_xnack)
		finish_fail("XNACK mode is %d, want %d", mode, opt_xnack);
}

static void check_owner_bytes(struct owner *o)
{
	char name[128];
	int b, q;

	for (b = 0; b < o->n_bos; b++) {
		struct kfdl_bo *bo = &o->bos[b];

		if (!bo->cpu)
			continue;
		snprintf(name, sizeof(name), "%s%s BO %d of gpu %u at %p", o->id ? "thread " : "",
			 kfdl_type_name(bo->type), b, k.gpu[bo->gi].gpu_id, (void *)bo->cpu);
		if (o->id) /* "thread N: VRAM BO ..." */
			snprintf(name, sizeof(name), "thread %d: %s BO %d of gpu %u at %p", o->id,
				 kfdl_type_name(bo->type), b, k.gpu[bo->gi].gpu_id,
				 (void *)bo->cpu);
		check_bytes(name, bo_seed(o, b), bo->cpu, bo->size);
	}
	for (q = 0; q < o->n_queues; q++) {
		struct kfdl_queue *qu = &o->queues[q];

		snprintf(name, sizeof(name), "ring of queue %u (gpu %u)", qu->queue_id,
			 k.gpu[qu->gi].gpu_id);
		check_bytes(name, 100 + o->id * 64 + q, qu->bufs[0].cpu, KFDL_PAGE);
		if (*(volatile uint64_t *)qu->bufs[2].cpu != (uint64_t)(0x40 + q))
			finish_fail("wptr of queue %u (gpu %u) changed", qu->queue_id,
				    k.gpu[qu->gi].gpu_id);
	}
}

/* doorbells and MMIO pages: still mapped and writable */
static void check_owner_io(struct owner *o, uint64_t round)
{
	uint64_t v, got = 0;
	int q, b, sig;

	for (q = 0; q < o->n_queues; q++) {
		struct kfdl_queue *qu = &o->queues[q];
		volatile uint64_t *db =
			qu->doorbell ? (volatile uint64_t *)((uint8_t *)qu->doorbell +
							     (qu->doorbell_offset &
							      (2 * KFDL_PAGE - 1) & ~7ULL))
				     : NULL;

		v = 0x1000 + round * 16 + q;
		sig = io_poke(db, v, &got);
		if (sig)
			finish_fail("doorbell of queue %u (gpu %u) at %p: not usable (%s)",
				    qu->queue_id, k.gpu[qu->gi].gpu_id, (void *)db,
				    sig < 0 ? "unmapped" : strsignal(sig));
		if (got != v)
			finish_fail("doorbell of queue %u (gpu %u): wrote 0x%" PRIx64
				    ", read 0x%" PRIx64,
				    qu->queue_id, k.gpu[qu->gi].gpu_id, v, got);
	}
	for (b = 0; b < o->n_bos; b++) {
		struct kfdl_bo *bo = &o->bos[b];

		if (bo->type != KFDL_MMIO || !bo->io)
			continue;
		/* the HDP flush page is shared by all processes on the node: own word */
		v = 0xabc00000 + round * 16 + b;
		sig = io_poke((volatile uint64_t *)bo->io + (is_child ? 8 : 0) + o->id, v, &got);
		if (sig)
			finish_fail("MMIO page of gpu %u at %p: not usable (%s)",
				    k.gpu[bo->gi].gpu_id, bo->io,
				    sig < 0 ? "unmapped" : strsignal(sig));
		if (got != v)
			finish_fail("MMIO page of gpu %u: wrote 0x%" PRIx64 ", read 0x%" PRIx64,
				    k.gpu[bo->gi].gpu_id, v, got);
	}
}

/* every page of the big BO: the 64 written ones hold their pattern, all others are zero */
static void check_big(void)
{
	static const uint8_t zeros[KFDL_PAGE];
	uint64_t npages, j, pg, next, i;
	char name[96];

	if (!big.cpu)
		return;
	npages = big.size / KFDL_PAGE;
	for (pg = 0; opt_big_fill && pg < npages; pg++) {
		const uint64_t *w = (const uint64_t *)(big.cpu + pg * KFDL_PAGE);
		uint64_t gen = page_gen(pg);

		for (i = 0; i < WORDS_PER_PAGE; i++)
			if (w[i] != gen_word(pg, i, gen))
				finish_fail("big VRAM BO (filled): page %" PRIu64 " word %" PRIu64
					    " is 0x%016" PRIx64 ", want 0x%016" PRIx64
					    " (generation %" PRIu64 ")",
					    pg, i, w[i], gen_word(pg, i, gen), gen);
	}
	for (j = 0; !opt_big_fill && j < 64; j++) {
		pg = big_page(j, npages);
		snprintf(name, sizeof(name), "big VRAM BO (%" PRIu64 " bytes) page %" PRIu64,
			 big.size, pg);
		check_bytes(name, 900000 + (uint32_t)j, big.cpu + pg * KFDL_PAGE, KFDL_PAGE);
		next = j == 63 ? npages : big_page(j + 1, npages);
		for (pg++; pg < next; pg++) {
			const uint8_t *p = big.cpu + pg * KFDL_PAGE;

			if (!memcmp(p, zeros, KFDL_PAGE))
				continue;
			for (i = 0; !p[i]; i++)
				;
			finish_fail("big VRAM BO: untouched page %" PRIu64 " byte %" PRIu64
				    " is 0x%02x, want 0",
				    pg, i, p[i]);
		}
	}
}

static int list_fds(int *nums, char (*targets)[256], int max)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < max) {
		char p[300];
		ssize_t l;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		fd = atoi(d->d_name);
		if (fd == dirfd(dir))
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		l = readlink(p, targets[n], 255);
		targets[n][l < 0 ? 0 : l] = 0;
		nums[n++] = fd;
	}
	closedir(dir);
	return n;
}

static int is_render(const char *t)
{
	return !strncmp(t, "/dev/dri/renderD", 16);
}

static void record_fds(void)
{
	static char t[MAX_FDS][256];
	int nums[MAX_FDS], i;

	n_fds0 = list_fds(nums, t, MAX_FDS);
	for (i = 0; i < n_fds0; i++) {
		fds0[i].fd = nums[i];
		snprintf(fds0[i].target, sizeof(fds0[i].target), "%s", t[i]);
	}
}

/* the same fds as before the checkpoint: none more, none less, same files */
static void check_fds(void)
{
	static char t[MAX_FDS][256];
	int nums[MAX_FDS], n, i, j;

	n = list_fds(nums, t, MAX_FDS);
	if (n < 0)
		finish_fail("fds: /proc/self/fd: %s", strerror(-n));
	for (i = 0; i < n; i++) {
		for (j = 0; j < n_fds0 && fds0[j].fd != nums[i]; j++)
			;
		if (j == n_fds0)
			finish_fail("fds: fd %d (%s) was not there before", nums[i], t[i]);
		if (strcmp(fds0[j].target, t[i]) && !(is_render(fds0[j].target) && is_render(t[i])))
			finish_fail("fds: fd %d is %s, was %s", nums[i], t[i], fds0[j].target);
	}
	for (j = 0; j < n_fds0; j++) {
		for (i = 0; i < n && nums[i] != fds0[j].fd; i++)
			;
		if (i == n)
			finish_fail("fds: fd %d (%s) is gone", fds0[j].fd, fds0[j].target);
	}
}

static uint32_t expected_actual(uint32_t user)
{
	int i;

	for (i = 0; i < n_map; i++)
		if (map_user[i] == user)
			return map_actual[i];
	return user;
}

/* ABI 2.2/7.8: one entry per pdd (every GPU this process may use), actual ids */
static void check_apertures(uint32_t *ids, uint32_t *n)
{
	struct kfdl_node nodes[KFDL_MAX_GPUS];
	int nn = kfdl_nodes(nodes, KFDL_MAX_GPUS), rc, i;

	rc = kfdl_apertures(&k, ids, n, KFDL_MAX_GPUS);
	if (rc)
		finish_fail("GET_PROCESS_APERTURES_NEW: %s", strerror(-rc));
	if (!strcmp(opt_sabotage, "apertures") && *n)
		ids[*n - 1] ^= 0x8000;
	if (*n != n_ap)
		finish_fail("apertures: %u devices, had %u", *n, n_ap);
	if (nn != (int)*n)
		finish_fail("apertures: %u devices, but the topology shows %d GPUs", *n, nn);
	for (i = 0; i < nn; i++)
		if (ids[i] != nodes[i].gpu_id)
			finish_fail("apertures: device %d is gpu_id %u, the topology's GPU %d is "
				    "%u (actual ids in topology order)",
				    i, ids[i], i, nodes[i].gpu_id);
	if (!n_map) /* no remap: the ids of the setup */
		for (i = 0; i < (int)*n; i++)
			if (ids[i] != ap_ids[i])
				finish_fail("apertures: device %d is gpu_id %u, was %u", i, ids[i],
					    ap_ids[i]);
}

static void check_render_fds(const uint32_t *ap, uint32_t n_ap_now)
{
	struct kfdl_node nodes[KFDL_MAX_GPUS];
	uint32_t seen[KFDL_MAX_GPUS] = {0};
	int nn = kfdl_nodes(nodes, KFDL_MAX_GPUS), g, i;

	for (g = 0; g < k.n_gpus; g++) {
		uint32_t user = k.gpu[g].gpu_id, want = expected_actual(user), actual = 0,
			 accel = 0;
		int fd = k.gpu[g].render_fd, rc;
		struct drm_amdgpu_info_device_head {
			uint32_t device_id, chip_rev;
			uint32_t rest[62];
		} dev = {0};
		struct wl_amdgpu_info q = {0};
		char name[16] = "";
		struct drm_version v = {.name = name, .name_len = sizeof(name) - 1};
		struct kfdl_node *node = NULL;
		struct kfdl_bo fresh;
		uint64_t avail, i8;
		struct stat st;

		if (fstat(fd, &st))
			finish_fail("render fd %d of gpu %u: %s", fd, user, strerror(errno));
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != 226)
			finish_fail("render fd %d of gpu %u is no DRM device", fd, user);
		for (i = 0; i < nn; i++)
			if (nodes[i].minor == minor(st.st_rdev))
				node = &nodes[i];
		if (!node)
			finish_fail("render fd %d of gpu %u: renderD%u is no GPU node this process "
				    "can see",
				    fd, user, minor(st.st_rdev));
		actual = node->gpu_id;
		if (actual != want)
			finish_fail(
				"render fd %d of user gpu %u is renderD%u = gpu %u, want gpu %u",
				fd, user, node->minor, actual, want);
		for (i = 0; i < g; i++)
			if (seen[i] == actual)
				finish_fail("render fds of two GPUs refer to gpu %u", actual);
		seen[g] = actual;
		for (i = 0; i < (int)n_ap_now && ap[i] != actual; i++)
			;
		if (i == (int)n_ap_now)
			finish_fail("render fd of user gpu %u: gpu %u is not in the apertures",
				    user, actual);
		if (ioctl(fd, DRM_IOCTL_VERSION, &v))
			finish_fail("render fd %d of gpu %u: DRM_IOCTL_VERSION: %s", fd, user,
				    strerror(errno));
		if (strcmp(name, "amdgpu") || v.version_major != 3)
			finish_fail("render fd %d of gpu %u: driver %s %d (want amdgpu 3)", fd,
				    user, name, v.version_major);
		q.return_pointer = (uintptr_t)&accel;
		q.return_size = sizeof(accel);
		q.query = WL_AMDGPU_INFO_ACCEL_WORKING;
		if (ioctl(fd, WL_IOCTL_AMDGPU_INFO, &q) || !accel)
			finish_fail("render fd %d of gpu %u: AMDGPU_INFO ACCEL_WORKING: %s, %u", fd,
				    user, strerror(errno), accel);
		q.return_pointer = (uintptr_t)&dev;
		q.return_size = sizeof(dev);
		q.query = WL_AMDGPU_INFO_DEV_INFO;
		if (ioctl(fd, WL_IOCTL_AMDGPU_INFO, &q))
			finish_fail("render fd %d of gpu %u: AMDGPU_INFO DEV_INFO: %s", fd, user,
				    strerror(errno));
		if (dev.device_id != node->device_id)
			finish_fail("render fd %d of gpu %u: DEV_INFO device_id 0x%x, node %u has "
				    "0x%" PRIx64,
				    fd, user, dev.device_id, node->node, node->device_id);
		/* the user id still names the GPU in KFD calls; this fd owns its VM */
		rc = kfdl_available_memory(&k, user, &avail);
		if (rc)
			finish_fail("AVAILABLE_MEMORY on user gpu %u: %s", user, strerror(-rc));
		rc = kfdl_alloc(&k, g, KFDL_VRAM, 3 * KFDL_PAGE, &fresh);
		if (rc)
			finish_fail(
				"fresh VRAM BO on user gpu %u, CPU-mapped through render fd %d: "
				"%s",
				user, fd, strerror(-rc));
		if (fresh.handle >> 32 != user)
			finish_fail("fresh BO on user gpu %u: handle 0x%" PRIx64
				    " does not carry the user id",
				    user, fresh.handle);
		for (i8 = 0; i8 < fresh.size; i8++)
			fresh.cpu[i8] = pattern(555, i8);
		check_bytes("fresh VRAM BO", 555, fresh.cpu, fresh.size);
		rc = kfdl_map(&k, &fresh, &user, 1);
		if (!rc)
			rc = kfdl_unmap_all(&k, &fresh);
		if (rc)
			finish_fail("fresh BO on user gpu %u: MAP/UNMAP with the user id: %s", user,
				    strerror(-rc));
		rc = kfdl_free(&k, &fresh);
		if (rc)
			finish_fail("fresh BO on user gpu %u: FREE: %s", user, strerror(-rc));
	}
}

static void check_events_unsignaled(struct owner *o)
{
	uint32_t i, res;
	int rc;

	for (i = 0; i < N_EVENTS; i++) {
		res = ~0u;
		rc = kfdl_wait_event(&k, o->events[i], 0, &res);
		if (rc || res != KFD_IOC_WAIT_RESULT_TIMEOUT)
			finish_fail(
				"event %u: WAIT_EVENTS before SET: %s, result %u (want unsignaled)",
				o->events[i], strerror(-rc), res);
	}
}

/* what can be checked again and again: bytes, I/O pages, fds, ids */
static void check_nondestructive(uint64_t round)
{
	uint32_t ids[KFDL_MAX_GPUS], n = 0;
	int o;

	for (o = 0; o < n_owners; o++)
		check_owner_bytes(&owners[o]);
	check_big();
	check_host_mem();
	if (ro_bo.cpu)
		check_bytes("read-only (not WRITABLE) VRAM BO", 910000, ro_bo.cpu, RO_BO_SIZE);
	check_svm();
	check_xnack();
	for (o = 0; o < n_owners; o++)
		check_owner_io(&owners[o], round);
	check_fds();
	check_apertures(ids, &n);
	if (opt_render)
		check_render_fds(ids, n);
}

/* a GPU this BO is not mapped on (0: mapped on all) */
static uint32_t not_mapped_on(const struct kfdl_bo *bo)
{
	uint32_t i;
	int g;

	for (g = 0; g < k.n_gpus; g++) {
		for (i = 0; i < bo->n_mapped; i++)
			if (bo->mapped[i] == k.gpu[g].gpu_id)
				break;
		if (i == bo->n_mapped)
			return k.gpu[g].gpu_id;
	}
	return 0;
}

/* events, queues, mappings and handles; leaves nothing behind */
static void verify_destructive(struct owner *o)
{
	const char *th = o->id ? "thread " : "";
	uint32_t i;
	int b, q, rc;

	for (i = 0; i < N_EVENTS; i++) {
		uint32_t res = ~0u;

		rc = kfdl_wait_event(&k, o->events[i], 0, &res);
		if (rc || res != KFD_IOC_WAIT_RESULT_TIMEOUT)
			finish_fail("%sevent %u: WAIT_EVENTS before SET: %s, result %u (want "
				    "unsignaled)",
				    th, o->events[i], strerror(-rc), res);
		rc = kfdl_set_event(&k, o->events[i]);
		if (rc)
			finish_fail("%sSET_EVENT %u: %s", th, o->events[i], strerror(-rc));
		rc = kfdl_wait_event(&k, o->events[i], 1000, &res);
		if (rc || res != KFD_IOC_WAIT_RESULT_COMPLETE)
			finish_fail(
				"%sevent %u: WAIT_EVENTS after SET: %s, result %u (want complete)",
				th, o->events[i], strerror(-rc), res);
		rc = kfdl_destroy_event(&k, o->events[i]);
		if (rc)
			finish_fail("%sDESTROY_EVENT %u: %s", th, o->events[i], strerror(-rc));
		if (kfdl_destroy_event(&k, o->events[i]) != -EINVAL)
			finish_fail("%sDESTROY_EVENT %u twice did not fail with EINVAL", th,
				    o->events[i]);
	}
	for (q = 0; q < o->n_queues; q++) {
		struct kfdl_queue *qu = &o->queues[q];

		rc = kfdl_destroy_queue(&k, qu->queue_id);
		if (rc)
			finish_fail("%sDESTROY_QUEUE %u (gpu %u): %s", th, qu->queue_id,
				    k.gpu[qu->gi].gpu_id, strerror(-rc));
		if (kfdl_destroy_queue(&k, qu->queue_id) != -EINVAL)
			finish_fail("%sDESTROY_QUEUE %u twice did not fail with EINVAL", th,
				    qu->queue_id);
		for (b = 0; b < 5; b++) {
			struct kfdl_bo *bo = &qu->bufs[b];

			if ((rc = kfdl_unmap_all(&k, bo)) || (rc = kfdl_free(&k, bo)))
				finish_fail("%squeue %u buffer %d (handle 0x%" PRIx64
					    "): unmap/free: %s",
					    th, qu->queue_id, b, bo->handle, strerror(-rc));
		}
	}
	for (b = 0; b < o->n_bos; b++) {
		struct kfdl_bo *bo = &o->bos[b];
		/* exactly the GPUs it was mapped on: UNMAP elsewhere is EINVAL */
		uint32_t other = not_mapped_on(bo);

		if (other && kfdl_unmap(&k, bo, &other, 1) != -EINVAL)
			finish_fail("%s%s BO %d (handle 0x%" PRIx64
				    "): UNMAP on gpu %u, where it was "
				    "not mapped, did not fail with EINVAL",
				    th, kfdl_type_name(bo->type), b, bo->handle, other);
		rc = kfdl_unmap_all(&k, bo);
		if (rc)
			finish_fail("%s%s BO %d (handle 0x%" PRIx64 "): UNMAP on its %u GPUs: %s",
				    th, kfdl_type_name(bo->type), b, bo->handle, bo->n_mapped,
				    strerror(-rc));
		rc = kfdl_free(&k, bo);
		if (rc)
			finish_fail("%s%s BO %d (handle 0x%" PRIx64 "): FREE: %s", th,
				    kfdl_type_name(bo->type), b, bo->handle, strerror(-rc));
	}
}

/* ---- negative controls ---- */

static struct kfdl_bo *some_cpu_bo(struct owner *o)
{
	int b;

	for (b = o->n_bos / 2; b < o->n_bos; b++)
		if (o->bos[b].cpu)
			return &o->bos[b];
	for (b = 0; b < o->n_bos; b++)
		if (o->bos[b].cpu)
			return &o->bos[b];
	return NULL;
}

static void sabotage(void)
{
	const char *s = opt_sabotage;
	struct owner *m = &owners[0];
	struct kfdl_bo *bo;
	int b;

	if (is_child) {
		if (!strcmp(s, "child") && (bo = some_cpu_bo(m)))
			bo->cpu[bo->size / 2] ^= 0xff;
		return;
	}
	if (!strcmp(s, "byte") && (bo = some_cpu_bo(m)))
		bo->cpu[bo->size - 1] ^= 0xff;
	else if (!strcmp(s, "big-bo") && big.cpu)
		big.cpu[big.size - 1] ^= 0xff;
	else if (!strcmp(s, "big-bo-zero") && big.cpu) /* a page that must stay zero */
		big.cpu[(big_page(10, big.size / KFDL_PAGE) + 5) * KFDL_PAGE + 100] ^= 0xff;
	else if (!strcmp(s, "svm") && svm[1].cpu) {
		/* the kernel's attributes change behind the model's back */
		struct kfd_ioctl_svm_attribute at = {KFD_IOCTL_SVM_ATTR_GRANULARITY, 7};

		kfdl_svm(&k, (uintptr_t)svm[1].cpu, svm[1].pages * KFDL_PAGE,
			 KFD_IOCTL_SVM_OP_SET_ATTR, &at, 1);
	} else if (!strcmp(s, "svm-byte") && svm[2].cpu)
		svm[2].cpu[svm[2].pages * KFDL_PAGE - 1] ^= 0xff;
	else if (!strcmp(s, "thread") && n_owners > 1 && (bo = some_cpu_bo(&owners[n_owners - 1])))
		bo->cpu[0] ^= 0xff;
	else if (!strcmp(s, "doorbell")) {
		munmap(m->queues[0].doorbell, 2 * KFDL_PAGE);
	} else if (!strcmp(s, "mmio")) {
		for (b = 0; b < m->n_bos; b++)
			if (m->bos[b].io) {
				munmap(m->bos[b].io, KFDL_PAGE);
				break;
			}
	} else if (!strcmp(s, "render-reopen")) {
		/* another open file of the same node: not the VM's DRM file */
		char p[64];
		int fd;

		snprintf(p, sizeof(p), "/dev/dri/renderD%u", k.gpu[0].minor);
		fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			dup3(fd, k.gpu[0].render_fd, O_CLOEXEC);
			close(fd);
		}
	} else if (!strcmp(s, "render-swap") && k.n_gpus > 1) {
		int fd = dup(k.gpu[0].render_fd);

		dup3(k.gpu[1].render_fd, k.gpu[0].render_fd, O_CLOEXEC);
		dup3(fd, k.gpu[1].render_fd, O_CLOEXEC);
		close(fd);
	} else if (!strcmp(s, "fd")) {
		if (open("/dev/null", O_RDONLY) < 0)
			perror("sabotage fd");
	} else if (!strcmp(s, "event")) {
		kfdl_destroy_event(&k, m->events[N_EVENTS - 1]);
	} else if (!strcmp(s, "queue")) {
		kfdl_destroy_queue(&k, m->queues[0].queue_id);
	} else if (!strcmp(s, "map")) {
		for (b = 0; b < m->n_bos; b++)
			if (m->bos[b].n_mapped) {
				kfdl_unmap(&k, &m->bos[b], &m->bos[b].mapped[0], 1);
				break;
			}
	}
}

/* ---- threads ---- */

static void *thread_main(void *arg)
{
	struct owner *o = arg;

	o->tid = gettid();
	/* one thread sets up at a time unless --parallel-setup (which found a
	 * p->mutex vs mmap_lock deadlock in kfdsim, fixed since) */
	if (!opt_parallel_setup)
		pthread_mutex_lock(&setup_lock);
	setup_thread_state(o);
	if (!opt_parallel_setup)
		pthread_mutex_unlock(&setup_lock);
	pthread_mutex_lock(&go_lock);
	n_ready_threads++;
	pthread_cond_broadcast(&go_cond);
	while (go_phase < 2)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
	check_owner_bytes(o);
	check_owner_io(o, 99);
	verify_destructive(o);
	return NULL;
}

/* ---- main flow ---- */

/* "map USER ACTUAL" lines of PATH (TRIGGER or TRIGGER.probe) */
static void parse_map(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned u, a;
	char line[128];

	n_map = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "map %u %u", &u, &a) == 2 && n_map < KFDL_MAX_GPUS) {
			map_user[n_map] = u;
			map_actual[n_map++] = a;
		}
	if (f)
		fclose(f);
}

static void write_ready(void)
{
	char tmp[4200];
	FILE *f;
	int o, b, i, nb = 0, nq = 0;

	for (o = 0; o < n_owners; o++) {
		nb += owners[o].n_bos;
		nq += owners[o].n_queues;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", ready_path);
	f = fopen(tmp, "w");
	if (!f)
		finish_fail("setup: %s: %s", tmp, strerror(errno));
	fprintf(f, "gpus %d bos %d queues %d events %d\n", k.n_gpus, nb + (big.cpu ? 1 : 0), nq,
		N_EVENTS * n_owners);
	for (i = 0; i < k.n_gpus; i++)
		fprintf(f, "gpu %u %u %u\n", k.gpu[i].gpu_id, k.gpu[i].node, k.gpu[i].minor);
	fprintf(f, "visible");
	for (i = 0; i < k.n_visible; i++)
		fprintf(f, " %u", k.visible_ids[i]);
	fprintf(f, "\n");
	for (i = 0; i < n_fds0; i++)
		fprintf(f, "fd %d %s\n", fds0[i].fd, fds0[i].target);
	for (o = 0; o < n_owners; o++)
		for (b = 0; b < owners[o].n_bos; b++)
			if (owners[o].bos[b].cpu)
				fprintf(f, "bo %s %u 0x%" PRIxPTR " %" PRIu64 "\n",
					kfdl_type_name(owners[o].bos[b].type),
					k.gpu[owners[o].bos[b].gi].gpu_id,
					(uintptr_t)owners[o].bos[b].cpu, owners[o].bos[b].size);
	if (big.cpu)
		fprintf(f, "bigbo %u 0x%" PRIxPTR " %" PRIu64 "\n", k.gpu[0].gpu_id,
			(uintptr_t)big.cpu, big.size);
	for (i = 0; i < SVM_REGIONS && svm[i].cpu; i++)
		fprintf(f, "svm 0x%" PRIxPTR " %" PRIu64 "\n", (uintptr_t)svm[i].cpu,
			(uint64_t)(svm[i].pages * KFDL_PAGE));
	fprintf(f, "xnack %d\n", opt_xnack);
	for (o = 1; o < n_owners; o++)
		fprintf(f, "thread %d %d\n", o, owners[o].tid);
	if (child_pid > 0)
		fprintf(f, "child %d\n", child_pid);
	if (fclose(f) || rename(tmp, ready_path))
		finish_fail("setup: ready file: %s", strerror(errno));
}

/* TRIGGER.probe with a new number: the non-destructive checks, RESULT.probe */
static void maybe_probe(uint64_t *last)
{
	char p[4200], out[700];
	jmp_buf jb;
	uint64_t n = 0;
	FILE *f;

	static ino_t last_ino;
	struct stat st;

	snprintf(p, sizeof(p), "%s.probe", trigger_path);
	/* opened only when it is a new file: no fd of ours comes and goes while
	 * the test compares /proc/PID/fd */
	if (stat(p, &st) || st.st_ino == last_ino)
		return;
	last_ino = st.st_ino;
	f = fopen(p, "r");
	if (!f)
		return;
	if (fscanf(f, "%" SCNu64, &n) != 1)
		n = 0;
	fclose(f);
	if (!n || n == *last)
		return;
	*last = n;
	parse_map(p);
	if (setjmp(jb)) {
		probe_jb = NULL;
		snprintf(out, sizeof(out), "FAIL %" PRIu64 " %s\n", n, probe_msg);
	} else {
		probe_jb = &jb;
		check_nondestructive(n);
		for (int o = 0; o < n_owners; o++)
			check_events_unsignaled(&owners[o]);
		probe_jb = NULL;
		snprintf(out, sizeof(out), "PASS %" PRIu64 "\n", n);
	}
	snprintf(p, sizeof(p), "%s.probe", result_path);
	write_file(p, out); /* not on stdout: its size must not change after a dump */
}

/* TRIGGER.mutate with a new generation: rewrite its tenth of the big BO, RESULT.mutate */
static void maybe_mutate(void)
{
	static ino_t last_ino;
	uint64_t gen = 0, pg, npages = big.size / KFDL_PAGE;
	char p[4200], out[64];
	struct stat st;
	FILE *f;

	snprintf(p, sizeof(p), "%s.mutate", trigger_path);
	if (!opt_big_fill || !big.cpu || stat(p, &st) || st.st_ino == last_ino)
		return;
	last_ino = st.st_ino;
	f = fopen(p, "r");
	if (!f)
		return;
	if (fscanf(f, "%" SCNu64, &gen) != 1)
		gen = 0;
	fclose(f);
	if (gen <= big_gen)
		return;
	big_gen = gen;
	tenth_gen[gen % 10] = gen;
	for (pg = 0; pg < npages; pg++)
		if (pg / MUTATE_BLOCK_PAGES % 10 == gen % 10)
			fill_page(pg);
	snprintf(out, sizeof(out), "DONE %" PRIu64 "\n", gen);
	snprintf(p, sizeof(p), "%s.mutate", result_path);
	write_file(p, out);
}

static int run(void)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	uint64_t last_probe = 0;
	int o, rc, t;
	char res[1600], cl[700];

	rc = kfdl_open_sel(&k, opt_nsel ? opt_sel : NULL, opt_nsel);
	need(rc, "open /dev/kfd, render nodes, ACQUIRE_VM");
	if (opt_xnack) { /* before any queue exists (EBUSY after) */
		int32_t mode = 1;

		need(kfdl_xnack(&k, &mode), "SET_XNACK_MODE 1");
		check_xnack();
	}
	n_owners = 1;
	owners[0].id = 0;
	setup_main(&owners[0]);
	if (opt_svm)
		setup_svm();
	if (opt_big && !is_child)
		setup_big();
	if (opt_host_mem && !is_child)
		setup_host_mem();
	if (opt_ro_bo && !is_child)
		setup_ro_bo();
	if (!is_child)
		for (t = 1; t <= opt_threads; t++) {
			owners[t].id = t;
			owners[t].gi = (t - 1) % k.n_gpus;
			n_owners++;
			if (pthread_create(&owners[t].th, NULL, thread_main, &owners[t]))
				finish_fail("setup: pthread_create");
		}
	pthread_mutex_lock(&go_lock);
	while (n_ready_threads < n_owners - 1)
		pthread_cond_wait(&go_cond, &go_lock);
	go_phase = 1;
	pthread_mutex_unlock(&go_lock);
	need(kfdl_apertures(&k, ap_ids, &n_ap, KFDL_MAX_GPUS), "GET_PROCESS_APERTURES_NEW");
	if (n_ap != (uint32_t)k.n_visible)
		finish_fail("setup: apertures report %u devices, topology %d GPUs", n_ap,
			    k.n_visible);
	if (child_pid > 0) { /* the child is ready first: READY means all is set */
		while (access(child_ready, F_OK)) {
			if (waitpid(child_pid, NULL, WNOHANG) == child_pid) {
				child_pid = 0;
				finish_fail("setup: the child ended before it was ready");
			}
			nanosleep(&ts, NULL);
		}
	}
	if (opt_kfd_twice && !is_child &&
	    open("/dev/kfd", O_RDWR | O_CLOEXEC) < 0) /* kept: the same KFD process */
		finish_fail("setup: second open of /dev/kfd: %s", strerror(errno));
	record_fds();
	write_ready();
	printf("ready (%s): %d GPUs of %d, %d owners, big BO %" PRIu64 "\n", role(), k.n_gpus,
	       k.n_visible, n_owners, opt_big);
	fflush(stdout);
	while (access(trigger_path, F_OK)) {
		maybe_probe(&last_probe);
		maybe_mutate();
		nanosleep(&ts, NULL);
	}
	triggered = 1;
	parse_map(trigger_path);
	sabotage();
	check_nondestructive(0);
	pthread_mutex_lock(&go_lock);
	go_phase = 2;
	pthread_cond_broadcast(&go_cond);
	pthread_mutex_unlock(&go_lock);
	verify_destructive(&owners[0]);
	for (o = 1; o < n_owners; o++)
		pthread_join(owners[o].th, NULL);
	/* no queue is left now: the mode can be changed (the negative control) */
	if (!strcmp(opt_sabotage, "xnack") && !is_child) {
		int32_t mode = !opt_xnack;

		kfdl_xnack(&k, &mode);
	}
	check_xnack();
	if (big.cpu) {
		if ((rc = kfdl_unmap_all(&k, &big)) || (rc = kfdl_free(&k, &big)))
			finish_fail("big VRAM BO: unmap/free: %s", strerror(-rc));
	}
	if (ro_bo.cpu) {
		if ((rc = kfdl_unmap_all(&k, &ro_bo)) || (rc = kfdl_free(&k, &ro_bo)))
			finish_fail("read-only VRAM BO: unmap/free: %s", strerror(-rc));
	}
	kfdl_close(&k);
	if (opt_fork && !is_child) {
		collect_child(cl, sizeof(cl));
		if (strncmp(cl, "child PASS", 10)) {
			snprintf(res, sizeof(res), "FAIL %s\nparent PASS\n%s\n", cl, cl);
			printf("%s", res);
			write_file(result_path, res);
			return 1;
		}
		snprintf(res, sizeof(res), "PASS\nparent PASS\n%s\n", cl);
	} else {
		snprintf(res, sizeof(res), "PASS\n");
	}
	printf("%s", res);
	fflush(stdout);
	write_file(result_path, res);
	return 0;
}

static int poke(pid_t pid, uint64_t addr)
{
	char p[64];
	uint8_t c;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	fd = open(p, O_RDWR);
	if (fd < 0 || pread(fd, &c, 1, (off_t)addr) != 1) {
		printf("poke: read 0x%" PRIx64 ": %s\n", addr, strerror(errno));
		return 1;
	}
	c ^= 0xff;
	if (pwrite(fd, &c, 1, (off_t)addr) != 1) {
		printf("poke: write 0x%" PRIx64 ": %s\n", addr, strerror(errno));
		return 1;
	}
	printf("poke: flipped byte at 0x%" PRIx64 "\n", addr);
	close(fd);
	return 0;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'G':
	case 'g':
		v <<= 10; /* fall through */
	case 'M':
	case 'm':
		v <<= 10; /* fall through */
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	}
	if (*end || !v || v % KFDL_PAGE) {
		fprintf(stderr, "bad size %s (a multiple of 4 KiB)\n", s);
		exit(2);
	}
	return v;
}

static void parse_gpus(const char *s)
{
	char *end;
	long a, b;

	if (!strpbrk(s, ",-")) {
		opt_first_n = atoi(s);
		for (opt_nsel = 0; opt_nsel < opt_first_n && opt_nsel < KFDL_MAX_GPUS; opt_nsel++)
			opt_sel[opt_nsel] = opt_nsel;
		if (opt_first_n <= 0)
			goto bad;
		return;
	}
	while (*s) {
		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			goto bad;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				goto bad;
		}
		for (; a <= b && opt_nsel < KFDL_MAX_GPUS; a++)
			opt_sel[opt_nsel++] = a;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			goto bad;
	}
	return;
bad:
	fprintf(stderr, "bad --gpus %s (N, or indexes like 0,2 or 0-1)\n", s);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"gpus", required_argument, NULL, 'g'},
		{"bos", required_argument, NULL, 'b'},
		{"big-bo", required_argument, NULL, 'B'},
		{"big-bo-fill", no_argument, NULL, 'F'},
		{"host-mem", required_argument, NULL, 'H'},
		{"ro-bo", no_argument, NULL, 'R'},
		{"threads", required_argument, NULL, 't'},
		{"fork", no_argument, NULL, 'f'},
		{"render-fds", no_argument, NULL, 'r'},
		{"sabotage", required_argument, NULL, 's'},
		{"poke", no_argument, NULL, 'p'},
		{"mmio", no_argument, NULL, 'm'},
		{"parallel-setup", no_argument, NULL, 'P'},
		{"svm", no_argument, NULL, 'S'},
		{"xnack", no_argument, NULL, 'x'},
		{"kfd-twice", no_argument, NULL, 'K'},
		{NULL, 0, NULL, 0},
	};
	struct sigaction sa = {.sa_handler = io_signal, .sa_flags = SA_NODEFER};
	int c, do_poke = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'g':
			parse_gpus(optarg);
			break;
		case 'b':
			opt_bos = atoi(optarg);
			break;
		case 'B':
			opt_big = parse_size(optarg);
			break;
		case 'F':
			opt_big_fill = 1;
			break;
		case 'H':
			opt_host_mem = parse_size(optarg) & ~(uint64_t)(KFDL_PAGE - 1);
			break;
		case 'R':
			opt_ro_bo = 1;
			break;
		case 't':
			opt_threads = atoi(optarg);
			if (opt_threads < 0 || opt_threads > MAX_THREADS)
				opt_threads = MAX_THREADS;
			break;
		case 'f':
			opt_fork = 1;
			break;
		case 'r':
			opt_render = 1;
			break;
		case 'm':
			opt_mmio = 1;
			break;
		case 'P':
			opt_parallel_setup = 1;
			break;
		case 'S':
			opt_svm = 1;
			break;
		case 'x':
			opt_xnack = 1;
			break;
		case 'K':
			opt_kfd_twice = 1;
			break;
		case 's':
			opt_sabotage = optarg;
			break;
		case 'p':
			do_poke = 1;
			break;
		default:
			return 2;
		}
	}
	if (do_poke && argc - optind == 2)
		return poke(atoi(argv[optind]), strtoull(argv[optind + 1], NULL, 0));
	if (do_poke || argc - optind != 3) {
		fprintf(stderr,
			"usage: %s [--gpus N|LIST] [--bos N] [--big-bo SIZE] [--big-bo-fill] "
			"[--ro-bo] [--threads N] "
			"[--fork] [--mmio] [--render-fds] [--svm] [--xnack] [--sabotage WHAT] "
			"READY TRIGGER RESULT\n"
			"       %s --poke PID ADDR\n",
			argv[0], argv[0]);
		return 2;
	}
	ready_path = argv[optind];
	trigger_path = argv[optind + 1];
	result_path = argv[optind + 2];
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (opt_fork) {
		snprintf(child_ready, sizeof(child_ready), "%s.child", ready_path);
		snprintf(child_result, sizeof(child_result), "%s.child", result_path);
		fflush(stdout);
		child_pid = fork();
		if (child_pid < 0) {
			perror("fork");
			return 1;
		}
		if (child_pid == 0) { /* own KFD process: /dev/kfd opened after the fork */
			is_child = 1;
			ready_path = child_ready;
			result_path = child_result;
			opt_threads = 0;
		}
	}
	return run();
}
