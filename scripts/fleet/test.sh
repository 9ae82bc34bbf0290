#!/usr/bin/env bash
# npm run fleet:test: the fleet test alone (scripts/fleet/fleet.test.ts, outside test/ so that
# npm test does not run it). Prints its TAP, then one `N passed, N failed` line counting the
# properties (top-level tests); exits non-zero when any failed or the run broke.
set -uo pipefail
cd "$(dirname "$0")/../.."
command -v haproxy >/dev/null || { echo "haproxy is not installed (Debian: apt-get install -y haproxy)"; echo "0 passed, 1 failed"; exit 1; }
log=$(mktemp)
TAP_TIMEOUT=0 timeout "${FLEET_TEST_TIMEOUT:-600}" node --import tsx scripts/fleet/fleet.test.ts 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^ok [0-9]+' "$log")
failed=$(grep -cE '^not ok [0-9]+' "$log")
# the run broke before or between tests (setup failed, timeout): count it as a failure
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
