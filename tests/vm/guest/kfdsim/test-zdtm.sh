#!/bin/sh
# CRIU's test/zdtm.py (CRIU's source of the guest criu's version, in
# /test/criu) runs the plugin's GPU tests of tests/zdtm (test/zdtm/gpu/)
# with `--criu-plugin amdgpu` and the guest's criu. Each run below asserts
# exactly its documented outcome (README "CRIU options with GPU
# processes"): a pass is zdtm.py's own "PASS" line, the test's own PASS
# (every byte, apertures, CPU and GPU mappings, handles; its .out file) and
# the plugin's part in each dump and restore (its lines in CRIU's logs); a
# refusal is zdtm.py's FAIL at the named CRIU action with the plugin's line
# saying why, in CRIU's log.
# vm-boot: zdtm
# vm-timeout: 1500
. /test/lib/guest.sh

T=zdtm/gpu/gpu_vram
if ! cd /test/criu/test 2>/dev/null; then
	ok "zdtm # SKIP no CRIU source tree in the image: make vm-deps fetches it (scripts/fetch-zdtm.sh)"
	tap_done
	exit
fi
check "zdtm.py is CRIU $(criu --version | sed -n 's/^Version: //p')'s (its source tree)" test -f zdtm.py
check "the GPU test is built (test/zdtm/gpu)" test -x "$T"

# zrun NAME ARGS...: zdtm.py run of the GPU test; its output in $WORK/NAME.log,
# the images and CRIU's logs kept (dump/) until the next run; sets ZRC.
# --ignore-taint: zdtm.py refuses a tainted kernel, and the out-of-tree
# kfdsim module taints it (O) at boot. /usr/bin first in PATH: coreutils'
# rm before busybox's (zdtm's Makefile.inc runs rm --one-file-system), and
# bash as make's shell: busybox's sh runs its own applets whatever PATH says.
# AMDGPU_CRIU_GEM_CENSUS=probe: zdtm.py runs CRIU in a PID namespace of its
# own (zdtm_ct), where debugfs's amdgpu_gem_info names no pid CRIU knows, so
# the plugin refuses to count GEM handles beyond its probe unless told to
# accept the probe's reach (the test has a handful).
zrun() {
	local name=$1
	shift
	rm -rf dump "$T.out"
	diag "$name: zdtm.py run -t $T $*"
	AMDGPU_CRIU_GEM_CENSUS=probe MAKEFLAGS=SHELL=/usr/bin/bash PATH=/usr/sbin:/usr/bin:/sbin:/bin python3 zdtm.py run -t "$T" --criu-bin /usr/sbin/criu --criu-plugin amdgpu \
		--keep-img always --ignore-taint "$@" >"$WORK/$name.log" 2>&1
	ZRC=$?
	find dump -name '*.log' 2>/dev/null | sort >"$WORK/$name.logs"
	mkdir -p "$WORK/$name.criu"
	for f in $(cat "$WORK/$name.logs"); do cp "$f" "$WORK/$name.criu/$(echo "$f" | tr / _)"; done
	keep "$WORK/$name.log" "$WORK/$name.criu"
	grep -E '^(=|#)+ (Test|Run) ' "$WORK/$name.log" | sed "s/^/# $name: /"
}

# logs NAME KIND: CRIU's logs of that kind (dump, restore, pre-dump) of run NAME
logs() { grep "/$2\.log\$" "$WORK/$1.logs"; }

# zpass NAME ARGS...: zdtm.py PASS, the test's own PASS, the plugin in every dump and restore
zpass() {
	local name=$1 f n
	zrun "$@"
	check "$name: zdtm.py says PASS (status 0)" eval "[ $ZRC = 0 ] && grep -q '=== Test $T PASS' '$WORK/$name.log'"
	check "$name: the test's own check PASSed (bytes, ids, mappings, handles)" grep -qw PASS "$T.out"
	n=0
	for f in $(logs "$name" dump) $(logs "$name" restore); do
		n=$((n + 1))
		grep -q 'amdgpu_plugin: ' "$f" || { fail "$name: the plugin took part in $f"; return; }
	done
	check "$name: the plugin took part in each of the $n dumps and restores" test "$n" -ge 2
}

# zrefused NAME ACTION REGEX ARGS...: zdtm.py FAIL at ACTION, the plugin's
# line matching REGEX in CRIU's log of that action
zrefused() {
	local name=$1 action=$2 re=$3
	shift 3
	zrun "$name" "$@"
	check "$name: zdtm.py says FAIL (status $ZRC)" eval "[ $ZRC != 0 ] && grep -q '### Test $T FAIL' '$WORK/$name.log'"
	check "$name: the plugin refused: $re" eval "grep -hE 'amdgpu_plugin: .*$re' \$(logs $name $action) | head -1 | grep -q ."
	grep -hE "amdgpu_plugin: .*$re" $(logs "$name" "$action") 2>/dev/null | head -1 | sed "s/^/# $name: /"
}

zpass h -f h
zpass ns -f ns
zpass iters -f h --iters 3
zpass pre -f h --pre 2
zpass snaps -f h --pre 2 --snaps
if [ -x ../criu-image-streamer/criu-image-streamer ]; then
	zpass stream -f h --stream --criu-image-streamer-dir /test/criu/criu-image-streamer
else
	ok "stream # SKIP no criu-image-streamer in the image"
fi
zpass lazy -f h --lazy-pages
check "no test, criu or KFD process left" gpu_no_strays
tap_done
