#!/usr/bin/env bash
# npm test [-- files...]: three tap runs side by side, the type-check beside them: the
# database-blind files once (after building dist/, which they run), and every other file on SQLite
# and on PostgreSQL (when TEST_DATABASE_URL is set; ROJA_TEST_DIALECT=sqlite or
# postgres runs that database alone). Every run happens even when another fails, so one CI run shows
# every failure.
# After each run, every log its apps wrote is searched for every secret they issued
# (test/log-capture.ts records, scripts/scan-test-logs.ts searches); the logs of a run whose scan
# fails are kept for reading. TEST_JOBS: test files at a time in each run (2).
# It prints a line per test file as it ends and each run's summary; at the end, every failed
# assertion again with its file, and last `N passed, M failed` (assertions, the type-check as one).
# .ci/run reads this output: its `# { total: …` summaries, `== tests on …` and `== time: ` lines.
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
  test/plugins/openapi.test.ts test/request-log.test.ts test/auth-path.test.ts test/browser.test.ts
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

# The test processes of a run share one migrated database of each dialect here, which the others
# copy (test/helper.ts, migratedDatabase): most processes then migrate nothing.
ROJA_TEST_IMAGE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-images-XXXXXX"); export ROJA_TEST_IMAGE_DIR
cleanup () {
  rm -rf "$ROJA_TEST_IMAGE_DIR"
  [ -z "$scratch" ] || pg_admin "$given" "drop database if exists $scratch with (force)" || echo "could not drop the database $scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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

# The type-check and the linter run beside the tests (bundled without them), and fail npm test after them.
# TEST_TYPECHECK=0 leaves them out (CI runs them earlier, while better-sqlite3 compiles).
checked=$(mktemp)
from=$SECONDS
if [ "${TEST_TYPECHECK:-1}" = 0 ]; then
  echo "(left out: TEST_TYPECHECK=0)" > "$checked"; typecheck=0
else
  { npm run --silent typecheck > "$checked" 2>&1 && npm run --silent lint >> "$checked" 2>&1; code=$?
    echo "== time: type-check and lint: $((SECONDS - from)) s" >> "$checked"; exit $code; } & typecheck=$!
fi

# What a person reads while the runs go on: one line per test file finished (its run, how many of
# the run's files are done, ok or FAIL, its time) and each run's tap summary. tap prints a file's
# top-level `ok`/`not ok` line as that file ends; the whole TAP goes to the run's own file.
progress () {
  local key=$1 count=$2 full=$3
  tee -a "$full" | awk -v key="$key" -v n="$count" '
    /^(not )?ok [0-9]+ - / {
      done++; ok = $1 == "ok"; file = $0; took = ""
      sub(/^(not )?ok [0-9]+ - (\.tap\/js\/)?/, "", file)
      if (match(file, / # time=[0-9.]+ms/)) { took = sprintf("  %.1f s", substr(file, RSTART + 8, RLENGTH - 10) / 1000); file = substr(file, 1, RSTART - 1) }
      sub(/\.js$/, ".ts", file)
      printf "%-8s %4s  %-4s  %s%s\n", key, done "/" n, ok ? "ok" : "FAIL", file, took; fflush(); next
    }
    /^# \{ total: [0-9]+/ { print; fflush() }'
}

# One tap run and the scan of its logs; its whole output to $full. Dialect `none`: the database-blind files.
run () {
  local key=$1 label=$2 dialect=$3 full=$4; shift 4
  local dir status=0 from=$SECONDS
  dir=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-logs-$key-XXXXXX")
  echo "== tests $label ($# files)" | tee -a "$full"
  ROJA_TEST_LOG_DIR=$dir ROJA_TEST_DIALECT=$dialect "$tap" --jobs="$jobs" $(compiled "$@") 2>&1 | progress "$key" $# "$full" || status=1
  local ran=$((SECONDS - from))
  echo "== secrets in the logs of the tests $label ($dir)" | tee -a "$full"
  scan () { ROJA_TEST_LOG_DIR=$dir ROJA_TEST_WHOLE_RUN=$whole "$tap" "$(compiled scripts/scan-test-logs.ts)" 2>&1 | progress "$key" 1 "$full"; }
  summaries () { grep -cE '^# \{ total: [0-9]+' "$full"; }
  # Runs side by side share .tap/processinfo, and one may remove it as another's tap starts
  # (ENOTEMPTY, before any test): a scan that ended without its summary is run once more.
  local before; before=$(summaries)
  if scan || { [ "$(summaries)" = "$before" ] && echo "(the scan did not run: once more)" >> "$full" && scan; }; then
    rm -rf "$dir"
  else
    status=1; echo "$key: logs kept in $dir"
  fi
  # CPU of the run's own processes (not of the database server), as the shell's children count it
  times > "$dir.times"  # in this shell: a $(...) would count the children of its own
  local cpu; cpu=$(awk -f scripts/children-cpu.awk "$dir.times"); rm -f "$dir.times"
  echo "== time: tests $key, $# files, $jobs at a time: $ran s, then the scan of their logs: $((SECONDS - from - ran)) s; CPU $cpu s"
  return $status
}

# The database-blind files are the ones that run the built server: first dist/, built the way
# npm start builds it (prestart: only what changed), so those tests find it done and never build at
# the same time. The database runs start meanwhile.
built_then_once () {
  local full=$1 from=$SECONDS; shift
  if ! npm run --silent prestart >> "$full" 2>&1; then
    echo "the build (npm run prestart) failed" | tee -a "$full"; tail -20 "$full"; return 1
  fi
  local took=$((SECONDS - from))
  run once "once, on no particular database" none "$full" "$@"; local status=$?
  echo "== time: build before them: $took s"
  return $status
}

# Each failed assertion of a run's TAP with its file, the subtests around it and the start of its
# diagnostics; a file that failed with no failed assertion (a crash, a timeout) by its own line.
failures () {
  awk -v run="$1" '
    { match($0, /^ */); indent = RLENGTH; depth = indent / 4; body = substr($0, indent + 1) }
    expect { expect = 0; if (body == "---") { diag = 1; base = indent; key = file_at = line_at = where = ""; next } }
    diag > 0 && body == "..." { if (where != "") print "      at " where; diag = 0; where = ""; next }
    diag > 0 {
      if (indent == base && body ~ /^[A-Za-z]+:/) { key = body; sub(/:.*/, "", key) }
      if (key == "at") {
        if (file_at == "" && body ~ /^fileName: /) file_at = substr(body, 11)
        if (line_at == "" && body ~ /^lineNumber: /) line_at = substr(body, 13)
        if (file_at != "" && line_at != "" && where == "") where = file_at ":" line_at
        next
      }
      if (key == "stack" || key == "source" || key == "generated") next
      if (++diag <= 20) print "      " substr($0, base + 1); else if (diag == 21) print "      …"
      next
    }
    body ~ /^# Subtest: / { name[depth] = substr(body, 12); if (depth == 0) { file = name[0]; shown = 0 }; next }
    body ~ /^not ok [0-9]+ - / {
      what = body; sub(/^not ok [0-9]+ - /, "", what)
      if (depth == 0) { if (!shown) { f = what; sub(/ # time=.*/, "", f); print "  " clean(f) " (" run "): failed" } ; next }
      if (what ~ / # time=[0-9.]+ms$/) next  # a subtest that failed because an assertion in it did: shown there
      if (!shown) { print "  " clean(file) " (" run ")"; shown = 1 }
      path = ""; for (d = 1; d < depth; d++) path = path name[d] " › "
      print "    " path what; expect = 1
    }
    function clean (f) { sub(/^\.tap\/js\//, "", f); sub(/\.js$/, ".ts", f); return f }' "$2"
}

# The runs side by side, their progress interleaved; each run's whole TAP in $out/<run>.tap.
out=$(mktemp -d "${TMPDIR:-/tmp}/roja-test-XXXXXX")
pids=() keys=()
if [ ${#once[@]} -gt 0 ]; then
  keys+=(once); built_then_once "$out/once.tap" "${once[@]}" & pids+=($!)
fi
if [ ${#each[@]} -gt 0 ]; then
  for d in "${dialects[@]}"; do
    label="on SQLite"; [ "$d" = postgres ] && label="on PostgreSQL (${given:-$TEST_DATABASE_URL}${scratch:+, in a database of its own: $scratch})"
    keys+=("$d"); run "$d" "$label" "$d" "$out/$d.tap" "${each[@]}" & pids+=($!)
  done
fi
status=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || status=1; done
echo "== type-check (tsc --noEmit) and lint (eslint, neostandard)"
typed=0
if [ "$typecheck" != 0 ]; then
  if wait $typecheck; then typed=1; else typed=-1; status=1; fi
fi
cat "$checked"; rm -f "$checked"

# The verdict: what failed again, with its files, then the counts of every run's summaries (and
# the type-check as one), last.
passed=0 failed=0 files_ok=0 files_failed=0
for key in "${keys[@]}"; do
  log=$out/$key.tap
  read -r p f < <(grep -E '^# \{ total: [0-9]+' "$log" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "pass:") p += $(i + 1); if ($i == "fail:") f += $(i + 1) } } END { print p + 0, f + 0 }')
  passed=$((passed + p)) failed=$((failed + f))
  files_ok=$((files_ok + $(grep -cE '^ok [0-9]+ - ' "$log"))) files_failed=$((files_failed + $(grep -cE '^not ok [0-9]+ - ' "$log")))
done
[ $typed = 1 ] && passed=$((passed + 1))
[ $typed = -1 ] && failed=$((failed + 1))
if [ $status -ne 0 ]; then
  echo "== what failed in the tests (each run's whole output: $out)"
  for key in "${keys[@]}"; do
    failures "$key" "$out/$key.tap"
    runs=$(grep -cE '^== (tests|secrets) ' "$out/$key.tap") sums=$(grep -cE '^# \{ total: [0-9]+' "$out/$key.tap")
    if [ "$sums" -lt "$runs" ]; then echo "  $key: a tap run printed no summary; its last lines:"; tail -30 "$out/$key.tap" | sed 's/^/    /'; fi
  done
  [ $typed = -1 ] && echo "  the type-check or the linter (above)"
  [ "$failed" -eq 0 ] && failed=1
else
  rm -rf "$out"
fi
echo "== test files: $files_ok passed, $files_failed failed"
echo "$passed passed, $failed failed"
exit $status
