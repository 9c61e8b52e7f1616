// SPDX-License-Identifier: MIT
/*
 * zdtm-gpu-share [--same-process] [--size BYTES] READY TRIGGER RESULT: GPU
 * memory shared through a dma-buf, as ROCr's IPC shares it
 * (hipIpcGetMemHandle / hipIpcOpenMemHandle on ROCm 6.1+): one KFD BO
 * exported (AMDKFD_IOC_EXPORT_DMABUF) and imported (AMDKFD_IOC_IMPORT_DMABUF).
 *
 * Default: two processes. The parent forks the child before either opens
 * /dev/kfd (a SOCK_SEQPACKET pair between them), allocates a VRAM BO on the
 * first visible GPU, fills it, and passes its dma-buf to the child over the
 * socket (SCM_RIGHTS), then closes its fd. The child imports it on the same
 * GPU, maps it there and closes the fd too: at the dump, neither holds a
 * dma-buf fd, only the two KFD BOs that are one buffer.
 * --same-process: one process with two GPUs imports its own BO on the
 * second GPU (a GTT BO there that shares the VRAM's pages).
 * --keep-fd: the parent keeps its dma-buf fd open. --holder: a third
 * process, forked first, is sent the dma-buf fd too and only holds it.
 * --size: the BO's size (default 1 MiB).
 *
 * The child sees its import through a CPU mapping of it on its render
 * node (gemlib.h, gem_map_dmabuf(), as ROCr maps memory), kept across the
 * dump; --same-process sees it through a dma-buf of the import (exported
 * again, mmapped for the check, unmapped and closed after it). Either way
 * what the importer sees is what its BO holds, shared or not.
 *
 * READY: "pid P", "child C" (two processes), "holder H", one "fd N TARGET"
 * per open fd (the child's in READY.child, the holder's in READY.holder). On TRIGGER the parent
 * checks: its BO holds the pattern; the importer sees it; a write by the importer is seen by the
 * exporter and one by the exporter by the importer; the importer unmaps and frees its import with
 * the KFD handle it had; the holder sees the exporter's write through its fd and writes through it
 * what the exporter then sees, and the exporter's kept fd shows that too. The importer has a free
 * handle slot below its import's (a BO made before the import and freed after it). RESULT: PASS, or
 * "FAIL <what>" for the first check that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemlib.h"
#include "kfdlib.h"
#include "zdtm_util.h"

#define SEED_FIRST    0x11 /* the exporter's fill */
#define SEED_IMPORTER 0x22 /* written by the importer after the restore */
#define SEED_EXPORTER 0x33 /* then by the exporter */
#define SEED_HOLDER   0x44 /* then through the holder's dma-buf fd */

struct opts {
	bool same_process, keep_fd, holder;
	uint64_t size;
	const char *ready, *trigger, *result;
};

/*
 * The importer's view of its BO (bo->cpu, else a dma-buf of it mapped for
 * the moment): checks seed `check`, then writes seed `write` if not 0.
 * "ok" or "FAIL ..." in msg.
 */
static void through_view(struct kfdl *k, const struct kfdl_bo *bo, uint8_t check, uint8_t write,
			 char *msg, size_t len)
{
	int64_t bad;
	uint8_t *p = bo->cpu;
	int fd, rc;

	if (!p) {
		rc = kfdl_export_dmabuf(k, bo, &fd);
		if (rc) {
			snprintf(msg, len, "FAIL importer: EXPORT_DMABUF: %s", strerror(-rc));
			return;
		}
		p = mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED) {
			snprintf(msg, len, "FAIL importer: mmap of its dma-buf: %s",
				 strerror(errno));
			return;
		}
	}
	bad = zdtm_verify(p, bo->size, check);
	if (bad >= 0)
		snprintf(msg, len, "FAIL the importer does not see seed %#x (byte %lld)", check,
			 (long long)bad);
	else
		snprintf(msg, len, "ok");
	if (bad < 0 && write)
		zdtm_fill(p, bo->size, write);
	if (p != bo->cpu)
		munmap(p, bo->size);
}

