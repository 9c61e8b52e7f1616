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

/*
 * CRIU's log is not thread-safe (one static buffer): a thread of ours that
 * runs beside CRIU's own (the restore's BO copier) logs into a sink of its
 * own instead, which the main thread replays later (log_sink_replay()).
 * Every other thread logs straight into CRIU's log.
 */
struct log_sink {
	char text[4096]; /* whole lines, each "LEVEL<tab>line\n" */
	size_t used;
	unsigned int dropped; /* lines that did not fit */
};

/* The calling thread's sink (NULL: CRIU's log) from now on. */
void log_sink_set(struct log_sink *sink);
/* src's lines after dst's (all or, when they do not fit, none: counted dropped). */
void log_sink_append(struct log_sink *dst, const struct log_sink *src);
/* Main thread: the sink's lines into CRIU's log, each with prefix; empties it. */
void log_sink_replay(struct log_sink *sink, const char *prefix);

void plugin_log_line(unsigned int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define plugin_log(level, fmt, ...)                                                                \
	plugin_log_line(level, "amdgpu_plugin: " fmt "\n", ##__VA_ARGS__)
#define pr_err(fmt, ...)   plugin_log(PLUGIN_LOGLEVEL_ERROR, "Error: " fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)  plugin_log(PLUGIN_LOGLEVEL_WARN, "Warn: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  plugin_log(PLUGIN_LOGLEVEL_INFO, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) plugin_log(PLUGIN_LOGLEVEL_DEBUG, fmt, ##__VA_ARGS__)

#endif
