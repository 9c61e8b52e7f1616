// SPDX-License-Identifier: MIT
/*
 * Metadata image files of the plugin: naming, atomic-enough creation,
 * bounded reading and validation (see kfd_image.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kfd_ioctl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/fullio.h"
#include "common/regfile.h"
#include "images/kfd_image.h"
#include "images/pb_precheck.h"
#include "images/topology_image.h"

static const char *kind_prefix(enum kfd_image_kind kind)
{
	switch (kind) {
	case KFD_IMAGE_PROCESS:
		return "amdgpu-kfd-";
	case KFD_IMAGE_RENDER:
		return "amdgpu-render-";
	case KFD_IMAGE_DMABUF:
		return "amdgpu-dmabuf-";
	default:
		return "amdgpu-hsakmt-";
	}
}

void kfd_image_name(char *buf, size_t len, enum kfd_image_kind kind, uint32_t id)
{
	snprintf(buf, len, "%s%" PRIu32 ".img", kind_prefix(kind), id);
}

int kfd_image_exists(int dir_fd, enum kfd_image_kind kind, uint32_t id)
{
	char name[KFD_IMAGE_NAME_MAX];
	struct stat st;

	kfd_image_name(name, sizeof(name), kind, id);
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EINVAL;
}

int kfd_image_write(int dir_fd, enum kfd_image_kind kind, uint32_t id, const ProtobufCMessage *msg,
		    char *err, size_t errlen)
{
	char name[KFD_IMAGE_NAME_MAX], part[KFD_IMAGE_NAME_MAX + sizeof(KFD_IMAGE_PART_SUFFIX)];
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(len ? len : 1);
	int fd = -1, ret;

	kfd_image_name(name, sizeof(name), kind, id);
	snprintf(part, sizeof(part), "%s%s", name, KFD_IMAGE_PART_SUFFIX);
	if (!buf)
		return errmsg_set(err, errlen, -ENOMEM, "%s: no memory for %zu bytes", name, len);
	protobuf_c_message_pack(msg, buf);
	/* the image must not exist yet; written as .part, renamed once synced (ckpt_complete.h) */
	ret = kfd_image_exists(dir_fd, kind, id);
	if (ret != -ENOENT) {
		ret = errmsg_set(err, errlen, ret ? ret : -EEXIST, "cannot create %s: %s", name,
				 strerror(ret ? -ret : EEXIST));
		goto out;
	}
	fd = openat(dir_fd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = errmsg_set(err, errlen, -errno, "cannot create %s: %s", part,
				 strerror(errno));
		goto out;
	}
	ret = write_full(fd, buf, len);
	if (!ret && fdatasync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat2(dir_fd, part, dir_fd, name, RENAME_NOREPLACE))
		ret = -errno;
	/* the rename durable too; file systems that cannot sync a directory say EINVAL */
	if (!ret && fsync(dir_fd) && errno != EINVAL && errno != EROFS)
		ret = -errno;
	if (ret) {
		unlinkat(dir_fd, part, 0);
		errmsg_set(err, errlen, ret, "cannot write %s: %s", name, strerror(-ret));
	}
out:
	free(buf);
	return ret;
}

/* The whole file, if it is a regular file (regfile_open) no larger than KFD_IMAGE_MAX_FILE. */
static int read_image(int dir_fd, const char *name, uint8_t **out, size_t *out_len, char *err,
		      size_t errlen)
{
	uint8_t *buf = NULL;
	struct stat st;
	size_t done = 0;
	char why[128];
	ssize_t n;
	int fd, ret;

	fd = regfile_open(dir_fd, name, why, sizeof(why));
	if (fd < 0)
		return errmsg_set(err, errlen, fd, "cannot open image %s: %s", name, why);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > KFD_IMAGE_MAX_FILE) {
		ret = errmsg_set(err, errlen, -EINVAL,
				 "image %s is not a regular file of at most %llu bytes", name,
				 (unsigned long long)KFD_IMAGE_MAX_FILE);
		goto out;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		ret = errmsg_set(err, errlen, -ENOMEM, "%s: no memory", name);
		goto out;
	}
	while (done < (size_t)st.st_size) {
		n = read(fd, buf + done, (size_t)st.st_size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = errmsg_set(err, errlen, n < 0 ? -errno : -EIO, "cannot read %s",
					 name);
			goto out;
		}
		done += (size_t)n;
	}
	*out = buf;
	*out_len = done;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

