#!/bin/bash
# Fetches Debian testing's criu (4.2.x when written) and libcriu-dev, plus the
# libraries criu needs from the same suite, and unpacks them under DEST without
# installing anything. Same layout as fetch-criu.sh:
#   DEST/root/usr/sbin/criu                  the binary
#   DEST/root/usr/include/criu/criu-plugin.h its plugin header (for reference
#                                            only: our plugin is built against
#                                            trixie's, see fetch-criu.sh)
#   DEST/criu                                wrapper running it via testing's
#                                            ld.so (it needs a newer glibc than
#                                            the host's)
# Used to check that a plugin built against the 4.1 header still loads in the
# next CRIU release. Unlike trixie, testing moves: library package names change
# (libnet1 -> libnet9, libcompel1 appeared in 4.2), so the closure is not
# hard-coded but resolved from the Depends of criu (library packages only), and
# then verified: every DT_NEEDED of every unpacked ELF must resolve inside DEST.
#
# usage: fetch-criu-testing.sh DEST [SUITE]      SUITE defaults to "testing"
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
SUITE=${2:-testing}
if [ -x "$DEST/criu" ] && [ -f "$DEST/root/usr/include/criu/criu-plugin.h" ] &&
	"$DEST/criu" --version >/dev/null 2>&1; then
	exit 0
fi
rm -rf "$DEST/debs" "$DEST/root"
mkdir -p "$DEST/debs" "$DEST/root"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
apt_private "$DEST/apt" "$SUITE"
"${APTP[@]}" update >/dev/null
# criu plus its library closure in SUITE: Depends/Pre-Depends, recursively,
# keeping only library packages (lib*, not -dev); virtual names (<...>) skipped.
closure=$("${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "criu/$SUITE" 2>/dev/null |
	sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | grep -E '^(criu$|lib)' | grep -v -- '-dev$' | sort -u)
PKGS="$closure libcriu-dev"
# shellcheck disable=SC2046
(cd "$DEST/debs" && "${APTP[@]}" download $(for p in $PKGS; do echo "$p/$SUITE"; done) >/dev/null)
for d in "$DEST"/debs/*.deb; do dpkg -x "$d" "$DEST/root"; done
# ldd-like verification without running anything: each NEEDED soname of the
# binary and of every unpacked shared library must exist in the private tree.
LIBDIR="$DEST/root/usr/lib/x86_64-linux-gnu"
missing=""
for elf in "$DEST/root/usr/sbin/criu" "$LIBDIR"/*.so*; do
	[ -f "$elf" ] || continue
	for so in $(readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$LIBDIR/$so" ] || [ -e "$DEST/root/usr/lib64/$so" ] ||
			missing="$missing $so(${elf##*/})"
	done
done
if [ -n "$missing" ]; then
	echo "fetch-criu-testing: unresolved libraries:$missing" >&2
	exit 1
fi
cat >"$DEST/criu" <<EOW
#!/bin/sh
R="$DEST/root"
exec "\$R/usr/lib64/ld-linux-x86-64.so.2" --library-path "\$R/usr/lib/x86_64-linux-gnu" "\$R/usr/sbin/criu" "\$@"
EOW
chmod +x "$DEST/criu"
echo "fetch-criu-testing: $("$DEST/criu" --version | head -1) ($SUITE) in $DEST"
