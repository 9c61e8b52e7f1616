#!/bin/bash
# The real-amdgpu VM smoke suite as one test program for tests/run-suite.sh.
# run-suite-parallel: yes (its own VM, logs and work files)
exec "$(dirname "$0")/vm-suite.sh" amdgpu
