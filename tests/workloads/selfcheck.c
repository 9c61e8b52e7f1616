// SPDX-License-Identifier: MIT
/*
 * Self-verifying CRIU workload (ZDTM style): it holds state that a checkpoint
 * and restore must preserve, and on request checks all of it and says PASS or
 * FAIL with the first difference.
 *
 *   selfcheck DIR
 *
 * State kept:
 *  - an anonymous private mapping (ANON_LEN) filled with a known pattern;
 *  - a memfd, mapped MAP_SHARED: page 0 holds the counter, the rest a pattern;
 *  - a pipe whose buffer holds PIPE_LEN pattern bytes that nobody reads yet;
 *  - a counter thread: every TICK_US it checks that the counter in the memfd
 *    equals its own copy (kept on its stack), increments both, and records the
 *    longest gap between two ticks in wall-clock time. CLOCK_REALTIME is used
 *    because CRIU restores into a time namespace whose CLOCK_MONOTONIC and
 *    CLOCK_BOOTTIME carry on from the dump: a frozen interval is only visible
 *    on the wall clock.
 *
 * Protocol, all files in DIR (each written to a temporary name and renamed,
 * so a reader never sees half a file):
 *  - DIR/ready   written once set up:
 *                "pid=P start=T counter=C anon=0xA anon_len=N memfd=0xM memfd_len=N"
 *                (anon/memfd are the addresses of the two pattern regions,
 *                for tests that damage them on purpose)
 *  - DIR/trigger created by the test: "expect=restored" or "expect=original"
 *  - DIR/result  "PASS ..." (exit 0) or "FAIL <first difference>" (exit 1)
 * With no trigger within LIFETIME_S the workload gives up: "FAIL no trigger".
 *
 * "Restored" is observed, not assumed: a restored process is a new kernel task
 * with the old PID, and its start time (field 22 of /proc/self/stat, fixed at
 * fork) differs from the one recorded at start-up. Inside CRIU's time
 * namespace that start time reads as "about when the dump was taken", so
 * "ready" is only written READY_DELAY_MS after start-up: any dump comes later,
 * and the two start times are several clock ticks apart. The result line also
 * says whether the time namespace changed (it does when CRIU restores with
 * time namespaces, as 4.x does) and the longest wall-clock gap between ticks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define ANON_LEN       (64 * 4096)
#define MEMFD_PAGE     4096
#define MEMFD_LEN      (16 * 4096) /* pattern part, after the counter page */
#define PIPE_LEN       4096
#define TICK_US	       2000
#define LIFETIME_S     120
#define READY_DELAY_MS 100 /* >> one clock tick (10 ms at USER_HZ 100) */

struct memfd_header {
	uint64_t counter;
};

static uint8_t *anon;
static uint8_t *memfd_map; /* MEMFD_PAGE of header, then MEMFD_LEN of pattern */
static int memfd = -1, pipe_fds[2] = {-1, -1};
static unsigned long long start_time;
static char time_ns[64]; /* /proc/self/ns/time at start-up */

static _Atomic uint64_t counter;   /* mirrors the thread's own copy */
static _Atomic int64_t max_gap_ns; /* longest time between two ticks */
static _Atomic int stop_thread;
static char thread_error[160]; /* first inconsistency the thread saw */
static _Atomic int thread_failed;

/* A byte pattern that differs per region, per page and per offset. */
static uint8_t pattern(uint8_t tag, size_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)tag << 56);
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return (uint8_t)(x >> 32);
}

static void fill(uint8_t *p, size_t len, uint8_t tag)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(tag, i);
}

/* "" if p matches the pattern, else the first difference */
static int verify(const uint8_t *p, size_t len, uint8_t tag, const char *what, char *why, size_t n)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != pattern(tag, i)) {
			snprintf(why, n, "%s+0x%zx: got 0x%02x want 0x%02x", what, i, p[i],
				 pattern(tag, i));
			return -1;
		}
	}
	return 0;
}

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Start time of this task in clock ticks since boot, 0 on error. */
static unsigned long long read_start_time(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	unsigned long long v = 0;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may hold spaces and ')': fields restart after the last ')' */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* p+2 is field 3 (state); start time is field 22 */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
		   "%llu",
		   &v) != 1)
		return 0;
	return v;
}