/* Through an mmap of dma-buf fd: checks seed `check`, then writes `write` if not 0. */
static void through_fd(int fd, uint64_t size, uint8_t check, uint8_t write, const char *who,
		       char *msg, size_t len)
{
	uint8_t *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int64_t bad;

	if (p == MAP_FAILED) {
		snprintf(msg, len, "FAIL %s: mmap of its dma-buf fd: %s", who, strerror(errno));
		return;
	}
	bad = zdtm_verify(p, size, check);
	if (bad >= 0)
		snprintf(msg, len, "FAIL %s's dma-buf fd does not show seed %#x (byte %lld)", who,
			 check, (long long)bad);
	else
		snprintf(msg, len, "ok");
	if (bad < 0 && write)
		zdtm_fill(p, size, write);
	munmap(p, size);
}

static int send_fd(int sock, int fd)
{
	char c = 'f', ctl[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static int send_line(int sock, const char *s)
{
	return send(sock, s, strlen(s), 0) < 0 ? -errno : 0;
}

static int recv_line(int sock, char *buf, size_t len)
{
	ssize_t n;

	do
		n = recv(sock, buf, len - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n ? -errno : -EPIPE;
	buf[n] = '\0';
	return 0;
}

static int write_ready(const char *path, pid_t child, pid_t holder)
{
	char head[128];
	int n = snprintf(head, sizeof(head), "pid %d\n", (int)getpid());

	if (child > 0)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "child %d\n", (int)child);
	if (holder > 0)
		snprintf(head + n, sizeof(head) - (size_t)n, "holder %d\n", (int)holder);
	return zdtm_write_ready(path, head);
}

static int result(const struct opts *o, const char *text)
{
	return zdtm_result(o->result, text);
}

/* The child: imports what the parent sends, then answers "check SEED WRITE" requests. */
static int importer(const struct opts *o, int sock)
{
	static struct kfdl k;
	struct kfdl_bo bo, own, gap, after;
	char ready[300], req[64], msg[256];
	int sel = 0, fd, rc;
	unsigned int check, write;

	/*
	 * A GTT BO of its own, CPU-mapped through the render node as ROCr's
	 * are (a restored task without any GPU mapping keeps the plugin's
	 * render fds: README, known limits); and a free handle slot below the
	 * import's (a BO made before it and freed after), which a restore
	 * must not hand to the import.
	 */
	rc = kfdl_open_sel(&k, &sel, 1);
	if (!rc)
		rc = kfdl_alloc(&k, 0, KFDL_GTT, KFDL_PAGE, &own);
	if (!rc)
		rc = kfdl_alloc(&k, 0, KFDL_GTT, KFDL_PAGE, &gap);
	if (!rc)
		rc = kfdl_alloc(&k, 0, KFDL_GTT, KFDL_PAGE, &after);
	fd = rc ? rc : recv_fd(sock);
	rc = fd < 0 ? fd : kfdl_import_dmabuf(&k, 0, fd, o->size, &bo);
	if (!rc)
		rc = gem_map_dmabuf(k.gpu[0].render_fd, fd, o->size, &bo.cpu);
	if (fd >= 0)
		close(fd);
	if (!rc)
		rc = kfdl_map(&k, &bo, &k.gpu[0].gpu_id, 1);
	if (!rc)
		rc = kfdl_free(&k, &gap);
	if (rc) {
		snprintf(msg, sizeof(msg), "FAIL importer setup: %s", strerror(-rc));
		send_line(sock, msg);
		return 1;
	}
	through_view(&k, &bo, SEED_FIRST, 0, msg, sizeof(msg));
	snprintf(ready, sizeof(ready), "%s.child", o->ready);
	rc = write_ready(ready, 0, 0);
	if (rc)
		snprintf(msg, sizeof(msg), "FAIL importer READY: %s", strerror(-rc));
	send_line(sock, msg);
	while (!recv_line(sock, req, sizeof(req))) {
		if (!strcmp(req, "free")) { /* with the handle it had: KFD must know it */
			munmap(bo.cpu, bo.size);
			bo.cpu = NULL;
			rc = kfdl_unmap_all(&k, &bo);
			if (!rc)
				rc = kfdl_free(&k, &bo);
			snprintf(msg, sizeof(msg),
				 rc ? "FAIL importer: its import's handle %#llx: %s" : "ok",
				 (unsigned long long)bo.handle, strerror(-rc));
		} else if (sscanf(req, "check %x %x", &check, &write) == 2) {
			through_view(&k, &bo, (uint8_t)check, (uint8_t)write, msg, sizeof(msg));
		} else {
			break;
		}
		send_line(sock, msg);
	}
	return 0;
}

/* The holder: keeps the dma-buf fd it is sent and answers "check SEED WRITE" through it. */
static int holder(const struct opts *o, int sock)
{
	char ready[300], req[64], msg[256] = "ok";
	unsigned int check, write;
	int fd = recv_fd(sock), rc;

	if (fd < 0) {
		snprintf(msg, sizeof(msg), "FAIL holder: no fd: %s", strerror(-fd));
	} else {
		snprintf(ready, sizeof(ready), "%s.holder", o->ready);
		rc = write_ready(ready, 0, 0);
		if (rc)
			snprintf(msg, sizeof(msg), "FAIL holder READY: %s", strerror(-rc));
	}
	send_line(sock, msg);
	while (fd >= 0 && !recv_line(sock, req, sizeof(req)) &&
	       sscanf(req, "check %x %x", &check, &write) == 2) {
		through_fd(fd, o->size, (uint8_t)check, (uint8_t)write, "the holder", msg,
			   sizeof(msg));
		send_line(sock, msg);
	}
	return 0;
}

static void ask_line(int sock, const char *req, char *msg, size_t len)
{
	if (send_line(sock, req) || recv_line(sock, msg, len))
		snprintf(msg, len, "FAIL no answer to \"%s\"", req);
}

/* Asks the importer (child over sock, else this process's import) to check and write. */
static void ask(struct kfdl *k, const struct kfdl_bo *import, int sock, uint8_t check,
		uint8_t write, char *msg, size_t len)
{
	char req[64];

	if (!import) {
		snprintf(req, sizeof(req), "check %x %x", check, write);
		if (send_line(sock, req) || recv_line(sock, msg, len))
			snprintf(msg, len, "FAIL the importer does not answer");
		return;
	}
	through_view(k, import, check, write, msg, len);
}

/* The holder and the kept fd: a write through the holder's fd is the exporter's BO's. */
static void check_fds(const struct kfdl_bo *bo, int holder_sock, int kept_fd, char *msg, size_t len)
{
	char req[64];
	int64_t bad;

	if (holder_sock >= 0) {
		snprintf(req, sizeof(req), "check %x %x", SEED_EXPORTER, SEED_HOLDER);
		ask_line(holder_sock, req, msg, len);
		if (strcmp(msg, "ok"))
			return;
		bad = zdtm_verify(bo->cpu, bo->size, SEED_HOLDER);
		if (bad >= 0) {
			snprintf(msg, len,
				 "FAIL the exporter does not see the holder's write (byte %lld)",
				 (long long)bad);
			return;
		}
	}
	if (kept_fd >= 0)
		through_fd(kept_fd, bo->size, holder_sock >= 0 ? SEED_HOLDER : SEED_EXPORTER, 0,
			   "the exporter", msg, len);
}

/* The self-check on TRIGGER, the first failure in msg. */
static void self_check(struct kfdl *k, const struct kfdl_bo *bo, const struct kfdl_bo *import,
		       int sock, char *msg, size_t len)
{
	int64_t bad = zdtm_verify(bo->cpu, bo->size, SEED_FIRST);

	if (bad >= 0) {
		snprintf(msg, len, "FAIL exporter BO byte %lld", (long long)bad);
		return;
	}
	ask(k, import, sock, SEED_FIRST, SEED_IMPORTER, msg, len);
	if (strcmp(msg, "ok"))
		return;
	bad = zdtm_verify(bo->cpu, bo->size, SEED_IMPORTER);
	if (bad >= 0) {
		snprintf(msg, len,
			 "FAIL the exporter does not see the importer's write (byte %lld)",
			 (long long)bad);
		return;
	}
	zdtm_fill(bo->cpu, bo->size, SEED_EXPORTER);
	ask(k, import, sock, SEED_EXPORTER, 0, msg, len);
	if (strcmp(msg, "ok"))
		return;
	if (!import && (send_line(sock, "free") || recv_line(sock, msg, len)))
		snprintf(msg, len, "FAIL the importer does not answer");
	if (!strcmp(msg, "ok"))
		snprintf(msg, len, "PASS");
}

static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->size = 1 << 20;
	for (i = 1; i < argc - 3; i++) {
		if (!strcmp(argv[i], "--same-process"))
			o->same_process = true;
		else if (!strcmp(argv[i], "--keep-fd"))
			o->keep_fd = true;
		else if (!strcmp(argv[i], "--holder"))
			o->holder = true;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc - 3)
			o->size = strtoull(argv[++i], NULL, 0);
		else
			return -EINVAL;
	}
	if (argc < 4 || !o->size || o->size % KFDL_PAGE)
		return -EINVAL;
	o->ready = argv[argc - 3];
	o->trigger = argv[argc - 2];
	o->result = argv[argc - 1];
	return 0;
}

