/* SPDX-License-Identifier: MIT */
/*
 * A walk over a packed protobuf message before protobuf-c unpacks it.
 *
 * protobuf-c allocates everything a message holds before the caller can
 * check a single count: an image of 96 MB holding one node with 16 million
 * empty properties cost 5.7 s and 1.97 GB before our limit on properties
 * per node was looked at (a 2-byte submessage becomes ~50 bytes of structs
 * plus ~32 bytes of scan state). pb_precheck() reads the wire format, driven
 * by the message descriptors, without allocating anything, and refuses:
 *   - malformed wire data (bad tag or varint, length past the end, wire type
 *     other than the descriptor's for a known field, groups, nesting deeper
 *     than PB_PRECHECK_MAX_DEPTH);
 *   - a repeated field with more elements in one message than its limit
 *     (the table the caller passes; fields not in it: default_max), and more
 *     unknown fields in one message than default_max;
 *   - a repeated field with more elements in the whole message tree than
 *     its limit's `total` (the topology's links and properties: 4096 nodes
 *     of 4096 links each were within every per-message limit, 168 MB of
 *     image that took 2.3 GB to read);
 *   - a message whose unpacked form would take more than
 *     PB_PRECHECK_RATIO x its packed size + PB_PRECHECK_SLACK bytes, or
 *     than PB_PRECHECK_BULK_RATIO x its size + PB_PRECHECK_DENSE_MAX.
 * (The scan state protobuf-c keeps while unpacking one message, ~32 bytes
 * per field occurrence, is freed as it goes and bounded by the counts; in
 * test_hostile's measurements all requests together came to 1.5-2.3x the
 * estimate, which matched what protobuf-c kept to the byte.)
 * The unpacked size is what protobuf-c 1.x allocates for the result: each
 * message's struct, the arrays of repeated fields, strings (len + 1), bytes,
 * unknown fields (24 bytes + a copy of the value). The densest message a
 * valid image can hold is a link with only its four required fields, 10
 * bytes of wire for 88 unpacked (8.8x); an empty-keyed property is 6 for
 * 49 (8.2x); BO entries are ~2x, the private data 1x (the synthetic
 * checkpoints of the unit tests measure 1.7x and 2.5x for process images,
 * 3.3x and 4.1x for render images, which are all topology). So 10x + 64 KiB
 * holds every valid image. What is that dense is small in a valid image,
 * though: a topology (a 65-node MI300X's is ~0.6 MB unpacked, and the
 * totals bound any), BO entries (~2.6x alone, but each has a record of at
 * least 80 bytes in the private data: under 2x together), GEM BOs with a
 * mapping (~4x: 32 MiB of slack is 400000 of them); a big image is big for
 * its private data (1x). So past 4 MB the budget is 2x + 32 MiB, and
 * reading an image costs at most ~3x its size (the file, then the message)
 * + 32 MiB, where 10x let a 168 MB image of links take 2.3 GB (14x) and
 * the 1 GiB file cap of kfd_image.h ~14 GiB. The per-field counts refuse
 * the cheap bombs (16 million properties of one node) at the first element
 * past the limit. Time is linear in the size, memory constant.
 */
#ifndef AMDGPU_CRIU_PB_PRECHECK_H
#define AMDGPU_CRIU_PB_PRECHECK_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#define PB_PRECHECK_MAX_DEPTH  8
#define PB_PRECHECK_RATIO      10u
#define PB_PRECHECK_SLACK      (64u << 10)
#define PB_PRECHECK_BULK_RATIO 2u
#define PB_PRECHECK_DENSE_MAX  (32u << 20)
#define PB_PRECHECK_MAX_LIMITS 16u

/*
 * At most `max` elements of the repeated field `field` in one `desc`
 * message, and (total != 0) at most `total` in the whole message tree.
 */
struct pb_limit {
	const ProtobufCMessageDescriptor *desc;
	const char *field;
	uint32_t max;
	const char *what; /* for the message: "properties of a node" */
	uint32_t total;
	const char *total_what; /* "topology properties" */
};

/* The most protobuf-c may unpack from len bytes: the budget above. */
uint64_t pb_precheck_budget(size_t len);

/*
 * 0 if buf[0..len-1] may be unpacked as a `desc` message, else -EINVAL and
 * why (a phrase, no file name). *unpacked (if non-NULL): the bytes
 * protobuf-c will allocate for it. At most PB_PRECHECK_MAX_LIMITS limits.
 */
int pb_precheck(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
		const struct pb_limit *limits, size_t n_limits, uint32_t default_max,
		uint64_t *unpacked, char *why, size_t whylen);

#endif
