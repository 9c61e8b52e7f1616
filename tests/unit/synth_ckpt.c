// SPDX-License-Identifier: MIT
/*
 * Writes a synthetic checkpoint (see synth_ckpt.h). Blob layout: docs/kfd-facts.md
 * section 5 (process record, device records, BO records, queues, events, SVM).
 */
#include <errno.h>
#include <linux/kfd_ioctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "datapath/bo_stream.h"
#include "images/kfd_image.h"
#include "images/priv_blob.h"
#include "images/topology_image.h"
#include "synth_ckpt.h"

#define KIB		1024u
#define DEFAULT_RELEASE "6.12.48+deb13-amd64"
#define DEFAULT_PID	4242u
#define COMPUTE_MQD	512u
#define COMPUTE_CTL	256u
#define SDMA_MQD	128u
#define N_EVENTS	2u
#define N_SVM		1u
#define MMAP_DOORBELL	0xC000000000000000ull
#define MMAP_GPU_SHIFT	46
/* WRITABLE | EXECUTABLE; the uapi's (1 << 31) is undefined behaviour in C (UBSan) */
#define WRITABLE_EXEC 0xC0000000u

static const uint32_t bo_types[SYNTH_BOS_PER_GPU] = {
	KFD_IOC_ALLOC_MEM_FLAGS_VRAM,	  KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
	KFD_IOC_ALLOC_MEM_FLAGS_GTT,	  KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
	KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP,
};

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int ret,
						      const char *f, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, f);
		vsnprintf(err, errlen, f, ap);
		va_end(ap);
	}
	return ret;
}

uint64_t synth_bo_size(size_t gpu, size_t bo)
{
	static const uint64_t sizes[SYNTH_BOS_PER_GPU] = {64 * KIB, 40 * KIB, 8 * KIB,
							  16 * KIB, 8 * KIB,  4 * KIB};

	return sizes[bo] + (bo == 0 ? 4 * KIB * gpu : 0);
}

/* ---- blob --------------------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static size_t queue_size(size_t gpu, bool sdma)
{
	return PRIV_QUEUE_FIXED + (sdma ? SDMA_MQD : COMPUTE_MQD + COMPUTE_CTL + 16 * gpu);
}

static size_t blob_size(size_t n, uint32_t record)
{
	size_t len = 8 + 8 * n + n * SYNTH_BOS_PER_GPU * record + queue_size(0, true);

	for (size_t i = 0; i < n; i++)
		len += queue_size(i, false);
	return len + N_EVENTS * PRIV_EVENT_SIZE + N_SVM * (24 + 8 * (4 + n));
}

static uint8_t *put_queue(uint8_t *q, uint32_t user_gpu_id, size_t gpu, bool sdma)
{
	uint32_t ctl = sdma ? 0 : COMPUTE_CTL + 16 * (uint32_t)gpu;
	uint32_t mqd = sdma ? SDMA_MQD : COMPUTE_MQD;

	put32(q, PRIV_OBJ_QUEUE);
	put64(q + 8, 0x7e0000000000ull + gpu * 0x100000);
	put64(q + 16, 4096);
	put32(q + 64, user_gpu_id);
	put32(q + 68, sdma ? 1 : 0);
	put32(q + 72, sdma ? 0 : 1);
	put32(q + 76, (uint32_t)gpu + (sdma ? 100 : 0));
	put32(q + 108, ctl);
	put32(q + 112, mqd);
	memset(q + PRIV_QUEUE_FIXED, 0xa5, mqd + ctl);
	return q + PRIV_QUEUE_FIXED + mqd + ctl;
}

static uint8_t *put_events_svm(uint8_t *q, const struct synth_process *p, size_t n)
{
	for (uint32_t i = 0; i < N_EVENTS; i++, q += PRIV_EVENT_SIZE) {
		put32(q, PRIV_OBJ_EVENT);
		put32(q + 16, i + 1);
		put32(q + 24, i ? 8 : 0);
	}
	put32(q, PRIV_OBJ_SVM);
	put64(q + 8, 0x10000);
	put64(q + 16, 16);
	for (size_t i = 0; i < n; i++)
		put32(q + 24 + 8 * (4 + i) + 4, p->devs[i].user_gpu_id);
	return q + 24 + 8 * (4 + n);
}

static void fill_blob(struct synth_process *p, size_t n, uint32_t record, bool xnack)
{
	uint8_t *q = p->blob;

	put32(q, PRIV_BLOB_VERSION);
	put32(q + 4, xnack);
	q += 8 + 8 * n;
	for (size_t b = 0; b < p->entry.n_bos; b++, q += record) {
		put64(q,
		      p->bos[b].alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR ? p->bos[b].addr : 0);
		put32(q + 8, (uint32_t)(b % SYNTH_BOS_PER_GPU) + 1);
		put32(q + 12, p->bos[b].gpu_id);
	}
	for (size_t i = 0; i < n; i++)
		q = put_queue(q, p->devs[i].user_gpu_id, i, false);
	q = put_queue(q, p->devs[0].user_gpu_id, 0, true);
	put_events_svm(q, p, n);
}

/* ---- process entry ------------------------------------------------------------------------- */