/* What a valid image can hold, checked on the wire before protobuf-c allocates it. */
static const struct pb_limit wire_limits[] = {
	{&kfd_process_entry__descriptor, "devices", KFD_IMAGE_MAX_DEVICES, "GPUs", 0, NULL},
	{&kfd_process_entry__descriptor, "bos", KFD_IMAGE_MAX_BOS, "BOs", 0, NULL},
	{&kfd_topology_entry__descriptor, "nodes", TOPO_IMAGE_MAX_NODES, "topology nodes", 0, NULL},
	{&kfd_node_entry__descriptor, "props", TOPO_IMAGE_MAX_PROPS, "properties of a node",
	 TOPO_IMAGE_MAX_TOTAL_PROPS, "properties of the topology's nodes"},
	{&kfd_node_entry__descriptor, "io_links", TOPO_IMAGE_MAX_LINKS, "io_links of a node",
	 TOPO_IMAGE_MAX_TOTAL_LINKS, "io_links of the topology's nodes"},
	{&kfd_node_entry__descriptor, "p2p_links", TOPO_IMAGE_MAX_LINKS, "p2p_links of a node",
	 TOPO_IMAGE_MAX_TOTAL_LINKS, "p2p_links of the topology's nodes"},
	{&render_file_entry__descriptor, "gem_bos", KFD_IMAGE_MAX_BOS, "GEM BOs", 0, NULL},
	{&gem_bo_entry__descriptor, "mappings", KFD_IMAGE_MAX_GEM_MAPPINGS, "mappings of a GEM BO",
	 0, NULL},
	{&hsakmt_files_entry__descriptor, "files", KFD_IMAGE_HSAKMT_MAX_FILES, "libhsakmt files", 0,
	 NULL},
};

/* Unknown fields (a newer writer's) per message: as many as BOs, the largest count. */
#define WIRE_MAX_OTHER KFD_IMAGE_MAX_BOS

/*
 * protobuf-c's allocations while it unpacks, bounded: what pb_precheck()
 * estimated it keeps, and as much again of its budget for its scan state
 * (~32 bytes per field of the message being read, freed as it goes; a
 * valid image needs well under it). Plain malloc() underneath, so that the
 * message is freed as any unpacked one (allocator NULL).
 */
struct bounded_alloc {
	size_t live, limit;
	bool refused;
};

static void *bounded_alloc(void *data, size_t size)
{
	struct bounded_alloc *a = data;
	void *p;

	if (a->live >= a->limit || size > a->limit - a->live) {
		a->refused = true;
		return NULL;
	}
	p = malloc(size);
	if (p)
		a->live += malloc_usable_size(p);
	return p;
}

static void bounded_free(void *data, void *p)
{
	struct bounded_alloc *a = data;

	if (p)
		a->live -= malloc_usable_size(p);
	free(p);
}

static void *unpack(int dir_fd, const char *name, const ProtobufCMessageDescriptor *desc, int *ret,
		    char *err, size_t errlen)
{
	struct bounded_alloc limit = {0};
	ProtobufCAllocator alloc = {bounded_alloc, bounded_free, &limit};
	uint64_t estimate = 0;
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[200];
	void *msg;

	*ret = read_image(dir_fd, name, &buf, &len, err, errlen);
	if (*ret)
		return NULL;
	/* memory and time stay bounded by the file's size: counts and unpacked size first */
	*ret = pb_precheck(desc, buf, len, wire_limits,
			   sizeof(wire_limits) / sizeof(wire_limits[0]), WIRE_MAX_OTHER, &estimate,
			   why, sizeof(why));
	if (*ret) {
		free(buf);
		errmsg_set(err, errlen, *ret,
			   "image %s is damaged or hostile (%s); the checkpoint cannot be restored",
			   name, why);
		return NULL;
	}
	limit.limit = (size_t)(estimate + pb_precheck_budget(len));
	msg = protobuf_c_message_unpack(desc, &alloc, len, buf);
	free(buf);
	if (!msg && limit.refused)
		*ret = errmsg_set(err, errlen, -EINVAL,
				  "image %s is damaged or hostile (unpacking it takes more than "
				  "%zu bytes); the checkpoint cannot be restored",
				  name, limit.limit);
	else if (!msg)
		*ret = errmsg_set(err, errlen, -EINVAL,
				  "image %s is damaged (not a valid %s message); the checkpoint "
				  "cannot be restored",
				  name, desc->short_name);
	return msg;
}

