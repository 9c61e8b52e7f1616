/* SPDX-License-Identifier: MIT */
/*
 * Streaming of buffer-object (BO) contents between GPU memory and image files.
 *
 * This header is the whole contract of the module (bo_stream.c: the calls;
 * bo_stream_job.c: one GPU's pipeline; bo_stream_chunk.c: one chunk's
 * stages; bo_index.c: the index file; bo_chain.c: an incremental dump's
 * parent, a restore's ancestors; staging_ring.c: the per-GPU ring;
 * bo_copy_cpu.c, bo_copy_render.c, bo_copy_sdma.c: the copy engines).
 *
 * Dump: for every GPU, one thread copies the GPU's BOs, in order, through a
 * copy engine into a ring of `ring_depth` staging chunks of `chunk_size`
 * bytes, and a second thread drains the ring into the GPU's data file. GPUs
 * run in parallel. Host memory is ring_depth * chunk_size per GPU, whatever
 * the BO sizes. Every chunk gets a CRC-64 (CRC-64/XZ), kept in a per-GPU index
 * file written once the data is complete.
 * Restore: the same pipeline in the other direction; every chunk's checksum
 * is verified before it is written into the BO.
 * A dump's BOs in host memory (bo_stream_bo.host_memory) skip the ring when
 * the engine has a view op: the copying thread writes their chunks from the
 * BO itself and checksums them after, from the cache the write filled (an
 * incremental dump checksums first: what the parent holds is not written).
 * Dumps with cfg->sync start each chunk's writeback once it is written.
 *
 * Files, created 0600 with O_EXCL|O_NOFOLLOW inside cfg->dir_fd (openat), named
 * from numbers only (decimal):
 *   amdgpu-bo-<image_id>-<gpu_id>.img   raw contents: the GPU's BOs, in array
 *                                       order, back to back (no padding); sparse:
 *                                       all-zero pages of a chunk are not written
 *                                       (holes read as zeros; checksums as usual)
 *   amdgpu-bo-<image_id>-<gpu_id>.idx   the index, all integers little-endian
 *                                       (version 3; versions 1 and 2 are still
 *                                       read):
 *     off  0  char[8] magic "AMDBOIX3" ("AMDBOIX2", "AMDBOIX1": versions 2, 1)
 *          8  u32 version (3)
 *         12  u32 gpu_id
 *         16  u32 image_id
 *         20  u32 chunk_size (a multiple of 4096, at most BO_STREAM_MAX_CHUNK)
 *         24  u32 bo_count
 *         28  u32 ancestor_count (at most BO_STREAM_MAX_CHAIN; version 1: 0)
 *         32  u64 data_bytes (size of the .img file = sum of BO sizes)
 *         40  u64 chunk_count
 *         48  u8[16] reserved (0)
 *         64  bo_count x { u64 size; u64 offset in .img; u64 gpu_va }
 *                        (version 1: { u64 size; u64 offset })
 *          .  ancestor_count x { u32 image_id; u32 gpu_id; u64 data_bytes;
 *                                u32 index_crc; u32 reserved (0) }: ancestor k
 *             (k = 1, 2, ...) is the same GPU's files in the image directory
 *             reached by following the link "parent" k times (CRIU's
 *             --prev-images-dir); index_crc is that index's last 4 bytes
 *          .  chunk_count x { u32 reserved (0); u16 level; u16 flags (bit 0:
 *                             all zero, a hole; level 0 only); u64 offset;
 *                             u64 CRC-64/XZ of the chunk; u64 reserved (0) }
 *             (version 2: the first u32 is the chunk's CRC-32, zlib's crc32,
 *             which a restore verifies instead of the CRC-64; version 1:
 *             u32 CRC-32 only). Chunks cut each BO from its start
 *             in chunk_size pieces (the last one may be shorter); a chunk never
 *             spans two BOs; zero-size BOs have none. Level 0: the bytes are in
 *             this .img at offset (the chunk's own position); level k: in
 *             ancestor k's .img at offset, and this .img has a hole there.
 *          .  u32 CRC-32 of all the preceding bytes of the index
 * Incremental dumps (cfg->has_parent): a chunk whose CRC-64 equals that of
 * the parent's chunk at the same offset of the same BO (same gpu_va
 * and size; BOs without gpu_va: same index and size) is not written; its
 * entry refers to where the parent has it. All-zero chunks are holes of
 * their own image, never references. A restore or verify opens the
 * ancestors its index names (each identity checked: index_crc, data size)
 * and reads every chunk where it is, checking it against its own index's
 * checksum as usual (a version 2 index: the CRC-32).
 * Restore refuses an index or data file that does not match the BO sizes the
 * caller passes (from its own metadata), exactly, before touching any BO.
 * Both files are checked in bounded memory whatever their size: the sizes
 * first, then the index streamed (its own checksum), its chunk checksums
 * read on demand (bo_index.h).
 * image_id tells apart the images of several processes (or KFD files) using
 * the same GPU in one checkpoint (e.g. the CRIU file id).
 *
 * File descriptors: bo_stream_dump() and bo_stream_restore() take ownership
 * of every bos[i].dmabuf_fd >= 0 of every GPU passed: each is closed exactly
 * once before the call returns, on success and on every error, and the field
 * is set to -1. (The dump closes each as soon as its BO has been read.)
 *
 * Errors: negative errno; `err` (if non-NULL) receives one line naming the
 * GPU and, where it applies, the BO index and byte offset (e.g. a checksum
 * mismatch, a truncated file). On a failed dump, the GPU's files are removed.
 */
