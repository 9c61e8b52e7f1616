/* SPDX-License-Identifier: MIT */
/*
 * Reading the KFD CRIU private blob (docs/kfd-facts.md section 5) for checks and
 * for people. The plugin stores and returns the blob verbatim and never edits
 * it; this module only walks it, bounds-checked, to learn its layout (the BO
 * record size differs between kernels without a version bump) and what it
 * holds (queues, events, SVM ranges).
 */
#ifndef AMDGPU_CRIU_PRIV_BLOB_H
#define AMDGPU_CRIU_PRIV_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PRIV_BLOB_VERSION   1u	 /* KFD_CRIU_PRIV_VERSION */
#define PRIV_BO_RECORD_OLD  80u	 /* kernels before 6.5: 16 GPU ids per BO record */
#define PRIV_BO_RECORD_NEW  272u /* 6.5 and later: 64 GPU ids */
#define PRIV_QUEUE_FIXED    120u
#define PRIV_EVENT_SIZE	    64u
#define PRIV_MAX_QUEUE_SIZE (64u << 20) /* MQD + control stack of one queue */

enum priv_object_type {
	PRIV_OBJ_QUEUE = 0,
	PRIV_OBJ_EVENT = 1,
	PRIV_OBJ_SVM = 2,
};

struct priv_blob_summary {
	uint32_t version;
	uint32_t xnack_mode;
	uint32_t bo_record_size;
	uint32_t queues;
	uint32_t events;
	uint32_t svm_ranges;
	uint32_t compute_queues; /* internal type 0 */
	uint32_t sdma_queues;	 /* internal types 1 and 4 (SDMA, SDMA over XGMI) */
	uint64_t queue_bytes;	 /* MQD and control-stack bytes of all queues */
};

/*
 * Walks a blob of `len` bytes written for n_devices device buckets, n_bos BO
 * buckets and n_objects objects, assuming BO records of bo_record_size bytes.
 * The walk must end exactly at `len`. Returns 0 and fills *out, or -EINVAL
 * with a one-line reason in err (which record, which offset).
 */
int priv_blob_parse(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t n_bos,
		    uint32_t n_objects, uint32_t bo_record_size, struct priv_blob_summary *out,
		    char *err, size_t errlen);

/*
 * Whether BO `bo` (bucket order) of a blob with bo_record_size records is
 * mapped on the GPU of user id `gpu_id` (its record's mapped_gpuids, which a
 * 0 ends). False when the record lies outside `len`.
 */
bool priv_blob_bo_mapped_on(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t bo,
			    uint32_t bo_record_size, uint32_t gpu_id);

/*
 * The idr handle KFD gave BO `bo` (its record's idr_handle: the low 32 bits
 * of the KFD handle). -EINVAL when the record lies outside `len`.
 */
int priv_blob_bo_idr_handle(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t bo,
			    uint32_t bo_record_size, uint32_t *idr_handle);

/*
 * The BO record size of a blob (PRIV_BO_RECORD_NEW or _OLD): the one with
 * which the walk ends exactly at `len`. When n_bos is 0 both fit and
 * `fallback` is returned. 0 when neither fits.
 */
uint32_t priv_blob_detect_bo_record(const uint8_t *blob, size_t len, uint32_t n_devices,
				    uint32_t n_bos, uint32_t n_objects, uint32_t fallback);

/*
 * The BO record size a kernel writes, from what PROCESS_INFO said of a
 * process with n_bos >= 1 BOs and no objects (no queue, event or SVM range,
 * whose sizes the counts do not tell): (priv_data_size - 8 - 8 * n_devices)
 * / n_bos, which must divide exactly and be PRIV_BO_RECORD_OLD or _NEW.
 * 0 otherwise.
 */
uint32_t priv_blob_bo_record_from_info(uint64_t priv_data_size, uint32_t n_devices, uint32_t n_bos,
				       uint32_t n_objects);

/*
 * The BO record size a kernel of this release (uname -r, e.g. "6.12.48+deb13-amd64")
 * writes and expects: 272 from 6.5 on, 80 before; 0 if the string does not
 * start with MAJOR.MINOR.
 */
uint32_t priv_bo_record_for_release(const char *release);

#endif