int kfd_bo_contents_saved(const KfdBoEntry *b)
{
	return kfd_bo_has_contents(b->alloc_flags) && !b->shared_import;
}

int kfd_bo_has_contents(uint32_t alloc_flags)
{
	return !!(alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT));
}

int kfd_bo_maybe_invisible(uint32_t alloc_flags)
{
	return (alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) &&
	       !(alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
}

int kfd_process_image_device(const struct kfd_process_image *img, uint32_t user_gpu_id)
{
	size_t i;

	for (i = 0; i < img->entry->n_devices; i++)
		if (img->entry->devices[i]->user_gpu_id == user_gpu_id)
			return (int)i;
	return -1;
}

static int check_devices(struct kfd_process_image *img, const char *name, char *err, size_t errlen)
{
	const KfdProcessEntry *e = img->entry;
	const struct kfd_node *node;
	size_t i, j;

	if (e->n_devices > KFD_IMAGE_MAX_DEVICES)
		return errmsg_set(err, errlen, -EINVAL, "%s: %zu GPUs, more than KFD's %u", name,
				  e->n_devices, KFD_IMAGE_MAX_DEVICES);
	img->device_nodes = calloc(e->n_devices + 1, sizeof(*img->device_nodes));
	img->device_bytes = calloc(e->n_devices + 1, sizeof(*img->device_bytes));
	img->device_bo_count = calloc(e->n_devices + 1, sizeof(*img->device_bo_count));
	if (!img->device_nodes || !img->device_bytes || !img->device_bo_count)
		return errmsg_set(err, errlen, -ENOMEM, "%s: no memory", name);
	for (i = 0; i < e->n_devices; i++) {
		const KfdDeviceEntry *d = e->devices[i];

		if (!d->user_gpu_id || !d->actual_gpu_id)
			return errmsg_set(err, errlen, -EINVAL, "%s: GPU %zu has gpu_id 0", name,
					  i);
		if (!kfd_render_minor_valid(d->render_minor))
			return errmsg_set(err, errlen, -EINVAL,
					  "%s: GPU %u has render minor %u, out of range", name,
					  d->actual_gpu_id, d->render_minor);
		for (j = 0; j < i; j++)
			if (e->devices[j]->user_gpu_id == d->user_gpu_id ||
			    e->devices[j]->actual_gpu_id == d->actual_gpu_id)
				return errmsg_set(err, errlen, -EINVAL,
						  "%s: GPUs %zu and %zu share an id", name, j, i);
		node = topo_node(&img->topo, d->node_index);
		if (!node || !node->accessible || node->gpu_id != d->actual_gpu_id)
			return errmsg_set(
				err, errlen, -EINVAL,
				"%s: GPU %u (node %u) is missing from the recorded topology", name,
				d->actual_gpu_id, d->node_index);
		if (!node->is_gpu)
			return errmsg_set(err, errlen, -EINVAL,
					  "%s: GPU %u is recorded on node %u, which is not a GPU "
					  "(simd_count 0)",
					  name, d->actual_gpu_id, d->node_index);
		img->device_nodes[i] = d->node_index;
	}
	return 0;
}

static int check_bos(struct kfd_process_image *img, const char *name, char *err, size_t errlen)
{
	const KfdProcessEntry *e = img->entry;
	uint64_t *mapped; /* bytes of all BOs per device: in its GPU VM space */
	size_t i;
	int dev, ret = 0;

	if (e->n_bos > KFD_IMAGE_MAX_BOS)
		return errmsg_set(err, errlen, -EINVAL, "%s: %zu BOs, more than %u", name, e->n_bos,
				  KFD_IMAGE_MAX_BOS);
	mapped = calloc(e->n_devices + 1, sizeof(*mapped));
	if (!mapped)
		return errmsg_set(err, errlen, -ENOMEM, "%s: no memory", name);
	for (i = 0; i < e->n_bos && !ret; i++) {
		const KfdBoEntry *b = e->bos[i];

		dev = kfd_process_image_device(img, b->gpu_id);
		if (dev < 0) {
			ret = errmsg_set(err, errlen, -EINVAL,
					 "%s: BO %zu belongs to unknown GPU %u", name, i,
					 b->gpu_id);
		} else if (b->size > KFD_IMAGE_MAX_GPU_VM || (b->size & 4095)) {
			ret = errmsg_set(err, errlen, -EINVAL, "%s: BO %zu has a bad size %" PRIu64,
					 name, i, b->size);
		} else if (__builtin_add_overflow(mapped[dev], b->size, &mapped[dev]) ||
			   mapped[dev] > KFD_IMAGE_MAX_GPU_VM) {
			ret = errmsg_set(err, errlen, -EINVAL,
					 "%s: the BOs of GPU %u up to BO %zu need more than the "
					 "GPU's 48-bit address space (2^48 bytes)",
					 name, b->gpu_id, i);
		} else if (b->shared_import &&
			   (!b->share_id || !kfd_bo_has_contents(b->alloc_flags))) {
			ret = errmsg_set(err, errlen, -EINVAL,
					 "%s: BO %zu is an import of a shared BO but has no share "
					 "number or no contents",
					 name, i);
		} else if (kfd_bo_contents_saved(b)) {
			/* at most the mapped total: cannot overflow */
			img->device_bytes[dev] += b->size;
			img->device_bo_count[dev]++;
		}
	}
	free(mapped);
	return ret;
}

static int check_blob(struct kfd_process_image *img, const char *name, char *err, size_t errlen)
{
	const KfdProcessEntry *e = img->entry;
	char why[200];

	if (e->num_objects > KFD_IMAGE_MAX_OBJECTS)
		return errmsg_set(err, errlen, -EINVAL, "%s: %u objects, more than %u", name,
				  e->num_objects, KFD_IMAGE_MAX_OBJECTS);
	if (!e->n_devices) {
		/* /dev/kfd of a process without GPUs (KFD's PROCESS_INFO: ENODEV): the file is all
		 */
		if (e->n_bos || e->num_objects || e->priv_data.len)
			return errmsg_set(
				err, errlen, -EINVAL,
				"%s: no GPUs, yet %zu BOs, %u objects, %zu bytes of private data",
				name, e->n_bos, e->num_objects, e->priv_data.len);
		return 0;
	}
	if (priv_blob_parse(e->priv_data.data, e->priv_data.len, (uint32_t)e->n_devices,
			    (uint32_t)e->n_bos, e->num_objects, e->bo_record_size, &img->blob, why,
			    sizeof(why)))
		return errmsg_set(err, errlen, -EINVAL, "%s: private data does not parse: %s", name,
				  why);
	if (img->blob.version != PRIV_BLOB_VERSION)
		return errmsg_set(err, errlen, -EINVAL, "%s: private data version %u, expected %u",
				  name, img->blob.version, PRIV_BLOB_VERSION);
	return 0;
}

int kfd_process_image_load(int dir_fd, uint32_t id, struct kfd_process_image *img, char *err,
			   size_t errlen)
{
	char name[KFD_IMAGE_NAME_MAX], why[512];
	int ret;

	memset(img, 0, sizeof(*img));
	img->id = id;
	kfd_image_name(name, sizeof(name), KFD_IMAGE_PROCESS, id);
	img->entry = unpack(dir_fd, name, &kfd_process_entry__descriptor, &ret, err, errlen);
	if (!img->entry)
		return ret;
	ret = topo_from_image(img->entry->topology, &img->topo, why, sizeof(why));
	if (ret) {
		errmsg_set(err, errlen, ret, "%s: recorded topology: %s", name, why);
		goto fail;
	}
	ret = check_devices(img, name, err, errlen);
	if (!ret)
		ret = check_bos(img, name, err, errlen);
	if (!ret)
		ret = check_blob(img, name, err, errlen);
	if (!ret)
		return 0;
fail:
	kfd_process_image_free(img);
	return ret;
}

void kfd_process_image_free(struct kfd_process_image *img)
{
	if (img->entry)
		kfd_process_entry__free_unpacked(img->entry, NULL);
	topo_free(&img->topo);
	free(img->device_nodes);
	free(img->device_bytes);
	free(img->device_bo_count);
	memset(img, 0, sizeof(*img));
}

const struct kfd_process_image *kfd_image_layout_misfit(const struct kfd_process_image *procs,
							size_t n, uint32_t record)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (procs[i].entry->n_bos && procs[i].entry->bo_record_size != record)
			return &procs[i];
	return NULL;
}