#ifndef AMDGPU_CRIU_BO_STREAM_H
#define AMDGPU_CRIU_BO_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BO_STREAM_DEFAULT_CHUNK		(4u << 20)
#define BO_STREAM_DEFAULT_DEPTH		4u
#define BO_STREAM_MAX_CHUNK		(256u << 20)
#define BO_STREAM_MAX_DEPTH		64u
#define BO_STREAM_DEFAULT_PROGRESS_STEP (1ull << 30)
/* Parent links an incremental chain may have (deeper chunks are written again). */
#define BO_STREAM_MAX_CHAIN 32u
/* More BOs per GPU than this is taken as corrupt metadata. */
#define BO_STREAM_MAX_BOS (1u << 20)

/*
 * A copy engine moves bytes between a BO (given as a dma-buf fd) and host
 * memory. One engine object may serve several GPUs; each open BO is used by
 * one thread at a time. read/write get ranges inside the BO (off + len <=
 * size) and return 0 or a negative errno; len is at most the chunk size.
 */
enum bo_access {
	BO_ACCESS_READ,	 /* dump: the BO is read */
	BO_ACCESS_WRITE, /* restore: the BO is written */
};

struct bo_copy_engine;

struct bo_copy_engine_ops {
	/* Prepares access to a BO. Must not close dmabuf_fd (the stream does). */
	int (*open_bo)(const struct bo_copy_engine *engine, int dmabuf_fd, uint64_t size,
		       enum bo_access access, void **bo);
	int (*read)(void *bo, uint64_t off, void *buf, size_t len);
	int (*write)(void *bo, uint64_t off, const void *buf, size_t len);
	/*
	 * Optional: writes len zero bytes (restore of an all-zero chunk, which
	 * the dump did not store). NULL: write() of a zeroed buffer.
	 */
	int (*zero)(void *bo, uint64_t off, size_t len);
	/*
	 * Optional, dump: the BO's bytes [off, off + len) where they are, for
	 * the stream to checksum and write without a copy into staging (*p
	 * valid until view_end(), which comes before any other call on the BO).
	 * Asked only of BOs in host memory (bo_stream_bo.host_memory): reading
	 * VRAM through the BAR twice would cost more than the copy saves.
	 */
	int (*view)(void *bo, uint64_t off, size_t len, const void **p);
	int (*view_end)(void *bo);
	/* Releases what open_bo set up (not the fd). */
	void (*close_bo)(void *bo);
	/*
	 * Optional: what an error of this engine means, in a few words (e.g.
	 * "the GPU was reset"), or NULL for strerror()'s text.
	 */
	const char *(*explain)(int err);
};

struct bo_copy_engine {
	const struct bo_copy_engine_ops *ops;
	void *priv; /* the engine's own state, e.g. a libdrm device */
};

