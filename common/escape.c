// SPDX-License-Identifier: MIT
/* str_escape(): one printable line from untrusted bytes (see escape.h). */
#include <stdio.h>
#include <string.h>

#include "common/escape.h"

#define DOTS "..."

/* The escaped form of one byte into piece (>= 5 bytes); its length. */
static size_t escape_byte(unsigned char c, char *piece)
{
	if (c == '\\')
		return (size_t)snprintf(piece, 5, "\\\\");
	if (c < 0x20 || c > 0x7e)
		return (size_t)snprintf(piece, 5, "\\x%02x", c);
	piece[0] = (char)c;
	piece[1] = 0;
	return 1;
}

char *str_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *in = (const unsigned char *)(s ? s : "");
	size_t total = 0, out = 0, n, room;
	char piece[5];

	if (!len)
		return buf;
	for (const unsigned char *p = in; *p; p++)
		total += escape_byte(*p, piece);
	/* all of it, or as many whole escapes as leave room for "..." */
	room = total < len ? len - 1 : (len > sizeof(DOTS) ? len - sizeof(DOTS) : 0);
	for (const unsigned char *p = in; *p; p++) {
		n = escape_byte(*p, piece);
		if (out + n > room)
			break;
		memcpy(buf + out, piece, n);
		out += n;
	}
	if (total >= len && out + sizeof(DOTS) <= len) {
		memcpy(buf + out, DOTS, sizeof(DOTS) - 1);
		out += sizeof(DOTS) - 1;
	}
	buf[out] = 0;
	return buf;
}
