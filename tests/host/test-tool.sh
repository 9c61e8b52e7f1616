#!/bin/bash
# amdgpu-criu command-line tool on the real KFD topology captures.
# env: BUILD (absolute build dir holding amdgpu-criu), KFD_FIXTURES (kfd-topologies/)
# run-suite-parallel: yes (reads the captures, writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

TOOL=$BUILD/amdgpu-criu
# shellcheck source=tests/lib/tool.sh
. "$(dirname "$0")/../lib/tool.sh"
WORKSTATION=$FX/rocprofsdk-testdata-workstation-3gpu-plus-3-foreign-nodes

# render minor of node N in topology DIR
minor_of() { sed -n 's/^drm_render_minor //p' "$1/nodes/$2/properties"; }

# ---- general -----------------------------------------------------------------
check "tool is built" test -x "$TOOL"

run --help
expect_rc 0 "--help exits 0"
check "--help lists the commands" grep -q '^  topology' "$OUT"
check "--help lists match" grep -q '^  match' "$OUT"

run help match
expect_rc 0 "help match exits 0"
cp "$OUT" "$TMP/help-match"
run match --help
check "match --help prints the same text as help match" cmp -s "$OUT" "$TMP/help-match"
check "match usage names --from-nodes" grep -q -- '--from-nodes LIST' "$OUT"

run --version
expect_rc 0 "--version exits 0"
check "--version prints the name" grep -q '^amdgpu-criu ' "$OUT"

usage_error "unknown command exits 2" frobnicate
check "unknown command hints at --help" grep -q -- '--help' "$ERR"
usage_error "help for an unknown command exits 2" help frobnicate
usage_error "unknown global option exits 2" --bogus
usage_error "unknown topology option exits 2" topology --bogus
usage_error "--sysfs without argument exits 2" topology --sysfs
usage_error "extra argument to topology exits 2" topology --sysfs "$MI308X" extra
run
expect_rc 2 "no command exits 2"
check "no command prints the usage on stderr" grep -q '^usage: ' "$ERR"

# ---- topology --json ----------------------------------------------------------------
run topology --sysfs "$MI308X" --json
expect_rc 0 "topology --json on MI308X exits 0"
check "topology --json prints one JSON document" one_json
check "MI308X lists 34 nodes" jqt '.nodes | length == 34'
check "MI308X node 2 has gpu_id 24248" jqt '.nodes[2].gpu_id == 24248'
check "MI308X node 2 has render minor 128" jqt '.nodes[2].render_minor == 128 and .nodes[2].render_node == "renderD128"'
check "MI308X node 2 is gfx942" jqt '.nodes[2].gfx_target == "gfx942"'
check "MI308X node 2 has 20 CUs and 48 GiB VRAM" jqt '.nodes[2].compute_units == 20 and .nodes[2].vram_size == 51539607552'
check "MI308X node 2 is partition 1 of 4" jqt '.nodes[2].partition.index == 1 and .nodes[2].partition.count == 4'
check "MI308X node 18 is on PCI 0001:0b" jqt '.nodes[18].pci_bus == "0001:0b"'
check "MI308X node 19 (partition 2) is at PCI address 0001:0b:00.1, unique_id as AMDGPU_CRIU_GPUS takes it" \
	jqt '.nodes[19].pci_address == "0001:0b:00.1" and (.nodes[19].unique_id | test("^0x[0-9a-f]{16}$"))'
check "MI308X node 0 is a CPU with 112 cores" jqt '.nodes[0].type == "cpu" and .nodes[0].cpu_cores == 112'
check "MI308X node 2 properties hold simd_count and device_id" jqt '.nodes[2].properties | .simd_count == 80 and .device_id == 29858'
file_keys=$(awk '{print $1}' "$MI308X/nodes/2/properties" | LC_ALL=C sort | paste -sd, -)
check "MI308X node 2 properties have every key of the file" \
	test "$(jq -r '.nodes[2].properties | keys | join(",")' "$OUT")" = "$file_keys"
