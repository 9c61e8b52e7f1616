#!/bin/bash
# `make install` puts the plugin where CRIU looks by default and the tool in
# $(PREFIX)/bin, under DESTDIR, with the right modes; `make uninstall` removes them.
# run-suite-parallel: yes (installs into a DESTDIR under mktemp)
set -uo pipefail
# a make of its own: not a job of the make that runs the suite (make -jN check)
unset MAKEFLAGS MFLAGS MAKELEVEL
. "$(dirname "$0")/../lib/tap.sh"
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
make -s --no-print-directory BUILD="$BUILD" DESTDIR="$dest" PREFIX=/opt/acr install >"$dest.log" 2>&1
check "make install succeeds" [ $? -eq 0 ]
plugin=$dest/usr/lib/criu/amdgpu_plugin.so
tool=$dest/opt/acr/bin/amdgpu-criu
check "plugin installed in /usr/lib/criu" [ -f "$plugin" ]
check "plugin mode 0644" [ "$(stat -c %a "$plugin" 2>/dev/null)" = 644 ]
check "installed plugin is the built one" cmp -s "$plugin" "$BUILD/amdgpu_plugin.so"
check "tool installed in PREFIX/bin" [ -x "$tool" ]
check "tool mode 0755" [ "$(stat -c %a "$tool" 2>/dev/null)" = 755 ]
check "installed tool runs" "$tool" --version
check "nothing installed outside DESTDIR's two files" \
	[ "$(find "$dest" -type f | wc -l)" -eq 2 ]
make -s --no-print-directory BUILD="$BUILD" DESTDIR="$dest" PREFIX=/opt/acr uninstall >>"$dest.log" 2>&1
check "make uninstall removes the plugin" [ ! -e "$plugin" ]
check "make uninstall removes the tool" [ ! -e "$tool" ]
rm -f "$dest.log"
tap_done
