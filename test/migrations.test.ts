import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../src/package-info.js'
import { migrations } from '../src/db/migrate.js'

const DIR = join(ROOT, 'src/db/migrations')
const files = () => readdirSync(DIR).filter(f => f.endsWith('.ts')).sort()

// A migration is history: it stands alone, so an edit to live code or to another migration cannot
// change what it does on the next fresh database. Kysely is all it may name: types from `kysely`,
// values through src/db/kysely.ts (Kysely's one loader, re-exports and no code of its own).
const ALLOWED = new Set(['kysely', '../kysely.js'])

/** Every module a source text names: imports, re-exports (type-only too), `import('…')` and `require('…')`. */
function importsIn (text: string): string[] {
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g)]
    .map(m => m[1] ?? m[2] ?? m[3])
}

const foreign = (text: string) => importsIn(text).filter(spec => !ALLOWED.has(spec))

t.test('each migration stands alone: it imports Kysely and nothing else', async (t) => {
  const offenders = files().flatMap(f => foreign(readFileSync(join(DIR, f), 'utf8')).map(spec => `${f} imports ${spec}`))
  t.same(offenders, [])
})

t.test('the check sees every way of naming another module', async (t) => {
  t.same(foreign("import { sql, type Kysely } from '../kysely.js'\nimport type { Kysely } from 'kysely'"), [], 'Kysely passes')
  t.same(foreign("import { isPostgres } from '../dialect.js'"), ['../dialect.js'], 'live code')
  t.same(foreign("import * as old from './2026_11_21_0002_post_counter.js'"), ['./2026_11_21_0002_post_counter.js'], 'another migration')
  t.same(foreign("import type { Database } from '../schema.js'"), ['../schema.js'], 'a type-only import too')
  t.same(foreign("export { up } from './x.js'"), ['./x.js'], 'a re-export')
  t.same(foreign("const m = await import('./x.js')"), ['./x.js'], 'a dynamic import')
  t.same(foreign("import './side-effect.js'"), ['./side-effect.js'], 'a bare import')
  t.same(foreign("import { x } from 'kysely/helpers/postgres'"), ['kysely/helpers/postgres'], 'a module of Kysely other than its root')
})

t.test('every file in src/db/migrations is in the migration list, under its own name', async (t) => {
  t.same(Object.keys(migrations).sort(), files().map(f => f.replace(/\.ts$/, '')))
})
