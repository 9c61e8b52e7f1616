#!/bin/sh
# selftest: one passing and one failing result, non-zero exit.
. /test/lib/guest.sh
ok "passes"
fail "fails on purpose"
tap_done
