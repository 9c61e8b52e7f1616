// SPDX-License-Identifier: MIT
/*
 * Small checked wrappers over json-c: every json_object_new_* and *_add can
 * fail on allocation, and a half-built document must never be printed.
 */
#include <errno.h>
#include <stdio.h>

#include "tools/cli.h"

int json_put(struct json_object *obj, const char *key, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val)) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

int json_put_u64(struct json_object *obj, const char *key, uint64_t v)
{
	/* uint64: hive_id and unique_id use all 64 bits */
	return json_put(obj, key, json_object_new_uint64(v));
}

int json_put_str(struct json_object *obj, const char *key, const char *s)
{
	return json_put(obj, key, json_object_new_string(s));
}

int json_put_bool(struct json_object *obj, const char *key, bool v)
{
	return json_put(obj, key, json_object_new_boolean(v));
}

int json_put_null(struct json_object *obj, const char *key)
{
	/* json-c represents null as a NULL member; adding it allocates only the key */
	return json_object_object_add(obj, key, NULL) ? -ENOMEM : 0;
}

int json_put_opt_str(struct json_object *obj, const char *key, const char *s)
{
	return s ? json_put_str(obj, key, s) : json_put_null(obj, key);
}

int json_put_opt_u64(struct json_object *obj, const char *key, uint64_t v, bool known)
{
	return known ? json_put_u64(obj, key, v) : json_put_null(obj, key);
}

int json_append(struct json_object *arr, struct json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_array_add(arr, val)) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

int json_print(struct json_object *doc)
{
	const char *text = json_object_to_json_string_ext(
		doc,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!text)
		return -ENOMEM;
	if (puts(text) == EOF)
		return -EIO;
	return 0;
}
