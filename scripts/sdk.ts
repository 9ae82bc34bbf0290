import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'

/**
 * The second generated client: an SDK built by @hey-api/openapi-ts from the committed documents
 * into client/sdk/<version>/ (committed, like the openapi-typescript types). `--check` builds it
 * in a temporary folder and fails when the committed one differs.
 */
const root = join(dirname(new URL(import.meta.url).pathname), '..')
const check = process.argv.includes('--check')
const bin = join(root, 'node_modules', '.bin', 'openapi-ts')

/** The files under a folder, as paths relative to it. */
function files (dir: string): string[] {
  const out: string[] = []
  const visit = (path: string) => {
    for (const name of readdirSync(path)) {
      const child = join(path, name)
      if (statSync(child).isDirectory()) visit(child)
      else out.push(relative(dir, child))
    }
  }
  try { visit(dir) } catch {}
  return out.sort()
}

let stale = 0
for (const version of ['v1', 'v2']) {
  const target = join(root, 'client', 'sdk', version)
  const out = check ? mkdtempSync(join(tmpdir(), `roja-sdk-${version}-`)) : target
  const run = spawnSync(bin, ['-i', `./openapi/${version}.json`, '-o', out, '--no-log-file', '--silent'], { cwd: root, encoding: 'utf8' })
  if (run.status !== 0) {
    process.stderr.write(run.stdout + run.stderr)
    process.exit(1)
  }
  if (!check) continue
  const made = files(out)
  const committed = files(target)
  const differ = JSON.stringify(made) !== JSON.stringify(committed) ||
    made.some(f => readFileSync(join(out, f), 'utf8') !== readFileSync(join(target, f), 'utf8'))
  rmSync(out, { recursive: true, force: true })
  if (differ) {
    stale++
    console.error(`client/sdk/${version} is stale: run npm run client (after npm run openapi) and commit the result`)
  }
}
process.exitCode = stale === 0 ? 0 : 1
