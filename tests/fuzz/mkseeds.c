// SPDX-License-Identifier: MIT
/*
 * mkseeds: writes the starting corpus of every fuzz target from the real
 * topology captures and the unit tests' synthetic checkpoint builder
 * (tests/unit/synth_ckpt.h), so that the seeds follow the formats as they
 * change. Run by tests/fuzz/fuzz.mk.
 *
 *   mkseeds FIXTURES OUTDIR     FIXTURES: tests/fixtures/kfd-topologies
 *
 * OUTDIR/<target>/<name> per seed. The checkpoints are shrunk to fit the
 * targets' -max_len: every BO is 4 KiB (contents too), caches/ files of the
 * trees are emptied (the reader only counts them), big captures keep their
 * first nodes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datapath/bo_stream.h"
#include "fuzz_tree.h"
#include "images/kfd_image.h"
#include "synth_ckpt.h"
#include "images/topology_image.h"

#define SEED_BO_SIZE 4096u
#define MAX_FILE     (256u << 10)

struct fixture {
	const char *dir;
	const char *tag;
	unsigned int max_nodes; /* 0: all */
	bool add_gpu_ids;	/* the capture has no gpu_id files: 40000 + node */
	const char *release;	/* NULL: synth's default (a 272-byte record kernel) */
};

static const struct fixture fixture_table[] = {
	{"k8sdp-vega10-mi25-1gpu-1socket", "vega10", 0, false, NULL},
	{"k8sdp-vega10-mi25-1gpu-1socket", "vega10-old", 0, false, "5.15.0-91-generic"},
	{"k8sdp-mi210-8gpu-2hives-2socket", "mi210", 0, true, NULL},
	{"rocprofsdk-testdata-workstation-3gpu-plus-3-foreign-nodes", "workstation", 0, true, NULL},
	{"mi300a-4apu-4socket-readme-capture", "mi300a", 0, true, NULL},
	{"k8sdp-mi308x-8gpu-cpx-32part-2socket", "mi308x", 5, false, NULL},
};

struct seeds {
	const char *out;
	unsigned int written;
};

