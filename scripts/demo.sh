#!/bin/bash
# `make demo`: the main job on the embedded default machine, a simulated
# two-socket node with 8 MI210 GPUs in two xGMI hives (a real capture from
# ../shared/kfd-topologies). The end-to-end part (dump a GPU workload in the
# VM under kfdsim, restore it onto the other hive) arrives with the plugin's
# dump and restore hooks; until then this shows, on the host, what the
# restore would decide: which GPUs of hive B receive a 4-GPU job from hive A,
# and why a job cannot be split across hives.
#
# usage: demo.sh TOOL FIXTURES
set -euo pipefail
TOOL=$1 FIXTURES=$2
capture=$FIXTURES/k8sdp-mi210-8gpu-2hives-2socket
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The capture has no gpu_id files; give each GPU a distinct id as KFD would.
cp -r "$capture" "$work/mi210"
chmod -R u+w "$work/mi210"
for n in "$work"/mi210/nodes/*; do
	idx=${n##*/}
	if grep -q '^simd_count [1-9]' "$n/properties"; then
		echo $((0x5000 + idx * 0x111)) >"$n/gpu_id"
	else
		echo 0 >"$n/gpu_id"
	fi
done

say() { printf '\n== %s\n' "$*"; }
say "The machine: 2 CPU sockets, 8 MI210 in two xGMI hives (nodes 2-5 and 6-9)"
"$TOOL" topology --sysfs "$work/mi210"
say "A job used hive A (nodes 2-5); the restore may only use hive B (nodes 6-9)"
"$TOOL" match --from "$work/mi210" --from-nodes 2-5 --to "$work/mi210" --to-nodes 6-9
say "Two GPUs of hive A may not land on GPUs of different hives (xGMI must stay xGMI)"
set +e
"$TOOL" match --from "$work/mi210" --from-nodes 2,3 --to "$work/mi210" --to-nodes 5,6
rc=$?
set -e
echo "(exit status $rc: 1 means 'not compatible')"
say "Not there yet: dumping and restoring a live GPU process (the plugin's dump/restore hooks)."
