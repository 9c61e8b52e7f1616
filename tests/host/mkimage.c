// SPDX-License-Identifier: MIT
/*
 * mkimage: writes a synthetic checkpoint (tests/unit/synth_ckpt.h) for the
 * host tests of `amdgpu-criu inspect|check`. Built by test-tool-inspect.sh.
 *
 *   mkimage --sysfs TOPODIR --nodes 2,3 --out IMGDIR [--id N] [--render-id N]
 *           [--release R] [--bo-record N] [--user-delta N] [--pid N] [--xnack]
 *           [--hsakmt PID [--hsakmt-path PATH]]
 *
 * --hsakmt PID also writes amdgpu-hsakmt-PID.img as the plugin does for a
 * process that created libhsakmt's semaphore and maps its 8-byte shared
 * memory (plugin/hsakmt_files.h); --hsakmt-path names another file in it
 * (a hostile image).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "images/kfd_image.h"
#include "synth_ckpt.h"

struct args {
	const char *sysfs, *out;
	uint32_t nodes[SYNTH_MAX_GPUS];
	struct synth_spec spec;
	uint32_t hsakmt_pid; /* 0: none */
	const char *hsakmt_path;
};

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 0);
	if (errno || end == s || *end || n > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)n;
	return 0;
}

static int parse_nodes(char *s, struct args *a)
{
	char *save = NULL;

	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->spec.n_nodes == SYNTH_MAX_GPUS || parse_u32(tok, &a->nodes[a->spec.n_nodes]))
			return -EINVAL;
		a->spec.n_nodes++;
	}
	return a->spec.n_nodes ? 0 : -EINVAL;
}

static int parse_args(int argc, char *argv[], struct args *a)
{
	static const struct option opts[] = {
		{"sysfs", required_argument, NULL, 's'},
		{"nodes", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"id", required_argument, NULL, 'i'},
		{"render-id", required_argument, NULL, 'r'},
		{"release", required_argument, NULL, 'R'},
		{"bo-record", required_argument, NULL, 'b'},
		{"user-delta", required_argument, NULL, 'u'},
		{"pid", required_argument, NULL, 'p'},
		{"xnack", no_argument, NULL, 'x'},
		{"hsakmt", required_argument, NULL, 'h'},
		{"hsakmt-path", required_argument, NULL, 'H'},
		{0},
	};
	int c, ret = 0;

	a->spec.image_id = 1;
	while (!ret && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->sysfs = optarg;
			break;
		case 'n':
			ret = parse_nodes(optarg, a);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'i':
			ret = parse_u32(optarg, &a->spec.image_id);
			break;
		case 'r':
			ret = parse_u32(optarg, &a->spec.render_id);
			break;
		case 'R':
			a->spec.release = optarg;
			break;
		case 'b':
			ret = parse_u32(optarg, &a->spec.bo_record_size);
			break;
		case 'u':
			ret = parse_u32(optarg, &a->spec.user_gpu_id_delta);
			break;
		case 'p':
			ret = parse_u32(optarg, &a->spec.pid);
			break;
		case 'x':
			a->spec.xnack = true;
			break;
		case 'h':
			ret = parse_u32(optarg, &a->hsakmt_pid);
			break;
		case 'H':
			a->hsakmt_path = optarg;
			break;
		default:
			ret = -EINVAL;
		}
	}
	if (ret || optind != argc || !a->sysfs || !a->out || !a->spec.n_nodes)
		return -EINVAL;
	a->spec.nodes = a->nodes;
	return 0;
}

static int write_hsakmt(int dir_fd, uint32_t pid, const char *path, char *err, size_t len)
{
	static uint8_t shm[8] = {'H', 'S', 'A', 'T', 4, 0, 0, 0};
	HsakmtFileEntry file = HSAKMT_FILE_ENTRY__INIT, *files[1] = {&file};
	HsakmtFilesEntry e = HSAKMT_FILES_ENTRY__INIT;

	file.path = (char *)(path ? path : "/dev/shm/hsakmt_shared_mem");
	file.size = sizeof(shm);
	file.mode = 0644;
	file.contents.data = shm;
	file.contents.len = sizeof(shm);
	e.n_files = 1;
	e.files = files;
	e.has_semaphore_unlinked = true;
	e.semaphore_unlinked = true;
	return kfd_image_write(dir_fd, KFD_IMAGE_HSAKMT, pid, &e.base, err, len);
}

int main(int argc, char *argv[])
{
	struct args a = {0};
	struct kfd_topology topo;
	char err[1024];
	int dir_fd, ret;

	if (parse_args(argc, argv, &a)) {
		fprintf(stderr, "usage: mkimage --sysfs DIR --nodes LIST --out DIR [options]\n");
		return 2;
	}
	ret = topo_load(a.sysfs, &topo, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mkimage: %s\n", err);
		return 1;
	}
	a.spec.topo = &topo;
	dir_fd = open(a.out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		fprintf(stderr, "mkimage: %s: %s\n", a.out, strerror(errno));
		ret = -errno;
	} else {
		ret = synth_write_checkpoint(dir_fd, &a.spec, err, sizeof(err));
		if (!ret && a.hsakmt_pid)
			ret = write_hsakmt(dir_fd, a.hsakmt_pid, a.hsakmt_path, err, sizeof(err));
		if (ret)
			fprintf(stderr, "mkimage: %s\n", err);
		close(dir_fd);
	}
	topo_free(&topo);
	return ret ? 1 : 0;
}
