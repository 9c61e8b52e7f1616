#!/bin/bash
# Fetches Debian trixie's criu and libcriu-dev (plus the trixie libraries criu
# links against) and unpacks them under DEST, without installing anything:
#   DEST/root/usr/sbin/criu                 the binary
#   DEST/root/usr/include/criu/criu-plugin.h the header our plugin must be built
#                                           against (CRIU rejects plugins built
#                                           with another version's header)
#   DEST/criu                               wrapper running it via trixie's ld.so
# bookworm's criu 3.17 does not run on current kernels and ships no plugin
# header, hence trixie's. Versions are whatever trixie has today (4.1.1 when
# written); the binary and header always come from the same fetch.
#
# usage: fetch-criu.sh DEST
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
if [ -x "$DEST/criu" ] && [ -f "$DEST/root/usr/include/criu/criu-plugin.h" ] &&
	"$DEST/criu" --version >/dev/null 2>&1; then
	exit 0
fi
rm -rf "$DEST/debs" "$DEST/root"
mkdir -p "$DEST/debs" "$DEST/root"
. "$HERE/apt-private.sh"
apt_private "$DEST/apt" "trixie"
"${APTP[@]}" update >/dev/null
# criu's shared-library closure in trixie (see ldd of the binary)
PKGS="criu libcriu-dev libc6 libbsd0 libmd0 libgnutls30t64 libp11-kit0 libffi8 libidn2-0
	libunistring5 libtasn1-6 libhogweed6t64 libnettle8t64 libgmp10 libnftables1 libmnl0
	libnftnl11 libxtables12 libjansson4 libprotobuf-c1 libnl-3-200 libnet1 libuuid1"
# shellcheck disable=SC2046
(cd "$DEST/debs" && "${APTP[@]}" download $(for p in $PKGS; do echo "$p/trixie"; done) >/dev/null)
for d in "$DEST"/debs/*.deb; do dpkg -x "$d" "$DEST/root"; done
cat >"$DEST/criu" <<EOW
#!/bin/sh
R="$DEST/root"
exec "\$R/usr/lib64/ld-linux-x86-64.so.2" --library-path "\$R/usr/lib/x86_64-linux-gnu" "\$R/usr/sbin/criu" "\$@"
EOW
chmod +x "$DEST/criu"
echo "fetch-criu: $("$DEST/criu" --version | head -1) in $DEST"
