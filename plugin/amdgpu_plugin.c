// SPDX-License-Identifier: MIT
/*
 * CRIU entry points of the amdgpu plugin.
 *
 * The hooks stay thin: each one calls into a module that can be tested
 * without CRIU (plugin/dump/, plugin/restore/). CRIU gives hooks no context argument, so
 * the one session of the running stage lives in `plugin` below; nothing
 * else in the plugin is global except the shared /dev/kfd handle (kfd_dev.h).
 * Files and mappings that are not ours get -ENOTSUP, so other plugins (and
 * CRIU's own error for unsupported files) still apply.
 *
 * Installed in /usr/lib/criu, the plugin is loaded for every CRIU run on the
 * host. For a task without a GPU (no /dev/kfd or render node of a KFD GPU
 * open or mapped, task_gpu.h) every hook does nothing and fails nothing:
 *   PAUSE_DEVICES, CHECKPOINT_DEVICES  0 (also for a task that exited
 *                                      meanwhile: CRIU finds it gone too)
 *   DUMP_EXT_FILE, HANDLE_DEVICE_VMA   -ENOTSUP (not our file)
 *   init, restore                      no GPU files in the images: inactive
 *   RESTORE_EXT_FILE, UPDATE_VMA_MAP,
 *   RESUME_DEVICES_LATE                inactive: -ENOTSUP; in a checkpoint
 *                                      with GPUs, a task without: -ENOTSUP,
 *                                      resp. 0 (KFD has no process of it)
 * The options (the environment, the options file) are read once, at init;
 * one that means nothing refuses the first GPU met, and a run without GPUs
 * logs it as one warning.
 * Under `criu --stream` (criu_stream.h) every image of ours goes through
 * CRIU's img_streamer_open(): the metadata images through a private stage
 * in memory (stream_stage.h: written there by the hooks, sent after each
 * one; fetched at the restore's init, before the session loads them), the
 * BO contents streamed by the copy threads (datapath/bo_stream.h). A CRIU
 * without img_streamer_open() gets the stage's GPUs refused in one line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/stat.h>

#include "criu-plugin.h"
#include "images/kfd_image.h"
#include "options/options.h"
#include "plugin/criu_stream.h"
#include "plugin/dump/dump_kfd.h"
#include "plugin/dump/dump_render.h"
#include "plugin/dump/dump_session.h"
#include "plugin/log.h"
#include "plugin/stream_stage.h"
#include "plugin/restore/restore.h"

static struct {
	int stage_id;
	enum criu_stream stream;
	char stream_peer[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* its socket */
	bool dump_ready, restore_ready;
	struct stream_stage stage; /* under --stream: our metadata images; dir_fd -1 otherwise */
	struct dump_session dump;
	struct restore_session restore;
} plugin = {.stage = {.dir_fd = -1}};

static const char *stage_name(int stage)
{
	switch (stage) {
	case CR_PLUGIN_STAGE__DUMP:
		return "dump";
	case CR_PLUGIN_STAGE__PRE_DUMP:
		return "pre-dump";
	case CR_PLUGIN_STAGE__RESTORE:
		return "restore";
	default:
		return "unknown";
	}
}

/*
 * The stage's options, read once (options/options.h), from CRIU's
 * environment and the options file. Their error is not the run's: the
 * session refuses the first GPU with it (a CRIU run without GPUs goes on),
 * so it is handed down, not logged here.
 */
static const char *environment(const char *name)
{
	return getenv(name);
}

static void read_options(int stage, struct amdgpu_options *opts, char *error, size_t len)
{
	unsigned int stages = stage == CR_PLUGIN_STAGE__RESTORE ? OPTIONS_RESTORE : OPTIONS_DUMP;

	if (!options_read(opts, stages, environment, error, len) && opts->file[0])
		pr_info("options file %s: %u option%s set (the environment's own win)", opts->file,
			opts->from_file, opts->from_file == 1 ? "" : "s");
}

/*
 * Under `criu --stream` the images go through CRIU's img_streamer_open()
 * (criu_stream.h), staged in memory (stream_stage.h). Without the symbol,
 * the stage's GPUs are refused: the line goes where an options error goes,
 * unless there is one already. -errno only when the stage cannot be made.
 */
