// SPDX-License-Identifier: MIT
/*
 * Process and render-node images (images/kfd_image.c) and the verification
 * of BO contents (bo_stream_verify) on a synthetic checkpoint of two MI308X
 * partitions from the real capture (synth_ckpt.h): a valid checkpoint loads
 * with the right numbers; hostile images (truncated files, wrong counts, a BO
 * of an unknown GPU, a blob that overruns, duplicate ids, oversized counts,
 * random damage, files that are not regular files) are refused with a
 * one-line message naming the file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "datapath/bo_stream.h"
#include "images/kfd_image.h"
#include "images/topology_image.h"
#include "synth_ckpt.h"

#define ID 7u

static const uint32_t gpu_nodes[] = {2, 3};

struct fixture {
	char dir[64];
	int dir_fd;
	struct kfd_topology topo;
	struct synth_spec spec;
};

/* ---- fixture --------------------------------------------------------------------------- */

static void empty_dir(struct fixture *f)
{
	/* not dup(): a dup shares the offset, so a second listing would see nothing */
	DIR *d = fdopendir(openat(f->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(f->dir_fd, e->d_name, 0))
			unlinkat(f->dir_fd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[512], err[512];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test-kfd-image-XXXXXX");
	snprintf(path, sizeof(path), "%s/%s", fixtures_dir(), MI308X);
	if (!mkdtemp(f->dir) || topo_load(path, &f->topo, err, sizeof(err)))
		return -1;
	f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->spec = (struct synth_spec){.topo = &f->topo,
				      .nodes = gpu_nodes,
				      .n_nodes = 2,
				      .image_id = ID,
				      .render_id = 20};
	*state = f;
	return f->dir_fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	empty_dir(f);
	close(f->dir_fd);
	rmdir(f->dir);
	topo_free(&f->topo);
	free(f);
	return 0;
}

/* ---- valid checkpoints ----------------------------------------------------------------------- */

static void test_valid_checkpoint(void **state)
{
	struct fixture *f = *state;
	struct kfd_process_image img;
	struct render_file_image r;
	char err[512];
	uint32_t gpu;

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	assert_int_equal(kfd_image_exists(f->dir_fd, KFD_IMAGE_PROCESS, ID), 0);
	assert_int_equal(kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err)), 0);
	assert_string_equal(img.entry->kernel_release, "6.12.48+deb13-amd64");
	assert_int_equal(img.entry->bo_record_size, 272);
	assert_int_equal(img.entry->n_devices, 2);
	assert_int_equal(img.entry->n_bos, 2 * SYNTH_BOS_PER_GPU);
	assert_int_equal(img.blob.queues, 3);
	assert_int_equal(img.blob.compute_queues, 2);
	assert_int_equal(img.blob.sdma_queues, 1);
	assert_int_equal(img.blob.events, 2);
	assert_int_equal(img.blob.svm_ranges, 1);
	for (size_t i = 0; i < 2; i++) {
		gpu = f->topo.nodes[gpu_nodes[i]].gpu_id;
		assert_int_equal(img.device_nodes[i], gpu_nodes[i]);
		assert_int_equal(img.device_bo_count[i], SYNTH_CONTENT_PER_GPU);
		assert_int_equal(img.device_bytes[i],
				 synth_bo_size(i, 0) + synth_bo_size(i, 1) + synth_bo_size(i, 2));
		assert_int_equal(kfd_process_image_device(&img, gpu), (int)i);
	}
	assert_int_equal(kfd_process_image_device(&img, 1), -1);
	kfd_process_image_free(&img);

	assert_int_equal(render_file_image_load(f->dir_fd, 21, &r, err, sizeof(err)), 0);
	assert_int_equal(r.entry->node_index, 3);
	assert_int_equal(r.entry->minor, f->topo.nodes[3].props.drm_render_minor);
	assert_int_equal(r.entry->actual_gpu_id, f->topo.nodes[3].gpu_id);
	render_file_image_free(&r);
}