static int check_gem_mapping(const GemBoEntry *b, const GemMappingEntry *m, const char *name,
			     char *err, size_t errlen)
{
	if (!m->size || (m->addr | m->size | m->offset) & 4095 || m->addr >= KFD_IMAGE_MAX_GPU_VM ||
	    m->size > KFD_IMAGE_MAX_GPU_VM - m->addr || m->offset >= b->size ||
	    m->size > b->size - m->offset)
		return errmsg_set(
			err, errlen, -EINVAL,
			"%s: GEM handle %u: mapping at %#llx (%#llx bytes at offset %#llx) "
			"is not page-aligned inside the BO and the GPU VA space",
			name, b->handle, (unsigned long long)m->addr, (unsigned long long)m->size,
			(unsigned long long)m->offset);
	return 0;
}

static int check_gem_bos(const RenderFileEntry *e, const char *name, char *err, size_t errlen)
{
	uint64_t total = 0;
	uint32_t prev = 0;
	size_t i, j;
	int ret;

	if (e->n_gem_bos > KFD_IMAGE_MAX_BOS)
		return errmsg_set(err, errlen, -EINVAL, "%s: %zu GEM BOs (at most %u)", name,
				  e->n_gem_bos, KFD_IMAGE_MAX_BOS);
	for (i = 0; i < e->n_gem_bos; i++) {
		const GemBoEntry *b = e->gem_bos[i];

		if (b->handle <= prev || b->handle > INT32_MAX)
			return errmsg_set(err, errlen, -EINVAL,
					  "%s: GEM handle %u after %u: handles must be ascending, "
					  "from 1 to %d",
					  name, b->handle, prev, INT32_MAX);
		prev = b->handle;
		if (!b->size || b->size & 4095 || b->size > KFD_IMAGE_MAX_GPU_VM - total)
			return errmsg_set(err, errlen, -EINVAL,
					  "%s: GEM handle %u: size %#llx is not a page multiple "
					  "the GPU VA space can hold",
					  name, b->handle, (unsigned long long)b->size);
		total += b->size;
		if (b->alignment > KFD_IMAGE_MAX_GEM_ALIGN ||
		    b->n_mappings > KFD_IMAGE_MAX_GEM_MAPPINGS)
			return errmsg_set(err, errlen, -EINVAL,
					  "%s: GEM handle %u: alignment of %llu pages or %zu "
					  "mappings out of range",
					  name, b->handle, (unsigned long long)b->alignment,
					  b->n_mappings);
		for (j = 0; j < b->n_mappings; j++) {
			ret = check_gem_mapping(b, b->mappings[j], name, err, errlen);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int render_file_image_load(int dir_fd, uint32_t id, struct render_file_image *img, char *err,
			   size_t errlen)
{
	char name[KFD_IMAGE_NAME_MAX], why[512];
	const struct kfd_node *node;
	int ret;

	memset(img, 0, sizeof(*img));
	img->id = id;
	kfd_image_name(name, sizeof(name), KFD_IMAGE_RENDER, id);
	img->entry = unpack(dir_fd, name, &render_file_entry__descriptor, &ret, err, errlen);
	if (!img->entry)
		return ret;
	ret = topo_from_image(img->entry->topology, &img->topo, why, sizeof(why));
	if (ret) {
		errmsg_set(err, errlen, ret, "%s: recorded topology: %s", name, why);
		goto fail;
	}
	if (!kfd_render_minor_valid(img->entry->minor)) {
		ret = errmsg_set(err, errlen, -EINVAL, "%s: render minor %u out of range", name,
				 img->entry->minor);
		goto fail;
	}
	node = topo_node(&img->topo, img->entry->node_index);
	if (!node || !node->accessible || node->gpu_id != img->entry->actual_gpu_id ||
	    !img->entry->actual_gpu_id) {
		ret = errmsg_set(err, errlen, -EINVAL,
				 "%s: GPU %u (node %u) is missing from the recorded "
				 "topology",
				 name, img->entry->actual_gpu_id, img->entry->node_index);
		goto fail;
	}
	if (!node->is_gpu) {
		ret = errmsg_set(err, errlen, -EINVAL,
				 "%s: GPU %u is recorded on node %u, which is not a GPU "
				 "(simd_count 0)",
				 name, img->entry->actual_gpu_id, img->entry->node_index);
		goto fail;
	}
	ret = check_gem_bos(img->entry, name, err, errlen);
	if (ret)
		goto fail;
	return 0;
fail:
	render_file_image_free(img);
	return ret;
}

static int check_hsakmt_file(const HsakmtFileEntry *f, const char *name, char *err, size_t errlen)
{
	char shown[ESCAPE_BUF]; /* the image's bytes: escaped, the first 64 or so */

	if (f->path[0] != '/' || strstr(f->path, "..") ||
	    strlen(f->path) > KFD_IMAGE_HSAKMT_MAX_PATH)
		return errmsg_set(err, errlen, -EINVAL,
				  "%s: file path '%s' is not a plain absolute path", name,
				  str_escape(f->path, shown, sizeof(shown)));
	if (f->size > KFD_IMAGE_HSAKMT_MAX_FILE || f->contents.len != f->size)
		return errmsg_set(err, errlen, -EINVAL,
				  "%s: %s: %zu bytes of contents for a size of %llu (at most %u)",
				  name, str_escape(f->path, shown, sizeof(shown)), f->contents.len,
				  (unsigned long long)f->size, KFD_IMAGE_HSAKMT_MAX_FILE);
	return 0;
}

int hsakmt_files_image_load(int dir_fd, uint32_t pid, HsakmtFilesEntry **out, char *err,
			    size_t errlen)
{
	char name[KFD_IMAGE_NAME_MAX];
	HsakmtFilesEntry *e;
	int ret = 0;
	size_t i;

	kfd_image_name(name, sizeof(name), KFD_IMAGE_HSAKMT, pid);
	e = unpack(dir_fd, name, &hsakmt_files_entry__descriptor, &ret, err, errlen);
	if (!e)
		return ret;
	for (i = 0; i < e->n_files && !ret; i++)
		ret = check_hsakmt_file(e->files[i], name, err, errlen);
	if (ret) {
		hsakmt_files_entry__free_unpacked(e, NULL);
		return ret;
	}
	*out = e;
	return 0;
}

int hsakmt_files_check_names(const HsakmtFilesEntry *e, uint32_t pid, const char *const names[2],
			     char *err, size_t errlen)
{
	bool seen[2] = {false, false};
	char shown[ESCAPE_BUF];

	for (size_t i = 0; i < e->n_files; i++) {
		size_t k = 0;

		while (k < 2 && strcmp(e->files[i]->path, names[k]))
			k++;
		if (k < 2 && !seen[k]) {
			seen[k] = true;
			continue;
		}
		return errmsg_set(err, errlen, -EINVAL,
				  "amdgpu-hsakmt-%" PRIu32
				  ".img names %s%s: the checkpoint is damaged",
				  pid, str_escape(e->files[i]->path, shown, sizeof(shown)),
				  k < 2 ? " twice" : ", not one of libhsakmt's files");
	}
	return 0;
}

int dmabuf_file_image_load(int dir_fd, uint32_t id, struct dmabuf_file_image *img, char *err,
			   size_t errlen)
{
	char name[KFD_IMAGE_NAME_MAX];
	int ret;

	memset(img, 0, sizeof(*img));
	img->id = id;
	kfd_image_name(name, sizeof(name), KFD_IMAGE_DMABUF, id);
	img->entry = unpack(dir_fd, name, &dmabuf_file_entry__descriptor, &ret, err, errlen);
	if (!img->entry)
		return ret;
	if (!img->entry->share_id) {
		dmabuf_file_image_free(img);
		return errmsg_set(err, errlen, -EINVAL, "%s: no share number", name);
	}
	return 0;
}

void dmabuf_file_image_free(struct dmabuf_file_image *img)
{
	if (img->entry)
		dmabuf_file_entry__free_unpacked(img->entry, NULL);
	img->entry = NULL;
}

size_t kfd_process_shared_imports(const KfdProcessEntry *e)
{
	size_t n = 0, i;

	for (i = 0; i < e->n_bos; i++)
		n += e->bos[i]->has_shared_import && e->bos[i]->shared_import;
	return n;
}

uint64_t *render_file_gem_sizes(const RenderFileEntry *e)
{
	uint64_t *sizes = calloc(e->n_gem_bos + 1, sizeof(*sizes));
	size_t i;

	for (i = 0; sizes && i < e->n_gem_bos; i++)
		sizes[i] = e->gem_bos[i]->size;
	return sizes;
}

uint64_t render_file_gem_bytes(const RenderFileEntry *e)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < e->n_gem_bos; i++)
		bytes += e->gem_bos[i]->size;
	return bytes;
}

void render_file_image_free(struct render_file_image *img)
{
	if (img->entry)
		render_file_entry__free_unpacked(img->entry, NULL);
	topo_free(&img->topo);
	memset(img, 0, sizeof(*img));
}

/*
 * "<prefix><digits>.img" with a value that fits in 32 bits: 0 and the id;
 * 1 when the name is not an image name at all (skipped); -EINVAL when the
 * digits are not the one spelling kfd_image_name() writes (leading zeros:
 * "-01" and "-001" would alias "-1").
 */
static int parse_image_id(const char *name, const char *prefix, uint32_t *id)
{
	size_t plen = strlen(prefix);
	unsigned long long v = 0;
	const char *p;

	if (strncmp(name, prefix, plen))
		return 1;
	for (p = name + plen; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > UINT32_MAX)
			return 1;
	}
	if (p == name + plen || strcmp(p, ".img"))
		return 1;
	if (name[plen] == '0' && p - (name + plen) > 1)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int list_add(uint32_t **list, size_t *count, size_t *cap, uint32_t id)
{
	uint32_t *grown;

	if (*count == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		grown = realloc(*list, *cap * sizeof(**list));
		if (!grown)
			return -ENOMEM;
		*list = grown;
	}
	(*list)[(*count)++] = id;
	return 0;
}

int kfd_image_list(int dir_fd, enum kfd_image_kind kind, uint32_t **ids, size_t *n, char *err,
		   size_t errlen)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t count = 0, cap = 0;
	uint32_t *list = NULL, id;
	struct dirent *de;
	int ret = 0, kind_ret;
	DIR *dir;

	*ids = NULL;
	*n = 0;
	if (fd < 0)
		return errmsg_set(err, errlen, -errno, "cannot open the image directory: %s",
				  strerror(errno));
	dir = fdopendir(fd);
	if (!dir) {
		ret = errmsg_set(err, errlen, -errno, "cannot list the image directory: %s",
				 strerror(errno));
		close(fd);
		return ret;
	}
	while (!ret && (de = readdir(dir))) {
		kind_ret = parse_image_id(de->d_name, kind_prefix(kind), &id);
		if (kind_ret < 0)
			ret = errmsg_set(
				err, errlen, kind_ret,
				"%s: image id with leading zeros, a name the plugin never "
				"writes (it would alias another image); rename or remove it",
				de->d_name);
		else if (!kind_ret && list_add(&list, &count, &cap, id))
			ret = errmsg_set(err, errlen, -ENOMEM, "listing the images: no memory");
	}
	closedir(dir);
	if (ret) {
		free(list);
		return ret;
	}
	if (count)
		qsort(list, count, sizeof(*list), cmp_u32);
	*ids = list;
	*n = count;
	return 0;
}
