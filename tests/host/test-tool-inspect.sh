#!/bin/bash
# amdgpu-criu inspect and check on synthetic checkpoints written by
# tests/host/mkimage.c (built here from the build's objects) from the real
# topology captures.
# env: BUILD (absolute build dir holding amdgpu-criu and its n/ objects),
#      KFD_FIXTURES (kfd-topologies/), TOOL (optional: another amdgpu-criu, e.g. sanitized)
# run-suite-parallel: yes (reads the captures, writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=${TOOL:-$BUILD/amdgpu-criu}

# shellcheck source=tests/lib/tool.sh
. "$(dirname "$0")/../lib/tool.sh"
MKIMAGE=$TMP/mkimage

# mkckpt DIR ARGS...: a fresh image directory DIR with mkimage ARGS
mkckpt() {
	local dir=$1
	shift
	rm -rf "$dir" && mkdir -p "$dir" && "$MKIMAGE" --out "$dir" "$@"
}
flip_byte() { # FILE OFFSET
	local c
	c=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $(((c ^ 0x40) & 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# ---- the generator ---------------------------------------------------------------------
# shellcheck source=tests/lib/build.sh
. "$ROOT/tests/lib/build.sh"
if build_program "$MKIMAGE" "$ERR" "$ROOT/tests/host/mkimage.c" "$ROOT/tests/unit/synth_ckpt.c"; then
	ok "mkimage builds"
else
	fail "mkimage builds: $(head -c 500 "$ERR")"
	tap_done
	exit 1
fi
check "tool is built" test -x "$TOOL"

# MI210 has no gpu_id files: a copy with gpu_ids (40000 + node), as in test-tool.sh
cp -r "$MI210" "$TMP/mi210"
for d in "$TMP"/mi210/nodes/*/; do
	n=$(basename "$d")
	if grep -q '^simd_count 0$' "$d/properties"; then echo 0; else echo $((40000 + n)); fi >"$d/gpu_id"
done

CK=$TMP/ck
check "a checkpoint of MI308X nodes 2,3 is written" mkckpt "$CK" --sysfs "$MI308X" --nodes 2,3 --render-id 10

# ---- help ----------------------------------------------------------------------------------
run --help
check "--help lists inspect and check" bash -c "grep -q '^  inspect' '$OUT' && grep -q '^  check' '$OUT'"
run help inspect
cp "$OUT" "$TMP/help"
run inspect --help
check "inspect --help is help inspect" cmp -s "$OUT" "$TMP/help"
run check --help
expect_rc 0 "check --help exits 0"
check "check usage names --to-nodes" grep -q -- '--to-nodes LIST' "$OUT"

# ---- inspect ------------------------------------------------------------------------------
run inspect "$CK"
expect_rc 0 "inspect exits 0"
check "inspect writes nothing on stderr" test ! -s "$ERR"
check "inspect names the image, pid and xnack" grep -q '^amdgpu-kfd-1.img: pid 4242, xnack off$' "$OUT"
check "inspect names the kernel and KFD" grep -q 'kernel 6.12.48+deb13-amd64, KFD 1.17, BO records of 272 bytes' "$OUT"
check "inspect counts queues, events, SVM ranges" grep -q '3 queues (2 compute, 1 SDMA), 2 events, 1 SVM range$' "$OUT"
check "inspect shows GPU node 2" grep -Eq '^ +24248 +24248 +2 +renderD128 +0x74a2 MI308X +gfx942 +48.0 GiB +20 CUs +80 ' "$OUT"
check "inspect shows GPU node 3" grep -Eq '^ +41657 +41657 +3 +renderD129 ' "$OUT"
check "inspect groups BOs by type" grep -Eq '^ +24248 +2 / 104.0 KiB +1 / 8.0 KiB +1 / 16.0 KiB +1 / 8.0 KiB +1 / 4.0 KiB +3 / 112.0 KiB$' "$OUT"
check "inspect lists the render-node files" grep -Eq '^amdgpu-render-11.img +renderD129 +41657 +3 ' "$OUT"
check "inspect without --verify has no verify lines" bash -c "! grep -q '^verify:' '$OUT'"

run inspect "$CK" --json
expect_rc 0 "inspect --json exits 0"
check "inspect --json prints one JSON document" one_json
check "--json: process fields" jqt '.processes | length == 1 and (.[0] | .pid == 4242 and .kernel_release == "6.12.48+deb13-amd64" and .kfd_major == 1 and .kfd_minor == 17 and .xnack == false and .bo_record_size == 272)'
check "--json: objects" jqt '.processes[0].objects | .queues == 3 and .compute_queues == 2 and .sdma_queues == 1 and .events == 2 and .svm_ranges == 1'
check "--json: GPUs with ids, node and render minor" jqt '[.processes[0].gpus[] | [.user_gpu_id, .gpu_id, .node, .render_minor]] == [[24248, 24248, 2, 128], [41657, 41657, 3, 129]]'
check "--json: the recorded node's properties" jqt '.processes[0].gpus[0].recorded_node | .gfx_target == "gfx942" and .properties.gfx_target_version == 90402 and .properties.simd_count == 80 and .device_id == 29858 and .vram_size == 51539607552 and .name == "ip discovery"'
check "--json: BOs by type" jqt '.processes[0].gpus[1].bos | .vram == {"count": 2, "bytes": 110592} and .gtt.count == 1 and .userptr.count == 1 and .doorbell.bytes == 8192 and .mmio_remap.bytes == 4096 and .other.count == 0'
check "--json: content bytes per GPU" jqt '[.processes[0].gpus[].content_bytes] == [114688, 118784]'
check "--json: render files" jqt '[.render_files[] | [.file, .render_minor, .gpu_id, .node]] == [["amdgpu-render-10.img", 128, 24248, 2], ["amdgpu-render-11.img", 129, 41657, 3]]'
check "--json without --verify has no verify fields" jqt '(has("intact") | not) and (.processes[0].gpus[0] | has("verify") | not)'
check "--json: no libhsakmt files recorded" jqt '.hsakmt_files == []'
check "inspect without libhsakmt images has no such section" bash -c "! grep -q libhsakmt '$OUT'"

# libhsakmt's shared files (plugin/hsakmt_files.h): amdgpu-hsakmt-<pid>.img
check "a checkpoint with amdgpu-hsakmt-4242.img is written" mkckpt "$TMP/ck-hsakmt" --sysfs "$MI308X" --nodes 2,3 --hsakmt 4242
run inspect "$TMP/ck-hsakmt"
expect_rc 0 "inspect of a checkpoint with libhsakmt files exits 0"
check "inspect lists libhsakmt's shared memory" grep -q '^  pid 4242: /dev/shm/hsakmt_shared_mem, 8 bytes, mode 644$' "$OUT"
check "inspect says the process had created the semaphore" grep -q '^  pid 4242: had created the semaphore; CRIU saved it with the process$' "$OUT"
run inspect "$TMP/ck-hsakmt" --json
check "--json: libhsakmt files" jqt '.hsakmt_files == [{"pid": 4242, "semaphore_unlinked": true, "files": [{"path": "/dev/shm/hsakmt_shared_mem", "size": 8, "mode": 420}]}]'

# an image's path with a terminal title sequence (OSC ... BEL), a newline, DEL and
# a C1 CSI byte: shown escaped (common/escape.h), never raw
HOSTILE=$'/dev/shm/hsakmt\e]0;x\a\nforged: line\x7f\x9b'
SHOWN='/dev/shm/hsakmt\x1b]0;x\x07\x0aforged: line\x7f\x9b'
check "a checkpoint whose libhsakmt image records a path with control bytes is written" \
	mkckpt "$TMP/ck-hsakmt-esc" --sysfs "$MI308X" --nodes 2,3 --hsakmt 4242 --hsakmt-path "$HOSTILE"
# such an image names no file of libhsakmt's: refused as the restore refuses it
# (checkpoint/ckpt.h), in one line that shows the path escaped
for fmt in text json; do
	args=(inspect "$TMP/ck-hsakmt-esc")
	[ "$fmt" = text ] || args+=(--json)
	usage_error "inspect ($fmt) refuses a libhsakmt image naming another file, in one line" "${args[@]}"
	check "... with no control byte" bash -c "! LC_ALL=C grep -q '[^[:print:]]' '$ERR'"
	check "... showing the path escaped" grep -qF "names $SHOWN, not one of libhsakmt's files" "$ERR"
done
UTF8=$'/dev/shm/hsakmt\e]0;x\a\nforged: line\x7f\xc2\x9b\xc3\xa9'
check "a checkpoint whose libhsakmt path is UTF-8 with controls is written" \
	mkckpt "$TMP/ck-hsakmt-utf8" --sysfs "$MI308X" --nodes 2,3 --hsakmt 4242 --hsakmt-path "$UTF8"
usage_error "inspect --json refuses it in one line" inspect "$TMP/ck-hsakmt-utf8" --json
check "... with no control byte" bash -c "! LC_ALL=C grep -q '[^[:print:]]' '$ERR'"
check "an image whose relative path holds control bytes is written" \
	mkckpt "$TMP/ck-hsakmt-rel" --sysfs "$MI308X" --nodes 2,3 --hsakmt 4242 --hsakmt-path $'\e]0;x\a\n../evil'
usage_error "inspect refuses a relative path in one line" inspect "$TMP/ck-hsakmt-rel"
check "the refusal has no control byte" bash -c "! LC_ALL=C grep -q '[^[:print:]]' '$ERR'"
check "the refusal shows the path escaped" grep -qF '\x1b]0;x\x07\x0a../evil' "$ERR"

run inspect "$CK" --verify
expect_rc 0 "inspect --verify of an intact checkpoint exits 0"
check "--verify says ok per GPU" bash -c "grep -q '^verify: gpu 24248: ok (3 BOs, 112.0 KiB)$' '$OUT' && grep -q '^verify: gpu 41657: ok (3 BOs, 116.0 KiB)$' '$OUT'"
run inspect --verify --json "$CK"
expect_rc 0 "inspect --verify --json exits 0"
check "--verify --json: intact" jqt '.intact == true and all(.processes[0].gpus[]; .verify == {"ok": true})'

# ---- damaged contents --------------------------------------------------------------------------
cp -r "$CK" "$TMP/flipped"
# GPU 41657: BO 7 (its second VRAM BO) starts after the first (68 KiB); 16 KiB chunks
flip_byte "$TMP/flipped/amdgpu-bo-1-41657.img" $((68 * 1024 + 16 * 1024 + 100))
run inspect "$TMP/flipped"
expect_rc 0 "inspect without --verify does not read contents"
run inspect "$TMP/flipped" --verify
expect_rc 1 "--verify of a flipped byte exits 1"
check "--verify names the GPU, BO and offset" grep -q '^verify: gpu 41657: DAMAGED: BO 7 (VRAM), byte offset 16384 (0x4000): checksum mismatch in amdgpu-bo-1-41657.img' "$OUT"
check "--verify still says ok for the other GPU" grep -q '^verify: gpu 24248: ok' "$OUT"
check "--verify of damage writes nothing on stderr" test ! -s "$ERR"
run inspect "$TMP/flipped" --verify --json
expect_rc 1 "--verify --json of a flipped byte exits 1"
check "--verify --json locates the damage" jqt '.intact == false and .processes[0].gpus[0].verify.ok == true and (.processes[0].gpus[1].verify | .ok == false and .bo_index == 7 and .bo_type == "VRAM" and .offset == 16384 and (.error | test("checksum")))'
check "--verify --json: the error names the same BO as bo_index" jqt '.processes[0].gpus[1].verify.error | startswith("BO 7 (VRAM), byte offset 16384 (0x4000): checksum mismatch in amdgpu-bo-1-41657.img")'
# same_words TEXTFILE JSONFILE GPU INDEX: the text's DAMAGED line says what the JSON error says
same_words() {
	[ "$(sed -n "s/^verify: gpu $3: DAMAGED: //p" "$1")" = "$(jq -r ".processes[0].gpus[$4].verify.error" "$2")" ]
}
run inspect "$TMP/flipped" --verify
cp "$OUT" "$TMP/flipped.txt"
run inspect "$TMP/flipped" --verify --json
check "text and JSON give the damage in the same words" same_words "$TMP/flipped.txt" "$OUT" 41657 1

cp -r "$CK" "$TMP/short"
truncate -s 4096 "$TMP/short/amdgpu-bo-1-24248.img"
run inspect "$TMP/short" --verify
expect_rc 1 "--verify of a truncated data file exits 1"
check "--verify says the data file is truncated" grep -q '^verify: gpu 24248: DAMAGED: .*amdgpu-bo-1-24248.img is truncated' "$OUT"
check "the DAMAGED line does not repeat its gpu prefix" bash -c "! grep -q 'DAMAGED: gpu ' '$OUT'"
cp "$OUT" "$TMP/short.txt"
run inspect "$TMP/short" --verify --json
check "text and JSON say the same of a truncated file" same_words "$TMP/short.txt" "$OUT" 24248 0
cp -r "$CK" "$TMP/noidx"
rm "$TMP/noidx/amdgpu-bo-1-41657.idx"
run inspect "$TMP/noidx" --verify
expect_rc 1 "--verify without an index exits 1"
check "--verify names the missing index" grep -q '^verify: gpu 41657: DAMAGED: .*amdgpu-bo-1-41657.idx' "$OUT"
cp -r "$CK" "$TMP/badidx"
flip_byte "$TMP/badidx/amdgpu-bo-1-24248.idx" 70
run inspect "$TMP/badidx" --verify --json
expect_rc 1 "--verify of a damaged index exits 1"
check "--verify reports the index checksum" jqt '.processes[0].gpus[0].verify | .ok == false and .bo_index == null and (.error | test("index checksum"))'

# ---- damaged or hostile metadata ---------------------------------------------------------------
cp -r "$CK" "$TMP/meta"
size=$(stat -c %s "$TMP/meta/amdgpu-kfd-1.img")
head -c $((size / 2)) "$CK/amdgpu-kfd-1.img" >"$TMP/meta/amdgpu-kfd-1.img"
usage_error "inspect of a truncated process image exits 2 with one line" inspect "$TMP/meta"
check "the error names the image" grep -q 'amdgpu-kfd-1.img' "$ERR"
usage_error "inspect --json of a truncated process image exits 2" inspect --json "$TMP/meta"
usage_error "check of a truncated process image exits 2" check "$TMP/meta" --sysfs "$MI308X"
head -c 4096 /dev/urandom >"$TMP/meta/amdgpu-kfd-1.img"
usage_error "inspect of a garbage process image exits 2" inspect "$TMP/meta" --verify
cp "$CK/amdgpu-kfd-1.img" "$TMP/meta/amdgpu-kfd-1.img"
for off in 3 40 200 1000 3000 6000 9000; do
	cp "$CK/amdgpu-kfd-1.img" "$TMP/meta/amdgpu-kfd-1.img"
	flip_byte "$TMP/meta/amdgpu-kfd-1.img" $off
	run inspect "$TMP/meta" --verify
	if [ "$RC" -le 2 ] && [ "$RC" -ge 0 ] && { [ "$RC" -ne 2 ] || [ "$(wc -l <"$ERR")" -eq 1 ]; }; then
		ok "a flipped metadata byte at $off: exit $RC, no crash"
	else
		fail "a flipped metadata byte at $off: exit $RC: $(head -c 300 "$ERR")"
	fi
done
cp "$CK/amdgpu-kfd-1.img" "$TMP/meta/amdgpu-kfd-1.img"
head -c 100 "$CK/amdgpu-render-10.img" >"$TMP/meta/amdgpu-render-10.img"
usage_error "inspect of a truncated render image exits 2" inspect "$TMP/meta"
check "the error names the render image" grep -q 'amdgpu-render-10.img' "$ERR"

# ---- hostile image directories -------------------------------------------------------------
# an id spelt with leading zeros would alias amdgpu-kfd-1.img: refused, naming the file
cp -r "$CK" "$TMP/zeros"
cp "$CK/amdgpu-kfd-1.img" "$TMP/zeros/amdgpu-kfd-01.img"
usage_error "inspect of a directory with amdgpu-kfd-01.img next to -1 exits 2" inspect "$TMP/zeros"
check "the error names amdgpu-kfd-01.img" grep -q 'amdgpu-kfd-01.img: image id with leading zeros' "$ERR"
usage_error "check refuses it alike" check "$TMP/zeros" --sysfs "$MI308X"
rm "$TMP/zeros/amdgpu-kfd-1.img"
usage_error "inspect of amdgpu-kfd-01.img alone exits 2" inspect "$TMP/zeros"
check "the error names the file the user has" bash -c "grep -q 'amdgpu-kfd-01.img' '$ERR' && ! grep -q 'amdgpu-kfd-1.img' '$ERR'"

# a FIFO or a symbolic link in place of an image: refused at once, naming the file
# (timeout: before the fix the tool blocked in open() for ever)
cp -r "$CK" "$TMP/fifo"
rm "$TMP/fifo/amdgpu-kfd-1.img" && mkfifo "$TMP/fifo/amdgpu-kfd-1.img"
timeout 60 "$TOOL" inspect "$TMP/fifo" >"$OUT" 2>"$ERR"
RC=$?
check "inspect with a FIFO as amdgpu-kfd-1.img exits 2, not hanging" test "$RC" -eq 2
check "the error says FIFO and names the file" grep -q 'amdgpu-kfd-1.img: a FIFO, not a regular file' "$ERR"
rm "$TMP/fifo/amdgpu-kfd-1.img" && cp "$CK/amdgpu-kfd-1.img" "$TMP/fifo/"
rm "$TMP/fifo/amdgpu-bo-1-41657.idx" && mkfifo "$TMP/fifo/amdgpu-bo-1-41657.idx"
timeout 60 "$TOOL" inspect --verify "$TMP/fifo" >"$OUT" 2>"$ERR"
RC=$?
check "inspect --verify with a FIFO as a BO index exits 1, not hanging" test "$RC" -eq 1
check "the DAMAGED line names the FIFO" grep -q '^verify: gpu 41657: DAMAGED: amdgpu-bo-1-41657.idx: a FIFO' "$OUT"
cp -r "$CK" "$TMP/link"
mv "$TMP/link/amdgpu-kfd-1.img" "$TMP/link/real.img" && ln -s real.img "$TMP/link/amdgpu-kfd-1.img"
usage_error "inspect of a symlinked image exits 2" inspect "$TMP/link"
check "the error says symbolic links are refused, naming the file" grep -q 'amdgpu-kfd-1.img: a symbolic link; symbolic links are refused' "$ERR"

# strings from an image reach the terminal escaped: no escape sequence, no line break
CKE=$TMP/esc
rel=$(uname -r)
# the other family's record size, so that check refuses it by the kernel (see below)
if [ "${rel%%.*}" -gt 6 ] || { [ "${rel%%.*}" -eq 6 ] && [ "$(echo "$rel" | cut -d. -f2 | tr -dc 0-9)" -ge 5 ]; }; then
	esc_record=80
else
	esc_record=272
fi
check "a checkpoint with control bytes in its kernel release is written" \
	mkckpt "$CKE" --sysfs "$MI308X" --nodes 2 --bo-record $esc_record --release "$(printf '6.1\033[2J\nfake: ok\\')"
run inspect "$CKE"
expect_rc 0 "inspect of that checkpoint exits 0"
check "inspect prints no control byte" bash -c "! LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <'$OUT')"
check "inspect shows the release escaped on its line" grep -Fq 'kernel 6.1\x1b[2J\x0afake: ok\\, KFD' "$OUT"
run inspect "$CKE" --json
check "--json keeps the release exact" jqt '.processes[0].kernel_release == "6.1\u001b[2J\nfake: ok\\"'
run check "$CKE"
check "check's refusal is one line" bash -c "[ \$(wc -l <'$OUT') -eq 1 ]"
check "check's refusal names the release escaped" grep -Fq 'kernel 6.1\x1b[2J\x0afake: ok\\, whose' "$OUT"

# ---- usage -----------------------------------------------------------------------------------------
usage_error "inspect without IMGDIR exits 2" inspect
usage_error "inspect with two directories exits 2" inspect "$CK" "$CK"
usage_error "inspect with a bad option exits 2" inspect "$CK" --bogus
usage_error "inspect of a missing directory exits 2" inspect "$TMP/nonexistent"
mkdir "$TMP/empty"
usage_error "inspect of a directory without amdgpu images exits 2" inspect "$TMP/empty"
check "the error says there is no image" grep -q 'holds no amdgpu' "$ERR"
usage_error "check without IMGDIR exits 2" check --sysfs "$MI308X"
usage_error "check with a bad LIST exits 2" check "$CK" --sysfs "$MI308X" --to-nodes 3-2
usage_error "check with a CPU node in --to-nodes exits 2" check "$CK" --sysfs "$MI308X" --to-nodes 0,18
usage_error "check with a missing --sysfs dir exits 2" check "$CK" --sysfs "$TMP/nonexistent"
KFD_NUMA_CHECK=maybe usage_error "check with a bad KFD_*_CHECK exits 2" check "$CK" --sysfs "$MI308X"

# ---- check ------------------------------------------------------------------------------------------
run check "$CK" --sysfs "$MI308X"
expect_rc 0 "check onto the same capture exits 0"
check "check prints the map table" grep -q '^SRC_NODE  SRC_GPU_ID  SRC_RENDER  DST_NODE  DST_GPU_ID  DST_RENDER$' "$OUT"
check "check maps the GPUs onto themselves" grep -Eq '^ +2 +24248 +renderD128 +2 +24248 +renderD128$' "$OUT"
check "check names the render nodes to expose" grep -q '^expose: renderD128 renderD129 (nodes 2,3)$' "$OUT"
check "check names the devices with nodes and gpu_ids" grep -q '^devices: /dev/kfd /dev/dri/renderD128 (node 2, gpu_id 24248) /dev/dri/renderD129 (node 3, gpu_id 41657)$' "$OUT"
check "check with --sysfs notes the skipped kernel check" grep -q '^note: .*kernel check.*skipped' "$OUT"
check "check with --sysfs says free VRAM was not checked" grep -q '^note: free VRAM not checked: --sysfs given$' "$OUT"

run check "$CK" --sysfs "$MI308X" --to-nodes 18-21 --json
expect_rc 0 "check onto other partitions (--to-nodes 18-21) exits 0"
check "check --json prints one JSON document" one_json
check "check --json maps into 18-21" jqt '.compatible == true and ([.map[].dst_node] | all(. >= 18 and . <= 21)) and ([.map[].src_node] == [2, 3])'
check "check --json lists the devices to expose" jqt '[.expose[] | .render_device] == ["/dev/dri/renderD160", "/dev/dri/renderD161"] and [.expose[].gpu_id] == [23332, 42789]'
check "check --json says the kernel check was skipped" jqt '.kernel_check == "skipped" and (.note | test("skipped"))'
check "check --json says free VRAM was not checked" jqt '.vram_check == "not checked: --sysfs given"'

# the MI210 copy: an xGMI pair of hive A
CK210=$TMP/ck210
check "a checkpoint of MI210 nodes 2,3 is written" mkckpt "$CK210" --sysfs "$TMP/mi210" --nodes 2,3 --render-id 5
run check "$CK210" --sysfs "$TMP/mi210" --json
expect_rc 0 "MI210 pair onto the same capture exits 0"
check "MI210 pair stays on its GPUs" jqt '[.map[] | .src_node == .dst_node] == [true, true]'
run check "$CK210" --sysfs "$TMP/mi210" --to-nodes 6-9
expect_rc 0 "MI210 pair onto the other hive exits 0"
check "MI210 pair lands in the other hive" bash -c "grep -Eq '^ +2 +40002 +renderD[0-9]+ +[6-9] +4000[6-9] ' '$OUT' && grep -q '^expose: ' '$OUT'"
run check "$CK210" --sysfs "$TMP/mi210" --to-nodes 5,6
expect_rc 1 "MI210 pair split across hives exits 1"
check "the split is refused with a reason" grep -Eq '^not compatible: .+' "$OUT"
check "a refusal prints no map" bash -c "! grep -q '^expose:' '$OUT'"

# AMDGPU_CRIU_GPUS, as the plugin reads it, when --to-nodes is not given
r6=$(sed -n 's/^drm_render_minor //p' "$TMP/mi210/nodes/6/properties")
r7=$(sed -n 's/^drm_render_minor //p' "$TMP/mi210/nodes/7/properties")
AMDGPU_CRIU_GPUS="renderD$r6,/dev/dri/renderD$r7" run check "$CK210" --sysfs "$TMP/mi210" --json
expect_rc 0 "MI210 pair onto AMDGPU_CRIU_GPUS=renderD$r6,renderD$r7 exits 0"
check "it lands on those two GPUs (nodes 6, 7)" jqt '[.map[].dst_node] | sort == [6, 7]'
AMDGPU_CRIU_GPUS="renderD$r6" run check "$CK210" --sysfs "$TMP/mi210"
expect_rc 1 "MI210 pair onto one named GPU exits 1"
AMDGPU_CRIU_GPUS="renderD$r6,renderD$r7" run check "$CK210" --sysfs "$TMP/mi210" --to-nodes 2,3 --json
check "--to-nodes wins over AMDGPU_CRIU_GPUS" jqt '[.map[].dst_node] == [2, 3]'
AMDGPU_CRIU_GPUS="card0" usage_error "check with a bad AMDGPU_CRIU_GPUS exits 2" check "$CK210" --sysfs "$TMP/mi210"
check "the error names the variable and the bad word" grep -q "AMDGPU_CRIU_GPUS: 'card0' is no render node (" "$ERR"
AMDGPU_CRIU_GPUS="renderD250" usage_error "check with AMDGPU_CRIU_GPUS naming no GPU exits 2" check "$CK210" --sysfs "$TMP/mi210"
check "the error names the render node and those of the node" \
	grep -q "AMDGPU_CRIU_GPUS names render node renderD250, which no usable GPU of this node has (its GPUs' render nodes: renderD" "$ERR"

CK1=$TMP/ck1
check "a one-GPU MI308X checkpoint is written" mkckpt "$CK1" --sysfs "$MI308X" --nodes 2
run check "$CK1" --sysfs "$VEGA10"
expect_rc 1 "MI308X partition onto Vega10 exits 1"
check "the refusal names the property" grep -Eq '^not compatible: .*(device_id|simd_count)' "$OUT"
run check "$CK1" --sysfs "$VEGA10" --json
expect_rc 1 "--json refusal exits 1"
check "--json refusal says why" jqt '.compatible == false and (.reason | test("device_id|simd_count")) and (has("map") | not)'
check "a refusal writes nothing on stderr" test ! -s "$ERR"

# two process images (one with a restored process's user ids) and the union of their GPUs
CK2=$TMP/ck2
mkckpt "$CK2" --sysfs "$MI308X" --nodes 2,3 --render-id 10 &&
	"$MKIMAGE" --out "$CK2" --sysfs "$MI308X" --nodes 4 --id 2 --user-delta 7 --xnack
check "a checkpoint with two process images is written" test -f "$CK2/amdgpu-kfd-2.img"
run inspect "$CK2" --verify
expect_rc 0 "inspect of two process images exits 0"
check "inspect shows both images" bash -c "grep -q '^amdgpu-kfd-1.img: ' '$OUT' && grep -q '^amdgpu-kfd-2.img: pid 4242, xnack on$' '$OUT'"
check "inspect shows a user gpu_id that differs from the dump node's" grep -Eq '^ +59072 +59065 +4 +renderD130 ' "$OUT"
check "verification uses the user gpu_id's files" grep -q '^verify: gpu 59072: ok' "$OUT"
run check "$CK2" --sysfs "$MI308X" --json
expect_rc 0 "check of two process images exits 0"
check "check maps the union of their GPUs" jqt '[.map[].src_node] == [2, 3, 4] and [.map[].src_gpu_id] == [24248, 41657, 59065]'

# images of two different dump nodes disagree
CKX=$TMP/ckx
mkckpt "$CKX" --sysfs "$MI308X" --nodes 2 && "$MKIMAGE" --out "$CKX" --sysfs "$VEGA10" --nodes 1 --id 2
usage_error "check of images that disagree exits 2" check "$CKX" --sysfs "$MI308X"
check "the error names the node" grep -q 'disagree about node 1 ' "$ERR"
check "the error names both images" bash -c "grep -q 'amdgpu-kfd-1.img' '$ERR' && grep -q 'amdgpu-kfd-2.img' '$ERR'"

# ---- the kernel check (no --sysfs) --------------------------------------------------------------
release=$(uname -r)
major=${release%%.*}
minor=${release#*.}
minor=${minor%%[!0-9]*}
if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 5 ]; }; then
	other=6.1.0-28-amd64 other_size=80 local_size=272
else
	other=6.12.48+deb13-amd64 other_size=272 local_size=80
fi
CKK=$TMP/ckk
check "a checkpoint from kernel $other is written" mkckpt "$CKK" --sysfs "$MI308X" --nodes 2,3 --release "$other"
run check "$CKK"
expect_rc 1 "check of a $other_size-byte-record image on this kernel exits 1"
check "the refusal is one line naming both kernels and sizes" bash -c "[ \$(wc -l <'$OUT') -eq 1 ] && grep -q '^not compatible: amdgpu-kfd-1.img was dumped on kernel $other, whose private data has $other_size-byte BO records; this kernel ($release) takes $local_size-byte records$' '$OUT'"
run check "$CKK" --json
expect_rc 1 "--json kernel refusal exits 1"
check "--json kernel refusal" jqt '.compatible == false and .kernel_check == "failed" and (.reason | test("BO records"))'
run check "$CKK" --sysfs "$MI308X"
expect_rc 0 "with --sysfs the kernel check is skipped"
check "the skipped kernel check is noted" grep -q '^note: ' "$OUT"
CKL=$TMP/ckl
mkckpt "$CKL" --sysfs "$MI308X" --nodes 2 --bo-record "$local_size"
if [ -d /sys/class/kfd/kfd/topology ]; then
	ok "check on this host's topology # SKIP this host has KFD"
else
	usage_error "check on a host without KFD exits 2" check "$CKL"
	check "the error names the local topology" grep -q '/sys/class/kfd/kfd/topology' "$ERR"
fi

tap_done