static void read_time_ns(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/ns/time", buf, n - 1);

	if (len < 0)
		snprintf(buf, n, "none");
	else
		buf[len] = '\0';
}

static void *counter_thread(void *arg)
{
	struct memfd_header *hdr = (struct memfd_header *)memfd_map;
	uint64_t n = 0; /* lives on this thread's stack: CRIU must restore it */
	int64_t last = now_ns(CLOCK_REALTIME);

	(void)arg;
	while (!atomic_load(&stop_thread)) {
		if (hdr->counter != n && !atomic_load(&thread_failed)) {
			snprintf(thread_error, sizeof(thread_error),
				 "memfd counter %llu, thread counter %llu",
				 (unsigned long long)hdr->counter, (unsigned long long)n);
			atomic_store(&thread_failed, 1);
		}
		n++;
		hdr->counter = n;
		atomic_store(&counter, n);

		int64_t t = now_ns(CLOCK_REALTIME);
		if (t - last > atomic_load(&max_gap_ns))
			atomic_store(&max_gap_ns, t - last);
		last = t;
		sleep_us(TICK_US);
	}
	return NULL;
}

/* Writes DIR-relative NAME atomically (tmp + rename). */
static int setup(void)
{
	uint8_t buf[PIPE_LEN];

	anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		return -1;
	fill(anon, ANON_LEN, 'A');

	memfd = memfd_create("selfcheck", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, MEMFD_PAGE + MEMFD_LEN))
		return -1;
	memfd_map =
		mmap(NULL, MEMFD_PAGE + MEMFD_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (memfd_map == MAP_FAILED)
		return -1;
	fill(memfd_map + MEMFD_PAGE, MEMFD_LEN, 'M');

	/* the read end is non-blocking so that lost data fails instead of hanging */
	if (pipe2(pipe_fds, O_CLOEXEC))
		return -1;
	if (fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK))
		return -1;
	fill(buf, PIPE_LEN, 'P');
	if (write(pipe_fds[1], buf, PIPE_LEN) != PIPE_LEN)
		return -1;

	read_time_ns(time_ns, sizeof(time_ns));
	start_time = read_start_time();
	return start_time ? 0 : -1;
}

