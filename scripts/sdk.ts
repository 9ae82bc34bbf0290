import { spawnSync } from 'node:child_process'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ROOT } from '../src/package-info.js'

/**
 * The second generated client: an SDK built by @hey-api/openapi-ts from the committed documents.
 * It is not committed (only the openapi-typescript types, client/v1.d.ts and v2.d.ts, are):
 * test/sdk.test.ts generates it afresh for each run, and `npm run client:sdk` writes it
 * to client/sdk/<version>/, which client/.gitignore keeps out of the repository.
 */
export const SDK_VERSIONS = ['v1', 'v2'] as const

/** Generates the SDK of one document version into `out` (created, or replaced). */
export function generateSdk (version: typeof SDK_VERSIONS[number], out: string): void {
  const bin = join(ROOT, 'node_modules', '.bin', 'openapi-ts')
  const run = spawnSync(bin, ['-i', `./openapi/${version}.json`, '-o', out, '--no-log-file', '--silent'], { cwd: ROOT, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`openapi-ts failed for ${version}:\n${run.stdout}${run.stderr}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const base = resolve(process.argv[2] ?? join(ROOT, 'client', 'sdk'))
  for (const version of SDK_VERSIONS) generateSdk(version, join(base, version))
  console.log(`SDK written to ${base}/{${SDK_VERSIONS.join(',')}} (not committed)`)
}
