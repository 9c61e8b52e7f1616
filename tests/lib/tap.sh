# shellcheck shell=bash
# TAP helpers for shell tests: source, call ok/fail/check, end with tap_done.
TAP_N=0
TAP_FAILED=0
ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
fail() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $*"; }
# check DESCRIPTION COMMAND...: ok if the command succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
diag() { echo "# $*"; }
tap_done() { echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]; }
