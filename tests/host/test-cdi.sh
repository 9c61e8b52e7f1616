#!/bin/bash
# amdgpu-criu cdi on the real KFD topology captures: the CDI spec holds one
# device per usable GPU (what the capture's files say, read here without
# the tool), each with its render node and /dev/kfd, names CDI takes, a
# device "all", the PCI address `topology --json` shows; --output replaces
# the file by a rename; no GPU, no topology and a bad --kind are refused in
# one line; a hostile name from sysfs is printed escaped.
# env: BUILD (absolute build dir holding amdgpu-criu), KFD_FIXTURES (kfd-topologies/)
# run-suite-parallel: yes (reads the captures, writes under mktemp)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

TOOL=${TOOL:-$BUILD/amdgpu-criu}

# shellcheck source=tests/lib/tool.sh
. "$(dirname "$0")/../lib/tool.sh"

# prop DIR N KEY: the value of KEY in nodes/N/properties (empty if absent)
prop() { sed -n "s/^$3 //p" "$1/nodes/$2/properties" 2>/dev/null; }

# usable_nodes DIR: the GPU nodes a device is due for, from the capture's files:
# simd_count > 0, a gpu_id file with a nonzero id, a nonzero render minor; in node order
usable_nodes() {
	local n=0 gpu_id
	while [ -d "$1/nodes/$n" ]; do
		gpu_id=$(cat "$1/nodes/$n/gpu_id" 2>/dev/null)
		if [ "$(prop "$1" $n simd_count)" -gt 0 ] 2>/dev/null && [ "${gpu_id:-0}" -ne 0 ] &&
			[ "$(prop "$1" $n drm_render_minor)" -gt 0 ] 2>/dev/null; then
			echo $n
		fi
		n=$((n + 1))
	done
}

# The spec's checks (python3): verify CHECK DIR SPEC TOPOLOGY_JSON USABLE_NODES
cat >"$TMP/verify.py" <<'EOF'
import json, os, re, sys

check, capture, spec_file, topo_file, usable = sys.argv[1:6]
usable = [int(n) for n in usable.split()]
spec = json.load(open(spec_file))
topo = json.load(open(topo_file))
devices = spec["devices"]
gpus = [d for d in devices if d["name"] != "all"]
alls = [d for d in devices if d["name"] == "all"]
NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
ANN = "amdgpu-criu/"

def prop(node, key):
    for line in open(os.path.join(capture, "nodes", str(node), "properties")):
        k, v = line.split()
        if k == key:
            return int(v)
    return None

def paths(dev):
    return [n["path"] for n in dev["containerEdits"]["deviceNodes"]]

def renders(dev):
    return [p for p in paths(dev) if p.startswith("/dev/dri/")]

def expect(cond, what):
    if not cond:
        print("# " + what)
        sys.exit(1)

if check == "header":
    expect(spec["cdiVersion"] == "0.6.0" and spec["kind"] == "amd.com/gpu",
           "cdiVersion %r, kind %r" % (spec.get("cdiVersion"), spec.get("kind")))
    expect(sorted(spec) == ["cdiVersion", "devices", "kind"], "top-level keys %s" % sorted(spec))
elif check == "count":
    expect(len(gpus) == len(usable), "%d GPU devices, %d usable GPU nodes" % (len(gpus), len(usable)))
elif check == "render":
    for dev, node in zip(gpus, usable):
        want = "/dev/dri/renderD%d" % prop(node, "drm_render_minor")
        expect(renders(dev) == [want], "device %s: %s, node %d has %s" % (dev["name"], renders(dev), node, want))
        expect(dev["annotations"][ANN + "kfd-node"] == str(node), "device %s: not node %d" % (dev["name"], node))
        gpu_id = open(os.path.join(capture, "nodes", str(node), "gpu_id")).read().strip()
        expect(dev["annotations"][ANN + "gpu-id"] == gpu_id, "device %s: gpu_id %s" % (dev["name"], gpu_id))
elif check == "kfd":
    for dev in devices:
        expect(paths(dev).count("/dev/kfd") == 1, "device %s: %s" % (dev["name"], paths(dev)))
        for n in dev["containerEdits"]["deviceNodes"]:
            expect(n == {"path": n["path"], "type": "c"}, "device %s: node %s" % (dev["name"], n))
elif check == "names":
    names = [d["name"] for d in devices]
    expect(len(set(names)) == len(names), "names not unique: %s" % names)
    expect(all(NAME.match(n) for n in names), "a name CDI does not take: %s" % names)
    expect([d["name"] for d in gpus] == [str(i) for i in range(len(gpus))], "names %s" % names)
