// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu options [--markdown | --man]
 *
 * The plugin's options, from its one table (options/options.h): each
 * option's stage, values, default and what it chooses; then whether the
 * environment and the options file here give a dump and a restore options
 * that mean something. --markdown and --man print the table as the README
 * and the man page hold it (tests/host/test-options-doc.sh compares them).
 * Also the reading the other commands share (tool_options_read()).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options/options.h"
#include "tools/cli.h"

enum options_format { FORMAT_TEXT, FORMAT_MARKDOWN, FORMAT_MAN };

static const char *environment(const char *name)
{
	return getenv(name);
}

int tool_options_read(const char *cmd, struct amdgpu_options *o)
{
	char err[600];
	int ret = options_read(o, OPTIONS_RESTORE, environment, err, sizeof(err));

	if (ret)
		cli_err("%s: %s (the restore would refuse a checkpoint with GPUs)", cmd, err);
	return ret;
}

void cmd_options_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME " options [--markdown | --man]\n\n"
		"List the plugin's options (environment variables, or NAME=VALUE lines of its\n"
		"options file), then tell whether the ones set here mean something to a dump\n"
		"and to a restore.\n\n"
		"options:\n"
		"  -m, --markdown   print the table as the README holds it\n"
		"      --man        print the table as the man page holds it\n"
		"  -h, --help       show this help\n\n"
		"exit status: 0 the options here are good, 1 one means nothing (the line says\n"
		"which), 2 usage error\n");
}

static const char *stage_text(unsigned int stages)
{
	if (stages == (OPTIONS_DUMP | OPTIONS_RESTORE))
		return "dump, restore";
	return stages == OPTIONS_DUMP ? "dump" : "restore";
}

/* Markdown's `word` as troff bold; a '-' as troff's hyphen-minus. */
static void put_man_text(const char *s)
{
	bool bold = false;

	for (; *s; s++) {
		if (*s == '`') {
			fputs(bold ? "\\fR" : "\\fB", stdout);
			bold = !bold;
		} else if (*s == '-' || *s == '\\') {
			putchar('\\');
			putchar(*s == '-' ? '-' : 'e');
		} else {
			putchar(*s);
		}
	}
}

static void print_table(enum options_format format)
{
	size_t n;
	const struct option_def *t = options_table(&n);
	char values[320];

	if (format == FORMAT_MARKDOWN)
		printf("| option | read by | values (default first) | what it chooses |\n"
		       "|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		options_values_text(&t[i], values, sizeof(values));
		switch (format) {
		case FORMAT_MARKDOWN:
			printf("| `%s` | %s | %s | %s |\n", t[i].name, stage_text(t[i].stages),
			       values, t[i].help);
			break;
		case FORMAT_MAN:
			printf(".TP\n.B %s\n(%s) ", t[i].name, stage_text(t[i].stages));
			put_man_text(values);
			printf(":\n");
			put_man_text(t[i].help);
			printf(".\n");
			break;
		default:
			printf("%s (%s)\n    values: ", t[i].name, stage_text(t[i].stages));
			for (const char *p = values; *p; p++)
				if (*p != '`')
					putchar(*p);
			printf("\n    %s\n", t[i].help);
			break;
		}
	}
}

/* The options set here, as a dump and a restore would read them: 0 or CLI_EXIT_NO. */
static int check_here(void)
{
	static const unsigned int stages[] = {OPTIONS_DUMP, OPTIONS_RESTORE};
	struct amdgpu_options o;
	char err[600];

	for (size_t i = 0; i < 2; i++) {
		if (options_read(&o, stages[i], environment, err, sizeof(err))) {
			printf("\nhere: %s: a %s with GPUs would be refused\n", err,
			       stage_text(stages[i]));
			return CLI_EXIT_NO;
		}
	}
	if (o.file[0])
		printf("\nhere: good; options file %s: %u option%s set (the environment's own "
		       "win)\n",
		       o.file, o.from_file, o.from_file == 1 ? "" : "s");
	else
		printf("\nhere: good; no options file\n");
	return CLI_EXIT_OK;
}

int cmd_options(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{"markdown", no_argument, NULL, 'm'},
		{"man", no_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	enum options_format format = FORMAT_TEXT;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":mh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			format = FORMAT_MARKDOWN;
			break;
		case 'M':
			format = FORMAT_MAN;
			break;
		case 'h':
			cmd_options_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("options", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_args("options", argc, argv);
	print_table(format);
	return format == FORMAT_TEXT ? check_here() : CLI_EXIT_OK;
}
