#!/bin/bash
# The short fuzz run of `make check`: every libFuzzer target (tests/fuzz/)
# runs its seeds, then mutates them for a fixed number of runs with a fixed
# seed (deterministic; counted in runs, not seconds, so that a loaded
# machine takes longer but tests the same inputs): one result per target.
# Then the committed reproducers (tests/fuzz/regressions/<target>/) are
# replayed: one result per target for those
# that must pass, one per reproducer listed in tests/fuzz/regressions/KNOWN
# (a defect not fixed yet: it must still fail; when it no longer does, the
# fix deletes its line in KNOWN).
# env: BUILD (absolute build dir; the targets are in $BUILD/fuzz, made by
#      `make fuzz-build`), FUZZ_SHORT_SCALE (runs multiplier, default 1)
# run-suite-timeout: 2400 (7 targets x TARGET_LIMIT, and the replays)
# run-suite-parallel: yes (a fixed number of runs per target, not seconds: load only stretches it)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/fuzz/targets.sh
. "$ROOT/tests/fuzz/targets.sh"
FUZZ_DIR=${BUILD:-$ROOT/build}/fuzz
SCALE=${FUZZ_SHORT_SCALE:-1}
# A limit for one target's whole short run, far above what it needs (3 to
# 20 s on the loaded 2-core machine): only a hang that -timeout misses hits it.
TARGET_LIMIT=300
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Runs per target: about 10 s each on this project's 2-core reference machine.
short_runs() {
	case "$1" in
	fuzz_priv_blob) echo 200000 ;;
	fuzz_kfd_image) echo 40000 ;;
	fuzz_topology_image | fuzz_bo_stream) echo 50000 ;;
	fuzz_bo_seq) echo 30000 ;;
	fuzz_topology_parse) echo 1500 ;;
	fuzz_tool) echo 600 ;;
	esac
}


# The reason a failed run gave, in one line.
finding() { # LOG
	local what art
	what=$(fuzz_reason "$1")
	art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$1" | tail -1)
	echo "${what:-no report, see below}; reproducer: ${art:-none}"
}

short_run() { # TARGET
	local t=$1 bin=$FUZZ_DIR/$1 log=$TMP/$1.log runs dirs d n_seeds
	runs=$(($(short_runs "$t") * SCALE))
	mkdir -p "$TMP/corpus-$t" "$TMP/art-$t"
	dirs=("$TMP/corpus-$t")
	for d in "$FUZZ_DIR/seeds/$t" "$ROOT/tests/fuzz/seeds/$t"; do
		[ -d "$d" ] && dirs+=("$d")
	done
	n_seeds=$(find "${dirs[@]:1}" -type f | wc -l)
	if [ "$n_seeds" -eq 0 ]; then
		fail "$t: no seeds (make fuzz-build writes them from tests/fixtures/kfd-topologies)"
		return
	fi
	# shellcheck disable=SC2046
	timeout "$TARGET_LIMIT" "$bin" $(fuzz_opts "$t") -seed=1 -runs="$runs" \
		-artifact_prefix="$TMP/art-$t/" "${dirs[@]}" >"$log" 2>&1
	local rc=$?
	local speed cov
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		ok "$t: $n_seeds seeds and $runs mutated inputs, no finding" \
			"(${speed:-?} execs/s, cov ${cov:-?})"
	else
		fail "$t: rc $rc after $runs runs: $(finding "$log")"
		tail -n 30 "$log" | sed 's/^/# /'
	fi
}

replay() { # TARGET [OPTION...] FILE... (each input once)
	local t=$1
	shift
	# shellcheck disable=SC2046
	timeout "$TARGET_LIMIT" "$FUZZ_DIR/$t" $(fuzz_opts "$t") \
		-artifact_prefix="$TMP/art-replay-" "$@" >"$TMP/replay.log" 2>&1
}

replay_regressions() { # TARGET
	local t=$1 f pass=()
	for f in "$ROOT/tests/fuzz/regressions/$t"/*; do
		[ -f "$f" ] || continue
		if fuzz_known "$ROOT" "$t" "$(basename "$f")"; then
			known_replay "$t" "$f"
		else
			pass+=("$f")
		fi
	done
	[ ${#pass[@]} -gt 0 ] || return 0
	if replay "$t" "${pass[@]}"; then
		ok "$t: ${#pass[@]} committed reproducers pass"
	else
		fail "$t: a committed reproducer fails: $(finding "$TMP/replay.log")"
		tail -n 30 "$TMP/replay.log" | sed 's/^/# /'
	fi
}

known_replay() { # TARGET FILE
	local t=$1 f=$2 log=$TMP/replay.log
	# A known defect only has to fail, and a blocked open() fails at the
	# first -timeout alarm (timeout / 2 + 1 s): a short timeout saves time.
	if ! replay "$t" -timeout=3 "$f"; then
		ok "$t: known defect $(basename "$f") still fails: $(finding "$log" | sed 's/; reproducer.*//')"
	else
		fail "$t: known defect $(basename "$f") no longer fails: delete its line in tests/fuzz/regressions/KNOWN"
	fi
}

for t in $FUZZ_ALL_TARGETS; do
	if [ ! -x "$FUZZ_DIR/$t" ]; then
		fail "$t: not built ($FUZZ_DIR/$t; make fuzz-build needs clang and libclang-rt-14-dev)"
		continue
	fi
	short_run "$t"
	replay_regressions "$t"
done
tap_done
