#!/bin/bash
# Builds the binary Debian package of the plugin and the tool from what
# `make products` built: scripts/build-deb.sh BUILD_DIR OUT_DIR.
#   /usr/lib/criu/amdgpu_plugin.so   where criu (and so runc, crun, podman)
#                                     finds plugins without --libdir
#   /usr/bin/amdgpu-criu             the tool, with its manual page
# Depends comes from the binaries' own libraries (dpkg-shlibdeps), the
# version from the tool (tools/cli.h) and packaging/deb/changelog. Files are
# root-owned in the package without fakeroot (dpkg-deb --root-owner-group).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?build directory}
OUT=${2:?output directory}
PKG=packaging/deb

version=$("$BUILD/amdgpu-criu" --version | awk '{ print $2 }')-1
head -1 "$HERE/$PKG/changelog" | grep -q "($version)" || {
	echo "build-deb: $PKG/changelog does not start with version $version" >&2
	exit 1
}
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/amdgpu-criu
install -D -m 0644 "$BUILD/amdgpu_plugin.so" "$root/usr/lib/criu/amdgpu_plugin.so"
install -D -m 0755 "$BUILD/amdgpu-criu" "$root/usr/bin/amdgpu-criu"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/lib/criu/amdgpu_plugin.so"
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/amdgpu-criu"
install -d -m 0755 "$root/usr/share/man/man1" "$root/usr/share/doc/amdgpu-criu"
gzip -9n <"$HERE/tools/amdgpu-criu.1" >"$root/usr/share/man/man1/amdgpu-criu.1.gz"
gzip -9n <"$HERE/$PKG/changelog" >"$root/usr/share/doc/amdgpu-criu/changelog.Debian.gz"
install -m 0644 "$HERE/$PKG/copyright" "$root/usr/share/doc/amdgpu-criu/copyright"
install -D -m 0644 "$HERE/$PKG/lintian-overrides" "$root/usr/share/lintian/overrides/amdgpu-criu"
chmod 0644 "$root/usr/share/man/man1/amdgpu-criu.1.gz" "$root/usr/share/doc/amdgpu-criu/changelog.Debian.gz"

# dpkg-shlibdeps wants a debian/control of a source package around it
mkdir -p "$stage/src/debian"
printf 'Source: amdgpu-criu\n\nPackage: amdgpu-criu\nArchitecture: any\n' >"$stage/src/debian/control"
depends=$(cd "$stage/src" && dpkg-shlibdeps -O "$root/usr/bin/amdgpu-criu" \
	"$root/usr/lib/criu/amdgpu_plugin.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
	-e "s/@DEPENDS@/$depends/" "$HERE/$PKG/control.in" >"$root/DEBIAN/control"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
mkdir -p "$OUT"
deb=$OUT/amdgpu-criu_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
