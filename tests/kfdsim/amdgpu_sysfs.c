// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: a GPU's amdgpu device directory, /sys/class/drm/cardN/device.
 *
 * On a real machine that is the GPU's PCI function: the card's sysfs path
 * names its PCI address (.../0000:c1:00.0/drm/card1), which rocm_smi_lib
 * reads back from the link (ConstructBDFID()) and matches with KFD's
 * domain and location_id to pair a card with its KFD node, and a card
 * whose device/vendor is not 0x1002 is no AMD GPU to rocm-smi. Here each
 * GPU's platform device is put under a root
 * device named by the GPU's PCI address (domain:bus:device.function of its
 * topology node: bus = location_id >> 8, devfn = location_id & 0xff), and
 * carries the files of the PCI function and of amdgpu 6.12 that rocm-smi
 * reads, with amdgpu's formats:
 *
 *   vendor, device, revision           PCI config ("0x%04x", revision "0x%02x")
 *   unique_id                          amdgpu_device.c, "%016llx" (KFD's unique_id)
 *   mem_info_vram_total / _used        amdgpu_vram_mgr.c, "%llu": the VRAM
 *   mem_info_vis_vram_total / _used    budget and KFD's VRAM in use, as
 *   mem_info_gtt_total / _used         AMDGPU_INFO answers them (drm_info.c)
 *   pp_dpm_*, *_busy_percent, hwmon    amdgpu_hwmon.c
 *
 * Compute partitions of one PCI function (the MI300 CPX machines) are
 * amdgpu_xcp platform devices in amdgpu: only the first GPU node of a PCI
 * address gets the directory, the others keep a plain platform device.
 */
#include <linux/device.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
#include "kfdsim.h"

#define PCI_VENDOR_ATI	0x1002

static struct kfdsim_node *dev_node(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static ssize_t vendor_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", PCI_VENDOR_ATI);
}
static DEVICE_ATTR_RO(vendor);

static ssize_t device_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", (u32)dev_node(dev)->props[NP_DEVICE_ID] & 0xffff);
}
static DEVICE_ATTR_RO(device);

static ssize_t revision_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%02x\n", dev_node(dev)->pci_rev & 0xff);
}
static DEVICE_ATTR_RO(revision);

static ssize_t unique_id_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%016llx\n", (unsigned long long)dev_node(dev)->props[NP_UNIQUE_ID]);
}
static DEVICE_ATTR_RO(unique_id);

static ssize_t mem_info_vram_total_show(struct device *dev, struct device_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%llu\n", kfdsim_vram_budget(dev_node(dev)));
}
static DEVICE_ATTR_RO(mem_info_vram_total);

static ssize_t mem_info_vram_used_show(struct device *dev, struct device_attribute *attr,
				       char *buf)
{
	return sysfs_emit(buf, "%llu\n", kfdsim_vram_usage(dev_node(dev)));
}
static DEVICE_ATTR_RO(mem_info_vram_used);

static ssize_t mem_info_vis_vram_total_show(struct device *dev, struct device_attribute *attr,
					    char *buf)
{
	return sysfs_emit(buf, "%llu\n", kfdsim_vis_vram_size(dev_node(dev)));
}
static DEVICE_ATTR_RO(mem_info_vis_vram_total);

/* a large-BAR GPU's VRAM is all CPU-visible; a small BAR's KFD BOs are not */
static ssize_t mem_info_vis_vram_used_show(struct device *dev, struct device_attribute *attr,
					   char *buf)
{
	struct kfdsim_node *n = dev_node(dev);

	return sysfs_emit(buf, "%llu\n", n->large_bar ? kfdsim_vram_usage(n) : 0ULL);
}
static DEVICE_ATTR_RO(mem_info_vis_vram_used);

static ssize_t mem_info_gtt_total_show(struct device *dev, struct device_attribute *attr,
				       char *buf)
{
	return sysfs_emit(buf, "%llu\n", kfdsim_gtt_size());
}
static DEVICE_ATTR_RO(mem_info_gtt_total);

/* as AMDGPU_INFO_GTT_USAGE: KFD system memory is not GTT-accounted here */
static ssize_t mem_info_gtt_used_show(struct device *dev, struct device_attribute *attr,
				      char *buf)
{
	return sysfs_emit(buf, "0\n");
}
static DEVICE_ATTR_RO(mem_info_gtt_used);

static struct attribute *amdgpu_dev_attrs[] = {
	&dev_attr_vendor.attr,
	&dev_attr_device.attr,
	&dev_attr_revision.attr,
	&dev_attr_unique_id.attr,
	&dev_attr_mem_info_vram_total.attr,
	&dev_attr_mem_info_vram_used.attr,
	&dev_attr_mem_info_vis_vram_total.attr,
	&dev_attr_mem_info_vis_vram_used.attr,
	&dev_attr_mem_info_gtt_total.attr,
	&dev_attr_mem_info_gtt_used.attr,
	NULL
};
static const struct attribute_group amdgpu_dev_group = {
	.attrs = amdgpu_dev_attrs,
};

static const struct attribute_group *amdgpu_dev_groups[] = {
	&amdgpu_dev_group,
	&kfdsim_amdgpu_pm_group,
	NULL
};

/* domain and bus/devfn as the device's name has them (no partition bits) */
static bool same_pci_fn(const struct kfdsim_node *a, const struct kfdsim_node *b)
{
	return (a->props[NP_DOMAIN] & 0xffff) == (b->props[NP_DOMAIN] & 0xffff) &&
	       (a->props[NP_LOCATION_ID] & 0xffff) == (b->props[NP_LOCATION_ID] & 0xffff);
}

/* another GPU node of this PCI function already has the directory */
static bool is_partition(const struct kfdsim_node *node)
{
	u32 i;

	for (i = 0; i < kfdsim_topo->n_gpus; i++) {
		const struct kfdsim_node *g = kfdsim_topo->gpus[i];

		if (g != node && g->pci_fn && same_pci_fn(g, node))
			return true;
	}
	return false;
}

int kfdsim_amdgpu_sysfs_attach(struct platform_device *pdev, struct kfdsim_node *node)
{
	u64 loc = node->props[NP_LOCATION_ID];
	char name[24];
	struct device *fn;

	if (is_partition(node))
		return 0;
	snprintf(name, sizeof(name), "%04x:%02x:%02x.%x", (u32)(node->props[NP_DOMAIN] & 0xffff),
		 (u32)(loc >> 8) & 0xff, (u32)(loc >> 3) & 0x1f, (u32)loc & 7);
	fn = root_device_register(name);
	if (IS_ERR(fn)) {
		pr_err(KFDSIM_NAME ": GPU node %u: device %s not registered (%ld); two GPUs with one PCI address in the machine description?\n",
		       node->id, name, PTR_ERR(fn));
		return PTR_ERR(fn);
	}
	node->pci_fn = fn;
	pdev->dev.parent = fn;
	pdev->dev.groups = amdgpu_dev_groups;
	dev_set_drvdata(&pdev->dev, node);
	return 0;
}

void kfdsim_amdgpu_sysfs_detach(struct kfdsim_node *node)
{
	if (!node->pci_fn)
		return;
	root_device_unregister(node->pci_fn);
	node->pci_fn = NULL;
}
