# VM test harness (tests/vm/), included by the main Makefile. Each host
# program below is one qemu TCG boot (or more, after a guest that died) of
# the current bookworm-backports generic kernel; the downloads are cached in
# $(CACHE)/vm.
#
#   make vm-check           the kfdsim suite (simulator module, CRIU in the VM),
#                           one boot per test-kfdsim-*.sh below ("# vm-boot:" lines)
#   make vm-amdgpu-check    the real-amdgpu smoke suite (amdgpu.ko, no GPU)
#   make vm-selftest        the harness's own test: breakage is reported (6 boots)
#   make vm-podman          only boot "podman" of vm-check: trixie's podman checkpoints
#                           a GPU container (--export) and restores it (--import)
#   make vm-cri             only boot "cri" of vm-check: containerd 2.1's CRI
#                           checkpoints a GPU pod's container and restores it from a
#                           checkpoint image into pods given other GPUs
#   make zdtm               only boot "zdtm" of vm-check: CRIU's own test/zdtm.py
#                           runs the GPU tests of tests/zdtm (h, ns, --iters, --pre,
#                           --snaps, --stream, --lazy-pages; docs/zdtm.md)
#   make vm-rocm            only boot "rocm" of vm-check: bookworm's ROCm 5.2.3 under
#                           CRIU, and Debian testing's rocminfo 7.x / ROCr 6.4, HIP 6.4
#                           and rocm-smi 6.4 (VM_HIP=0 / VM_SMI=0 leave the last two out)
#   make vm-bench           benchmarks in the VM (boot "bench"): BO contents per
#                           copy engine under kfdsim's cost model, next to limits
#   make vm-deps            qemu 10, busybox-static, cpio, pahole, ... (system)
#
# Options (environment or make variables): KFDSIM_PARAMS="a=1 b=2" (module
# parameters of amdgpu_kfdsim.ko at boot), VM_ONLY="test-x test-y" (run only these
# guest tests, in one boot), VM_TIMEOUT_SCALE=k (multiplies every guest
# test's limit, for a slower machine), VM_STALL_TIMEOUT=seconds (a VM that
# shows no progress that long is hung; 240), VM_TIMEOUT=seconds (backstop for
# one VM run; default the sum of its tests' limits), VM_TEST_TIMEOUT=seconds
# (a guest test without its own "# vm-timeout:"; 120), VM_KFDSIM_SRC=dir
# (another module source), RUN_SUITE_JOBS=n (boots run at once; 2, see
# tests/run-suite.sh), VM_CPU=model (qemu -cpu; max,-erms,-fsrm: see
# tests/vm/run-vm.sh). Logs: $(BUILD)/vm-logs/<suite>[-<boot>]/ (see
# tests/vm/README.md).
#
# VM_TESTS: host-side programs for tests/run-suite.sh, one per boot
# (run-suite starts them in this order, two at a time; cri, about 20
# minutes, third, once big or cr frees a slot).
VM_KFDSIM_TESTS := tests/vm/test-kfdsim-big.sh tests/vm/test-kfdsim-cr.sh tests/vm/test-kfdsim-cri.sh tests/vm/test-kfdsim-ct.sh tests/vm/test-kfdsim-faults.sh tests/vm/test-kfdsim-rocm.sh tests/vm/test-kfdsim-main.sh tests/vm/test-kfdsim-zdtm.sh tests/vm/test-kfdsim-podman.sh
VM_TESTS := $(VM_KFDSIM_TESTS) tests/vm/selftest.sh tests/vm/test-amdgpu.sh
VM_DEPS_STAMP := $(CACHE)/deps-vm.stamp
VM_SUITE_vm-check := $(VM_KFDSIM_TESTS)
VM_SUITE_vm-amdgpu-check := tests/vm/test-amdgpu.sh
VM_SUITE_vm-selftest := tests/vm/selftest.sh
# boot "podman" alone (podman checkpoint --export / restore --import of a GPU
# container under runc and crun; also in vm-check)
VM_SUITE_vm-podman := tests/vm/test-kfdsim-podman.sh
VM_SUITE_vm-rocm := tests/vm/test-kfdsim-rocm.sh
# boot "cri" alone (containerd 2.1's CRI CheckpointContainer and restore from
# a checkpoint image of a GPU pod's container; also in vm-check)
VM_SUITE_vm-cri := tests/vm/test-kfdsim-cri.sh
# boot "zdtm" alone: CRIU's test/zdtm.py runs tests/zdtm's GPU tests
VM_SUITE_zdtm := tests/vm/test-kfdsim-zdtm.sh
export KFDSIM_PARAMS VM_ONLY VM_TIMEOUT VM_TEST_TIMEOUT VM_KFDSIM_SRC VM_TIMEOUT_SCALE VM_STALL_TIMEOUT VM_CPU

