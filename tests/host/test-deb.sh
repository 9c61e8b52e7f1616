#!/bin/bash
# `make deb`'s package (scripts/build-deb.sh): the plugin where criu finds
# plugins without --libdir (/usr/lib/criu), the tool in /usr/bin with its
# manual page, root-owned with Debian's modes, the libraries it links
# declared in Depends, the files it holds the ones built, and lintian
# (pedantic) with no error or warning.
# run-suite-parallel: yes (builds into a directory under mktemp)
set -uo pipefail
. "$(dirname "$0")/../lib/tap.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

deb=$("$ROOT/scripts/build-deb.sh" "$BUILD" "$out/deb" 2>"$out/build.log")
check "the package builds ($(basename "${deb:-none}"))" test -f "$deb"
[ -f "$deb" ] || { sed 's/^/# /' "$out/build.log"; tap_done; exit; }
field() { dpkg-deb -f "$deb" "$1"; }
check "Package amdgpu-criu, version of the tool" \
	test "$(field Package) $(field Version)" = "amdgpu-criu $("$BUILD/amdgpu-criu" --version | awk '{ print $2 }')-1"
diag "Depends: $(field Depends)"
for lib in libc6 libdrm-amdgpu1 libdrm2 libprotobuf-c1 libisal2 libjson-c5 liburing2; do
	check "Depends names $lib" eval 'field Depends | grep -qE "(^|, )$lib( |,|$)"'
done
dpkg-deb -c "$deb" >"$out/list"
has() { grep -qE "^$1 root/root +[0-9]+ [0-9-]+ [0-9:]+ \./$2\$" "$out/list"; }
check "the plugin in /usr/lib/criu, 0644 root" has -rw-r--r-- usr/lib/criu/amdgpu_plugin.so
check "the tool in /usr/bin, 0755 root" has -rwxr-xr-x usr/bin/amdgpu-criu
check "its manual page" has -rw-r--r-- usr/share/man/man1/amdgpu-criu.1.gz
check "copyright and changelog" eval 'has -rw-r--r-- usr/share/doc/amdgpu-criu/copyright && has -rw-r--r-- usr/share/doc/amdgpu-criu/changelog.Debian.gz'
check "nothing else but directories and lintian's overrides" \
	test "$(grep -vc '^d' "$out/list")" -eq 6
dpkg-deb -x "$deb" "$out/root"
check "the packaged tool runs" "$out/root/usr/bin/amdgpu-criu" --version
check "the packaged plugin is the built one, stripped" \
	eval 'test "$(nm -D --defined-only "$out/root/usr/lib/criu/amdgpu_plugin.so" | sort)" = "$(nm -D --defined-only "$BUILD/amdgpu_plugin.so" | sort)"'
check "the manual page renders" eval 'man -l "$out/root/usr/share/man/man1/amdgpu-criu.1.gz" 2>/dev/null | grep -q "amdgpu-criu - inspect AMD GPU topologies" || zcat "$out/root/usr/share/man/man1/amdgpu-criu.1.gz" | grep -q "^.SH NAME"'
if command -v lintian >/dev/null; then
	lintian --pedantic --allow-root "$deb" >"$out/lintian" 2>&1
	sed 's/^/# lintian: /' "$out/lintian"
	check "lintian --pedantic: no error or warning" eval '! grep -qE "^(E|W): " "$out/lintian"'
else
	ok "lintian # SKIP not installed (scripts/install-deps.sh build installs it)"
fi
tap_done
