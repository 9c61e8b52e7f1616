// SPDX-License-Identifier: MIT
/* The GPU libraries, loaded at first use (gpu_libs.h). */
#include "common/gpu_libs.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errmsg.h"

enum gpu_lib {
#define GPU_LIBS_ENUM(id, soname, package) id,
	GPU_LIBS_LIBRARIES(GPU_LIBS_ENUM)
#undef GPU_LIBS_ENUM
		GPU_LIBS_COUNT
};

static const struct {
	const char *soname, *package;
} libraries[GPU_LIBS_COUNT] = {
#define GPU_LIBS_NAME(id, so, pkg) [id] = {.soname = so, .package = pkg},
	GPU_LIBS_LIBRARIES(GPU_LIBS_NAME)
#undef GPU_LIBS_NAME
};

/* Where each function is found, in the order of struct gpu_libs. */
static const struct {
	enum gpu_lib lib;
	const char *name;
	size_t offset;
} functions[] = {
#define GPU_LIBS_FUNCTION(l, fn) {.lib = l, .name = #fn, .offset = offsetof(struct gpu_libs, fn)},
	GPU_LIBS_FUNCTIONS(GPU_LIBS_FUNCTION)
#undef GPU_LIBS_FUNCTION
};

/* Written once, under `once` (or by gpu_libs_use() before any thread). */
static struct gpu_libs table;
static int load_ret;
static char load_err[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int load_all(char *err, size_t errlen)
{
	void *handles[GPU_LIBS_COUNT] = {0};
	size_t n = 0, i;
	int ret = 0;

	for (; !ret && n < GPU_LIBS_COUNT; n++) {
		handles[n] = dlopen(libraries[n].soname, RTLD_NOW | RTLD_LOCAL);
		if (!handles[n])
			ret = errmsg_set(err, errlen, -ELIBACC, "cannot load %s (install %s): %s",
					 libraries[n].soname, libraries[n].package, dlerror());
	}
	for (i = 0; !ret && i < sizeof(functions) / sizeof(functions[0]); i++) {
		void *fn = dlsym(handles[functions[i].lib], functions[i].name);

		if (fn)
			*(void **)((char *)&table + functions[i].offset) = fn;
		else
			ret = errmsg_set(err, errlen, -ELIBACC, "%s has no %s (install %s)",
					 libraries[functions[i].lib].soname, functions[i].name,
					 libraries[functions[i].lib].package);
	}
	while (ret && n--) /* nothing half-loaded stays */
		if (handles[n])
			dlclose(handles[n]);
	return ret;
}

static void load_once(void)
{
	load_ret = load_all(load_err, sizeof(load_err));
}

int gpu_libs_load(char *err, size_t errlen)
{
	pthread_once(&once, load_once);
	if (load_ret)
		return errmsg_set(err, errlen, load_ret, "%s", load_err);
	return 0;
}

const struct gpu_libs *gpu_libs(void)
{
	if (gpu_libs_load(NULL, 0)) {
		fprintf(stderr, "amdgpu-criu: %s\n", load_err);
		abort();
	}
	return &table;
}

static void nothing_to_load(void)
{
}

void gpu_libs_use(const struct gpu_libs *fns)
{
	table = *fns;
	pthread_once(&once, nothing_to_load);
}
