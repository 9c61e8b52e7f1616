/* SPDX-License-Identifier: MIT */
/*
 * The plugin's metadata images in a CRIU image directory, and the checks that
 * make a hostile or damaged one a clear error.
 *
 * Files (created 0600, O_EXCL|O_NOFOLLOW, inside the directory given as an
 * fd; names are built from numbers only, so no image content can steer a
 * path):
 *   amdgpu-kfd-<id>.img      KfdProcessEntry: one checkpointed /dev/kfd file
 *   amdgpu-render-<id>.img   RenderFileEntry: one application render-node file
 *   amdgpu-bo-<id>-<gpu>.*   BO contents (datapath/bo_stream.h); of a render
 *                            file's GEM BOs too (<id> the render file's)
 *   amdgpu-hsakmt-<pid>.img  HsakmtFilesEntry: libhsakmt's shared files one
 *                            process mapped (plugin/hsakmt_files.h)
 * <id> is CRIU's file id (decimal), <gpu> the BO owner's user gpu_id, <pid>
 * the process's pid as CRIU saw it.
 * Each .img is one packed protobuf message, nothing else.
 *
 * Loading validates everything the restore relies on before anything is
 * done with it (bounds below, unique non-zero ids, BOs owned by a recorded
 * GPU, the private blob walking to its exact end with the recorded sizes,
 * a topology that names every recorded GPU). Errors: negative errno and one
 * line in err naming the file and what is wrong with it.
 */
#ifndef AMDGPU_CRIU_KFD_IMAGE_H
#define AMDGPU_CRIU_KFD_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "amdgpu_plugin.pb-c.h"
#include "images/priv_blob.h"
#include "topology/topology.h"

/* Suffix of an image being written, renamed once synced (ckpt_complete.h). */
#define KFD_IMAGE_PART_SUFFIX ".part"

#define KFD_IMAGE_MAX_FILE    (1ull << 30) /* a metadata image larger than this is refused */
#define KFD_IMAGE_MAX_DEVICES 64u	   /* KFD's own maximum of GPU instances */
#define KFD_IMAGE_MAX_BOS     (1u << 20)
#define KFD_IMAGE_MAX_OBJECTS (1u << 20)
#define KFD_IMAGE_NAME_MAX    64
/*
 * The GPU virtual address space of a process on one GPU (48 bits on every
 * GPU KFD drives, GFX9 on). Each BO of a GPU is mapped at its own range of
 * that space, so the BOs of one GPU together cannot be larger: their sum is
 * refused past it (a bound no real GPU's VRAM + GTT comes near, and one that
 * needs no recorded memory size: several captures have no mem_banks).
 */
#define KFD_IMAGE_MAX_GPU_VM (1ull << 48)

enum kfd_image_kind {
	KFD_IMAGE_PROCESS, /* amdgpu-kfd-<id>.img */
	KFD_IMAGE_RENDER,  /* amdgpu-render-<id>.img */
	KFD_IMAGE_HSAKMT,  /* amdgpu-hsakmt-<pid>.img */
	KFD_IMAGE_DMABUF,  /* amdgpu-dmabuf-<id>.img */
};

/* The most a recorded libhsakmt file may hold (it writes 8 and 32 bytes). */
#define KFD_IMAGE_HSAKMT_MAX_FILE 4096u
/* The only files a libhsakmt image may name (plugin/hsakmt_files.h), each at most once. */
#define KFD_IMAGE_HSAKMT_SHM_DIR   "/dev/shm"
#define KFD_IMAGE_HSAKMT_SHM_NAME  "hsakmt_shared_mem"
#define KFD_IMAGE_HSAKMT_SEM_NAME  "sem.hsakmt_semaphore"
#define KFD_IMAGE_HSAKMT_MAX_FILES 2u
#define KFD_IMAGE_HSAKMT_MAX_PATH  255u /* bytes of a recorded path */

/* "amdgpu-kfd-<id>.img" or "amdgpu-render-<id>.img" into buf (>= KFD_IMAGE_NAME_MAX). */
void kfd_image_name(char *buf, size_t len, enum kfd_image_kind kind, uint32_t id);

/* 0 if the image exists (as a regular file), -ENOENT if not, other -errno. */
int kfd_image_exists(int dir_fd, enum kfd_image_kind kind, uint32_t id);

/* Packs msg into a new file (0600, must not exist yet). */
int kfd_image_write(int dir_fd, enum kfd_image_kind kind, uint32_t id, const ProtobufCMessage *msg,
		    char *err, size_t errlen);

/*
 * A validated process image. `topo` is the recorded topology; the other
 * arrays are parallel to entry->devices (index into topo.nodes).
 */
struct kfd_process_image {
	uint32_t id;
	KfdProcessEntry *entry; /* unpacked; free with kfd_process_image_free() */
	struct kfd_topology topo;
	struct priv_blob_summary blob;
	uint32_t *device_nodes;	   /* entry->n_devices node indexes */
	uint64_t *device_bytes;	   /* bytes of BO contents per device (VRAM/GTT) */
	uint32_t *device_bo_count; /* BOs with contents per device */
};