static int detect_stream(int stage, char *error, size_t len)
{
	char why[512];
	int ret =
		criu_stream_detect(&plugin.stream, plugin.stream_peer, sizeof(plugin.stream_peer));

	plugin.stage.dir_fd = -1;
	if (ret)
		pr_warn("cannot tell whether CRIU streams its images: /proc/self/fd: %s",
			strerror(-ret));
	if (plugin.stream == CRIU_STREAM_NONE)
		return 0;
	if (!criu_stream_open_symbol()) {
		if (!*error)
			criu_stream_refusal(stage_name(stage), plugin.stream_peer, error, len);
		return 0;
	}
	ret = stream_stage_open(&plugin.stage, NULL, criu_stream_image_open, NULL, why,
				sizeof(why));
	if (ret) {
		pr_err("criu %s --stream: %s", stage_name(stage), why);
		return ret;
	}
	criu_stream_set_active(plugin.stream);
	pr_info("criu %s --stream: images through %s, staged in %s", stage_name(stage),
		plugin.stream_peer, plugin.stage.path);
	return 0;
}

/* Restore: our metadata images from the stream into the stage, before the session loads them. */
static int fetch_streamed(struct amdgpu_options *opts)
{
	uint32_t count;
	char why[512];
	int ret = stream_stage_fetch(&plugin.stage, &count, why, sizeof(why));

	if (ret) {
		pr_err("criu restore --stream: %s", why);
		return ret;
	}
	if (count)
		pr_info("criu restore --stream: %u images of the plugin from the stream%s", count,
			opts->parallel_restore ? "; BO contents written by each task (the stream "
						 "serves them in turn)"
					       : "");
	opts->parallel_restore = false;
	return 0;
}

/* The directory the dump's hooks write images into: the stage under --stream. */
static int dump_dir(void)
{
	return plugin.stage.dir_fd >= 0 ? plugin.stage.dir_fd : criu_get_image_dir();
}

/* Dump, after a hook wrote images: under --stream, they go into the stream. */
static int dump_flush(int ret)
{
	char why[512];

	if (ret || plugin.stage.dir_fd < 0)
		return ret;
	ret = stream_stage_flush(&plugin.stage, why, sizeof(why));
	if (ret)
		pr_err("criu dump --stream: %s", why);
	return ret;
}

static int amdgpu_plugin_init(int stage)
{
	struct amdgpu_options opts; /* copied by the session */
	char options_error[600];
	int ret;

	plugin.stage_id = stage;
	read_options(stage, &opts, options_error, sizeof(options_error));
	ret = detect_stream(stage, options_error, sizeof(options_error));
	if (!ret && stage == CR_PLUGIN_STAGE__RESTORE && plugin.stage.dir_fd >= 0)
		ret = fetch_streamed(&opts);
	if (ret) {
		stream_stage_close(&plugin.stage);
	} else if (stage == CR_PLUGIN_STAGE__RESTORE) {
		ret = restore_session_init(&plugin.restore, dump_dir(), &opts, options_error);
		plugin.restore_ready = !ret;
		if (ret)
			restore_session_fini(&plugin.restore, ret);
	} else {
		ret = dump_session_init(&plugin.dump, &opts, options_error);
		plugin.dump_ready = !ret;
	}
	pr_info("initialised for %s%s", stage_name(stage), ret ? " (failed)" : "");
	return ret ? -1 : 0;
}

static void amdgpu_plugin_fini(int stage, int ret)
{
	if (plugin.dump_ready)
		dump_session_fini(&plugin.dump);
	if (plugin.restore_ready)
		restore_session_fini(&plugin.restore, ret);
	plugin.dump_ready = plugin.restore_ready = false;
	stream_stage_close(&plugin.stage);
	pr_info("finished %s (ret %d)", stage_name(stage), ret);
}

CR_PLUGIN_REGISTER("amdgpu_plugin", amdgpu_plugin_init, amdgpu_plugin_fini)

/* CRIU reads -ENOTSUP (= -EOPNOTSUPP) as "not this plugin's file": not for a failure of ours. */
static int our_failure(int ret)
{
	return ret == -ENOTSUP ? -EIO : ret;
}

