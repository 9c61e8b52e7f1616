// SPDX-License-Identifier: MIT
/*
 * What the criu binary exports to plugins, for unit tests of the plugin's
 * modules: the log goes to stderr (shown by the test runner on failure).
 */
#include <stdarg.h>
#include <stdio.h>

void print_on_level(unsigned int loglevel, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

void print_on_level(unsigned int loglevel, const char *format, ...)
{
	va_list ap;

	(void)loglevel;
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
}
