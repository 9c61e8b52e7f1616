// SPDX-License-Identifier: MIT
/*
 * Render nodes are checked by device number, not trusted by name
 * (plugin/render_fds.h): a node named renderD<minor> that is another device
 * (here /dev/null, as a /dev restored from a checkpoint may hold) is
 * -ENXIO, a missing one -ENOENT, each with its hint for the user. A
 * restored task creates a missing node as 226:<minor> with the mode and
 * owner of a render node already there (AMDGPU_CRIU_DEV_NODES decides).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

static void missing_nodes_are_created_like_their_siblings(void **state)
{
	char dir[64], sub[96], path[128];
	struct stat st;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-render-create-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/renderD200", dir);
	if (mknod(path, S_IFCHR | 0600, makedev(226, 200))) {
		rmdir(dir);
		skip(); /* no CAP_MKNOD here */
	}
	assert_int_equal(chmod(path, 0660), 0);
	assert_int_equal(chown(path, 0, 44), 0);

	assert_int_equal(render_node_create_at(dir, 131), 0);
	snprintf(path, sizeof(path), "%s/renderD131", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(major(st.st_rdev), 226);
	assert_int_equal(minor(st.st_rdev), 131);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, 44);
	/* it never replaces a node that is there */
	assert_int_equal(render_node_create_at(dir, 131), -EEXIST);
	unlink(path);

	/* a /dev without dri/: created, and 0666 root without a sibling */
	snprintf(sub, sizeof(sub), "%s/dri", dir);
	assert_int_equal(render_node_create_at(sub, 132), 0);
	snprintf(path, sizeof(path), "%s/renderD132", sub);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);
	assert_int_equal(minor(st.st_rdev), 132);
	unlink(path);
	rmdir(sub);
	snprintf(path, sizeof(path), "%s/renderD200", dir);
	unlink(path);
	rmdir(dir);
}

static void node_policy_from_the_environment(void **state)
{
	bool create = false;

	(void)state;
	unsetenv(DEV_NODES_ENV);
	assert_int_equal(render_node_policy(&create), 0);
	assert_true(create);
	setenv(DEV_NODES_ENV, "keep", 1);
	assert_int_equal(render_node_policy(&create), 0);
	assert_false(create);
	setenv(DEV_NODES_ENV, "create", 1);
	assert_int_equal(render_node_policy(&create), 0);
	assert_true(create);
	setenv(DEV_NODES_ENV, "yes", 1);
	assert_int_equal(render_node_policy(&create), -EINVAL);
	unsetenv(DEV_NODES_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nodes_are_checked_by_number),
		cmocka_unit_test(missing_nodes_are_created_like_their_siblings),
		cmocka_unit_test(node_policy_from_the_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
