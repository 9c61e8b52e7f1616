/* SPDX-License-Identifier: MIT */
/*
 * Internals of the amdgpu-criu command-line tool, shared by its source files.
 *
 * Conventions:
 *   - a command handler gets argv starting at the command name and returns
 *     the process exit status (enum cli_exit);
 *   - helpers return 0 or a negative errno; the one that detects a problem
 *     reports it (cli_err), callers only propagate the code;
 *   - stdout carries results only and stays empty when the command fails with
 *     CLI_EXIT_USAGE: output is built completely before anything is printed.
 */
#ifndef AMDGPU_CRIU_TOOLS_CLI_H
#define AMDGPU_CRIU_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "topology/topology.h"

#ifndef AMDGPU_CRIU_VERSION
#define AMDGPU_CRIU_VERSION "0.1.0"
#endif

#define CLI_NAME "amdgpu-criu"

enum cli_exit {
	CLI_EXIT_OK = 0,    /* done; for checks: the answer is "yes" */
	CLI_EXIT_NO = 1,    /* the answer is "no" (e.g. topologies not compatible) */
	CLI_EXIT_USAGE = 2, /* bad invocation or unusable input; nothing on stdout */
};

/* ---- amdgpu-criu.c: errors ------------------------------------------------ */

/* One line on stderr: "amdgpu-criu: <message>". */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Report a getopt_long() failure ('?', or ':' with a leading ':' in optstring) of
 * command `cmd` (NULL: the global options) as one line; returns CLI_EXIT_USAGE.
 */
int cli_bad_option(const char *cmd, int getopt_ret, char *const argv[]);

/* Report arguments left after the options of `cmd`; returns CLI_EXIT_USAGE. */
int cli_extra_args(const char *cmd, int argc, char *const argv[]);

/* ---- commands --------------------------------------------------------------- */

int cmd_topology(int argc, char *argv[]);
void cmd_topology_usage(FILE *out);
int cmd_match(int argc, char *argv[]);
void cmd_match_usage(FILE *out);
int cmd_inspect(int argc, char *argv[]);
void cmd_inspect_usage(FILE *out);
int cmd_check(int argc, char *argv[]);
void cmd_check_usage(FILE *out);
int cmd_options(int argc, char *argv[]);
void cmd_options_usage(FILE *out);
int cmd_cdi(int argc, char *argv[]);
void cmd_cdi_usage(FILE *out);

/*
 * The plugin's options as a restore here would read them (the environment,
 * the options file: options/options.h); 0, or -EINVAL reported as
 * "<cmd>: <the line>".
 */
struct amdgpu_options;
int tool_options_read(const char *cmd, struct amdgpu_options *o);

/* ---- nodelist.c: "2,3,5-7" ------------------------------------------------------ */

#define NODELIST_MAX 4096 /* far above any KFD node count; bounds a range like 0-4000000000 */

struct nodelist {
	uint32_t *nodes; /* in the order given */
	size_t n;
};

/*
 * Parse comma-separated node indexes and inclusive ranges ("2,3,5-7").
 * Rejects empty items, signs, spaces, descending ranges and duplicates.
 * Returns 0 or -EINVAL/-ERANGE/-ENOMEM with a message in errbuf.
 */
int nodelist_parse(const char *text, struct nodelist *out, char *errbuf, size_t errlen);
void nodelist_free(struct nodelist *list);

/* Write ascending `nodes` as "2,3,5-7" (runs of three or more as ranges). */
char *nodelist_format(const uint32_t *nodes, size_t n, char *buf, size_t len);

/* ---- node_format.c: how a node is described ---------------------------------- */

/* Scratch sizes large enough for every formatter below. */
#define FMT_SHORT 32
#define FMT_LONG  64

/* "gfx942" from gfx_target_version 90402; "-" if absent or 0. */
char *fmt_gfx_target(const struct kfd_node *n, char *buf, size_t len);
/* "renderD128"; "-" if the node has no render minor. */
char *fmt_render_node(uint32_t minor, char *buf, size_t len);
/* "0x74a2 MI308X", or "0x74a2" for a device id we have no name for. */
char *fmt_device(const struct kfd_node *n, char *buf, size_t len);
/* Marketing name of a PCI device id, or NULL. */
const char *amdgpu_device_name(uint32_t device_id);
/* "48.0 GiB", "512.0 MiB", "-" for 0. */
char *fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* PCI "domain:bus" of a GPU node: "0001:0b". */
char *fmt_pci_bus(const struct kfd_node *n, char *buf, size_t len);
/* PCI address "0000:0a:00.1" of a GPU node, as AMDGPU_CRIU_GPUS takes it (a partition's function
 * is devfn plus its index, as KFD shows it). */
