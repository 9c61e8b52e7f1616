// SPDX-License-Identifier: MIT
/*
 * zdtm-gpu-basic: ZDTM-style workload for KFD checkpoint/restore.
 *
 *   zdtm-gpu-basic READY TRIGGER RESULT
 *       sets up, on every visible GPU: VRAM, GTT, USERPTR, DOORBELL and
 *       MMIO_REMAP BOs (VRAM/GTT/USERPTR filled with patterns), an AQL queue with its doorbell
 * mmap'ed, and signal events; writes READY (with "bo TYPE GPU CPUADDR SIZE" lines), waits for the
 * file TRIGGER (checkpoint/restore happen meanwhile), then re-verifies everything and writes "PASS"
 * or "FAIL <first difference>" to RESULT (and stdout); exits 0 or 1. Verified, in this order: every
 *       byte of every CPU-mapped BO, ring contents and wptr of each queue,
 *       the doorbell mapping; gpu_ids through GET_PROCESS_APERTURES_NEW;
 *       each event unsignaled, signaled after SET_EVENT, destroyable once;
 *       each queue id destroyable once; each BO's mapping set (UNMAP on a
 *       GPU it is not mapped on: EINVAL; on its GPUs: ok) and handle (FREE).
 *       GTT BOs are mapped on their GPU and the next one, VRAM on all.
 *   zdtm-gpu-basic --poke PID ADDR
 *       flips one byte at ADDR of process PID through /proc/PID/mem (for
 *       negative controls); exits 0 if written, 1 with the error if not.
 */
#include "kfdlib.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_EVENTS 3

static struct kfdl k;
static struct kfdl_bo bos[KFDL_MAX_GPUS * 5];
static int n_bos;
static struct kfdl_queue queues[KFDL_MAX_GPUS];
static uint32_t events[N_EVENTS];
static uint32_t ap_ids[KFDL_MAX_GPUS], n_ap;
static const char *result_path;

static uint8_t pattern(int bo, uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + (uint64_t)bo * 29 + 0x5a);
}

__attribute__((format(printf, 1, 2), noreturn)) static void finish_fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("FAIL %s\n", msg);
	fflush(stdout);
	f = result_path ? fopen(result_path, "w") : NULL;
	if (f) {
		fprintf(f, "FAIL %s\n", msg);
		fclose(f);
	}
	exit(1);
}

static void need(int rc, const char *what)
{
	if (rc)
		finish_fail("setup: %s: %s", what, strerror(-rc));
}

static void setup(void)
{
	uint32_t all[KFDL_MAX_GPUS];
	static const uint64_t sizes[5] = {65536, 16384, 16384, 8192, 4096};
	char what[64];
	int g, t;
	uint64_t i;

	need(kfdl_open(&k), "open /dev/kfd, render nodes, ACQUIRE_VM");
	for (g = 0; g < k.n_gpus; g++)
		all[g] = k.gpu[g].gpu_id;
	for (g = 0; g < k.n_gpus; g++) {
		for (t = KFDL_VRAM; t <= KFDL_MMIO; t++) {
			struct kfdl_bo *b = &bos[n_bos];

			snprintf(what, sizeof(what), "alloc %s on gpu %u", kfdl_type_name(t),
				 all[g]);
			need(kfdl_alloc(&k, g, t, sizes[t], b), what);
			if (b->cpu)
				for (i = 0; i < b->size; i++)
					b->cpu[i] = pattern(n_bos, i);
			snprintf(what, sizeof(what), "map %s of gpu %u", kfdl_type_name(t), all[g]);
			if (t == KFDL_VRAM) /* on several GPUs: all of them */
				need(kfdl_map(&k, b, all, k.n_gpus), what);
			else if (t == KFDL_GTT) /* own GPU and the next one */
				need(kfdl_map(&k, b, all + g,
					      k.n_gpus > 1 && g + 1 < k.n_gpus ? 2 : 1),
				     what);
			else if (t != KFDL_MMIO)
				need(kfdl_map(&k, b, &all[g], 1), what);
			n_bos++;
		}
		snprintf(what, sizeof(what), "AQL queue on gpu %u", all[g]);
		need(kfdl_create_queue(&k, g, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, &queues[g]), what);
		/* a write pointer value and ring contents: bytes to re-verify */
		for (i = 0; i < KFDL_PAGE; i++)
			queues[g].bufs[0].cpu[i] = pattern(100 + g, i);
		*(volatile uint64_t *)queues[g].bufs[2].cpu = 0x40 + g;
		*(volatile uint64_t *)queues[g].doorbell = 0x40 + g; /* ring the doorbell */
	}
	for (i = 0; i < N_EVENTS; i++)
		need(kfdl_create_event(&k, KFD_IOC_EVENT_SIGNAL, i == 0, &events[i]),
		     "CREATE_EVENT");
	need(kfdl_apertures(&k, ap_ids, &n_ap, KFDL_MAX_GPUS), "GET_PROCESS_APERTURES_NEW");
	if (n_ap != (uint32_t)k.n_gpus)
		finish_fail("setup: apertures report %u devices, topology %d GPUs", n_ap, k.n_gpus);
}

