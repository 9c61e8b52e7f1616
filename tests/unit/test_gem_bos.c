// SPDX-License-Identifier: MIT
/*
 * GEM BOs of a render-node file (plugin/dump/gem_dump.h, plugin/restore/gem_restore.h) against a
 * model of one open file (its handle table, as the DRM core hands handles out; Linux 6.18's
 * listing, mapping info and handle change, or 6.12 without them): a dump and a restore into a fresh
 * file bring back every handle, mapping and byte, and the CPU mapping offsets; the restore on a
 * kernel that cannot renumber handles fails and closes what it made; a PRIME import or a refused
 * dma-buf fails the dump with no file left; a render image with hostile GEM entries is refused at
 * load. The model's device is a memfd: a BO's pages sit at its mmap offset (so the render-node
 * engine's mmap of the "file" writes them), and PRIME export gives a memfd copy of the BO (what the
 * CPU engine reads).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "datapath/bo_stream.h"
#include "images/kfd_image.h"
#include "images/topology_image.h"
#include "plugin/drm_uapi_618.h"
#include "plugin/dump/gem_dump.h"
#include "plugin/restore/gem_restore.h"

#define ID	9u
#define GPU	0x2222u
#define MAX_H	16u
#define MINOR	130u
#define PAGE	4096u
#define NO_SLOT (-1)

struct model_bo {
	bool used;
	uint64_t size, domains, flags, align, off;
	struct drm_amdgpu_gem_vm_entry maps[4];
	uint32_t n_maps;
	bool import;
};

/* One open render file: the handle table (index = handle), the device memory. */
struct model {
	bool v618;
	int dev_fd;
	uint64_t dev_end;
	struct model_bo bo[MAX_H + 1];
	unsigned int creates, closes;
};

static struct model M;

static uint8_t pattern(uint32_t handle, uint64_t off)
{
	return (uint8_t)((off * 2654435761u >> 7) ^ (handle * 37u));
}

static void model_reset(bool v618)
{
	if (M.dev_fd > 0)
		close(M.dev_fd);
	memset(&M, 0, sizeof(M));
	M.v618 = v618;
	M.dev_fd = memfd_create("device", MFD_CLOEXEC);
	assert_true(M.dev_fd >= 0);
}

static int model_new(uint32_t h, uint64_t size, uint64_t domains, uint64_t flags, uint64_t align)
{
	M.bo[h] = (struct model_bo){.used = true,
				    .size = size,
				    .domains = domains,
				    .flags = flags,
				    .align = align,
				    .off = M.dev_end + PAGE};
	M.dev_end = M.bo[h].off + size;
	return ftruncate(M.dev_fd, (off_t)M.dev_end) ? -errno : 0;
}

static void model_fill(uint32_t h)
{
	uint8_t *p = mmap(NULL, M.bo[h].size, PROT_READ | PROT_WRITE, MAP_SHARED, M.dev_fd,
			  (off_t)M.bo[h].off);
	uint64_t i;

	assert_true(p != MAP_FAILED);
	for (i = 0; i < M.bo[h].size; i++)
		p[i] = pattern(h, i);
	munmap(p, M.bo[h].size);
}

static bool model_holds(uint32_t h, uint32_t as)
{
	uint8_t *p = mmap(NULL, M.bo[h].size, PROT_READ, MAP_SHARED, M.dev_fd, (off_t)M.bo[h].off);
	bool same = true;
	uint64_t i;

	assert_true(p != MAP_FAILED);
	for (i = 0; i < M.bo[h].size && same; i++)
		same = p[i] == pattern(as, i);
	munmap(p, M.bo[h].size);
	return same;
}

