/* SPDX-License-Identifier: MIT */
/*
 * A model GPU behind the libdrm_amdgpu calls of the SDMA copy engine
 * (datapath/bo_copy_sdma.c), installed in the unit tests in place of the
 * library (gpu_libs_use(), before main()). It keeps a GPU VM (VA ranges handed out upward with an
 * unmapped page between them, so a packet that runs one byte past its range faults), executes IBs
 * (NOP, COPY_LINEAR with count = bytes - 1, CONST_FILL) on the BOs' memory (memfds standing in for
 * dma-bufs, mmapped; userptr BOs are the host buffers themselves), checks that every BO a packet
 * touches is in the submission's BO list, and counts every object so a test can assert that nothing
 * is left. The VM tests run the same engine on kfdsim with the real libdrm_amdgpu.
 */
#ifndef AMDGPU_CRIU_TESTS_FAKE_AMDGPU_H
#define AMDGPU_CRIU_TESTS_FAKE_AMDGPU_H

#include <stdbool.h>
#include <stdint.h>

struct fake_amdgpu {
	/* set by the test */
	uint32_t dma_engines; /* HW_IP_COUNT answer for DMA */
	uint64_t fail_at;     /* the submission (1-based) that fails; 0: none */
	int submit_error;     /* ... at amdgpu_cs_submit (negative errno) */
	int fence_error;      /* ... at the fence wait */
	bool hang;	      /* ... its fence never signals */
	/* counted by the model */
	uint64_t submissions, copy_packets, fill_packets, copy_bytes, fill_bytes;
	uint64_t userptr_bos, imports;
	long live_devices, live_contexts, live_bos, live_maps, live_ranges, live_lists;
	char fault[256]; /* the first GPU fault or misuse, "" if none */
};

extern struct fake_amdgpu fake_gpu;

/* Defaults (2 DMA engines, no failure) and zero counts. */
void fake_amdgpu_reset(void);

/* True when no device, context, BO, mapping, VA range or BO list is left. */
bool fake_amdgpu_all_released(void);

#endif