static void check_bytes(const char *name, int bo, const uint8_t *p, uint64_t size)
{
	uint64_t i;

	for (i = 0; i < size; i++)
		if (p[i] != pattern(bo, i))
			finish_fail("%s: byte %" PRIu64 " is 0x%02x, want 0x%02x", name, i, p[i],
				    pattern(bo, i));
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

static void verify(void)
{
	uint32_t ids[KFDL_MAX_GPUS], n = 0, i;
	char name[96];
	int b, g, rc;

	/* 1. every byte of every CPU-visible BO (non-destructive checks first) */
	for (b = 0; b < n_bos; b++) {
		if (!bos[b].cpu)
			continue;
		snprintf(name, sizeof(name), "%s BO %d of gpu %u at %p",
			 kfdl_type_name(bos[b].type), b, k.gpu[bos[b].gi].gpu_id,
			 (void *)bos[b].cpu);
		check_bytes(name, b, bos[b].cpu, bos[b].size);
	}
	for (g = 0; g < k.n_gpus; g++) {
		snprintf(name, sizeof(name), "ring of queue %u (gpu %u)", queues[g].queue_id,
			 k.gpu[g].gpu_id);
		check_bytes(name, 100 + g, queues[g].bufs[0].cpu, KFDL_PAGE);
		if (*(volatile uint64_t *)queues[g].bufs[2].cpu != (uint64_t)(0x40 + g))
			finish_fail("wptr of queue %u (gpu %u) changed", queues[g].queue_id,
				    k.gpu[g].gpu_id);
		(void)*(volatile uint64_t *)queues[g].doorbell; /* still mapped */
	}
	/* 2. gpu_ids through the apertures ioctl */
	rc = kfdl_apertures(&k, ids, &n, KFDL_MAX_GPUS);
	if (rc)
		finish_fail("GET_PROCESS_APERTURES_NEW: %s", strerror(-rc));
	if (n != n_ap)
		finish_fail("apertures: %u devices, had %u", n, n_ap);
	for (i = 0; i < n; i++)
		if (ids[i] != ap_ids[i])
			finish_fail("apertures: device %u is gpu_id %u, was %u", i, ids[i],
				    ap_ids[i]);
	/* 3. event ids: each unsignaled, can be signaled, then destroyed exactly once */
	for (i = 0; i < N_EVENTS; i++) {
		uint32_t res = ~0u;

		rc = kfdl_wait_event(&k, events[i], 0, &res);
		if (rc || res != KFD_IOC_WAIT_RESULT_TIMEOUT)
			finish_fail(
				"event %u: WAIT_EVENTS before SET: %s, result %u (want unsignaled)",
				events[i], strerror(-rc), res);
		rc = kfdl_set_event(&k, events[i]);
		if (rc)
			finish_fail("SET_EVENT %u: %s", events[i], strerror(-rc));
		rc = kfdl_wait_event(&k, events[i], 1000, &res);
		if (rc || res != KFD_IOC_WAIT_RESULT_COMPLETE)
			finish_fail(
				"event %u: WAIT_EVENTS after SET: %s, result %u (want complete)",
				events[i], strerror(-rc), res);
		rc = kfdl_destroy_event(&k, events[i]);
		if (rc)
			finish_fail("DESTROY_EVENT %u: %s", events[i], strerror(-rc));
		if (kfdl_destroy_event(&k, events[i]) != -EINVAL)
			finish_fail("DESTROY_EVENT %u twice did not fail with EINVAL", events[i]);
	}
	/* 4. queue ids: each destroyable exactly once */
	for (g = 0; g < k.n_gpus; g++) {
		rc = kfdl_destroy_queue(&k, queues[g].queue_id);
		if (rc)
			finish_fail("DESTROY_QUEUE %u (gpu %u): %s", queues[g].queue_id,
				    k.gpu[g].gpu_id, strerror(-rc));
		if (kfdl_destroy_queue(&k, queues[g].queue_id) != -EINVAL)
			finish_fail("DESTROY_QUEUE %u twice did not fail with EINVAL",
				    queues[g].queue_id);
	}
	/* 5. handles and mappings: every mapping can be unmapped, every handle freed */
	for (g = 0; g < k.n_gpus; g++)
		for (b = 0; b < 5; b++) {
			struct kfdl_bo *bo = &queues[g].bufs[b];

			if ((rc = kfdl_unmap_all(&k, bo)) || (rc = kfdl_free(&k, bo)))
				finish_fail("queue %u buffer %d (handle 0x%" PRIx64
					    "): unmap/free: %s",
					    queues[g].queue_id, b, bo->handle, strerror(-rc));
		}
	for (b = 0; b < n_bos; b++) {
		/* exactly the GPUs it was mapped on: UNMAP elsewhere is EINVAL */
		uint32_t other = not_mapped_on(&bos[b]);

		if (other && kfdl_unmap(&k, &bos[b], &other, 1) != -EINVAL)
			finish_fail("%s BO %d (handle 0x%" PRIx64
				    "): UNMAP on gpu %u, where it was "
				    "not mapped, did not fail with EINVAL",
				    kfdl_type_name(bos[b].type), b, bos[b].handle, other);
		rc = kfdl_unmap_all(&k, &bos[b]);
		if (rc)
			finish_fail("%s BO %d (handle 0x%" PRIx64 "): UNMAP on its %u GPUs: %s",
				    kfdl_type_name(bos[b].type), b, bos[b].handle, bos[b].n_mapped,
				    strerror(-rc));
		rc = kfdl_free(&k, &bos[b]);
		if (rc)
			finish_fail("%s BO %d (handle 0x%" PRIx64 "): FREE: %s",
				    kfdl_type_name(bos[b].type), b, bos[b].handle, strerror(-rc));
	}
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

int main(int argc, char **argv)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	char tmp[4096];
	FILE *f;
	int b;

	if (argc == 4 && !strcmp(argv[1], "--poke"))
		return poke(atoi(argv[2]), strtoull(argv[3], NULL, 0));
	if (argc != 4) {
		fprintf(stderr, "usage: %s READY TRIGGER RESULT | --poke PID ADDR\n", argv[0]);
		return 2;
	}
	result_path = argv[3];
	setup();
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		finish_fail("setup: %s: %s", tmp, strerror(errno));
	fprintf(f, "gpus %d bos %d queues %d events %d\n", k.n_gpus, n_bos, k.n_gpus, N_EVENTS);
	for (b = 0; b < n_bos; b++)
		if (bos[b].cpu)
			fprintf(f, "bo %s %u 0x%" PRIxPTR " %" PRIu64 "\n",
				kfdl_type_name(bos[b].type), k.gpu[bos[b].gi].gpu_id,
				(uintptr_t)bos[b].cpu, bos[b].size);
	if (fclose(f) || rename(tmp, argv[1]))
		finish_fail("setup: ready file: %s", strerror(errno));
	printf("ready: %d GPUs, %d BOs, %d queues, %d events\n", k.n_gpus, n_bos, k.n_gpus,
	       N_EVENTS);
	fflush(stdout);
	while (access(argv[2], F_OK))
		nanosleep(&ts, NULL);
	verify();
	kfdl_close(&k);
	printf("PASS\n");
	f = fopen(result_path, "w");
	if (f) {
		fputs("PASS\n", f);
		fclose(f);
	}
	return 0;
}
