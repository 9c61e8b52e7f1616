#!/bin/bash
# The source layout, drawn from the tree: each folder of the product with
# the first line of its LAYOUT note (FOLDER/.layout, one line: what the
# folder holds). README.md's "Layout" block is this output
# (tests/host/test-layout.sh checks it).
#   scripts/layout.sh            print it
set -euo pipefail
cd "$(dirname "$0")/.."
for d in common topology datapath images checkpoint options plugin plugin/dump plugin/restore tools; do
	[ -f "$d/.layout" ] || { echo "layout: $d/.layout is missing" >&2; exit 1; }
	n=$(find "$d" -maxdepth 1 -name '*.[ch]' | wc -l)
	printf '%-16s %3d files  %s\n' "$d/" "$n" "$(head -1 "$d/.layout")"
done
