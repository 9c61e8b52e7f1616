# `make bench`: throughput of the BO streaming (images/bo_stream.c) on this
# host, each path next to its limit measured in the same run the same way
# (see tests/bench/bo_bench.c), with the ratio; the last line is JSON. Not a
# test (tests/host/test-bench.sh runs it small). Included by the top-level
# Makefile (`-include tests/bench/bench.mk`).
#
#   make bench [BENCH_GIB=2] [BENCH_GPUS=2] [BENCH_ROUNDS=10] [BENCH_IN_PLACE=1] [BENCH_DIR=$(BUILD)/bench-images]
#
# BENCH_DIR is the image directory: put it on the filesystem to measure.

BENCH_GIB ?= 2
BENCH_GPUS ?= 2
BENCH_ROUNDS ?= 10
BENCH_DIR ?= $(BUILD)/bench-images

.PHONY: bench
bench: $(BUILD)/bench/bo_bench
	@mkdir -p $(BENCH_DIR)
	BENCH_GIB=$(BENCH_GIB) BENCH_GPUS=$(BENCH_GPUS) BENCH_ROUNDS=$(BENCH_ROUNDS) $(BUILD)/bench/bo_bench $(BENCH_DIR)

$(BUILD)/bench/bo_bench: $(BUILD)/n/tests/bench/bo_bench.o $(LIB_OBJ_N)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(PKG_LIBS) -lpthread