/* Checks everything; returns 0 or fills why with the first failure. */
static int check(const char *expect, uint64_t ready_counter, pthread_t thread, char *why, size_t n)
{
	struct memfd_header *hdr = (struct memfd_header *)memfd_map;
	unsigned long long now_start = read_start_time();
	int restored = now_start != start_time;
	uint8_t buf[PIPE_LEN + 1];
	uint64_t c1, c2, on_disk;

	/* the counter moved on since "ready" and the thread is alive now */
	c1 = atomic_load(&counter);
	if (c1 <= ready_counter) {
		snprintf(why, n, "counter %llu did not advance from %llu at ready",
			 (unsigned long long)c1, (unsigned long long)ready_counter);
		return -1;
	}
	for (int i = 0; i < 1000 && atomic_load(&counter) == c1; i++)
		sleep_us(1000);
	c2 = atomic_load(&counter);
	if (c2 <= c1) {
		snprintf(why, n, "counter thread stuck at %llu", (unsigned long long)c1);
		return -1;
	}
	atomic_store(&stop_thread, 1);
	pthread_join(thread, NULL);
	if (atomic_load(&thread_failed)) {
		snprintf(why, n, "counter thread: %s", thread_error);
		return -1;
	}
	/* the memfd mapping and the memfd file are still one object */
	if (hdr->counter != atomic_load(&counter)) {
		snprintf(why, n, "memfd counter %llu, expected %llu",
			 (unsigned long long)hdr->counter,
			 (unsigned long long)atomic_load(&counter));
		return -1;
	}
	if (pread(memfd, &on_disk, sizeof(on_disk), 0) != sizeof(on_disk) ||
	    on_disk != hdr->counter) {
		snprintf(why, n, "memfd file says %llu, its mapping %llu",
			 (unsigned long long)on_disk, (unsigned long long)hdr->counter);
		return -1;
	}

	if (strcmp(expect, "restored") && strcmp(expect, "original")) {
		snprintf(why, n, "bad trigger \"%s\"", expect);
		return -1;
	}
	if (restored != !strcmp(expect, "restored")) {
		snprintf(why, n, "expected %s, but start time %llu -> %llu says %s", expect,
			 start_time, now_start, restored ? "restored" : "not restored");
		return -1;
	}

	/* exactly PIPE_LEN bytes of pattern still sit in the pipe */
	ssize_t got = read(pipe_fds[0], buf, sizeof(buf));
	if (got != PIPE_LEN) {
		snprintf(why, n, "pipe holds %zd bytes, expected %d", got, PIPE_LEN);
		return -1;
	}
	if (verify(buf, PIPE_LEN, 'P', "pipe", why, n))
		return -1;

	if (verify(anon, ANON_LEN, 'A', "anon", why, n))
		return -1;
	if (verify(memfd_map + MEMFD_PAGE, MEMFD_LEN, 'M', "memfd", why, n))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	char expect[64], why[256] = "";
	pthread_t thread;
	uint64_t ready_counter;
	int64_t deadline;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* Inherited fds may belong to other mount namespaces; CRIU cannot dump those. */
	if (close_range(3, ~0U, 0)) {
		perror("close_range");
		return 2;
	}
	if (chdir(argv[1]) || setup()) {
		perror("selfcheck: setup");
		return 2;
	}
	if (pthread_create(&thread, NULL, counter_thread, NULL)) {
		fprintf(stderr, "selfcheck: pthread_create failed\n");
		return 2;
	}
	/* READY_DELAY_MS: see the top comment; the counter also gets to move */
	sleep_us(READY_DELAY_MS * 1000);
	for (int i = 0; i < 5000 && atomic_load(&counter) < 5; i++)
		sleep_us(1000);
	ready_counter = atomic_load(&counter);
	if (write_file("ready",
		       "pid=%d start=%llu counter=%llu anon=%p anon_len=%d memfd=%p memfd_len=%d\n",
		       getpid(), start_time, (unsigned long long)ready_counter, (void *)anon,
		       ANON_LEN, (void *)(memfd_map + MEMFD_PAGE), MEMFD_LEN)) {
		perror("selfcheck: ready");
		return 2;
	}

	deadline = now_ns(CLOCK_MONOTONIC) + (int64_t)LIFETIME_S * 1000000000;
	for (;;) {
		int fd = open("trigger", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t len = read(fd, expect, sizeof(expect) - 1);
			close(fd);
			expect[len > 0 ? len : 0] = '\0';
			expect[strcspn(expect, "\n")] = '\0';
			break;
		}
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			write_file("result", "FAIL no trigger within %d s\n", LIFETIME_S);
			return 1;
		}
		sleep_us(10000);
	}

	const char *e = strncmp(expect, "expect=", 7) ? expect : expect + 7;
	int ret = check(e, ready_counter, thread, why, sizeof(why));
	if (ret == 0) {
		char ns_now[64];

		read_time_ns(ns_now, sizeof(ns_now));
		ret = write_file(
			"result",
			"PASS %s start=%llu->%llu timens=%s counter=%llu..%llu max_gap_ms=%lld\n",
			e, start_time, read_start_time(), strcmp(ns_now, time_ns) ? "new" : "same",
			(unsigned long long)ready_counter,
			(unsigned long long)atomic_load(&counter),
			(long long)(atomic_load(&max_gap_ns) / 1000000));
	} else {
		write_file("result", "FAIL %s\n", why);
	}
	return ret ? 1 : 0;
}
