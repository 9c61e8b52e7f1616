#!/bin/sh
# criu --stream (images through criu-image-streamer) with a GPU process:
# every image of the plugin goes through the streamer (its metadata images
# and one BO stream per GPU, datapath/bo_seq.h), none touches a disk.
#   pipe: dump --stream into a capturing streamer piped straight into a
#         serving one, restore --stream from it (live migration through a
#         pipe): the workload's full self-check (every byte, gpu_ids,
#         mappings, queues, events) PASSes; the image directories hold no
#         image of the plugin.
#   file: capture into a file (its content listed by the streamer's
#         extract); kfdsim reloaded as the MI210 machine (8 GPUs, other
#         gpu_ids and render minors); the file served and restored --stream
#         onto 2 of its GPUs (a device cgroup shows those): PASS.
#   damaged: a byte of GPU memory changed in a BO stream (the stand-in's
#         --store, where each image is a file): the restore is refused in
#         one line naming the BO stream, nothing left running.
# The streamer of pipe and file is the real criu-image-streamer,
# /test/bin/criu-image-streamer, when the host built it (make
# image-streamer), else the stand-in /test/bin/imgstream
# (tests/workloads/imgstream.c), written from CRIU's streamer protocol with
# the real one's command line (capture | serve, extract).
# vm-boot: cr
# vm-timeout: 900
. /test/lib/guest.sh

STANDIN=/test/bin/imgstream
REAL=/test/bin/criu-image-streamer
STREAMER=$STANDIN
[ ! -x "$REAL" ] || STREAMER=$REAL
DESC=/test/kfdsim/machines/mi210.desc

# no_plugin_images DIR...: none of the plugin's images landed in a directory
no_plugin_images() { ! ls "$@" 2>/dev/null | grep -q '^amdgpu-'; }

# streamed_log NAME LOG: the plugin streamed (its log line), and its BO streams
streamed_log() {
	check "$1: the plugin's images went through the streamer" grep -q 'amdgpu_plugin: criu [a-z]* --stream: images through ' "$2"
}

