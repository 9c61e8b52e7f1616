/* SPDX-License-Identifier: MIT */
/*
 * Incremental BO images (bo_chain.c), for the bo_stream module only: the
 * parent a dump compares its chunks with, and the ancestors a restore reads
 * referenced chunks from (the format is bo_stream.h's).
 *
 * Dump: bo_parent_open() finds the same GPU's files in the parent image
 * directory, checks that index whole and that the chain it refers to is
 * there (a child must never refer to what cannot be read back), and keeps
 * its BO table (sorted by GPU address) and a window of its entries.
 * bo_parent_lookup() gives the parent's entry of the chunk at the same
 * offset of the same BO.
 *
 * Restore and verify: bo_chain_open() follows the "parent" links from the
 * image directory as deep as the index refers, opens each ancestor's data
 * file and checks its identity (the index checksum and data size the child
 * recorded): a missing or replaced parent is refused before any chunk is
 * read.
 *
 * Errors: negative errno; one line in err, "gpu <id>: <file>: what".
 */
#ifndef AMDGPU_CRIU_BO_CHAIN_H
#define AMDGPU_CRIU_BO_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_index.h"

struct bo_parent;

/*
 * The parent's files of (image_id, gpu_id) in parent_dir_fd, usable for a
 * child with chunks of chunk_size. -ENOENT: no such files (the GPU is new);
 * other errors: present but not usable (err says why). Either way the child
 * is written whole.
 */
int bo_parent_open(int parent_dir_fd, uint32_t image_id, uint32_t gpu_id, uint32_t chunk_size,
		   struct bo_parent **parent, char *err, size_t errlen);
/*
 * The parent's entry for the child's chunk at byte `off` of its BO number
 * bo_index (gpu_va, size), the entry's level counted from the child (the
 * parent is level 1). -ENOENT: the parent has no such BO or the level would
 * pass BO_STREAM_MAX_CHAIN; -EIO: its index could not be read.
 */
int bo_parent_lookup(struct bo_parent *p, uint32_t bo_index, uint64_t gpu_va, uint64_t size,
		     uint64_t off, struct bo_chunk_entry *e);
/* The child's ancestors (the parent, then the parent's): into l (ancestor_count, ancestors). */
void bo_parent_ancestors(const struct bo_parent *p, struct bo_index_layout *l);
void bo_parent_close(struct bo_parent *p);

/* The open data files of ancestors 1..count (data_fd[k - 1]). */
struct bo_chain {
	uint32_t count;
	int data_fd[BO_STREAM_MAX_CHAIN];
	char name[BO_STREAM_MAX_CHAIN][48]; /* each data file's name in its directory */
};

/* Opens and checks the ancestors l refers to (l from bo_index_check()). */
int bo_chain_open(int dir_fd, const struct bo_index_layout *l, struct bo_chain *c, char *err,
		  size_t errlen);
void bo_chain_close(struct bo_chain *c);

#endif
