// SPDX-License-Identifier: MIT
/*
 * rocm-hip-basic: a probe of HIP's runtime (Debian testing's libamdhip64 6.4,
 * host API only, built with gcc -D__HIP_PLATFORM_AMD__) on kfdsim: one line
 * per call, so that a run tells which call works, which fails and which
 * hangs. No checkpoint.
 *
 *   rocm-hip-basic [--size BYTES] [--step-timeout S] [--blit] [--kernels]
 *
 * On device 0: hipGetDeviceCount, properties, hipMalloc (VRAM),
 * hipHostMalloc (pinned), malloc + hipHostRegister, hipStreamCreate,
 * hipEventCreate, hipMemcpy host -> VRAM -> registered host (bytes
 * compared), hipMemcpyAsync on the stream with an event recorded and
 * synchronised, hipIpcGetMemHandle; with --blit last a hipMemcpy2D VRAM ->
 * VRAM with pitches wider than its rows, which HIP runs as ROCclr's
 * rectangle blit kernel, one kfdsim does not model: a queue error, so HIP
 * aborts the program naming the error. With --kernels (for HIP without SDMA
 * queues: HSA_ENABLE_SDMA=0 GPU_FORCE_BLIT_COPY_SIZE=..., whose copies and
 * fills are ROCclr's blit kernels, which kfdsim carries out) device-to-
 * device hipMemcpy, aligned and not, hipMemset and hipMemsetD32, aligned
 * and not, each read back and compared with what it must give, byte for
 * byte. Each step prints "STEP ok WHAT" or
 * "STEP FAIL WHAT: ERROR"; a step that takes longer than --step-timeout
 * (default 120 s) prints "STEP HANG WHAT" and exits 3. The last line is
 * "RESULT PASS" or "RESULT FAIL N".
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hip/hip_runtime_api.h>

static int failures;
static unsigned int step_timeout = 120;
static char current[160];

static void on_alarm(int sig)
{
	(void)sig;
	/* only async-signal-safe calls */
	if (write(1, "STEP HANG ", 10) < 0 || write(1, current, strlen(current)) < 0 ||
	    write(1, "\n", 1) < 0)
		_exit(4);
	_exit(3);
}

/* the step about to run: named for the watchdog */
static void begin(const char *what)
{
	snprintf(current, sizeof(current), "%s", what);
	alarm(step_timeout);
}

static bool end(hipError_t e)
{
	alarm(0);
	if (e == hipSuccess) {
		printf("STEP ok %s\n", current);
	} else {
		printf("STEP FAIL %s: %s (%d)\n", current, hipGetErrorString(e), (int)e);
		failures++;
	}
	fflush(stdout);
	return e == hipSuccess;
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 131 + (i >> 8));
}

static hipError_t same(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i]) {
			printf("# byte %zu is 0x%02x, not 0x%02x\n", i, b[i], a[i]);
			return hipErrorUnknown;
		}
	return hipSuccess;
}

/* VRAM @dev (@size bytes) read back into @back, compared with @want */
static void check_vram(const char *what, const void *dev, unsigned char *back,
		       const unsigned char *want, size_t size)
{
	char name[160];

	memset(back, 0, size);
	snprintf(name, sizeof(name), "%s: read back", what);
	begin(name);
	if (!end(hipMemcpy(back, dev, size, hipMemcpyDeviceToHost)))
		return;
	snprintf(name, sizeof(name), "%s: bytes equal", what);
	begin(name);
	end(same(want, back, size));
}

/*
 * Device-to-device copies and fills (ROCclr's blit kernels), each checked
 * against a host model of the whole of @b: @a holds @src's pattern
 * (seed 7), @want and @back are host buffers of @size bytes.
 */
