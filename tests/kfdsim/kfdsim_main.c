// SPDX-License-Identifier: GPL-2.0
/*
 * kfdsim: module entry. Loads the machine description, then brings up what
 * KFD and amdgpu would show for that machine:
 *
 *   /dev/kfd and /sys/class/kfd/kfd            chardev.c
 *   /dev/dri/renderD<minor> per GPU            drm.c
 *   /sys/class/kfd/kfd/topology                topology_sysfs.c
 *
 * The machine is fixed for the lifetime of the module: to become another
 * machine, unload and load again with another machine= (nothing can be left
 * open then: every /dev/kfd, render node or dma-buf file pins the module).
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include "kfdsim.h"

#define DESC_MAX_SIZE	(16 << 20)

static char *machine;
module_param(machine, charp, 0444);
MODULE_PARM_DESC(machine,
		 "path of a machine description (tests/kfdsim/mkdesc.sh); default: a built-in 1 CPU + 2 GPU machine");

/*
 * Built-in machine: one CPU NUMA node and two MI210 (gfx90a) boards on PCIe
 * without an XGMI hive; values from the MI210 capture, gpu_ids made up.
 */
static const char default_machine[] =
	"kfdsim-machine 1\n"
	"system platform_oem=0 platform_id=0 platform_rev=0\n"
	"node 0 gpu_id=0 cpu_cores_count=2 cpu_core_id_base=0 max_engine_clk_ccompute=2450\n"
	"mem 0 0 heap_type=0 size_in_bytes=1073741824 flags=0 width=64 mem_clk_max=3200\n"
	"iolink 0 0 type=2 node_from=0 node_to=1 weight=20 min_bandwidth=312 max_bandwidth=32000 flags=1\n"
	"iolink 0 1 type=2 node_from=0 node_to=2 weight=20 min_bandwidth=312 max_bandwidth=32000 flags=1\n"
#define GPU(n, id, minor, bus, uid, peer)							\
	"node " #n " gpu_id=" #id " simd_count=416 simd_id_base=2147487744"		\
	" max_waves_per_simd=8 lds_size_in_kb=64 num_gws=64 wave_front_size=64"		\
	" array_count=8 simd_arrays_per_engine=1 cu_per_simd_array=14 simd_per_cu=4"	\
	" max_slots_scratch_cu=32 gfx_target_version=90010 vendor_id=4098"		\
	" device_id=29711 location_id=" #bus " domain=0 drm_render_minor=" #minor	\
	" num_sdma_engines=2 num_sdma_xgmi_engines=3 num_sdma_queues_per_engine=8"	\
	" num_cp_queues=24 max_engine_clk_fcompute=1700 fw_version=92"			\
	" capability=746037888 debug_prop=470 sdma_fw_version=9 unique_id=" #uid	\
	" num_xcc=1 max_engine_clk_ccompute=2450\n"					\
	"name " #n " aldebaran\n"							\
	"pci " #n " rev=2\n"								\
	"mem " #n " 0 heap_type=1 size_in_bytes=68702699520 flags=0 width=4096 mem_clk_max=1600\n" \
	"cache " #n " 0 processor_id_low=2147487744 level=1 size=16 cache_line_size=64"	\
	" cache_lines_per_tag=1 association=4 latency=1 type=9 sibling_map=1,0,0,0,0,0,0,0\n" \
	"iolink " #n " 0 type=2 node_from=" #n " node_to=0 weight=20 min_bandwidth=312"	\
	" max_bandwidth=32000 recommended_sdma_engine_id_mask=3 flags=1\n"		\
	"p2plink " #n " 0 type=2 node_from=" #n " node_to=" #peer " weight=40 flags=1\n"
	GPU(1, 51342, 128, 25344, 1801979520617338022, 2)
	GPU(2, 12005, 129, 17152, 1801979520617338023, 1)
#undef GPU
	"end\n";

/*
 * Reads a description file into a new buffer with room for a NUL after it.
 * (kernel_read_file_from_path() would do, but its LSM hook has no id for
 * "test data": IPE warns about READING_UNKNOWN.)
 */