/*
 * CPU engine: mmap(MAP_SHARED) of the dma-buf fd, one window (below) at a
 * time, each access bracketed by DMA_BUF_IOCTL_SYNC (ignored on fds that are not
 * dma-bufs, e.g. memfds in tests). Restore needs a dma-buf opened read-write
 * (a non-WRITABLE BO's dma-buf is read-only: mmap fails with EACCES).
 */
extern const struct bo_copy_engine bo_copy_engine_cpu;
/*
 * The CPU engine maps this much of a BO at a time (one window per open BO):
 * consecutive chunks reuse the mapping, so a BO is mapped, populated and
 * unmapped (TLB shootdown) once per window, not once per chunk. Its pages are
 * the BO's own; they count in RSS while mapped.
 */
#define BO_COPY_CPU_WINDOW (32ull << 20)

struct bo_stream_bo {
	uint64_t size;	 /* bytes of contents (the bucket's size) */
	uint64_t gpu_va; /* its GPU address: the same BO in a parent image; 0: unknown */
	int dmabuf_fd;	 /* owned by the stream from the call on; -1: none */
	/*
	 * Its pages are cacheable host memory (a GTT BO; the memfds standing in
	 * for BOs in tests): a dump whose engine has a view op checksums and
	 * writes them in place, on the copying thread alone, with no staging
	 * copy (bo_stream_gpu.in_place_bytes). Not with O_DIRECT, which cannot
	 * read a dma-buf's PFN mapping. A restore goes through staging all the
	 * same: its reading thread must only read (in place, reading and
	 * checking on one thread made make bench's restore 0.70 of its limit
	 * against 0.89 through staging).
	 */
	bool host_memory;
};

/*
 * Where one GPU's time went, filled in by the stream (also after a failure):
 * the copy engine's calls, the file side (reads or writes, checksums), and
 * the whole. The two sides run on their own threads: wall below their sum
 * is copy time hidden behind file I/O (bo_stream_hidden_permille()).
 */
struct bo_stream_times {
	uint64_t wall_ns;
	uint64_t engine_ns;
	uint64_t file_ns;
	/* the checksum passes (run on the copy side, within engine_ns), in the
	 * thread's CPU time: a pass preempted by another GPU's thread does not
	 * count the wait */
	uint64_t checksum_ns;
};

struct bo_stream_gpu {
	uint32_t gpu_id;
	uint32_t bo_count;
	struct bo_stream_bo *bos;
	const struct bo_copy_engine *engine; /* NULL: bo_copy_engine_cpu */
	struct bo_stream_times times;	     /* out */
	/* out, dump: bytes left in the ancestors' files (incremental), written
	 * here, and all-zero (holes: neither) */
	uint64_t parent_bytes, written_bytes, zero_bytes;
	/* out, dump with a parent: why this GPU's chunks were all written ("" if not) */
	char parent_note[256];
	/* out, dump: the data went to the device with O_DIRECT (no page-cache
	 * copy): BO_STREAM_DIRECT_ENV=1 asked so and the file system took it */
	bool direct_io;
	/* out, dump: bytes checksummed and written from the BO in place
	 * (host_memory above), not through the staging ring */
	uint64_t in_place_bytes;
};

/*
 * "1": dumps write their page-aligned runs with O_DIRECT (no page-cache
 * copy, no page cache filled with images) instead of through the page
 * cache. Off by default: on this project's VM disk, files written so read
 * back at half the speed (README, `make bench`).
 */
#define BO_STREAM_DIRECT_ENV "AMDGPU_CRIU_DIRECT_IO"

/*
 * The share of the shorter side hidden behind the longer one, in 1/1000:
 * (engine + file - wall) / min(engine, file), 0 when either side took no
 * time. 1000: fully overlapped; 0: one after the other.
 */
unsigned int bo_stream_hidden_permille(const struct bo_stream_times *t);

/*
 * Progress of one GPU: bytes copied so far and in total. Called from the
 * GPU's threads (several GPUs concurrently), every `progress_step` bytes and
 * once at the end; it must be thread-safe and quick.
 */
typedef void (*bo_stream_progress_fn)(void *arg, uint32_t gpu_id, uint64_t done, uint64_t total);

