// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: /sys/class/kfd/kfd/topology, laid out and formatted as KFD 6.12
 * does (kfd_topology.c): one kobject per node and per entry, one
 * "properties" attribute per entry, "%s %u\n" / "%s %llu\n" lines.
 *
 * Files of a GPU node and of its entries fail with EPERM when the reader's
 * device cgroup does not allow the GPU's render node.
 */
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include "kfdsim.h"

#define KFD_SYSFS_FILE_MODE 0444

static void kobj_release(struct kobject *kobj)
{
	kfree(kobj);
}

static bool denied(const struct kfdsim_node *n)
{
	return kfdsim_node_is_gpu(n) && kfdsim_devcgroup_check_permission(n);
}

static int prop32(char *buf, int offs, const char *name, u32 v)
{
	return offs + sysfs_emit_at(buf, offs, "%s %u\n", name, v);
}

static int prop64(char *buf, int offs, const char *name, u64 v)
{
	return offs + sysfs_emit_at(buf, offs, "%s %llu\n", name, v);
}

/* ---- topology/{generation_id,system_properties} ---------------------------- */

static ssize_t sysprops_show(struct kobject *kobj, struct attribute *attr,
			     char *buf)
{
	struct kfdsim_topology *t = kfdsim_topo;
	int offs = 0;

	if (attr == &t->attr_genid)
		return sysfs_emit(buf, "%u\n", t->generation_id);
	offs = prop64(buf, offs, "platform_oem", t->platform_oem);
	offs = prop64(buf, offs, "platform_id", t->platform_id);
	return prop64(buf, offs, "platform_rev", t->platform_rev);
}

static const struct sysfs_ops sysprops_ops = { .show = sysprops_show };
static const struct kobj_type sysprops_type = {
	.release = kobj_release,
	.sysfs_ops = &sysprops_ops,
};

/* ---- entries -------------------------------------------------------------- */

static ssize_t iolink_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct kfdsim_link *l = container_of(attr, struct kfdsim_link, attr);
	int offs = 0;

	if (denied(l->node))
		return -EPERM;
	offs = prop32(buf, offs, "type", l->type);
	offs = prop32(buf, offs, "version_major", l->version_major);
	offs = prop32(buf, offs, "version_minor", l->version_minor);
	offs = prop32(buf, offs, "node_from", l->node_from);
	offs = prop32(buf, offs, "node_to", l->node_to);
	offs = prop32(buf, offs, "weight", l->weight);
	offs = prop32(buf, offs, "min_latency", l->min_latency);
	offs = prop32(buf, offs, "max_latency", l->max_latency);
	offs = prop32(buf, offs, "min_bandwidth", l->min_bandwidth);
	offs = prop32(buf, offs, "max_bandwidth", l->max_bandwidth);
	offs = prop32(buf, offs, "recommended_transfer_size",
		      l->recommended_transfer_size);
	offs = prop32(buf, offs, "recommended_sdma_engine_id_mask",
		      l->recommended_sdma_engine_id_mask);
	return prop32(buf, offs, "flags", l->flags);
}

static const struct sysfs_ops iolink_ops = { .show = iolink_show };
static const struct kobj_type iolink_type = {
	.release = kobj_release,
	.sysfs_ops = &iolink_ops,
};

static ssize_t mem_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct kfdsim_mem_bank *m = container_of(attr, struct kfdsim_mem_bank, attr);
	int offs = 0;

	if (denied(m->node))
		return -EPERM;
	offs = prop32(buf, offs, "heap_type", m->heap_type);
	offs = prop64(buf, offs, "size_in_bytes", m->size_in_bytes);
	offs = prop32(buf, offs, "flags", m->flags);
	offs = prop32(buf, offs, "width", m->width);
	return prop32(buf, offs, "mem_clk_max", m->mem_clk_max);
}

static const struct sysfs_ops mem_ops = { .show = mem_show };
static const struct kobj_type mem_type = {
	.release = kobj_release,
	.sysfs_ops = &mem_ops,
};

