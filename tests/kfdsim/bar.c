// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: what CPU access to VRAM costs on a real GPU.
 *
 * kfdsim's VRAM is ordinary memory that the CPU reads at memcpy speed. On a
 * real GPU, a CPU mapping of VRAM goes through the PCIe BAR, mapped
 * uncached write-combining: writes are combined and fast, every read is a
 * PCIe round trip. AMD measured the CRIU plugin reading 16 GB of VRAM this
 * way in about 15 minutes on a large-BAR machine, about 18 MB/s, against
 * about 10 seconds with SDMA (LPC 2021, "Fast Checkpoint Restore for GPUs";
 * docs/sdma-facts.md 5.3).
 *
 * Model: every page that a CPU *read* fault maps from a VRAM BO costs
 * PAGE_SIZE / bar_read_mbps, paid by the faulting task, in sleeps of at
 * least a millisecond: the BO keeps the debt of pages faulted one by one
 * until it is worth a sleep, and the credit of a sleep that overshot (so one BO read by several tasks at once is
 * still read at the rate, and two BOs at twice the rate: the plugin reads
 * one BO at a time per GPU, as a GPU has one link). A write fault costs nothing (write
 * combining), and neither do later accesses to a page already mapped (the
 * model is per mapping: reading a mapped page twice is paid once, which
 * flatters the CPU; a real GPU charges every read). 0 turns the model off.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <uapi/linux/kfd_ioctl.h>
#include "kfdsim.h"

/*
 * AMD measured 16 GB in 15 minutes: 17.8 MB/s, about 17 MiB/s. Off by
 * default while the plugin still reads most VRAM with the CPU in the VM
 * tests (the SDMA engine of kfdsim is in progress): at 17 MiB/s every dump
 * of the test matrix would pay seconds per GPU.
 */
static unsigned int bar_read_mbps;
module_param(bar_read_mbps, uint, 0644);
MODULE_PARM_DESC(bar_read_mbps,
		 "CPU read rate of VRAM through the BAR, MiB/s (AMD measured 17; 0, the default: not modelled)");

/*
 * A small-BAR GPU (VRAM heap FB_PRIVATE): a VRAM BO allocated without PUBLIC
 * may lie outside the visible window, and a CPU access makes amdgpu move it
 * (into the window or to GTT) before reading; AMD measured the plugin's CPU
 * path there at 16 GB in more than 45 minutes, under 6 MB/s.
 */
static unsigned int small_bar_read_mbps;
module_param(small_bar_read_mbps, uint, 0644);
MODULE_PARM_DESC(small_bar_read_mbps,
		 "CPU read rate of non-PUBLIC VRAM of a small-BAR GPU, MiB/s (AMD measured under 6; 0, the default: bar_read_mbps)");

/* Debt below this is carried to the next fault rather than slept. */
#define BAR_MIN_SLEEP_NS (1000 * 1000)

/* Called by the fault handler, outside any lock, for the pages it mapped. */
void kfdsim_bar_fault(struct kfdsim_gem *gem, unsigned int pages, bool write)
{
	unsigned int rate = READ_ONCE(bar_read_mbps);
	struct kfdsim_node *node = kfdsim_gem_node(gem);
	s64 cost, debt;
	u64 start;

	if (write || !(gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM))
		return;
	if (node && !node->large_bar && !(gem->kfd_flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) &&
	    READ_ONCE(small_bar_read_mbps))
		rate = READ_ONCE(small_bar_read_mbps);
	if (!rate)
		return;
	cost = div_u64((u64)pages * PAGE_SIZE * NSEC_PER_SEC, (u64)rate << 20);
	debt = atomic64_add_return(cost, &gem->bar_debt_ns);
	if (debt < BAR_MIN_SLEEP_NS)
		return;
	/*
	 * The time actually slept is paid off, not the time asked for: a
	 * sleep overshoots (timer slack, and far more under TCG), and the
	 * overshoot is credit for the next faults, so the rate is the
	 * parameter's on average (measured: 6.8 MiB/s for 17 without this).
	 */
	start = ktime_get_ns();
	fsleep(div_u64(debt, NSEC_PER_USEC));
	atomic64_sub(ktime_get_ns() - start, &gem->bar_debt_ns);
}