elif check == "all":
    expect(len(alls) == 1, "%d devices named all" % len(alls))
    want = sorted(r for d in gpus for r in renders(d))
    got = renders(alls[0])
    expect(sorted(got) == want and len(set(got)) == len(got), "all: %s, devices: %s" % (got, want))
    expect("annotations" not in alls[0], "all has annotations")
elif check == "pci":
    for dev in gpus:
        ann = dev["annotations"]
        node = topo["nodes"][int(ann[ANN + "kfd-node"])]
        expect(ann[ANN + "pci-address"] == node["pci_address"],
               "device %s: %s, topology says %s" % (dev["name"], ann[ANN + "pci-address"], node["pci_address"]))
        expect(ann.get(ANN + "unique-id") == node["unique_id"],
               "device %s: unique-id %s, topology says %s" % (dev["name"], ann.get(ANN + "unique-id"), node["unique_id"]))
else:
    expect(False, "unknown check " + check)
EOF

# ---- every capture --------------------------------------------------------------------------
n_with=0
for dir in "$FX"/*/; do
	dir=${dir%/}
	name=$(basename "$dir")
	[ -d "$dir/nodes" ] || continue
	usable=$(usable_nodes "$dir" | tr '\n' ' ')
	run cdi --sysfs "$dir"
	if [ -z "$usable" ]; then
		check "$name: no usable GPU: exit 2, nothing on stdout (rc=$RC)" test "$RC" -eq 2 -a ! -s "$OUT"
		check "$name: no usable GPU: one line saying so" \
			bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -q "^amdgpu-criu: cdi: .*: no usable GPU: " "$1"' _ "$ERR"
		continue
	fi
	n_with=$((n_with + 1))
	cp "$OUT" "$TMP/spec.json"
	check "$name: exit 0 (rc=$RC)" test "$RC" -eq 0 -a ! -s "$ERR"
	check "$name: valid JSON" python3 -c 'import json,sys; json.load(sys.stdin)' <"$TMP/spec.json"
	"$TOOL" topology --sysfs "$dir" --json >"$TMP/topo.json"
	for c in header count render kfd names all pci; do
		check "$name: $c ($(wc -w <<<"$usable") usable GPU nodes)" \
			python3 "$TMP/verify.py" $c "$dir" "$TMP/spec.json" "$TMP/topo.json" "$usable"
	done
done
check "the captures hold at least 2 with usable GPUs ($n_with)" test "$n_with" -ge 2
check "MI308X has 32 GPU devices" test "$(usable_nodes "$MI308X" | wc -l)" -eq 32

# ---- --kind ---------------------------------------------------------------------------------
run cdi --sysfs "$VEGA10" --kind example.com/accel-1.x
check "--kind sets the kind" test "$(jq -r .kind "$OUT")" = example.com/accel-1.x
for kind in amd.com amd.com/ /gpu amd.com/gpu/x amd.com/gpu=0 -amd.com/gpu 1amd.com/gpu amd.com/gpu- \
	'amd com/gpu' "amd.com/$(printf 'g%.0s' $(seq 64))"; do
	usage_error "--kind '$kind' is refused" cdi --sysfs "$VEGA10" --kind "$kind"
done

# ---- --output ---------------------------------------------------------------------------------
mkdir "$TMP/out"
run cdi --sysfs "$MI308X"
cp "$OUT" "$TMP/stdout.json"
run cdi --sysfs "$MI308X" --output "$TMP/out/amd.json"
check "--output: exit 0, nothing on stdout or stderr (rc=$RC)" test "$RC" -eq 0 -a ! -s "$OUT" -a ! -s "$ERR"
check "--output writes the bytes stdout gets" cmp -s "$TMP/stdout.json" "$TMP/out/amd.json"
check "--output leaves no temporary file ($(ls -A "$TMP/out" | tr '\n' ' '))" \
	test "$(ls -A "$TMP/out")" = amd.json
check "--output's file is readable by all (0644)" test "$(stat -c %a "$TMP/out/amd.json")" = 644
echo stale >"$TMP/out/amd.json"
inode=$(stat -c %i "$TMP/out/amd.json")
(cd "$TMP/out" && "$TOOL" cdi --sysfs "$VEGA10" -o amd.json)
check "--output replaces a file by a rename (new inode), in the current directory too" \
	test "$(stat -c %i "$TMP/out/amd.json")" != "$inode" -a "$(jq -r '.devices | length' "$TMP/out/amd.json")" = 2
check "... and leaves no temporary file" test "$(ls -A "$TMP/out")" = amd.json
cp "$TMP/out/amd.json" "$TMP/before"
usage_error "--output with no usable GPU is refused" cdi --sysfs "$MI210" --output "$TMP/out/amd.json"
check "... and the file stays as it was" cmp -s "$TMP/before" "$TMP/out/amd.json"
check "... with no temporary file" test "$(ls -A "$TMP/out")" = amd.json
usage_error "--output in a missing directory is refused" cdi --sysfs "$VEGA10" --output "$TMP/none/amd.json"
check "... naming the file" grep -qF "cannot write $TMP/none/amd.json: " "$ERR"
usage_error "--output under a file is refused" cdi --sysfs "$VEGA10" --output "$TMP/before/amd.json"
mkdir "$TMP/out/dir.json"
usage_error "--output onto a directory is refused" cdi --sysfs "$VEGA10" --output "$TMP/out/dir.json"
check "... with no temporary file" test "$(ls -A "$TMP/out" | tr '\n' ' ')" = "amd.json dir.json "

# ---- refusals ------------------------------------------------------------------------------------
usage_error "a missing topology is refused" cdi --sysfs "$TMP/nonexistent"
mkdir -p "$TMP/cpu-only/nodes"
cp -r "$VEGA10/nodes/0" "$TMP/cpu-only/nodes/"
rm -rf "$TMP/cpu-only/nodes/0/io_links" "$TMP/cpu-only/nodes/0/p2p_links"
sed -i 's/^io_links_count .*/io_links_count 0/' "$TMP/cpu-only/nodes/0/properties"
usage_error "a topology with no GPU node is refused" cdi --sysfs "$TMP/cpu-only"
check "... saying it has none" grep -q 'no usable GPU: none of its 0 GPU nodes' "$ERR"
usage_error "an unknown option is refused" cdi --bogus
usage_error "--kind without a value is refused" cdi --kind
usage_error "an extra argument is refused" cdi --sysfs "$VEGA10" extra

