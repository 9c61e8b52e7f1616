#!/bin/bash
# `make bench`'s program (tests/bench/bo_bench.c), small: it runs, checks
# every restored byte itself (exit 1 otherwise), and prints each path next
# to its limit with the ratio and a JSON line whose figures agree with the
# table: ratios are path / limit, RSS within the bound the issue sets
# (256 MiB per GPU), the checksum share a fraction, CPU seconds per GiB of
# each path and limit positive and the table's. 2 and 8 GPUs, dumps
# reading BOs in place and (BENCH_IN_PLACE=0) through staging (bo_bench
# exits 1 if the stream did otherwise); 128 MiB on 1 GPU written with
# O_DIRECT as AMDGPU_CRIU_DIRECT_IO=auto does (where the file system takes
# it) and through the page cache with 0; the 2-GPU run also makes the
# neighbour pass (BENCH_NEIGHBOUR=1): the neighbour ran (its own CPU time
# above 0) and is gone after a normal exit, SIGTERM and an error; bad
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
# jq: every named figure a positive finite number
positive() { jqt "[$1] | all(type == \"number\" and (isinfinite | not) and (isnan | not) and . > 0)"; }
# ROW SFX: the table's CPU s/GiB of the path and its limit on the first
# (idle) or last (neighbour) row of that path, within print rounding of
# the JSON's
cpu_agrees() {
	local row=$1 sfx=$2 pick figs
	if [ -z "$sfx" ]; then pick="head"; else pick="tail"; fi
	figs=$(grep -E "^  $row " "$OUT" | "$pick" -n 1 |
		sed -nE 's/.* ([0-9.]+) +([0-9.]+)  [a-z].* ([0-9.]+) +([0-9.]+)  [0-9.]+$/\2 \4/p')
	[ -n "$figs" ] && jqt "((.${row}_cpu_s_per_gib$sfx - ${figs% *}) | fabs) <= 0.001 and
		((.${row}_limit_cpu_s_per_gib$sfx - ${figs#* }) | fabs) <= 0.001"
}
# PID: no such process, or only its zombie (nothing runs)
gone() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$state" ] || [ "$state" = Z ]
}

mkdir -p "$TMP/img"
# ratios_agree SUFFIX: the JSON's ratio[SUFFIX] of each path is its figure over its
# limit's. Each figure is printed to 0.001: the ratio of two printed figures is
# off by up to ratio * (0.0005 / a + 0.0005 / b), which a slow machine's small
# figures make larger than a fixed 0.01 (twice that bound is allowed).
ratios_agree() {
	jqt "def agrees(r; a; b): ((r - a / b) | fabs) <= ([0.01, 0.001 + 0.001 * (a / b) * (1 / a + 1 / b)] | max);
	     agrees(.dump_ratio$1; .dump_gibps$1; .dump_limit_gibps$1) and
	     agrees(.restore_ratio$1; .restore_gibps$1; .restore_limit_gibps$1)"
}
for gpus in 2 8; do
	neighbour=$((gpus == 2 ? 1 : 0))
	# 64 MiB: 32 MiB per GPU or less, under the size from which dumps write with O_DIRECT
	run BENCH_GIB=0.0625 BENCH_ROUNDS=2 BENCH_GPUS=$gpus BENCH_NEIGHBOUR=$neighbour
	check "$gpus GPUs: bo_bench exits 0 (restored bytes equal: status $RC)" test "$RC" -eq 0
	[ "$RC" -eq 0 ] || diag "$(tail -n 2 "$ERR")"
	check "$gpus GPUs: the last line is one JSON object" eval 'json | jq -e "type == \"object\"" >/dev/null'
	# 64 MiB: "gib" is printed to 0.001
	check "$gpus GPUs: it says what it measured" jqt ".gpus == $gpus and .rounds == 2 and .gib == 0.062"
	check "$gpus GPUs: every figure is there and positive" \
		jqt '[.dump_gibps, .dump_limit_gibps, .dump_ratio, .restore_gibps, .restore_limit_gibps, .restore_ratio, .peak_rss_mib] | all(. > 0)'
	check "$gpus GPUs: each ratio is its path over its limit" ratios_agree ""
	check "$gpus GPUs: CPU seconds per GiB of both paths and both limits, positive" \
		positive '.dump_cpu_s_per_gib, .dump_limit_cpu_s_per_gib, .restore_cpu_s_per_gib, .restore_limit_cpu_s_per_gib'
	check "$gpus GPUs: the table shows each path's CPU per GiB beside its limit's, the JSON's" \
		eval 'grep -qE "^  path +GiB/s  CPU s/GiB  its limit.* GiB/s  CPU s/GiB  ratio$" "$OUT" && cpu_agrees dump "" && cpu_agrees restore ""'
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
	if [ "$neighbour" -eq 0 ]; then
		check "$gpus GPUs, no BENCH_NEIGHBOUR: no neighbour pass, in the JSON or on stderr" \
			eval 'jqt ".neighbour_threads == 0 and (keys | map(select(endswith(\"_neighbour\"))) | length == 0)" && ! grep -q "neighbour" "$ERR"'
		continue
	fi
	npid=$(sed -n 's/^bo_bench: neighbour pid \([0-9][0-9]*\), 1 thread spinning$/\1/p' "$ERR")
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: the neighbour was started once, 1 thread" \
		eval '[ "$(printf "%s\n" "$npid" | grep -c .)" -eq 1 ] && jqt ".neighbour_threads == 1"'
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: the neighbour ran (its own CPU time above 0)" positive .neighbour_cpu_s
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: the neighbour is gone after the exit" gone "${npid:-0}"
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: every neighbour-pass figure is there and positive" \
		positive '.dump_gibps_neighbour, .dump_limit_gibps_neighbour, .dump_ratio_neighbour, .restore_gibps_neighbour, .restore_limit_gibps_neighbour, .restore_ratio_neighbour, .dump_cpu_s_per_gib_neighbour, .dump_limit_cpu_s_per_gib_neighbour, .restore_cpu_s_per_gib_neighbour, .restore_limit_cpu_s_per_gib_neighbour'
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: each neighbour-pass ratio is its path over its limit" \
		ratios_agree _neighbour
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: the table shows the neighbour pass under the idle one, CPU as in the JSON" \
		eval 'grep -qE "^  the same rounds beside 1 thread spinning in another process \(its CPU [0-9.]+ s in [0-9.]+ s\):$" "$OUT" &&
		      [ "$(grep -cE "^  (dump|restore) \(" "$OUT")" -eq 4 ] && cpu_agrees dump _neighbour && cpu_agrees restore _neighbour'
	check "$gpus GPUs, BENCH_NEIGHBOUR=1: both rounds again, after the idle ones, with the neighbour" \
		eval '[ "$(grep -cE "^bo_bench: neighbour round [12] \(limits (first|second)\): dump [0-9.]+ .* GiB/s$" "$ERR")" -eq 2 ] &&
		      [ "$(grep -n "^bo_bench: round 2 (limits" "$ERR" | cut -d: -f1)" -lt "$(grep -n "^bo_bench: neighbour pid" "$ERR" | cut -d: -f1)" ]'
done
run BENCH_GIB=0.125 BENCH_ROUNDS=1 BENCH_IN_PLACE=0
check "BENCH_IN_PLACE=0: exits 0, the dump through staging (status $RC)" \
	eval '[ "$RC" -eq 0 ] && grep -q "; the dump copies the BOs through staging;" "$OUT" && jqt ".dump_in_place == false"'
# AMDGPU_CRIU_DIRECT_IO unset (auto): 128 MiB per GPU, at least the 64 MiB
# from which dumps write with O_DIRECT where the file system takes it
# (bo_bench exits 1 if the stream chose otherwise than it predicted)
# (tmpfs takes O_DIRECT as a copy: auto writes through the page cache there)
if [ "$(stat -f -c %T "$TMP/img")" != tmpfs ] &&
	dd if=/dev/zero of="$TMP/img/direct.probe" bs=4096 count=1 oflag=direct 2>/dev/null; then direct=true; else direct=false; fi
rm -f "$TMP/img/direct.probe"
run BENCH_GIB=0.125 BENCH_GPUS=1 BENCH_ROUNDS=1
check "auto, 128 MiB on 1 GPU: exits 0, the dump writes with O_DIRECT: $direct (status $RC)" \
	eval '[ "$RC" -eq 0 ] && jqt ".dump_direct_io == $direct and .dump_in_place == ($direct | not)"'
run BENCH_GIB=0.125 BENCH_GPUS=1 BENCH_ROUNDS=1 AMDGPU_CRIU_DIRECT_IO=0
check "AMDGPU_CRIU_DIRECT_IO=0, 128 MiB on 1 GPU: exits 0, through the page cache, in place (status $RC)" \
	eval '[ "$RC" -eq 0 ] && jqt ".dump_direct_io == false and .dump_in_place == true" && grep -q "; the dump writes through the page cache;" "$OUT"'
run BENCH_GPUS=9
check "BENCH_GPUS=9: refused (status 2)" test "$RC" -eq 2
check "BENCH_GPUS=9: in one line naming the setting" eval '[ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "BENCH_GPUS=9" "$ERR"'
run BENCH_ROUNDS=x
check "BENCH_ROUNDS=x: refused (status 2)" test "$RC" -eq 2
run BENCH_GIB=-1
check "BENCH_GIB=-1: refused (status 2)" test "$RC" -eq 2
run BENCH_NEIGHBOUR=65
check "BENCH_NEIGHBOUR=65: refused (status 2) in one line naming the setting" \
	eval '[ "$RC" -eq 2 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "BENCH_NEIGHBOUR=65" "$ERR"'

# The bench stopped in its neighbour pass (2 threads), by SIGTERM and by an
# error (exit(1): no file descriptor left), leaves no neighbour behind.
# in_neighbour_pass: starts it, waits for the neighbour; bench_pid, npid
in_neighbour_pass() {
	rm -rf "$TMP/img-stop"
	mkdir -p "$TMP/img-stop"
	# 4 rounds: the neighbour pass lasts long enough for the stop to come in it on a busy machine
	env BENCH_GIB=0.25 BENCH_ROUNDS=4 BENCH_NEIGHBOUR=2 "$BENCH" "$TMP/img-stop" >"$OUT" 2>"$ERR" &
	bench_pid=$!
	for _ in $(seq 1200); do
		grep -q '^bo_bench: neighbour pid ' "$ERR" && break
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	npid=$(sed -n 's/^bo_bench: neighbour pid \([0-9][0-9]*\), 2 threads spinning$/\1/p' "$ERR")
}
# ended_gone: waits for the bench, RC its status; then up to 5 s for the neighbour to go
ended_gone() {
	wait "$bench_pid"
	RC=$?
	for _ in $(seq 50); do
		gone "${npid:-0}" && break
		sleep 0.1
	done
}
in_neighbour_pass
kill -TERM "$bench_pid" 2>/dev/null
ended_gone
check "SIGTERM in the neighbour pass: the bench ends by it (status $RC)" \
	eval '[ -n "$npid" ] && [ "$RC" -eq 143 ]'
check "SIGTERM in the neighbour pass: the neighbour ($npid) is gone too" \
	eval '[ -n "$npid" ] && gone "$npid"'
in_neighbour_pass
prlimit --pid "$bench_pid" --nofile=3:3
ended_gone
check "an error in the neighbour pass: the bench exits 1 (status $RC), saying why" \
	eval '[ -n "$npid" ] && [ "$RC" -eq 1 ] && tail -n 1 "$ERR" | grep -q "Too many open files"'
check "an error in the neighbour pass: the neighbour ($npid) is gone too" \
	eval '[ -n "$npid" ] && gone "$npid"'
tap_done