/* /dev/kfd of a process without GPUs (PROCESS_INFO: ENODEV): the image holds the file only. */
static void test_no_gpu_process(void **state)
{
	struct fixture *f = *state;
	struct synth_process *p = calloc(1, sizeof(*p));
	struct kfd_process_image img;
	KfdTopologyEntry *empty = NULL;
	char err[512];

	assert_non_null(p);
	assert_int_equal(synth_process_build(&f->spec, p, err, sizeof(err)), 0);
	assert_int_equal(topo_to_image(f->spec.topo, f->spec.nodes, 0, &empty), 0);
	p->entry.n_devices = 0;
	p->entry.n_bos = 0;
	p->entry.num_objects = 0;
	p->entry.priv_data.len = 0;
	p->entry.bo_record_size = 0;
	p->entry.topology = empty;
	assert_int_equal(
		kfd_image_write(f->dir_fd, KFD_IMAGE_PROCESS, ID, &p->entry.base, err, sizeof(err)),
		0);
	if (kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err)))
		fail_msg("a no-GPU image does not load: %s", err);
	assert_int_equal(img.entry->n_devices, 0);
	assert_int_equal(img.blob.queues, 0);
	kfd_process_image_free(&img);
	topo_image_free(empty);
	synth_process_free(p);
	free(p);
}

/* The layout rule the plugin and `amdgpu-criu check` share: only images with BOs must match. */
static void test_layout_misfit(void **state)
{
	KfdProcessEntry with_bos = {.n_bos = 3, .bo_record_size = 272};
	KfdProcessEntry without_bos = {.n_bos = 0, .bo_record_size = 0};
	struct kfd_process_image procs[2] = {{.id = 1, .entry = &without_bos},
					     {.id = 2, .entry = &with_bos}};

	(void)state;
	assert_null(kfd_image_layout_misfit(procs, 2, 272));
	assert_ptr_equal(kfd_image_layout_misfit(procs, 2, 80), &procs[1]);
	assert_null(kfd_image_layout_misfit(procs, 1, 80));
	assert_null(kfd_image_layout_misfit(procs, 0, 80));
}

static void test_old_kernel_and_restored_process(void **state)
{
	struct fixture *f = *state;
	struct synth_spec spec = f->spec;
	struct kfd_process_image img;
	char err[512];

	spec.release = "6.1.0-28-amd64";
	spec.user_gpu_id_delta = 5;
	spec.xnack = true;
	assert_int_equal(synth_write_checkpoint(f->dir_fd, &spec, err, sizeof(err)), 0);
	assert_int_equal(kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err)), 0);
	assert_int_equal(img.entry->bo_record_size, 80);
	assert_int_equal(img.blob.xnack_mode, 1);
	assert_int_equal(img.entry->devices[0]->user_gpu_id,
			 img.entry->devices[0]->actual_gpu_id + 5);
	kfd_process_image_free(&img);
}

static void test_list(void **state)
{
	static const char *const names[] = {
		"amdgpu-kfd-3.img",	    "amdgpu-kfd-12.img",	  "amdgpu-kfd-01x.img",
		"amdgpu-kfd-.img",	    "amdgpu-kfd-99999999999.img", "amdgpu-kfd-3.img.bak",
		"amdgpu-kfd--1.img",	    "amdgpu-render-4.img",	  "xamdgpu-kfd-5.img",
		"amdgpu-kfd-4294967295.img"};
	struct fixture *f = *state;
	uint32_t *ids;
	size_t n;
	int fd;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fd = openat(f->dir_fd, names[i], O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_PROCESS, &ids, &n, NULL, 0), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 3);
	assert_int_equal(ids[1], 12);
	assert_int_equal(ids[2], UINT32_MAX);
	free(ids);
	assert_int_equal(kfd_image_list(f->dir_fd, KFD_IMAGE_RENDER, &ids, &n, NULL, 0), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], 4);
	free(ids);
}

