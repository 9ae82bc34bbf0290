import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'

/**
 * Redocly CLI's `recommended` ruleset over the exported documents: zero errors and zero warnings
 * (Redocly itself fails on errors only). Prints nothing when clean, else every finding.
 */
const root = join(dirname(new URL(import.meta.url).pathname), '..')
const bin = join(root, 'node_modules', '.bin', 'redocly')
const files = ['openapi/v1.json', 'openapi/v2.json']
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
const run = (file: string, format: string) =>
  spawnSync(bin, ['lint', file, '--extends', 'recommended', '--format', format], { cwd: root, env, encoding: 'utf8' })

let found = 0
for (const file of files) {
  const result = run(file, 'json')
  let totals: { errors: number, warnings: number }
  try {
    totals = JSON.parse(result.stdout).totals
  } catch {
    process.stderr.write(result.stdout + result.stderr)
    process.exit(1)
  }
  if (totals.errors + totals.warnings > 0) {
    found += totals.errors + totals.warnings
    process.stdout.write(run(file, 'codeframe').stdout)
    console.error(`${file}: redocly recommended finds ${totals.errors} errors and ${totals.warnings} warnings`)
  }
}
process.exitCode = found === 0 ? 0 : 1
