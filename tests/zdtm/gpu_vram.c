// SPDX-License-Identifier: MIT
/*
 * gpu_vram: a ZDTM test (CRIU's test/zdtm format) of a KFD process.
 *
 * On every GPU the KFD topology shows: a VRAM BO mapped on all GPUs and a
 * GTT BO mapped on its own, both CPU-mapped through the GPU's render node
 * and filled with a pattern of their own. Then test_daemon() and
 * test_waitsig(): zdtm.py checkpoints and restores meanwhile. Then, in
 * this order: every byte of every BO; the process's apertures list the
 * gpu_ids it had; each BO's CPU mapping is still at its address, of its
 * size, through its GPU's render node (/proc/self/maps); its GPU mapping
 * set is the one it had (UNMAP on a GPU outside the set fails with EINVAL,
 * on each GPU of the set succeeds); its handle is valid once (FREE
 * succeeds, a second FREE fails). pass() or fail(first difference).
 *
 * In zdtm's ns flavour the test runs in its own mount namespace whose root
 * is zdtm's test tree, with a /dev of zdtm's own: like a container runtime
 * it gives itself /dev/kfd and its render nodes (the numbers from sysfs,
 * mounted for the setup, which also reads the KFD topology there, and
 * unmounted again before test_daemon()).
 */
#include "kfdlib.h"
#include "zdtmtst.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

const char *test_doc = "VRAM and GTT BOs of every GPU keep their bytes, CPU and GPU mappings and handles";
const char *test_author = "amdgpu-criu";

#define VRAM_SIZE (2 * 1024 * 1024 + KFDL_PAGE)
#define GTT_SIZE  (64 * 1024)
#define MAX_BOS	  (2 * KFDL_MAX_GPUS)

static struct kfdl k;
static struct kfdl_bo bos[MAX_BOS];
static int n_bos;
static uint32_t ap_ids[KFDL_MAX_GPUS], n_ap;

static uint8_t pattern(int b, uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + (uint64_t)b * 29 + 0x5a);
}

/* ---- ns flavour: /dev/kfd and render nodes from sysfs ---- */

static int dev_of(const char *sysfile, dev_t *dev)
{
	unsigned int ma, mi;
	FILE *f = fopen(sysfile, "r");
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%u:%u", &ma, &mi);
	fclose(f);
	if (n != 2)
		return -EINVAL;
	*dev = makedev(ma, mi);
	return 0;
}

static int node_from_sysfs(const char *sysfile, const char *path)
{
	dev_t dev = 0;
	int rc = dev_of(sysfile, &dev);

	if (rc) {
		pr_err("%s: %s\n", sysfile, strerror(-rc));
		return rc;
	}
	if (mknod(path, S_IFCHR | 0666, dev) && errno != EEXIST) {
		pr_perror("mknod %s", path);
		return -errno;
	}
	return 0;
}

static int make_gpu_nodes(void)
{
	char sys[128], dev[64];
	int minor, rc;

	if (mkdir("/sys", 0755) && errno != EEXIST)
		return -errno;
	if (mount("sysfs", "/sys", "sysfs", 0, NULL)) {
		pr_perror("mount sysfs for the GPU device numbers");
		return -errno;
	}
	rc = node_from_sysfs("/sys/class/kfd/kfd/dev", "/dev/kfd");
	if (!rc && mkdir("/dev/dri", 0755) && errno != EEXIST)
		rc = -errno;
	for (minor = 128; !rc && minor < 256; minor++) {
		snprintf(sys, sizeof(sys), "/sys/class/drm/renderD%d/dev", minor);
		if (access(sys, F_OK))
			continue;
		snprintf(dev, sizeof(dev), "/dev/dri/renderD%d", minor);
		rc = node_from_sysfs(sys, dev);
	}
	return rc;
}

/* ---- setup ---- */

static int add_bo(int gi, enum kfdl_bo_type t, uint64_t size, int all_gpus)
{
	struct kfdl_bo *bo = &bos[n_bos];
	uint32_t ids[KFDL_MAX_GPUS];
	uint64_t i;
	int n = 0, rc;

	rc = kfdl_alloc(&k, gi, t, size, bo);
	if (rc) {
		pr_err("alloc %s of %" PRIu64 " bytes on gpu %u: %s\n", kfdl_type_name(t), size,
		       k.gpu[gi].gpu_id, strerror(-rc));
		return rc;
	}
	for (i = 0; i < size; i++)
		bo->cpu[i] = pattern(n_bos, i);
	if (all_gpus)
		for (n = 0; n < k.n_gpus; n++)
			ids[n] = k.gpu[n].gpu_id;
	else
		ids[n++] = k.gpu[gi].gpu_id;
	rc = kfdl_map(&k, bo, ids, n);
	if (rc)
		pr_err("map %s of gpu %u on %d GPUs: %s\n", kfdl_type_name(t), k.gpu[gi].gpu_id, n,
		       strerror(-rc));
	n_bos++;
	return rc;
}

