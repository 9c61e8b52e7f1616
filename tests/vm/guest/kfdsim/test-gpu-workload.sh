#!/bin/sh
# ZDTM-style GPU workload (tests/workloads/gpu/zdtm-gpu-basic, built on
# kfdlib) on the simulator: BOs of every type on every GPU, mappings on
# several GPUs, a queue per GPU, events. Three runs:
#  1. no checkpoint at all: trigger after ready, the self-check must PASS
#     (proves the checks run and see a healthy process);
#  2. negative control: one byte of a BO flipped through /proc/PID/mem
#     (a VRAM BO is tried first: its mapping is VM_IO|VM_PFNMAP, so the
#     kernel is expected to refuse; then USERPTR, ordinary anonymous
#     memory): the self-check must FAIL and name the difference;
#  3. criu dump with no plugin (empty --libdir) must fail cleanly ("Can't
#     dump file ... chr"), the process resumed; then with our plugin.
#
# EXPECT=fail: the plugin does not handle /dev/kfd yet, so with it loaded
# the dump must fail the same clean way. When it does, set EXPECT=ok: then
# dump, restore and the full self-check of the restored process must pass.
EXPECT=${EXPECT:-ok}
. /test/lib/guest.sh

BIN=/test/bin/zdtm-gpu-basic
if [ ! -x "$BIN" ] || [ ! -c /dev/kfd ]; then
	ok "GPU workload # SKIP $BIN or /dev/kfd missing"
	tap_done
	exit
fi

# run_start NAME: starts the workload with files $WORK/NAME.*, waits ready
run_start() {
	R=$WORK/$1
	rm -f "$R".*
	start_workload "$R.out" "$BIN" "$R.ready" "$R.trigger" "$R.result"
	pid=$WL_PID
	check "$1: workload ready (setup done)" wait_until 60 test -f "$R.ready"
	sed 's/^/# /' "$R.ready" "$R.out" 2>/dev/null | head -5
}

# run_end NAME [child]: triggers the self-check, waits for its result;
# with "child" also collects the exit status into RC.
run_end() {
	touch "$R.trigger"
	wait_until 60 test -s "$R.result" || true
	RC=
	if [ "${2:-}" = child ]; then
		wait "$pid"
		RC=$?
	fi
	RESULT=$(cat "$R.result" 2>/dev/null)
	diag "$1: result: ${RESULT:-none} (status ${RC:-n/a})"
}

# names_gpu_file LOG: CRIU's refusal names a GPU file: either an fd of
# /dev/kfd or a render node ("Can't dump file ... chr"), or, as CRIU
# collects mappings before files, a mapping of one of them ("Can't handle
# non-regular mapping on PID's map ADDR": ADDR must be a /dev/kfd or
# /dev/dri mapping of the process).
names_gpu_file() {
	local a
	grep -q "Can't dump file .*chr" "$1" && return 0
	a=$(sed -n "s/.*Can't handle non-regular mapping on .*'s map \([0-9a-f]*\).*/\1/p" "$1" | head -1)
	[ -n "$a" ] || return 1
	diag "refused mapping: $(grep "^$a-" "/proc/$pid/maps")"
	grep "^$a-" "/proc/$pid/maps" | grep -qE ' /dev/(kfd|dri/renderD[0-9]+)$'
}

# 1. plain run
run_start plain
run_end plain child
check "plain: self-check PASS" test "$RESULT" = PASS
check "plain: exit status 0" test "$RC" = 0
[ "$RESULT" = PASS ] || keep "$R.out" "$R.ready"

# 2. negative control
run_start corrupt
vram=$(awk '$2 == "VRAM" { print $4; exit }' "$R.ready")
uptr=$(awk '$2 == "USERPTR" { print $4; exit }' "$R.ready")
vram_poked=0
if [ -n "$vram" ] && "$BIN" --poke "$pid" "$vram" >"$WORK/poke-vram.out" 2>&1; then
	vram_poked=1
fi
diag "corrupt: VRAM byte via /proc/PID/mem: $(cat "$WORK/poke-vram.out")"
if [ "$vram_poked" = 0 ]; then
	check "corrupt: USERPTR byte flipped via /proc/PID/mem" "$BIN" --poke "$pid" "$uptr"
fi
run_end corrupt child
check "corrupt: self-check FAIL" eval 'case "$RESULT" in FAIL*) true ;; *) false ;; esac'
check "corrupt: exit status 1" test "$RC" = 1
check "corrupt: the difference is named (BO type and byte)" \
	eval 'echo "$RESULT" | grep -qE "(VRAM|USERPTR) BO .*byte 0 is"'

# 3. criu dump: without a plugin, then with ours
run_start dump
mkdir -p "$WORK/noplugins"
img=$WORK/img-noplugin
criu_dump "$img" "$pid" --libdir "$WORK/noplugins"
rc=$?
check "no plugin: dump refused (status $rc)" test $rc -ne 0
check "no plugin: CRIU names a /dev/kfd or render-node fd or mapping" names_gpu_file "$img/dump.log"
check "no plugin: our plugin not loaded" eval '! grep -q "amdgpu_plugin: initialised" "$img/dump.log"'
grep -E "Error|Can't dump" "$img/dump.log" | head -3 | sed 's/^/# /'
check "no plugin: process still alive after the refused dump" alive "$pid"

img=$WORK/img-plugin
criu_dump "$img" "$pid"
rc=$?
check "plugin: took part in the dump" grep -q 'amdgpu_plugin: initialised for dump' "$img/dump.log"
if [ "$EXPECT" = fail ]; then
	check "plugin: dump refused (status $rc)" test $rc -ne 0
	check "plugin: CRIU names a /dev/kfd or render-node fd or mapping" names_gpu_file "$img/dump.log"
	grep -E "Error|Can't dump" "$img/dump.log" | head -3 | sed 's/^/# /'
	check "plugin: process still alive after the refused dump" alive "$pid"
	run_end dump child
	check "dump: self-check after the refused dumps PASS" test "$RESULT" = PASS
	check "dump: exit status 0" test "$RC" = 0
else
	check "plugin: dump" test $rc -eq 0
	check "plugin: restore" criu_restore "$img"
	run_end dump
	check "dump: self-check of the restored process PASS" test "$RESULT" = PASS
fi
[ "$TAP_FAILED" -eq 0 ] || keep "$WORK"/*.out "$WORK"/*.ready "$WORK"/*.result
kill "$pid" 2>/dev/null
tap_done
