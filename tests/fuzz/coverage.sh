#!/bin/bash
# `make fuzz-coverage`: runs each target's corpus and seeds once through a
# coverage build ($FUZZ_DIR/cov/<target>) and prints the line and branch
# coverage of the library sources it reaches (images/, topology/, tools/,
# common/). Full report: $FUZZ_DIR/coverage/<target>.txt.
#
#   FUZZ_DIR=build/fuzz coverage.sh TARGET...
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
PROFDATA=$(command -v llvm-profdata || command -v llvm-profdata-14) ||
	{ echo "fuzz-coverage: needs llvm-profdata and llvm-cov (apt-get install llvm-14)" >&2; exit 2; }
COV=$(command -v llvm-cov || command -v llvm-cov-14) ||
	{ echo "fuzz-coverage: needs llvm-cov (apt-get install llvm-14)" >&2; exit 2; }
out=$FUZZ_DIR/coverage
mkdir -p "$out"
for t in "$@"; do
	dirs=()
	for d in "$FUZZ_DIR/corpus/$t" "$FUZZ_DIR/seeds/$t" "$ROOT/tests/fuzz/seeds/$t"; do
		[ -d "$d" ] && dirs+=("$d")
	done
	rm -f "$out/$t".prof*
	LLVM_PROFILE_FILE="$out/$t.profraw" "$FUZZ_DIR/cov/$t" -runs=0 -close_fd_mask=3 \
		"${dirs[@]}" >"$out/$t.run.log" 2>&1
	"$PROFDATA" merge -o "$out/$t.profdata" "$out/$t.profraw" || exit 1
	"$COV" report "$FUZZ_DIR/cov/$t" -instr-profile="$out/$t.profdata" \
		"$ROOT/images" "$ROOT/topology" "$ROOT/tools" "$ROOT/common" >"$out/$t.txt" 2>&1
	echo "== $t ($(find "${dirs[@]}" -type f | wc -l) inputs): files with covered lines"
	# columns: Filename Regions Missed Cover Functions Missed Executed Lines Missed Cover Branches Missed Cover
	awk '$1 ~ /\.c$/ && $8 > $9 { printf "  %-28s lines %5s of %5s (%s)  branches %s\n", $1, $8 - $9, $8, $10, $13 }' \
		"$out/$t.txt"
done
