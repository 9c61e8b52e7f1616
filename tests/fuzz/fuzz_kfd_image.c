// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the metadata image loader (images/kfd_image.h).
 *
 * Input: one byte choosing the image, then the file's bytes.
 *   bit 0     clear: amdgpu-kfd-1.img, a KfdProcessEntry;
 *             set: amdgpu-render-1.img, a RenderFileEntry
 *   bits 1-2  that many leading zeros in the id ("amdgpu-kfd-01.img"): the
 *             listing must not offer an id whose image is not there
 *   bit 3     the file is a FIFO
 * (bits 1-3 not with FUZZ_STRICT=0, fuzz_common.h)
 * The file is written into the scratch directory, listed, and loaded (when
 * its name is canonical) as the plugin and the tool load it.
 * Invariants on an image that loads: every device is an accessible node of
 * the recorded topology with its gpu_id and has SIMDs, every BO belongs to a
 * device, the image fits the layout of its own BO record size, per-device content counts and bytes
 * add up (no wrap-around), and the private blob's record size is the detected one. A refusal has a
 * one-line message naming the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_tree.h"
#include "images/kfd_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_devices(const struct kfd_process_image *img)
{
	const KfdProcessEntry *e = img->entry;

	for (size_t i = 0; i < e->n_devices; i++) {
		const struct kfd_node *n = topo_node(&img->topo, img->device_nodes[i]);

		FUZZ_ASSERT(n && n->accessible && n->gpu_id == e->devices[i]->actual_gpu_id,
			    "device %zu is not its recorded node", i);
		FUZZ_ASSERT(!fuzz_strict() || n->props.simd_count,
			    "device %zu: recorded node %u has no SIMDs: not a GPU", i, n->index);
		FUZZ_ASSERT(kfd_process_image_device(img, e->devices[i]->user_gpu_id) == (int)i,
			    "device %zu is not found by its user gpu_id", i);
	}
}

static void check_bos(const struct kfd_process_image *img)
{
	const KfdProcessEntry *e = img->entry;
	uint64_t *bytes = calloc(e->n_devices + 1, sizeof(*bytes));
	uint32_t *count = calloc(e->n_devices + 1, sizeof(*count));
	int dev;

	FUZZ_ASSERT(bytes && count, "no memory");
	for (size_t i = 0; i < e->n_bos; i++) {
		dev = kfd_process_image_device(img, e->bos[i]->gpu_id);
		FUZZ_ASSERT(dev >= 0, "BO %zu has no device", i);
		if (!kfd_bo_contents_saved(e->bos[i]))
			continue;
		FUZZ_ASSERT(bytes[dev] <= UINT64_MAX - e->bos[i]->size,
			    "content bytes of device %d overflow", dev);
		bytes[dev] += e->bos[i]->size;
		count[dev]++;
	}
	for (size_t d = 0; d < e->n_devices; d++)
		FUZZ_ASSERT(bytes[d] == img->device_bytes[d] && count[d] == img->device_bo_count[d],
			    "device %zu: %u BOs / %llu bytes, the image says %u / %llu", d,
			    count[d], (unsigned long long)bytes[d], img->device_bo_count[d],
			    (unsigned long long)img->device_bytes[d]);
	free(bytes);
	free(count);
}

static void check_process(const struct kfd_process_image *img)
{
	const KfdProcessEntry *e = img->entry;
	uint32_t rec;

	check_devices(img);
	check_bos(img);
	FUZZ_ASSERT(!kfd_image_layout_misfit(img, 1, e->bo_record_size),
		    "image does not fit its own record size");
	if (e->n_devices) {
		rec = priv_blob_detect_bo_record(e->priv_data.data, e->priv_data.len,
						 (uint32_t)e->n_devices, (uint32_t)e->n_bos,
						 e->num_objects, e->bo_record_size);
		FUZZ_ASSERT(rec == e->bo_record_size, "record size %u recorded, %u detected",
			    e->bo_record_size, rec);
	}
}

/* What the GEM restore relies on: ascending handles, mappings inside their BO and the VA space. */
static void check_gem(const RenderFileEntry *e)
{
	uint32_t prev = 0;

	for (size_t i = 0; i < e->n_gem_bos; i++) {
		const GemBoEntry *b = e->gem_bos[i];

		FUZZ_ASSERT(b->handle > prev && b->size && !(b->size & 4095),
			    "GEM BO handle or size accepted out of order or unaligned");
		prev = b->handle;
		for (size_t j = 0; j < b->n_mappings; j++)
			FUZZ_ASSERT(b->mappings[j]->offset + b->mappings[j]->size <= b->size &&
					    b->mappings[j]->addr + b->mappings[j]->size <=
						    KFD_IMAGE_MAX_GPU_VM,
				    "GEM mapping accepted outside its BO or the VA space");
	}
}

static void load(int dir_fd, enum kfd_image_kind kind)
{
	char err[512] = "", name[KFD_IMAGE_NAME_MAX];
	struct kfd_process_image proc;
	struct render_file_image render;

	kfd_image_name(name, sizeof(name), kind, 1);
	if (kind == KFD_IMAGE_PROCESS) {
		if (kfd_process_image_load(dir_fd, 1, &proc, err, sizeof(err))) {
			fuzz_check_errmsg(err, name);
			return;
		}
		check_process(&proc);
		kfd_process_image_free(&proc);
	} else {
		if (render_file_image_load(dir_fd, 1, &render, err, sizeof(err))) {
			fuzz_check_errmsg(err, name);
			return;
		}
		FUZZ_ASSERT(topo_node(&render.topo, render.entry->node_index),
			    "render image's node is not in its topology");
		check_gem(render.entry);
		render_file_image_free(&render);
	}
}

/* Every id kfd_image_list() gives is an image under its canonical name. */
static void check_list(int dir_fd, enum kfd_image_kind kind, bool canonical)
{
	uint32_t *ids;
	size_t n;
	char err[512] = "";
	int ret = kfd_image_list(dir_fd, kind, &ids, &n, err, sizeof(err));

	/* a non-canonical name is refused, naming it; the canonical one never */
	if (ret) {
		FUZZ_ASSERT(!canonical && ret < 0, "listing fails: %d", ret);
		fuzz_check_errmsg(err, "amdgpu-");
		return;
	}
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(!kfd_image_exists(dir_fd, kind, ids[i]) ||
				    kfd_image_exists(dir_fd, kind, ids[i]) == -EINVAL,
			    "image id %u is listed, but there is no such image", ids[i]);
	FUZZ_ASSERT(!canonical || (n == 1 && ids[0] == 1), "the image is not listed");
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum kfd_image_kind kind;
	char name[KFD_IMAGE_NAME_MAX];
	unsigned int zeros;
	bool fifo;
	int dir_fd;

	if (!size)
		return 0;
	kind = data[0] & 1 ? KFD_IMAGE_RENDER : KFD_IMAGE_PROCESS;
	zeros = fuzz_strict() ? (data[0] >> 1) & 3 : 0;
	fifo = (data[0] & 8) && fuzz_strict();
	snprintf(name, sizeof(name), "%s%.*s1.img",
		 kind == KFD_IMAGE_RENDER ? "amdgpu-render-" : "amdgpu-kfd-", (int)zeros, "000");
	if (fifo)
		fuzz_put_fifo(name);
	else
		fuzz_put_file(name, data + 1, size - 1);
	dir_fd = fuzz_scratch_fd();
	check_list(dir_fd, kind, !zeros && !fifo);
	if (!zeros)
		load(dir_fd, kind);
	close(dir_fd);
	fuzz_done();
	return 0;
}
