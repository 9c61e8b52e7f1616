// SPDX-License-Identifier: MIT
/*
 * Restored task: the local GPUs it lands on, and its /dev/kfd file, which
 * KFD gives a device (pdd) for each GPU the task may use when it opens it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "plugin/restore/dev_nodes.h"
#include "topology/gpu_select.h"
#include "plugin/restore/kfd_confine.h"
#include "plugin/kfd_dev.h"
#include "plugin/log.h"
#include "plugin/restore/restore.h"

/* the task sees more GPUs than its container's: the runtimes known to do that */
#define FILTER_HINT                                                                                \
	"; a runtime that installs the container's device filter after the restore (crun) shows "  \
	"the task every GPU: name the container's GPUs in " GPU_SELECT_ENV "; one that gives "     \
	"CRIU no cgroup root (runc < 1.2 on cgroup v2) restores it outside that filter: use "      \
	"runc >= 1.2"

static const struct match_pair *map_find(const struct match_result *m, uint32_t src_gpu_id)
{
	size_t i;

	for (i = 0; i < m->n_map; i++)
		if (m->map[i].src_gpu_id == src_gpu_id)
			return &m->map[i];
	return NULL;
}

const struct match_pair *restore_target(const struct restore_session *s, uint32_t src_gpu_id)
{
	const struct match_pair *p = s->has_task_map ? map_find(&s->task_map, src_gpu_id) : NULL;

	return p ? p : map_find(&s->map, src_gpu_id);
}

static bool in_list(const uint32_t *list, size_t n, uint32_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

/* GPUs whose KFD node this task can read: KFD gives its process a pdd for each. */
static size_t kfd_visible_gpus(const struct kfd_topology *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].accessible && t->nodes[i].is_gpu && t->nodes[i].gpu_id)
			n++;
	return n;
}

/* Whether /sys in this task's mount namespace is a sysfs. */
static bool sysfs_mounted(void)
{
	struct statfs sfs;

	return !statfs("/sys", &sfs) && sfs.f_type == SYSFS_MAGIC;
}

/*
 * This task's view of the KFD topology, into *mine; where its mount
 * namespace has no sysfs at all (a container or test root that mounts
 * none), the CRIU master's: the render nodes this task can open (its
 * device cgroup, its /dev) still decide which GPUs it may use.
 */
static int task_topology(struct restore_session *s, uint32_t pid, struct kfd_topology *mine,
			 const struct kfd_topology **view)
{
	char why[512];
	int ret = topo_load(KFD_SYSFS_TOPOLOGY, mine, why, sizeof(why));

	*view = mine;
	if (!ret)
		return 0;
	if (!sysfs_mounted()) {
		pr_info("pid %u: no sysfs in its mount namespace: it may use the GPUs the CRIU "
			"master sees whose render node it can open",
			pid);
		*view = &s->dst;
		return 0;
	}
	pr_err("cannot read the KFD topology in the restored task: %s", why);
	return ret;
}

/*
 * The GPUs this task sees may differ from the master's (a device cgroup):
 * KFD wants exactly as many as were checkpointed, and the targets among them.
 * Done once per task, by the first of its files that needs a target.
 */
int restore_choose_targets(struct restore_session *s, const struct kfd_process_image *img)
{
	const KfdProcessEntry *e = img->entry;
	const struct kfd_topology *view;
	struct kfd_topology mine = {0};
	uint32_t *usable = NULL;
	size_t n_usable = 0, n_visible, i;
	bool all_visible = true;
	int ret;

	if (s->targets_for == img)
		return 0;
	ret = task_topology(s, e->pid, &mine, &view);
	if (ret)
		return ret;
	ret = restore_usable_gpus(s, view, true, &usable, &n_usable);
	if (ret)
		goto out;
	n_visible = kfd_visible_gpus(view);
	if (n_usable != e->n_devices) {
		pr_err("pid %u was checkpointed with %zu GPUs but its restored task can use %zu%s; "
		       "KFD needs the same number: expose exactly %zu GPUs to it (see "
		       "`amdgpu-criu check IMGDIR`)%s",
		       e->pid, e->n_devices, n_usable,
		       s->opts.gpus_shown[0] ? " of those " GPU_SELECT_ENV " names" : "",
		       e->n_devices,
		       n_visible > e->n_devices && !s->opts.gpus_shown[0] ? FILTER_HINT : "");
		ret = -EINVAL;
		goto out;
	}
	/* more GPUs allowed than restored onto: KFD would give the process them all */
	s->confine_kfd = n_visible != e->n_devices;
	for (i = 0; i < e->n_devices; i++) {
		const struct match_pair *p = map_find(&s->map, e->devices[i]->actual_gpu_id);

		if (!p || !in_list(usable, n_usable, p->dst_node))
			all_visible = false;
	}
	if (!all_visible) {
		pr_info("pid %u sees other GPUs than the CRIU master: matching onto its own",
			e->pid);
		ret = restore_match(&s->opts.checks, &img->topo, img->device_nodes, e->n_devices,
				    view, usable, n_usable, &s->task_map);
		if (ret) {
			match_result_free(&s->task_map);
			goto out;
		}
		s->has_task_map = true;
		for (i = 0; i < s->task_map.n_map; i++) {
			const struct match_pair *p = &s->task_map.map[i];

			pr_info("pid %u: GPU %u (node %u, renderD%u) -> GPU %u (node %u, "
				"renderD%u)",
				e->pid, p->src_gpu_id, p->src_node, p->src_render_minor,
				p->dst_gpu_id, p->dst_node, p->dst_render_minor);
		}
	}
	s->targets_for = img;
out:
	free(usable);
	topo_free(&mine);
	return ret;
}

int restore_open_kfd(struct restore_session *s, const struct kfd_process_image *img)
{
	const KfdProcessEntry *e = img->entry;
	uint32_t minors[KFD_CONFINE_MAX];
	char why[256], list[KFD_CONFINE_MAX * 12] = "";
	size_t i, off = 0;
	int fd;

	if (!e->n_devices || !s->confine_kfd)
		return kfd_node_open_task(s->opts.dev_nodes_create);
	if (e->n_devices > KFD_CONFINE_MAX)
		return -E2BIG;
	for (i = 0; i < e->n_devices; i++) {
		const struct match_pair *p = restore_target(s, e->devices[i]->actual_gpu_id);

		if (!p)
			return -ENODEV;
		minors[i] = p->dst_render_minor;
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%srenderD%u", i ? "," : "",
					minors[i]);
	}
	fd = kfd_node_prepare_task(
		s->opts.dev_nodes_create); /* the node right first: the open makes the process */
	if (fd)
		return fd;
	fd = kfd_open_confined(minors, e->n_devices, why, sizeof(why));
	if (fd < 0) {
		pr_err("pid %u: its restored task may use more GPUs than the %zu it is restored "
		       "onto, and KFD would give its process them all; opening %s for %s only "
		       "failed: %s (needs cgroup v2; or restore where the device cgroup shows "
		       "exactly its GPUs)",
		       e->pid, e->n_devices, KFD_DEVICE_PATH, list, why);
		return fd;
	}
	pr_info("pid %u: %s opened for %s only (its task may use more GPUs: a device filter "
		"the runtime installs after the restore)",
		e->pid, KFD_DEVICE_PATH, list);
	return fd;
}
