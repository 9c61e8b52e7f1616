#!/bin/bash
# Host test: `criu dump --stream` / `criu restore --stream` (images through
# criu-image-streamer) with the plugin loaded, for a process without a GPU.
# The plugin finds CRIU's connection to the streamer (plugin/criu_stream.h)
# and says once that its images would go through it; the process is dumped and
# restored as without the plugin and checks itself
# (tests/workloads/selfcheck.c). The streamer is tests/workloads/imgstream.c,
# a stand-in speaking CRIU's streamer protocol: first keeping each image as a
# file (--store), then, as the real criu-image-streamer does, through a pipe
# from a capturing streamer into a serving one (a migration: the serving
# streamer holds the stream in memory, then serves it), and from a captured
# stream file. With IMAGE_STREAMER (the real criu-image-streamer,
# scripts/build-image-streamer.sh) the pipe and file cases run through it
# instead; the stand-in's own stream is checked to refuse damage.
# A streamer's socket left in a directory is no stream: a plain dump there
# says nothing of --stream.
#
# Environment: BUILD (absolute build dir), CRIU (4.1.x), optional CRIU42,
# optional IMAGE_STREAMER. Runs as root on the host.
# Failure artifacts: $BUILD/test-logs/host.test-criu-stream/
# shellcheck disable=SC2016 # single-quoted bash -c bodies get their arguments as $1
# run-suite-parallel: yes (its own workload and image directories under mktemp; CRIU on the host)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$HERE/../lib/tap.sh"

BUILD=${BUILD:?BUILD must be the absolute build directory}
CRIU=${CRIU:?CRIU must name the criu command}
BIN=$BUILD/tests/bin
KEEP=$BUILD/test-logs/host.test-criu-stream
rm -rf "$KEEP"
T=$(mktemp -d -t criu-stream.XXXXXX)
TRACKED=()
# shellcheck source=tests/lib/tasks.sh
. "$HERE/../lib/tasks.sh"
trap tasks_cleanup EXIT
trap 'exit 130' INT TERM
STREAM_LINE='amdgpu_plugin: criu (dump|restore) --stream: images through .*streamer-(capture|serve)\.sock, staged in '

start_workload() {
	setsid "$BIN/selfcheck" "$D/run" </dev/null >"$D/out.log" 2>&1 &
	PID=$!
	TRACKED+=("$PID")
	wait_until 10 test -f "$D/run/ready" || {
		fail "$CASE: workload wrote its ready marker"
		return 1
	}
}

# standin MODE DIR STORE: the stand-in streamer on DIR's socket, until it listens; SPID
standin() {
	"$BIN/imgstream" -D "$2" --store "$3" "$1" >"$D/imgstream-$1.out" 2>&1 &
	SPID=$!
	TRACKED+=("$SPID")
	wait_until 10 grep -q '^ready$' "$D/imgstream-$1.out"
}

# dump CRIU DIR [ARGS...] / restore CRIU DIR [ARGS...]: as in test-criu-inert.sh; DUMP_RC, RESTORE_RC
dump() {
	local criu=$1 dir=$2
	shift 2
	timeout 60 "$criu" dump -t "$PID" -D "$dir" --libdir "$T/plugins" -v4 -o dump.log "$@"
	DUMP_RC=$?
}
restore() {
	local criu=$1 dir=$2
	shift 2
	rm -f "$D/reaper.status"
	"$BIN/reaper" "$D/reaper.status" timeout 60 "$criu" restore -D "$dir" --libdir "$T/plugins" \
		-d -v4 -o restore.log "$@" &
	TRACKED+=("$!")
	if wait_until 70 grep -q '^cmd ' "$D/reaper.status" 2>/dev/null; then
		RESTORE_RC=$(sed -n 's/^cmd [0-9]* exit //p' "$D/reaper.status")
		RESTORE_RC=${RESTORE_RC:-signal}
	else
		RESTORE_RC=timeout
	fi
}

