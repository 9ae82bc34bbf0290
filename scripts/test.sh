#!/usr/bin/env bash
# npm test [-- files...]: build dist/ (once, for every test that runs the built server), then three
# tap runs side by side, the type-check beside them: the database-blind files once, and every other
# file on SQLite and on PostgreSQL (when TEST_DATABASE_URL is set; ROJA_TEST_DIALECT=sqlite or
# postgres runs that database alone). Every run happens even when another fails, so one CI run shows
# every failure.
# After each run, every log its apps wrote is searched for every secret they issued
# (test/log-capture.ts records, scripts/scan-test-logs.ts searches); the logs of a run whose scan
# fails are kept for reading. TEST_JOBS: test files at a time in each run.
set -uo pipefail
cd "$(dirname "$0")/.."

# Database-blind: they never read ROJA_TEST_DIALECT (nor build the app on the run's database), so a
# second run would repeat the same work. test/bundle.test.ts runs the bundle on both databases itself.
ONCE=(
  test/readme.test.ts test/bundle.test.ts test/build.test.ts test/server.test.ts test/slow-clients.test.ts
  test/sdk.test.ts test/client.test.ts test/openapi-documents.test.ts test/docs.test.ts test/architecture.test.ts
  test/plugins/config.test.ts test/proc.test.ts test/log-stream.test.ts test/log-scan.test.ts
  test/domain/rules.test.ts test/plugins/histogram.test.ts test/plugins/media-storage.test.ts
  test/plugins/deprecation.test.ts test/plugins/problems-database-down.test.ts
)
jobs=${TEST_JOBS:-2}
tap=node_modules/.bin/tap

if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(find test -name '*.test.ts' | sort); fi
once=() each=()
for f in "${files[@]}"; do
  if [[ " ${ONCE[*]} " == *" $f "* ]]; then once+=("$f"); else each+=("$f"); fi
done

case "${ROJA_TEST_DIALECT:-}" in
  sqlite|postgres) dialects=("$ROJA_TEST_DIALECT") ;;
  '') dialects=(sqlite); [ -n "${TEST_DATABASE_URL:-}" ] && dialects+=(postgres) ;;
  *) echo "ROJA_TEST_DIALECT must be sqlite or postgres, not $ROJA_TEST_DIALECT"; exit 1 ;;
esac

# tap rebuilds its Test class inside node_modules when the configured plugins are not the ones it
# was installed with (package.json leaves @tapjs/typescript out). Done here, once: three runs that
# start at once would each begin that build and break the others'.
tap_built () {
  node --input-type=module -e "
    const { TapConfig } = await import('@tapjs/config')
    const { signature } = await import('@tapjs/test')
    process.exit((await TapConfig.load()).pluginSignature === signature ? 0 : 1)" 2>/dev/null || "$tap" build
}

# Before any test: dist/, built the way npm start builds it (prestart: only what changed), so the
# tests that run `npm start` find it done and never build at the same time; and tap's own build.
built=$(mktemp)
npm run --silent prestart > "$built" 2>&1 & build=$!
tap_built >> "$built" 2>&1 || { cat "$built"; echo "tap build failed"; exit 1; }
wait $build || { cat "$built"; echo "the build failed"; exit 1; }
rm -f "$built"
echo "== time: build: $SECONDS s"

# The type-check runs beside the tests (which tsx runs without it), and fails npm test after them.
checked=$(mktemp)
from=$SECONDS
{ npm run --silent typecheck > "$checked" 2>&1; code=$?; echo "== time: type-check: $((SECONDS - from)) s" >> "$checked"; exit $code; } & typecheck=$!

# One tap run and the scan of its logs, all its output to $log. Dialect `none`: the database-blind files.
run () {
  local key=$1 label=$2 dialect=$3 log=$4; shift 4
  local dir status=0 from=$SECONDS
  dir=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-logs-$key-XXXXXX")
  {
    echo "== tests $label ($# files)"
    ROJA_TEST_LOG_DIR=$dir ROJA_TEST_DIALECT=$dialect "$tap" --jobs="$jobs" "$@" || status=1
    local ran=$((SECONDS - from))
    echo "== secrets in the logs of the tests $label ($dir)"
    if ROJA_TEST_LOG_DIR=$dir "$tap" scripts/scan-test-logs.ts; then rm -rf "$dir"; else status=1; echo "logs kept in $dir"; fi
    echo "== time: tests $key, $# files: $ran s, then the scan of their logs: $((SECONDS - from - ran)) s"
  } > "$log" 2>&1
  return $status
}

# The runs side by side, each printed whole once it is done.
pids=() logs=()
if [ ${#once[@]} -gt 0 ]; then
  logs+=("$(mktemp)"); run once "once, on no particular database" none "${logs[-1]}" "${once[@]}" & pids+=($!)
fi
if [ ${#each[@]} -gt 0 ]; then
  for d in "${dialects[@]}"; do
    label="on SQLite"; [ "$d" = postgres ] && label="on PostgreSQL ($TEST_DATABASE_URL)"
    logs+=("$(mktemp)"); run "$d" "$label" "$d" "${logs[-1]}" "${each[@]}" & pids+=($!)
  done
fi
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "${logs[$i]}"; rm -f "${logs[$i]}"
done
echo "== type-check (tsc --noEmit)"
wait $typecheck || status=1
cat "$checked"; rm -f "$checked"
exit $status
