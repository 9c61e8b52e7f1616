/* SPDX-License-Identifier: MIT */
/*
 * Strings that come from an image (kernel release, names) shown as text:
 * a hostile image must not reach the terminal with escape sequences or
 * line breaks, nor a log with forged lines. (JSON output: tools/cli.h,
 * json_put_untrusted_str().)
 */
#ifndef AMDGPU_CRIU_ESCAPE_H
#define AMDGPU_CRIU_ESCAPE_H

#include <stddef.h>

/* Output size that holds any string of up to 64 bytes, escaped. */
#define ESCAPE_BUF 260
/* Output size that holds any string of up to n bytes, escaped (4 per byte). */
#define ESCAPE_LEN(n) (4 * (n) + 1)

/*
 * s (NULL: "") into buf with every byte outside printable ASCII (0x20..0x7e)
 * as \xNN and '\' as \\, so the text is one line and reads back exactly.
 * When it does not fit, buf ends in "..." at a whole escape. Returns buf.
 */
char *str_escape(const char *s, char *buf, size_t len);

#endif
