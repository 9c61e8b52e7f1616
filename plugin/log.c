// SPDX-License-Identifier: MIT
/* The plugin's lines into CRIU's log, or into a thread's sink (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin/log.h"

static __thread struct log_sink *thread_sink;

void log_sink_set(struct log_sink *sink)
{
	thread_sink = sink;
}

static void sink_add(struct log_sink *s, unsigned int level, const char *fmt, va_list ap)
{
	size_t room = sizeof(s->text) - s->used;
	int n;

	if (room < 4) {
		s->dropped++;
		return;
	}
	s->text[s->used] = (char)('0' + level % 10);
	n = vsnprintf(s->text + s->used + 1, room - 1, fmt, ap);
	if (n < 0 || (size_t)n >= room - 1) {
		s->text[s->used] = 0; /* cut: the line is dropped, not half kept */
		s->dropped++;
		return;
	}
	s->used += (size_t)n + 2; /* level, text, NUL */
}

void plugin_log_line(unsigned int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (thread_sink) {
		sink_add(thread_sink, level, fmt, ap);
	} else {
		char line[4096];
		int n = vsnprintf(line, sizeof(line), fmt, ap);

		if (n >= (int)sizeof(line)) /* cut: still one line */
			line[sizeof(line) - 2] = '\n';
		print_on_level(level, "%s", line);
	}
	va_end(ap);
}

void log_sink_replay(struct log_sink *s, const char *prefix)
{
	size_t off = 0, len;

	while (off < s->used) {
		len = strlen(s->text + off + 1);
		/* each line as it was, its "amdgpu_plugin: " first, then ours */
		if (!strncmp(s->text + off + 1, "amdgpu_plugin: ", 15))
			print_on_level((unsigned int)(s->text[off] - '0'), "amdgpu_plugin: %s%s",
				       prefix, s->text + off + 1 + 15);
		else
			print_on_level((unsigned int)(s->text[off] - '0'), "%s%s", prefix,
				       s->text + off + 1);
		off += len + 2;
	}
	if (s->dropped)
		print_on_level(
			PLUGIN_LOGLEVEL_WARN,
			"amdgpu_plugin: Warn: %s%u more lines of the BO copier were dropped\n",
			prefix, s->dropped);
	s->used = 0;
	s->dropped = 0;
}

void log_sink_append(struct log_sink *dst, const struct log_sink *src)
{
	size_t room = sizeof(dst->text) - dst->used;

	if (src->used <= room) {
		memcpy(dst->text + dst->used, src->text, src->used);
		dst->used += src->used;
	} else {
		dst->dropped++;
	}
	dst->dropped += src->dropped;
}
