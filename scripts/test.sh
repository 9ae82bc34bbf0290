#!/usr/bin/env bash
# The whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set.
# Both runs happen even when the first fails, so one CI run shows every failure.
# After each run, every log its apps wrote is searched for every secret they issued
# (test/log-capture.ts records, scripts/scan-test-logs.ts searches); the logs of a run whose
# scan fails are kept for reading.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run --silent typecheck || exit 1
status=0

suite () {
  local dialect=$1; shift
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-logs-$dialect-XXXXXX")
  ROJA_TEST_LOG_DIR=$dir ROJA_TEST_DIALECT=$dialect npx tap "$@" || status=1
  echo "== secrets in the logs of the $dialect run ($dir)"
  if ROJA_TEST_LOG_DIR=$dir npx tap scripts/scan-test-logs.ts; then rm -rf "$dir"; else status=1; echo "logs kept in $dir"; fi
}

echo "== tests on SQLite"
suite sqlite "$@"
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  echo "== tests on PostgreSQL ($TEST_DATABASE_URL)"
  suite postgres "$@"
fi
exit $status
