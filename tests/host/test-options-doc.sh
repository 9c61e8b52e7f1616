#!/bin/bash
# The options' documentation is their table (options/options.c): README.md's
# options block is `amdgpu-criu options --markdown`, the man page's
# `amdgpu-criu options --man`; and `amdgpu-criu options` judges the options
# set here (environment, options file) as a dump and a restore would.
# env: BUILD (absolute build dir holding amdgpu-criu)
# run-suite-parallel: yes (reads the tree, writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=$BUILD/amdgpu-criu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# block FILE BEGIN END: the lines strictly between the first line starting with BEGIN and END
block() { sed -n "\\|^$2|,\\|^$3|p" "$1" | sed '1d;$d'; }

"$TOOL" options --markdown >"$T/md"
block "$ROOT/README.md" '<!-- options: begin' '<!-- options: end' >"$T/readme"
check "README.md's options block is 'amdgpu-criu options --markdown' (regenerate it from there)" \
	diff -u "$T/md" "$T/readme"
"$TOOL" options --man >"$T/man"
block "$ROOT/tools/amdgpu-criu.1" '.\\" options: begin' '.\\" options: end' >"$T/page"
check "the man page's options block is 'amdgpu-criu options --man'" diff -u "$T/man" "$T/page"
# every option name the product's code spells (not a header guard, not a macro of
# its own) is a row of the table, and every row one the code reads
sed -n 's/^| `\([A-Z_0-9]*\)`.*/\1/p' "$T/md" | sort >"$T/rows"
(cd "$ROOT" && grep -rhoE '\bAMDGPU_CRIU_[A-Z0-9_]+|\bKFD_[A-Z_]+_CHECK\b' common topology datapath \
	images checkpoint options plugin tools --include='*.c' --include='*.h') |
	grep -vE '_H$|^AMDGPU_CRIU_(VERSION|GEM_CREATE_SETTABLE)$' | sort -u >"$T/spelt"
check "the table has a row for every option the code names ($(wc -l <"$T/rows") rows)" \
	diff -u "$T/spelt" "$T/rows"
if command -v man >/dev/null; then
	check "the man page renders without warnings" \
		bash -c '! man --warnings -l "$1" 2>&1 >/dev/null | grep -q .' _ "$ROOT/tools/amdgpu-criu.1"
else
	diag "no man here: the man page's rendering is not checked"
fi

# options here: none set (no options file is read: AMDGPU_CRIU_CONFIG names an empty one)
: >"$T/empty.conf"
env -i PATH="$PATH" AMDGPU_CRIU_CONFIG="$T/empty.conf" "$TOOL" options >"$T/out" 2>&1
rc=$?
check "options: nothing set here: exit 0, 'here: good' (rc $rc)" \
	bash -c '[ "$1" = 0 ] && grep -q "^here: good; options file .*empty.conf: 0 options set" "$2"' _ "$rc" "$T/out"

env -i PATH="$PATH" AMDGPU_CRIU_CONFIG="$T/empty.conf" AMDGPU_CRIU_SHARED_BO=bogus \
	"$TOOL" options >"$T/out" 2>&1
rc=$?
check "options: a dump's option that means nothing: exit 1, the line and the stage (rc $rc)" \
	bash -c '[ "$1" = 1 ] && grep -q "^here: AMDGPU_CRIU_SHARED_BO=bogus: unknown sharing policy; use share (the default), refuse or copy: a dump with GPUs would be refused" "$2"' \
	_ "$rc" "$T/out"

printf 'KFD_NUMA_CHECK=0\nAMDGPU_CRIU_PARALLEL_RESTORE=2\n' >"$T/bad.conf"
env -i PATH="$PATH" AMDGPU_CRIU_CONFIG="$T/bad.conf" "$TOOL" options >"$T/out" 2>&1
rc=$?
check "options: a restore's option in the file: exit 1, naming file and line (rc $rc)" \
	bash -c '[ "$1" = 1 ] && grep -q "^here: options file .*bad.conf line 2: AMDGPU_CRIU_PARALLEL_RESTORE=2: unknown switch; use 1 (the default) or 0: a restore with GPUs would be refused" "$2"' \
	_ "$rc" "$T/out"

env -i PATH="$PATH" AMDGPU_CRIU_CONFIG="$T/bad.conf" AMDGPU_CRIU_PARALLEL_RESTORE=0 \
	"$TOOL" options >"$T/out" 2>&1
rc=$?
check "options: the environment wins over the file: exit 0, 1 option from the file (rc $rc)" \
	bash -c '[ "$1" = 0 ] && grep -q "^here: good; options file .*bad.conf: 1 option set" "$2"' _ "$rc" "$T/out"

"$TOOL" options --bogus >"$T/out" 2>&1
check "options: an unknown flag is a usage error (exit 2)" test $? = 2
tap_done
