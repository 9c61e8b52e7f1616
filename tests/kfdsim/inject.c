// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: fault injection and state inspection through debugfs.
 *
 * /sys/kernel/debug/kfdsim/inject
 *   write "POINT STAGE ERRNO [COUNT [SKIP]]" to arm a rule: the next COUNT
 *   (default 1, 0 = every) times the code passes STAGE of POINT, after
 *   SKIP (default 0) passes, it fails with -ERRNO. ERRNO is a number or a
 *   name (EINVAL, EINTR, ...). "clear" drops every rule. Reading lists the
 *   armed rules as "POINT STAGE ERRNO COUNT SKIP HITS".
 *   Points and stages:
 *     any ioctl name without AMDKFD_IOC_ (create_queue, map_memory_to_gpu,
 *       criu_op, ...)  entry           before the handler
 *     map_memory_to_gpu   gpu          before each GPU (EINTR after k of n:
 *                                      SKIP k; n_success is written back)
 *     process_info   entry evict count queue_type (EOPNOTSUPP: a queue of
 *                                      a type that cannot be checkpointed)
 *     checkpoint     entry process devices queues events svm bo (per BO)
 *     unpause        entry restore
 *     restore        entry evict process devices bos bo map objects end
 *                    sdma_slot (EBUSY: SDMA slot clash)
 *     resume         entry lookup (ESRCH) svm (SVM ranges applied)
 *     evict          gpu             per pdd in queue eviction
 *     restore_queues gpu             per pdd in queue restore
 *     gem_mmap       entry           CPU mapping of a BO through its render
 *                                    node (ENOMEM: no pages for it)
 *     cs             entry           DRM_AMDGPU_CS (EAGAIN: userptr
 *                                    invalidated, ECANCELED: after a reset)
 *     sdma           job             an SDMA job fails without running
 *                                    (ETIME: timed out, guilty context)
 *     sdma           hang            an SDMA job hangs its engine until its
 *                                    context is freed, a "reset", or
 *                                    sdma_lockup_ms (sdma.c)
 *     blit           corrupt         a modelled blit kernel's first byte
 *                                    written is flipped (blit.c)
 *   "reset" (instead of a rule) resets every GPU: hung SDMA jobs end with
 *   their rule's ERRNO and their contexts become guilty.
 *   (a device count mismatch: "restore devices EINVAL", or a RESTORE with
 *   another num_devices.)
 *
 * /sys/kernel/debug/kfdsim/processes
 *   one line per KFD process (process.c).
 *
 * /sys/kernel/debug/kfdsim/blit
 *   "copies N fills N bytes N corrupted N": the blit kernels carried out.
 *
 * /sys/kernel/debug/kfdsim/sdma
 *   "contexts N jobs N fences N" alive in all render-node files (cs.c), then
 *   per GPU with SDMA: its IP version, reset counter and each engine's jobs.
 *
 * Locking: kfdsim_inject_lock (a spinlock) protects the rules; kfdsim_inject()
 * may be called in any context that can take it.
 */
#include <linux/kernel.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include "kfdsim.h"

#define MAX_RULES	16
#define NAME_LEN	32

struct inject_rule {
	char point[NAME_LEN];
	char stage[NAME_LEN];
	int err;
	u32 count;		/* 0: unlimited */
	u32 skip;
	u32 hits;
};

static DEFINE_SPINLOCK(kfdsim_inject_lock);
static struct inject_rule rules[MAX_RULES];
static u32 n_rules;
static struct dentry *kfdsim_debugfs;

static const struct {
	const char *name;
	int err;
} errnames[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "ESRCH", ESRCH },
	{ "EINTR", EINTR }, { "EIO", EIO }, { "EBADF", EBADF },
	{ "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EFAULT", EFAULT }, { "EBUSY", EBUSY }, { "ENODEV", ENODEV },
	{ "EINVAL", EINVAL }, { "EMFILE", EMFILE }, { "ENOSPC", ENOSPC },
	{ "ETIME", ETIME }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "ECANCELED", ECANCELED }, { "EHWPOISON", EHWPOISON },
	{ "EADDRINUSE", EADDRINUSE }, { "ERESTARTSYS", ERESTARTSYS },
};

