/* SPDX-License-Identifier: MIT */
/*
 * Does the CRIU running the plugin stream its images (`criu dump --stream`,
 * `criu restore --stream`, through criu-image-streamer)?
 *
 * CRIU (4.1.1 and 4.2) connects to the streamer in open_image_dir(), before
 * it initialises its plugins, over a UNIX socket the streamer bound at
 * IMGDIR/streamer-capture.sock (dump) or IMGDIR/streamer-serve.sock
 * (restore), and keeps that connection open, as a service fd, until the run
 * ends. The plugin looks for it among its process's fds: a connected UNIX
 * socket whose peer's address ends in one of those names. A socket file an
 * earlier run left in the directory is no stream: no fd is connected to it.
 * CRIU's options struct is not read (its layout changes between versions).
 *
 * Streaming images needs CRIU's img_streamer_open(), looked up at run time
 * so that the plugin loads in a CRIU built without it (a streamed run with
 * GPUs is then refused, criu_stream_refusal()).
 */
#ifndef AMDGPU_CRIU_PLUGIN_CRIU_STREAM_H
#define AMDGPU_CRIU_PLUGIN_CRIU_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/bo_stream_types.h"

#define CRIU_STREAM_DUMP_SOCKET	   "streamer-capture.sock"
#define CRIU_STREAM_RESTORE_SOCKET "streamer-serve.sock"

enum criu_stream {
	CRIU_STREAM_NONE,
	CRIU_STREAM_DUMP,    /* connected to a streamer capturing the images */
	CRIU_STREAM_RESTORE, /* connected to a streamer serving them */
};

/*
 * Which stream the calling process holds a connection of, if any (its fds,
 * /proc/self/fd). peer (len bytes, may be NULL) receives the socket's path.
 * 0, or -errno if /proc/self/fd cannot be read.
 */
int criu_stream_detect(enum criu_stream *stream, char *peer, size_t len);

/* CRIU's img_streamer_open(filename, O_DUMP or O_RSTR), or NULL without one. */
typedef int (*criu_stream_open_fn)(char *filename, int flags);
criu_stream_open_fn criu_stream_open_symbol(void);

/*
 * Restore: does the stream hold the image `name`? Asks the streamer through
 * stream_open (CRIU's img_streamer_open()); an image it holds is read to its end
 * (the streamer sends each image once). 1 if it does, 0 if not, -errno.
 */
int criu_stream_has_image(criu_stream_open_fn stream_open, const char *name);

/*
 * The streaming of this CRIU process (and the tasks it forks), set once by
 * the init hook: CRIU_STREAM_NONE until then. With DUMP or RESTORE, the
 * plugin's images go through CRIU's img_streamer_open() (stream_stage.h for
 * the metadata images, the BO contents streamed by datapath/bo_stream.h).
 */
void criu_stream_set_active(enum criu_stream stream);
enum criu_stream criu_stream_active(void);

/*
 * bo_stream_open_fn over img_streamer_open(): the image `name` to write
 * (O_DUMP) or read (O_RSTR), as the active stream allows; -ENOENT if the
 * stream has no such image, -ENOSYS without the symbol or an active stream,
 * -EIO for the streamer's other failures.
 */
int criu_stream_image_open(void *arg, const char *name, enum bo_access access);

/* Under an active stream, cfg's BO contents go through it (stream_open). */
void criu_stream_config(struct bo_stream_config *cfg);

/* "--stream" refusal of the stage ("dump" or "restore"), one line into buf. */
void criu_stream_refusal(const char *stage, const char *peer, char *buf, size_t len);

#endif