/* ---- hostile process images --------------------------------------------------------------------
 */

struct bad_process {
	const char *name;
	void (*apply)(struct synth_process *p);
	const char *expect; /* in the message */
};

static void wrong_object_count(struct synth_process *p)
{
	p->entry.num_objects++;
}

static void too_few_objects(struct synth_process *p)
{
	p->entry.num_objects--;
}

static void bo_unknown_gpu(struct synth_process *p)
{
	p->bos[4].gpu_id = 1;
}

static void blob_overrun(struct synth_process *p)
{
	p->entry.priv_data.len--;
}

static void blob_trailing_bytes(struct synth_process *p)
{
	size_t len = p->entry.priv_data.len;
	uint8_t *blob = realloc(p->blob, len + 8);

	assert_non_null(blob);
	memset(blob + len, 0, 8);
	p->blob = blob;
	p->entry.priv_data.data = blob;
	p->entry.priv_data.len = len + 8;
}

static void blob_empty(struct synth_process *p)
{
	p->entry.priv_data.len = 0;
}

static void duplicate_user_id(struct synth_process *p)
{
	p->devs[1].user_gpu_id = p->devs[0].user_gpu_id;
}

static void duplicate_actual_id(struct synth_process *p)
{
	p->devs[1].actual_gpu_id = p->devs[0].actual_gpu_id;
}

static void zero_gpu_id(struct synth_process *p)
{
	p->devs[0].user_gpu_id = 0;
}

static void gpu_not_in_topology(struct synth_process *p)
{
	p->devs[1].node_index = 7;
}

static void gpu_id_differs_from_topology(struct synth_process *p)
{
	p->devs[1].actual_gpu_id++;
}

static void node_is_cpu(struct synth_process *p)
{
	p->devs[1].node_index = 0;
}

static void oversized_objects(struct synth_process *p)
{
	p->entry.num_objects = UINT32_MAX;
}

static void too_many_devices(struct synth_process *p)
{
	static KfdDeviceEntry *many[KFD_IMAGE_MAX_DEVICES + 1];

	for (size_t i = 0; i <= KFD_IMAGE_MAX_DEVICES; i++)
		many[i] = &p->devs[i % 2];
	p->entry.devices = many;
	p->entry.n_devices = KFD_IMAGE_MAX_DEVICES + 1;
}

static void bad_bo_record_size(struct synth_process *p)
{
	p->entry.bo_record_size = 100;
}

static void other_kernels_record_size(struct synth_process *p)
{
	p->entry.bo_record_size = 80;
}

static void blob_version(struct synth_process *p)
{
	p->blob[0] = 2;
}

static void unaligned_bo_size(struct synth_process *p)
{
	p->bos[0].size += 1;
}

static void huge_bo_size(struct synth_process *p)
{
	p->bos[0].size = 1ull << 60;
}

static void bad_topology(struct synth_process *p)
{
	p->topo->nodes[0]->index = 100000;
}

static void missing_bos_count(struct synth_process *p)
{
	p->entry.n_bos--; /* the blob still holds 12 BO records */
}

static void no_gpus_but_blob(struct synth_process *p)
{
	p->entry.n_devices = 0; /* a /dev/kfd without GPUs has no private data */
	p->entry.n_bos = 0;
	p->entry.num_objects = 0;
}

static void no_gpus_but_bos(struct synth_process *p)
{
	no_gpus_but_blob(p);
	p->entry.priv_data.len = 0;
	p->entry.n_bos = 1;
}

/* The recorded node of device 1 says simd_count 0: a CPU node posing as the GPU. */
static void gpu_node_without_simds(struct synth_process *p)
{
	for (size_t i = 0; i < p->topo->n_nodes; i++) {
		KfdNodeEntry *ne = p->topo->nodes[i];

		if (ne->index != p->devs[1].node_index)
			continue;
		for (size_t k = 0; k < ne->n_props; k++)
			if (!strcmp(ne->props[k]->key, "simd_count"))
				ne->props[k]->value = 0;
	}
}

