// SPDX-License-Identifier: MIT
/*
 * The restore master's entry point alone, for tests/host/test-ckpt-verdicts.sh:
 * restore_session_init() on an image directory with the options read from
 * the environment and the options file, as the plugin's init hook runs it in
 * CRIU, then restore_session_fini(). The plugin's log goes to
 * stderr (tests/unit/criu_stub.c).
 *
 *   restore_init IMGDIR     exit 0: init succeeded, 1: it refused, 2: usage
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "options/options.h"
#include "plugin/restore/restore.h"

static const char *environment(const char *name)
{
	return getenv(name);
}

int main(int argc, char **argv)
{
	struct restore_session s;
	struct amdgpu_options opts;
	char options_error[600];
	int dir_fd, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: restore_init IMGDIR\n");
		return 2;
	}
	dir_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		perror(argv[1]);
		return 2;
	}
	options_read(&opts, OPTIONS_RESTORE, environment, options_error, sizeof(options_error));
	ret = restore_session_init(&s, dir_fd, &opts, options_error);
	restore_session_fini(&s, ret);
	close(dir_fd);
	return ret ? 1 : 0;
}