static int write_seed(struct seeds *s, const char *target, const char *name, const void *a,
		      size_t alen, const void *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", s->out, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", s->out, target, name);
	f = fopen(path, "w");
	if (!f || fwrite(a, 1, alen, f) != alen || (blen && fwrite(b, 1, blen, f) != blen) ||
	    fclose(f)) {
		fprintf(stderr, "mkseeds: cannot write %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	s->written++;
	return 0;
}

/* The whole file at dir/name into a malloc'ed buffer (at most MAX_FILE bytes). */
static int slurp(const char *dir, const char *name, uint8_t **buf, size_t *len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	*buf = malloc(MAX_FILE);
	if (!f || !*buf) {
		if (f)
			fclose(f);
		free(*buf);
		fprintf(stderr, "mkseeds: cannot read %s\n", path);
		return -EIO;
	}
	*len = fread(*buf, 1, MAX_FILE, f);
	fclose(f);
	return 0;
}

/* ---- trees ------------------------------------------------------------------------------ */

static bool is_node_dir(const char *rel, unsigned int max_nodes)
{
	return max_nodes && !strncmp(rel, "nodes/", 6) && !strchr(rel + 6, '/') &&
	       (unsigned int)atoi(rel + 6) >= max_nodes;
}

/* Entries of root/rel, sorted, into f with names prefix + rel/...; caches/ files empty. */
static int pack_tree(FILE *f, const char *root, const char *rel, const char *prefix,
		     unsigned int max_nodes)
{
	struct dirent **list;
	char path[4096], sub[2048];
	uint8_t *buf;
	size_t len;
	struct stat st;
	int n, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	n = scandir(path, &list, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;

		if (ret || name[0] == '.' || (!rel[0] && strstr(name, ".md")) ||
		    (!rel[0] && !strcmp(name, "system_properties")))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", name);
		snprintf(path, sizeof(path), "%s/%s", root, sub);
		if (stat(path, &st) || is_node_dir(sub, max_nodes))
			continue;
		if (S_ISDIR(st.st_mode)) {
			ret = pack_tree(f, root, sub, prefix, max_nodes);
			continue;
		}
		if (strstr(sub, "/caches/")) {
			fprintf(f, FUZZ_TREE_HEAD "%s%s" FUZZ_TREE_TAIL "\n", prefix, sub);
			continue;
		}
		ret = slurp(root, sub, &buf, &len);
		if (ret)
			continue;
		/* content that does not end with a newline: one added and cut back by "size" */
		if (len && buf[len - 1] == '\n')
			fprintf(f, FUZZ_TREE_HEAD "%s%s" FUZZ_TREE_TAIL "\n", prefix, sub);
		else
			fprintf(f, FUZZ_TREE_HEAD "%s%s" FUZZ_TREE_TAIL " size %zu\n", prefix, sub,
				len);
		if (len && fwrite(buf, 1, len, f) != len)
			ret = -EIO;
		if (len && buf[len - 1] != '\n')
			fputc('\n', f);
		free(buf);
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return ret;
}

/* gpu_id files for the GPU nodes of a capture that has none (as the host tests do). */
static void add_gpu_ids(FILE *f, const struct kfd_topology *t, const char *prefix,
			unsigned int max_nodes)
{
	for (size_t i = 0; i < t->n_nodes && (!max_nodes || i < max_nodes); i++)
		fprintf(f, FUZZ_TREE_HEAD "%snodes/%zu/gpu_id" FUZZ_TREE_TAIL "\n%u\n", prefix, i,
			t->nodes[i].is_gpu ? 40000u + (unsigned int)i : 0u);
}

/* ---- a small checkpoint --------------------------------------------------------------- */

static int memfd_of(uint64_t size, unsigned int seed)
{
	int fd = memfd_create("seed-bo", MFD_CLOEXEC);
	uint8_t *page = calloc(1, size ? size : 1);

	if (fd < 0 || !page) {
		free(page);
		return fd < 0 ? -errno : -ENOMEM;
	}
	for (uint64_t i = 0; i < size; i++)
		page[i] = (uint8_t)(i * 131 + seed);
	if (pwrite(fd, page, size, 0) != (ssize_t)size) {
		free(page);
		close(fd);
		return -EIO;
	}
	free(page);
	return fd;
}

/* Contents of every VRAM/GTT BO of GPU position g (all SEED_BO_SIZE). */
static int dump_contents(int dir_fd, uint32_t image_id, const struct synth_process *p, size_t g)
{
	struct bo_stream_config cfg = {.dir_fd = dir_fd, .image_id = image_id, .chunk_size = 4096};
	struct bo_stream_bo bos[SYNTH_BOS_PER_GPU];
	struct bo_stream_gpu gpu = {.gpu_id = p->devs[g].user_gpu_id, .bos = bos};
	char err[256];
	int ret;

	for (size_t b = 0; b < SYNTH_BOS_PER_GPU; b++) {
		if (!kfd_bo_has_contents(p->bos[g * SYNTH_BOS_PER_GPU + b].alloc_flags))
			continue;
		bos[gpu.bo_count].size = SEED_BO_SIZE;
		bos[gpu.bo_count].dmabuf_fd = memfd_of(SEED_BO_SIZE, (unsigned int)(g * 8 + b));
		if (bos[gpu.bo_count++].dmabuf_fd < 0)
			return -EIO;
	}
	ret = bo_stream_dump(&cfg, &gpu, 1, err, sizeof(err));
	if (ret)
		fprintf(stderr, "mkseeds: %s\n", err);
	return ret;
}

static int write_checkpoint(int dir_fd, const struct synth_spec *spec, struct synth_process *p)
{
	char err[512];
	int ret;

	ret = synth_process_build(spec, p, err, sizeof(err));
	for (size_t b = 0; !ret && b < p->entry.n_bos; b++)
		p->bos[b].size = SEED_BO_SIZE;
	if (!ret)
		ret = kfd_image_write(dir_fd, KFD_IMAGE_PROCESS, spec->image_id, &p->entry.base,
				      err, sizeof(err));
	for (size_t g = 0; !ret && g < spec->n_nodes; g++)
		ret = dump_contents(dir_fd, spec->image_id, p, g);
	for (size_t g = 0; !ret && g < spec->n_nodes; g++)
		/* the first render file (the render seed) with GEM BOs */
		ret = synth_write_render_gem(dir_fd, spec->topo, spec->nodes[g],
					     spec->render_id + (uint32_t)g, g ? 0 : 2, err,
					     sizeof(err));
	if (ret)
		fprintf(stderr, "mkseeds: checkpoint: %s\n", err);
	return ret;
}

/* ---- per target -------------------------------------------------------------------------- */

static int kfd_image_seeds(struct seeds *s, const char *ckdir, const char *tag)
{
	static const uint8_t kind[2] = {0, 1};
	char name[128];
	uint8_t *buf;
	size_t len;
	int ret;

	ret = slurp(ckdir, "amdgpu-kfd-1.img", &buf, &len);
	if (ret)
		return ret;
	snprintf(name, sizeof(name), "process-%s", tag);
	ret = write_seed(s, "fuzz_kfd_image", name, &kind[0], 1, buf, len);
	free(buf);
	if (!ret)
		ret = slurp(ckdir, "amdgpu-render-100.img", &buf, &len);
	if (ret)
		return ret;
	snprintf(name, sizeof(name), "render-%s", tag);
	ret = write_seed(s, "fuzz_kfd_image", name, &kind[1], 1, buf, len);
	free(buf);
	return ret;
}

static int topology_image_seed(struct seeds *s, const KfdTopologyEntry *e, const char *tag)
{
	size_t len = kfd_topology_entry__get_packed_size(e);
	uint8_t *buf = malloc(len ? len : 1);
	char name[128];
	int ret;

	if (!buf)
		return -ENOMEM;
	kfd_topology_entry__pack(e, buf);
	snprintf(name, sizeof(name), "process-%s", tag);
	ret = write_seed(s, "fuzz_topology_image", name, buf, len, NULL, 0);
	free(buf);
	return ret;
}

static int priv_blob_seed(struct seeds *s, const KfdProcessEntry *e, const char *tag)
{
	uint8_t h[8] = {(uint8_t)e->n_devices, e->bo_record_size == PRIV_BO_RECORD_NEW,
			(uint8_t)e->n_bos, (uint8_t)(e->n_bos >> 8)};
	char name[128];

	memcpy(h + 4, &e->num_objects, 4);
	snprintf(name, sizeof(name), "process-%s", tag);
	return write_seed(s, "fuzz_priv_blob", name, h, sizeof(h), e->priv_data.data,
			  e->priv_data.len);
}

/* Index and data of the first GPU, with the caller's sizes; and with sizes from the index. */
static int bo_stream_seeds(struct seeds *s, const char *ckdir, const struct synth_process *p,
			   const char *tag)
{
	uint8_t h[12 + 8 * SYNTH_CONTENT_PER_GPU] = {0, SYNTH_CONTENT_PER_GPU};
	uint8_t *idx, *img, *both;
	size_t idx_len, img_len;
	char name[128], file[64];
	uint64_t size = SEED_BO_SIZE;
	int ret;

	snprintf(file, sizeof(file), "amdgpu-bo-1-%u.idx", p->devs[0].user_gpu_id);
	ret = slurp(ckdir, file, &idx, &idx_len);
	if (ret)
		return ret;
	snprintf(file, sizeof(file), "amdgpu-bo-1-%u.img", p->devs[0].user_gpu_id);
	ret = slurp(ckdir, file, &img, &img_len);
	if (ret) {
		free(idx);
		return ret;
	}
	both = malloc(idx_len + img_len);
	if (!both) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(both, idx, idx_len);
	memcpy(both + idx_len, img, img_len);
	h[2] = (uint8_t)idx_len;
	h[3] = (uint8_t)(idx_len >> 8);
	for (size_t i = 0; i < SYNTH_CONTENT_PER_GPU; i++)
		memcpy(h + 12 + 8 * i, &size, 8);
	snprintf(name, sizeof(name), "verify-%s", tag);
	ret = write_seed(s, "fuzz_bo_stream", name, h, sizeof(h), both, idx_len + img_len);
	h[0] = 1 | 2 | 4; /* fix the CRC, sizes from the index, files only */
	h[1] = 0;
	snprintf(name, sizeof(name), "check-files-%s", tag);
	if (!ret)
		ret = write_seed(s, "fuzz_bo_stream", name, h, 12, both, idx_len + img_len);
	free(both);
out:
	free(idx);
	free(img);
	return ret;
}

static int tool_seed(struct seeds *s, const char *fxdir, const char *ckdir,
		     const struct fixture *fx, const struct kfd_topology *t)
{
	char *text = NULL, name[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = pack_tree(f, ckdir, "", "img/", 0);
	if (!ret)
		ret = pack_tree(f, fxdir, "", "sysfs/", fx->max_nodes);
	if (!ret && fx->add_gpu_ids)
		add_gpu_ids(f, t, "sysfs/", fx->max_nodes);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	snprintf(name, sizeof(name), "ckpt-%s", fx->tag);
	if (!ret)
		ret = write_seed(s, "fuzz_tool", name, text, len, NULL, 0);
	free(text);
	return ret;
}

static int sysfs_seed(struct seeds *s, const char *fxdir, const struct fixture *fx,
		      const struct kfd_topology *t)
{
	char *text = NULL, name[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = pack_tree(f, fxdir, "", "", fx->max_nodes);
	if (!ret && fx->add_gpu_ids)
		add_gpu_ids(f, t, "", fx->max_nodes);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	snprintf(name, sizeof(name), "sysfs-%s", fx->tag);
	if (!ret)
		ret = write_seed(s, "fuzz_topology_parse", name, text, len, NULL, 0);
	free(text);
	return ret;
}

/* ---- per fixture ------------------------------------------------------------------------- */

/* Up to two GPU nodes (below max_nodes) for the checkpoint. */
static size_t pick_gpus(struct kfd_topology *t, const struct fixture *fx, uint32_t *nodes)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_nodes && n < 2; i++) {
		struct kfd_node *nd = &t->nodes[i];

		if (fx->max_nodes && i >= fx->max_nodes)
			break;
		if (fx->add_gpu_ids)
			nd->gpu_id = nd->is_gpu ? 40000u + (uint32_t)i : 0;
		if (nd->accessible && nd->is_gpu && nd->gpu_id)
			nodes[n++] = (uint32_t)i;
	}
	return n;
}

static int fixture_seeds(struct seeds *s, const char *fixtures, const struct fixture *fx)
{
	char fxdir[2048], ckdir[] = "/tmp/mkseeds-XXXXXX", err[512];
	struct synth_process *p = calloc(1, sizeof(*p));
	struct kfd_topology t;
	struct synth_spec spec = {
		.topo = &t, .image_id = 1, .render_id = 100, .release = fx->release};
	uint32_t nodes[2];
	int dir_fd = -1, ret;

	snprintf(fxdir, sizeof(fxdir), "%s/%s", fixtures, fx->dir);
	ret = topo_load(fxdir, &t, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mkseeds: %s\n", err);
		free(p);
		return ret;
	}
	if (!p || !mkdtemp(ckdir)) {
		ret = -ENOMEM;
		goto out;
	}
	ret = sysfs_seed(s, fxdir, fx, &t);
	spec.nodes = nodes;
	spec.n_nodes = pick_gpus(&t, fx, nodes);
	dir_fd = open(ckdir, O_RDONLY | O_DIRECTORY);
	if (ret || dir_fd < 0 || !spec.n_nodes)
		goto out;
	ret = write_checkpoint(dir_fd, &spec, p);
	if (!ret)
		ret = kfd_image_seeds(s, ckdir, fx->tag);
	if (!ret)
		ret = topology_image_seed(s, p->topo, fx->tag);
	if (!ret)
		ret = priv_blob_seed(s, &p->entry, fx->tag);
	if (!ret)
		ret = bo_stream_seeds(s, ckdir, p, fx->tag);
	if (!ret)
		ret = tool_seed(s, fxdir, ckdir, fx, &t);
out:
	if (dir_fd >= 0)
		close(dir_fd);
	if (p)
		synth_process_free(p);
	free(p);
	topo_free(&t);
	if (strcmp(ckdir + strlen(ckdir) - 6, "XXXXXX"))
		fuzz_scratch_remove(ckdir);
	return ret;
}

int main(int argc, char *argv[])
{
	struct seeds s = {0};
	int ret = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: mkseeds FIXTURES OUTDIR\n");
		return 2;
	}
	s.out = argv[2];
	if (mkdir(s.out, 0755) && errno != EEXIST) {
		fprintf(stderr, "mkseeds: cannot make %s: %s\n", s.out, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(fixture_table) / sizeof(fixture_table[0]) && !ret; i++)
		ret = fixture_seeds(&s, argv[1], &fixture_table[i]);
	if (ret) {
		fprintf(stderr, "mkseeds: failed (%s)\n", strerror(-ret));
		return 1;
	}
	printf("mkseeds: %u seeds in %s\n", s.written, s.out);
	return 0;
}
