#!/bin/bash
# The real-amdgpu VM smoke suite as one test program for tests/run-suite.sh.
exec "$(dirname "$0")/vm-suite.sh" amdgpu