static int list_handles(struct drm_amdgpu_gem_list_handles *a)
{
	struct drm_amdgpu_gem_list_handles_entry *e = (void *)(uintptr_t)a->entries;
	uint32_t h, n = 0;

	if (!M.v618)
		return -EINVAL;
	for (h = 1; h <= MAX_H; h++)
		n += M.bo[h].used;
	if (a->num_entries < n) {
		a->num_entries = n;
		return 0;
	}
	for (h = 1, n = 0; h <= MAX_H; h++)
		if (M.bo[h].used)
			e[n++] = (struct drm_amdgpu_gem_list_handles_entry){
				.gem_handle = h,
				.flags =
					M.bo[h].import ? AMDGPU_GEM_LIST_HANDLES_FLAG_IS_IMPORT : 0,
				.size = M.bo[h].size,
				.preferred_domains = M.bo[h].domains,
				.alloc_flags = M.bo[h].flags,
				.alignment = M.bo[h].align >> 12};
	a->num_entries = n;
	return 0;
}

static int mapping_info(struct drm_amdgpu_gem_op_618 *op)
{
	struct model_bo *b = &M.bo[op->handle];

	if (!M.v618 || op->op != AMDGPU_GEM_OP_GET_MAPPING_INFO)
		return -EINVAL;
	if (op->num_entries >= b->n_maps && b->n_maps)
		memcpy((void *)(uintptr_t)op->value, b->maps, b->n_maps * sizeof(b->maps[0]));
	op->num_entries = b->n_maps;
	return 0;
}

static int prime_export(struct drm_prime_handle *p)
{
	struct model_bo *b = &M.bo[p->handle];
	int fd = memfd_create("dmabuf", MFD_CLOEXEC);
	void *src;

	if (fd < 0 || ftruncate(fd, (off_t)b->size))
		return -errno;
	src = mmap(NULL, b->size, PROT_READ, MAP_SHARED, M.dev_fd, (off_t)b->off);
	assert_true(src != MAP_FAILED);
	assert_int_equal(pwrite(fd, src, b->size, 0), (ssize_t)b->size);
	munmap(src, b->size);
	p->fd = fd;
	return 0;
}

static int create(union drm_amdgpu_gem_create *c)
{
	uint32_t h;
	int ret;

	for (h = 1; h <= MAX_H && M.bo[h].used; h++)
		;
	if (h > MAX_H)
		return -ENOSPC;
	M.creates++;
	ret = model_new(h, c->in.bo_size, c->in.domains, c->in.domain_flags, c->in.alignment);
	c->out.handle = h; /* over the input: a union */
	return ret;
}

static int change_handle(struct drm_gem_change_handle *a)
{
	if (!M.v618)
		return -EINVAL;
	if (a->new_handle > MAX_H || M.bo[a->new_handle].used)
		return -ENOSPC;
	M.bo[a->new_handle] = M.bo[a->handle];
	memset(&M.bo[a->handle], 0, sizeof(M.bo[0]));
	return 0;
}

static int va_map(struct drm_amdgpu_gem_va *va)
{
	struct model_bo *b = &M.bo[va->handle];

	if (va->operation != AMDGPU_VA_OP_MAP || b->n_maps == 4)
		return -EINVAL;
	b->maps[b->n_maps++] = (struct drm_amdgpu_gem_vm_entry){.addr = va->va_address,
								.size = va->map_size,
								.offset = va->offset_in_bo,
								.flags = va->flags};
	return 0;
}

static int model_ioctl(int fd, unsigned long req, void *arg)
{
	uint32_t h = *(uint32_t *)arg; /* every request below starts with a handle, or ignores it */

	(void)fd;
	if (req == DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES)
		return list_handles(arg);
	if (req == DRM_IOCTL_AMDGPU_GEM_CREATE)
		return create(arg);
	if (h == 0 || h > MAX_H || !M.bo[h].used)
		return -ENOENT;
	if (req == DRM_IOCTL_AMDGPU_GEM_OP_618)
		return mapping_info(arg);
	if (req == DRM_IOCTL_AMDGPU_GEM_MMAP) {
		((union drm_amdgpu_gem_mmap *)arg)->out.addr_ptr = M.bo[h].off;
		return 0;
	}
	if (req == DRM_IOCTL_PRIME_HANDLE_TO_FD)
		return prime_export(arg);
	if (req == DRM_IOCTL_GEM_CHANGE_HANDLE)
		return change_handle(arg);
	if (req == DRM_IOCTL_AMDGPU_GEM_VA)
		return va_map(arg);
	if (req == DRM_IOCTL_GEM_CLOSE) {
		memset(&M.bo[h], 0, sizeof(M.bo[0]));
		M.closes++;
		return 0;
	}
	return -ENOTTY;
}

