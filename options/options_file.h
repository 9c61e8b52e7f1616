/* SPDX-License-Identifier: MIT */
/*
 * The options file, for runtimes that drop CRIU's environment (podman's
 * checkpoint; runc and crun read CRIU's own configuration files, not ours):
 * AMDGPU_CRIU_CONFIG if set (it must then exist), else
 * /etc/criu/amdgpu_plugin.conf if it exists. One option a line,
 * "NAME=VALUE", blank lines and lines starting with '#' skipped, spaces
 * around NAME and VALUE too; options.c parses the lines with the
 * environment's values. Here only the file is read: a regular file (not a
 * FIFO, not a link) of at most OPTIONS_FILE_MAX bytes without a NUL byte.
 */
#ifndef AMDGPU_CRIU_OPTIONS_OPTIONS_FILE_H
#define AMDGPU_CRIU_OPTIONS_OPTIONS_FILE_H

#include <stddef.h>

#define OPTIONS_FILE_DEFAULT "/etc/criu/amdgpu_plugin.conf"
#define OPTIONS_FILE_ENV     "AMDGPU_CRIU_CONFIG"
#define OPTIONS_FILE_MAX     (64u << 10)

/*
 * The file `named` names (NULL or "": the default one, if it exists):
 * its path into path (pathlen bytes; "" if there is none to read) and its
 * text, NUL-terminated, into *text (malloc'd, the caller frees; NULL if none).
 * 0, or -errno with one line in err ("options file PATH: ...", the path
 * escaped). A path that does not fit is refused (-ENAMETOOLONG), never read
 * cut short.
 */
int options_file_read(const char *named, char *path, size_t pathlen, char **text, char *err,
		      size_t errlen);

#endif