static ssize_t cache_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct kfdsim_cache *c = container_of(attr, struct kfdsim_cache, attr);
	int offs = 0;
	u32 i, j;

	if (denied(c->node))
		return -EPERM;
	offs = prop32(buf, offs, "processor_id_low", c->processor_id_low);
	offs = prop32(buf, offs, "level", c->level);
	offs = prop32(buf, offs, "size", c->size);
	offs = prop32(buf, offs, "cache_line_size", c->cache_line_size);
	offs = prop32(buf, offs, "cache_lines_per_tag", c->cache_lines_per_tag);
	offs = prop32(buf, offs, "association", c->association);
	offs = prop32(buf, offs, "latency", c->latency);
	offs = prop32(buf, offs, "type", c->type);
	offs += sysfs_emit_at(buf, offs, "sibling_map ");
	for (i = 0; i < c->sibling_map_size; i++)
		for (j = 0; j < 8; j++)
			offs += sysfs_emit_at(buf, offs, "%d,",
					      (c->sibling_map[i] >> j) & 1);
	/* the last "," becomes the end of line */
	buf[offs - 1] = '\n';
	return offs;
}

static const struct sysfs_ops cache_ops = { .show = cache_show };
static const struct kobj_type cache_type = {
	.release = kobj_release,
	.sysfs_ops = &cache_ops,
};

/* ---- nodes/N/{gpu_id,name,properties} -------------------------------------- */

static ssize_t node_props_show(struct kfdsim_node *n, char *buf)
{
	bool gpu = kfdsim_node_is_gpu(n);
	int offs = 0, k;

	for (k = 0; k < NP_COUNT; k++) {
		const struct kfdsim_prop_desc *d = &kfdsim_node_props[k];
		u64 v = n->props[k];

		if (d->class == PC_GPU && !gpu)
			continue;
		/* KFD shows these two as 0 without a GPU (dev->gpu ? ... : 0) */
		if ((k == NP_SIMD_COUNT || k == NP_ARRAY_COUNT) && !gpu)
			v = 0;
		if (d->is64)
			offs = prop64(buf, offs, d->name, v);
		else
			offs = prop32(buf, offs, d->name, v);
	}
	return offs;
}

static ssize_t node_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct kfdsim_node *n;

	if (!strcmp(attr->name, "gpu_id")) {
		n = container_of(attr, struct kfdsim_node, attr_gpuid);
		if (denied(n))
			return -EPERM;
		return sysfs_emit(buf, "%u\n", n->gpu_id);
	}
	if (!strcmp(attr->name, "name")) {
		n = container_of(attr, struct kfdsim_node, attr_name);
		if (denied(n))
			return -EPERM;
		return sysfs_emit(buf, "%s\n", n->name);
	}
	n = container_of(attr, struct kfdsim_node, attr_props);
	if (denied(n))
		return -EPERM;
	return node_props_show(n, buf);
}

static const struct sysfs_ops node_ops = { .show = node_show };
static const struct kobj_type node_type = {
	.release = kobj_release,
	.sysfs_ops = &node_ops,
};

/* ---- build and tear down ---------------------------------------------------- */

static void init_attr(struct attribute *attr, const char *name)
{
	attr->name = name;
	attr->mode = KFD_SYSFS_FILE_MODE;
	sysfs_attr_init(attr);
}

static int add_entry(struct kobject **kobjp, const struct kobj_type *type,
		     struct kobject *parent, u32 i, struct attribute *attr)
{
	struct kobject *kobj = kzalloc(sizeof(*kobj), GFP_KERNEL);
	int ret;

	if (!kobj)
		return -ENOMEM;
	ret = kobject_init_and_add(kobj, type, parent, "%u", i);
	if (ret) {
		kobject_put(kobj);
		return ret;
	}
	*kobjp = kobj;
	init_attr(attr, "properties");
	return sysfs_create_file(kobj, attr);
}

static void del_kobj(struct kobject **kobjp)
{
	if (*kobjp) {
		kobject_del(*kobjp);
		kobject_put(*kobjp);
		*kobjp = NULL;
	}
}

static void remove_node(struct kfdsim_node *n)
{
	u32 i;

	for (i = 0; i < n->n_io_links; i++)
		del_kobj(&n->io_links[i].kobj);
	for (i = 0; i < n->n_p2p_links; i++)
		del_kobj(&n->p2p_links[i].kobj);
	for (i = 0; i < n->n_caches; i++)
		del_kobj(&n->caches[i].kobj);
	for (i = 0; i < n->n_mem; i++)
		del_kobj(&n->mem[i].kobj);
	del_kobj(&n->kobj_iolink);
	del_kobj(&n->kobj_p2plink);
	del_kobj(&n->kobj_cache);
	del_kobj(&n->kobj_mem);
	del_kobj(&n->kobj_perf);
	del_kobj(&n->kobj_node);
}

