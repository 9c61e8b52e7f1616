// SPDX-License-Identifier: MIT
/*
 * pb_precheck(): the protobuf wire format walked before unpacking (see
 * pb_precheck.h). Wire format: https://protobuf.dev/programming-guides/encoding/
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "images/pb_precheck.h"

enum wire { WIRE_VARINT = 0, WIRE_64 = 1, WIRE_LEN = 2, WIRE_32 = 5 };

#define MAX_FIELDS 32 /* of one message type: counters on the stack */

struct walk {
	const struct pb_limit *limits;
	size_t n_limits;
	uint32_t totals[PB_PRECHECK_MAX_LIMITS]; /* elements so far, per limit */
	uint32_t default_max;
	uint64_t unpacked;
	char *why;
	size_t whylen;
	bool reported; /* why holds the first failure */
};

/* The first failure into why; -EINVAL. */
__attribute__((format(printf, 2, 3))) static int fail(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->reported && w->why && w->whylen) {
		va_start(ap, fmt);
		vsnprintf(w->why, w->whylen, fmt, ap);
		va_end(ap);
	}
	w->reported = true;
	return -EINVAL;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -EINVAL;
}

static enum wire wire_of(ProtobufCType type)
{
	switch (type) {
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return WIRE_64;
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return WIRE_32;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return WIRE_LEN;
	default:
		return WIRE_VARINT;
	}
}

/* Bytes of one element of a repeated field's array in the unpacked struct. */
static size_t element_size(ProtobufCType type)
{
	switch (type) {
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_UINT64:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

static const struct pb_limit *find_limit(const struct walk *w, const ProtobufCMessageDescriptor *d,
					 const ProtobufCFieldDescriptor *f)
{
	for (size_t i = 0; i < w->n_limits; i++)
		if (w->limits[i].desc == d && !strcmp(w->limits[i].field, f->name))
			return &w->limits[i];
	return NULL;
}

static int walk_message(struct walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p,
			const uint8_t *end, unsigned int depth);

/* One field's value at *p (the tag already read); advances *p past it. */
static int walk_value(struct walk *w, const ProtobufCFieldDescriptor *f, enum wire wt,
		      const uint8_t **p, const uint8_t *end, unsigned int depth)
{
	const uint8_t *start = *p;
	uint64_t v;
	int ret = 0;

	switch (wt) {
	case WIRE_VARINT:
		ret = read_varint(p, end, &v);
		break;
	case WIRE_64:
	case WIRE_32:
		if ((size_t)(end - *p) < (wt == WIRE_64 ? 8u : 4u))
			return -EINVAL;
		*p += wt == WIRE_64 ? 8 : 4;
		break;
	case WIRE_LEN:
		if (read_varint(p, end, &v) || v > (uint64_t)(end - *p))
			return -EINVAL;
		*p += v;
		if (f && (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES))
			w->unpacked += v + 1;
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
			ret = walk_message(w, f->descriptor, *p - v, *p, depth + 1);
		break;
	default:
		return -EINVAL;
	}
	/* an unknown field (a newer writer's): protobuf-c keeps it, with a copy of its bytes */
	if (!f)
		w->unpacked += sizeof(ProtobufCMessageUnknownField) + (uint64_t)(*p - start);
	return ret;
}

static int too_many(struct walk *w, const ProtobufCMessageDescriptor *d,
		    const ProtobufCFieldDescriptor *f, const struct pb_limit *lim, uint32_t max)
{
	if (lim && lim->what)
		return fail(w, "more than %u %s", max, lim->what);
	return fail(w, "more than %u %s in one %s", max, f ? f->name : "unknown fields",
		    d->short_name);
}

static int walk_message(struct walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p,
			const uint8_t *end, unsigned int depth)
{
	uint32_t count[MAX_FIELDS + 1] = {0}; /* per field index; [MAX_FIELDS]: unknown */
	const ProtobufCFieldDescriptor *f;
	const struct pb_limit *lim;
	uint64_t key;
	unsigned int idx;
	uint32_t max;
	enum wire wt;

	if (depth > PB_PRECHECK_MAX_DEPTH || d->n_fields > MAX_FIELDS)
		return fail(w, "messages nested too deep");
	w->unpacked += d->sizeof_message;
	while (p < end) {
		if (read_varint(&p, end, &key) || key >> 32 || !(key >> 3))
			return fail(w, "bad field tag in a %s", d->short_name);
		wt = (enum wire)(key & 7);
		f = protobuf_c_message_descriptor_get_field(d, (unsigned int)(key >> 3));
		if (f && wt != wire_of(f->type))
			return fail(w, "field %s of a %s has wire type %u", f->name, d->short_name,
				    (unsigned int)wt);
		idx = f ? (unsigned int)(f - d->fields) : MAX_FIELDS;
		lim = f ? find_limit(w, d, f) : NULL;
		max = lim ? lim->max : w->default_max;
		if ((!f || f->label == PROTOBUF_C_LABEL_REPEATED) && ++count[idx] > max)
			return too_many(w, d, f, lim, max);
		if (lim && lim->total && ++w->totals[lim - w->limits] > lim->total)
			return fail(w, "more than %u %s", lim->total, lim->total_what);
		if (f && f->label == PROTOBUF_C_LABEL_REPEATED)
			w->unpacked += element_size(f->type);
		if (walk_value(w, f, wt, &p, end, depth))
			return fail(w, "truncated or malformed %s", d->short_name);
	}
	return 0;
}

uint64_t pb_precheck_budget(size_t len)
{
	uint64_t small = (uint64_t)len * PB_PRECHECK_RATIO + PB_PRECHECK_SLACK;
	uint64_t big = (uint64_t)len * PB_PRECHECK_BULK_RATIO + PB_PRECHECK_DENSE_MAX;

	return small < big ? small : big;
}

int pb_precheck(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
		const struct pb_limit *limits, size_t n_limits, uint32_t default_max,
		uint64_t *unpacked, char *why, size_t whylen)
{
	struct walk w = {.limits = limits,
			 .n_limits = n_limits,
			 .default_max = default_max,
			 .why = why,
			 .whylen = whylen};
	uint64_t budget = pb_precheck_budget(len);
	int ret;

	if (n_limits > PB_PRECHECK_MAX_LIMITS)
		return fail(&w, "more limits than %u", PB_PRECHECK_MAX_LIMITS);
	ret = walk_message(&w, desc, buf, buf + len, 0);
	if (ret)
		return ret;
	if (unpacked)
		*unpacked = w.unpacked;
	if (w.unpacked > budget)
		return fail(&w,
			    "would take %llu bytes unpacked, more than the %llu its %zu bytes "
			    "allow: not an image the plugin writes",
			    (unsigned long long)w.unpacked, (unsigned long long)budget, len);
	return 0;
}