run --help
check "--help lists cdi" grep -q '^  cdi ' "$OUT"
run help cdi
cp "$OUT" "$TMP/help"
run cdi --help
check "cdi --help exits 0 and prints what help cdi does" \
	bash -c '[ "$1" -eq 0 ] && cmp -s "$2" "$3" && grep -q -- "--output FILE" "$3"' _ "$RC" "$TMP/help" "$OUT"

# ---- a hostile name from sysfs ---------------------------------------------------------------------
cp -r "$MI308X" "$TMP/hostile"
hostile=$'ev"il\\ \x1b[31m</x> \t\xc3\xa9 \xe2\x80\xae'
printf '%s\n' "$hostile" >"$TMP/hostile/nodes/3/name"
printf 'bad \xff\xfe byte\n' >"$TMP/hostile/nodes/4/name"
run cdi --sysfs "$TMP/hostile"
check "a hostile name: exit 0 (rc=$RC)" test "$RC" -eq 0
check "a hostile name: valid JSON" python3 -c 'import json,sys; json.load(sys.stdin)' <"$OUT"
check "a hostile name: the spec is printable ASCII only" bash -c '! LC_ALL=C grep -q "[^ -~]" "$1"' _ "$OUT"
check "a hostile name: it reads back exactly" python3 -c '
import json, sys
spec = json.load(open(sys.argv[1]))
want = open(sys.argv[2], "rb").read().rstrip(b"\n").decode()
sys.exit(spec["devices"][1]["annotations"]["amdgpu-criu/name"] != want)' "$OUT" "$TMP/hostile/nodes/3/name"
check "a name that is not UTF-8 is shown escaped" \
	test "$(jq -r '.devices[2].annotations["amdgpu-criu/name"]' "$OUT")" = 'bad \xff\xfe byte'

# ---- a GPU hidden by the device cgroup (EACCES), as an unprivileged user ----------------------------
if nobody_runs; then
	hide_gpu "$MI308X" "$TMP/hidden" 3
	as_nobody cdi --sysfs "$TMP/hidden"
	check "a hidden GPU gets no device: 31 GPUs, device 1 is node 4 (renderD130)" \
		test "$(jq -c '[(.devices | length), .devices[1].annotations["amdgpu-criu/kfd-node"],
			.devices[1].containerEdits.deviceNodes[0].path]' "$OUT")" = '[32,"4","/dev/dri/renderD130"]'
else
	ok "hidden GPU test # SKIP needs root and setpriv to run as nobody"
fi

tap_done
