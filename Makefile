# amdgpu CRIU plugin -- build, test, install.
#
#   make            build build/amdgpu_plugin.so and build/amdgpu-criu
#   make check      install what is missing, run every test (unit, ASan/UBSan, host CRIU, VM)
#   make vm-check / vm-amdgpu-check   only the kfdsim VM suite / the real-amdgpu VM suite
#   make install    plugin into $(CRIU_PLUGIN_DIR), tool into $(PREFIX)/bin (honours DESTDIR)
#   make deb        the binary Debian package in $(BUILD)/deb (scripts/build-deb.sh)
#
# Downloads (trixie's criu with its plugin header, VM kernels, private apt
# lists) are cached in $(CACHE), outside the repository: `make CACHE=DIR`, or
# AMDGPU_CRIU_CACHE=DIR in the environment. Every script reads it as
# AMDGPU_CRIU_CACHE, which make exports (`make cache-paths` shows them).

CACHE          ?= $(or $(AMDGPU_CRIU_CACHE),$(HOME)/.cache/amdgpu-criu)
export AMDGPU_CRIU_CACHE := $(CACHE)
# The real KFD topology captures the tests, the demo and the simulator use
# (tests/fixtures/kfd-topologies/README.md says where each came from).
KFD_FIXTURES   ?= $(abspath tests/fixtures/kfd-topologies)
PREFIX         ?= /usr/local
CRIU_PLUGIN_DIR ?= /usr/lib/criu
BUILD          ?= build
NPROC := $(shell nproc 2>/dev/null || echo 2)

CRIU_DIR  := $(CACHE)/criu
CRIU      := $(CRIU_DIR)/criu
# Debian testing's criu 4.2.x: the plugin (built with the 4.1 header) must load there too.
CRIU42_DIR := $(CACHE)/criu-4.2
CRIU42     := $(CRIU42_DIR)/criu
# criu-image-streamer built from its source with Debian testing's Rust crates
# (make image-streamer): the real streamer's cases of host/test-criu-stream.sh.
IMAGE_STREAMER_DIR := $(CACHE)/image-streamer
IMAGE_STREAMER     := $(IMAGE_STREAMER_DIR)/criu-image-streamer
CRIU_INC  := $(CRIU_DIR)/root/usr/include/criu
DEPS_STAMP := $(CACHE)/deps-build.stamp

CC       ?= gcc
# zlib: the tests' reference CRC-32 (the products use ISA-L's; --as-needed drops it)
PKGS     := libprotobuf-c libdrm libdrm_amdgpu json-c libisal liburing zlib
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE -fPIC $(WARN) $(CFLAGS) -I. -I$(BUILD)/gen $(PKG_CFLAGS)
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
# Debian's hardening (dpkg-buildflags with hardening=+all) for the normal build;
# the sanitized one checks more and keeps its own flags.
HARDEN_CFLAGS  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection
HARDEN_LDFLAGS := -Wl,-z,relro,-z,now
N_CFLAGS = $(ALL_CFLAGS) $(HARDEN_CFLAGS)

