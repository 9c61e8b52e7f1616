// SPDX-License-Identifier: MIT
/* The choice of copy engine per GPU (see copy_engines.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "datapath/bo_stream.h"
#include "datapath/direct_read.h"
#include "plugin/criu_stream.h"
#include "plugin/copy_engines.h"
#include "topology/topology.h"
#include "plugin/log.h"
#include "common/escape.h"

/* -EOPNOTSUPP (logged, with why SDMA is not used) if only SDMA may copy this GPU's BOs. */
static int cpu_allowed(const struct copy_gpu *g, const char *why_not_sdma)
{
	if (!g->small_bar || !g->invisible_bos)
		return 0;
	pr_err("GPU %" PRIu32 ": %" PRIu32 " VRAM BOs that the CPU may not see (a small-BAR GPU, "
	       "BOs not allocated CPU-visible) and no SDMA (%s): refused, rather than make the "
	       "kernel move the application's VRAM for CPU access; let the plugin use SDMA",
	       g->gpu_id, g->invisible_bos, why_not_sdma);
	return -EOPNOTSUPP;
}

int copy_engines_open(const struct copy_engine_opts *opts, const struct copy_gpu *gpus, uint32_t n,
		      struct bo_sdma_engine **sdma, struct bo_stream_gpu *streams)
{
	struct bo_sdma_config cfg = {.fence_timeout_ms = opts->sdma_timeout_ms};
	char why[256];
	uint32_t i;
	int ret;

	memset(sdma, 0, n * sizeof(*sdma));
	for (i = 0; i < n; i++) {
		if (opts->mode == COPY_ENGINE_CPU) {
			snprintf(why, sizeof(why), "AMDGPU_CRIU_COPY_ENGINE=cpu");
			ret = cpu_allowed(&gpus[i], why);
			if (ret)
				goto fail;
			continue;
		}
		cfg.gpu_id = gpus[i].gpu_id;
		cfg.render_minor = gpus[i].render_minor;
		cfg.gfx_target_version = gpus[i].gfx_target_version;
		ret = bo_sdma_engine_open(&cfg, &sdma[i], why, sizeof(why));
		if (!ret) {
			if (streams)
				streams[i].engine = bo_sdma_engine_ops(sdma[i]);
			if (*bo_sdma_engine_libdrm_said(sdma[i]))
				pr_info("GPU %" PRIu32 ": libdrm_amdgpu said: %s", gpus[i].gpu_id,
					bo_sdma_engine_libdrm_said(sdma[i]));
			continue;
		}
		if (opts->mode == COPY_ENGINE_SDMA) {
			pr_err("%s; AMDGPU_CRIU_COPY_ENGINE=sdma asks for SDMA only (auto would "
			       "copy with the CPU)",
			       why);
			goto fail;
		}
		ret = cpu_allowed(&gpus[i], why);
		if (ret)
			goto fail;
		pr_warn("%s; the CPU copies this GPU's BO contents instead (slow for VRAM)", why);
	}
	return 0;
fail:
	copy_engines_close(NULL, gpus, i, sdma, NULL);
	return ret;
}

static uint64_t mib_per_s(uint64_t bytes, uint64_t ns)
{
	return ns ? (uint64_t)((double)bytes / (1 << 20) * 1e9 / (double)ns) : 0;
}