check "MI308X node 2 has 32 io_links and 1 p2p_link" jqt '(.nodes[2].io_links | length) == 32 and (.nodes[2].p2p_links | length) == 1'
check "MI308X xGMI link 2->3 is typed" jqt '.nodes[2].io_links | map(select(.node_to == 3))[0] | .type == 11 and .type_name == "xgmi"'
check "MI308X hive id is a full hex string" jqt '.nodes[2].hive_id == "0x1d1541eb451bea5b"'
check "MI308X generation_id is 33" jqt '.generation_id == 33'
check "node ids are in node order" jqt '[.nodes[].node] == [range(34)]'

run topology --sysfs "$VEGA10" --json
check "Vega10 (2018 keys) has no gfx target" jqt '.nodes[1].gfx_target == null and .nodes[1].gpu_id == 13261'

# ---- topology table ------------------------------------------------------------------
run topology --sysfs "$MI308X"
expect_rc 0 "topology on MI308X exits 0"
check "table has a header and 34 rows" test "$(wc -l <"$OUT")" -eq 35
check "table shows gfx942" grep -q 'gfx942' "$OUT"
check "table shows domain 1 GPUs by their PCI address (0001:0b:00.0)" grep -Eq '^ +18 +23332 +renderD160 .* 0001:0b:00.0 ' "$OUT"
check "table shows CPU nodes with cores" grep -Eq '^ +0 +CPU +112 cores$' "$OUT"
check "table shows partitions" grep -Eq '^ +5 +2236 .* 4/4$' "$OUT"
check "table shows the device name" grep -q '0x74a2 MI308X' "$OUT"

run topology --sysfs "$MI210"
check "MI210 is gfx90a" grep -Eq '^ +2 +- +renderD128 +0x740f MI210 +gfx90a ' "$OUT"
run topology --sysfs "$WORKSTATION"
check "gfx target minor and stepping in hex (gfx1032, gfx1102, gfx1201)" \
	bash -c "grep -q ' gfx1032 ' '$OUT' && grep -q ' gfx1102 ' '$OUT' && grep -q ' gfx1201 ' '$OUT'"
run topology --sysfs "$VEGA10"
check "missing gfx_target_version shows -" grep -Eq '^ +1 +13261 +renderD128 +0x6860 MI25 +- ' "$OUT"

usage_error "topology on a missing directory exits 2" topology --sysfs "$TMP/nonexistent"
cp -r "$MI308X" "$TMP/malformed"
sed -i 's/^simd_count 80$/simd_count eighty/' "$TMP/malformed/nodes/7/properties"
usage_error "topology on a malformed properties file exits 2" topology --sysfs "$TMP/malformed"
usage_error "topology --json on a malformed file exits 2" topology --sysfs "$TMP/malformed" --json

"$TOOL" topology --sysfs "$MI308X" >/dev/full 2>"$ERR"
RC=$?
check "a failed write to stdout exits 2" test "$RC" -eq 2
check "a failed write to stdout is reported" grep -q '^amdgpu-criu: .*standard output' "$ERR"

# ---- match ------------------------------------------------------------------------------
run match --from "$MI308X" --to "$MI308X" --json
expect_rc 0 "MI308X onto itself exits 0"
check "match --json prints one JSON document" one_json
check "MI308X onto itself is compatible with 32 GPUs" jqt '.compatible == true and (.map | length) == 32'
check "MI308X onto itself is the identity" jqt 'all(.map[]; .src_gpu_id == .dst_gpu_id and .src_node == .dst_node and .src_render_minor == .dst_render_minor)'
check "match --json writes nothing on stderr" test ! -s "$ERR"

