// SPDX-License-Identifier: MIT
/*
 * zdtm-gpu-gem [OPTIONS] READY TRIGGER RESULT: a process that holds GPU
 * memory KFD does not know, a render-node (GEM) BO, beside a KFD VRAM BO,
 * for the plugin's refusal to dump what it cannot save.
 *
 * The KFD part: /dev/kfd, ACQUIRE_VM on the first visible GPU's render node,
 * a 1 MiB VRAM BO mapped on it, filled with a pattern. The GEM part, made
 * with libdrm_amdgpu on the same open render file (gemlib.h): one BO of
 * --gem SIZE bytes (VRAM; --gtt: GTT), filled with another pattern, and
 * with --gem-map mapped in the GPU VM (Linux 6.12's fdinfo counts a GEM BO
 * only once mapped). --skip-handles N first makes N small BOs and frees them
 * after the real one, which therefore has handle N + 1 (above a prober's
 * reach when N is large). --no-kfd: no /dev/kfd at all (a Mesa-like
 * process). --kfd-handle: the KFD BO's dma-buf is also imported as a GEM
 * handle of the render file, and kept (the same BO under two names).
 * --foreign: a 64 KiB GEM BO of the second GPU's render node imported as a
 * GEM handle of the first's (a PRIME import of another device's buffer),
 * the second GPU's file closed again. --drop-va (a test's negative
 * control): on TRIGGER the GEM BO's GPU mapping is removed before the
 * self-check, as a restore that lost it would leave it.
 *
 * READY: "pid P", one "fd N TARGET" per open fd, "gem_handle H" and
 * "gem_bytes S" when there is a GEM BO, and "gem_va A" when the kernel
 * tells its GPU mapping (Linux 6.18's GET_MAPPING_INFO). On TRIGGER it
 * checks every byte of both BOs, that its GEM handle still names a BO of
 * that size, and that the BO is still mapped at the same GPU VA with the
 * same size, offset and flags (where the kernel tells); then it writes a
 * new pattern through its CPU mapping and reads it back. PASS or
 * "FAIL <first difference>" goes to RESULT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemlib.h"
#include "kfdlib.h"
#include "zdtm_util.h"

struct opts {
	uint64_t gem_size;
	bool gtt, gem_map, no_kfd, kfd_handle, foreign, drop_va;
	unsigned int skip_handles;
	const char *ready, *trigger, *result;
};

static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 1; i < argc - 3; i++) {
		if (!strcmp(argv[i], "--gem") && i + 1 < argc - 3)
			o->gem_size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--gtt"))
			o->gtt = true;
		else if (!strcmp(argv[i], "--gem-map"))
			o->gem_map = true;
		else if (!strcmp(argv[i], "--no-kfd"))
			o->no_kfd = true;
		else if (!strcmp(argv[i], "--kfd-handle"))
			o->kfd_handle = true;
		else if (!strcmp(argv[i], "--foreign"))
			o->foreign = true;
		else if (!strcmp(argv[i], "--drop-va"))
			o->drop_va = true;
		else if (!strcmp(argv[i], "--skip-handles") && i + 1 < argc - 3)
			o->skip_handles = (unsigned int)strtoul(argv[++i], NULL, 0);
		else
			return -EINVAL;
	}
	if (argc < 4)
		return -EINVAL;
	o->ready = argv[argc - 3];
	o->trigger = argv[argc - 2];
	o->result = argv[argc - 1];
	return 0;
}

static int write_ready(const struct opts *o, struct gem_bo *gem, const struct gem_mapping *va)
{
	char head[192];
	int n = snprintf(head, sizeof(head), "pid %d\n", (int)getpid());

	if (gem)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "gem_handle %u\ngem_bytes %llu\n",
			      gem_bo_handle(gem), (unsigned long long)o->gem_size);
	if (va->size)
		snprintf(head + n, sizeof(head) - (size_t)n, "gem_va %#llx\n",
			 (unsigned long long)va->addr);
	return zdtm_write_ready(o->ready, head);
}

/* The GEM BO after the restore: its handle, its GPU mapping, its CPU mapping. */
static int check_gem(int render_fd, struct gem_bo *gem, uint64_t size,
		     const struct gem_mapping *before, char *why, size_t len)
{
	struct gem_mapping now = {0};
	uint64_t got = 0;
	int64_t bad;
	int ret;

	if ((bad = zdtm_verify(gem_bo_cpu(gem), size, 0xa5)) >= 0)
		return snprintf(why, len, "FAIL GEM BO byte %lld", (long long)bad);
	ret = gem_handle_size(render_fd, gem_bo_handle(gem), &got);
	if (ret || got != size)
		return snprintf(why, len, "FAIL GEM handle %u names %s (%llu bytes)",
				gem_bo_handle(gem), ret ? strerror(-ret) : "another BO",
				(unsigned long long)got);
	if (before->size) {
		ret = gem_handle_mapping(render_fd, gem_bo_handle(gem), &now);
		if (ret || memcmp(&now, before, sizeof(now)))
			return snprintf(
				why, len,
				"FAIL GEM BO VA: %s: %#llx+%#llx flags %#llx, was %#llx+%#llx "
				"flags %#llx",
				ret ? strerror(-ret) : "moved", (unsigned long long)now.addr,
				(unsigned long long)now.size, (unsigned long long)now.flags,
				(unsigned long long)before->addr, (unsigned long long)before->size,
				(unsigned long long)before->flags);
	}
	zdtm_fill(gem_bo_cpu(gem), size, 0x3c);
	if ((bad = zdtm_verify(gem_bo_cpu(gem), size, 0x3c)) >= 0)
		return snprintf(why, len, "FAIL GEM BO write after restore, byte %lld",
				(long long)bad);
	return 0;
}