static uint64_t bo_offset(uint32_t type, uint32_t actual_gpu_id, size_t gpu, size_t bo)
{
	if (type == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
		return MMAP_DOORBELL | ((uint64_t)actual_gpu_id << MMAP_GPU_SHIFT);
	if (type == KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		return (uint64_t)actual_gpu_id << MMAP_GPU_SHIFT;
	return 0x100000000ull + (gpu * SYNTH_BOS_PER_GPU + bo) * 0x1000000ull;
}

static void fill_bos(struct synth_process *p, size_t gpu)
{
	const KfdDeviceEntry *d = &p->devs[gpu];

	for (size_t b = 0; b < SYNTH_BOS_PER_GPU; b++) {
		size_t k = gpu * SYNTH_BOS_PER_GPU + b;
		KfdBoEntry *bo = &p->bos[k];

		kfd_bo_entry__init(bo);
		bo->addr = 0x7f0000000000ull + gpu * 0x100000000ull + b * 0x1000000ull;
		bo->size = synth_bo_size(gpu, b);
		bo->offset = bo_offset(bo_types[b], d->actual_gpu_id, gpu, b);
		bo->gpu_id = d->user_gpu_id;
		bo->alloc_flags = bo_types[b] | WRITABLE_EXEC;
		p->bo_ptrs[k] = bo;
	}
}

static int fill_devices(const struct synth_spec *spec, struct synth_process *p, char *err,
			size_t errlen)
{
	for (size_t i = 0; i < spec->n_nodes; i++) {
		const struct kfd_node *n = topo_node(spec->topo, spec->nodes[i]);
		KfdDeviceEntry *d = &p->devs[i];

		if (!n || !n->accessible || !n->is_gpu || !n->gpu_id)
			return fail(err, errlen, -EINVAL,
				    "synth: node %u is not a GPU with a gpu_id", spec->nodes[i]);
		kfd_device_entry__init(d);
		d->user_gpu_id = n->gpu_id + spec->user_gpu_id_delta;
		d->actual_gpu_id = n->gpu_id;
		d->node_index = n->index;
		d->render_minor = (uint32_t)n->props.drm_render_minor;
		p->dev_ptrs[i] = d;
		fill_bos(p, i);
	}
	return 0;
}

static void fill_entry(const struct synth_spec *spec, struct synth_process *p, uint32_t record)
{
	KfdProcessEntry *e = &p->entry;

	snprintf(p->release, sizeof(p->release), "%s",
		 spec->release ? spec->release : DEFAULT_RELEASE);
	e->kfd_major = 1;
	e->kfd_minor = 17;
	e->kernel_release = p->release;
	e->bo_record_size = record;
	e->pid = spec->pid ? spec->pid : DEFAULT_PID;
	e->num_objects = (uint32_t)spec->n_nodes + 1 + N_EVENTS + N_SVM;
	e->n_devices = spec->n_nodes;
	e->devices = p->dev_ptrs;
	e->n_bos = spec->n_nodes * SYNTH_BOS_PER_GPU;
	e->bos = p->bo_ptrs;
	e->has_dump_usec = true;
	e->dump_usec = 1234;
}

int synth_process_build(const struct synth_spec *spec, struct synth_process *p, char *err,
			size_t errlen)
{
	uint32_t record;
	int ret;

	memset(p, 0, sizeof(*p));
	kfd_process_entry__init(&p->entry);
	if (!spec->n_nodes || spec->n_nodes > SYNTH_MAX_GPUS)
		return fail(err, errlen, -EINVAL, "synth: 1 to %u GPUs", SYNTH_MAX_GPUS);
	record = spec->bo_record_size ? spec->bo_record_size
				      : priv_bo_record_for_release(spec->release ? spec->release
										 : DEFAULT_RELEASE);
	ret = fill_devices(spec, p, err, errlen);
	if (ret)
		return ret;
	fill_entry(spec, p, record);
	p->entry.priv_data.len = blob_size(spec->n_nodes, record);
	p->blob = calloc(1, p->entry.priv_data.len);
	if (!p->blob)
		return fail(err, errlen, -ENOMEM, "synth: no memory");
	p->entry.priv_data.data = p->blob;
	fill_blob(p, spec->n_nodes, record, spec->xnack);
	ret = topo_to_image(spec->topo, spec->nodes, spec->n_nodes, &p->topo);
	if (ret)
		return fail(err, errlen, ret, "synth: topo_to_image: %s", strerror(-ret));
	p->entry.topology = p->topo;
	return 0;
}

void synth_process_free(struct synth_process *p)
{
	free(p->blob);
	topo_image_free(p->topo);
	p->blob = NULL;
	p->topo = NULL;
}

/* ---- contents ------------------------------------------------------------------------------ */

static int make_bo(uint64_t size, uint64_t seed)
{
	int fd = memfd_create("synth-bo", MFD_CLOEXEC);
	uint64_t word;

	if (fd < 0)
		return -errno;
	for (uint64_t off = 0; off < size; off += sizeof(word)) {
		word = (seed + off) * 0x9e3779b97f4a7c15ull;
		if (pwrite(fd, &word, sizeof(word), (off_t)off) != sizeof(word)) {
			close(fd);
			return -EIO;
		}
	}
	return fd;
}

static void close_bos(struct bo_stream_bo *bos, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bos[i].dmabuf_fd >= 0)
			close(bos[i].dmabuf_fd);
}

int synth_write_contents(int dir_fd, const struct synth_spec *spec, const struct synth_process *p,
			 char *err, size_t errlen)
{
	struct bo_stream_bo bos[SYNTH_MAX_GPUS][SYNTH_CONTENT_PER_GPU];
	struct bo_stream_gpu gpus[SYNTH_MAX_GPUS];
	struct bo_stream_config cfg = {
		.dir_fd = dir_fd, .image_id = spec->image_id, .chunk_size = SYNTH_CHUNK};
	size_t n = spec->n_nodes;
	int fd;

	memset(bos, 0xff, sizeof(bos)); /* dmabuf_fd -1 until opened */
	for (size_t g = 0; g < n; g++) {
		gpus[g] = (struct bo_stream_gpu){.gpu_id = p->devs[g].user_gpu_id,
						 .bo_count = SYNTH_CONTENT_PER_GPU,
						 .bos = bos[g]};
		for (size_t b = 0; b < SYNTH_CONTENT_PER_GPU; b++) {
			bos[g][b] =
				(struct bo_stream_bo){.size = synth_bo_size(g, b), .dmabuf_fd = -1};
			fd = make_bo(bos[g][b].size, g * 1000 + b);
			if (fd < 0) {
				close_bos(&bos[0][0],
					  (size_t)SYNTH_MAX_GPUS * SYNTH_CONTENT_PER_GPU);
				return fail(err, errlen, fd, "synth: memfd: %s", strerror(-fd));
			}
			bos[g][b].dmabuf_fd = fd;
		}
	}
	return bo_stream_dump(&cfg, gpus, (uint32_t)n, err, errlen);
}

/* ---- render images and the whole checkpoint ------------------------------------------------- */

int synth_write_render(int dir_fd, const struct kfd_topology *topo, uint32_t node, uint32_t id,
		       char *err, size_t errlen)
{
	return synth_write_render_gem(dir_fd, topo, node, id, 0, err, errlen);
}

int synth_write_render_gem(int dir_fd, const struct kfd_topology *topo, uint32_t node, uint32_t id,
			   uint32_t n_gem, char *err, size_t errlen)
{
	const struct kfd_node *n = topo_node(topo, node);
	RenderFileEntry r = RENDER_FILE_ENTRY__INIT;
	GemBoEntry bos[4], *bo_ptrs[4];
	GemMappingEntry maps[4], *map_ptrs[4];
	int ret;

	if (n_gem > 4)
		return fail(err, errlen, -EINVAL, "synth: at most 4 GEM BOs");
	for (uint32_t i = 0; i < n_gem; i++) {
		gem_mapping_entry__init(&maps[i]);
		maps[i].addr = 0x100000000ull + (uint64_t)i * 0x200000;
		maps[i].size = 64 << 10;
		maps[i].flags = 0xe;
		map_ptrs[i] = &maps[i];
		gem_bo_entry__init(&bos[i]);
		bos[i].handle = 2 * i + 1;
		bos[i].size = 64 << 10;
		bos[i].preferred_domains = i ? 4 : 2; /* VRAM, then GTT */
		bos[i].alignment = 1;
		bos[i].mmap_offset = 0x100000000ull + (uint64_t)i * 0x10000;
		bos[i].n_mappings = 1;
		bos[i].mappings = &map_ptrs[i];
		bo_ptrs[i] = &bos[i];
	}
	r.n_gem_bos = n_gem;
	r.gem_bos = bo_ptrs;

	if (!n || !n->accessible || !n->gpu_id)
		return fail(err, errlen, -EINVAL, "synth: node %u is not a GPU with a gpu_id",
			    node);
	r.minor = (uint32_t)n->props.drm_render_minor;
	r.actual_gpu_id = n->gpu_id;
	r.node_index = node;
	ret = topo_to_image(topo, &node, 1, &r.topology);
	if (ret)
		return fail(err, errlen, ret, "synth: topo_to_image: %s", strerror(-ret));
	ret = kfd_image_write(dir_fd, KFD_IMAGE_RENDER, id, &r.base, err, errlen);
	topo_image_free(r.topology);
	return ret;
}

int synth_write_checkpoint(int dir_fd, const struct synth_spec *spec, char *err, size_t errlen)
{
	struct synth_process *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return fail(err, errlen, -ENOMEM, "synth: no memory");
	ret = synth_process_build(spec, p, err, errlen);
	if (!ret)
		ret = kfd_image_write(dir_fd, KFD_IMAGE_PROCESS, spec->image_id, &p->entry.base,
				      err, errlen);
	if (!ret)
		ret = synth_write_contents(dir_fd, spec, p, err, errlen);
	for (size_t i = 0; !ret && spec->render_id && i < spec->n_nodes; i++)
		ret = synth_write_render(dir_fd, spec->topo, spec->nodes[i],
					 spec->render_id + (uint32_t)i, err, errlen);
	synth_process_free(p);
	free(p);
	return ret;
}
