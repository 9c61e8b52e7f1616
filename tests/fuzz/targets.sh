# shellcheck shell=bash
# Per-target libFuzzer options, shared by run-fuzz.sh (`make fuzz`) and
# tests/host/test-fuzz.sh (the short run in `make check`). Source it.
#
# max_len: the largest input worth mutating (the seeds are below it: a
# checkpoint with a topology tree is ~90 KB). Every target gets 10 s per
# input (a valid input takes milliseconds; what takes longer is a finding)
# and 1 GiB of memory (a valid input needs a few MB; the readers must bound
# what hostile input costs).
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-10}
FUZZ_RSS_MB=${FUZZ_RSS_MB:-1024}

fuzz_max_len() {
	case "$1" in
	fuzz_priv_blob) echo 16384 ;;
	fuzz_topology_image) echo 32768 ;;
	fuzz_tool) echo 131072 ;;
	*) echo 65536 ;;
	esac
}

# fuzz_opts TARGET: the options every run of TARGET gets (the file-tree
# targets get tree.dict: the encoding's markers, sysfs names and keys)
fuzz_opts() {
	local here
	here=$(dirname "${BASH_SOURCE[0]}")
	echo "-max_len=$(fuzz_max_len "$1") -timeout=$FUZZ_TIMEOUT -rss_limit_mb=$FUZZ_RSS_MB" \
		"-malloc_limit_mb=$FUZZ_RSS_MB -close_fd_mask=3 -print_final_stats=1"
	case "$1" in
	fuzz_topology_parse | fuzz_tool) echo "-dict=$here/tree.dict" ;;
	esac
}

# Reproducers under tests/fuzz/regressions/<target>/ that still fail on this
# branch: one "target/file" per line in tests/fuzz/regressions/KNOWN (with a
# comment saying which defect). Replays expect them to fail; once the reader
# is fixed, delete the line.
fuzz_known() { # ROOT TARGET FILE -> status 0 if listed
	grep -qx "$2/$3" <(sed 's/[[:space:]]*#.*//' "$1/tests/fuzz/regressions/KNOWN" 2>/dev/null)
}

# The same list as FUZZ_ALL in tests/fuzz/fuzz.mk.
# shellcheck disable=SC2034 # used by the scripts that source this file
FUZZ_ALL_TARGETS="fuzz_kfd_image fuzz_priv_blob fuzz_topology_image fuzz_bo_stream fuzz_bo_seq
	fuzz_topology_parse fuzz_tool"

# fuzz_reason LOG: the line of a libFuzzer log that says what was found
fuzz_reason() {
	grep -m1 'fuzz: invariant broken' "$1" ||
		grep -m1 -E '^==[0-9]+==ERROR: |ALARM: working on the last Unit|out-of-memory|^SUMMARY: ' "$1"
}