static int setup(void)
{
	int gi, rc;

	rc = kfdl_open(&k);
	if (rc) {
		pr_err("open /dev/kfd, render nodes, ACQUIRE_VM: %s (%d GPUs in the topology; /dev/kfd %s; node 1 gpu_id %s)\n",
		       strerror(-rc), k.n_gpus, access("/dev/kfd", R_OK | W_OK) ? strerror(errno) : "ok",
		       access("/sys/class/kfd/kfd/topology/nodes/1/gpu_id", R_OK) ? strerror(errno) : "ok");
		return rc;
	}
	if (!k.n_gpus) {
		pr_err("no GPU in the KFD topology\n");
		return -ENODEV;
	}
	for (gi = 0; gi < k.n_gpus; gi++) {
		rc = add_bo(gi, KFDL_VRAM, VRAM_SIZE, 1);
		if (!rc)
			rc = add_bo(gi, KFDL_GTT, GTT_SIZE, 0);
		if (rc)
			return rc;
	}
	rc = kfdl_apertures(&k, ap_ids, &n_ap, KFDL_MAX_GPUS);
	if (rc)
		pr_err("GET_PROCESS_APERTURES_NEW: %s\n", strerror(-rc));
	return rc;
}

/* ---- checks after the restore: 0, or fail() said what differs ---- */

static int check_bytes(void)
{
	uint64_t i;
	int b;

	for (b = 0; b < n_bos; b++)
		for (i = 0; i < bos[b].size; i++)
			if (bos[b].cpu[i] != pattern(b, i)) {
				fail("%s BO %d of gpu %u: byte %" PRIu64 " is 0x%02x, want 0x%02x",
				     kfdl_type_name(bos[b].type), b, k.gpu[bos[b].gi].gpu_id, i,
				     bos[b].cpu[i], pattern(b, i));
				return -1;
			}
	return 0;
}

static int check_apertures(void)
{
	uint32_t ids[KFDL_MAX_GPUS], n, i;
	int rc = kfdl_apertures(&k, ids, &n, KFDL_MAX_GPUS);

	if (rc) {
		fail("GET_PROCESS_APERTURES_NEW: %s", strerror(-rc));
		return -1;
	}
	if (n != n_ap) {
		fail("apertures: %u devices, had %u", n, n_ap);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (ids[i] != ap_ids[i]) {
			fail("apertures: device %u is gpu %u, was %u", i, ids[i], ap_ids[i]);
			return -1;
		}
	return 0;
}

/* the maps line starting at bo->cpu: its size and the render node behind it */
static int check_cpu_mapping(const struct kfdl_bo *bo, int b)
{
	unsigned long lo, hi;
	char line[512], want[32];
	int found = 0;
	size_t n;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f) {
		fail("open /proc/self/maps: %m");
		return -1;
	}
	/* the path as this task sees it: in the ns flavour a restored mapping
	 * may be of the host's node, outside this root (no /dev/dri prefix) */
	snprintf(want, sizeof(want), "/renderD%u", k.gpu[bo->gi].minor);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == (unsigned long)bo->cpu)
			found = 1;
	fclose(f);
	if (!found) {
		fail("BO %d: no mapping at %p any more", b, bo->cpu);
		return -1;
	}
	line[strcspn(line, "\n")] = 0;
	n = strlen(line);
	if (hi - lo != bo->size || n < strlen(want) || strcmp(line + n - strlen(want), want)) {
		fail("BO %d: mapping at %p is \"%s\", want %" PRIu64 " bytes of %s", b, bo->cpu,
		     line, bo->size, want);
		return -1;
	}
	return 0;
}

static int outside_gpu(const struct kfdl_bo *bo, uint32_t *id)
{
	uint32_t m;
	int g;

	for (g = 0; g < k.n_gpus; g++) {
		for (m = 0; m < bo->n_mapped && bo->mapped[m] != k.gpu[g].gpu_id; m++)
			;
		if (m == bo->n_mapped) {
			*id = k.gpu[g].gpu_id;
			return 1;
		}
	}
	return 0;
}

static int check_gpu_mapping(struct kfdl_bo *bo, int b)
{
	uint32_t n = bo->n_mapped, id;
	int rc;

	if (outside_gpu(bo, &id)) {
		rc = kfdl_unmap(&k, bo, &id, 1);
		if (rc != -EINVAL) {
			fail("BO %d: UNMAP on gpu %u, outside its set, gave %d, want -EINVAL", b, id, rc);
			return -1;
		}
	}
	rc = kfdl_unmap_all(&k, bo);
	if (rc) {
		fail("BO %d: UNMAP on its %u GPUs: %s", b, n, strerror(-rc));
		return -1;
	}
	rc = kfdl_free(&k, bo);
	if (rc) {
		fail("BO %d: FREE of handle 0x%" PRIx64 ": %s", b, bo->handle, strerror(-rc));
		return -1;
	}
	rc = kfdl_free(&k, bo);
	if (!rc) {
		fail("BO %d: handle 0x%" PRIx64 " freed twice", b, bo->handle);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* zdtm's lib unsets ZDTM_NEWNS in test_init() before the test runs */
	bool new_ns = getenv("ZDTM_NEWNS") != NULL;
	int b;

	test_init(argc, argv);
	if (new_ns && make_gpu_nodes())
		return 1;
	/* the KFD topology is read from sysfs too: unmounted after the setup */
	if (setup())
		return 1;
	if (new_ns && umount2("/sys", MNT_DETACH)) {
		pr_perror("umount /sys");
		return 1;
	}
	test_msg("%d GPUs, %d BOs\n", k.n_gpus, n_bos);

	test_daemon();
	test_waitsig();

	if (check_bytes() || check_apertures())
		return 1;
	for (b = 0; b < n_bos; b++)
		if (check_cpu_mapping(&bos[b], b))
			return 1;
	for (b = 0; b < n_bos; b++)
		if (check_gpu_mapping(&bos[b], b))
			return 1;
	kfdl_close(&k);
	pass();
	return 0;
}
