#!/usr/bin/env bash
# The whole suite on SQLite, then again on PostgreSQL when TEST_DATABASE_URL is set.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent typecheck
echo "== tests on SQLite"
ROJA_TEST_DIALECT=sqlite npx tap "$@"
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  echo "== tests on PostgreSQL ($TEST_DATABASE_URL)"
  ROJA_TEST_DIALECT=postgres npx tap "$@"
fi
