import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ROOT } from '../src/package-info.js'

/**
 * The build compiles only what the server runs: the files `tsc -p tsconfig.build.json` takes
 * (each becomes one file in dist/) are exactly the modules that src/server.ts and src/cli.ts
 * reach through their imports, and no tooling (convention checker, seeder, migration script,
 * benchmarks, soak, tests).
 */
const run = promisify(execFile)

/** The project's own source files reachable from `entries` by relative imports (type-only ones too: tsc emits them). */
function reachable (entries: string[]): Set<string> {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const source = readFileSync(join(ROOT, file), 'utf8')
    for (const [, spec] of source.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)\.js'/g)) {
      visit(relative(ROOT, resolve(ROOT, dirname(file), `${spec}.ts`)))
    }
  }
  entries.forEach(visit)
  return seen
}

const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const listed = async (args: string[]) => (await run(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], { cwd: ROOT, maxBuffer: 1 << 24 })).stdout
/** The project's files the build takes (tsc lists them once for both tests). */
const building = listed(['--listFilesOnly']).then(stdout =>
  stdout.split('\n').map(f => f.trim()).filter(f => f.startsWith(ROOT) && !f.includes('/node_modules/')).map(f => relative(ROOT, f)).sort())

t.test('dist holds only runtime code: the build takes exactly what server.ts and cli.ts import', async (t) => {
  const built = await building
  t.same(built, [...reachable(['src/server.ts', 'src/cli.ts'])].sort(), 'the build inputs are the import graph of the two entry points')
  t.ok(built.includes('src/db/migrations/2026_11_21_0001_initial.ts'), 'migrations are runtime code')
  const tooling = ['scripts/', 'test/', 'bench/', 'src/conventions/', 'src/db/seed', 'src/db/migrate-cli']
  t.same(built.filter(f => tooling.some(folder => f.startsWith(folder))), [], `nothing from ${tooling.join(', ')}`)
})

t.test('every file the build takes is a root of it, so `tsc -b` (npm start) rebuilds when any of them changes', async (t) => {
  // tsc -b decides "up to date" from the root files' times alone: an edited imported file that is
  // not a root left `npm start` serving the old code.
  const built = await building
  const roots = (JSON.parse(await listed(['--showConfig'])) as { files: string[] }).files.map(f => relative(ROOT, resolve(ROOT, f))).sort()
  t.same(roots, built)
})
