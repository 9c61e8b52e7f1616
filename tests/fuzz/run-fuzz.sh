#!/bin/bash
# `make fuzz`: runs each fuzz target for FUZZ_TIME seconds on its corpus and
# reports executions, speed, coverage and findings per target.
#
#   FUZZ_DIR=build/fuzz FUZZ_TIME=60 [FUZZ_JOBS=1] run-fuzz.sh TARGET...
#
# Corpus: $FUZZ_DIR/corpus/<target> (kept between runs; grows), read together
# with the generated seeds ($FUZZ_DIR/seeds/<target>), the committed seeds
# (tests/fuzz/seeds/<target>) and the committed reproducers that pass
# (tests/fuzz/regressions/<target>, minus those listed in KNOWN).
# Findings: $FUZZ_DIR/findings/<target>/{crash,leak,timeout,oom}-<sha1>.
# Log of each target: $FUZZ_DIR/logs/<target>.log. Exit status 1 if any
# target found something.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/fuzz/targets.sh
. "$ROOT/tests/fuzz/targets.sh"
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
FUZZ_TIME=${FUZZ_TIME:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Regressions that pass join the corpus (known failures would stop the run at once).
passing_regressions() { # TARGET DIR
	local f
	mkdir -p "$2"
	for f in "$ROOT/tests/fuzz/regressions/$1"/*; do
		[ -f "$f" ] || continue
		fuzz_known "$ROOT" "$1" "$(basename "$f")" || cp "$f" "$2/"
	done
}

found=0
printf '%-22s %10s %9s %7s %7s %7s  %s\n' target execs execs/s cov ft corpus result
for t in "$@"; do
	bin=$FUZZ_DIR/$t
	corpus=$FUZZ_DIR/corpus/$t
	findings=$FUZZ_DIR/findings/$t
	log=$FUZZ_DIR/logs/$t.log
	regress=$FUZZ_DIR/regressions-passing/$t
	mkdir -p "$corpus" "$findings" "$(dirname "$log")"
	rm -rf "$regress"
	passing_regressions "$t" "$regress"
	dirs=("$corpus")
	for d in "$FUZZ_DIR/seeds/$t" "$ROOT/tests/fuzz/seeds/$t" "$regress"; do
		[ -d "$d" ] && dirs+=("$d")
	done
	jobs=()
	[ "$FUZZ_JOBS" -gt 1 ] && jobs=(-fork="$FUZZ_JOBS" -ignore_crashes=0)
	# shellcheck disable=SC2046
	"$bin" $(fuzz_opts "$t") -max_total_time="$FUZZ_TIME" -artifact_prefix="$findings/" \
		"${jobs[@]}" "${dirs[@]}" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		result=ok
	else
		found=1
		art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
		what=$(fuzz_reason "$log")
		result="FOUND (rc $rc): ${what:-see $log}; reproducer: ${art:-none}"
	fi
	printf '%-22s %10s %9s %7s %7s %7s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" \
		"${ft:-?}" "${corp:-?}" "$result"
done
[ "$found" -eq 0 ] || {
	echo "fuzz: findings above; replay one with: $FUZZ_DIR/<target> <reproducer>;"
	echo "      keep it as tests/fuzz/regressions/<target>/<name> (tests/fuzz/README.md)"
}
exit "$found"
