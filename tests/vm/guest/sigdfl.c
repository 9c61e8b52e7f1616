// SPDX-License-Identifier: MIT
/*
 * sigdfl CMD [ARG...]: runs CMD with every signal at its default action and
 * none blocked. A non-interactive shell starts its background jobs with
 * SIGINT and SIGQUIT ignored, and exec keeps ignored signals, so a test that
 * sends SIGINT to a background `criu` needs this to see what CRIU does with it.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	sigset_t none;
	int sig;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CMD [ARG...]\n", argv[0]);
		return 2;
	}
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL); /* fails harmlessly for SIGKILL, SIGSTOP and unused numbers */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
