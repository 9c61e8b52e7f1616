// SPDX-License-Identifier: MIT
/*
 * Render nodes are checked by device number, not trusted by name
 * (plugin/restore/render_fds.h): a node named renderD<minor> that is another device
 * (here /dev/null, as a /dev restored from a checkpoint may hold) is
 * -ENXIO, a missing one -ENOENT, each with its hint for the user. A
 * restored task creates a missing node as 226:<minor> with the mode and
 * owner of a render node already there, and replaces a /dev/kfd that is not
 * this host's KFD without opening it (plugin/restore/dev_nodes.h; here /dev/zero's
 * numbers stand for KFD's, /dev/null's for a stale node).
 */
#include <errno.h>
#include <fcntl.h>
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

#include "plugin/restore/dev_nodes.h"
#include "plugin/restore/render_fds.h"

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

static void stale_kfd_node_is_replaced_not_opened(void **state)
{
	const dev_t kfd = makedev(1, 5), stale = makedev(1, 3);
	char dir[64], path[96];
	struct stat st;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-kfd-node-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kfd", dir);
	if (mknod(path, S_IFCHR | 0600, stale)) {
		rmdir(dir);
		skip(); /* no CAP_MKNOD here */
	}
	assert_int_equal(chmod(path, 0660), 0);
	assert_int_equal(chown(path, 0, 44), 0);

	/* keep: refused, the node left as it was */
	assert_int_equal(kfd_node_open_at(path, kfd, false), -ENXIO);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(st.st_rdev == stale);

	/* create: replaced (mode and owner kept), then opened */
	fd = kfd_node_open_at(path, kfd, true);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_rdev == kfd);
	close(fd);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode) && st.st_rdev == kfd);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, 44);

	/* right already: opened as it is */
	fd = kfd_node_open_at(path, kfd, false);
	assert_true(fd >= 0);
	close(fd);

	/* missing: created 0666 (create), -ENOENT (keep) */
	unlink(path);
	assert_int_equal(kfd_node_open_at(path, kfd, false), -ENOENT);
	fd = kfd_node_open_at(path, kfd, true);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);

	/* not a character device: never replaced */
	unlink(path);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(kfd_node_open_at(path, kfd, true), -ENXIO);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nodes_are_checked_by_number),
		cmocka_unit_test(missing_nodes_are_created_like_their_siblings),
		cmocka_unit_test(stale_kfd_node_is_replaced_not_opened),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
