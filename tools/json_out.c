// SPDX-License-Identifier: MIT
/*
 * Small checked wrappers over json-c: every json_object_new_* and *_add can
 * fail on allocation, and a half-built document must never be printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "common/escape.h"

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

/* Longer untrusted strings are shown as the text output shows them: escaped, shortened. */
#define UNTRUSTED_EXACT_MAX 4096u

/* The code point of the UTF-8 sequence at p (0 < its length <= 4), or -1. */
static long utf8_next(const unsigned char *p, size_t *len)
{
	static const long min[5] = {0, 0, 0x80, 0x800, 0x10000};
	size_t n = *p < 0x80	     ? 1
		   : (*p >> 5) == 6  ? 2
		   : (*p >> 4) == 14 ? 3
		   : (*p >> 3) == 30 ? 4
				     : 0;
	long cp = n == 1 ? *p : n ? *p & (0x3f >> (n - 1)) : -1;

	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and code points past Unicode's are not UTF-8 */
	if (!n || cp < min[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return -1;
	*len = n;
	return cp;
}

/* Appends cp as JSON: printable ASCII as is (" and \ escaped), all else as \uXXXX. */
static char *json_code_point(char *out, long cp)
{
	if (cp >= 0x20 && cp <= 0x7e) {
		if (cp == '"' || cp == '\\')
			*out++ = '\\';
		*out++ = (char)cp;
		return out;
	}
	if (cp >= 0x10000) /* a surrogate pair */
		return out + sprintf(out, "\\u%04lx\\u%04lx", 0xd800 + ((cp - 0x10000) >> 10),
				     0xdc00 + ((cp - 0x10000) & 0x3ff));
	return out + sprintf(out, "\\u%04lx", cp);
}

/*
 * The JSON literal of s in printable ASCII (malloc'd), exact when s is
 * UTF-8 of at most UNTRUSTED_EXACT_MAX bytes; else of its escaped text.
 */
static char *untrusted_literal(const char *s)
{
	size_t n = strlen(s), len, i;
	char shown[ESCAPE_LEN(255)], *lit, *out;
	long cp = 0;

	for (i = 0; n <= UNTRUSTED_EXACT_MAX && i < n; i += len)
		if ((cp = utf8_next((const unsigned char *)s + i, &len)) < 0)
			break;
	if (n > UNTRUSTED_EXACT_MAX || cp < 0) {
		s = str_escape(s, shown, sizeof(shown)); /* printable ASCII */
		n = strlen(s);
	}
	lit = malloc(n * 6 + 3); /* at most 6 bytes per byte ("\\u0001"), and quotes */
	if (!lit)
		return NULL;
	out = lit;
	*out++ = '"';
	for (i = 0; i < n; i += len)
		out = json_code_point(out, utf8_next((const unsigned char *)s + i, &len));
	*out++ = '"';
	*out = 0;
	return lit;
}

int json_put_untrusted_str(struct json_object *obj, const char *key, const char *s)
{
	struct json_object *val = json_object_new_string(s ? s : "");
	char *lit = untrusted_literal(s ? s : "");

	if (!val || !lit) {
		json_object_put(val);
		free(lit);
		return -ENOMEM;
	}
	/* the value stays s for readers of the object; printed, it is the literal */
	json_object_set_serializer(val, json_object_userdata_to_json_string, lit,
				   json_object_free_userdata);
	return json_put(obj, key, val);
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

const char *json_text(struct json_object *doc)
{
	return json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_SPACED |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
}

int json_print(struct json_object *doc)
{
	const char *text = json_text(doc);

	if (!text)
		return -ENOMEM;
	if (puts(text) == EOF)
		return -EIO;
	return 0;
}