# plugin_said LOG STAGE: the plugin ran, named the stream once, failed nothing
plugin_said() {
	local log=$1 stage=$2
	check "$CASE: $stage: the plugin names the stream in one line" \
		test "$(grep -cE "$STREAM_LINE" "$log")" = 1
	check "$CASE: $stage: the plugin finished with ret 0" grep -q "amdgpu_plugin: finished $stage (ret 0)\$" "$log"
	check "$CASE: $stage: no plugin error" bash -c '! grep -q "amdgpu_plugin: Error" "$1"' _ "$log"
}

# restored_passes: the restored workload checks itself
restored_passes() {
	check "$CASE: restore exits 0 (status $RESTORE_RC)" test "$RESTORE_RC" = 0
	[ "$RESTORE_RC" = 0 ] || return
	trigger restored
	check "$CASE: restored workload's self-check passes" grep -q '^PASS restored ' "$D/run/result"
	check "$CASE: restored workload exited 0" test "$(orphan_exit)" = "exit 0"
}

# standin_cycle CRIU: dump --stream into the stand-in's store, restore --stream from it
standin_cycle() {
	local criu=$1
	start_workload || return
	mkdir -p "$D/store"
	check "$CASE: stand-in streamer listens (capture)" standin capture "$D/img" "$D/store"
	dump "$criu" "$D/img" --stream
	wait "$SPID"
	check "$CASE: dump --stream exits 0 (status $DUMP_RC)" test "$DUMP_RC" = 0
	plugin_said "$D/img/dump.log" dump
	check "$CASE: the images went through the stream, none to the directory" \
		bash -c 'test -s "$1/store/inventory.img" && ! ls "$1/img" | grep -q "\.img$"' _ "$D"
	check "$CASE: the stream holds no image of the plugin" bash -c '! ls "$1" | grep -q "^amdgpu-"' _ "$D/store"
	[ "$DUMP_RC" = 0 ] || return
	check "$CASE: the dumped workload is gone" test "$(child_exit)" = 137
	check "$CASE: stand-in streamer listens (serve)" standin serve "$D/img" "$D/store"
	restore "$criu" "$D/img" --stream
	wait "$SPID"
	plugin_said "$D/img/restore.log" restore
	check "$CASE: CRIU read its images from the stream" grep -q '^image inventory.img ' "$D/imgstream-serve.out"
	restored_passes
}

mkdir -p "$T/plugins"
cp "$BUILD/amdgpu_plugin.so" "$T/plugins/"
if [ ! -x "$BIN/imgstream" ] || [ ! -x "$BIN/selfcheck" ] || [ ! -x "$BIN/reaper" ]; then
	fail "build products present (make all $BUILD/tests/bin): imgstream selfcheck reaper"
	tap_done
	exit
fi

CASE=standin
new_case "$CASE"
standin_cycle "$CRIU"

# The socket the stand-in left in $D/img: a plain dump there is no stream
CASE=left-socket
prev=$D
new_case "$CASE"
if start_workload; then
	check "$CASE: a streamer's socket is left in the directory" test -S "$prev/img/streamer-capture.sock"
	dump "$CRIU" "$prev/img"
	check "$CASE: plain dump exits 0 (status $DUMP_RC)" test "$DUMP_RC" = 0
	check "$CASE: the plugin says nothing of --stream" bash -c '! grep -q -- "--stream" "$1"' _ "$prev/img/dump.log"
	check "$CASE: the images are in the directory" test -s "$prev/img/inventory.img"
	check "$CASE: the dumped workload is gone" test "$(child_exit)" = 137
fi

if [ -n "${CRIU42:-}" ]; then
	CASE=standin-4.2
	new_case "$CASE"
	standin_cycle "$CRIU42"
fi

# A migration through a pipe, then a stream kept in a file: through the real
# criu-image-streamer when built, else the stand-in with the same command line
STREAMER=$BIN/imgstream
if [ -n "${IMAGE_STREAMER:-}" ] && [ -x "$IMAGE_STREAMER" ]; then
	STREAMER=$IMAGE_STREAMER
else
	diag "IMAGE_STREAMER not set: the pipe and file cases go through the stand-in (make image-streamer builds the real one)"
