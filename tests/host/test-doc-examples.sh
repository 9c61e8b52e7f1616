#!/bin/bash
# Every `$ COMMAND` example in README.md and tools/USAGE.md runs as written
# and prints what the document shows (stdout and stderr, in order).
# Examples run with bash in a scratch copy of the documents' context: the
# repository directory (build/ = $BUILD, the tool also on PATH as
# amdgpu-criu) with its tests/fixtures/kfd-topologies, plus the checkpoints the
# text names (ckpt, ckpt-bad, ckpt-6.1: written by tests/host/mkimage.c as
# the text says). Variables set by one example (T=...) hold for the next
# ones of the same code block. An example whose command contains " ... " is
# an abbreviation and is not run. `this kernel (RELEASE)` is compared
# without RELEASE (it is the running kernel's).
# env: BUILD (absolute build dir), KFD_FIXTURES (kfd-topologies/)
# run-suite-parallel: yes (runs the examples in a scratch copy)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
REPO=$TMP/repo
MKIMAGE=$TMP/mkimage
MI308X=$KFD_FIXTURES/k8sdp-mi308x-8gpu-cpx-32part-2socket

mkdir -p "$REPO/tests/fixtures" "$TMP/bin"
ln -s "$KFD_FIXTURES" "$REPO/tests/fixtures/kfd-topologies"
ln -s "$BUILD" "$REPO/build"
ln -s "$BUILD/amdgpu-criu" "$TMP/bin/amdgpu-criu"

# ---- the checkpoints the examples name ------------------------------------------------
# shellcheck source=tests/lib/build.sh
. "$ROOT/tests/lib/build.sh"
if ! build_program "$MKIMAGE" "$TMP/cc.err" "$ROOT/tests/host/mkimage.c" "$ROOT/tests/unit/synth_ckpt.c"; then
	fail "mkimage builds: $(head -c 500 "$TMP/cc.err")"
	tap_done
	exit 1
fi
mkckpt() { # DIR ARGS...
	mkdir -p "$REPO/$1" && "$MKIMAGE" --out "$REPO/$1" --sysfs "$MI308X" --nodes 2,3 "${@:2}"
}
flip_byte() { # FILE OFFSET
	local c
	c=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $(((c ^ 0x40) & 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
check "the examples' checkpoints are written (ckpt, ckpt-bad, ckpt-6.1)" eval '
	mkckpt ckpt --render-id 10 && mkckpt ckpt-bad --render-id 10 &&
	mkckpt ckpt-6.1 --release 6.1.0-28-amd64 --bo-record 80 &&
	flip_byte "$REPO/ckpt-bad/amdgpu-bo-1-41657.img" $((68 * 1024 + 16 * 1024 + 100))'

# ---- the examples ---------------------------------------------------------------------
# examples DOC: one record per example, NUL-terminated: "BLOCK\nCOMMAND\nOUTPUT..."
# (COMMAND with its continuation lines joined).
examples() {
	awk '
	function flush() { if (cmd != "") printf "%d\n%s\n%s%c", block, cmd, out, 0; cmd = ""; out = "" }
	/^```/ { flush(); inblock = !inblock; block++; next }
	!inblock { next }
	cont { cmd = cmd "\n" $0; cont = /\\$/; next }
	/^\$ / { flush(); cmd = substr($0, 3); cont = /\\$/; next }
	cmd != "" { out = out $0 "\n" }
	END { flush() }' "$1"
}

kernel_free() { sed 's/this kernel ([^)]*)/this kernel (RELEASE)/'; }

run_doc() { # DOC
	local doc=$1 rec block cmd want have last=-1 vars=
	while IFS= read -r -d '' rec; do
		block=${rec%%$'\n'*}
		rec=${rec#*$'\n'}
		cmd=${rec%%$'\n'*}
		while [[ $cmd == *\\ ]]; do
			rec=${rec#*$'\n'}
			cmd=${cmd%\\}${rec%%$'\n'*}
		done
		want=${rec#*$'\n'}
		[ "$block" = "$last" ] || vars=
		last=$block
		if [[ $cmd == *" ... "* ]]; then
			ok "$doc: $cmd # SKIP an abbreviation"
			continue
		fi
		if [[ $cmd =~ ^[A-Za-z_][A-Za-z0-9_]*=[^\ ]*$ ]]; then
			vars+="$cmd; "
			ok "$doc: $cmd"
			continue
		fi
		have=$(cd "$REPO" && PATH=$TMP/bin:$PATH bash -c "$vars$cmd" 2>&1 </dev/null)
		want=$(printf '%s' "$want" | kernel_free) # $(): without trailing blank lines
		have=$(kernel_free <<<"$have")
		if [ "$have" = "$want" ]; then
			ok "$doc: $cmd"
		else
			fail "$doc: $cmd"
			diff <(echo "$want") <(echo "$have") | head -20 | sed 's/^/# /'
		fi
	done < <(examples "$ROOT/$doc")
}

run_doc README.md
run_doc tools/USAGE.md
tap_done
