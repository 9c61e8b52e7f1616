/* SPDX-License-Identifier: MIT */
/*
 * The plugin's images in a CRIU image directory, as the tool's checkpoint
 * commands (inspect, check) see them. Same conventions as cli.h: functions
 * report their own errors (cli_err, prefixed with the command) and return
 * 0 or a negative errno.
 */
#ifndef AMDGPU_CRIU_TOOLS_CKPT_H
#define AMDGPU_CRIU_TOOLS_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checkpoint/ckpt.h"
#include "datapath/bo_stream.h"
#include "images/kfd_image.h"

/* ---- ckpt_open.c: a directory's checkpoint (checkpoint/ckpt.h), errors reported ------ */

/*
 * Opens dir and loads it (ckpt_load()); -ENOENT (reported) when it holds no
 * amdgpu image at all. tool_ckpt_close() closes the directory too.
 */
int tool_ckpt_open(const char *cmd, const char *dir, struct ckpt *ck);
void tool_ckpt_close(struct ckpt *ck);
/* ckpt_source_build() and ckpt_check_contents(), reported. */
int tool_ckpt_source(const char *cmd, const struct ckpt *ck, struct ckpt_source *src);
int tool_ckpt_contents(const char *cmd, const struct ckpt *ck);

/* ---- inspect_report.c: what inspect shows per GPU ------------------------------------ */

enum bo_kind {
	BO_KIND_VRAM,
	BO_KIND_GTT,
	BO_KIND_USERPTR,
	BO_KIND_DOORBELL,
	BO_KIND_MMIO_REMAP,
	BO_KIND_OTHER, /* no type bit */
	BO_KIND__COUNT,
};

/* "VRAM", ... (upper case) and "vram", ... (JSON keys) */
const char *bo_kind_name(enum bo_kind kind);
const char *bo_kind_key(enum bo_kind kind);
enum bo_kind bo_kind_of(uint32_t alloc_flags);

struct bo_tally {
	uint32_t count;
	uint64_t bytes;
};

struct gpu_verify {
	bool done;		      /* verification ran for this GPU */
	int ret;		      /* 0: intact */
	uint32_t bo;		      /* image BO index of the fault (fault.located) */
	struct bo_stream_fault fault; /* bo_index: among this GPU's content BOs */
	char err[512];		      /* bo_stream's words: its own BO numbering */
	/*
	 * What text and JSON both show: the damage in the image's terms, without
	 * the GPU (their line or object names it), e.g. "BO 7 (VRAM), byte
	 * offset 16384 (0x4000): checksum mismatch in ...".
	 */
	char msg[640];
};

struct gpu_report {
	const KfdDeviceEntry *dev;
	const struct kfd_node *node; /* in the process image's topology */
	struct bo_tally bos[BO_KIND__COUNT];
	uint64_t content_bytes;
	uint32_t content_bos;
	struct gpu_verify verify;
	/* where the contents are (incremental images); levels 0 when whole or unknown */
	struct bo_stream_chain chain;
};

struct proc_report {
	const struct kfd_process_image *img;
	struct gpu_report *gpus; /* parallel to img->entry->devices */
	size_t n_gpus;
};

/* A render file's GEM BO contents (--verify): fault.bo_index is its gem_bos index. */
struct render_verify {
	bool done; /* the file has GEM BOs and verification ran */
	int ret;
	struct bo_stream_fault fault;
	char msg[640]; /* "GEM handle H, byte offset ...: ..." or bo_stream's words */
};

struct inspect_report {
	const struct ckpt *ck;
	struct proc_report *procs;     /* parallel to ck->procs */
	struct render_verify *renders; /* parallel to ck->renders */
	bool verify;
	bool damaged; /* some GPU or render file failed verification */
};

int inspect_report_build(const char *cmd, const struct ckpt *ck, bool verify,
			 struct inspect_report *rep);
void inspect_report_free(struct inspect_report *rep);

/* ---- inspect_text.c, inspect_json.c ---------------------------------------------------- */

/* Text into out (a memory stream: nothing reaches stdout if a later step fails). */
int inspect_print_text(FILE *out, const struct inspect_report *rep);
/* One JSON document on stdout. */
int inspect_print_json(const struct inspect_report *rep);

#endif
