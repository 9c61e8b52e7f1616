# VM test harness (tests/vm/), included by the main Makefile. Each suite is
# one qemu TCG boot of the current bookworm-backports generic kernel; the
# downloads are cached in $(CACHE)/vm.
#
#   make vm-check           the kfdsim suite (simulator module, CRIU in the VM)
#   make vm-amdgpu-check    the real-amdgpu smoke suite (amdgpu.ko, no GPU)
#   make vm-selftest        the harness's own test: breakage is reported (3 boots)
#   make vm-deps            qemu 10, busybox-static, cpio, pahole, ... (system)
#
# Options (environment or make variables): KFDSIM_PARAMS="a=1 b=2" (module
# parameters of kfdsim.ko at boot), VM_ONLY="test-x test-y" (run only these
# guest tests), VM_TIMEOUT=seconds (whole VM run), VM_TEST_TIMEOUT=seconds
# (each guest test), VM_KFDSIM_SRC=dir (another module source). Logs:
# $(BUILD)/vm-logs/<suite>/ (see tests/vm/README.md).
#
# VM_TESTS: host-side programs for tests/run-suite.sh, one per suite.
VM_TESTS := tests/vm/test-kfdsim.sh tests/vm/test-amdgpu.sh
VM_DEPS_STAMP := $(CACHE)/deps-vm.stamp
VM_SUITE_vm-check := tests/vm/test-kfdsim.sh
VM_SUITE_vm-amdgpu-check := tests/vm/test-amdgpu.sh
VM_SUITE_vm-selftest := tests/vm/selftest.sh
export KFDSIM_PARAMS VM_ONLY VM_TIMEOUT VM_TEST_TIMEOUT VM_KFDSIM_SRC

.PHONY: vm-deps vm-check vm-amdgpu-check vm-selftest

# A stamp per recipe version, as for the build dependencies.
$(VM_DEPS_STAMP): scripts/install-deps.sh scripts/apt-private.sh
	scripts/install-deps.sh vm
	@mkdir -p $(dir $@) && touch $@
vm-deps: $(VM_DEPS_STAMP)

vm-check vm-amdgpu-check vm-selftest: deps vm-deps
	$(MAKE) all $(BUILD)/tests/bin
	$(TEST_ENV) tests/run-suite.sh $(VM_SUITE_$@)