run match --from "$MI308X" --to "$MI308X" --from-nodes 2,3,4,5 --to-nodes 18,19,20,21 --json
expect_rc 0 "MI308X partitions 2-5 onto 18-21 exit 0"
check "the map keeps the source GPUs" jqt '[.map[].src_node] | sort == [2,3,4,5]'
check "the map uses exactly the destination GPUs" jqt '[.map[].dst_node] | sort == [18,19,20,21]'
expected_pairs=$(for n in 18 19 20 21; do echo "$n:$(minor_of "$MI308X" $n)"; done | paste -sd, -)
actual_pairs=$(jq -r '[.map[] | "\(.dst_node):\(.dst_render_minor)"] | sort | join(",")' "$OUT")
check "destination render minors are the capture's ($expected_pairs)" \
	test "$actual_pairs" = "$expected_pairs"
cp "$OUT" "$TMP/map-list"
run match --from "$MI308X" --to "$MI308X" --from-nodes 2-5 --to-nodes 18-21 --json
check "ranges in LIST give the same map" cmp -s "$OUT" "$TMP/map-list"

run match --from "$MI308X" --to "$MI308X" --from-nodes 2,3,4,5 --to-nodes 18,19,20,21
expect_rc 0 "text match exits 0"
check "text match has a row per GPU" test "$(grep -Ec '^ +[0-9]+ +[0-9]+ +renderD' "$OUT")" -eq 4
check "text match names the render nodes to expose" \
	grep -q '^expose: renderD160 renderD161 renderD162 renderD163 (nodes 18-21)$' "$OUT"

run match --from "$MI308X" --from-nodes 2 --to "$VEGA10" --json
expect_rc 1 "MI308X partition onto Vega10 exits 1"
check "incompatible --json prints one JSON document" one_json
check "incompatible --json says compatible false with a reason" \
	jqt '.compatible == false and (.reason | test("device_id|simd_count")) and (has("map") | not)'
check "incompatible match writes nothing on stderr" test ! -s "$ERR"
run match --from "$MI308X" --from-nodes 2 --to "$VEGA10"
expect_rc 1 "text incompatible match exits 1"
check "text incompatible match prints the reason" grep -Eq '^not compatible: .*(device_id|simd_count)' "$OUT"
run match --from "$MI308X" --to "$VEGA10" --json
expect_rc 1 "all MI308X partitions onto Vega10 exit 1"

usage_error "match with a bad option exits 2" match --from "$MI308X" --to "$MI308X" --bogus
usage_error "match without --to exits 2" match --from "$MI308X"
usage_error "match with a missing --from dir exits 2" match --from "$TMP/nonexistent" --to "$MI308X"
usage_error "match with a missing --to dir exits 2" match --from "$MI308X" --to "$TMP/nonexistent"
usage_error "match with a malformed topology exits 2" match --from "$TMP/malformed" --to "$MI308X"
usage_error "match with LIST '2,,3' exits 2" match --from "$MI308X" --to "$MI308X" --from-nodes 2,,3
usage_error "match with LIST 'a' exits 2" match --from "$MI308X" --to "$MI308X" --to-nodes a
usage_error "match with LIST '5-3' exits 2" match --from "$MI308X" --to "$MI308X" --to-nodes 5-3
usage_error "match with LIST '2,2' exits 2" match --from "$MI308X" --to "$MI308X" --from-nodes 2,2
usage_error "match with an empty LIST exits 2" match --from "$MI308X" --to "$MI308X" --from-nodes ''
usage_error "match with a huge LIST index exits 2" match --from "$MI308X" --to "$MI308X" --to-nodes 99999999999
usage_error "match with a CPU node in --from-nodes exits 2" match --from "$MI308X" --to "$MI308X" --from-nodes 0,2 --json
check "the error names the CPU node" grep -q 'node 0' "$ERR"
usage_error "match with a CPU node in --to-nodes exits 2" match --from "$MI308X" --to "$MI308X" --to-nodes 1
usage_error "match with a node that does not exist exits 2" match --from "$MI308X" --to "$MI308X" --to-nodes 34
KFD_NUMA_CHECK=maybe usage_error "match with a bad KFD_*_CHECK value exits 2" \
	match --from "$MI308X" --to "$MI308X"

