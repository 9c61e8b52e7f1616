// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>

#include "plugin/clock.h"
#include "plugin/dump/dump_guard.h"
#include "plugin/kfd_ioctl.h"

#define GUARD_SEIZE_POLL_MS 5

struct dump_guard_job {
	int kfd_fd;
	pid_t leader;
	uint32_t ns_pid;
};

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* CRIU died without standing us down: become the leader's ptracer, UNPAUSE. */
static int unpause_as_tracer(void *arg)
{
	const struct dump_guard_job *job = arg;
	struct kfd_ioctl_criu_args args = {.op = KFD_CRIU_OP_UNPAUSE};
	uint64_t start = clock_usec();
	int ret;

	/* EPERM while the dead CRIU is still its tracer (exit_ptrace() comes after exit_files()) */
	while (ptrace(PTRACE_SEIZE, job->leader, 0, 0)) {
		if (errno != EPERM || clock_usec() - start > GUARD_SEIZE_WAIT_MS * 1000ull) {
			guardian_kmsg("amdgpu_plugin: criu died during the dump of pid %u; cannot "
				      "unpause its GPU queues (ptrace: %s): restart it",
				      job->ns_pid, strerror(errno));
			return 1;
		}
		sleep_ms(GUARD_SEIZE_POLL_MS);
	}
	ret = kfd_criu_op(job->kfd_fd, &args);
	if (ret)
		guardian_kmsg("amdgpu_plugin: criu died during the dump of pid %u; cannot unpause "
			      "its GPU queues (%s): restart it",
			      job->ns_pid, strerror(-ret));
	else
		guardian_kmsg("amdgpu_plugin: criu died during the dump of pid %u; unpaused its "
			      "GPU queues %llu ms later as its new tracer",
			      job->ns_pid, (unsigned long long)(clock_usec() - start) / 1000);
	return ret ? 1 : 0; /* exiting detaches us */
}

int dump_guard_start(struct guardian *g, int kfd_fd, pid_t leader, uint32_t ns_pid)
{
	struct dump_guard_job job = {.kfd_fd = kfd_fd, .leader = leader, .ns_pid = ns_pid};

	/* the guardian gets its own copy of job (fork) */
	return guardian_start(g, &kfd_fd, 1, unpause_as_tracer, &job);
}