static ssize_t read_desc(const char *path, char **bufp)
{
	struct file *f;
	loff_t pos = 0, size;
	ssize_t n;
	char *buf;

	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f)) {
		pr_err(KFDSIM_NAME ": cannot open %s: %ld\n", path, PTR_ERR(f));
		return PTR_ERR(f);
	}
	size = i_size_read(file_inode(f));
	if (!S_ISREG(file_inode(f)->i_mode) || size > DESC_MAX_SIZE) {
		pr_err(KFDSIM_NAME ": %s: not a regular file of at most %d bytes\n",
		       path, DESC_MAX_SIZE);
		fput(f);
		return -EFBIG;
	}
	buf = kvmalloc(size + 1, GFP_KERNEL);
	if (!buf) {
		fput(f);
		return -ENOMEM;
	}
	while (pos < size) {
		n = kernel_read(f, buf + pos, size - pos, &pos);
		if (n <= 0)
			break;
	}
	fput(f);
	if (pos != size) {
		pr_err(KFDSIM_NAME ": %s: short read\n", path);
		kvfree(buf);
		return -EIO;
	}
	*bufp = buf;
	return size;
}

static struct kfdsim_topology *load_machine(void)
{
	struct kfdsim_topology *topo;
	ssize_t len;
	char *buf;

	if (machine && *machine) {
		len = read_desc(machine, &buf);
		if (len < 0)
			return ERR_PTR(len);
	} else {
		len = sizeof(default_machine) - 1;
		/* the parser writes a NUL after the last line */
		buf = kvmalloc(len + 1, GFP_KERNEL);
		if (!buf)
			return ERR_PTR(-ENOMEM);
		memcpy(buf, default_machine, len);
	}
	topo = kfdsim_desc_parse(buf, len);
	kvfree(buf);
	if (IS_ERR(topo))
		return topo;
	if (kfdsim_topology_finish(topo)) {
		kfdsim_topology_free(topo);
		return ERR_PTR(-EINVAL);
	}
	return topo;
}

static int __init kfdsim_init(void)
{
	struct kfdsim_topology *topo;
	ktime_t t0 = ktime_get();
	int ret;

	topo = load_machine();
	if (IS_ERR(topo))
		return PTR_ERR(topo);
	kfdsim_topo = topo;

	ret = kfdsim_process_init();
	if (ret)
		goto err_topo;
	ret = kfdsim_chardev_init();
	if (ret)
		goto err_process;
	ret = kfdsim_sdma_init();
	if (ret)
		goto err_chardev;
	ret = kfdsim_drm_init();
	if (ret)
		goto err_sdma;
	ret = kfdsim_topology_sysfs_init(&kfdsim_device->kobj);
	if (ret)
		goto err_drm;
	kfdsim_debugfs_init();

	pr_info(KFDSIM_NAME ": machine %s: %u nodes, %u GPUs, loaded in %lld us\n",
		machine && *machine ? machine : "(built-in)", topo->n_nodes,
		topo->n_gpus, ktime_us_delta(ktime_get(), t0));
	return 0;

err_drm:
	kfdsim_drm_fini();
err_sdma:
	kfdsim_sdma_fini();
err_chardev:
	kfdsim_chardev_fini();
err_process:
	kfdsim_process_fini();
err_topo:
	kfdsim_topology_free(topo);
	kfdsim_topo = NULL;
	return ret;
}

static void __exit kfdsim_exit(void)
{
	kfdsim_debugfs_fini();
	kfdsim_topology_sysfs_fini();
	/* processes (and their BOs) before the DRM devices they use */
	kfdsim_process_fini();
	kfdsim_queue_fini();
	kfdsim_drm_fini();
	kfdsim_cs_fini();
	kfdsim_sdma_fini();
	kfdsim_chardev_fini();
	kfdsim_topology_free(kfdsim_topo);
	kfdsim_topo = NULL;
}

module_init(kfdsim_init);
module_exit(kfdsim_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
MODULE_DESCRIPTION("Simulated AMD KFD (/dev/kfd, topology) and amdgpu render nodes");
