# `make bench`: throughput of the BO streaming (images/bo_stream.c) on this
# host next to memcpy, CRC and file baselines measured in the same run. Not a
# test. Included by the top-level Makefile (`-include tests/bench/bench.mk`).
#
#   make bench [BENCH_GIB=2] [BENCH_DIR=$(BUILD)/bench-images]
#
# BENCH_DIR is the image directory: put it on the filesystem to measure.

BENCH_GIB ?= 2
BENCH_DIR ?= $(BUILD)/bench-images

.PHONY: bench
bench: $(BUILD)/bench/bo_bench
	@mkdir -p $(BENCH_DIR)
	BENCH_GIB=$(BENCH_GIB) $(BUILD)/bench/bo_bench $(BENCH_DIR)

$(BUILD)/bench/bo_bench: $(BUILD)/n/tests/bench/bo_bench.o $(LIB_OBJ_N)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(PKG_LIBS) -lpthread