/* A process, forked, that runs fn(o, its end of a new socket pair); ours in *sock. Its pid or -1.
 */
static pid_t spawn(const struct opts *o, int (*fn)(const struct opts *, int), int *sock)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (!pid) {
		close(sv[0]);
		exit(fn(o, sv[1]));
	}
	close(sv[1]);
	if (pid < 0)
		close(sv[0]);
	else
		*sock = sv[0];
	return pid;
}

int main(int argc, char **argv)
{
	static struct kfdl k;
	struct kfdl_bo bo = {0}, import = {0};
	int sel[2] = {0, 1}, sock = -1, holder_sock = -1, fd = -1, rc;
	char msg[256] = "";
	pid_t child = 0, holder_pid = 0;
	struct opts o;

	if (parse(argc, argv, &o)) {
		fprintf(stderr,
			"usage: %s [--same-process] [--keep-fd] [--holder] [--size BYTES] READY "
			"TRIGGER RESULT\n",
			argv[0]);
		return 2;
	}
	if (o.holder && (holder_pid = spawn(&o, holder, &holder_sock)) < 0)
		return 1;
	if (!o.same_process && (child = spawn(&o, importer, &sock)) < 0)
		return 1;
	rc = kfdl_open_sel(&k, sel, o.same_process ? 2 : 1);
	if (!rc)
		rc = kfdl_alloc(&k, 0, KFDL_VRAM, o.size, &bo);
	if (!rc)
		rc = kfdl_map(&k, &bo, &k.gpu[0].gpu_id, 1);
	if (!rc) {
		zdtm_fill(bo.cpu, bo.size, SEED_FIRST);
		rc = kfdl_export_dmabuf(&k, &bo, &fd);
	}
	if (!rc && o.same_process) {
		rc = kfdl_import_dmabuf(&k, 1, fd, o.size, &import);
		if (!rc)
			rc = kfdl_map(&k, &import, &k.gpu[1].gpu_id, 1);
		if (!rc)
			through_view(&k, &import, SEED_FIRST, 0, msg, sizeof(msg));
	} else if (!rc) {
		rc = send_fd(sock, fd);
		if (!rc)
			rc = recv_line(sock, msg, sizeof(msg));
	}
	if (!rc && !strcmp(msg, "ok") && o.holder) {
		rc = send_fd(holder_sock, fd);
		if (!rc)
			rc = recv_line(holder_sock, msg, sizeof(msg));
	}
	if (fd >= 0 && !o.keep_fd) {
		close(fd);
		fd = -1;
	}
	if (rc || strcmp(msg, "ok")) {
		fprintf(stderr, "setup: %s\n", rc ? strerror(-rc) : msg);
		return result(&o, rc ? "FAIL setup" : msg);
	}
	rc = write_ready(o.ready, child, holder_pid);
	if (rc) {
		fprintf(stderr, "READY: %s\n", strerror(-rc));
		return 1;
	}
	while (access(o.trigger, F_OK))
		usleep(20 * 1000);
	self_check(&k, &bo, o.same_process ? &import : NULL, sock, msg, sizeof(msg));
	if (!strcmp(msg, "PASS") && (o.holder || o.keep_fd)) {
		check_fds(&bo, holder_sock, fd, msg, sizeof(msg));
		if (!strcmp(msg, "ok"))
			snprintf(msg, sizeof(msg), "PASS");
	}
	if (child > 0) {
		close(sock); /* the child's recv ends: it exits */
		waitpid(child, NULL, 0);
	}
	if (holder_pid > 0) {
		close(holder_sock);
		waitpid(holder_pid, NULL, 0);
	}
	return result(&o, msg);
}
