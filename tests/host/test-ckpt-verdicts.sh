#!/bin/bash
# The dry run says what the restore says: the same hostile image directories
# go to `amdgpu-criu check` and to the restore master's entry point
# (restore_session_init(), through tests/host/restore_init.c), and both must
# refuse each one with the same first error line (the tool's after its
# "amdgpu-criu: check: DIR: " prefix, the plugin's after "amdgpu_plugin:
# Error: "); a valid checkpoint passes the tool, and the restore gets past
# the images (it then needs this node's KFD, which this host lacks).
# env: BUILD (absolute build dir with amdgpu-criu and its n/ objects),
#      KFD_FIXTURES (kfd-topologies/)
# run-suite-parallel: yes (writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=$BUILD/amdgpu-criu
MI308X=$KFD_FIXTURES/k8sdp-mi308x-8gpu-cpx-32part-2socket
VEGA10=$KFD_FIXTURES/k8sdp-vega10-mi25-1gpu-1socket
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/lib/build.sh
. "$ROOT/tests/lib/build.sh"
# shellcheck disable=SC2046 # object lists are words
if ! build_program "$TMP/mkimage" "$TMP/cc.err" "$ROOT/tests/host/mkimage.c" \
	"$ROOT/tests/unit/synth_ckpt.c" ||
	! build_program "$TMP/restore_init" "$TMP/cc.err" "$ROOT/tests/host/restore_init.c" \
		"$ROOT/tests/unit/criu_stub.c" $(build_objects plugin plugin/dump plugin/restore); then
	fail "the test's programs build: $(head -c 600 "$TMP/cc.err")"
	tap_done
	exit 1
fi

mkckpt() { # DIR ARGS...: a two-GPU checkpoint of MI308X nodes 2,3 and a render file
	mkdir -p "$1" && "$TMP/mkimage" --out "$1" --sysfs "$MI308X" --nodes 2,3 --render-id 10 "${@:2}"
}

# verdicts NAME DIR: each side's exit status and first error line, without its prefix
verdicts() {
	"$TOOL" check "$2" --sysfs "$MI308X" >/dev/null 2>"$TMP/$1.tool"
	TOOL_RC=$?
	"$TMP/restore_init" "$2" 2>"$TMP/$1.restore"
	RESTORE_RC=$?
	TOOL_LINE=$(head -1 "$TMP/$1.tool" | sed "s|^amdgpu-criu: check: $2: ||")
	RESTORE_LINE=$(grep -m1 '^amdgpu_plugin: Error: ' "$TMP/$1.restore" | sed 's/^amdgpu_plugin: Error: //')
	diag "$1: check rc $TOOL_RC: $TOOL_LINE"
	diag "$1: restore rc $RESTORE_RC: $RESTORE_LINE"
}

# refused NAME DIR PATTERN: both refuse, with the same line, which matches PATTERN
refused() {
	verdicts "$1" "$2"
	check "$1: check refuses it (exit 2)" test "$TOOL_RC" = 2
	check "$1: the restore master refuses it" test "$RESTORE_RC" = 1
	check "$1: both say the same first line" test -n "$TOOL_LINE" -a "$TOOL_LINE" = "$RESTORE_LINE"
	check "$1: the line says why ($3)" grep -Eq "$3" <<<"$TOOL_LINE"
	check "$1: no control byte in either side's output" \
		bash -c '! LC_ALL=C grep -qP "[\x00-\x08\x0b-\x1f\x7f]" "$1" "$2"' _ "$TMP/$1.tool" "$TMP/$1.restore"
}

# a valid checkpoint: the tool says yes; the restore gets past the images
OK=$TMP/ok
mkckpt "$OK" --hsakmt 4242
verdicts valid "$OK"
check "valid: check accepts it (exit 0)" test "$TOOL_RC" = 0
check "valid: the restore's first error is this node's, not the images' ($RESTORE_LINE)" \
	grep -Eq 'KFD|kfd|topology' <<<"$RESTORE_LINE"

D=$TMP/disagree
mkckpt "$D" && "$TMP/mkimage" --out "$D" --sysfs "$VEGA10" --nodes 1 --id 2
refused disagree "$D" 'amdgpu-kfd-1.img and amdgpu-kfd-2.img disagree about node 1'

D=$TMP/cron
mkckpt "$D" --hsakmt 4242 --hsakmt-path /etc/cron.d/amdgpu
refused hsakmt-path "$D" "amdgpu-hsakmt-4242.img names /etc/cron.d/amdgpu, not one of libhsakmt's files"

