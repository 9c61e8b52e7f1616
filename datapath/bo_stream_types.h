/* SPDX-License-Identifier: MIT */
/*
 * The types and limits of the BO data path: what a copy engine is, what a
 * BO, a GPU's stream and a stream's configuration are (the contract of
 * using them is bo_stream.h's). The data path's parts (index, chain,
 * pipeline, engines) include this, not bo_stream.h.
 */
#ifndef AMDGPU_CRIU_DATAPATH_BO_STREAM_TYPES_H
#define AMDGPU_CRIU_DATAPATH_BO_STREAM_TYPES_H

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
	/* CPU time of the GPU's two threads (user and system): what the data
	 * path cost the host, waits not counted */
	uint64_t cpu_ns;
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
	 * copy), as cfg->write_mode asks and the file system allows; else
	 * through the page cache, write_note saying why */
	bool direct_io;
	char write_note[160];
	/* out, dump: bytes checksummed and written from the BO in place
	 * (host_memory above), not through the staging ring */
	uint64_t in_place_bytes;
	/* out, restore: the data file was read with O_DIRECT into the staging
	 * ring, requests in flight by io_uring (datapath/direct_read.h); else
	 * through the page cache, read_note saying why */
	bool direct_read;
	char read_note[160];
};

/*
 * How a dump writes the data file (bo_stream_config.write_mode).
 * AUTO: its page-aligned runs with O_DIRECT from the staging ring (no
 * page-cache copy, no page cache filled with images: behind SDMA the
 * checksum pass is the only time the CPU touches the bytes) when the file
 * has at least direct_min bytes and is not on tmpfs, through the page
 * cache otherwise. With
 * O_DIRECT, GTT BOs go through staging too (O_DIRECT cannot write from a
 * dma-buf mapping): on make bench's GTT BOs that cost less CPU than
 * writing them in place through the page cache (docs/measurements.md).
 * DIRECT: with O_DIRECT whatever the size. BUFFERED: through the page
 * cache. O_DIRECT refused: through the page cache, bo_stream_gpu.write_note
 * says why.
 */
enum bo_write_mode { BO_WRITE_AUTO, BO_WRITE_DIRECT, BO_WRITE_BUFFERED };

/*
 * How a restore reads the data file (bo_stream_config.read_mode).
 * AUTO: with O_DIRECT and io_uring into the staging ring (no page-cache
 * copy: behind SDMA the checksum pass is the only time the CPU touches the
 * bytes) when the file has at least direct_min bytes; through the page
 * cache otherwise (small files are quicker from there). The CPU engine
 * too: its restores through staging took less CPU so, at the same speed
 * (docs/measurements.md). DIRECT: with O_DIRECT whatever the size. BUFFERED:
 * through the page cache. O_DIRECT refused (tmpfs) or no io_uring: through
 * the page cache, bo_stream_gpu.read_note says why.
 */
enum bo_read_mode { BO_READ_AUTO, BO_READ_DIRECT, BO_READ_BUFFERED };
#define BO_STREAM_DIRECT_MIN (64ull << 20)

/*
 * BO_WRITE_AUTO's rule for a data file of `bytes` at fd (min: the config's
 * direct_min, 0 for BO_STREAM_DIRECT_MIN): true and a short reason in why
 * (may be NULL with len 0) when it is written through the page cache, false
 * when with O_DIRECT (where the file system takes it).
 */
bool bo_stream_auto_buffered(int fd, uint64_t bytes, uint64_t min, char *why, size_t len);

/*
 * Progress of one GPU: bytes copied so far and in total. Called from the
 * GPU's threads (several GPUs concurrently), every `progress_step` bytes and
 * once at the end; it must be thread-safe and quick.
 */
typedef void (*bo_stream_progress_fn)(void *arg, uint32_t gpu_id, uint64_t done, uint64_t total);

/*
 * Streamed images: the fd of the image file `name`, to write (dump) or to
 * read (restore) front to back, never seeked (a pipe); -errno. The stream
 * closes it.
 */
typedef int (*bo_stream_open_fn)(void *arg, const char *name, enum bo_access access);

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
	/* Dump: how the data file is written (above); 0 is AUTO */
	enum bo_write_mode write_mode;
	/* Restore: how the data file is read (above); 0 is AUTO */
	enum bo_read_mode read_mode;
	/* AUTO, both ways: smaller data files go through the page cache;
	 * 0: BO_STREAM_DIRECT_MIN */
	uint64_t direct_min;
	/*
	 * Dump: write only what changed since the images in parent_dir_fd (a
	 * directory fd; the stream reads it, never writes it). A GPU whose files
	 * are not there or not usable there is written whole (parent_note says
	 * why). Restore and verify follow "parent" links from dir_fd instead.
	 */
	bool has_parent;
	int parent_dir_fd;
	/*
	 * Streamed images (CRIU's --stream): each GPU's contents are one
	 * stream of datapath/bo_seq.h's layout, amdgpu-bo-<image_id>-<gpu_id>.seq,
	 * through the fd stream_open returns, instead of the .img and .idx
	 * files in dir_fd (which may then be -1). Not with has_parent. A
	 * restore reads the GPUs' streams one after the other, each whole
	 * before the next is opened; NULL: files in dir_fd.
	 */
	bo_stream_open_fn stream_open;
	void *stream_arg;
	bo_stream_progress_fn progress; /* may be NULL */
	void *progress_arg;
	uint64_t progress_step; /* 0: default */
};

#endif
