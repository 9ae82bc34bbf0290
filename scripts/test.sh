#!/usr/bin/env bash
# npm test [-- files...]: three tap runs side by side, the type-check beside them: the
# database-blind files once (after building dist/, which they run), and every other file on SQLite
# and on PostgreSQL (when TEST_DATABASE_URL is set; ROJA_TEST_DIALECT=sqlite or
# postgres runs that database alone). Every run happens even when another fails, so one CI run shows
# every failure.
# After each run, every log its apps wrote is searched for every secret they issued
# (test/log-capture.ts records, scripts/scan-test-logs.ts searches); the logs of a run whose scan
# fails are kept for reading. TEST_JOBS: test files at a time in each run (2).
set -uo pipefail
cd "$(dirname "$0")/.."

# Database-blind files run once. Only test/helper.ts reads ROJA_TEST_DIALECT: a file that imports
# it neither directly nor through another module under test/ cannot see which database the run is
# for. These import it and were read to be sure: they never build on the run's database, or build
# the app only for what no database decides (documents, log lines, a 401 before any query).
# test/bundle.test.ts runs the bundle on both databases itself.
PINNED=(
  test/bundle.test.ts test/sdk.test.ts test/client.test.ts test/slow-clients.test.ts test/log-scan.test.ts
  test/plugins/config.test.ts test/plugins/deprecation.test.ts test/plugins/problems-database-down.test.ts
  test/plugins/openapi.test.ts test/request-log.test.ts test/auth-path.test.ts
)
# the modules under test/ that reach test/helper.ts, as the names they are imported by
reach=(helper) grown=1
while [ $grown -eq 1 ]; do
  grown=0
  for m in test/*.ts; do
    name=$(basename "$m" .ts)
    [[ $m == *.test.ts || " ${reach[*]} " == *" $name "* ]] && continue
    if grep -qE "from '\./($(IFS='|'; echo "${reach[*]}"))\.js'" "$m"; then reach+=("$name"); grown=1; fi
  done
done
blind () {
  [[ " ${PINNED[*]} " == *" $1 "* ]] || ! grep -qE "from '(\.\./)*\.?/?($(IFS='|'; echo "${reach[*]}"))\.js'" "$1"
}
jobs=${TEST_JOBS:-2}
tap=node_modules/.bin/tap

# a whole run's log scans also check that the apps logged and secrets were recorded
if [ $# -gt 0 ]; then files=("$@"); whole=0; else mapfile -t files < <(find test -name '*.test.ts' | sort); whole=1; fi
once=() each=()
for f in "${files[@]}"; do
  if blind "$f"; then once+=("$f"); else each+=("$f"); fi
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

# The PostgreSQL runs work in a database of their own, made here and dropped at the end: each test
# makes and drops a schema, which leaves dead rows in the catalogs (pg_attribute, pg_depend,
# pg_class) that only a vacuum reclaims. Where autovacuum is off, a shared database grew by hundreds
# of megabytes a run and each run was slower than the last; a dropped database takes them all
# along. A role that may not create databases runs in TEST_DATABASE_URL itself.
scratch=
pg_admin () {
  node --input-type=module -e "
    const { default: pg } = await import('pg')
    const c = new pg.Client({ connectionString: process.argv[1] })
    await c.connect()
    try { await c.query(process.argv[2]) } finally { await c.end() }" "$@"
}
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  name=roja_test_$(date +%s)_$$
  if pg_admin "$TEST_DATABASE_URL" "create database $name" 2> /dev/null; then
    given=$TEST_DATABASE_URL scratch=$name
    TEST_DATABASE_URL=$(node -e "const u = new URL(process.argv[1]); u.pathname = '/' + process.argv[2]; console.log(u.href)" "$given" "$name")
    trap 'pg_admin "$given" "drop database if exists $scratch with (force)" || echo "could not drop the database $scratch"' EXIT
    trap 'exit 130' INT TERM
  else
    echo "(cannot create a database from $TEST_DATABASE_URL: the PostgreSQL run works in it)"
  fi
fi

built=$(mktemp)
tap_built > "$built" 2>&1 || { cat "$built"; echo "tap build failed"; exit 1; }
rm -f "$built"

# tap runs the tests as JavaScript that esbuild bundles into .tap/js (a second or two): each test
# file with the app and its dependencies, in shared chunks (scripts/bundle-tests.ts), and taprc
# there: package.json's settings without tsx. A test process then loads no TypeScript loader and a
# few modules instead of about 1 100, each of which tap's module hook passes to a thread of its own
# on Node 20 (docs/development.md). `npx tap test/x.test.ts` still runs one file through tsx.
JS=.tap/js
rm -rf "$JS"
node --import tsx scripts/bundle-tests.ts "$JS" "${files[@]}" scripts/scan-test-logs.ts || { echo "bundling the tests failed"; exit 1; }
printf 'extends: ../../package.json\nnode-arg: []\n' > "$JS/taprc"
export TAP_RCFILE=$PWD/$JS/taprc
compiled () { local f; for f in "$@"; do echo "$JS/${f%.ts}.js"; done; }

# The type-check runs beside the tests (bundled without it), and fails npm test after them.
# TEST_TYPECHECK=0 leaves it out (CI runs it earlier, while better-sqlite3 compiles).
checked=$(mktemp)
from=$SECONDS
if [ "${TEST_TYPECHECK:-1}" = 0 ]; then
  echo "(left out: TEST_TYPECHECK=0)" > "$checked"; typecheck=0
else
  { npm run --silent typecheck > "$checked" 2>&1; code=$?; echo "== time: type-check: $((SECONDS - from)) s" >> "$checked"; exit $code; } & typecheck=$!
fi

# One tap run and the scan of its logs, all its output to $log. Dialect `none`: the database-blind files.
run () {
  local key=$1 label=$2 dialect=$3 log=$4; shift 4
  local dir status=0 from=$SECONDS
  dir=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-logs-$key-XXXXXX")
  {
    echo "== tests $label ($# files)"
    ROJA_TEST_LOG_DIR=$dir ROJA_TEST_DIALECT=$dialect "$tap" --jobs="$jobs" $(compiled "$@") || status=1
    local ran=$((SECONDS - from))
    echo "== secrets in the logs of the tests $label ($dir)"
    if ROJA_TEST_LOG_DIR=$dir ROJA_TEST_WHOLE_RUN=$whole "$tap" "$(compiled scripts/scan-test-logs.ts)"; then rm -rf "$dir"; else status=1; echo "logs kept in $dir"; fi
    # CPU of the run's own processes (not of the database server), as the shell's children count it
    times > "$dir.times"  # in this shell: a $(...) would count the children of its own
    local cpu; cpu=$(tail -1 "$dir.times" | awk '{ gsub(/[ms]/, " "); print int($1 * 60 + $2 + $3 * 60 + $4) }'); rm -f "$dir.times"
    echo "== time: tests $key, $# files, $jobs at a time: $ran s, then the scan of their logs: $((SECONDS - from - ran)) s; CPU $cpu s"
  } > "$log" 2>&1
  return $status
}

# The database-blind files are the ones that run the built server: first dist/, built the way
# npm start builds it (prestart: only what changed), so those tests find it done and never build at
# the same time. The database runs start meanwhile.
built_then_once () {
  local log=$1 from=$SECONDS; shift
  if ! npm run --silent prestart > "$log" 2>&1; then echo "the build (npm run prestart) failed" >> "$log"; return 1; fi
  local took=$((SECONDS - from))
  run once "once, on no particular database" none "$log" "$@"; local status=$?
  echo "== time: build before them: $took s" >> "$log"
  return $status
}

# The runs side by side, each printed whole once it is done.
pids=() logs=()
if [ ${#once[@]} -gt 0 ]; then
  logs+=("$(mktemp)"); built_then_once "${logs[-1]}" "${once[@]}" & pids+=($!)
fi
if [ ${#each[@]} -gt 0 ]; then
  for d in "${dialects[@]}"; do
    label="on SQLite"; [ "$d" = postgres ] && label="on PostgreSQL (${given:-$TEST_DATABASE_URL}${scratch:+, in a database of its own: $scratch})"
    logs+=("$(mktemp)"); run "$d" "$label" "$d" "${logs[-1]}" "${each[@]}" & pids+=($!)
  done
fi
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "${logs[$i]}"; rm -f "${logs[$i]}"
done
echo "== type-check (tsc --noEmit)"
[ "$typecheck" = 0 ] || wait $typecheck || status=1
cat "$checked"; rm -f "$checked"
exit $status