D=$TMP/escape
mkckpt "$D" --hsakmt 4242 --hsakmt-path "$(printf '/dev/shm/x\033]0;owned\a\nok 99 - forged')"
refused hsakmt-escape "$D" 'names /dev/shm/x\\x1b\]0;owned\\x07\\x0aok 99 - forged'

D=$TMP/missing-idx
mkckpt "$D" && rm "$D"/amdgpu-bo-1-*.idx
refused missing-index "$D" 'checkpoint file 1 \(pid [0-9]+\): BO contents: .*idx'

D=$TMP/truncated
mkckpt "$D" && f=$(ls "$D"/amdgpu-bo-1-*.img | head -1) && truncate -s 4096 "$f"
refused truncated-data "$D" 'BO contents: .*truncated'

D=$TMP/part
mkckpt "$D" && touch "$D/amdgpu-kfd-9.img.part"
refused cut-dump "$D" 'incomplete checkpoint'

D=$TMP/render-gone
mkckpt "$D" && truncate -s 20 "$D/amdgpu-kfd-1.img"
refused damaged-image "$D" 'amdgpu-kfd-1.img'

# GPUs named by stable identity: check maps onto exactly those, or refuses a name no GPU has
AMDGPU_CRIU_GPUS=0000:80:00.0,0000:80:00.1 "$TOOL" check "$OK" --sysfs "$MI308X" --json \
	>"$TMP/pci.json" 2>"$TMP/pci.err"
check "GPUs by PCI address: check maps onto them, nodes 6 and 7 ($(jq -c '[.map[]?.dst_node]' "$TMP/pci.json"))" \
	test "$(jq -c '[.map[]?.dst_node]' "$TMP/pci.json")" = "[6,7]"
AMDGPU_CRIU_GPUS=084cafeae17e7696 "$TOOL" check "$OK" --sysfs "$MI308X" --json \
	>"$TMP/uid.json" 2>"$TMP/uid.err"
check "GPUs by unique_id: check maps onto that device's partitions ($(jq -c '[.map[]?.dst_node]' "$TMP/uid.json"))" \
	test "$(jq -c '[.map[]?.dst_node]' "$TMP/uid.json")" = "[2,3]"
AMDGPU_CRIU_GPUS=0000:80:00.0,0000:c1:00.0 "$TOOL" check "$OK" --sysfs "$MI308X" \
	>"$TMP/nopci.out" 2>"$TMP/nopci.err"
rc=$?
check "a PCI address no GPU has: check refuses (exit $rc), naming it and the node's" \
	bash -c '[ "$1" = 2 ] && grep -q "AMDGPU_CRIU_GPUS names PCI address 0000:c1:00.0, which no usable GPU of this node has (its GPUs. PCI addresses: 0000:0a:00.0, " "$2"' \
	_ "$rc" "$TMP/nopci.err"

# options read by one parser: one that means nothing, in the environment or
# the options file, is refused by both with the same line
# option_refused NAME LINE: both refuse the valid checkpoint, their lines start with LINE
option_refused() {
	verdicts "$1" "$OK"
	check "$1: check refuses it (exit 2)" test "$TOOL_RC" = 2
	check "$1: the restore master refuses it" test "$RESTORE_RC" = 1
	TOOL_LINE=${TOOL_LINE#amdgpu-criu: check: }
	check "$1: both give the option's line ($2)" \
		bash -c '[[ $1 == "$3"* && $2 == "$3"* ]]' _ "$TOOL_LINE" "$RESTORE_LINE" "$2"
}
AMDGPU_CRIU_COPY_ENGINE=gpu option_refused env-option \
	'AMDGPU_CRIU_COPY_ENGINE=gpu: unknown copy engine; use auto (the default), sdma or cpu'
printf '# node defaults\nAMDGPU_CRIU_GPUS=renderD130,0x0x5eb8\n' >"$TMP/bad.conf"
AMDGPU_CRIU_CONFIG=$TMP/bad.conf option_refused file-option \
	"options file $TMP/bad.conf line 2: AMDGPU_CRIU_GPUS"
printf 'AMDGPU_CRIU_SHARED_BO=bogus\n' >"$TMP/dump-only.conf"
AMDGPU_CRIU_CONFIG=$TMP/dump-only.conf verdicts dump-option "$OK"
check "dump-option: a dump's option is not the restore's: check accepts (exit 0)" \
	test "$TOOL_RC" = 0
check "dump-option: ... and the restore gets past the options ($RESTORE_LINE)" \
	grep -Eq 'KFD|kfd|topology' <<<"$RESTORE_LINE"
tap_done
