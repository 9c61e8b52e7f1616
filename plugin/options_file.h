/* SPDX-License-Identifier: MIT */
/*
 * The plugin's options from a file, for runtimes that drop CRIU's
 * environment (podman's checkpoint; runc and crun read CRIU's own
 * configuration files, not ours).
 *
 * The file: AMDGPU_CRIU_CONFIG if set (it must then exist), else
 * /etc/criu/amdgpu_plugin.conf if it exists. One option a line,
 * "NAME=VALUE", NAME one of the plugin's environment variables
 * (OPTIONS_FILE_NAMES); blank lines and lines starting with '#' are
 * skipped, spaces around NAME and VALUE too. The environment wins: an
 * option already set there is left as it is, so a file sets defaults for a
 * node and a user can still override them per run. The values are checked
 * where each option is read, as the environment's are.
 *
 * A file that is not a regular file (a FIFO, a link), larger than
 * OPTIONS_FILE_MAX, with an unknown name or a line without '=' is refused
 * in one line naming the file and line: the dump or restore then fails
 * before it touches anything.
 */
#ifndef AMDGPU_CRIU_OPTIONS_FILE_H
#define AMDGPU_CRIU_OPTIONS_FILE_H

#include <stddef.h>

#define OPTIONS_FILE_DEFAULT "/etc/criu/amdgpu_plugin.conf"
#define OPTIONS_FILE_ENV     "AMDGPU_CRIU_CONFIG"
#define OPTIONS_FILE_MAX     (64u << 10)

/* The names a file may set, NULL-terminated. */
extern const char *const OPTIONS_FILE_NAMES[];

/*
 * Applies the options file (setenv without overwrite). 0 (also when there
 * is none to read); -errno with one line in err. *path gets the file read
 * ("" if none) and *applied the number of options it set. A path that
 * does not fit in pathlen bytes (or PATH_MAX) is refused (-ENAMETOOLONG),
 * never read cut short. Messages show the path and the file's text escaped.
 */
int options_file_apply(char *path, size_t pathlen, unsigned int *applied, char *err, size_t errlen);

/* The same for the text of one file (a test's), named `name` in messages. */
int options_text_apply(const char *text, const char *name, unsigned int *applied, char *err,
		       size_t errlen);

#endif