static int render_fd_no_kfd(void)
{
	struct kfdl_node nodes[KFDL_MAX_GPUS];
	char path[64];
	int n = kfdl_nodes(nodes, KFDL_MAX_GPUS);

	if (n <= 0)
		return n ? n : -ENODEV;
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", nodes[0].minor);
	n = open(path, O_RDWR | O_CLOEXEC);
	return n < 0 ? -errno : n;
}

/* The KFD BO's dma-buf as a GEM handle of the render file. */
static int import_kfd_bo(struct kfdl *k, const struct kfdl_bo *bo, int render_fd)
{
	uint32_t handle;
	int fd, ret = kfdl_export_dmabuf(k, bo, &fd);

	if (ret)
		return ret;
	ret = gem_import_handle(render_fd, fd, &handle);
	close(fd);
	if (!ret)
		printf("KFD BO also GEM handle %u\n", handle);
	return ret;
}

/* A GEM BO of the second GPU imported into the first GPU's render file. */
static int import_foreign(int render_fd)
{
	struct kfdl_node nodes[KFDL_MAX_GPUS];
	struct gem_dev *dev = NULL;
	struct gem_bo *bo = NULL;
	char path[64];
	uint32_t handle;
	int n = kfdl_nodes(nodes, KFDL_MAX_GPUS), fd, dmabuf = -1, ret;

	if (n < 2)
		return -ENODEV;
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", nodes[1].minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = gem_dev_open(fd, &dev);
	if (!ret)
		ret = gem_bo_new(dev, 65536, false, false, &bo);
	if (!ret)
		ret = gem_bo_export(bo, &dmabuf);
	if (!ret)
		ret = gem_import_handle(render_fd, dmabuf, &handle);
	if (!ret)
		printf("renderD%u's GEM BO imported as handle %u\n", nodes[1].minor, handle);
	if (dmabuf >= 0)
		close(dmabuf);
	gem_bo_free(bo);
	gem_dev_close(dev);
	close(fd);
	return ret;
}

static int result(const struct opts *o, const char *text)
{
	return zdtm_result(o->result, text);
}

