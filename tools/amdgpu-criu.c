// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu: look at KFD topologies and checkpoint images from
 * the command line. This file holds what is common to all commands: global
 * options, the command table, usage text and error reporting.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

struct cli_command {
	const char *name;
	int (*run)(int argc, char *argv[]);
	void (*usage)(FILE *out);
	const char *summary;
};

static const struct cli_command commands[] = {
	{"topology", cmd_topology, cmd_topology_usage,
	 "show the KFD topology of this or a captured host"},
	{"match", cmd_match, cmd_match_usage, "map the GPUs of one topology onto another"},
	{"inspect", cmd_inspect, cmd_inspect_usage,
	 "show what a checkpoint holds (--verify: contents)"},
	{"check", cmd_check, cmd_check_usage, "can a checkpoint be restored here, onto which GPUs"},
	{"options", cmd_options, cmd_options_usage,
	 "the plugin's options, and whether those set here mean something"},
	{"cdi", cmd_cdi, cmd_cdi_usage,
	 "a CDI spec (Container Device Interface) of this host's GPUs"},
};

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs(CLI_NAME ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_bad_option(const char *cmd, int getopt_ret, char *const argv[])
{
	/* optind has moved past the offending word; optopt is 0 for an unknown long option */
	const char *word = optind > 0 ? argv[optind - 1] : "?";
	char shortopt[3] = {'-', (char)optopt, 0};
	const char *prefix = cmd ? cmd : "";
	const char *sep = cmd ? ": " : "";

	if (optopt && strncmp(word, "--", 2) != 0)
		word = shortopt;
	if (getopt_ret == ':')
		cli_err("%s%soption '%s' requires an argument", prefix, sep, word);
	else if (cmd)
		cli_err("%s: invalid option '%s' (try '" CLI_NAME " help %s')", cmd, word, cmd);
	else
		cli_err("invalid option '%s' (try '" CLI_NAME " --help')", word);
	return CLI_EXIT_USAGE;
}

int cli_extra_args(const char *cmd, int argc, char *const argv[])
{
	if (optind >= argc)
		return CLI_EXIT_OK;
	cli_err("%s: unexpected argument '%s'", cmd, argv[optind]);
	return CLI_EXIT_USAGE;
}

static void print_usage(FILE *out)
{
	fprintf(out, "usage: " CLI_NAME " [--help] [--version] COMMAND [ARGS]\n\n"
		     "Inspect AMD GPU topologies and checkpoints for CRIU checkpoint/restore.\n\n"
		     "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "  %-10s %s\n", "help", "show the usage of a command");
	fprintf(out, "\n'" CLI_NAME " help COMMAND' or '" CLI_NAME
		     " COMMAND --help' describes a command.\n"
		     "exit status: 0 success, 1 negative answer (e.g. not compatible), 2 usage "
		     "error or unusable input\n");
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	cli_err("unknown command '%s' (try '" CLI_NAME " --help')", name);
	return CLI_EXIT_USAGE;
}

/* help [COMMAND] */
static int run_help(int argc, char *argv[])
{
	const struct cli_command *cmd;

	if (argc < 2) {
		print_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 2) {
		cli_err("help: unexpected argument '%s'", argv[2]);
		return CLI_EXIT_USAGE;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	cmd->usage(stdout);
	return CLI_EXIT_OK;
}

/* A failed write to stdout (full disk, closed pipe) must not look like success. */
static int finish_output(int status)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return status;
	cli_err("error writing to standard output");
	return CLI_EXIT_USAGE;
}

/* Global options, up to the command name (leading '+': stop at the first non-option). */
static int parse_global_options(int argc, char *argv[], int *status)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_usage(stdout);
			*status = CLI_EXIT_OK;
			return 1;
		case 'V':
			printf(CLI_NAME " " AMDGPU_CRIU_VERSION "\n");
			*status = CLI_EXIT_OK;
			return 1;
		default:
			*status = cli_bad_option(NULL, c, argv);
			return 1;
		}
	}
	return 0;
}

static int run_command(int argc, char *argv[])
{
	const struct cli_command *cmd;

	if (!strcmp(argv[0], "help"))
		return run_help(argc, argv);
	cmd = find_command(argv[0]);
	if (!cmd)
		return unknown_command(argv[0]);
	/* optind = 0 makes glibc's getopt start over on the command's own argv */
	optind = 0;
	return cmd->run(argc, argv);
}

int main(int argc, char *argv[])
{
	int status = CLI_EXIT_OK;

	if (parse_global_options(argc, argv, &status))
		return finish_output(status);
	if (optind >= argc) {
		print_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	status = run_command(argc - optind, argv + optind);
	return finish_output(status);
}
