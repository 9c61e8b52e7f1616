#!/bin/bash
# Builds criu-image-streamer (github.com/checkpoint-restore/criu-image-streamer,
# Rust) from its source against Debian's packaged Rust crates only: the
# librust-*-dev packages of Debian testing that its Cargo.toml needs, with
# their Depends, are fetched privately (apt-private.sh) and unpacked, and
# cargo builds offline with their /usr/share/cargo/registry as the only
# source (crates.io replaced). Nothing is installed.
#   DEST/criu-image-streamer   the binary
#   DEST/missing               the crate versions Debian lacks (one a line)
#
# Debian testing has every crate it needs but nix 0.31 (testing: 0.30.1):
# the build takes nix 0.30, which the streamer's source compiles with as is.
# Needs cargo and rustc on PATH (new enough for testing's crates: 1.85 built
# them) and protoc (protobuf-compiler) for its build script.
#
# usage: build-image-streamer.sh DEST [COMMIT]
#   IMAGE_STREAMER_GIT: where to fetch the source from (default: GitHub; a
#   local clone's path works offline)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "$1" && cd "$1" && pwd)
COMMIT=${2:-6117660b067d1a8dc89aed851f2fcfa4fcad8838}
REPO=${IMAGE_STREAMER_GIT:-https://github.com/checkpoint-restore/criu-image-streamer}
SUITE=testing
if [ -x "$DEST/criu-image-streamer" ] && "$DEST/criu-image-streamer" --version >/dev/null 2>&1; then
	exit 0
fi
for tool in cargo rustc protoc git; do
	command -v "$tool" >/dev/null || {
		echo "build-image-streamer: no $tool on PATH (protoc: apt install protobuf-compiler)" >&2
		exit 1
	}
done
rm -rf "$DEST/debs" "$DEST/root" "$DEST/src"
mkdir -p "$DEST/debs" "$DEST/root" "$DEST/src"
# shellcheck source=scripts/apt-private.sh
. "$HERE/apt-private.sh"
apt_private "$DEST/apt" "$SUITE"
"${APTP[@]}" update >/dev/null

git -C "$DEST/src" init -q
git -C "$DEST/src" fetch -q --depth 1 "$REPO" "$COMMIT"
git -C "$DEST/src" checkout -q FETCH_HEAD

# The crates of [dependencies], [build-dependencies] and [dev-dependencies]
# (cargo resolves all three), as Debian names their packages.
crates=$(awk '/^\[/ { dep = ($0 ~ /^\[(build-|dev-)?dependencies\]$/) } dep && /^[a-z0-9_-]+ *=/ { print $1 }' \
	"$DEST/src/Cargo.toml" | tr '_' '-' | sort -u)
: >"$DEST/missing"
for c in $crates; do
	want=$(sed -n "s/^${c//-/[-_]} *= *\(\"\|{ *version *= *\"\)\([0-9.]*\)\".*/\2/p" "$DEST/src/Cargo.toml")
	have=$("${APTC[@]}" show "librust-$c-dev" 2>/dev/null | sed -n 's/^Version: \([0-9.]*\).*/\1/p' | head -1)
	echo "crate $c $want: Debian $SUITE ${have:-none}"
	[ -n "$have" ] || echo "$c $want (none in Debian $SUITE)" >>"$DEST/missing"
	# cargo's caret rule: 0.x.y needs the same 0.x; x.y.z (x > 0) the same x and at least y
	case "$want" in
	0.*) [ "${have%.*}" = "$want" ] || [ "${have%.*}" = "${want%.*}" ] ||
		echo "$c $want (Debian $SUITE: ${have:-none})" >>"$DEST/missing" ;;
	esac
done
if grep -q '^nix 0.31 ' "$DEST/missing"; then
	sed -i 's/^nix = { version = "0.31"/nix = { version = "0.30"/' "$DEST/src/Cargo.toml"
	echo "build-image-streamer: nix 0.31 is not in Debian $SUITE: building with its nix 0.30"
fi
# shellcheck disable=SC2046 # one package name per crate
closure=$("${APTC[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances $(for c in $crates; do echo "librust-$c-dev"; done) 2>/dev/null |
	sed -n 's/^\(librust-[a-z0-9.+-]*-dev\)$/\1/p' | sort -u)
# shellcheck disable=SC2086
(cd "$DEST/debs" && "${APTP[@]}" download $closure >/dev/null)
for d in "$DEST"/debs/*.deb; do dpkg-deb -x "$d" "$DEST/root"; done

rm -f "$DEST/src/Cargo.lock"
mkdir -p "$DEST/src/.cargo"
cat >"$DEST/src/.cargo/config.toml" <<EOC
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "$DEST/root/usr/share/cargo/registry"
EOC
(cd "$DEST/src" && CARGO_HOME="$DEST/cargo-home" nice -n 10 cargo build --release --offline -q)
cp "$DEST/src/target/release/criu-image-streamer" "$DEST/criu-image-streamer.tmp"
mv "$DEST/criu-image-streamer.tmp" "$DEST/criu-image-streamer"
rm -rf "$DEST/src/target"
echo "build-image-streamer: $DEST/criu-image-streamer ($(find "$DEST/root/usr/share/cargo/registry" -mindepth 1 -maxdepth 1 | wc -l) Debian crates)"
