# shellcheck shell=bash
# Sourced by the host-side VM scripts: shared paths and small helpers.
#   VM_CACHE   downloads and unpacked kernels, outside the repository so that
#              a second run (and every other work tree) reuses them
#   VM_FLAVOUR the Debian kernel flavour; "amd64" is the generic one, which has
#              the DRM core as modules (kfdsim builds on it) and the real amdgpu
VM_CACHE=${VM_CACHE:-${AMDGPU_CRIU_CACHE:-$HOME/.cache/amdgpu-criu}/vm}
VM_FLAVOUR=${VM_FLAVOUR:-amd64}
# shellcheck disable=SC2034 # used by the scripts that source this file
VM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

vm_log() { echo "${0##*/}: $*" >&2; }
vm_die() { vm_log "error: $*"; exit 1; }

# Seconds since the epoch with a fraction, for step timings.
vm_now() { date +%s.%N; }
vm_since() { awk -v a="$1" -v b="${2:-$(vm_now)}" 'BEGIN { printf "%.1f", b - a }'; } # START [END]
