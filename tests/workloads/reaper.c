// SPDX-License-Identifier: MIT
/*
 * Runs a command as a child subreaper and reports how every process it reaps
 * ended, so that a test can learn the exit status of a process that is not
 * its child: `criu restore -d` exits after the restore, and the restored task
 * is re-parented to the nearest subreaper, which is this program.
 *
 *   reaper STATUSFILE CMD [ARG...]
 *
 * Appends one line per reaped process to STATUSFILE:
 *   "cmd PID exit N" / "cmd PID signal N"        for CMD itself
 *   "orphan PID exit N" / "orphan PID signal N"  for adopted descendants
 * and exits when it has no children left (its own status: CMD's exit code).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int out, status, cmd_rc = 127;
	pid_t cmd, pid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s STATUSFILE CMD [ARG...]\n", argv[0]);
		return 2;
	}
	out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (out < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("reaper");
		return 2;
	}
	cmd = fork();
	if (cmd < 0) {
		perror("reaper: fork");
		return 2;
	}
	if (cmd == 0) {
		execvp(argv[2], argv + 2);
		perror("reaper: exec");
		_exit(127);
	}
	while ((pid = waitpid(-1, &status, 0)) > 0 || errno == EINTR) {
		if (pid <= 0)
			continue;
		const char *who = pid == cmd ? "cmd" : "orphan";
		if (WIFEXITED(status))
			dprintf(out, "%s %d exit %d\n", who, pid, WEXITSTATUS(status));
		else
			dprintf(out, "%s %d signal %d\n", who, pid, WTERMSIG(status));
		if (pid == cmd)
			cmd_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	return cmd_rc;
}
