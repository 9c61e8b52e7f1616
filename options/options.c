// SPDX-License-Identifier: MIT
/*
 * The options table and its one parser (options.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "options/options.h"
#include "options/options_file.h"

/* WORD fields are enums written as int: they must be one. */
_Static_assert(sizeof(enum copy_engine_mode) == sizeof(int), "copy_engine_mode is an int");
_Static_assert(sizeof(enum bo_share_policy) == sizeof(int), "bo_share_policy is an int");
_Static_assert(sizeof(enum render_census) == sizeof(int), "render_census is an int");

#define BOTH	 (OPTIONS_DUMP | OPTIONS_RESTORE)
#define FIELD(f) offsetof(struct amdgpu_options, f)

static const char *const engine_words[] = {"auto", "sdma", "cpu", NULL};
static const char *const share_words[] = {"share", "refuse", "copy", NULL};
static const char *const census_words[] = {"debugfs", "probe", NULL};
static const char *const off_on[] = {"0", "1", NULL};
static const char *const direct_io_words[] = {"auto", "1", "0", NULL};
static const char *const keep_create[] = {"keep", "create", NULL};

#define KFD_CHECK(var, field, what)                                                                \
	{                                                                                          \
		.name = var, .stages = OPTIONS_RESTORE, .kind = OPTION_YESNO,                      \
		.offset = FIELD(checks.field), .deflt = "1", .values = "`1`/`yes`, `0`/`no`",      \
		.help = "the restore's GPU match compares " what                                   \
	}

static const struct option_def table[] = {
	{.name = OPTIONS_FILE_ENV,
	 .stages = BOTH,
	 .kind = OPTION_FILE,
	 .values = "unset (`" OPTIONS_FILE_DEFAULT "` if it exists), or a path",
	 .help = "the options file (environment only; the environment's options win)"},
	{.name = "AMDGPU_CRIU_COPY_ENGINE",
	 .stages = BOTH,
	 .kind = OPTION_WORD,
	 .offset = FIELD(engine.mode),
	 .words = engine_words,
	 .what = "copy engine",
	 .deflt = "auto",
	 .help = "who moves BO contents: SDMA where the GPU takes it, else the CPU; SDMA only; "
		 "the CPU only"},
	{.name = "AMDGPU_CRIU_SDMA_TIMEOUT_MS",
	 .stages = BOTH,
	 .kind = OPTION_NUMBER,
	 .offset = FIELD(engine.sdma_timeout_ms),
	 .what = "milliseconds",
	 .min = 1,
	 .max = UINT32_MAX,
	 .deflt = "60000",
	 .help = "bound of one SDMA fence wait: a hung engine is an error naming the GPU"},
	{.name = "AMDGPU_CRIU_PARALLEL_RESTORE",
	 .stages = OPTIONS_RESTORE,
	 .kind = OPTION_SWITCH,
	 .offset = FIELD(parallel_restore),
	 .words = off_on,
	 .what = "switch",
	 .deflt = "1",
	 .help = "the master writes BO contents while CRIU restores memory (0: each task its "
		 "own)"},
	{.name = "AMDGPU_CRIU_SHARED_BO",
	 .stages = OPTIONS_DUMP,
	 .kind = OPTION_WORD,
	 .offset = FIELD(shared_bo),
	 .words = share_words,
	 .what = "sharing policy",
	 .deflt = "share",
	 .help = "BOs several processes share (dma-buf IPC): saved once, refused, or saved "
		 "per process"},
	{.name = "AMDGPU_CRIU_GEM_PROBE",
	 .stages = OPTIONS_DUMP,
	 .kind = OPTION_NUMBER,
	 .offset = FIELD(gem_probe),
	 .what = "handles",
	 .min = 0,
	 .max = INT32_MAX,
	 .deflt = "4096",
	 .help = "GEM handles probed on kernels before 6.18"},
	{.name = "AMDGPU_CRIU_GEM_CENSUS",
	 .stages = OPTIONS_DUMP,
	 .kind = OPTION_WORD,
	 .offset = FIELD(gem_census),
	 .words = census_words,
	 .what = "census",
	 .deflt = "debugfs",
	 .help = "how GEM handles beyond the probe are counted before 6.18"},
	{.name = "AMDGPU_CRIU_DEBUGFS",
	 .stages = OPTIONS_DUMP,
	 .kind = OPTION_PATH,
	 .offset = FIELD(debugfs),
	 .deflt = "/sys/kernel/debug",
	 .help = "where debugfs is mounted"},
	{.name = "AMDGPU_CRIU_DIRECT_IO",
	 .stages = OPTIONS_DUMP,
	 .kind = OPTION_WORD,
	 .offset = FIELD(direct_io),
	 .words = direct_io_words,
	 .what = "mode",
	 .deflt = "auto",
	 .help = "dumps write BO contents with O_DIRECT, bypassing the page cache: from 64 MiB "
		 "per GPU, not on tmpfs; always; never"},
	{.name = GPU_SELECT_ENV,
	 .stages = OPTIONS_RESTORE,
	 .kind = OPTION_GPUS,
	 .values = "unset (every GPU), or GPUs by render node, gpu_id, PCI address or unique_id: "
		   "`renderD130,renderD131`, `/dev/dri/renderD130`, `0xbeef`, `48879`, "
		   "`0000:c1:00.0`, `93bb3629c01aea1c`",
	 .help = "the local GPUs a restore may use (containers, device plugins); one no GPU "
		 "here has is refused"},
	{.name = "AMDGPU_CRIU_DEV_NODES",
	 .stages = OPTIONS_RESTORE,
	 .kind = OPTION_SWITCH,
	 .offset = FIELD(dev_nodes_create),
	 .words = keep_create,
	 .what = "policy",
	 .deflt = "create",
	 .help = "a restored /dev without the chosen GPU's render node, or with another host's "
		 "/dev/kfd, is made right, or the restore is refused"},
	KFD_CHECK("KFD_CAPABILITY_CHECK", capability, "the GPUs' capability bits"),
	KFD_CHECK("KFD_VRAM_SIZE_CHECK", vram_size, "VRAM sizes"),
	KFD_CHECK("KFD_NUM_GWS_CHECK", num_gws, "GWS counts"),
	KFD_CHECK("KFD_CACHES_COUNT_CHECK", caches_count, "cache counts"),
	KFD_CHECK("KFD_FW_VER_CHECK", fw_version, "firmware versions"),
	KFD_CHECK("KFD_SDMA_FW_VER_CHECK", sdma_fw_version, "SDMA firmware versions"),
	KFD_CHECK("KFD_NUMA_CHECK", numa, "the CPU (NUMA) nodes near each GPU"),
};

