// SPDX-License-Identifier: MIT
/*
 * Render nodes are checked by device number, not trusted by name
 * (plugin/render_fds.h): a node named renderD<minor> that is another device
 * (here /dev/null, as a /dev restored from a checkpoint may hold) is
 * -ENXIO, a missing one -ENOENT, each with its hint for the user.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/render_fds.h"

static void nodes_are_checked_by_number(void **state)
{
	char dir[64], link[128];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-render-node-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/renderD130", dir);
	assert_int_equal(symlink("/dev/null", link), 0);

	assert_int_equal(render_node_open_at(dir, 130), -ENXIO);
	assert_non_null(strstr(render_node_hint(-ENXIO), "another device"));
	assert_int_equal(render_node_open_at(dir, 131), -ENOENT);
	assert_non_null(strstr(render_node_hint(-ENOENT), "no node for that GPU"));
	assert_string_equal(render_node_hint(-EIO), "");

	unlink(link);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nodes_are_checked_by_number),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
