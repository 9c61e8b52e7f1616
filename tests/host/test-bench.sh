#!/bin/bash
# `make bench`'s program (tests/bench/bo_bench.c), small: it runs, checks
# every restored byte itself (exit 1 otherwise), and prints each path next
# to its limit with the ratio and a JSON line whose figures agree with the
# table: ratios are path / limit, RSS within the bound the issue sets
# (256 MiB per GPU), the checksum share a fraction. 2 and 8 GPUs, dumps
# reading BOs in place and (BENCH_IN_PLACE=0) through staging (bo_bench
# exits 1 if the stream did otherwise); bad
# settings are refused in one line. Speeds are not judged here (a busy
# machine): `make bench` is for that.
# env: BUILD (absolute build dir holding bench/bo_bench)
# run-suite-timeout: 300
# run-suite-parallel: yes (writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

BENCH=$BUILD/bench/bo_bench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/stdout
ERR=$TMP/stderr

run() {
	env "$@" "$BENCH" "$TMP/img" >"$OUT" 2>"$ERR"
	RC=$?
}
json() { tail -n 1 "$OUT"; }
jqt() { [ "$(json | jq -e "$1" 2>/dev/null)" = true ]; }

mkdir -p "$TMP/img"
for gpus in 2 8; do
	run BENCH_GIB=0.125 BENCH_ROUNDS=2 BENCH_GPUS=$gpus
	check "$gpus GPUs: bo_bench exits 0 (restored bytes equal: status $RC)" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || diag "$(tail -n 2 "$ERR")"
	check "$gpus GPUs: the last line is one JSON object" eval 'json | jq -e "type == \"object\"" >/dev/null'
	check "$gpus GPUs: it says what it measured" jqt ".gpus == $gpus and .rounds == 2 and .gib == 0.125"
	check "$gpus GPUs: every figure is there and positive" \
		jqt '[.dump_gibps, .dump_limit_gibps, .dump_ratio, .restore_gibps, .restore_limit_gibps, .restore_ratio, .peak_rss_mib] | all(. > 0)'
	# each figure is printed to 0.001: the ratio of two printed figures is
	# off by up to ratio * (0.0005 / a + 0.0005 / b), which a slow machine's
	# small figures make larger than a fixed 0.01 (twice that bound is allowed)
	check "$gpus GPUs: each ratio is its path over its limit" \
		jqt 'def agrees(r; a; b): ((r - a / b) | fabs) <= ([0.01, 0.001 + 0.001 * (a / b) * (1 / a + 1 / b)] | max);
		     agrees(.dump_ratio; .dump_gibps; .dump_limit_gibps) and agrees(.restore_ratio; .restore_gibps; .restore_limit_gibps)'
	check "$gpus GPUs: peak RSS within 256 MiB per GPU" jqt ".peak_rss_mib <= 256 * $gpus"
	check "$gpus GPUs: the checksum share is a fraction above 0" jqt '.checksum_share > 0 and .checksum_share < 1'
	check "$gpus GPUs: the table shows both paths next to their limits" \
		eval 'grep -qE "^  dump .* [0-9.]+  write \+ fdatasync, a file per GPU.* [0-9.]+  [0-9.]+$" "$OUT" && grep -qE "^  restore .* [0-9.]+  cold read, a file per GPU.* [0-9.]+  [0-9.]+$" "$OUT"'
	check "$gpus GPUs: a progress line per round with both paths and limits" \
		test "$(grep -cE '^bo_bench: round [12] \(limits (first|second)\): dump [0-9.]+ \(limit [0-9.]+, [0-9.]+\), restore [0-9.]+ \(limit [0-9.]+, [0-9.]+\) GiB/s$' "$ERR")" -eq 2
	check "$gpus GPUs: the limits go first in round 1, second in round 2" \
		eval 'grep -q "^bo_bench: round 1 (limits first)" "$ERR" && grep -q "^bo_bench: round 2 (limits second)" "$ERR"'
	check "$gpus GPUs: each figure is the best of its 2 rounds" grep -q "; best of 2 rounds$" "$OUT"
	check "$gpus GPUs: the dump reads the BOs in place, said in the header and the JSON" \
		eval 'grep -q "; the dump reads the BOs in place (no staging copy);" "$OUT" && jqt ".dump_in_place == true"'
	check "$gpus GPUs: nothing left in the image directory" test -z "$(ls -A "$TMP/img")"
done
run BENCH_GIB=0.125 BENCH_ROUNDS=1 BENCH_IN_PLACE=0
check "BENCH_IN_PLACE=0: exits 0, the dump through staging (status $RC)" \
	eval '[ "$RC" -eq 0 ] && grep -q "; the dump copies the BOs through staging;" "$OUT" && jqt ".dump_in_place == false"'
run BENCH_GPUS=9
check "BENCH_GPUS=9: refused (status 2)" test "$RC" -eq 2
check "BENCH_GPUS=9: in one line naming the setting" eval '[ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "BENCH_GPUS=9" "$ERR"'
run BENCH_ROUNDS=x
check "BENCH_ROUNDS=x: refused (status 2)" test "$RC" -eq 2
run BENCH_GIB=-1
check "BENCH_GIB=-1: refused (status 2)" test "$RC" -eq 2
tap_done