/* ---- fixture ------------------------------------------------------------------------------- */

struct fixture {
	char dir[64];
	int dir_fd;
	struct copy_engine_opts opts;
	struct shared_state *sh;
	RenderFileEntry e;
	char err[512];
};

static int refuse_dmabuf(void *arg, int dmabuf_fd, uint32_t handle, char *err, size_t errlen)
{
	(void)arg;
	(void)dmabuf_fd;
	snprintf(err, errlen, "handle %u refused", handle);
	return -EOPNOTSUPP;
}

static struct gem_dump_ctx dump_ctx(struct fixture *f)
{
	return (struct gem_dump_ctx){.dir_fd = f->dir_fd,
				     .parent_dir_fd = -1,
				     .engine_opts = &f->opts,
				     .gpu = {.gpu_id = GPU, .render_minor = MINOR},
				     .ioctl_fn = model_ioctl};
}

static struct gem_restore_ctx restore_ctx(struct fixture *f)
{
	return (struct gem_restore_ctx){.dir_fd = f->dir_fd,
					.engine_opts = &f->opts,
					.shared = f->sh,
					.gpu = {.gpu_id = GPU, .render_minor = MINOR + 1},
					.ioctl_fn = model_ioctl};
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	uint32_t ids[] = {1};

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test-gem-bos-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->opts.mode = COPY_ENGINE_CPU;
	f->sh = shared_state_create(ids, 1);
	f->e = (RenderFileEntry)RENDER_FILE_ENTRY__INIT;
	f->e.minor = MINOR;
	*state = f;
	return f->dir_fd < 0 || !f->sh ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gem_dump_entry_free(&f->e);
	bo_stream_remove(f->dir_fd, ID, GPU);
	close(f->dir_fd);
	rmdir(f->dir);
	shared_state_destroy(f->sh);
	if (M.dev_fd > 0)
		close(M.dev_fd);
	M.dev_fd = 0;
	free(f);
	return 0;
}

/* Handles 2 (GTT, unmapped) and 5 (VRAM, mapped twice): 1, 3 and 4 free. */
static void two_bos(void)
{
	model_reset(true);
	assert_int_equal(model_new(2, 3 * PAGE, AMDGPU_GEM_DOMAIN_GTT, 0, PAGE), 0);
	assert_int_equal(model_new(5, 64 * PAGE, AMDGPU_GEM_DOMAIN_VRAM,
				   AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, 16 * PAGE),
			 0);
	M.bo[5].maps[0] = (struct drm_amdgpu_gem_vm_entry){
		.addr = 0x200000, .size = 64 * PAGE, .offset = 0, .flags = 0xe};
	M.bo[5].maps[1] = (struct drm_amdgpu_gem_vm_entry){
		.addr = 0x800000, .size = PAGE, .offset = 8 * PAGE, .flags = 0x2};
	M.bo[5].n_maps = 2;
	model_fill(2);
	model_fill(5);
}