char *fmt_pci_address(const struct kfd_node *n, char *buf, size_t len);
/* First 8 hex digits of an id ("1d14f3c2"), "-" for 0; JSON has the full value. */
char *fmt_short_id(uint64_t id, char *buf, size_t len);
/* Compute units: simd_count / simd_per_cu (0 if unknown). */
uint32_t node_compute_units(const struct kfd_node *n);

/*
 * Position of a GPU node among the nodes of its physical device (same nonzero
 * unique_id), 1-based. False when the device cannot be told (unique_id 0 or
 * absent).
 */
bool topo_partition_of(const struct kfd_topology *topo, const struct kfd_node *n, size_t *index,
		       size_t *count);

/* ---- node_json.c: a node as JSON (topology, inspect) ------------------------------ */

/* "0x%016x" string for a 64-bit id (JSON readers round big numbers), null for 0. */
int json_put_hex_id(struct json_object *obj, const char *key, uint64_t id);
/* Every key the node's properties file had, as numbers, or NULL (no memory). */
struct json_object *node_properties_json(const struct kfd_node *n);
/* gpu_id, name, render node, device, gfx target, VRAM, compute units, PCI, hive,
 * partition, CPU node of a GPU node, added to jn. 0 or -ENOMEM. */
int node_put_gpu_fields(struct json_object *jn, const struct kfd_topology *topo,
			const struct kfd_node *n);

/* ---- match_args.c, match_out.c: commands that run the matcher (match, check) ------- */

struct match_result;

/* Parse LIST text of option `opt` (NULL text: empty list). 0 or -errno, reported. */
int match_parse_list(const char *cmd, const char *opt, const char *text, struct nodelist *list);
/* Every listed node must exist and be an accessible GPU. 0 or -EINVAL, reported. */
int match_check_gpu_list(const char *cmd, const char *opt, const struct kfd_topology *topo,
			 const struct nodelist *list);
/* topo_load() reported as "<cmd>: <opt>: <error>". */
int match_load_topology(const char *cmd, const char *opt, const char *root,
			struct kfd_topology *topo);

/* {"compatible": true, "map": [...]} or {"compatible": false, "reason": ...}; NULL: no memory */
struct json_object *match_result_json(const struct match_result *res);
/* Print match_result_json(). 0 or -errno (reported). */
int match_print_json(const char *cmd, const struct match_result *res);
/* The map table and the "expose:" line, or "not compatible: <reason>". 0 or -errno. */
int match_print_text(const char *cmd, const struct match_result *res);

/* ---- table.c: aligned text tables ------------------------------------------------ */

struct table_column {
	const char *header;
	bool right; /* right-align (numbers) */
};

struct table {
	const struct table_column *cols;
	size_t n_cols;
	char **cells; /* row-major, n_rows * n_cols, each owned */
	size_t n_rows;
	size_t cap_rows;
};

void table_init(struct table *t, const struct table_column *cols, size_t n_cols);
/* Copy one row of n_cols strings (NULL = empty). 0 or -ENOMEM. */
int table_add_row(struct table *t, const char *const cells[]);
/* Header line and rows, columns two spaces apart, no trailing blanks. */
void table_print(const struct table *t, FILE *out);
void table_free(struct table *t);

/* ---- json_out.c: JSON building on json-c -------------------------------------------- */

/*
 * Add a member to an object. 0 or -ENOMEM. json_put() takes ownership of val
 * (NULL counts as a failed allocation) and releases it on failure.
 */
int json_put(struct json_object *obj, const char *key, struct json_object *val);
int json_put_u64(struct json_object *obj, const char *key, uint64_t v);
int json_put_str(struct json_object *obj, const char *key, const char *s);
int json_put_bool(struct json_object *obj, const char *key, bool v);
int json_put_null(struct json_object *obj, const char *key);
/* s, or null when s is NULL */
int json_put_opt_str(struct json_object *obj, const char *key, const char *s);
/*
 * A string read from an image (or a capture), printed in printable ASCII
 * only: every code point outside it as \uXXXX, so that the value reads back
 * exactly. One that is not UTF-8 (JSON cannot hold it) or longer than 4 KiB
 * is shown as the text output shows it (common/escape.h: escaped, its first
 * 255 bytes or so). json-c itself passes DEL, C1 controls and bytes that
 * are not UTF-8 through to the terminal.
 */
int json_put_untrusted_str(struct json_object *obj, const char *key, const char *s);
/* v, or null when !known */
int json_put_opt_u64(struct json_object *obj, const char *key, uint64_t v, bool known);
/* Append to an array; releases val on failure. */
int json_append(struct json_object *arr, struct json_object *val);

/* The text json_print() prints (without its newline), owned by doc; NULL: no memory. */
const char *json_text(struct json_object *doc);
/* Print one JSON document and a newline on stdout. 0, -ENOMEM or -EIO. */
int json_print(struct json_object *doc);

#endif
