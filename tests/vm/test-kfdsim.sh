#!/bin/bash
# The kfdsim VM suite as one test program for tests/run-suite.sh.
exec "$(dirname "$0")/vm-suite.sh" kfdsim
