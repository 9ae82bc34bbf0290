#!/usr/bin/env bash
# The whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set.
# Both runs happen even when the first fails, so one CI run shows every failure.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run --silent typecheck || exit 1
status=0
echo "== tests on SQLite"
ROJA_TEST_DIALECT=sqlite npx tap "$@" || status=1
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  echo "== tests on PostgreSQL ($TEST_DATABASE_URL)"
  ROJA_TEST_DIALECT=postgres npx tap "$@" || status=1
fi
exit $status
