// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: the packet processor of AQL compute queues, as the CP's firmware
 * runs them (queue.c's poller calls kfdsim_aql_run() for every active AQL
 * queue, as it runs the rings of SDMA queues). Facts: the HSA platform
 * system architecture (AQL packet formats), ROCr's amd_hsa_queue.h,
 * amd_hsa_signal.h and amd_aql_queue.cpp (amd_queue_t, amd_signal_t, the
 * vendor-specific packets and how queue errors reach the runtime), Linux
 * 6.12's kfd_debug.c/kfd_process.c (send_exception_work_handler()).
 *
 * Pointers: ROCr gives CREATE_QUEUE the addresses of amd_queue_t's
 * write_dispatch_id (byte 56) and read_dispatch_id (byte 128): 64-bit
 * packet indices, monotonic; packet i is the 64 bytes at
 * ring + (i % (ring_size / 64)) * 64.
 *
 * Packets, in order, one at a time (so the barrier bit holds trivially):
 *   INVALID          (1) the producer has not published it yet: the pass
 *                    ends there and the next one looks again
 *   BARRIER_AND      (3) five dependency signals (0 = none): done when every
 *                    given signal's value is 0, else the pass ends there
 *   BARRIER_OR       (5) done when any given signal's value is 0 (or none is
 *                    given)
 *   VENDOR_SPECIFIC  (0) format (bits 15:0 of dword 0's high half):
 *                    1 PM4_IB, ROCr's ExecutePM4() on gfx9+ (code cache
 *                    invalidation when it loads code objects): the IB it
 *                    jumps to may hold only ACQUIRE_MEM and NOP, which
 *                    need nothing here (no caches); 2 BARRIER_VALUE
 *                    (a barrier on a signal's value under a mask and
 *                    condition EQ/NE/LT/GTE; no signal: done, ROCclr's
 *                    markers send such ones)
 *   KERNEL_DISPATCH  (2) shader code cannot run here: ROCclr's copy and
 *                    fill blit kernels, known by their symbol, are carried
 *                    out as the copy or fill they perform (blit.c); any
 *                    other kernel ends in a queue error (below) naming it
 *                    (its descriptor's address, and the symbol of the code
 *                    object it lies in when the object's ELF image is
 *                    loaded before it, as ROCr's loader does)
 *   AGENT_DISPATCH   (4) and any other type or vendor format: a queue error
 * A packet done: its header set back to INVALID, the read index advanced,
 * then its completion signal (amd_signal_t at the handle) decremented
 * atomically; with profiling (amd_queue_t queue_properties bit 3) its
 * start_ts/end_ts written first (GET_CLOCK_COUNTERS' GPU clock); if the
 * signal has an event mailbox, the event id is written there and the KFD
 * event signalled as the CP's end-of-pipe interrupt does.
 *
 * Queue errors: the queue stops for good (until destroyed; the read index
 * stays at the packet), a dmesg line names the queue, the packet and the
 * reason, and the runtime learns of it both ways the hardware tells it:
 * (1) the CP's: the error code (32, "invalid packet format", or 256 for a
 * vendor packet) ORed into the value of amd_queue_t's queue_inactive_signal
 * (byte 192) and its event raised through the mailbox: ROCr 5.x calls the
 * queue's error callback from that; (2) KFD's exception delivery
 * (CP_BAD_OPCODE interrupt -> send_exception_work_handler()): the bit of
 * EC_QUEUE_PACKET_UNSUPPORTED (20) or EC_QUEUE_PACKET_VENDOR_UNSUPPORTED
 * (23) ORed into the u64 at the CWSR header's err_payload_addr and the
 * event err_event_id set: ROCr 6.x's ExceptionHandler calls the callback
 * (HSA_STATUS_ERROR_INVALID_PACKET_FORMAT; HIP aborts with a message).
 */
#include <linux/kernel.h>
#include <linux/highmem.h>
#include <linux/elf.h>
#include <linux/atomic.h>
#include "kfdsim.h"

#define AQL_PACKET_BYTES	64
#define AQL_TYPE(h)		((h) & 0xff)
#define AQL_TYPE_VENDOR		0
#define AQL_TYPE_INVALID	1
#define AQL_TYPE_KERNEL_DISPATCH 2
#define AQL_TYPE_BARRIER_AND	3
#define AQL_TYPE_AGENT_DISPATCH	4
#define AQL_TYPE_BARRIER_OR	5
#define AMD_FORMAT_PM4_IB	1
#define AMD_FORMAT_BARRIER_VALUE 2

/* amd_queue_t, relative to read_dispatch_id (byte 128) */
#define AMDQ_FROM_RPTR		128
#define AMDQ_PROPERTIES		180
#define AMDQ_PROFILING		BIT(3)
#define AMDQ_INACTIVE_SIGNAL	192

/* amd_signal_t */
#define SIG_VALUE		8
#define SIG_MAILBOX		16
#define SIG_EVENT_ID		24
#define SIG_START_TS		32
#define SIG_END_TS		40

/* kfd_context_save_area_header */
#define CWSR_ERR_PAYLOAD	24
#define CWSR_ERR_EVENT_ID	32

/* error codes of the CP (queue_inactive_signal) and KFD's exception codes */
#define CP_ERR_INVALID_FORMAT	32
#define CP_ERR_VENDOR_FORMAT	256
#define EC_QUEUE_PACKET_UNSUPPORTED		20
#define EC_QUEUE_PACKET_VENDOR_UNSUPPORTED	23

#define PM4_TYPE3(h)		(((h) >> 30) == 3)
#define PM4_OPCODE(h)		(((h) >> 8) & 0xff)
#define PM4_COUNT(h)		(((h) >> 16) & 0x3fff)
#define PM4_NOP			0x10
#define PM4_INDIRECT_BUFFER	0x3f
#define PM4_ACQUIRE_MEM		0x58

/* what a packet came to */
enum {
	PKT_DONE = 0,
	PKT_WAIT = 1,		/* a barrier not satisfied, or not published */
};

struct aql_packet {
	u16 header;
	u16 format;		/* dispatch: setup; vendor: AmdFormat (bits 7:0) */
	u32 dw1;
	u64 q[7];		/* bytes 8..63; q[6] = completion signal */
};

/* @len bytes at GPU VA @va of @q's VM (kfdsim_queue_va_access); a fault is logged */
static int va_access(struct kfdsim_queue *q, u64 va, void *buf, u32 len, bool write, bool quiet)
{
	return kfdsim_queue_va_access(q, va, buf, len, write, quiet);
}

static int va_rw(struct kfdsim_queue *q, u64 va, void *buf, u32 len, bool write)
{
	return va_access(q, va, buf, len, write, false);
}

/* the same without a log line: what kernel_symbol() probes may be unmapped */
static int va_probe(struct kfdsim_queue *q, u64 va, void *buf, u32 len)
{
	return va_access(q, va, buf, len, false, true);
}

static int va_read64(struct kfdsim_queue *q, u64 va, u64 *v)
{
	return va_rw(q, va, v, sizeof(*v), false);
}

/* An atomic update of the 8-byte aligned u64 at @va (the CPU updates it too) */
static int va_atomic64(struct kfdsim_queue *q, u64 va, s64 add, u64 or_bits)
{
	struct page *page;
	u32 off, n;
	char *p;
	int ret;

	if (va & 7)
		return -EFAULT;
	ret = kfdsim_queue_va_page(q, va, true, &page, &off, &n);
	if (ret) {
		pr_warn_ratelimited(KFDSIM_NAME ": gpu%u: AQL queue %u: GPU VM fault at 0x%llx (atomic, %d)\n",
				    q->pdd->dev->gpu_index, q->id, va, ret);
		return ret;
	}
	p = kmap_local_page(page);
	if (or_bits)
		atomic64_or(or_bits, (atomic64_t *)(p + off));
	else
		atomic64_add(add, (atomic64_t *)(p + off));
	kunmap_local(p);
	set_page_dirty_lock(page);
	put_page(page);
	return 0;
}

static int signal_value(struct kfdsim_queue *q, u64 handle, s64 *value)
{
	return va_read64(q, handle + SIG_VALUE, (u64 *)value);
}

/* The event behind a signal's mailbox: the id written there, the interrupt */
static int signal_interrupt(struct kfdsim_queue *q, u64 handle)
{
	u64 mailbox, id = 0;
	int ret;

	ret = va_read64(q, handle + SIG_MAILBOX, &mailbox);
	if (ret || !mailbox)
		return ret;
	ret = va_rw(q, handle + SIG_EVENT_ID, &id, 4, false);
	if (!ret)
		ret = va_rw(q, mailbox, &id, sizeof(id), true);
	if (!ret)
		kfdsim_signal_event_interrupt(q->pdd->process, (u32)id & 0x0fffffff, 28);
	return ret;
}

static int complete_signal(struct kfdsim_queue *q, u64 handle, bool profiling, u64 t0)
{
	u64 t1 = div_u64(ktime_get_raw_ns(), 10);
	int ret = 0;

	if (!handle)
		return 0;
	if (profiling) {
		ret = va_rw(q, handle + SIG_START_TS, &t0, sizeof(t0), true);
		if (!ret)
			ret = va_rw(q, handle + SIG_END_TS, &t1, sizeof(t1), true);
	}
	if (!ret)
		ret = va_atomic64(q, handle + SIG_VALUE, -1, 0);
	if (!ret)
		ret = signal_interrupt(q, handle);
	return ret;
}

/* BARRIER_AND / BARRIER_OR: the five dependency signals */
static int dependency_barrier(struct kfdsim_queue *q, const struct aql_packet *pkt, bool any)
{
	bool given = false;
	s64 v;
	int i, ret;

	for (i = 0; i < 5; i++) {
		if (!pkt->q[i])
			continue;
		given = true;
		ret = signal_value(q, pkt->q[i], &v);
		if (ret)
			return ret;
		if (any && !v)
			return PKT_DONE;
		if (!any && v)
			return PKT_WAIT;
	}
	return any && given ? PKT_WAIT : PKT_DONE;
}

/* amd_aql_barrier_value_packet_t: signal, value, mask, condition */
static int barrier_value(struct kfdsim_queue *q, const struct aql_packet *pkt, const char **why)
{
	s64 v, want = (s64)pkt->q[1];
	u64 mask = pkt->q[2];
	u32 cond = (u32)pkt->q[3];
	bool met;
	int ret;

	/* no signal: nothing to wait for (ROCclr's markers send such ones) */
	if (!pkt->q[0])
		return PKT_DONE;
	ret = signal_value(q, pkt->q[0], &v);
	if (ret)
		return ret;
	v = (s64)((u64)v & mask);
	switch (cond) {
	case 0: met = v == want; break;
	case 1: met = v != want; break;
	case 2: met = v < want; break;
	case 3: met = v >= want; break;
	default:
		*why = "BARRIER_VALUE with an unknown condition";
		return -EINVAL;
	}
	return met ? PKT_DONE : PKT_WAIT;
}

/* amd_aql_pm4_ib_packet_t: the IB may only invalidate caches */
static int pm4_ib(struct kfdsim_queue *q, const struct aql_packet *pkt, const char **why)
{
	u32 jump[4] = {pkt->dw1, (u32)pkt->q[0], (u32)(pkt->q[0] >> 32), (u32)pkt->q[1]};
	u64 ib = (jump[1] & ~3ULL) | ((u64)(jump[2] & 0xffff) << 32);
	u32 dws = jump[3] & 0xfffff, i = 0, h;
	int ret;

	if (!PM4_TYPE3(jump[0]) || PM4_OPCODE(jump[0]) != PM4_INDIRECT_BUFFER) {
		*why = "PM4_IB packet without an INDIRECT_BUFFER jump";
		return -EINVAL;
	}
	while (i < dws) {
		ret = va_rw(q, ib + 4ULL * i, &h, 4, false);
		if (ret)
			return ret;
		if (!PM4_TYPE3(h) || (PM4_OPCODE(h) != PM4_ACQUIRE_MEM && PM4_OPCODE(h) != PM4_NOP)) {
			pr_warn_ratelimited(KFDSIM_NAME ": PM4 IB at 0x%llx: dword %u, header 0x%08x (opcode 0x%02x) not modelled (only ACQUIRE_MEM and NOP)\n",
					    ib, i, h, PM4_OPCODE(h));
			*why = "PM4 IB with a command other than ACQUIRE_MEM or NOP";
			return -EINVAL;
		}
		i += PM4_COUNT(h) + 2;
	}
	return PKT_DONE;
}

/*
 * The symbol of the kernel descriptor at @kd: ROCr loads a code object's
 * first segment, which starts with the ELF header and holds the dynamic
 * symbol table, at the object's base; the descriptor is "NAME.kd" there.
 * Best effort: @name stays empty if anything does not fit.
 */
static void kernel_symbol(struct kfdsim_queue *q, u64 kd, char *name, u32 size)
{
	u64 base = kd & ~(u64)(PAGE_SIZE - 1), symtab = 0, strtab = 0, hash = 0;
	struct elf64_hdr eh;
	struct elf64_phdr ph;
	Elf64_Dyn dyn;
	Elf64_Sym sym;
	u32 i, nsyms = 0, pages;

	name[0] = 0;
	for (pages = 0; pages < 256; pages++, base -= PAGE_SIZE) {
		if (va_probe(q, base, &eh, sizeof(eh)))
			return;
		if (!memcmp(eh.e_ident, ELFMAG, SELFMAG))
			break;
	}
	if (pages == 256 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phnum > 64)
		return;
	for (i = 0; i < eh.e_phnum; i++) {
		if (va_probe(q, base + eh.e_phoff + i * sizeof(ph), &ph, sizeof(ph)))
			return;
		if (ph.p_type == PT_DYNAMIC)
			break;
	}
	if (i == eh.e_phnum)
		return;
	for (i = 0; i < 64; i++) {
		if (va_probe(q, base + ph.p_vaddr + i * sizeof(dyn), &dyn, sizeof(dyn)) ||
		    dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_SYMTAB)
			symtab = dyn.d_un.d_ptr;
		else if (dyn.d_tag == DT_STRTAB)
			strtab = dyn.d_un.d_ptr;
		else if (dyn.d_tag == DT_HASH)
			hash = dyn.d_un.d_ptr;
	}
	/* DT_HASH's second word (nchain) is the number of symbols; without
	 * it, the table ends where the string table starts (lld's order) */
	if (!symtab || !strtab)
		return;
	if (!hash || va_probe(q, base + hash + 4, &nsyms, 4))
		nsyms = strtab > symtab ? (strtab - symtab) / sizeof(sym) : 0;
	for (i = 0; i < min(nsyms, 4096U); i++) {
		if (va_probe(q, base + symtab + i * sizeof(sym), &sym, sizeof(sym)))
			return;
		if (sym.st_value != kd - base)
			continue;
		if (va_probe(q, base + strtab + sym.st_name, name, size - 1))
			name[0] = 0;
		name[size - 1] = 0;
		return;
	}
}

/* A queue error: the queue stops; the runtime hears of it as from a CP */
static void queue_error(struct kfdsim_queue *q, u64 index, const struct aql_packet *pkt,
			bool vendor, const char *why)
{
	u64 amdq = q->rptr - AMDQ_FROM_RPTR, inactive = 0, payload = 0;
	u32 ec = vendor ? EC_QUEUE_PACKET_VENDOR_UNSUPPORTED : EC_QUEUE_PACKET_UNSUPPORTED;
	u32 event = 0;
	char name[128];

	q->stopped = true;
	if (pkt && AQL_TYPE(pkt->header) == AQL_TYPE_KERNEL_DISPATCH) {
		kernel_symbol(q, pkt->q[3], name, sizeof(name));
		pr_warn(KFDSIM_NAME ": gpu%u: AQL queue %u: packet %llu: kernel dispatch of %s (kernel object 0x%llx, kernarg 0x%llx, grid %ux%ux%u): %s: queue error, the queue stops\n",
			q->pdd->dev->gpu_index, q->id, index, name[0] ? name : "an unnamed kernel",
			pkt->q[3], pkt->q[4], (u32)(pkt->q[0] >> 32), (u32)pkt->q[1],
			(u32)(pkt->q[1] >> 32),
			strcmp(why, "kernel dispatch") ? why : "shader code does not run on kfdsim");
	} else {
		pr_warn(KFDSIM_NAME ": gpu%u: AQL queue %u: packet %llu (header 0x%04x, format %u): %s: queue error, the queue stops\n",
			q->pdd->dev->gpu_index, q->id, index, pkt ? pkt->header : 0,
			pkt ? pkt->format & 0xff : 0, why);
	}
	/* (1) the CP: queue_inactive_signal */
	if (!va_read64(q, amdq + AMDQ_INACTIVE_SIGNAL, &inactive) && inactive &&
	    !va_atomic64(q, inactive + SIG_VALUE, 0,
			 vendor ? CP_ERR_VENDOR_FORMAT : CP_ERR_INVALID_FORMAT))
		signal_interrupt(q, inactive);
	/* (2) KFD's exception delivery through the CWSR header */
	if (q->cwsr && !va_read64(q, q->cwsr + CWSR_ERR_PAYLOAD, &payload) && payload &&
	    !va_atomic64(q, payload, 0, BIT_ULL(ec - 1)) &&
	    !va_rw(q, q->cwsr + CWSR_ERR_EVENT_ID, &event, 4, false) && event)
		kfdsim_set_event(q->pdd->process, event);
}

/* KERNEL_DISPATCH: ROCclr's copy and fill blit kernels run (blit.c) */
static int kernel_dispatch(struct kfdsim_queue *q, const struct aql_packet *pkt, const char **why)
{
	struct kfdsim_dispatch d = {
		.kernel_object = pkt->q[3],
		.kernarg = pkt->q[4],
		.grid = { (u32)(pkt->q[0] >> 32), (u32)pkt->q[1], (u32)(pkt->q[1] >> 32) },
		.dims = pkt->format & 3,
	};
	char name[128];
	int ret;

	kernel_symbol(q, d.kernel_object, name, sizeof(name));
	ret = kfdsim_blit_dispatch(q, name, &d, why);
	if (ret != -ENOENT)
		return ret;
	*why = "kernel dispatch";
	return -EOPNOTSUPP;
}

/* One packet: PKT_DONE, PKT_WAIT, or a negative errno (queue error) */
static int run_packet(struct kfdsim_queue *q, const struct aql_packet *pkt, bool *vendor,
		      const char **why)
{
	switch (AQL_TYPE(pkt->header)) {
	case AQL_TYPE_BARRIER_AND:
		return dependency_barrier(q, pkt, false);
	case AQL_TYPE_BARRIER_OR:
		return dependency_barrier(q, pkt, true);
	case AQL_TYPE_VENDOR:
		*vendor = true;
		if ((pkt->format & 0xff) == AMD_FORMAT_PM4_IB)
			return pm4_ib(q, pkt, why);
		if ((pkt->format & 0xff) == AMD_FORMAT_BARRIER_VALUE)
			return barrier_value(q, pkt, why);
		*why = "vendor-specific packet of an unknown format";
		return -EINVAL;
	case AQL_TYPE_KERNEL_DISPATCH:
		return kernel_dispatch(q, pkt, why);
	case AQL_TYPE_AGENT_DISPATCH:
		*why = "agent dispatch packets are not for GPU queues";
		return -EINVAL;
	default:
		*why = "unknown packet type";
		return -EINVAL;
	}
}

int kfdsim_aql_run(struct kfdsim_queue *q, u64 *rptr, u64 wptr)
{
	u64 slots = q->ring_size / AQL_PACKET_BYTES, va, t0, amdq = q->rptr - AMDQ_FROM_RPTR;
	const char *why = "GPU VM fault";
	struct aql_packet pkt;
	u16 invalid = AQL_TYPE_INVALID;
	u32 props = 0;
	bool vendor;
	int ret;

	/* GFX7/8: ROCr maps the ring twice in a row, KFD gets both halves */
	if (q->pdd->dev->props[NP_GFX_TARGET_VERSION] < 90000)
		slots /= 2;
	if (!slots || wptr - *rptr > slots) {
		queue_error(q, *rptr, NULL, false, "write index more than a ring ahead of the read index");
		return -EINVAL;
	}
	va_rw(q, amdq + AMDQ_PROPERTIES, &props, 4, false);
	while (*rptr != wptr) {
		va = q->ring + (*rptr % slots) * AQL_PACKET_BYTES;
		vendor = false;
		t0 = div_u64(ktime_get_raw_ns(), 10);
		ret = va_rw(q, va, &pkt, sizeof(pkt), false);
		if (!ret && AQL_TYPE(pkt.header) == AQL_TYPE_INVALID)
			return 0;
		if (!ret)
			ret = run_packet(q, &pkt, &vendor, &why);
		if (ret == PKT_WAIT)
			return 0;
		if (!ret)
			ret = va_rw(q, va, &invalid, sizeof(invalid), true);
		if (ret) {
			queue_error(q, *rptr, &pkt, vendor, why);
			return ret;
		}
		++*rptr;
		ret = va_rw(q, q->rptr, rptr, sizeof(*rptr), true);
		if (!ret)
			ret = complete_signal(q, pkt.q[6], props & AMDQ_PROFILING, t0);
		if (ret) {
			queue_error(q, *rptr, NULL, false, "GPU VM fault on the read index or completion signal");
			return ret;
		}
	}
	return 0;
}
