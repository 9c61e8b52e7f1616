// SPDX-License-Identifier: MIT
/*
 * The master <-> restored-task protocol (plugin/restore/shared_state.h): claims,
 * bounded waits, and recovery from a task that dies holding a lock.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/restore/shared_state.h"

static const uint32_t ids[] = {7, 9};

static void claims(void **state)
{
	struct shared_state *s = shared_state_create(ids, 2);
	struct shared_image img;

	(void)state;
	assert_non_null(s);
	assert_int_equal(shared_image_begin(s, 7, 100, shared_deadline(1000)), 0);
	/* nothing is restored twice */
	assert_int_equal(shared_image_begin(s, 7, 101, shared_deadline(1000)), -EALREADY);
	assert_int_equal(shared_image_begin(s, 8, 101, shared_deadline(1000)), -ENOENT);
	assert_int_equal(shared_image_end(s, 9, 0, 0, 0, shared_deadline(1000)), -EINVAL);
	assert_int_equal(shared_image_end(s, 7, 0, 4096, 5, shared_deadline(1000)), 0);
	assert_int_equal(shared_image_get(s, 7, &img, shared_deadline(1000)), 0);
	assert_int_equal(img.state, SHARED_IMAGE_DONE);
	assert_int_equal(img.bytes, 4096);
	assert_int_equal(img.pid, 100);
	shared_state_destroy(s);
}

/* A child claims, takes the lock or a slot, and dies without releasing. */
static void die_holding(struct shared_state *s, int what)
{
	pid_t pid = fork();
	int slot, status;

	assert_true(pid >= 0);
	if (!pid) {
		shared_image_begin(s, 9, (uint32_t)getpid(), shared_deadline(1000));
		if (what == 0)
			pthread_mutex_lock(&s->lock);
		else
			for (int i = 0; i < SHARED_COPY_SLOTS; i++)
				shared_copy_slot_take(s, shared_deadline(1000), &slot);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void dead_lock_owner(void **state)
{
	struct shared_state *s = shared_state_create(ids, 2);
	struct shared_image img;

	(void)state;
	die_holding(s, 0);
	/* the child died holding the lock: the next locker recovers it, once */
	assert_int_equal(shared_image_get(s, 9, &img, shared_deadline(2000)), 0);
	assert_int_equal(img.state, SHARED_IMAGE_RESTORING); /* the master sees it died half-way */
	assert_int_equal(s->recoveries, 1);
	assert_int_equal(shared_image_get(s, 9, &img, shared_deadline(2000)), 0);
	assert_int_equal(s->recoveries, 1);
	shared_state_destroy(s);
}

static void dead_slot_owner(void **state)
{
	struct shared_state *s = shared_state_create(ids, 2);
	int slot = -1, i, taken[SHARED_COPY_SLOTS];

	(void)state;
	die_holding(s, 1);
	for (i = 0; i < SHARED_COPY_SLOTS; i++) {
		assert_int_equal(shared_copy_slot_take(s, shared_deadline(2000), &taken[i]), 0);
	}
	assert_int_equal(s->recoveries, SHARED_COPY_SLOTS);
	/* all slots now held by us: a bounded wait times out, it does not hang */
	assert_int_equal(shared_copy_slot_take(s, shared_deadline(100), &slot), -ETIMEDOUT);
	for (i = 0; i < SHARED_COPY_SLOTS; i++)
		shared_copy_slot_put(s, taken[i]);
	assert_int_equal(shared_copy_slot_take(s, shared_deadline(100), &slot), 0);
	shared_copy_slot_put(s, slot);
	shared_state_destroy(s);
}

static void wait_is_bounded(void **state)
{
	struct shared_state *s = shared_state_create(ids, 2);
	int slot, i, status;
	uint64_t start;
	int pipefd[2];
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) { /* holds every slot, alive, until killed */
		for (i = 0; i < SHARED_COPY_SLOTS; i++)
			shared_copy_slot_take(s, shared_deadline(1000), &slot);
		(void)!write(pipefd[1], "x", 1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	start = shared_deadline(0);
	assert_int_equal(shared_copy_slot_take(s, shared_deadline(300), &slot), -ETIMEDOUT);
	assert_true(shared_deadline(0) - start >= 290);
	/* bounded, not "prompt": a busy machine may wake us late, a bug never */
	assert_true(shared_deadline(0) - start < 30000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* its slots come back through the kernel's owner-died path */
	assert_int_equal(shared_copy_slot_take(s, shared_deadline(1000), &slot), 0);
	shared_copy_slot_put(s, slot);
	close(pipefd[0]);
	close(pipefd[1]);
	shared_state_destroy(s);
}

/* Parallel restore's handoff: an unanswered offer is withdrawn in time, and then never taken. */
static void handoff(void **state)
{
	struct shared_state *s = shared_state_create(ids, 2);
	uint32_t answer = 0, id = 0, pid = 0;
	int fd = -1;

	(void)state;
	assert_non_null(s);
	assert_int_equal(shared_image_begin(s, 7, 100, shared_deadline(1000)), 0);
	assert_int_equal(shared_handoff_offer(s, 7, 5, shared_deadline(1000)), 0);
	assert_int_equal(shared_handoff_offer(s, 7, 5, shared_deadline(1000)), -EALREADY);
	assert_int_equal(
		shared_handoff_settle(s, 7, shared_deadline(50), shared_deadline(5000), &answer),
		0);
	assert_int_equal(answer, SHARED_HANDOFF_CANCELLED);
	assert_int_equal(shared_handoff_next(s, &id, &pid, &fd, shared_deadline(1000)), -ENOENT);
	/* the other image: offered, taken, answered, copied */
	assert_int_equal(shared_handoff_offer(s, 9, 6, shared_deadline(1000)), 0);
	assert_int_equal(shared_handoff_next(s, &id, &pid, &fd, shared_deadline(1000)), 0);
	assert_int_equal(id, 9);
	assert_int_equal(fd, 6);
	assert_int_equal(shared_handoff_copied(s, 9, 0, 1, 1, shared_deadline(1000)), -EINVAL);
	assert_int_equal(shared_handoff_answer(s, 9, 1, shared_deadline(1000)), 0);
	assert_int_equal(shared_handoff_copied(s, 9, -EIO, 1, 1, shared_deadline(1000)), 0);
	assert_int_equal(
		shared_handoff_settle(s, 9, shared_deadline(50), shared_deadline(5000), &answer),
		0);
	assert_int_equal(answer, SHARED_HANDOFF_TAKEN);
	shared_state_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(claims),	   cmocka_unit_test(dead_lock_owner),
		cmocka_unit_test(dead_slot_owner), cmocka_unit_test(wait_is_bounded),
		cmocka_unit_test(handoff),
	};

	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
