# shellcheck shell=bash
# Host tests' own programs, linked with the build's objects. The caller sets
# ROOT (the repository) and BUILD (the absolute build directory).

# build_objects FOLDER...: the objects of the sources those folders hold now
# (not stale ones BUILD may keep), without the CRIU hooks (plugin/amdgpu_plugin.c)
build_objects() {
	local d f
	for d in "$@"; do
		for f in "$ROOT/$d"/*.c; do
			f=${f#"$ROOT"/}
			[ "$f" = plugin/amdgpu_plugin.c ] || echo "$BUILD/n/${f%.c}.o"
		done
	done
}

# build_program OUT ERRFILE SOURCES_OR_OBJECTS...: cc with the library's objects
# (common, topology, images, datapath, checkpoint, options) and its packages; the
# compiler's messages go to ERRFILE
build_program() {
	local out=$1 err=$2 pkgs="libprotobuf-c libdrm libdrm_amdgpu json-c libisal liburing zlib"
	shift 2
	# shellcheck disable=SC2046,SC2086 # package flags and object lists are words
	cc -std=gnu11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -I"$ROOT" -I"$ROOT/tests/unit" \
		-I"$BUILD/gen" $(pkg-config --cflags $pkgs) -o "$out" "$@" \
		$(build_objects common topology images datapath checkpoint options) \
		"$BUILD/n/gen/amdgpu_plugin.pb-c.o" $(pkg-config --libs $pkgs) -lpthread 2>"$err"
}