int kfdsim_inject(const char *point, const char *stage)
{
	int ret = 0;
	u32 i;

	if (!READ_ONCE(n_rules))
		return 0;
	spin_lock(&kfdsim_inject_lock);
	for (i = 0; i < n_rules; i++) {
		struct inject_rule *r = &rules[i];

		if (strcasecmp(r->point, point) || strcmp(r->stage, stage))
			continue;
		if (r->skip) {
			r->skip--;
			continue;
		}
		r->hits++;
		ret = -r->err;
		if (r->count && !--r->count) {
			rules[i] = rules[--n_rules];
		}
		break;
	}
	spin_unlock(&kfdsim_inject_lock);
	if (ret)
		pr_info(KFDSIM_NAME ": injected %d at %s %s\n", ret, point, stage);
	return ret;
}

static int parse_errno(const char *s, int *err)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(errnames); i++)
		if (!strcmp(s, errnames[i].name)) {
			*err = errnames[i].err;
			return 0;
		}
	if (kstrtoint(s, 0, err) || *err <= 0 || *err > MAX_ERRNO)
		return -EINVAL;
	return 0;
}

static ssize_t inject_write(struct file *f, const char __user *ubuf, size_t len,
			    loff_t *pos)
{
	char buf[160], point[NAME_LEN], stage[NAME_LEN], err_s[NAME_LEN];
	struct inject_rule r = { };
	int n, ret = 0;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sysfs_streq(buf, "clear")) {
		spin_lock(&kfdsim_inject_lock);
		n_rules = 0;
		spin_unlock(&kfdsim_inject_lock);
		return len;
	}
	if (sysfs_streq(buf, "reset")) {
		kfdsim_sdma_reset();
		return len;
	}
	r.count = 1;
	n = sscanf(buf, "%31s %31s %31s %u %u", point, stage, err_s, &r.count, &r.skip);
	if (n < 3 || parse_errno(err_s, &r.err))
		return -EINVAL;
	strscpy(r.point, point, sizeof(r.point));
	strscpy(r.stage, stage, sizeof(r.stage));
	spin_lock(&kfdsim_inject_lock);
	if (n_rules == MAX_RULES)
		ret = -ENOSPC;
	else
		rules[n_rules++] = r;
	spin_unlock(&kfdsim_inject_lock);
	return ret ?: len;
}

static int inject_show(struct seq_file *m, void *v)
{
	struct inject_rule copy[MAX_RULES];
	u32 i, n;

	spin_lock(&kfdsim_inject_lock);
	n = n_rules;
	memcpy(copy, rules, sizeof(copy));
	spin_unlock(&kfdsim_inject_lock);
	for (i = 0; i < n; i++)
		seq_printf(m, "%s %s %d %u %u %u\n", copy[i].point, copy[i].stage,
			   copy[i].err, copy[i].count, copy[i].skip, copy[i].hits);
	return 0;
}

static int inject_open(struct inode *inode, struct file *f)
{
	return single_open(f, inject_show, NULL);
}

static const struct file_operations inject_fops = {
	.owner = THIS_MODULE,
	.open = inject_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = inject_write,
};

DEFINE_SHOW_ATTRIBUTE(kfdsim_processes);
DEFINE_SHOW_ATTRIBUTE(kfdsim_events_debug);

static int kfdsim_sdma_state_show(struct seq_file *m, void *v)
{
	kfdsim_sdma_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfdsim_sdma_state);

static int kfdsim_blit_state_show(struct seq_file *m, void *v)
{
	kfdsim_blit_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kfdsim_blit_state);

int kfdsim_debugfs_init(void)
{
	kfdsim_debugfs = debugfs_create_dir(KFDSIM_NAME, NULL);
	debugfs_create_file("inject", 0600, kfdsim_debugfs, NULL, &inject_fops);
	debugfs_create_file("processes", 0400, kfdsim_debugfs, NULL,
			    &kfdsim_processes_fops);
	debugfs_create_file("sdma", 0400, kfdsim_debugfs, NULL, &kfdsim_sdma_state_fops);
	debugfs_create_file("events", 0400, kfdsim_debugfs, NULL, &kfdsim_events_debug_fops);
	debugfs_create_file("blit", 0400, kfdsim_debugfs, NULL, &kfdsim_blit_state_fops);
	return 0;
}

void kfdsim_debugfs_fini(void)
{
	debugfs_remove_recursive(kfdsim_debugfs);
	kfdsim_debugfs = NULL;
	n_rules = 0;
}
