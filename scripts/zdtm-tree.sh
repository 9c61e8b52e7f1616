#!/bin/bash
# Puts the plugin's GPU tests (tests/zdtm, with kfdlib of tests/workloads/gpu)
# into a CRIU source tree as test/zdtm/gpu/ and builds what CRIU's
# test/zdtm.py needs to run them: zdtm's lib, test/umount2, test/zdtm_ct and
# the tests; and puts the plugin where `zdtm.py run --criu-plugin amdgpu`
# takes it from (plugins/amdgpu/amdgpu_plugin.so; test/plugins/Makefile
# copies it next to zdtm.py, which runs criu with CRIU_LIBS_DIR there).
# Nothing of CRIU itself is built: zdtm.py runs the criu given by --criu-bin.
#
# usage: zdtm-tree.sh CRIU_TREE PLUGIN_SO [KFD_INCLUDE]
#   CRIU_TREE    a CRIU source tree (its test/zdtm.py), changed in place
#   PLUGIN_SO    build/amdgpu_plugin.so
#   KFD_INCLUDE  a directory with the linux/kfd_ioctl.h of the kernel the
#                tests run on (default: the system's)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
TREE=$(cd "${1:?usage: zdtm-tree.sh CRIU_TREE PLUGIN_SO [KFD_INCLUDE]}" && pwd)
PLUGIN=${2:?usage: zdtm-tree.sh CRIU_TREE PLUGIN_SO [KFD_INCLUDE]}
KFD_INCLUDE=${3:-}
[ -f "$TREE/test/zdtm.py" ] || { echo "zdtm-tree: $TREE is no CRIU source tree (no test/zdtm.py)" >&2; exit 1; }
[ -f "$PLUGIN" ] || { echo "zdtm-tree: no plugin at $PLUGIN: run make first" >&2; exit 1; }
[ -z "$KFD_INCLUDE" ] || KFD_INCLUDE=$(cd "$KFD_INCLUDE" && pwd)

gpu=$TREE/test/zdtm/gpu
mkdir -p "$gpu" "$TREE/plugins/amdgpu"
cp "$ROOT"/tests/zdtm/Makefile "$ROOT"/tests/zdtm/*.c "$ROOT"/tests/zdtm/*.desc "$gpu/"
cp "$ROOT"/tests/workloads/gpu/kfdlib.c "$ROOT"/tests/workloads/gpu/kfdlib.h "$gpu/"
cp "$PLUGIN" "$TREE/plugins/amdgpu/amdgpu_plugin.so"
make -s -C "$TREE/test/zdtm/lib" >/dev/null
make -s -C "$TREE/test" umount2 zdtm_ct >/dev/null
make -s -C "$gpu" ${KFD_INCLUDE:+KFD_INCLUDE="$KFD_INCLUDE"} >/dev/null
echo "zdtm-tree: $(cd "$gpu" && ls ./*.desc | sed 's|^\./|zdtm/gpu/|; s|\.desc$||' | tr '\n' ' ')in $TREE/test"
