#!/bin/bash
# The source layout keeps its shape: every include of a project header is
# qualified by its folder; includes point down the layers, never up or
# sideways between sibling folders; the modules' include graph has no
# circle; README.md's Layout block is what scripts/layout.sh draws from the
# tree. Layers, lowest first (a folder may include its own and lower ones):
#   0 common   1 datapath, topology   2 images   3 checkpoint, options   4 plugin, tools
#   5 plugin/dump, plugin/restore     6 plugin/amdgpu_plugin.c (the hooks)
# A module is a .c and the .h of the same name (X_int.h: X's internal header).
# run-suite-parallel: yes (reads the tree only)
set -uo pipefail
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

rank() {
	case $1 in
	plugin/amdgpu_plugin) echo 6 ;;
	plugin/dump/* | plugin/restore/*) echo 5 ;;
	plugin/* | tools/*) echo 4 ;;
	checkpoint/* | options/*) echo 3 ;;
	images/*) echo 2 ;;
	datapath/* | topology/*) echo 1 ;;
	common/*) echo 0 ;;
	*) echo 9 ;;
	esac
}
module() { local m=${1%.*}; echo "${m%_int}"; }

find common topology datapath images checkpoint options plugin tools -name '*.[ch]' | sort >"$T/files"
: >"$T/unqualified"
: >"$T/edges"
while read -r f; do
	from=$(module "$f")
	sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f" | while read -r h; do
		case $h in
		amdgpu_plugin.pb-c.h | criu-plugin.h) continue ;;
		*/*) ;;
		*) echo "$f: \"$h\"" >>"$T/unqualified" ;;
		esac
		[ -f "$h" ] || continue
		to=$(module "$h")
		[ "$to" = "$from" ] || echo "$from $to $f" >>"$T/edges"
	done
done <"$T/files"

check "every include of a project header names its folder ($(wc -l <"$T/unqualified") do not)" \
	test ! -s "$T/unqualified"
sed 's/^/# /' "$T/unqualified" | head -5

: >"$T/up"
while read -r from to f; do
	rf=$(rank "$from") rt=$(rank "$to")
	[ "$(dirname "$from")" = "$(dirname "$to")" ] && continue
	[ "$rt" -lt "$rf" ] || echo "$f includes $to.h (layer $rt, not below $rf)" >>"$T/up"
done <"$T/edges"
check "includes point down the layers only ($(wc -l <"$T/up") do not)" test ! -s "$T/up"
sed 's/^/# /' "$T/up" | head -5

cut -d' ' -f1,2 "$T/edges" | sort -u >"$T/graph"
tsort "$T/graph" >/dev/null 2>"$T/loops"
check "the modules' include graph has no circle" test ! -s "$T/loops"
grep -v 'input contains a loop' "$T/loops" | sed 's/^tsort: /# in a circle: /' | head -8

check "the graph is not empty (the test reads includes at all)" test "$(wc -l <"$T/graph")" -gt 100

sed -n '/<!-- layout: begin -->/,/<!-- layout: end -->/p' README.md | sed '1,2d;$d' | sed '$d' >"$T/readme"
scripts/layout.sh >"$T/tree" 2>&1
check "README.md's Layout block is scripts/layout.sh's output" diff -u "$T/tree" "$T/readme"
tap_done