struct bo_stream_config {
	int dir_fd;	     /* image directory */
	uint32_t image_id;   /* see file names above */
	uint32_t chunk_size; /* 0: default; else a multiple of 4096 up to MAX */
	uint32_t ring_depth; /* staging chunks per GPU, 0: default; 2..MAX */
	/*
	 * Dump: fdatasync() both files before returning, and start each
	 * chunk's writeback as soon as it is written (sync_file_range), so
	 * that the device works while the next chunks are copied and the
	 * final fdatasync() has little left to wait for.
	 */
	bool sync;
	/*
	 * Dump: write only what changed since the images in parent_dir_fd (a
	 * directory fd; the stream reads it, never writes it). A GPU whose files
	 * are not there or not usable there is written whole (parent_note says
	 * why). Restore and verify follow "parent" links from dir_fd instead.
	 */
	bool has_parent;
	int parent_dir_fd;
	bo_stream_progress_fn progress; /* may be NULL */
	void *progress_arg;
	uint64_t progress_step; /* 0: default */
};

/* Writes the images of gpus[0..gpu_count-1]. See fd ownership above. */
int bo_stream_dump(const struct bo_stream_config *cfg, struct bo_stream_gpu *gpus,
		   uint32_t gpu_count, char *err, size_t errlen);

/*
 * Writes the contents recorded by bo_stream_dump() into the BOs (same
 * image_id, gpu_id and BO sizes; chunk_size is taken from the index),
 * verifying every chunk's checksum.
 */
int bo_stream_restore(const struct bo_stream_config *cfg, struct bo_stream_gpu *gpus,
		      uint32_t gpu_count, char *err, size_t errlen);

/* Where bo_stream_verify() found the first damaged chunk. */
struct bo_stream_fault {
	bool located;	    /* false: the damage is not in one chunk (index, file size) */
	uint32_t bo_index;  /* index into the caller's bo_sizes */
	uint64_t bo_offset; /* byte offset in that BO of the first damaged chunk */
	uint32_t chunk_len; /* bytes in that chunk */
};

/*
 * Checks the images of one GPU without touching any BO: the index against
 * bo_sizes[0..bo_count-1] (the caller's metadata, e.g. the VRAM/GTT BOs of
 * that GPU in order), the data file's size, and every chunk's checksum.
 * Returns 0, or a negative errno with one line in err naming the GPU and,
 * for a checksum mismatch or a short read, the BO index and byte offset
 * (also in *fault when fault != NULL). Memory: one chunk.
 */
int bo_stream_verify(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		     uint32_t bo_count, struct bo_stream_fault *fault, char *err, size_t errlen);

/*
 * bo_stream_verify() without reading the data: both files there, the index
 * whole (its own checksum) and matching bo_sizes, the data file's size. For
 * a restore's early refusal; reads the index only.
 */
int bo_stream_check_files(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
			  uint32_t bo_count, char *err, size_t errlen);

/* Where one GPU's contents are: this image and its ancestors (incremental dumps). */
struct bo_stream_chain {
	uint32_t levels;			       /* ancestors referred to; 0: whole */
	uint64_t level_bytes[BO_STREAM_MAX_CHAIN + 1]; /* [0]: this image's; [k]: ancestor k's */
	uint64_t zero_bytes; /* of level_bytes[0]: all-zero chunks, holes that cost nothing */
};

/*
 * bo_stream_check_files() (the ancestors' files too), and what each level
 * holds into *chain.
 */
int bo_stream_describe(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		       uint32_t bo_count, struct bo_stream_chain *chain, char *err, size_t errlen);

/* Removes the files of one GPU's images (those that exist); for a dump that fails later. */
void bo_stream_remove(int dir_fd, uint32_t image_id, uint32_t gpu_id);

/* The file name "amdgpu-bo-<image_id>-<gpu_id>.<ext>" (ext "img" or "idx") into buf. */
void bo_stream_file_name(char *buf, size_t len, uint32_t image_id, uint32_t gpu_id,
			 const char *ext);

/*
 * The reverse: 0 and *image_id if name is such a file (decimal numbers,
 * ".img" or ".idx"), -1 for any other name.
 */
int bo_stream_file_image_id(const char *name, uint32_t *image_id);

#endif