/* GPU 0's six BOs of 2^48 bytes each: more than its 48-bit GPUVM address space. */
static void bos_past_address_space(struct synth_process *p)
{
	for (size_t i = 0; i < SYNTH_BOS_PER_GPU; i++)
		p->bos[i].size = 1ull << 48;
}

/* 65536 VRAM BOs of 2^48 bytes: their sum wraps a u64 to 0. */
static void bo_sum_wraps(struct synth_process *p)
{
	static KfdBoEntry *many[1u << 16];

	p->bos[0].size = 1ull << 48;
	for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++)
		many[i] = &p->bos[0];
	p->entry.bos = many;
	p->entry.n_bos = sizeof(many) / sizeof(many[0]);
}

static void device_render_minor_huge(struct synth_process *p)
{
	p->devs[0].render_minor = UINT32_MAX;
}

static const struct bad_process bad_processes[] = {
	{"device render minor 2^32-1", device_render_minor_huge, "render minor"},
	{"GPU node with simd_count 0", gpu_node_without_simds, "not a GPU"},
	{"BOs of one GPU past 2^48 bytes", bos_past_address_space, "address space"},
	{"65536 BOs of 2^48 bytes (sum wraps)", bo_sum_wraps, "address space"},
	{"no GPUs, yet private data", no_gpus_but_blob, "no GPUs, yet"},
	{"no GPUs, yet a BO", no_gpus_but_bos, "unknown GPU"},
	{"one object too many", wrong_object_count, "does not parse"},
	{"one object too few", too_few_objects, "does not parse"},
	{"BO of an unknown GPU", bo_unknown_gpu, "unknown GPU"},
	{"blob overrun", blob_overrun, "does not parse"},
	{"blob with trailing bytes", blob_trailing_bytes, "does not parse"},
	{"empty blob", blob_empty, "does not parse"},
	{"duplicate user gpu_id", duplicate_user_id, "share an id"},
	{"duplicate actual gpu_id", duplicate_actual_id, "share an id"},
	{"gpu_id 0", zero_gpu_id, "gpu_id 0"},
	{"GPU missing from the topology", gpu_not_in_topology, "missing from the recorded"},
	{"gpu_id not the topology's", gpu_id_differs_from_topology, "missing from the recorded"},
	{"device on a CPU node", node_is_cpu, "missing from the recorded"},
	{"oversized object count", oversized_objects, "more than"},
	{"65 GPUs", too_many_devices, "more than 64 GPUs"},
	{"BO record size 100", bad_bo_record_size, "does not parse"},
	{"BO record size of the other kernels", other_kernels_record_size, "does not parse"},
	{"blob version 2", blob_version, "version 2"},
	{"BO size not page aligned", unaligned_bo_size, "bad size"},
	{"BO size 2^60", huge_bo_size, "bad size"},
	{"node index out of range", bad_topology, "recorded topology"},
	{"BO count below the blob's", missing_bos_count, "does not parse"},
};