static bool file_exists(struct fixture *f, const char *ext)
{
	char name[64];

	bo_stream_file_name(name, sizeof(name), ID, GPU, ext);
	return !faccessat(f->dir_fd, name, F_OK, 0);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void dump_and_restore_bring_everything_back(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d;
	struct gem_restore_ctx r;
	struct render_file_image img = {.id = ID, .entry = &f->e};
	struct vma_map vmas = {0};
	const struct vma_bo *v;
	uint64_t old2, old5;

	two_bos();
	old2 = M.bo[2].off;
	old5 = M.bo[5].off;
	d = dump_ctx(f);
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)), 0);
	assert_int_equal(f->e.n_gem_bos, 2);
	assert_int_equal(f->e.gem_bos[0]->handle, 2);
	assert_int_equal(f->e.gem_bos[1]->handle, 5);
	assert_int_equal(f->e.gem_bos[1]->alignment, 16);
	assert_int_equal(f->e.gem_bos[1]->n_mappings, 2);
	assert_int_equal(f->e.gem_bos[1]->mappings[1]->offset, 8 * PAGE);
	assert_int_equal(f->e.gem_bos[0]->mmap_offset, old2);
	assert_true(file_exists(f, "img") && file_exists(f, "idx"));

	/* a fresh file: the DRM core hands out 1 and 2, the restore moves them */
	model_reset(true);
	r = restore_ctx(f);
	assert_int_equal(gem_restore_file(&r, M.dev_fd, &img, &vmas, f->err, sizeof(f->err)), 0);
	assert_true(M.bo[2].used && M.bo[5].used);
	assert_false(M.bo[1].used || M.bo[3].used || M.bo[4].used);
	assert_int_equal(M.bo[5].size, 64 * PAGE);
	assert_int_equal(M.bo[5].align, 16 * PAGE);
	assert_int_equal(M.bo[5].flags, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED);
	assert_int_equal(M.bo[5].n_maps, 2);
	assert_int_equal(M.bo[5].maps[1].addr, 0x800000);
	assert_int_equal(M.bo[5].maps[0].flags, 0xe);
	assert_int_equal(M.bo[2].n_maps, 0);
	assert_true(model_holds(2, 2));
	assert_true(model_holds(5, 5));

	/* CPU mappings: old offsets on the dump's minor, new ones on the target's */
	assert_int_equal(vmas.n_bos, 2);
	v = vma_map_find_bo(&vmas, MINOR, old5 + 3 * PAGE);
	assert_non_null(v);
	assert_int_equal(v->new_offset, M.bo[5].off);
	assert_int_equal(v->dst_minor, MINOR + 1);
	assert_non_null(vma_map_find_bo(&vmas, MINOR, old2));
	assert_null(vma_map_find_bo(&vmas, MINOR, old2 + 3 * PAGE));
	assert_null(vma_map_find_bo(&vmas, MINOR + 1, old2));
	/* every entry lives on the target's minor now, none on the dump's */
	assert_int_equal(vmas.bos[0].dst_minor, MINOR + 1);
	assert_int_equal(vmas.bos[1].dst_minor, MINOR + 1);
	/* a second file's BOs at the same old offsets overlap: refused, the map unchanged */
	assert_int_equal(vma_map_add_bos(&vmas, vmas.bos, 1), -EINVAL);
	assert_int_equal(vmas.n_bos, 2);
	vma_map_free(&vmas);
}

static void kernel_without_listing_records_nothing(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d = dump_ctx(f);

	two_bos();
	M.v618 = false;
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)), 0);
	assert_int_equal(f->e.n_gem_bos, 0);
	assert_false(file_exists(f, "img"));
}

static void restore_without_change_handle_fails_and_closes(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d = dump_ctx(f);
	struct gem_restore_ctx r = restore_ctx(f);
	struct render_file_image img = {.id = ID, .entry = &f->e};
	struct vma_map vmas = {0};
	uint32_t h;

	two_bos();
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)), 0);
	model_reset(false);
	assert_int_equal(gem_restore_file(&r, M.dev_fd, &img, &vmas, f->err, sizeof(f->err)),
			 -EINVAL);
	assert_non_null(strstr(f->err, "GEM handle 2 came back as 1 and this kernel cannot "
				       "renumber GEM handles"));
	assert_int_equal(M.closes, M.creates);
	for (h = 1; h <= MAX_H; h++)
		assert_false(M.bo[h].used);
	assert_int_equal(vmas.n_bos, 0);
}

static void import_is_refused_with_no_file_left(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d = dump_ctx(f);

	two_bos();
	M.bo[5].import = true;
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(f->err, "GEM handle 5 is a PRIME import of another device's"));
	assert_int_equal(f->e.n_gem_bos, 0);
	assert_false(file_exists(f, "img") || file_exists(f, "idx"));
}

