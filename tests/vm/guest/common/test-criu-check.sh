#!/bin/sh
# CRIU itself works in the guest: the kernel has what it needs (diag
# modules, loopback), and our plugin sits in CRIU's default plugin dir.
. /test/lib/guest.sh

out=$(criu check 2>&1)
if echo "$out" | grep -q '^Looks good'; then ok "criu check: Looks good"; else fail "criu check"; echo "$out" | sed 's/^/# /'; fi
diag "$(criu --version | head -1)"
check "plugin installed in /usr/lib/criu" test -f /usr/lib/criu/amdgpu_plugin.so
tap_done