static void test_bad_process(void **state)
{
	const struct bad_process *bad = *state;
	struct synth_process *p = calloc(1, sizeof(*p));
	struct kfd_process_image img;
	struct kfd_topology topo;
	char path[512], err[512] = "";
	struct fixture f;

	assert_non_null(p);
	fixture_path(path, sizeof(path), MI308X);
	assert_int_equal(topo_load(path, &topo, err, sizeof(err)), 0);
	snprintf(f.dir, sizeof(f.dir), "/tmp/test-kfd-image-XXXXXX");
	assert_non_null(mkdtemp(f.dir));
	f.dir_fd = open(f.dir, O_RDONLY | O_DIRECTORY);
	f.spec = (struct synth_spec){
		.topo = &topo, .nodes = gpu_nodes, .n_nodes = 2, .image_id = ID};
	assert_int_equal(synth_process_build(&f.spec, p, err, sizeof(err)), 0);
	bad->apply(p);
	assert_int_equal(
		kfd_image_write(f.dir_fd, KFD_IMAGE_PROCESS, ID, &p->entry.base, err, sizeof(err)),
		0);
	assert_true(kfd_process_image_load(f.dir_fd, ID, &img, err, sizeof(err)) < 0);
	assert_null(img.entry); /* nothing is left to free */
	assert_non_null(strstr(err, "amdgpu-kfd-7.img"));
	if (!strstr(err, bad->expect))
		fail_msg("%s: message '%s' lacks '%s'", bad->name, err, bad->expect);
	assert_null(strchr(err, '\n'));
	synth_process_free(p);
	free(p);
	unlinkat(f.dir_fd, "amdgpu-kfd-7.img", 0);
	close(f.dir_fd);
	rmdir(f.dir);
	topo_free(&topo);
}

/* ---- damaged files --------------------------------------------------------------------------- */

static uint8_t *read_file(int dir_fd, const char *name, size_t *len)
{
	int fd = openat(dir_fd, name, O_RDONLY);
	struct stat st;
	uint8_t *buf;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void write_file(int dir_fd, const char *name, const uint8_t *buf, size_t len)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* Every truncation (in steps) of a valid image is refused, with a message naming the file. */
static void test_truncated(void **state)
{
	struct fixture *f = *state;
	struct kfd_process_image img;
	struct render_file_image r;
	char err[512];
	uint8_t *buf;
	size_t len;

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	buf = read_file(f->dir_fd, "amdgpu-kfd-7.img", &len);
	for (size_t cut = 0; cut < len; cut += 1 + cut / 16) {
		write_file(f->dir_fd, "amdgpu-kfd-7.img", buf, cut);
		err[0] = 0;
		assert_true(kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err)) < 0);
		assert_non_null(strstr(err, "amdgpu-kfd-7.img"));
	}
	free(buf);
	buf = read_file(f->dir_fd, "amdgpu-render-20.img", &len);
	for (size_t cut = 0; cut < len; cut += 1 + cut / 16) {
		write_file(f->dir_fd, "amdgpu-render-20.img", buf, cut);
		assert_true(render_file_image_load(f->dir_fd, 20, &r, err, sizeof(err)) < 0);
		assert_non_null(strstr(err, "amdgpu-render-20.img"));
	}
	free(buf);
}

/* Random byte damage: loaded or refused, never a crash or a leak (ASan). */
static void test_random_damage(void **state)
{
	struct fixture *f = *state;
	struct kfd_process_image img;
	size_t len, refused = 0;
	uint64_t seed = 42;
	uint8_t *good, *buf;
	char err[512];

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	good = read_file(f->dir_fd, "amdgpu-kfd-7.img", &len);
	buf = malloc(len);
	assert_non_null(buf);
	for (int i = 0; i < 300; i++) {
		memcpy(buf, good, len);
		for (int k = 0; k < 1 + i % 3; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			buf[(seed >> 33) % len] ^= (uint8_t)(seed >> 13);
		}
		write_file(f->dir_fd, "amdgpu-kfd-7.img", buf, len);
		if (kfd_process_image_load(f->dir_fd, ID, &img, err, sizeof(err)) == 0)
			kfd_process_image_free(&img);
		else
			refused++;
	}
	print_message("# random damage: %zu of 300 images refused\n", refused);
	assert_true(refused > 0);
	free(buf);
	free(good);
}

