# `make bench`: throughput of the BO streaming (datapath/bo_stream.c) on this
# host, each path next to its limit measured in the same run the same way
# (see tests/bench/bo_bench.c), with the ratio and CPU seconds per GiB of
# each; then all rounds again beside BENCH_NEIGHBOUR threads spinning in
# another process (0: no such pass); the last line is JSON. Not a
# test (tests/host/test-bench.sh runs it small). Included by the top-level
# Makefile (`-include tests/bench/bench.mk`).
#
#   make bench [BENCH_GIB=2] [BENCH_GPUS=2] [BENCH_ROUNDS=10] [BENCH_NEIGHBOUR=1] [BENCH_IN_PLACE=1] [BENCH_DIRECT_READ=0|1] [AMDGPU_CRIU_DIRECT_IO=0|1] [BENCH_DIR=$(BUILD)/bench-images]
#   make bench-nongpu [BENCH_ROUNDS=10]   the plugin's cost for a CRIU run without GPUs
#
# BENCH_DIR is the image directory: put it on the filesystem to measure.

BENCH_GIB ?= 2
BENCH_GPUS ?= 2
BENCH_ROUNDS ?= 10
BENCH_NEIGHBOUR ?= 1
BENCH_DIR ?= $(BUILD)/bench-images

.PHONY: bench bench-nongpu
bench: $(BUILD)/bench/bo_bench
	@mkdir -p $(BENCH_DIR)
	BENCH_GIB=$(BENCH_GIB) BENCH_GPUS=$(BENCH_GPUS) BENCH_ROUNDS=$(BENCH_ROUNDS) \
		BENCH_NEIGHBOUR=$(BENCH_NEIGHBOUR) $(BUILD)/bench/bo_bench $(BENCH_DIR)

$(BUILD)/bench/bo_bench: $(BUILD)/n/tests/bench/bo_bench.o $(LIB_OBJ_N)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(PKG_LIBS) -lpthread

# `make bench-nongpu [BENCH_ROUNDS=20]`: what the plugin costs a CRIU run
# without GPUs, next to the whole run (tests/bench/nongpu_cost.sh).
bench-nongpu: products $(BUILD)/tests/bin
	BUILD=$(abspath $(BUILD)) CRIU=$(CRIU) tests/bench/nongpu_cost.sh $(BENCH_ROUNDS)