int main(int argc, char **argv)
{
	static struct kfdl k;
	struct kfdl_bo kbo = {0};
	struct gem_dev *dev = NULL;
	struct gem_bo *gem = NULL, **skip = NULL;
	struct gem_mapping va = {0};
	struct opts o;
	char why[256];
	int render_fd, sel = 0, ret;
	unsigned int i;
	int64_t bad;

	if (parse(argc, argv, &o)) {
		fprintf(stderr,
			"usage: %s [--gem SIZE [--gtt] [--gem-map] [--skip-handles N] "
			"[--drop-va]] [--no-kfd | --kfd-handle] [--foreign] READY TRIGGER "
			"RESULT\n",
			argv[0]);
		return 2;
	}
	if (o.no_kfd) {
		render_fd = render_fd_no_kfd();
	} else {
		ret = kfdl_open_sel(&k, &sel, 1);
		if (!ret)
			ret = kfdl_alloc(&k, 0, KFDL_VRAM, 1 << 20, &kbo);
		if (!ret)
			ret = kfdl_map(&k, &kbo, &k.gpu[0].gpu_id, 1);
		if (ret) {
			fprintf(stderr, "KFD setup: %s\n", strerror(-ret));
			return 1;
		}
		zdtm_fill(kbo.cpu, kbo.size, 0x5a);
		render_fd = k.gpu[0].render_fd;
		if (o.kfd_handle && (ret = import_kfd_bo(&k, &kbo, render_fd))) {
			fprintf(stderr, "KFD BO as a GEM handle: %s\n", strerror(-ret));
			return 1;
		}
	}
	if (render_fd < 0) {
		fprintf(stderr, "render node: %s\n", strerror(-render_fd));
		return 1;
	}
	if (o.gem_size) {
		skip = calloc(o.skip_handles + 1, sizeof(*skip));
		ret = skip ? gem_dev_open(render_fd, &dev) : -ENOMEM;
		for (i = 0; !ret && i < o.skip_handles; i++)
			ret = gem_bo_new(dev, 4096, false, false, &skip[i]);
		if (!ret)
			ret = gem_bo_new(dev, o.gem_size, !o.gtt, o.gem_map, &gem);
		for (i = 0; i < o.skip_handles; i++)
			gem_bo_free(skip[i]);
		if (ret) {
			fprintf(stderr, "GEM BO: %s\n", strerror(-ret));
			return 1;
		}
		zdtm_fill(gem_bo_cpu(gem), o.gem_size, 0xa5);
		/* before 6.18 the kernel does not tell: no VA check */
		if (o.gem_map && gem_handle_mapping(render_fd, gem_bo_handle(gem), &va))
			memset(&va, 0, sizeof(va));
		printf("GEM BO: handle %u, %llu bytes, GPU VA %#llx\n", gem_bo_handle(gem),
		       (unsigned long long)o.gem_size, (unsigned long long)va.addr);
	}
	if (o.foreign && (ret = import_foreign(render_fd))) {
		fprintf(stderr, "another GPU's GEM BO: %s\n", strerror(-ret));
		return 1;
	}
	ret = write_ready(&o, gem, &va);
	if (ret) {
		fprintf(stderr, "READY: %s\n", strerror(-ret));
		return 1;
	}
	fflush(stdout);
	while (access(o.trigger, F_OK))
		usleep(20 * 1000);
	if (!o.no_kfd && (bad = zdtm_verify(kbo.cpu, kbo.size, 0x5a)) >= 0) {
		snprintf(why, sizeof(why), "FAIL KFD BO byte %lld", (long long)bad);
		return result(&o, why);
	}
	if (o.drop_va && gem && (ret = gem_bo_unmap_va(gem)))
		fprintf(stderr, "--drop-va: %s\n", strerror(-ret));
	if (gem && check_gem(render_fd, gem, o.gem_size, &va, why, sizeof(why)))
		return result(&o, why);
	gem_bo_free(gem);
	gem_dev_close(dev);
	free(skip);
	return result(&o, "PASS");
}
