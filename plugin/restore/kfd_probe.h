/* SPDX-License-Identifier: MIT */
/*
 * Measures the KFD CRIU private-blob layout of this kernel (the BO record
 * size, 80 or 272 bytes: docs/kfd-facts.md 5.5, 5.11) instead of guessing it
 * from the kernel release, which DKMS drivers and kfdsim's bo_priv_size
 * make wrong. Runs in the CRIU master, before any task is forked, on the
 * plugin's own /dev/kfd (its own KFD process, whose owner it is): one GTT
 * BO is allocated on one GPU and PROCESS_INFO tells the blob size.
 *
 * Afterwards that KFD process keeps a VM on the GPU (the render file's
 * reference is KFD's) until the plugin's /dev/kfd is closed; the render fd
 * itself is closed, and every fd is O_CLOEXEC.
 */
#ifndef AMDGPU_CRIU_KFD_PROBE_H
#define AMDGPU_CRIU_KFD_PROBE_H

#include <stddef.h>
#include <stdint.h>

/*
 * On kfd_fd (owned by the caller, a kfd_dev reference) and the GPU gpu_id
 * with render node minor render_minor: ACQUIRE_VM, one 4 KiB GTT BO inside
 * the GPU's GPUVM aperture, PROCESS_INFO, then always UNPAUSE (after a
 * successful PROCESS_INFO), FREE and close. 0 and *record (80 or 272), or
 * -errno with one line in err.
 */
int kfd_probe_bo_record(int kfd_fd, uint32_t gpu_id, uint32_t render_minor, uint32_t *record,
			char *err, size_t errlen);

#endif
