// SPDX-License-Identifier: MIT
/*
 * Bounds-checked walk of the KFD CRIU private blob. Records are packed with
 * no alignment (queue objects have variable size), so every field is read
 * with memcpy at a checked offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "images/priv_blob.h"

struct cursor {
	const uint8_t *blob;
	size_t len;
	size_t off;
};

static int take(struct cursor *c, size_t n)
{
	if (n > c->len - c->off)
		return -EINVAL;
	c->off += n;
	return 0;
}

static uint32_t get32(const struct cursor *c, size_t at)
{
	uint32_t v;

	memcpy(&v, c->blob + c->off + at, sizeof(v));
	return v;
}

static int walk_queue(struct cursor *c, struct priv_blob_summary *s)
{
	uint32_t type, ctl, mqd;

	if (PRIV_QUEUE_FIXED > c->len - c->off)
		return -EINVAL;
	type = get32(c, 68);
	ctl = get32(c, 108);
	mqd = get32(c, 112);
	if ((uint64_t)ctl + mqd > PRIV_MAX_QUEUE_SIZE)
		return -EINVAL;
	if (take(c, PRIV_QUEUE_FIXED + (size_t)ctl + mqd))
		return -EINVAL;
	s->queues++;
	s->queue_bytes += (uint64_t)ctl + mqd;
	if (type == 0)
		s->compute_queues++;
	else if (type == 1 || type == 4)
		s->sdma_queues++;
	return 0;
}

static int walk_objects(struct cursor *c, uint32_t n_devices, uint32_t n_objects,
			struct priv_blob_summary *s, char *err, size_t errlen)
{
	size_t svm_size = 24 + 8 * (4 + (size_t)n_devices);
	uint32_t i, type;
	size_t at;
	int ret;

	for (i = 0; i < n_objects; i++) {
		at = c->off;
		if (c->len - c->off < 8)
			return errmsg_set(err, errlen, -EINVAL,
					  "object %u at byte %zu: truncated header", i, at);
		type = get32(c, 0);
		switch (type) {
		case PRIV_OBJ_QUEUE:
			ret = walk_queue(c, s);
			break;
		case PRIV_OBJ_EVENT:
			ret = take(c, PRIV_EVENT_SIZE);
			s->events += !ret;
			break;
		case PRIV_OBJ_SVM:
			ret = take(c, svm_size);
			s->svm_ranges += !ret;
			break;
		default:
			return errmsg_set(err, errlen, -EINVAL,
					  "object %u at byte %zu: unknown type %u", i, at, type);
		}
		if (ret)
			return errmsg_set(err, errlen, -EINVAL,
					  "object %u (type %u) at byte %zu overruns the blob", i,
					  type, at);
	}
	if (c->off != c->len)
		return errmsg_set(err, errlen, -EINVAL, "%zu bytes left after the last object",
				  c->len - c->off);
	return 0;
}

int priv_blob_parse(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t n_bos,
		    uint32_t n_objects, uint32_t bo_record_size, struct priv_blob_summary *out,
		    char *err, size_t errlen)
{
	struct cursor c = {.blob = blob, .len = len};
	struct priv_blob_summary s = {.bo_record_size = bo_record_size};
	uint64_t head;

	if (!blob && len)
		return errmsg_set(err, errlen, -EINVAL, "no blob");
	if (bo_record_size != PRIV_BO_RECORD_OLD && bo_record_size != PRIV_BO_RECORD_NEW)
		return errmsg_set(err, errlen, -EINVAL, "BO record size %u is neither %u nor %u",
				  bo_record_size, PRIV_BO_RECORD_OLD, PRIV_BO_RECORD_NEW);
	head = 8 + 8ull * n_devices + (uint64_t)n_bos * bo_record_size;
	if (head > len)
		return errmsg_set(
			err, errlen, -EINVAL,
			"blob of %zu bytes is too short for %u devices and %u BO records of %u",
			len, n_devices, n_bos, bo_record_size);
	s.version = get32(&c, 0);
	s.xnack_mode = get32(&c, 4);
	c.off = head;
	if (walk_objects(&c, n_devices, n_objects, &s, err, errlen))
		return -EINVAL;
	if (out)
		*out = s;
	return 0;
}

uint32_t priv_blob_detect_bo_record(const uint8_t *blob, size_t len, uint32_t n_devices,
				    uint32_t n_bos, uint32_t n_objects, uint32_t fallback)
{
	static const uint32_t sizes[] = {PRIV_BO_RECORD_NEW, PRIV_BO_RECORD_OLD};
	uint32_t found = 0;
	size_t i;

	if (!n_bos)
		return priv_blob_parse(blob, len, n_devices, 0, n_objects, PRIV_BO_RECORD_NEW, NULL,
				       NULL, 0)
			       ? 0
			       : fallback;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (priv_blob_parse(blob, len, n_devices, n_bos, n_objects, sizes[i], NULL, NULL,
				    0))
			continue;
		if (found) /* both walk to the end: ambiguous, trust the kernel release */
			return fallback;
		found = sizes[i];
	}
	return found;
}

uint32_t priv_blob_bo_record_from_info(uint64_t priv_data_size, uint32_t n_devices, uint32_t n_bos,
				       uint32_t n_objects)
{
	/* the head of priv_blob_parse(): process record, device records */
	uint64_t head = 8 + 8ull * n_devices, rec;

	if (!n_bos || n_objects || priv_data_size < head)
		return 0;
	if ((priv_data_size - head) % n_bos)
		return 0;
	rec = (priv_data_size - head) / n_bos;
	return rec == PRIV_BO_RECORD_OLD || rec == PRIV_BO_RECORD_NEW ? (uint32_t)rec : 0;
}

uint32_t priv_bo_record_for_release(const char *release)
{
	unsigned long major, minor;
	char *end;

	if (!release)
		return 0;
	major = strtoul(release, &end, 10);
	if (end == release || *end != '.')
		return 0;
	release = end + 1;
	minor = strtoul(release, &end, 10);
	if (end == release)
		return 0;
	if (major > 6 || (major == 6 && minor >= 5))
		return PRIV_BO_RECORD_NEW;
	return PRIV_BO_RECORD_OLD;
}

int priv_blob_bo_idr_handle(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t bo,
			    uint32_t bo_record_size, uint32_t *idr_handle)
{
	uint64_t at = 8 + 8ull * n_devices + (uint64_t)bo * bo_record_size;

	if (bo_record_size < 16 || at + bo_record_size > len)
		return -EINVAL;
	memcpy(idr_handle, blob + at + 8, sizeof(*idr_handle));
	return 0;
}

bool priv_blob_bo_mapped_on(const uint8_t *blob, size_t len, uint32_t n_devices, uint32_t bo,
			    uint32_t bo_record_size, uint32_t gpu_id)
{
	uint64_t at = 8 + 8ull * n_devices + (uint64_t)bo * bo_record_size;
	uint32_t slots, i, id;

	if (bo_record_size < 16 || at + bo_record_size > len || !gpu_id)
		return false;
	slots = (bo_record_size - 12) / 4;
	for (i = 0; i < slots; i++) {
		memcpy(&id, blob + at + 12 + 4ull * i, sizeof(id));
		if (!id)
			break;
		if (id == gpu_id)
			return true;
	}
	return false;
}
