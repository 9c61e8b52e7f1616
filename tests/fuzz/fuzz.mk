# libFuzzer targets for every reader of untrusted input (tests/fuzz/README.md).
# Included by the top-level Makefile (`-include tests/fuzz/fuzz.mk`).
#
#   make fuzz [FUZZ_TIME=60] [FUZZ_TARGETS="fuzz_kfd_image ..."] [FUZZ_JOBS=1]
#                       each target FUZZ_TIME seconds on its corpus in
#                       $(FUZZ_DIR)/corpus/<target>; findings in
#                       $(FUZZ_DIR)/findings/<target>/
#   make fuzz-build     only build the targets and their seeds
#
# The targets are built with clang (-fsanitize=fuzzer,address,undefined) in
# their own directory from the library sources; the seeds come from the real
# topology captures and the unit tests' checkpoint builder (mkseeds.c).

FUZZ_CC      ?= clang
FUZZ_TIME    ?= 60
FUZZ_JOBS    ?= 1
FUZZ_DIR     := $(BUILD)/fuzz
# The same list as FUZZ_ALL_TARGETS in tests/fuzz/targets.sh (for the scripts).
FUZZ_ALL     := fuzz_kfd_image fuzz_priv_blob fuzz_topology_image fuzz_bo_stream fuzz_bo_seq \
		fuzz_topology_parse fuzz_tool
FUZZ_TARGETS ?= $(FUZZ_ALL)

FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE -fPIC $(WARN) -O1 -g -fno-omit-frame-pointer \
	$(FUZZ_SAN) -fsanitize=fuzzer-no-link -I. -Itests/fuzz -Itests/unit \
	-I$(BUILD)/gen $(PKG_CFLAGS)
FUZZ_HELPERS := tests/fuzz/fuzz_common.c tests/fuzz/fuzz_tree.c tests/fuzz/topo_equal.c
# The tool's main() is renamed so that fuzz_tool can run commands in-process.
FUZZ_TOOL_MAIN := tools/amdgpu-criu.c

fobj = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(1))
FUZZ_LIB_OBJ = $(call fobj,$(LIB_SRC) $(FUZZ_HELPERS)) $(FUZZ_DIR)/obj/gen/amdgpu_plugin.pb-c.o
FUZZ_TOOL_OBJ = $(call fobj,$(TOOLS_SRC))

$(FUZZ_DIR)/obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(if $(filter $(FUZZ_TOOL_MAIN),$<),-Dmain=amdgpu_criu_main \
		-Wno-missing-prototypes) -MMD -MP -c $< -o $@
$(FUZZ_DIR)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -w -c $< -o $@

$(FUZZ_DIR)/fuzz_tool: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_tool.o $(FUZZ_TOOL_OBJ) $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lpthread
$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lpthread

# The targets' own objects are kept: the main Makefile's ".SECONDARY:" (all
# targets; a .SECONDARY line with a list here would narrow it to that list).

# Seeds: regenerated when the builder or the formats change.
$(FUZZ_DIR)/mkseeds: $(call fobj,tests/fuzz/mkseeds.c tests/unit/synth_ckpt.c) $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -o $@ $^ $(PKG_LIBS) -lpthread
$(FUZZ_DIR)/seeds.stamp: $(FUZZ_DIR)/mkseeds
	rm -rf $(FUZZ_DIR)/seeds
	ASAN_OPTIONS=detect_leaks=1 $(FUZZ_DIR)/mkseeds $(KFD_FIXTURES) $(FUZZ_DIR)/seeds
	@touch $@

.PHONY: fuzz fuzz-build
fuzz-build: $(addprefix $(FUZZ_DIR)/,$(FUZZ_ALL)) $(FUZZ_DIR)/seeds.stamp
fuzz: fuzz-build
	FUZZ_DIR=$(FUZZ_DIR) FUZZ_TIME=$(FUZZ_TIME) FUZZ_JOBS=$(FUZZ_JOBS) \
		tests/fuzz/run-fuzz.sh $(FUZZ_TARGETS)

# `make fuzz-coverage`: line and branch coverage of the library sources by
# each target's corpus (build/fuzz/corpus/<target> and the seeds), measured
# with clang's source-based coverage (needs llvm-cov and llvm-profdata:
# Debian's llvm-14, not installed by install-deps). Report per target:
# $(FUZZ_DIR)/coverage/<target>.txt.
FUZZ_COV_FLAGS := -fprofile-instr-generate -fcoverage-mapping
FUZZ_COV_CFLAGS = $(subst $(FUZZ_SAN),,$(subst -O1,-O0,$(FUZZ_CFLAGS))) $(FUZZ_COV_FLAGS)
cobj = $(patsubst %.c,$(FUZZ_DIR)/cov-obj/%.o,$(1))
FUZZ_COV_LIB = $(call cobj,$(LIB_SRC) $(FUZZ_HELPERS)) $(FUZZ_DIR)/cov-obj/gen/amdgpu_plugin.pb-c.o

$(FUZZ_DIR)/cov-obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_CFLAGS) $(if $(filter $(FUZZ_TOOL_MAIN),$<),-Dmain=amdgpu_criu_main \
		-Wno-missing-prototypes) -c $< -o $@
$(FUZZ_DIR)/cov-obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_CFLAGS) -w -c $< -o $@
$(FUZZ_DIR)/cov/fuzz_tool: $(FUZZ_DIR)/cov-obj/tests/fuzz/fuzz_tool.o $(call cobj,$(TOOLS_SRC)) \
		$(FUZZ_COV_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_FLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lpthread
$(FUZZ_DIR)/cov/fuzz_%: $(FUZZ_DIR)/cov-obj/tests/fuzz/fuzz_%.o $(FUZZ_COV_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_FLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lpthread

.PHONY: fuzz-coverage
fuzz-coverage: $(addprefix $(FUZZ_DIR)/cov/,$(FUZZ_TARGETS)) $(FUZZ_DIR)/seeds.stamp
	FUZZ_DIR=$(FUZZ_DIR) tests/fuzz/coverage.sh $(FUZZ_TARGETS)