static void refused_dmabuf_fails_the_dump(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d = dump_ctx(f);

	two_bos();
	d.check_dmabuf = refuse_dmabuf;
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)),
			 -EOPNOTSUPP);
	assert_string_equal(f->err, "handle 2 refused");
	assert_false(file_exists(f, "img") || file_exists(f, "idx"));
}

/* The dump's entries written as an image, one field damaged by `damage`. */
static int load_damaged(struct fixture *f, void (*damage)(RenderFileEntry *e))
{
	struct kfd_topology topo = {0};
	struct render_file_image img;
	char path[512];
	uint32_t node = 2;
	const struct kfd_node *n;
	RenderFileEntry *copy;
	uint8_t *buf;
	size_t len;
	int ret;

	fixture_path(path, sizeof(path), MI308X);
	assert_int_equal(topo_load(path, &topo, f->err, sizeof(f->err)), 0);
	n = topo_node(&topo, node);
	f->e.actual_gpu_id = n->gpu_id;
	f->e.node_index = node;
	f->e.minor = (uint32_t)kfd_prop_get(n, KFD_PROP_drm_render_minor);
	assert_int_equal(topo_to_image(&topo, &node, 1, &f->e.topology), 0);
	/* a copy of the dump's entry is damaged, the entry itself kept */
	len = render_file_entry__get_packed_size(&f->e);
	buf = malloc(len);
	assert_non_null(buf);
	render_file_entry__pack(&f->e, buf);
	copy = render_file_entry__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(copy);
	if (damage)
		damage(copy);
	unlinkat(f->dir_fd, "amdgpu-render-9.img", 0);
	assert_int_equal(kfd_image_write(f->dir_fd, KFD_IMAGE_RENDER, ID, &copy->base, f->err,
					 sizeof(f->err)),
			 0);
	render_file_entry__free_unpacked(copy, NULL);
	topo_image_free(f->e.topology);
	f->e.topology = NULL;
	topo_free(&topo);
	ret = render_file_image_load(f->dir_fd, ID, &img, f->err, sizeof(f->err));
	if (!ret)
		render_file_image_free(&img);
	unlinkat(f->dir_fd, "amdgpu-render-9.img", 0);
	return ret;
}

static void handles_swapped(RenderFileEntry *e)
{
	e->gem_bos[0]->handle = 9;
}
static void size_not_pages(RenderFileEntry *e)
{
	e->gem_bos[1]->size = 5000;
}
static void mapping_past_bo(RenderFileEntry *e)
{
	e->gem_bos[1]->mappings[1]->offset = 64 * PAGE;
}
static void mapping_past_va(RenderFileEntry *e)
{
	e->gem_bos[1]->mappings[0]->addr = (1ull << 48) - PAGE;
}
static void handle_zero(RenderFileEntry *e)
{
	e->gem_bos[0]->handle = 0;
}

static void hostile_gem_entries_are_refused_at_load(void **state)
{
	struct fixture *f = *state;
	struct gem_dump_ctx d = dump_ctx(f);

	two_bos();
	assert_int_equal(gem_dump_file(&d, M.dev_fd, ID, &f->e, f->err, sizeof(f->err)), 0);
	assert_int_equal(load_damaged(f, NULL), 0);
	assert_int_equal(load_damaged(f, handles_swapped), -EINVAL);
	assert_non_null(strstr(f->err, "handles must be ascending"));
	assert_int_equal(load_damaged(f, handle_zero), -EINVAL);
	assert_int_equal(load_damaged(f, size_not_pages), -EINVAL);
	assert_non_null(strstr(f->err, "not a page multiple"));
	assert_int_equal(load_damaged(f, mapping_past_bo), -EINVAL);
	assert_non_null(strstr(f->err, "inside the BO"));
	assert_int_equal(load_damaged(f, mapping_past_va), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(dump_and_restore_bring_everything_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(kernel_without_listing_records_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(restore_without_change_handle_fails_and_closes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(import_is_refused_with_no_file_left, setup,
						teardown),
		cmocka_unit_test_setup_teardown(refused_dmabuf_fails_the_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(hostile_gem_entries_are_refused_at_load, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