# standin_start MODE IMGDIR STORE: the stand-in (pid SPID), once it listens
standin_start() {
	local out=$WORK/standin-${2##*/}.out
	mkdir -p "$2" "$3"
	"$STANDIN" -D "$2" --store "$3" "$1" >"$out" 2>&1 &
	SPID=$!
	wait_until 10 grep -q '^ready$' "$out"
}

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs; then
	ok "stream # SKIP no kfdsim debugfs"
	tap_done
	exit
fi

diag "streamer: $STREAMER ($("$STREAMER" --version 2>&1 | head -1))"

# --- pipe: capture | serve, dump and restore through it ---
if [ ! -x "$STREAMER" ]; then
	ok "pipe # SKIP no streamer in the image"
elif gpu_start pipe --mmio --render-fds; then
	pid=$WL_PID
	ids=$(kfd_user_ids "$pid")
	src=$WORK/img-pipe-src
	dst=$WORK/img-pipe-dst
	mkdir -p "$src" "$dst"
	("$STREAMER" -D "$src" capture 2>"$WORK/capture.err" | "$STREAMER" -D "$dst" serve 2>"$WORK/serve.err") &
	SPID=$!
	check "pipe: the capturing streamer listens" wait_until 10 test -S "$src/streamer-capture.sock"
	gpu_dump_ok pipe "$src" "$pid" --stream
	streamed_log pipe "$src/dump.log"
	sed -n 's/.*amdgpu_plugin: \(dumped pid .*\)/# \1/p' "$src/dump.log"
	check "pipe: the serving streamer listens once the stream is in" wait_until 60 test -S "$dst/streamer-serve.sock"
	gpu_restore_ok pipe "$dst" --stream
	streamed_log pipe "$dst/restore.log"
	sed -n 's/.*amdgpu_plugin: \(criu restore --stream: [0-9]* images .*\)/# \1/p' "$dst/restore.log"
	wait "$SPID"
	check "pipe: both streamers ended well" test $? -eq 0
	sed 's/^/# streamer: /' "$WORK/capture.err" "$WORK/serve.err" | head -4
	gpu_restored pipe "$pid" "$R.ready"
	check "pipe: the KFD process keeps its user gpu_ids ($ids)" eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
	check "pipe: no image of the plugin in either directory" no_plugin_images "$src" "$dst"
	check "pipe: no staging directory left" eval '! ls -d /dev/shm/amdgpu-criu-stream-* 2>/dev/null'
	gpu_finish pipe "$pid"
else
	fail "pipe: workload ready"
fi

# --- file: captured, restored later onto 2 GPUs of the MI210 machine ---
# capture_file NAME IMG FILE PID: dump --stream of PID captured into FILE
capture_file() {
	local ex=$WORK/$1-extract
	mkdir -p "$2"
	# the streamer's output must be a pipe (it sizes it): through cat
	("$STREAMER" -D "$2" capture 2>"$WORK/$1.err" | cat >"$3") &
	SPID=$!
	check "$1: the capturing streamer listens" wait_until 10 test -S "$2/streamer-capture.sock"
	gpu_dump_ok "$1" "$2" "$4" --stream
	wait "$SPID"
	check "$1: the streamer wrote the stream ($(wc -c <"$3") bytes)" test $? -eq 0 -a -s "$3"
	check "$1: no image of the plugin in the directory" no_plugin_images "$2"
	mkdir -p "$ex"
	cat "$3" | "$STREAMER" -D "$ex" extract 2>/dev/null
	check "$1: the stream holds a manifest, the process image and a BO stream per GPU" eval \
		'ls "$ex" | grep -q "^amdgpu-manifest-0\.img$" && ls "$ex" | grep -q "^amdgpu-kfd-[0-9]*\.img$" && [ "$(ls "$ex" | grep -c "^amdgpu-bo-[0-9]*-[0-9]*\.seq$")" -ge 2 ]'
	rm -rf "$ex"
}

if [ ! -x "$STREAMER" ]; then
	ok "file # SKIP no streamer in the image"
elif [ ! -f "$DESC" ]; then
	ok "file # SKIP no $DESC"
elif ! gpu_cg_make stream; then
	ok "file # SKIP no cgroup v1 devices controller"
elif GPU_WRAP="sh $WORK/cg-stream.sh" gpu_start file --mmio --render-fds; then
	pid=$WL_PID
	ids=$(kfd_user_ids "$pid")
	dst=$WORK/img-file-dst
	capture_file file "$WORK/img-file-src" "$WORK/file.stream" "$pid"
	mkdir -p "$dst"
	(cat "$WORK/file.stream" | "$STREAMER" -D "$dst" serve 2>"$WORK/file-serve.err") &
	SPID=$!
	check "file: the serving streamer listens" wait_until 60 test -S "$dst/streamer-serve.sock"
	GPU_RESTORE_ARGS=--stream gpu_restore_on_machine file "$dst" "$pid" "$ids" "$DESC" stream
	streamed_log file "$dst/restore.log"
	wait "$SPID"
	check "file: the serving streamer ended well" test $? -eq 0
	check "file: no image of the plugin in the directory" no_plugin_images "$dst"
	# the workload's check of the remap: "map USER ACTUAL" per GPU, from the plugin's map lines
	map=$(sed -n 's/.*amdgpu_plugin: GPU \([0-9]*\) (node .*) -> GPU \([0-9]*\) (node .*/map \1 \2/p' "$dst/restore.log")
	diag "expected map: $(echo "$map" | tr '\n' ';')"
	GPU_TRIGGER_TEXT="$map" gpu_finish file "$pid"
	rm -f "$WORK/file.stream"
	gpu_cg_remove stream
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "file: workload ready"
fi

# --- damaged: a byte of GPU memory changed in the stream ---
if [ ! -x "$STANDIN" ]; then
	ok "damaged # SKIP no $STANDIN"
elif gpu_start damaged --mmio --render-fds; then
	pid=$WL_PID
	src=$WORK/img-damaged-src
	store=$WORK/img-damaged-store
	check "damaged: the stand-in captures" standin_start capture "$src" "$store"
	gpu_dump_ok damaged "$src" "$pid" --stream
	wait "$SPID"
	check "damaged: the stand-in took every image" test $? -eq 0
	seq=$(ls "$store" | grep '^amdgpu-bo-[0-9]*-[0-9]*\.seq$' | head -1)
	check "damaged: the store has a BO stream ($seq)" test -n "$seq"
	# the middle of the stream: chunk bytes (a record head is 32 bytes a chunk)
	at=$(($(wc -c <"$store/$seq") / 2))
	printf '\377' | dd of="$store/$seq" bs=1 seek="$at" conv=notrunc 2>/dev/null
	dst=$WORK/img-damaged-dst
	check "damaged: the stand-in serves" standin_start serve "$dst" "$store"
	criu_restore "$dst" --stream
	rc=$?
	kill "$SPID" 2>/dev/null
	wait "$SPID"
	check "damaged: restore --stream refused (status $rc)" test "$rc" -ne 0
	grep 'amdgpu_plugin: Error: ' "$dst/restore.log" | head -3 >"$WORK/refusal"
	sed 's/^/# /' "$WORK/refusal"
	check "damaged: the plugin names the BO stream and the damage" \
		grep -q "checksum mismatch in $seq" "$WORK/refusal"
	check "damaged: no restored task, criu or KFD process left" gpu_no_strays
	check "damaged: no file of /dev/kfd or a render node open" eval '[ -z "$(kfd_holders)" ]'
	check "damaged: no staging directory left" eval '! ls -d /dev/shm/amdgpu-criu-stream-* 2>/dev/null'
	gpu_drop_images
else
	fail "damaged: workload ready"
fi
tap_done
