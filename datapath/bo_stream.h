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
 * Streamed images (cfg->stream_open, CRIU's --stream): each GPU's contents are
 * one file amdgpu-bo-<image_id>-<gpu_id>.seq of datapath/bo_seq.h's layout
 * (header with the BO table, one record per chunk in order, all-zero chunks
 * as records without bytes, CRC-64 per chunk, an end record), written by
 * the GPU's file-side thread front to back into the fd stream_open gives
 * (no seek, no index, nothing in dir_fd; chunks of host-memory BOs go
 * through the ring too, to keep the order) and read back the same way by
 * the restore's file-side thread, each chunk's CRC-64 checked on the other
 * thread before it reaches the BO, as for files. A dump's GPUs stream in
 * parallel; a restore's one after the other (the streamer serves one image
 * at a time). No parent: incremental dumps are refused when streaming.
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

#include "datapath/bo_stream_files.h"
#include "datapath/bo_stream_types.h"

/*
 * The share of the shorter side hidden behind the longer one, in 1/1000:
 * (engine + file - wall) / min(engine, file), 0 when either side took no
 * time. 1000: fully overlapped; 0: one after the other.
 */
unsigned int bo_stream_hidden_permille(const struct bo_stream_times *t);

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

#endif