KFD_FW_VER_CHECK=0 KFD_NUMA_CHECK=no run match --from "$MI308X" --to "$MI308X" --json
expect_rc 0 "relaxed checks from the environment are accepted"

# ---- MI210: no gpu_id files; a copy with gpu_id files added -----------------------------
usage_error "match of GPUs without gpu_id exits 2" match --from "$MI210" --to "$MI210" --json
cp -r "$MI210" "$TMP/mi210"
for d in "$TMP"/mi210/nodes/*/; do
	n=$(basename "$d")
	if grep -q '^simd_count 0$' "$d/properties"; then echo 0; else echo $((40000 + n)); fi >"$d/gpu_id"
done
run topology --sysfs "$TMP/mi210" --json
check "MI210 copy shows the added gpu_ids" jqt '.nodes[2].gpu_id == 40002 and .nodes[9].gpu_id == 40009'
run match --from "$TMP/mi210" --to "$TMP/mi210" --json
expect_rc 0 "MI210 copy onto itself exits 0"
check "MI210 copy onto itself is the identity on 8 GPUs" \
	jqt '(.map | length) == 8 and all(.map[]; .src_gpu_id == .dst_gpu_id)'
run match --from "$TMP/mi210" --from-nodes 2,3 --to "$TMP/mi210" --to-nodes 6-9 --json
expect_rc 0 "an xGMI pair of one MI210 hive fits into the other hive"
check "the pair lands on the allowed GPUs" jqt '[.map[].dst_node] | all(. >= 6 and . <= 9) and length == 2'
check "the pair gets the destination gpu_ids" jqt 'all(.map[]; .dst_gpu_id == 40000 + .dst_node)'

# A destination whose GPUs have no gpu_id: the same explanation whether the
# default destination set skipped them (not compatible) or they were listed
# (unusable input), naming the nodes
run match --from "$TMP/mi210" --from-nodes 2,3 --to "$MI210"
expect_rc 1 "onto GPUs without gpu_id: not compatible"
check "the skipped GPU nodes are named with the reason" grep -qF \
	'only 0 destination GPUs are usable; not usable: GPU nodes 2-9 (no gpu_id: gpu_id file missing or 0)' "$OUT"
why_default=$(grep -o '(no gpu_id[^)]*)' "$OUT")
usage_error "onto listed GPUs without gpu_id exits 2" match --from "$TMP/mi210" --from-nodes 2,3 --to "$MI210" --to-nodes 6-9
check "a listed GPU without gpu_id is named" grep -qF 'destination GPU node 6 is not usable (no gpu_id' "$ERR"
check "both say why in the same words" test -n "$why_default" -a "$(grep -o '(no gpu_id[^)]*)' "$ERR")" = "$why_default"

# ---- a GPU hidden by the device cgroup (EACCES), as an unprivileged user ------------------
if nobody_runs; then
	hide_gpu "$MI308X" "$TMP/hidden" 5
	as_nobody topology --sysfs "$TMP/hidden"
	check "a hidden GPU is shown as (not accessible)" grep -Eq '^ +5 +\(not accessible\)$' "$OUT"
	as_nobody topology --sysfs "$TMP/hidden" --json
	check "a hidden GPU is accessible:false in JSON" jqt '.nodes[5] == {"node": 5, "accessible": false}'
	as_nobody match --from "$TMP/hidden" --to "$TMP/hidden" --to-nodes 5
	check "a hidden GPU in --to-nodes exits 2" test "$RC" -eq 2 -a ! -s "$OUT"
	as_nobody match --from "$MI308X" --from-nodes 2-5 --to "$TMP/hidden" --json
	check "a hidden GPU is never a destination" jqt '.compatible == true and all(.map[]; .dst_node != 5)'
else
	for i in 1 2 3 4; do ok "hidden GPU test $i # SKIP needs root and setpriv to run as nobody"; done
fi

tap_done
