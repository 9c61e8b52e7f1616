/* SPDX-License-Identifier: MIT */
/*
 * The plugin's options. One table (options.c) says, for each, its name, its
 * values, its default, the stage that reads it and one line of help; the
 * README's table and the man page are checked against it. options_read()
 * reads the options of one stage once, from the environment and from the
 * options file (options_file.h) through one parser, into a struct
 * amdgpu_options that the caller owns and passes down. Nothing else reads an
 * option: the plugin's sessions and `amdgpu-criu check` both read them here,
 * so the tool judges a checkpoint with the options the restore would use.
 *
 * The environment wins over the file. Values are strict: one of the words
 * listed; numbers in decimal digits only (no sign, blank, 0x or leading
 * zero); paths absolute. An error is one printable line naming the option
 * (or the file and line) and its value, escaped. Single-threaded (init
 * time); nothing allocated outlives a call.
 */
#ifndef AMDGPU_CRIU_OPTIONS_OPTIONS_H
#define AMDGPU_CRIU_OPTIONS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/escape.h"
#include "topology/gpu_select.h"
#include "topology/match.h"

enum options_stage {
	OPTIONS_DUMP = 1 << 0,
	OPTIONS_RESTORE = 1 << 1,
};

/* Who moves BO contents (plugin/copy_engines.h). */
enum copy_engine_mode {
	COPY_ENGINE_AUTO,
	COPY_ENGINE_SDMA,
	COPY_ENGINE_CPU,
};

struct copy_engine_opts {
	enum copy_engine_mode mode;
	uint32_t sdma_timeout_ms; /* bound of one fence wait; 0: the engine's default */
};

/* BOs that several processes share (plugin/dump/bo_share.h). */
enum bo_share_policy {
	BO_SHARE_SHARE,
	BO_SHARE_REFUSE,
	BO_SHARE_COPY,
};

/* How a dump writes BO contents (datapath/bo_stream_types.h, bo_write_mode). */
enum direct_io_mode {
	DIRECT_IO_AUTO,
	DIRECT_IO_ON,
	DIRECT_IO_OFF,
};

/* How GEM handles beyond the probe are counted (plugin/dump/render_audit.h). */
enum render_census {
	RENDER_CENSUS_DEBUGFS,
	RENDER_CENSUS_PROBE,
};

#define OPTIONS_PATH_MAX 256 /* bytes of a path option, its NUL included */

struct amdgpu_options {
	struct copy_engine_opts engine;	 /* AMDGPU_CRIU_COPY_ENGINE, _SDMA_TIMEOUT_MS */
	bool parallel_restore;		 /* AMDGPU_CRIU_PARALLEL_RESTORE */
	enum bo_share_policy shared_bo;	 /* AMDGPU_CRIU_SHARED_BO */
	uint32_t gem_probe;		 /* AMDGPU_CRIU_GEM_PROBE */
	enum render_census gem_census;	 /* AMDGPU_CRIU_GEM_CENSUS */
	char debugfs[OPTIONS_PATH_MAX];	 /* AMDGPU_CRIU_DEBUGFS */
	enum direct_io_mode direct_io;	 /* AMDGPU_CRIU_DIRECT_IO */
	struct gpu_select gpus;		 /* AMDGPU_CRIU_GPUS; none named: every GPU */
	char gpus_shown[ESCAPE_LEN(64)]; /* its value, escaped, for messages; "": unset */
	bool dev_nodes_create;		 /* AMDGPU_CRIU_DEV_NODES */
	struct match_checks checks;	 /* KFD_*_CHECK */
	char file[ESCAPE_LEN(255)];	 /* the options file read, escaped; "": none */
	unsigned int from_file;		 /* options the file set (the environment's win) */
};

/*
 * The environment as options_read() sees it: getenv() in the plugin and the
 * tool, a test's own table in the unit tests. NULL: unset.
 */
typedef const char *(*options_lookup_fn)(const char *name);

/* Every option at its default (file "", nothing from the file). */
void options_default(struct amdgpu_options *o);

/*
 * The options the stages in `stages` read (options of other stages are
 * known names, not checked), from env and the options file it names. 0, or
 * -errno with one line in err; *o is then at its defaults where the error
 * left it, and must not be used for GPU work.
 */
int options_read(struct amdgpu_options *o, unsigned int stages, options_lookup_fn env, char *err,
		 size_t errlen);

/* The same with the options file's text given (`name` in messages); env still wins. */
int options_read_text(struct amdgpu_options *o, unsigned int stages, options_lookup_fn env,
		      const char *text, const char *name, char *err, size_t errlen);

enum option_kind {
	OPTION_WORD,   /* one of words[] (an enum field: the word's index) */
	OPTION_SWITCH, /* words[0] false, words[1] true (a bool field) */
	OPTION_YESNO,  /* 1/yes on, 0/no off, case-insensitive (a bool field) */
	OPTION_NUMBER, /* decimal, min to max (a uint32_t field) */
	OPTION_PATH,   /* absolute, shorter than OPTIONS_PATH_MAX (a char array) */
	OPTION_GPUS,   /* topology/gpu_select.h (the gpus field) */
	OPTION_FILE,   /* the options file's own name: environment only */
};

/* One option: how it is parsed and how the documentation shows it. */
struct option_def {
	const char *name;
	unsigned int stages; /* options_stage bits: who reads it */
	enum option_kind kind;
	size_t offset;		  /* of its field in struct amdgpu_options */
	const char *const *words; /* WORD, SWITCH: the values; NULL-terminated */
	const char *what;	  /* WORD, SWITCH, NUMBER: what a value is ("copy engine") */
	uint32_t min, max;	  /* NUMBER */
	const char *deflt;	  /* the default, as a value would be written; NULL: unset */
	const char *values;	  /* the documentation's values column, if not the words */
	const char *help;	  /* what it chooses: one line */
};

/* The table, in the order the README lists it: *n entries. */
const struct option_def *options_table(size_t *n);

/*
 * The documentation's values column of an option, Markdown, default first:
 * "`auto`, `sdma`, `cpu`". Cut short (never overflowing) if len is too small.
 */
void options_values_text(const struct option_def *d, char *buf, size_t len);

#endif