static void test_not_regular_files(void **state)
{
	struct fixture *f = *state;
	struct kfd_process_image img;
	char err[512];

	assert_int_equal(mkdirat(f->dir_fd, "amdgpu-kfd-8.img", 0700), 0);
	assert_true(kfd_process_image_load(f->dir_fd, 8, &img, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "amdgpu-kfd-8.img"));
	assert_int_equal(kfd_image_exists(f->dir_fd, KFD_IMAGE_PROCESS, 8), -EINVAL);
	assert_int_equal(symlinkat("/etc/passwd", f->dir_fd, "amdgpu-kfd-9.img"), 0);
	assert_true(kfd_process_image_load(f->dir_fd, 9, &img, err, sizeof(err)) < 0);
	assert_int_equal(kfd_process_image_load(f->dir_fd, 10, &img, err, sizeof(err)), -ENOENT);
	assert_int_equal(kfd_image_exists(f->dir_fd, KFD_IMAGE_PROCESS, 10), -ENOENT);
}

static void test_write_refuses_existing(void **state)
{
	struct fixture *f = *state;
	char err[512];

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	assert_int_equal(synth_write_render(f->dir_fd, &f->topo, 2, 20, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "amdgpu-render-20.img"));
	/* the existing image is untouched */
	assert_int_equal(kfd_image_exists(f->dir_fd, KFD_IMAGE_RENDER, 20), 0);
}

static void test_bad_render(void **state)
{
	struct fixture *f = *state;
	struct render_file_image r;
	RenderFileEntry e = RENDER_FILE_ENTRY__INIT;
	uint32_t node = 2;
	char err[512];

	assert_int_equal(topo_to_image(&f->topo, &node, 1, &e.topology), 0);
	e.node_index = 2;
	e.minor = 128;
	e.actual_gpu_id = f->topo.nodes[2].gpu_id + 1; /* not that node's */
	assert_int_equal(kfd_image_write(f->dir_fd, KFD_IMAGE_RENDER, 1, &e.base, err, sizeof(err)),
			 0);
	assert_int_equal(render_file_image_load(f->dir_fd, 1, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "missing from the recorded topology"));
	e.actual_gpu_id = f->topo.nodes[2].gpu_id;
	e.node_index = 3; /* not in the image */
	assert_int_equal(kfd_image_write(f->dir_fd, KFD_IMAGE_RENDER, 2, &e.base, err, sizeof(err)),
			 0);
	assert_int_equal(render_file_image_load(f->dir_fd, 2, &r, err, sizeof(err)), -EINVAL);
	/* the render node's recorded GPU with simd_count 0: not a GPU */
	e.node_index = 2;
	for (size_t i = 0; i < e.topology->n_nodes; i++)
		for (size_t k = 0;
		     e.topology->nodes[i]->index == 2 && k < e.topology->nodes[i]->n_props; k++)
			if (!strcmp(e.topology->nodes[i]->props[k]->key, "simd_count"))
				e.topology->nodes[i]->props[k]->value = 0;
	assert_int_equal(kfd_image_write(f->dir_fd, KFD_IMAGE_RENDER, 4, &e.base, err, sizeof(err)),
			 0);
	assert_int_equal(render_file_image_load(f->dir_fd, 4, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "amdgpu-render-4.img"));
	assert_non_null(strstr(err, "not a GPU"));
	topo_image_free(e.topology);
	write_file(f->dir_fd, "amdgpu-render-3.img", (const uint8_t *)"\xff\xff\xff\xff", 4);
	assert_int_equal(render_file_image_load(f->dir_fd, 3, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "damaged"));
}

/* ---- bo_stream_verify ---------------------------------------------------------------------------
 */

static void content_sizes(size_t gpu, uint64_t *sizes)
{
	for (size_t b = 0; b < SYNTH_CONTENT_PER_GPU; b++)
		sizes[b] = synth_bo_size(gpu, b);
}

