/* SPDX-License-Identifier: MIT */
/*
 * What the unit tests share about the real topology captures in
 * tests/fixtures/kfd-topologies (read-only: tests that change a tree copy it first).
 * Include after <cmocka.h>: the helpers fail the running test on error.
 */
#ifndef AMDGPU_CRIU_TESTS_FIXTURES_H
#define AMDGPU_CRIU_TESTS_FIXTURES_H

#include <stddef.h>

#define VEGA10	    "k8sdp-vega10-mi25-1gpu-1socket"
#define MI210	    "k8sdp-mi210-8gpu-2hives-2socket"
#define MI300X	    "k8sdp-mi300x-8gpu-cpx-63part-2socket"
#define MI308X	    "k8sdp-mi308x-8gpu-cpx-32part-2socket"
#define MI300A	    "mi300a-4apu-4socket-readme-capture"
#define WORKSTN	    "rocprofsdk-testdata-workstation-3gpu-plus-3-foreign-nodes"
#define MI100_NODE  "rocmi-mi100-gpu-node-only"
#define RX7900_NODE "tinygrad-rx7900xtx-gpu-node-only"

/* The captures with a nodes/ tree, i.e. loadable as a topology root. */
extern const char *const fixture_full_trees[6];

/* $KFD_FIXTURES, or tests/fixtures/kfd-topologies relative to the working directory. */
const char *fixtures_dir(void);

/* snprintf that fails the test instead of truncating. */
void fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));

/* buf := fixtures_dir()/name */
void fixture_path(char *buf, size_t len, const char *name);

#endif