static int build_node(struct kfdsim_topology *t, struct kfdsim_node *n)
{
	struct kobject *kobj;
	u32 i;
	int ret;

	kobj = kzalloc(sizeof(*kobj), GFP_KERNEL);
	if (!kobj)
		return -ENOMEM;
	ret = kobject_init_and_add(kobj, &node_type, t->kobj_nodes, "%u", n->id);
	if (ret) {
		kobject_put(kobj);
		return ret;
	}
	n->kobj_node = kobj;
	n->kobj_mem = kobject_create_and_add("mem_banks", kobj);
	n->kobj_cache = kobject_create_and_add("caches", kobj);
	n->kobj_iolink = kobject_create_and_add("io_links", kobj);
	n->kobj_p2plink = kobject_create_and_add("p2p_links", kobj);
	/* empty since IOMMUv2 support left KFD, but still created */
	n->kobj_perf = kobject_create_and_add("perf", kobj);
	if (!n->kobj_mem || !n->kobj_cache || !n->kobj_iolink ||
	    !n->kobj_p2plink || !n->kobj_perf)
		return -ENOMEM;

	init_attr(&n->attr_gpuid, "gpu_id");
	init_attr(&n->attr_name, "name");
	init_attr(&n->attr_props, "properties");
	ret = sysfs_create_file(kobj, &n->attr_gpuid) ?:
	      sysfs_create_file(kobj, &n->attr_name) ?:
	      sysfs_create_file(kobj, &n->attr_props);
	if (ret)
		return ret;

	for (i = 0; i < n->n_mem && !ret; i++)
		ret = add_entry(&n->mem[i].kobj, &mem_type, n->kobj_mem, i,
				&n->mem[i].attr);
	for (i = 0; i < n->n_caches && !ret; i++)
		ret = add_entry(&n->caches[i].kobj, &cache_type, n->kobj_cache, i,
				&n->caches[i].attr);
	for (i = 0; i < n->n_io_links && !ret; i++)
		ret = add_entry(&n->io_links[i].kobj, &iolink_type, n->kobj_iolink, i,
				&n->io_links[i].attr);
	for (i = 0; i < n->n_p2p_links && !ret; i++)
		ret = add_entry(&n->p2p_links[i].kobj, &iolink_type, n->kobj_p2plink, i,
				&n->p2p_links[i].attr);
	return ret;
}

void kfdsim_topology_sysfs_fini(void)
{
	struct kfdsim_topology *t = kfdsim_topo;
	u32 i;

	if (!t || !t->kobj_topology)
		return;
	for (i = 0; i < t->n_nodes; i++)
		remove_node(&t->nodes[i]);
	del_kobj(&t->kobj_nodes);
	sysfs_remove_file(t->kobj_topology, &t->attr_genid);
	sysfs_remove_file(t->kobj_topology, &t->attr_props);
	del_kobj(&t->kobj_topology);
}

int kfdsim_topology_sysfs_init(struct kobject *parent)
{
	struct kfdsim_topology *t = kfdsim_topo;
	struct kobject *kobj;
	u32 i;
	int ret;

	kobj = kzalloc(sizeof(*kobj), GFP_KERNEL);
	if (!kobj)
		return -ENOMEM;
	ret = kobject_init_and_add(kobj, &sysprops_type, parent, "topology");
	if (ret) {
		kobject_put(kobj);
		return ret;
	}
	t->kobj_topology = kobj;
	t->kobj_nodes = kobject_create_and_add("nodes", kobj);
	if (!t->kobj_nodes) {
		ret = -ENOMEM;
		goto err;
	}
	init_attr(&t->attr_genid, "generation_id");
	init_attr(&t->attr_props, "system_properties");
	ret = sysfs_create_file(kobj, &t->attr_genid) ?:
	      sysfs_create_file(kobj, &t->attr_props);
	for (i = 0; i < t->n_nodes && !ret; i++)
		ret = build_node(t, &t->nodes[i]);
	if (!ret)
		return 0;
err:
	kfdsim_topology_sysfs_fini();
	return ret;
}
