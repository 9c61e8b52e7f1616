/* SPDX-License-Identifier: MIT */
/* Monotonic time in microseconds, for the durations the plugin logs. */
#ifndef AMDGPU_CRIU_CLOCK_H
#define AMDGPU_CRIU_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#endif