#define N_OPTIONS (sizeof(table) / sizeof(table[0]))

/* What a message shows of a value: escaped, its first 32 bytes or so. */
#define SHOWN_VALUE ESCAPE_LEN(32)

const struct option_def *options_table(size_t *n)
{
	*n = N_OPTIONS;
	return table;
}

/* ---- values ------------------------------------------------------------------------------ */

static void *field(struct amdgpu_options *o, const struct option_def *d)
{
	return (char *)o + d->offset;
}

/* "auto (the default), sdma or cpu" */
static void words_list(const struct option_def *d, char *buf, size_t len)
{
	const char *others[8];
	size_t n = 0, used;

	for (size_t i = 0; d->words[i] && n < 8; i++)
		if (strcmp(d->words[i], d->deflt))
			others[n++] = d->words[i];
	used = (size_t)snprintf(buf, len, "%s (the default)", d->deflt);
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i + 1 < n ? ", " : " or ",
					 others[i]);
}

static int parse_word(const struct option_def *d, const char *v, int *index)
{
	for (int i = 0; d->words[i]; i++) {
		if (!strcmp(v, d->words[i])) {
			*index = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Decimal digits only, no leading zero: strtoul() alone takes blanks, a sign, a newline. */
static int parse_number(const struct option_def *d, const char *v, uint32_t *out)
{
	unsigned long long n = 0;
	const char *p;

	if (!*v || (*v == '0' && v[1]))
		return -EINVAL;
	for (p = v; *p; p++) {
		if (*p < '0' || *p > '9' || p - v >= 10)
			return -EINVAL;
		n = n * 10 + (unsigned int)(*p - '0');
	}
	if (n < d->min || n > d->max)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

static int parse_path(const char *v, char *out)
{
	size_t len = strlen(v);

	if (v[0] != '/' || len >= OPTIONS_PATH_MAX)
		return -EINVAL;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return -EINVAL;
	memcpy(out, v, len + 1);
	return 0;
}

static int parse_yesno(const char *v, bool *on)
{
	if (!strcmp(v, "0") || !strcasecmp(v, "no"))
		*on = false;
	else if (!strcmp(v, "1") || !strcasecmp(v, "yes"))
		*on = true;
	else
		return -EINVAL;
	return 0;
}

/* What the value of d may be, for its refusal. */
static void refusal(const struct option_def *d, char *buf, size_t len)
{
	char list[160];

	switch (d->kind) {
	case OPTION_WORD:
	case OPTION_SWITCH:
		words_list(d, list, sizeof(list));
		snprintf(buf, len, "unknown %s; use %s", d->what, list);
		break;
	case OPTION_YESNO:
		snprintf(buf, len, "unknown switch; use 1 or yes (the default), 0 or no");
		break;
	case OPTION_NUMBER:
		snprintf(buf, len, "not a number of %s from %u to %u (decimal digits)", d->what,
			 d->min, d->max);
		break;
	case OPTION_PATH:
		snprintf(buf, len, "not an absolute path of at most %d printable bytes",
			 OPTIONS_PATH_MAX - 1);
		break;
	default:
		snprintf(buf, len, "means nothing");
		break;
	}
}

/* One option's value (not empty) into its field: 0, or -EINVAL with one line in err. */
static int parse_value(struct amdgpu_options *o, const struct option_def *d, const char *v,
		       char *err, size_t errlen)
{
	char shown[SHOWN_VALUE], why[200];
	int ret, index;

	switch (d->kind) {
	case OPTION_WORD:
		ret = parse_word(d, v, &index);
		if (!ret)
			*(int *)field(o, d) = index;
		break;
	case OPTION_SWITCH:
		ret = parse_word(d, v, &index);
		if (!ret)
			*(bool *)field(o, d) = index == 1;
		break;
	case OPTION_YESNO:
		ret = parse_yesno(v, field(o, d));
		break;
	case OPTION_NUMBER:
		ret = parse_number(d, v, field(o, d));
		break;
	case OPTION_PATH:
		ret = parse_path(v, field(o, d));
		break;
	case OPTION_GPUS:
		ret = gpu_select_parse(&o->gpus, v, err, errlen);
		if (!ret)
			str_escape(v, o->gpus_shown, sizeof(o->gpus_shown));
		return ret; /* its refusal is gpu_select's */
	default:
		return 0;
	}
	if (!ret)
		return 0;
	refusal(d, why, sizeof(why));
	return errmsg_set(err, errlen, -EINVAL, "%s=%s: %s", d->name,
			  str_escape(v, shown, sizeof(shown)), why);
}

void options_default(struct amdgpu_options *o)
{
	char err[256];

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (table[i].deflt) /* the table's own defaults parse (test_options) */
			(void)parse_value(o, &table[i], table[i].deflt, err, sizeof(err));
}

void options_values_text(const struct option_def *d, char *buf, size_t len)
{
	size_t used;

	if (!len)
		return;
	if (d->values) {
		snprintf(buf, len, "%s", d->values);
		return;
	}
	if (d->kind == OPTION_NUMBER) {
		snprintf(buf, len, "`%s` (%u to %u)", d->deflt, d->min, d->max);
		return;
	}
	if (d->kind == OPTION_PATH) {
		snprintf(buf, len, "`%s` (an absolute path)", d->deflt);
		return;
	}
	used = (size_t)snprintf(buf, len, "`%s`", d->deflt);
	for (size_t i = 0; d->words[i] && used < len; i++)
		if (strcmp(d->words[i], d->deflt))
			used += (size_t)snprintf(buf + used, len - used, ", `%s`", d->words[i]);
}

/* ---- the options file ---------------------------------------------------------------------- */

static const struct option_def *find(const char *name)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (!strcmp(name, table[i].name))
			return &table[i];
	return NULL;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/* What a message shows of the file's bytes: escaped, the first 40 or so. */
#define SHOWN_TEXT 48

/*
 * One line (NUL-terminated, no newline) of the file: skipped, or its value
 * noted in from_file[] (pointing into the line), or refused. name: the
 * file's, escaped.
 */
static int note_line(char *line, const char *name, unsigned int lineno, const char **from_file,
		     unsigned int *line_of, char *err, size_t errlen)
{
	char *eq, *key, shown[SHOWN_TEXT];
	const struct option_def *d;
	size_t i;

	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq)
		return errmsg_set(err, errlen, -EINVAL,
				  "options file %s line %u: \"%s\" is no NAME=VALUE", name, lineno,
				  str_escape(line, shown, sizeof(shown)));
	*eq = '\0';
	key = trim(line);
	d = find(key);
	if (!d)
		return errmsg_set(err, errlen, -EINVAL,
				  "options file %s line %u: %s is no option of the plugin "
				  "(`amdgpu-criu options` lists them)",
				  name, lineno, str_escape(key, shown, sizeof(shown)));
	if (d->kind == OPTION_FILE)
		return errmsg_set(err, errlen, -EINVAL,
				  "options file %s line %u: %s is read from the environment only",
				  name, lineno, key);
	i = (size_t)(d - table);
	if (from_file[i])
		return errmsg_set(err, errlen, -EINVAL,
				  "options file %s line %u: %s set again (first on line %u)", name,
				  lineno, key, line_of[i]);
	from_file[i] = trim(eq + 1);
	line_of[i] = lineno;
	return 0;
}

/*
 * The file's lines into from_file[] (pointers into text, which is cut into
 * lines) and line_of[].
 */
static int note_file(char *text, const char *name, const char **from_file, unsigned int *line_of,
		     char *err, size_t errlen)
{
	unsigned int lineno = 0;
	char *line, *next;
	int ret = 0;

	for (line = text; !ret && line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		ret = note_line(line, name, ++lineno, from_file, line_of, err, errlen);
	}
	return ret;
}

/* ---- reading ------------------------------------------------------------------------------- */

/*
 * Every option of the stages, from the environment or else the file (a
 * refusal of the file's value names its line).
 */
static int parse_all(struct amdgpu_options *o, unsigned int stages, options_lookup_fn env,
		     const char *const *from_file, const unsigned int *line_of, char *err,
		     size_t errlen)
{
	char why[400];

	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct option_def *d = &table[i];
		const char *v = d->kind == OPTION_FILE ? NULL : env(d->name);
		bool in_file = !v && from_file[i];
		int ret;

		if (in_file) {
			v = from_file[i];
			o->from_file++;
		}
		if (!(d->stages & stages) || !v || !*v)
			continue;
		ret = parse_value(o, d, v, why, sizeof(why));
		if (ret && in_file)
			return errmsg_set(err, errlen, ret, "options file %s line %u: %s", o->file,
					  line_of[i], why);
		if (ret)
			return errmsg_set(err, errlen, ret, "%s", why);
	}
	return 0;
}

int options_read_text(struct amdgpu_options *o, unsigned int stages, options_lookup_fn env,
		      const char *text, const char *name, char *err, size_t errlen)
{
	const char *from_file[N_OPTIONS] = {0};
	unsigned int line_of[N_OPTIONS] = {0};
	char *copy = NULL;
	int ret = 0;

	options_default(o);
	if (errlen)
		err[0] = '\0';
	if (text) {
		copy = strdup(text);
		if (!copy)
			return errmsg_set(err, errlen, -ENOMEM, "options: out of memory");
		str_escape(name, o->file, sizeof(o->file));
		ret = note_file(copy, o->file, from_file, line_of, err, errlen);
	}
	if (!ret)
		ret = parse_all(o, stages, env, from_file, line_of, err, errlen);
	free(copy);
	return ret;
}

int options_read(struct amdgpu_options *o, unsigned int stages, options_lookup_fn env, char *err,
		 size_t errlen)
{
	char *text = NULL, path[PATH_MAX];
	int ret;

	ret = options_file_read(env(OPTIONS_FILE_ENV), path, sizeof(path), &text, err, errlen);
	if (ret) {
		options_default(o);
		return ret;
	}
	ret = options_read_text(o, stages, env, text, path, err, errlen);
	free(text);
	return ret;
}
