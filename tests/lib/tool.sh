# shellcheck shell=bash
# Helpers of the host tests that run amdgpu-criu: source after tap.sh with
# TOOL set (the amdgpu-criu to run) and KFD_FIXTURES (kfd-topologies/).
# Makes TMP (removed at exit), OUT, ERR, and names the captures used most.
# shellcheck disable=SC2034 # used by the tests that source this file
FX=$KFD_FIXTURES
MI308X=$FX/k8sdp-mi308x-8gpu-cpx-32part-2socket
MI210=$FX/k8sdp-mi210-8gpu-2hives-2socket
VEGA10=$FX/k8sdp-vega10-mi25-1gpu-1socket

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/stdout
ERR=$TMP/stderr

# run ARGS...: the tool's stdout in $OUT, stderr in $ERR, exit status in $RC
run() {
	"$TOOL" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# jqt FILTER: true if FILTER evaluates to true on $OUT
jqt() { [ "$(jq -e "$1" "$OUT" 2>/dev/null)" = true ]; }

# one_json: stdout is exactly one JSON value
one_json() { [ "$(jq -s length "$OUT" 2>/dev/null)" = 1 ]; }

# expect_rc RC DESC: the last run ended with status RC
expect_rc() {
	if [ "$RC" -eq "$1" ]; then ok "$2"; else fail "$2 (rc=$RC: $(head -c 300 "$ERR"))"; fi
}

# usage_error DESC ARGS...: exit 2, nothing on stdout, one "amdgpu-criu: " line on stderr
usage_error() {
	local desc=$1
	shift
	run "$@"
	if [ "$RC" -eq 2 ] && [ ! -s "$OUT" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
		grep -q '^amdgpu-criu: ' "$ERR"; then
		ok "$desc"
	else
		fail "$desc (rc=$RC, stdout $(wc -c <"$OUT") bytes, stderr: $(head -c 300 "$ERR"))"
	fi
}

# ---- a GPU hidden by the device cgroup (KFD answers EACCES), seen as nobody ----
NOBODY=65534
# nobody_runs: this test is root and can run TOOL as nobody (setpriv)
nobody_runs() {
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups test -x "$TOOL" 2>/dev/null
}
# as_nobody ARGS...: run ARGS as nobody, like run
as_nobody() {
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$TOOL" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}
# hide_gpu SRC DST NODE: DST, a copy of capture SRC under TMP that nobody reads, but for node NODE
hide_gpu() {
	chmod 755 "$TMP"
	cp -r "$1" "$2"
	chmod -R a+rX "$2"
	chmod 000 "$2/nodes/$3/properties" "$2/nodes/$3/gpu_id" "$2/nodes/$3/name"
}