fi
CASE=pipe
new_case "$CASE"
if start_workload; then
	mkdir -p "$D/src" "$D/dst"
	("$STREAMER" -D "$D/src" capture 2>"$D/capture.err" |
		"$STREAMER" -D "$D/dst" serve 2>"$D/serve.err") &
	TRACKED+=("$!")
	check "$CASE: the capturing streamer listens (${STREAMER##*/})" wait_until 10 test -S "$D/src/streamer-capture.sock"
	dump "$CRIU" "$D/src" --stream
	check "$CASE: dump --stream exits 0 (status $DUMP_RC)" test "$DUMP_RC" = 0
	plugin_said "$D/src/dump.log" dump
	check "$CASE: the dumped workload is gone" test "$(child_exit)" = 137
	# the serving streamer takes the whole stream in memory, then listens
	check "$CASE: the serving streamer listens" wait_until 30 test -S "$D/dst/streamer-serve.sock"
	restore "$CRIU" "$D/dst" --stream
	plugin_said "$D/dst/restore.log" restore
	check "$CASE: no image was written to either directory" \
		bash -c '! ls "$1/src" "$1/dst" | grep -q "\.img$"' _ "$D"
	restored_passes
fi
CASE=stream-file
new_case "$CASE"
if start_workload; then
	("$STREAMER" -D "$D/img" capture 2>"$D/capture.err" | cat >"$D/ckpt.stream") &
	TRACKED+=("$!")
	cap=$!
	check "$CASE: streamer listens (${STREAMER##*/})" wait_until 10 test -S "$D/img/streamer-capture.sock"
	dump "$CRIU" "$D/img" --stream
	wait "$cap"
	check "$CASE: dump --stream exits 0 (status $DUMP_RC)" test "$DUMP_RC" = 0
	check "$CASE: the stream file holds the checkpoint" test -s "$D/ckpt.stream"
	check "$CASE: the dumped workload is gone" test "$(child_exit)" = 137
	mkdir -p "$D/extract"
	# shellcheck disable=SC2002 # the streamer reads pipes only, not files
	cat "$D/ckpt.stream" | "$STREAMER" -D "$D/extract" extract 2>/dev/null
	check "$CASE: extract gives CRIU's images (inventory.img, core-*.img)" \
		bash -c 'test -s "$1/inventory.img" && ls "$1" | grep -q "^core-[0-9]*\.img$"' _ "$D/extract"
	rm -f "$D/img/streamer-capture.sock"
	# shellcheck disable=SC2002
	(cat "$D/ckpt.stream" | "$STREAMER" -D "$D/img" serve 2>"$D/serve.err") &
	TRACKED+=("$!")
	check "$CASE: streamer serves the file" wait_until 10 test -S "$D/img/streamer-serve.sock"
	restore "$CRIU" "$D/img" --stream
	plugin_said "$D/img/restore.log" restore
	restored_passes
	# the stand-in's stream, cut short or with a frame changed, is refused
	if [ "$STREAMER" = "$BIN/imgstream" ]; then
		size=$(wc -c <"$D/ckpt.stream")
		head -c $((size - 8)) "$D/ckpt.stream" >"$D/cut.stream"
		# shellcheck disable=SC2002
		cat "$D/cut.stream" | "$STREAMER" -D "$D/extract" extract 2>"$D/cut.err"
		check "$CASE: a stream cut short is refused (status $?)" grep -q '^imgstream: the stream on stdin is truncated$' "$D/cut.err"
		cp "$D/ckpt.stream" "$D/bad.stream"
		# the first frame's image index, after the 8 bytes of magic
		printf '\177' | dd of="$D/bad.stream" bs=1 seek=8 conv=notrunc 2>/dev/null
		# shellcheck disable=SC2002
		cat "$D/bad.stream" | "$STREAMER" -D "$D/extract" extract 2>"$D/bad.err"
		check "$CASE: a damaged stream is refused (status $?)" grep -q '^imgstream: the stream on stdin is damaged$' "$D/bad.err"
	fi
fi
tap_done
