#!/bin/sh
# criu --stream (images through criu-image-streamer) with a GPU process: the
# plugin does not stream GPU images, so it refuses, in one line naming
# --stream, before anything is paused or restored. The streamer is
# /test/bin/imgstream, a stand-in speaking CRIU's streamer protocol
# (tests/workloads/imgstream.c). Dump: refused with CRIU 4.1.1 (and 4.2 when
# the image has it); the application runs on, not paused, with its fds, its
# probe PASSes, and the stream holds no image of the plugin. Restore: a
# checkpoint in a directory, served as a stream, is refused (the plugin
# asks the stream for its images); nothing is left and the images are
# unchanged; the same checkpoint then restores without --stream and PASSes.
# With the real criu-image-streamer in the image (/test/bin, when the host
# built it: make image-streamer), the dump is refused through it too, its
# stream captured to a file.
# vm-boot: cr
# vm-timeout: 360
. /test/lib/guest.sh

STREAMER=/test/bin/imgstream

# streamer_start MODE IMGDIR STORE: the stand-in (pid SPID), once it listens
streamer_start() {
	mkdir -p "$2" "$3"
	"$STREAMER" "$1" "$2" "$3" >"$WORK/streamer-$1.out" 2>&1 &
	SPID=$!
	wait_until 10 grep -q '^ready$' "$WORK/streamer-$1.out"
}

# refused_dump NAME: dump --stream of $pid refused, the application untouched
refused_dump() {
	local name=$1 img=$WORK/img-$1 store=$WORK/img-$1-store rc src
	check "$name: streamer listens" streamer_start capture "$img" "$store"
	criu_dump "$img" "$pid" --stream
	rc=$?
	wait "$SPID"
	src=$?
	sed 's/^/# streamer: /' "$WORK/streamer-capture.out" | head -4
	check "$name: dump --stream refused (status $rc)" test "$rc" -ne 0
	grep 'amdgpu_plugin: Error: ' "$img/dump.log" >"$WORK/refusal"
	sed 's/^/# /' "$WORK/refusal"
	check "$name: the plugin says why in one line" test "$(wc -l <"$WORK/refusal")" -eq 1
	check "$name: ... naming --stream, before anything was paused" \
		grep -q 'criu dump --stream .*refused before anything was paused' "$WORK/refusal"
	check "$name: CRIU talked to the streamer until it hung up (streamer status $src)" test "$src" -eq 0
	check "$name: the stream holds no image of the plugin" \
		eval '! ls "$store" | grep -q "^amdgpu-"'
	check "$name: the plugin paused nothing" eval '! grep -q "amdgpu_plugin: unpaused" "$img/dump.log"'
	check "$name: the application still runs" alive "$pid"
	check "$name: its KFD process is not paused, queues active" wait_until 10 kfd_running "$pid"
	check "$name: exactly its fds" gpu_fds_ok "$pid" "$R.ready"
	check "$name: probe PASS" gpu_probe "$2"
	check "$name: no criu left" no_criu
	[ "$TAP_FAILED" -eq 0 ] || keep "$img/dump.log"
}

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs || [ ! -x "$STREAMER" ]; then
	ok "stream # SKIP no kfdsim debugfs or no $STREAMER"
	tap_done
	exit
fi
if ! gpu_start stream --mmio --render-fds; then
	fail "stream: workload ready"
	tap_done
	exit
fi
pid=$WL_PID

refused_dump dump-4.1 1
if command -v criu-4.2 >/dev/null; then
	CRIU_BIN=criu-4.2 refused_dump dump-4.2 2
else
	ok "dump-4.2 # SKIP no criu-4.2 in the image"
fi

if [ -x /test/bin/criu-image-streamer ]; then
	img=$WORK/img-real
	mkdir -p "$img"
	(/test/bin/criu-image-streamer -D "$img" capture 2>"$WORK/real.err" | cat >"$WORK/real.stream") &
	SPID=$!
	check "real: criu-image-streamer listens" wait_until 10 test -S "$img/streamer-capture.sock"
	criu_dump "$img" "$pid" --stream
	rc=$?
	wait "$SPID"
	sed 's/^/# streamer: /' "$WORK/real.err" | head -4
	check "real: dump --stream refused (status $rc)" test "$rc" -ne 0
	grep 'amdgpu_plugin: Error: ' "$img/dump.log" >"$WORK/refusal"
	sed 's/^/# /' "$WORK/refusal"
	check "real: the plugin says why in one line, naming --stream" eval \
		'[ "$(wc -l <"$WORK/refusal")" -eq 1 ] && grep -q "criu dump --stream .*refused before anything was paused" "$WORK/refusal"'
	check "real: the application still runs, not paused" wait_until 10 kfd_running "$pid"
	check "real: probe PASS" gpu_probe 3
	check "real: no criu left" no_criu
	rm -f "$WORK/real.stream"
else
	ok "real: criu-image-streamer # SKIP not in the image (make image-streamer)"
fi

# The restore: a checkpoint in a directory, served as a stream
ids=$(kfd_user_ids "$pid")
plain=$WORK/img-plain
gpu_dump_ok plain "$plain" "$pid"
check "plain: the checkpoint has a GPU process image" eval 'ls "$plain" | grep -q "^amdgpu-kfd-[0-9]*\.img$"'
gpu_img_sums "$plain" >"$plain.sums"
simg=$WORK/img-served
check "restore: streamer serves the checkpoint" streamer_start serve "$simg" "$plain"
criu_restore "$simg" --stream
rc=$?
kill "$SPID" 2>/dev/null
wait "$SPID"
check "restore: restore --stream refused (status $rc)" test "$rc" -ne 0
grep 'amdgpu_plugin: Error: ' "$simg/restore.log" >"$WORK/refusal"
sed 's/^/# /' "$WORK/refusal"
check "restore: the plugin says why in one line" test "$(wc -l <"$WORK/refusal")" -eq 1
check "restore: ... naming --stream and the GPU image" \
	grep -qE 'criu restore --stream .*GPU file amdgpu-kfd-[0-9]+\.img' "$WORK/refusal"
check "restore: no restored task, criu or KFD process left" gpu_no_strays
check "restore: no file of /dev/kfd or a render node open" eval '[ -z "$(kfd_holders)" ]'
check "restore: every image file unchanged (sha256)" eval 'gpu_img_sums "$plain" | cmp -s - "$plain.sums"'
[ "$TAP_FAILED" -eq 0 ] || keep "$simg/restore.log"

gpu_restore_ok plain "$plain"
gpu_restored plain "$pid" "$R.ready"
check "plain: the restored KFD process has its user gpu_ids ($ids)" eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
gpu_finish stream "$pid"
tap_done
