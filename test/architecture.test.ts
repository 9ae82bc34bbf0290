import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { lexer, type Tokens } from 'marked'
import t from 'tap'
import { ROOT } from '../src/package-info.js'

// The layering, read from docs/development.md's "Allowed imports" table and checked over the
// import graph: the doc states the rules and this test enforces each row, so neither can drift.
const root = `${ROOT}/`

function files (dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter(e => e.isFile() && e.name.endsWith('.ts'))
    .map(e => relative(root, join(e.parentPath, e.name)))
}

function importsOf (file: string): string[] {
  return importsIn(readFileSync(join(root, file), 'utf8'))
}

/** Every module a source text names: imports and re-exports (type-only too) and `import('…')`. */
function importsIn (text: string): string[] {
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)].map(m => m[1] ?? m[2])
}

/** The repository-relative target of a relative import, or the package name of a bare one. */
function target (file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]
  return relative(root, join(root, file, '..', spec))
}

/** One row of the table: files under `module` may import ours only under `ours`, and no package of `never`. */
interface Rule { module: string, ours: string[], never: string[] }

/** The rows of the first table under a heading or paragraph that starts "Allowed imports". */
function rulesIn (markdown: string): Rule[] {
  const tokens = lexer(markdown, { gfm: true })
  const at = tokens.findIndex(tk => tk.type === 'paragraph' && tk.raw.startsWith('Allowed imports'))
  const table = tokens.slice(at + 1).find(tk => tk.type === 'table') as Tokens.Table | undefined
  if (at < 0 || table === undefined) return []
  const codes = (cell: Tokens.TableCell) => [...cell.text.matchAll(/`([^`]+)`/g)].map(m => m[1])
  return table.rows.map(row => ({ module: codes(row[0])[0], ours: codes(row[1]), never: codes(row[2]) }))
}

const within = (path: string, module: string) => module.endsWith('/') ? path.startsWith(module) : path === module
const packageMatches = (name: string, pattern: string) => pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern

/** What `file`'s imports break of the rules: `file imports spec`, one a line. */
function breaches (rules: Rule[], file: string, text: string): string[] {
  const rule = rules.filter(r => within(file, r.module)).sort((a, b) => b.module.length - a.module.length)[0]
  if (rule === undefined) return []
  return importsIn(text).filter(spec => {
    const to = target(file, spec)
    if (spec.startsWith('.')) return !rule.ours.some(m => within(to.replace(/\.js$/, '.ts'), m))
    return rule.never.some(p => packageMatches(to, p))
  }).map(spec => `${file} imports ${spec}`)
}

const RULES = rulesIn(readFileSync(join(root, 'docs/development.md'), 'utf8'))

t.test('docs/development.md\'s table of allowed imports holds over every runtime module', async (t) => {
  t.same(RULES.map(r => r.module), ['schemas/', 'src/db/', 'src/domain/', 'plugins/', 'src/routes/', 'src/'],
    'the rows the doc states')
  for (const rule of RULES) t.ok(rule.ours.includes(rule.module), `${rule.module} may import itself`)
  const runtime = ['schemas', 'plugins', 'src'].flatMap(files)
  t.ok(runtime.length > 100, `${runtime.length} modules`)
  t.same(runtime.flatMap(file => breaches(RULES, file, readFileSync(join(root, file), 'utf8'))), [])
})

t.test('the table\'s rules catch a planted violation of each kind', async (t) => {
  const planted = [
    "import fp from 'fastify-plugin'",
    "import type {\n  Reply\n} from 'fastify'",
    "import { auth } from '../../plugins/auth.js'",
    "import { AppError } from '../../schemas/problems.js'",
    "import { sql } from '../db/kysely.js'",
    "const r = await import('../routes/replies.js')"
  ].join('\n')
  t.same(breaches(RULES, 'src/domain/x.ts', planted), [
    'src/domain/x.ts imports fastify-plugin',
    'src/domain/x.ts imports fastify',
    'src/domain/x.ts imports ../../plugins/auth.js',
    'src/domain/x.ts imports ../routes/replies.js'
  ], 'a domain module that imports the framework, a plugin and a route')
  const domainInPlugin = "import { listPosts } from '../src/domain/posts.js'"
  t.same(breaches(RULES, 'plugins/x.ts', domainInPlugin), ['plugins/x.ts imports ../src/domain/posts.js'])
  t.same(breaches(RULES, 'src/db/x.ts', "export * from '../../test/helper.js'"), ['src/db/x.ts imports ../../test/helper.js'])
  t.same(breaches(RULES, 'src/routes/x.ts', "import { build } from '../app.js'"), ['src/routes/x.ts imports ../app.js'],
    'the longest module holding a file rules it')
  const looser = rulesIn('Allowed imports:\n\n| Module | Ours | Never |\n|---|---|---|\n| `plugins/` | `plugins/`, `src/domain/` | — |\n')
  t.same(breaches(looser, 'plugins/x.ts', domainInPlugin), [], 'the rules are the table\'s: change a row, the check follows')
})

t.test('the checker reads every form of import', async (t) => {
  const planted = [
    "import fp from 'fastify-plugin'",
    "import type {\n  Db\n} from '../src/db/dialect.js'",
    "export type { Account } from '../src/domain/users.js'",
    "type V = typeof import('../src/meta.js')",
    "import { queryChannel } from './db.js'"
  ].join('\n')
  t.same(importsIn(planted), ['fastify-plugin', '../src/db/dialect.js', '../src/domain/users.js', '../src/meta.js', './db.js'],
    'a multi-line type import, a type re-export and a `typeof import(…)`')
  t.equal(target('src/domain/posts.ts', '../../plugins/auth.js'), 'plugins/auth.js')
  t.equal(target('src/domain/posts.ts', '@fastify/jwt/x'), '@fastify/jwt')
  t.same(importsOf('src/domain/errors.ts'), ['../../schemas/problems.js'])
})

// Kysely's and TypeBox's values come through src/db/kysely.ts and schemas/typebox.ts: one place
// that decides which build is loaded, so no module loads a second copy beside it.
const LOADERS: Record<string, string> = { kysely: 'src/db/kysely.ts', '@sinclair/typebox': 'schemas/typebox.ts' }
const valueImports = (text: string) =>
  [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\s)[^'"]*?from\s+'(kysely|@sinclair\/typebox)(?:\/[^']*)?'|import\(\s*'(kysely|@sinclair\/typebox)'/g)].map(m => m[1] ?? m[2])

t.test('Kysely and TypeBox values come only through their loaders (one copy)', async (t) => {
  const offenders: string[] = []
  for (const file of ['src', 'plugins', 'schemas', 'scripts', 'test', 'bench'].flatMap(files).filter(f => !f.includes('/.tmp/'))) {
    for (const pkg of valueImports(readFileSync(join(root, file), 'utf8'))) if (LOADERS[pkg] !== file) offenders.push(`${file} imports ${pkg}`)
  }
  t.same(offenders, [])
  t.same(valueImports("import { sql, type Kysely } from 'kysely'\nimport type { Static } from '@sinclair/typebox'\nimport { Type } from " +
    "'@sinclair/typebox'"), ['kysely', '@sinclair/typebox'], 'the check sees a value import, not a type import')
})

/** The code of a module without its comments: a rule's reason may name a dialect, its code may not. */
const codeOf = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')

// src/db/ holds the dialect checks, error codes and paging devices (paging.ts, row-lock.ts, unique-violation.ts):
// the domain calls them by intent, so a domain file reads as Kysely and business rules.
const DEVICES = /\b(isPostgres|isSqlite|keysCap|readsKeysFirst|KEYS_FIRST_FROM|pageSize|forUpdate|skipLocked|postgres|sqlite|SQLITE_\w+|23505)\b/i

t.test('src/domain names no dialect and no paging device', async (t) => {
  const named = files('src/domain').flatMap(file => (codeOf(readFileSync(join(root, file), 'utf8')).match(DEVICES) ?? []).map(m => `${file}: ${m}`))
  t.same(named, [])
  t.same('const q = isPostgres(db) ? a : b // PostgreSQL keeps a plan'.match(DEVICES)?.[0], 'isPostgres', 'the check sees a dialect test')
  t.notOk(codeOf('// PostgreSQL keeps one plan\nconst x = 1').match(DEVICES), 'and lets a comment give its reason')
})