.PHONY: vm-deps vm-cri-deps zdtm-deps vm-check vm-amdgpu-check vm-selftest vm-bench vm-podman vm-rocm vm-cri zdtm

# A stamp per recipe version, as for the build dependencies.
$(VM_DEPS_STAMP): scripts/install-deps.sh scripts/apt-private.sh
	scripts/install-deps.sh vm
	@mkdir -p $(dir $@) && touch $@
# trixie's runc, crun, GNU tar, dpkg for the container boot (scripts/fetch-runtimes.sh),
# podman, conmon, containers-common for the podman boot (scripts/fetch-podman.sh;
# both quick when already there), and containerd 2.1, runc 1.3 (both from Debian
# testing), python3-grpcio for the cri boot (scripts/fetch-cri.sh; quick when
# already there), CRIU's source, python3 and make for the zdtm boot
# (scripts/fetch-zdtm.sh). As for criu42 and rocm-testing, Debian testing's part can
# move or be unreachable: a failed fetch of the cri boot's packages is a
# warning, tried again on every make, and that boot's tests SKIP, saying so,
# while they are missing.
vm-deps: $(VM_DEPS_STAMP) deps rocm-testing
	scripts/fetch-runtimes.sh $(CACHE)/runtimes $(CRIU_DIR)/root
	scripts/fetch-podman.sh $(CACHE)/podman $(CRIU_DIR)/root $(CACHE)/runtimes/root
	@scripts/fetch-cri.sh $(CACHE)/cri $(CRIU_DIR)/root $(CACHE)/runtimes/root || \
		echo "make vm-deps: WARNING: no containerd 2.1 / runc 1.3 from Debian testing (scripts/fetch-cri.sh); the cri boot's tests are skipped" >&2
	@scripts/fetch-zdtm.sh $(CACHE)/zdtm $(CRIU_DIR)/root || \
		echo "make vm-deps: WARNING: no CRIU source or python3 from trixie (scripts/fetch-zdtm.sh); the zdtm boot's tests are skipped" >&2
# (kept for the command lines that name it: vm-deps fetches them)
vm-cri-deps: vm-deps

# (kept for the command lines that name it: vm-deps fetches CRIU's source of
# trixie's criu version, python3, pycriu, make for the zdtm boot with
# scripts/fetch-zdtm.sh, quick when already there)
zdtm-deps: vm-deps

vm-check vm-amdgpu-check vm-selftest vm-podman vm-rocm vm-cri zdtm: deps vm-deps
	$(MAKE) all $(BUILD)/tests/bin
	$(TEST_ENV) tests/run-suite.sh $(VM_SUITE_$@)

# The figures are the guest's "# bench:" lines (printed by run-suite only on
# a failure): shown from the guest test's log either way.
vm-bench: deps vm-deps
	$(MAKE) all $(BUILD)/tests/bin
	$(TEST_ENV) tests/run-suite.sh tests/vm/test-kfdsim-bench.sh; rc=$$?; \
	grep -h '# bench' $(BUILD)/vm-logs/kfdsim-bench/guest/test-bench-engines.log 2>/dev/null; exit $$rc