int kfd_process_image_load(int dir_fd, uint32_t id, struct kfd_process_image *img, char *err,
			   size_t errlen);
void kfd_process_image_free(struct kfd_process_image *img);

/*
 * The first of procs[0..n-1] that a KFD taking `record`-byte BO records
 * cannot RESTORE: it has BOs, recorded with another record size. NULL if
 * all fit (an image without BOs fits any layout). The CRIU plugin and
 * `amdgpu-criu check` decide by it alike.
 */
const struct kfd_process_image *kfd_image_layout_misfit(const struct kfd_process_image *procs,
							size_t n, uint32_t record);

/* Index of the device whose user gpu_id is `user_gpu_id`, or -1. */
int kfd_process_image_device(const struct kfd_process_image *img, uint32_t user_gpu_id);

/* True for BOs whose contents the plugin copies (VRAM and GTT). */
int kfd_bo_has_contents(uint32_t alloc_flags);

/*
 * True for BOs whose contents are in the checkpoint's contents files: those
 * with contents but an import of a shared BO (its origin's are, once).
 */
int kfd_bo_contents_saved(const KfdBoEntry *b);

/*
 * True for VRAM BOs allocated without PUBLIC: on a small-BAR GPU they may lie
 * outside the CPU-visible window (KFD refuses PUBLIC VRAM there).
 */
int kfd_bo_maybe_invisible(uint32_t alloc_flags);

/*
 * A render-node file's GEM BOs (gem_bos) are checked too: at most
 * KFD_IMAGE_MAX_BOS, handles non-zero, at most INT_MAX and ascending; sizes
 * non-zero, page multiples, together at most KFD_IMAGE_MAX_GPU_VM; at most
 * KFD_IMAGE_MAX_GEM_MAPPINGS mappings each, every one page-aligned, inside
 * the BO and the 48-bit VA space; alignment at most KFD_IMAGE_MAX_GEM_ALIGN
 * pages.
 */
#define KFD_IMAGE_MAX_GEM_MAPPINGS 4096u
#define KFD_IMAGE_MAX_GEM_ALIGN	   (1u << 18) /* 1 GiB in 4 KiB pages */

struct render_file_image {
	uint32_t id;
	RenderFileEntry *entry;
	struct kfd_topology topo;
};

int render_file_image_load(int dir_fd, uint32_t id, struct render_file_image *img, char *err,
			   size_t errlen);
/* How many of a process's BOs are imports of another BO of the checkpoint (shared_import). */
size_t kfd_process_shared_imports(const KfdProcessEntry *e);

/* A render file's GEM BO sizes in image order (what bo_stream checks), malloc'ed; NULL: no memory.
 */
uint64_t *render_file_gem_sizes(const RenderFileEntry *e);

/* The sum of a render file's GEM BO sizes. */
uint64_t render_file_gem_bytes(const RenderFileEntry *e);
void render_file_image_free(struct render_file_image *img);

/*
 * amdgpu-hsakmt-<pid>.img, checked: at most KFD_IMAGE_HSAKMT_MAX_FILES
 * files, each an absolute path without "..", contents of exactly its size,
 * at most KFD_IMAGE_HSAKMT_MAX_FILE bytes. Which paths may be created is the
 * restorer's decision. Free *out with hsakmt_files_entry__free_unpacked().
 */
int hsakmt_files_image_load(int dir_fd, uint32_t pid, HsakmtFilesEntry **out, char *err,
			    size_t errlen);

/*
 * Each file of image e (of pid) is one of names[0], names[1] and none is
 * named twice: the rule for what a restore may create (the checkpoint
 * loader with libhsakmt's real names, the libhsakmt restore with its own).
 * 0, or -EINVAL with one line naming the image and the path, escaped.
 */
int hsakmt_files_check_names(const HsakmtFilesEntry *e, uint32_t pid, const char *const names[2],
			     char *err, size_t errlen);

/*
 * Ids of every image of `kind` in the directory, sorted ascending. Names that
 * merely look alike (other characters, ids past 32 bits) are skipped. An id
 * spelt with leading zeros ("amdgpu-kfd-01.img": the plugin writes plain
 * decimal, and -01 would alias -1) is refused: -EINVAL and one line in err
 * naming it. The plugin's restore and amdgpu-criu list images by this alone.
 * *ids is malloc'ed (NULL when *n == 0).
 */
/* A validated dma-buf file image (a share_id, which the caller resolves). */
struct dmabuf_file_image {
	uint32_t id;
	DmabufFileEntry *entry;
};
int dmabuf_file_image_load(int dir_fd, uint32_t id, struct dmabuf_file_image *img, char *err,
			   size_t errlen);
void dmabuf_file_image_free(struct dmabuf_file_image *img);

int kfd_image_list(int dir_fd, enum kfd_image_kind kind, uint32_t **ids, size_t *n, char *err,
		   size_t errlen);

#endif