static int amdgpu_plugin_dump_file(int fd, int id)
{
	struct stat st;

	if (!plugin.dump_ready || fstat(fd, &st))
		return -ENOTSUP;
	if (bo_share_is_dmabuf(fd)) {
		plugin.dump.dir_fd = dump_dir();
		return our_failure(dump_flush(dump_dmabuf_file(&plugin.dump, fd, (uint32_t)id)));
	}
	switch (dump_classify(&plugin.dump, &st)) {
	case GPU_FILE_KFD:
		plugin.dump.dir_fd = dump_dir();
		return our_failure(dump_flush(dump_kfd_file(&plugin.dump, fd, (uint32_t)id)));
	case GPU_FILE_RENDER:
		plugin.dump.dir_fd = dump_dir();
		return our_failure(
			dump_flush(dump_render_file(&plugin.dump, fd, &st, (uint32_t)id)));
	default:
		return -ENOTSUP;
	}
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__DUMP_EXT_FILE, amdgpu_plugin_dump_file)

static int amdgpu_plugin_pause_devices(int pid)
{
	if (!plugin.dump_ready)
		return -ENOTSUP;
	return dump_flush(dump_hsakmt_files(&plugin.dump, dump_dir(), pid));
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__PAUSE_DEVICES, amdgpu_plugin_pause_devices)

static int amdgpu_plugin_checkpoint_devices(int pid)
{
	if (!plugin.dump_ready)
		return -ENOTSUP;
	return dump_render_audit(&plugin.dump, pid);
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__CHECKPOINT_DEVICES, amdgpu_plugin_checkpoint_devices)

static int amdgpu_plugin_handle_device_vma(int fd, const struct stat *st)
{
	(void)fd;
	if (!plugin.dump_ready || dump_classify(&plugin.dump, st) == GPU_FILE_NONE)
		return -ENOTSUP;
	return 0;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, amdgpu_plugin_handle_device_vma)

/*
 * A streamed restore finds no images of ours in the image directory: the
 * stream says whether file id is ours, and a GPU file is refused.
 */
static int streamed_restore_file(uint32_t id)
{
	static const enum kfd_image_kind kinds[] = {KFD_IMAGE_PROCESS, KFD_IMAGE_RENDER,
						    KFD_IMAGE_DMABUF};
	criu_stream_open_fn stream_open = criu_stream_open_symbol();
	char name[KFD_IMAGE_NAME_MAX], why[600];
	size_t i;
	int ret = 0;

	if (!stream_open)
		return -ENOTSUP;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !ret; i++) {
		kfd_image_name(name, sizeof(name), kinds[i], id);
		ret = criu_stream_has_image(stream_open, name);
	}
	if (!ret)
		return -ENOTSUP;
	if (ret < 0) {
		pr_err("criu restore --stream: could not ask the image streamer for %s (%s)", name,
		       strerror(-ret));
		return ret;
	}
	criu_stream_refusal("restore", plugin.stream_peer, why, sizeof(why));
	pr_err("%s: the checkpoint has GPU file %s", why, name);
	return -EINVAL;
}

static int amdgpu_plugin_restore_file(int id)
{
	if (plugin.stream == CRIU_STREAM_RESTORE &&
	    !(plugin.restore_ready && plugin.restore.active))
		return streamed_restore_file((uint32_t)id);
	if (!plugin.restore_ready)
		return -ENOTSUP;
	return restore_file(&plugin.restore, criu_get_image_dir(), (uint32_t)id);
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESTORE_EXT_FILE, amdgpu_plugin_restore_file)

static int amdgpu_plugin_update_vma_map(const char *path, const uint64_t addr,
					const uint64_t old_pgoff, uint64_t *new_pgoff,
					int *plugin_fd)
{
	if (!plugin.restore_ready)
		return -ENOTSUP;
	return restore_vma(&plugin.restore, path, addr, old_pgoff, new_pgoff, plugin_fd);
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__UPDATE_VMA_MAP, amdgpu_plugin_update_vma_map)

static int amdgpu_plugin_resume_devices_late(int pid)
{
	if (!plugin.restore_ready)
		return -ENOTSUP;
	return restore_resume(&plugin.restore, pid);
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE, amdgpu_plugin_resume_devices_late)
