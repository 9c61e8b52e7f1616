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
 * process).
 *
 * READY: "pid P", one "fd N TARGET" per open fd, "gem_handle H" and
 * "gem_bytes S" when there is a GEM BO. On TRIGGER it checks every byte of
 * both BOs and writes PASS or "FAIL <first difference>" to RESULT.
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
	bool gtt, gem_map, no_kfd;
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

static int write_ready(const struct opts *o, struct gem_bo *gem)
{
	char head[128];
	int n = snprintf(head, sizeof(head), "pid %d\n", (int)getpid());

	if (gem)
		snprintf(head + n, sizeof(head) - (size_t)n, "gem_handle %u\ngem_bytes %llu\n",
			 gem_bo_handle(gem), (unsigned long long)o->gem_size);
	return zdtm_write_ready(o->ready, head);
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
	struct opts o;
	char why[256];
	int render_fd, sel = 0, ret;
	unsigned int i;
	int64_t bad;

	if (parse(argc, argv, &o)) {
		fprintf(stderr,
			"usage: %s [--gem SIZE [--gtt] [--gem-map] [--skip-handles N]] "
			"[--no-kfd] READY TRIGGER RESULT\n",
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
		printf("GEM BO: handle %u, %llu bytes\n", gem_bo_handle(gem),
		       (unsigned long long)o.gem_size);
	}
	ret = write_ready(&o, gem);
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
	if (gem && (bad = zdtm_verify(gem_bo_cpu(gem), o.gem_size, 0xa5)) >= 0) {
		snprintf(why, sizeof(why), "FAIL GEM BO byte %lld", (long long)bad);
		return result(&o, why);
	}
	gem_bo_free(gem);
	gem_dev_close(dev);
	free(skip);
	return result(&o, "PASS");
}