static void log_gpu(const char *what, uint32_t gpu_id, struct bo_sdma_engine *sdma,
		    const struct bo_stream_gpu *stream)
{
	const struct bo_stream_times *t = stream ? &stream->times : NULL;
	struct bo_sdma_stats st = {0};
	uint64_t bytes = 0;
	uint32_t i;

	for (i = 0; stream && i < stream->bo_count; i++)
		bytes += stream->bos[i].size;
	if (sdma) {
		bo_sdma_engine_stats(sdma, &st);
		pr_info("%s GPU %" PRIu32 ": SDMA moved %" PRIu64 " MiB in %" PRIu64
			" submissions, "
			"%" PRIu64 " ms of engine time (%" PRIu64 " MiB/s)",
			what, gpu_id, st.bytes >> 20, st.submissions, st.busy_ns / 1000000,
			mib_per_s(st.bytes, st.busy_ns));
		if (st.early_waits)
			pr_info("%s GPU %" PRIu32 ": %" PRIu64
				" fence waits ended before their time "
				"(the kernel's clock is not this task's: a time namespace?); "
				"waited by our own clock",
				what, gpu_id, st.early_waits);
	} else if (stream && stream->in_place_bytes) {
		pr_info("%s GPU %" PRIu32 ": BO contents moved by the CPU, %" PRIu64
			" KiB of GTT BOs read in place (no staging copy)",
			what, gpu_id, stream->in_place_bytes >> 10);
	} else {
		pr_info("%s GPU %" PRIu32 ": BO contents moved by the CPU", what, gpu_id);
	}
	if (stream && stream->direct_io)
		pr_info("%s GPU %" PRIu32 ": image written with O_DIRECT (no page-cache copy)", what,
			gpu_id);
	else if (stream && stream->write_note[0])
		pr_info("%s GPU %" PRIu32 ": image written through the page cache: %s", what, gpu_id,
			stream->write_note);
	if (stream && stream->direct_read)
		pr_info("%s GPU %" PRIu32 ": image read with O_DIRECT, up to %u requests in flight "
			"(io_uring)",
			what, gpu_id, DIRECT_READ_DEPTH);
	else if (stream && stream->read_note[0])
		pr_info("%s GPU %" PRIu32 ": image read through the page cache: %s", what, gpu_id,
			stream->read_note);
	if (t)
		pr_info("%s GPU %" PRIu32 ": %" PRIu64 " MiB in %" PRIu64 " ms (%" PRIu64
			" MiB/s): copying %" PRIu64 " ms, files %" PRIu64
			" ms, %u%% of the shorter hidden behind the other; CPU %" PRIu64
			" ms (%" PRIu64 " ms/GiB), checksums %" PRIu64 " ms of it",
			what, gpu_id, bytes >> 20, t->wall_ns / 1000000,
			mib_per_s(bytes, t->wall_ns), t->engine_ns / 1000000, t->file_ns / 1000000,
			bo_stream_hidden_permille(t) / 10, t->cpu_ns / 1000000,
			bytes ? (uint64_t)((double)t->cpu_ns / 1e6 * (double)(1 << 30) /
					   (double)bytes)
			      : 0,
			t->checksum_ns / 1000000);
}

enum bo_write_mode copy_write_mode(enum direct_io_mode mode)
{
	switch (mode) {
	case DIRECT_IO_ON:
		return BO_WRITE_DIRECT;
	case DIRECT_IO_OFF:
		return BO_WRITE_BUFFERED;
	default:
		return BO_WRITE_AUTO;
	}
}

void copy_engines_close(const char *what, const struct copy_gpu *gpus, uint32_t n,
			struct bo_sdma_engine **sdma, const struct bo_stream_gpu *streams)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (what)
			log_gpu(what, gpus[i].gpu_id, sdma[i], streams ? &streams[i] : NULL);
		bo_sdma_engine_close(sdma[i]);
		sdma[i] = NULL;
	}
}

struct copy_gpu copy_gpu_of_node(const struct kfd_node *node, uint32_t gpu_id,
				 uint32_t render_minor)
{
	return (struct copy_gpu){.gpu_id = gpu_id,
				 .render_minor = render_minor,
				 .gfx_target_version =
					 (uint32_t)kfd_prop_get(node, KFD_PROP_gfx_target_version),
				 .small_bar = node->vram_heap_type == KFD_HEAP_FB_PRIVATE};
}

int copy_engines_dump(const struct copy_engine_opts *opts, const struct bo_stream_config *cfg,
		      const struct copy_gpu *gpus, uint32_t n, struct bo_stream_gpu *streams,
		      const char *what, char *err, size_t errlen)
{
	struct bo_sdma_engine **sdma = calloc(n + 1, sizeof(*sdma));
	struct bo_stream_config streamed = *cfg;
	int ret;

	criu_stream_config(&streamed); /* under criu --stream: into the image stream */
	if (!sdma)
		return errmsg_set(err, errlen, -ENOMEM, "out of memory for the copy engines");
	ret = copy_engines_open(opts, gpus, n, sdma, streams);
	if (ret)
		errmsg_set(err, errlen, ret, "no copy engine: %s", strerror(-ret));
	else
		ret = bo_stream_dump(&streamed, streams, n, err, errlen);
	copy_engines_close(ret ? NULL : what, gpus, n, sdma, streams);
	free(sdma);
	return ret;
}
