// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: a GPU's amdgpu hwmon device (/sys/class/drm/cardN/device/hwmon/
 * hwmonM, name "amdgpu") and its clock and load files, as amdgpu_pm.c of
 * 6.12 shows them for an MI200-class dGPU and rocm-smi reads them:
 *
 *   temp1..3_input, _label     edge, junction, mem (millidegrees Celsius)
 *   temp1..3_crit              the limits
 *   power1_average             average socket power (microwatts)
 *   power1_cap, _cap_max, _cap_min, _cap_default
 *   pp_dpm_sclk, pp_dpm_mclk   "N: FREQMhz" levels, " *" on the current one
 *   gpu_busy_percent, mem_busy_percent
 *
 * The simulated GPU has no sensors and no clocks of its own: it shows a
 * constant idle reading, its clocks at the lowest level, the top shader
 * clock the node's max_engine_clk_fcompute and the memory clock its VRAM
 * bank's mem_clk_max, and a load of 0 (kfdsim's SDMA and AQL work is not
 * counted).
 */
#include <linux/device.h>
#include <linux/hwmon.h>
#include <linux/hwmon-sysfs.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
#include "kfdsim.h"

/* an idle MI210's readings: degrees, watts */
#define IDLE_TEMP_EDGE		35
#define IDLE_TEMP_JUNCTION	38
#define IDLE_TEMP_MEM		36
#define TEMP_CRIT		100
#define IDLE_POWER_W		42
#define POWER_CAP_W		300
#define SCLK_MIN_MHZ		500

static const char *const temp_label[] = { "edge", "junction", "mem" };
static const int idle_temp[] = { IDLE_TEMP_EDGE, IDLE_TEMP_JUNCTION, IDLE_TEMP_MEM };

static ssize_t temp_input_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", idle_temp[to_sensor_dev_attr(attr)->index] * 1000);
}

static ssize_t temp_label_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", temp_label[to_sensor_dev_attr(attr)->index]);
}

static ssize_t temp_crit_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", TEMP_CRIT * 1000);
}

static ssize_t power_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_sensor_dev_attr(attr)->index * 1000000u);
}

static SENSOR_DEVICE_ATTR_RO(temp1_input, temp_input, 0);
static SENSOR_DEVICE_ATTR_RO(temp2_input, temp_input, 1);
static SENSOR_DEVICE_ATTR_RO(temp3_input, temp_input, 2);
static SENSOR_DEVICE_ATTR_RO(temp1_label, temp_label, 0);
static SENSOR_DEVICE_ATTR_RO(temp2_label, temp_label, 1);
static SENSOR_DEVICE_ATTR_RO(temp3_label, temp_label, 2);
static SENSOR_DEVICE_ATTR_RO(temp1_crit, temp_crit, 0);
static SENSOR_DEVICE_ATTR_RO(temp2_crit, temp_crit, 1);
static SENSOR_DEVICE_ATTR_RO(temp3_crit, temp_crit, 2);
static SENSOR_DEVICE_ATTR_RO(power1_average, power, IDLE_POWER_W);
static SENSOR_DEVICE_ATTR_RO(power1_cap, power, POWER_CAP_W);
static SENSOR_DEVICE_ATTR_RO(power1_cap_max, power, POWER_CAP_W);
static SENSOR_DEVICE_ATTR_RO(power1_cap_min, power, 0);
static SENSOR_DEVICE_ATTR_RO(power1_cap_default, power, POWER_CAP_W);

static struct attribute *amdgpu_hwmon_attrs[] = {
	&sensor_dev_attr_temp1_input.dev_attr.attr,
	&sensor_dev_attr_temp2_input.dev_attr.attr,
	&sensor_dev_attr_temp3_input.dev_attr.attr,
	&sensor_dev_attr_temp1_label.dev_attr.attr,
	&sensor_dev_attr_temp2_label.dev_attr.attr,
	&sensor_dev_attr_temp3_label.dev_attr.attr,
	&sensor_dev_attr_temp1_crit.dev_attr.attr,
	&sensor_dev_attr_temp2_crit.dev_attr.attr,
	&sensor_dev_attr_temp3_crit.dev_attr.attr,
	&sensor_dev_attr_power1_average.dev_attr.attr,
	&sensor_dev_attr_power1_cap.dev_attr.attr,
	&sensor_dev_attr_power1_cap_max.dev_attr.attr,
	&sensor_dev_attr_power1_cap_min.dev_attr.attr,
	&sensor_dev_attr_power1_cap_default.dev_attr.attr,
	NULL
};
ATTRIBUTE_GROUPS(amdgpu_hwmon);

static struct kfdsim_node *dev_node(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static u32 mclk_mhz(const struct kfdsim_node *n)
{
	u32 i;

	for (i = 0; i < n->n_mem; i++)
		if (n->mem[i].heap_type == 1 || n->mem[i].heap_type == 2)
			return n->mem[i].mem_clk_max;
	return 0;
}

/* the lowest level (SCLK_MIN_MHZ) current, the node's maximum above it */
static ssize_t pp_dpm_sclk_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	u32 max = dev_node(dev)->props[NP_MAX_ENGINE_CLK_FCOMPUTE];

	if (max <= SCLK_MIN_MHZ)
		return sysfs_emit(buf, "0: %uMhz *\n", max);
	return sysfs_emit(buf, "0: %uMhz *\n1: %uMhz\n", SCLK_MIN_MHZ, max);
}
static DEVICE_ATTR_RO(pp_dpm_sclk);

static ssize_t pp_dpm_mclk_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0: %uMhz *\n", mclk_mhz(dev_node(dev)));
}
static DEVICE_ATTR_RO(pp_dpm_mclk);

static ssize_t gpu_busy_percent_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0\n");
}
static DEVICE_ATTR_RO(gpu_busy_percent);

static ssize_t mem_busy_percent_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0\n");
}
static DEVICE_ATTR_RO(mem_busy_percent);

static struct attribute *amdgpu_pm_attrs[] = {
	&dev_attr_pp_dpm_sclk.attr,
	&dev_attr_pp_dpm_mclk.attr,
	&dev_attr_gpu_busy_percent.attr,
	&dev_attr_mem_busy_percent.attr,
	NULL
};

const struct attribute_group kfdsim_amdgpu_pm_group = {
	.attrs = amdgpu_pm_attrs,
};

/* a compute partition's device (no PCI function of its own) has none */
int kfdsim_amdgpu_hwmon_add(struct platform_device *pdev, struct kfdsim_node *node)
{
	struct device *hwmon;

	if (!node->pci_fn)
		return 0;
	hwmon = devm_hwmon_device_register_with_groups(&pdev->dev, "amdgpu", node,
						       amdgpu_hwmon_groups);
	if (IS_ERR(hwmon)) {
		pr_err(KFDSIM_NAME ": GPU node %u: hwmon device not registered (%ld)\n",
		       node->id, PTR_ERR(hwmon));
		return PTR_ERR(hwmon);
	}
	return 0;
}