static void kernels(unsigned char *a, unsigned char *b, const unsigned char *src,
		    unsigned char *want, unsigned char *back, size_t size)
{
	size_t i;

	begin("hipMemcpy vram to vram (blit kernel)");
	if (end(hipMemcpy(b, a, size, hipMemcpyDeviceToDevice)))
		check_vram("vram to vram", b, back, src, size);
	memcpy(want, src, size);
	/* misaligned ends and a length with a remainder: 4-byte elements */
	memcpy(want + 3, src + 5, size - 9);
	begin("hipMemcpy vram+5 to vram+3, size-9 bytes (blit kernel)");
	if (end(hipMemcpy(b + 3, a + 5, size - 9, hipMemcpyDeviceToDevice)))
		check_vram("misaligned vram to vram", b, back, want, size);
	/* 16-byte aligned with a remainder of 7 */
	memcpy(want + 16, src + 32, size - 55);
	begin("hipMemcpy vram+32 to vram+16, size-55 bytes (blit kernel)");
	if (end(hipMemcpy(b + 16, a + 32, size - 55, hipMemcpyDeviceToDevice)))
		check_vram("aligned vram to vram with a remainder", b, back, want, size);
	memset(want, 0x5a, size);
	begin("hipMemset vram (fill kernel)");
	if (end(hipMemset(b, 0x5a, size)))
		check_vram("hipMemset", b, back, want, size);
	memset(want + 1, 0xa5, size - 6);
	begin("hipMemset vram+1, size-6 bytes (fill kernel)");
	if (end(hipMemset(b + 1, 0xa5, size - 6)))
		check_vram("misaligned hipMemset", b, back, want, size);
	for (i = 0; i + 4 <= size - 8; i += 4) {
		want[8 + i] = 0x04;
		want[8 + i + 1] = 0x03;
		want[8 + i + 2] = 0x02;
		want[8 + i + 3] = 0x01;
	}
	begin("hipMemsetD32 vram+8 (fill kernel)");
	if (end(hipMemsetD32((hipDeviceptr_t)(b + 8), 0x01020304, (size - 8) / 4)))
		check_vram("hipMemsetD32", b, back, want, size);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"size", required_argument, NULL, 's'},
					     {"step-timeout", required_argument, NULL, 't'},
					     {"blit", no_argument, NULL, 'b'},
					     {"kernels", no_argument, NULL, 'k'},
					     {0}};
	unsigned char *pinned = NULL, *reg = NULL;
	void *vram = NULL, *vram2 = NULL;
	hipStream_t stream = NULL;
	hipEvent_t event = NULL;
	hipIpcMemHandle_t ipc;
	hipDeviceProp_t prop;
	size_t size = 65536;
	bool blit = false, with_kernels = false;
	int c, n = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			size = strtoull(optarg, NULL, 0);
		else if (c == 't')
			step_timeout = (unsigned int)strtoul(optarg, NULL, 0);
		else if (c == 'b')
			blit = true;
		else if (c == 'k')
			with_kernels = true;
		else
			return 2;
	}
	signal(SIGALRM, on_alarm);
	/* upstream KFD has no legacy IPC ioctl: DMA-BUF, as on 6.12 */
	setenv("HSA_ENABLE_IPC_MODE_LEGACY", "0", 0);

	begin("hipGetDeviceCount");
	if (!end(hipGetDeviceCount(&n)) || n < 1)
		goto out;
	printf("devices %d\n", n);
	begin("hipGetDeviceProperties");
	if (end(hipGetDeviceProperties(&prop, 0)))
		printf("device 0 %s %s\n", prop.name, prop.gcnArchName);
	begin("hipSetDevice");
	end(hipSetDevice(0));
	begin("hipMalloc vram");
	if (!end(hipMalloc(&vram, size)))
		goto out;
	begin("hipHostMalloc pinned");
	if (!end(hipHostMalloc((void **)&pinned, size, hipHostMallocDefault)))
		goto out;
	reg = malloc(size);
	begin("hipHostRegister");
	if (!reg || !end(hipHostRegister(reg, size, hipHostRegisterDefault)))
		goto out;
	begin("hipStreamCreate");
	end(hipStreamCreate(&stream));
	begin("hipEventCreate");
	end(hipEventCreate(&event));

	fill(pinned, size, 7);
	memset(reg, 0, size);
	begin("hipMemcpy pinned host to vram");
	if (end(hipMemcpy(vram, pinned, size, hipMemcpyHostToDevice))) {
		begin("hipMemcpy vram to registered host");
		if (end(hipMemcpy(reg, vram, size, hipMemcpyDeviceToHost))) {
			begin("bytes back from vram equal");
			end(same(pinned, reg, size));
		}
	}
	if (stream && event) {
		memset(reg, 0, size);
		begin("hipMemcpyAsync vram to registered host on a stream");
		end(hipMemcpyAsync(reg, vram, size, hipMemcpyDeviceToHost, stream));
		begin("hipEventRecord");
		end(hipEventRecord(event, stream));
		begin("hipEventSynchronize");
		if (end(hipEventSynchronize(event))) {
			begin("async bytes back from vram equal");
			end(same(pinned, reg, size));
		}
		begin("hipStreamSynchronize");
		end(hipStreamSynchronize(stream));
	}
	begin("hipIpcGetMemHandle");
	end(hipIpcGetMemHandle(&ipc, vram));

	if (with_kernels) {
		unsigned char *want = malloc(size), *back = malloc(size);

		begin("hipMalloc vram 2");
		if (want && back && size >= 64 && end(hipMalloc(&vram2, size)))
			kernels(vram, vram2, pinned, want, back, size);
		free(want);
		free(back);
	}
	if (blit && !vram2) {
		begin("hipMalloc vram 2");
		if (end(hipMalloc(&vram2, size))) {
			printf("# next: a rectangle blit kernel; on kfdsim HIP aborts with a queue error\n");
			fflush(stdout);
			/* pitches wider than the rows: no linear copy */
			begin("hipMemcpy2D vram to vram (rectangle blit kernel)");
			end(hipMemcpy2D(vram2, 256, vram, 256, 128, size / 256 < 64 ? size / 256 : 64,
					hipMemcpyDeviceToDevice));
		}
	}
	if (event)
		hipEventDestroy(event);
	if (stream)
		hipStreamDestroy(stream);
out:
	if (reg) {
		hipHostUnregister(reg);
		free(reg);
	}
	if (pinned)
		hipHostFree(pinned);
	if (vram)
		hipFree(vram);
	if (vram2)
		hipFree(vram2);
	if (failures || n < 1)
		printf("RESULT FAIL %d\n", failures + (n < 1));
	else
		printf("RESULT PASS\n");
	return failures || n < 1 ? 1 : 0;
}