static void flip_byte(int dir_fd, const char *name, off_t off)
{
	int fd = openat(dir_fd, name, O_RDWR);
	uint8_t c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void test_verify(void **state)
{
	struct fixture *f = *state;
	uint32_t gpu = f->topo.nodes[3].gpu_id;
	struct bo_stream_fault fault;
	uint64_t sizes[SYNTH_CONTENT_PER_GPU];
	char err[512], name[64];

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	content_sizes(1, sizes);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, &fault, err, sizeof(err)),
			 0);
	assert_false(fault.located);

	/* sizes that differ from the metadata */
	sizes[1] += 4096;
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, &fault, err, sizeof(err)),
			 -EINVAL);
	assert_false(fault.located);
	content_sizes(1, sizes);
	assert_true(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 2, NULL, err, sizeof(err)) < 0);
	/* another image id or GPU: no such files */
	assert_int_equal(bo_stream_verify(f->dir_fd, ID + 1, gpu, sizes, 3, NULL, err, sizeof(err)),
			 -ENOENT);

	/* one byte of BO 1 (second chunk), then of BO 2 */
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.img", ID, gpu);
	flip_byte(f->dir_fd, name, (off_t)(sizes[0] + SYNTH_CHUNK + 5));
	/* the files check reads no chunk: a damaged byte is found by verify only */
	assert_int_equal(bo_stream_check_files(f->dir_fd, ID, gpu, sizes, 3, err, sizeof(err)), 0);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, &fault, err, sizeof(err)),
			 -EBADMSG);
	assert_true(fault.located);
	assert_int_equal(fault.bo_index, 1);
	assert_int_equal(fault.bo_offset, SYNTH_CHUNK);
	assert_non_null(strstr(err, "checksum mismatch"));
	assert_non_null(strstr(err, "BO 1"));
	flip_byte(f->dir_fd, name, (off_t)(sizes[0] + SYNTH_CHUNK + 5));
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, &fault, err, sizeof(err)),
			 0);

	/* a damaged index */
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.idx", ID, gpu);
	flip_byte(f->dir_fd, name, 70);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, &fault, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "index checksum"));
	assert_int_equal(bo_stream_check_files(f->dir_fd, ID, gpu, sizes, 3, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "index checksum"));
	assert_int_equal(bo_stream_check_files(f->dir_fd, ID + 1, gpu, sizes, 3, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, ".idx"));
}

static void test_verify_truncated_data(void **state)
{
	struct fixture *f = *state;
	uint32_t gpu = f->topo.nodes[2].gpu_id;
	uint64_t sizes[SYNTH_CONTENT_PER_GPU];
	char err[512], name[64];
	int fd;

	assert_int_equal(synth_write_checkpoint(f->dir_fd, &f->spec, err, sizeof(err)), 0);
	content_sizes(0, sizes);
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.img", ID, gpu);
	fd = openat(f->dir_fd, name, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	close(fd);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, 3, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(bo_stream_check_files(f->dir_fd, ID, gpu, sizes, 3, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(bo_stream_verify(-1, ID, gpu, sizes, 3, NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, NULL, 3, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(bo_stream_verify(f->dir_fd, ID, gpu, sizes, BO_STREAM_MAX_BOS + 1, NULL,
					  err, sizeof(err)),
			 -EINVAL);
}

int main(void)
{
	struct CMUnitTest tests[16 + sizeof(bad_processes) / sizeof(bad_processes[0])];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_valid_checkpoint,
									setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
		test_old_kernel_and_restored_process, setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_list, setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_no_gpu_process, setup,
									teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_layout_misfit);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_setup_teardown(test_truncated, setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_random_damage, setup,
									teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_not_regular_files,
									setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_write_refuses_existing,
									setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_bad_render, setup,
									teardown);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_setup_teardown(test_verify, setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_verify_truncated_data,
									setup, teardown);
	for (size_t i = 0; i < sizeof(bad_processes) / sizeof(bad_processes[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_bad_process,
									(void *)&bad_processes[i]);
		tests[n++].name = bad_processes[i].name;
	}
	return _cmocka_run_group_tests("kfd_image", tests, n, NULL, NULL);
}
