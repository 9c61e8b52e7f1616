#!/bin/bash
# What the plugin costs a CRIU run that has no GPU in it, next to what CRIU
# itself takes for the same run, both read from CRIU's own log clock in the
# same runs: a process tree without a GPU (tests/workloads/forkserver.c in
# reap mode: a parent and its short-lived children) is dumped and restored
# ROUNDS times with only our plugin in --libdir.
#   plugin load  the log line before CRIU's "Plugin \"amdgpu_plugin\"" to it:
#                dlopen() of the plugin and its libraries
#   plugin init  from that line to "amdgpu_plugin: initialised for ..."
#   criu         the whole run (the log's last timestamp)
# Medians are printed. Not a test: nothing is asserted on speed.
#
#   tests/bench/nongpu_cost.sh [ROUNDS]   (BUILD, CRIU as for the host tests)
set -euo pipefail
BUILD=${BUILD:?BUILD must be the absolute build directory}
CRIU=${CRIU:?CRIU must name the criu command}
ROUNDS=${1:-20}
T=$(mktemp -d -t nongpu-cost.XXXXXX)
PID=
cleanup() {
	[ -z "$PID" ] || kill -KILL -- "-$PID" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/plugins" "$T/run"
cp "$BUILD/amdgpu_plugin.so" "$T/plugins/"

# ts LOG PATTERN: the timestamp (seconds) of the first line matching, or of the
# line before it with -B
ts() { grep -m1 "$2" "$1" | sed 's/^(\([0-9.]*\)).*/\1/'; }
ts_before() { grep -B1 -m1 "$2" "$1" | head -1 | sed 's/^(\([0-9.]*\)).*/\1/'; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for stage in dump restore; do : >"$T/$stage.load" && : >"$T/$stage.init" && : >"$T/$stage.total"; done
record() { # record STAGE LOG
	local log=$2
	ms "$(ts_before "$log" 'Plugin "amdgpu_plugin"')" "$(ts "$log" 'Plugin "amdgpu_plugin"')" >>"$T/$1.load"
	ms "$(ts "$log" 'Plugin "amdgpu_plugin"')" "$(ts "$log" "amdgpu_plugin: initialised for $1")" >>"$T/$1.init"
	ms 0 "$(tail -1 "$log" | sed 's/^(\([0-9.]*\)).*/\1/')" >>"$T/$1.total"
}

for _ in $(seq "$ROUNDS"); do
	rm -rf "$T/img" "$T/pid" "$T/run"/* && mkdir -p "$T/img"
	setsid "$BUILD/tests/bin/forkserver" "$T/run" reap </dev/null >/dev/null 2>&1 &
	PID=$!
	for _ in $(seq 100); do [ -f "$T/run/ready" ] && break; sleep 0.05; done
	"$CRIU" dump -t "$PID" -D "$T/img" --libdir "$T/plugins" -v4 -o dump.log
	wait "$PID" 2>/dev/null || true
	# its orphaned children hold its PID as their session ID until init reaps them
	for _ in $(seq 400); do pgrep -s "$PID" >/dev/null || break; sleep 0.05; done
	if ! "$CRIU" restore -D "$T/img" --libdir "$T/plugins" -v4 -o restore.log -d --pidfile "$T/pid"; then
		grep -E 'Error|amdgpu_plugin' "$T/img/restore.log" >&2
		exit 1
	fi
	PID=$(cat "$T/pid")
	record dump "$T/img/dump.log"
	record restore "$T/img/restore.log"
	kill -KILL -- "-$PID" 2>/dev/null || true
	PID=
	sleep 0.2
done
echo "non-GPU tree, $ROUNDS rounds, medians in ms (criu: $("$CRIU" --version | head -1))"
for stage in dump restore; do
	printf '%-8s plugin load %s  plugin init %s  whole criu run %s\n' "$stage" \
		"$(median <"$T/$stage.load")" "$(median <"$T/$stage.init")" \
		"$(median <"$T/$stage.total")"
done