COMMON_SRC   := $(wildcard common/*.c)
TOPOLOGY_SRC := $(wildcard topology/*.c)
IMAGES_SRC   := $(wildcard images/*.c)
DATAPATH_SRC := $(wildcard datapath/*.c)
CHECKPOINT_SRC := $(wildcard checkpoint/*.c)
OPTIONS_SRC  := $(wildcard options/*.c)
PLUGIN_SRC   := $(wildcard plugin/*.c plugin/dump/*.c plugin/restore/*.c)
TOOLS_SRC    := $(wildcard tools/*.c)
# The plugin's modules, testable without CRIU (only amdgpu_plugin.c holds hooks).
PLUGIN_LIB_SRC := $(filter-out plugin/amdgpu_plugin.c,$(PLUGIN_SRC))
LIB_SRC      := $(COMMON_SRC) $(TOPOLOGY_SRC) $(IMAGES_SRC) $(DATAPATH_SRC) $(CHECKPOINT_SRC) \
                $(OPTIONS_SRC)
UNIT_TESTS   := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
# Shared helpers of the unit tests (any tests/unit/*.c not named test_*), linked into each.
UNIT_HELPERS := $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c))

PROTO_C := $(BUILD)/gen/amdgpu_plugin.pb-c.c
PROTO_H := $(BUILD)/gen/amdgpu_plugin.pb-c.h

obj = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))

.PHONY: all products deps criu42 rocm-testing image-streamer check demo install uninstall deb clean distclean format cache-paths
# Objects made through pattern rules are intermediates that make would delete
# after linking (and rebuild next time): keep every target.
.SECONDARY:
# The sub-make re-reads this file after the dependencies are installed, so
# that pkg-config flags are right on a fresh machine.
all: deps
	$(MAKE) --no-print-directory products
products: $(BUILD)/amdgpu_plugin.so $(BUILD)/amdgpu-criu

# ---- dependencies -----------------------------------------------------------
# A stamp per recipe version: a changed install script re-runs it.
$(DEPS_STAMP): scripts/install-deps.sh scripts/fetch-criu.sh scripts/fetch-criu-testing.sh scripts/apt-private.sh
	scripts/install-deps.sh build
	scripts/fetch-criu.sh $(CRIU_DIR)
	@mkdir -p $(dir $@) && touch $@
deps: $(DEPS_STAMP) criu42
# Debian testing's criu 4.2.x for the "also works in 4.2" tests (host and VM):
# fetched again on every make until it is there, as a failed fetch (a
# network hiccup) must not silence those tests for good; they SKIP, saying
# so, while it is missing.
criu42: $(DEPS_STAMP)
	@test -x $(CRIU42) || scripts/fetch-criu-testing.sh $(CRIU42_DIR) || \
		echo "make deps: WARNING: no criu 4.2 from Debian testing; the 4.2 tests are skipped" >&2

# Debian testing's ROCm (rocminfo 7.x, ROCr 6.4, rocm-smi 6.4), its HIP 6.4
# and trixie's python3 (rocm-smi's) for the VM boot "rocm": each fetched
# again until it is there (a tree without rocm-smi too); the tests that need
# one SKIP, naming it, while it is missing.
rocm-testing: $(DEPS_STAMP)
	@test -f $(CACHE)/rocm-testing/root/usr/libexec/rocm_smi/rocm_smi.py || \
		scripts/fetch-rocm-testing.sh $(CACHE)/rocm-testing || \
		echo "make vm-deps: WARNING: no ROCm from Debian testing; test-rocm-testing, test-rocm-smi and the HIP tests are skipped" >&2
	@test -f $(CACHE)/hip-testing/.complete || \
		scripts/fetch-hip-testing.sh $(CACHE)/hip-testing $(CACHE)/rocm-testing || \
		echo "make vm-deps: WARNING: no HIP from Debian testing (scripts/fetch-hip-testing.sh); test-rocm-hip* are skipped" >&2
	@test -x $(CACHE)/python/root/usr/bin/python3 || \
		scripts/fetch-python.sh $(CACHE)/python $(CRIU_DIR)/root || \
		echo "make vm-deps: WARNING: no python3 from trixie (scripts/fetch-python.sh); test-rocm-smi is skipped" >&2

# Not in deps: it needs cargo, rustc and protoc, and the streamer's source
# (GitHub, or IMAGE_STREAMER_GIT: a local clone). Once built, make check's
# host tests use it (IMAGE_STREAMER).
image-streamer: $(DEPS_STAMP)
	scripts/build-image-streamer.sh $(IMAGE_STREAMER_DIR)

# Where each consumer of the cache puts its downloads (tests/host/test-cache-dir.sh).
cache-paths:
	@echo "make $(CACHE)"
	@echo "scripts $$AMDGPU_CRIU_CACHE"
	@echo "vm $$(bash -c '. tests/vm/lib.sh && echo "$$VM_CACHE"')"

$(CRIU_INC)/criu-plugin.h:
	@echo "missing CRIU plugin header: run 'make deps' (fetches trixie's criu into $(CRIU_DIR))" >&2; exit 1

# ---- code generation ----------------------------------------------------------
$(PROTO_C) $(PROTO_H) &: amdgpu_plugin.proto $(BUILD)/gen/drm/drm.h
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen amdgpu_plugin.proto
# linux/kfd_ioctl.h includes <drm/drm.h>, which Debian ships as libdrm's drm.h
# (linux-libc-dev has no drm/ directory): a one-line forwarder.
$(BUILD)/gen/drm/drm.h:
	@mkdir -p $(dir $@)
	echo '#include <drm.h> /* libdrm-dev: -I/usr/include/libdrm */' > $@

# ---- objects: normal (n) and sanitized (san) ----------------------------------
$(BUILD)/n/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(N_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/san/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -MMD -MP -c $< -o $@
$(BUILD)/n/plugin/%.o: plugin/%.c $(PROTO_H) $(CRIU_INC)/criu-plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(N_CFLAGS) -isystem $(CRIU_INC) -MMD -MP -c $< -o $@
$(BUILD)/n/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(N_CFLAGS) -w -c $< -o $@
$(BUILD)/san/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -w -c $< -o $@

LIB_OBJ_N   = $(call obj,n,$(LIB_SRC)) $(BUILD)/n/gen/amdgpu_plugin.pb-c.o
LIB_OBJ_SAN = $(call obj,san,$(LIB_SRC)) $(BUILD)/san/gen/amdgpu_plugin.pb-c.o

# ---- products -----------------------------------------------------------------
# The GPU libraries (common/gpu_libs.h) are dlopen()ed at first use, so the
# plugin does not link them (--as-needed drops them); the tool links them
# all the same, so that the package's Depends (dpkg-shlibdeps) names them.
GPU_LIBS := -ldrm -ldrm_amdgpu -lisal
$(BUILD)/amdgpu_plugin.so: $(call obj,n,$(PLUGIN_SRC)) $(LIB_OBJ_N) plugin/exports.map
	$(CC) -shared $(HARDEN_LDFLAGS) -Wl,--version-script=plugin/exports.map -o $@ $(filter %.o,$^) -Wl,--as-needed $(PKG_LIBS) -lpthread
$(BUILD)/amdgpu-criu: $(call obj,n,$(TOOLS_SRC)) $(LIB_OBJ_N)
	$(CC) $(HARDEN_LDFLAGS) -o $@ $^ -Wl,--as-needed $(PKG_LIBS) -Wl,--no-as-needed $(GPU_LIBS) -Wl,--as-needed -lpthread

# ---- tests --------------------------------------------------------------------
$(BUILD)/tests/%: $(BUILD)/n/tests/unit/%.o $(call obj,n,$(UNIT_HELPERS) $(PLUGIN_LIB_SRC)) $(LIB_OBJ_N)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(PKG_LIBS) -lcmocka -lpthread
$(BUILD)/tests-san/%: $(BUILD)/san/tests/unit/%.o $(call obj,san,$(UNIT_HELPERS) $(PLUGIN_LIB_SRC)) $(LIB_OBJ_SAN)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lcmocka -lpthread

UNIT_BINS := $(addprefix $(BUILD)/tests/,$(UNIT_TESTS)) $(addprefix $(BUILD)/tests-san/,$(UNIT_TESTS))
HOST_TESTS := $(sort $(wildcard tests/host/test-*.sh))
# The tests' scratch files (TMPDIR): a tmpfs with 1 GiB free if there is one.
# Copying a topology capture (2765 files) took 2 s of system time on this
# project's CI disk and 0.2 s in /dev/shm: test_match_fixtures 63 s -> 5.5 s.
TEST_TMPDIR ?= $(shell [ -w /dev/shm ] && [ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $$4 }')" -ge 1048576 ] 2>/dev/null && echo /dev/shm || echo /tmp)
TEST_ENV = TMPDIR=$(TEST_TMPDIR) KFD_FIXTURES=$(KFD_FIXTURES) BUILD=$(abspath $(BUILD)) CRIU=$(CRIU) \
	CRIU42=$$(test -x $(CRIU42) && echo $(CRIU42)) \
	IMAGE_STREAMER=$$(test -x $(IMAGE_STREAMER) && echo $(IMAGE_STREAMER)) \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Not for -j: deps and vm-deps may both call apt. The build inside is -j, one
# job per core. Longest first: the VM boots, then the unit tests (in lanes,
# next to the last boots), then the host tests (see tests/run-suite.sh).
check: deps vm-deps
	$(MAKE) --no-print-directory -j$(NPROC) products $(UNIT_BINS) $(BUILD)/tests/bin $(BUILD)/bench/bo_bench fuzz-build
	$(TEST_ENV) tests/run-suite.sh $(VM_TESTS) --parallel $(UNIT_BINS) -- $(HOST_TESTS)

$(BUILD)/tests/bin: $(wildcard tests/workloads/*.c tests/workloads/*.h)
	@mkdir -p $@
	for f in $(filter %.c,$^); do $(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -o $@/$$(basename $$f .c) $$f || exit 1; done
	@touch $@

# The main job on the embedded default machine, in the VM (see scripts/demo.sh).
demo: deps vm-deps
	$(MAKE) --no-print-directory products $(BUILD)/tests/bin
	BUILD=$(BUILD) CRIU=$(CRIU) KFD_FIXTURES=$(KFD_FIXTURES) scripts/demo.sh

# ---- install ------------------------------------------------------------------
install: products
	install -D -m 0644 $(BUILD)/amdgpu_plugin.so $(DESTDIR)$(CRIU_PLUGIN_DIR)/amdgpu_plugin.so
	install -D -m 0755 $(BUILD)/amdgpu-criu $(DESTDIR)$(PREFIX)/bin/amdgpu-criu
uninstall:
	rm -f $(DESTDIR)$(CRIU_PLUGIN_DIR)/amdgpu_plugin.so $(DESTDIR)$(PREFIX)/bin/amdgpu-criu

# The binary Debian package (scripts/build-deb.sh): $(BUILD)/deb/amdgpu-criu_<version>_<arch>.deb
deb: deps products
	scripts/build-deb.sh $(BUILD) $(BUILD)/deb

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^tests/kfdsim/')

clean:
	rm -rf $(BUILD)
distclean: clean
	rm -rf $(CACHE)

# files only: the VM overlays hold directories named *.d (containerd's certs.d)
-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)

# VM test harness and simulator targets (tests/vm/vm.mk), when present.
-include tests/vm/vm.mk
# `make bench`: BO streaming throughput next to this host's limits.
-include tests/bench/bench.mk
# `make fuzz`: libFuzzer targets for the readers of untrusted input.
-include tests/fuzz/fuzz.mk
