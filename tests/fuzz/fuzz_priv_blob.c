// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the KFD private-blob walker (images/priv_blob.h).
 *
 * Input: an 8-byte header, then the blob.
 *   0  u8  n_devices
 *   1  u8  BO record size: 0 -> 80 (old), 1 -> 272 (new), else the value itself
 *   2  u16 n_bos (little-endian)
 *   4  u32 n_objects (little-endian)
 *   8  ...  the blob
 * Invariants checked on a blob that parses with record size R: every object
 * is counted once (queues + events + SVM ranges == n_objects), the queue
 * bytes fit in the blob, priv_blob_detect_bo_record() with fallback R says
 * R, and without objects priv_blob_bo_record_from_info() derives R from the
 * size alone. A failure has a one-line message.
 */
#include <string.h>

#include "fuzz_common.h"
#include "images/priv_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le(const uint8_t *p, size_t n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void check_release(const uint8_t *data, size_t size)
{
	char release[65];
	size_t n = size < sizeof(release) - 1 ? size : sizeof(release) - 1;
	uint32_t rec;

	memcpy(release, data, n);
	release[n] = 0;
	rec = priv_bo_record_for_release(release);
	FUZZ_ASSERT(!rec || rec == PRIV_BO_RECORD_OLD || rec == PRIV_BO_RECORD_NEW,
		    "release '%s' gives record size %u", release, rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct priv_blob_summary s;
	uint32_t n_devices, n_bos, n_objects, record, detected;
	const uint8_t *blob;
	size_t len;
	char err[256] = "";

	if (size < 8)
		return 0;
	n_devices = data[0];
	record = data[1] == 0 ? PRIV_BO_RECORD_OLD : data[1] == 1 ? PRIV_BO_RECORD_NEW : data[1];
	n_bos = le(data + 2, 2);
	n_objects = le(data + 4, 4);
	blob = data + 8;
	len = size - 8;
	check_release(blob, len);
	if (priv_blob_parse(blob, len, n_devices, n_bos, n_objects, record, &s, err, sizeof(err))) {
		fuzz_check_errmsg(err, NULL);
		return 0;
	}
	FUZZ_ASSERT((uint64_t)s.queues + s.events + s.svm_ranges == n_objects,
		    "%u queues + %u events + %u SVM ranges for %u objects", s.queues, s.events,
		    s.svm_ranges, n_objects);
	FUZZ_ASSERT(s.compute_queues + s.sdma_queues <= s.queues, "queue types over-counted");
	FUZZ_ASSERT(s.queue_bytes <= len, "%llu queue bytes in a %zu-byte blob",
		    (unsigned long long)s.queue_bytes, len);
	FUZZ_ASSERT(s.bo_record_size == record, "summary record size %u, walked with %u",
		    s.bo_record_size, record);
	detected = priv_blob_detect_bo_record(blob, len, n_devices, n_bos, n_objects, record);
	FUZZ_ASSERT(detected == record, "walks with record size %u, detected %u", record, detected);
	if (!n_objects && n_bos) {
		detected = priv_blob_bo_record_from_info(len, n_devices, n_bos, 0);
		FUZZ_ASSERT(detected == record, "size %zu gives record %u, walked with %u", len,
			    detected, record);
	}
	return 0;
}
