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

# fuzz_opts TARGET: the options every run of TARGET gets
fuzz_opts() {
	echo "-max_len=$(fuzz_max_len "$1") -timeout=$FUZZ_TIMEOUT -rss_limit_mb=$FUZZ_RSS_MB" \
		"-malloc_limit_mb=$FUZZ_RSS_MB -close_fd_mask=3 -print_final_stats=1"
}

# Reproducers under tests/fuzz/regressions/<target>/ that still fail on this
# branch: one "target/file" per line in tests/fuzz/regressions/KNOWN (with a
# comment saying which defect). Replays expect them to fail; once the reader
# is fixed, delete the line.
fuzz_known() { # ROOT TARGET FILE -> status 0 if listed
	grep -qx "$2/$3" <(sed 's/[[:space:]]*#.*//' "$1/tests/fuzz/regressions/KNOWN" 2>/dev/null)
}
