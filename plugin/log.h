/* SPDX-License-Identifier: MIT */
/*
 * Logging into CRIU's log. print_on_level() is exported by the criu binary
 * that loads us (criu-log.h includes a header CRIU does not ship, so we
 * declare it ourselves). Every line is prefixed "amdgpu_plugin: ".
 */
#ifndef AMDGPU_CRIU_PLUGIN_LOG_H
#define AMDGPU_CRIU_PLUGIN_LOG_H

extern void print_on_level(unsigned int loglevel, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* CRIU's levels (criu/include/log.h) */
#define PLUGIN_LOGLEVEL_ERROR 1
#define PLUGIN_LOGLEVEL_WARN  2
#define PLUGIN_LOGLEVEL_INFO  3
#define PLUGIN_LOGLEVEL_DEBUG 4

#define plugin_log(level, fmt, ...) print_on_level(level, "amdgpu_plugin: " fmt "\n", ##__VA_ARGS__)
#define pr_err(fmt, ...)	    plugin_log(PLUGIN_LOGLEVEL_ERROR, "Error: " fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)	    plugin_log(PLUGIN_LOGLEVEL_WARN, "Warn: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)	    plugin_log(PLUGIN_LOGLEVEL_INFO, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...)	    plugin_log(PLUGIN_LOGLEVEL_DEBUG, fmt, ##__VA_ARGS__)

#endif
