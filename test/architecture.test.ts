import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { ROOT } from '../src/package-info.js'

// The layering, checked over the import graph (README, Architecture): schemas/ imports nothing of
// ours; plugins/ only schemas/ and itself; src/domain only schemas/, src/db/ and itself; nothing
// imports scripts/, bench/ or test/.
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

t.test('src/domain imports no web framework: only schemas/, src/db/, itself and plain libraries', async (t) => {
  const domain = files('src/domain')
  t.ok(domain.length > 10, `${domain.length} domain modules`)
  for (const file of domain) {
    for (const spec of importsOf(file)) {
      const to = target(file, spec)
      const bad = to === 'fastify' || to.startsWith('@fastify/') || to.startsWith('fastify-') ||
        to.startsWith('plugins/') || to.startsWith('src/routes/') || to === 'src/app.js' || to === 'src/server.js'
      t.notOk(bad, `${file} imports ${spec}`)
    }
  }
})

t.test('schemas/ imports nothing from src/ or plugins/', async (t) => {
  for (const file of files('schemas')) {
    for (const spec of importsOf(file)) {
      const to = target(file, spec)
      t.notOk(to.startsWith('src/') || to.startsWith('plugins/'), `${file} imports ${spec}`)
    }
  }
})

/** What a plugin's text imports from src/: the app hands plugins its parts through their options. */
function fromSrc (file: string, text: string): string[] {
  return importsIn(text).filter(spec => target(file, spec).startsWith('src/'))
}

t.test('plugins/ imports nothing from src/, type imports included', async (t) => {
  const plugins = files('plugins')
  t.ok(plugins.length > 10, `${plugins.length} plugins`)
  for (const file of plugins) t.same(fromSrc(file, readFileSync(join(root, file), 'utf8')), [], file)
  const planted = "import fp from 'fastify-plugin'\nimport type {\n  Db\n} from '../src/db/dialect.js'\n" +
    "export type { Account } from '../src/domain/users.js'\ntype V = typeof import('../src/meta.js')\nimport { queryChannel } from './db.js'"
  t.same(fromSrc('plugins/x.ts', planted), ['../src/db/dialect.js', '../src/domain/users.js', '../src/meta.js'],
    'the check sees a multi-line type import, a type re-export and a `typeof import(…)`')
})

t.test('the runtime (src/, plugins/, schemas/) imports no tooling: scripts/, bench/, test/', async (t) => {
  for (const file of [...files('src'), ...files('plugins'), ...files('schemas')]) {
    for (const spec of importsOf(file)) {
      const to = target(file, spec)
      t.notOk(/^(scripts|bench|test)\//.test(to), `${file} imports ${spec}`)
    }
  }
})

t.test('the checker itself sees a forbidden import', async (t) => {
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
  t.same(valueImports("import { sql, type Kysely } from 'kysely'\nimport type { Static } from '@sinclair/typebox'\nimport { Type } from '@sinclair/typebox'"), ['kysely', '@sinclair/typebox'], 'the check sees a value import, not a type import')
})

/** The code of a module without its comments: a rule's reason may name a dialect, its code may not. */
const codeOf = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')

// src/db/ holds the dialect checks and the paging devices (src/db/paging.ts, src/db/row-lock.ts):
// the domain calls them by intent, so a domain file reads as Kysely and business rules.
const DEVICES = /\b(isPostgres|isSqlite|keysCap|readsKeysFirst|KEYS_FIRST_FROM|pageSize|forUpdate|skipLocked|postgres|sqlite)\b/i

t.test('src/domain names no dialect and no paging device', async (t) => {
  const named = files('src/domain').flatMap(file => (codeOf(readFileSync(join(root, file), 'utf8')).match(DEVICES) ?? []).map(m => `${file}: ${m}`))
  t.same(named, [])
  t.same('const q = isPostgres(db) ? a : b // PostgreSQL keeps a plan'.match(DEVICES)?.[0], 'isPostgres', 'the check sees a dialect test')
  t.notOk(codeOf('// PostgreSQL keeps one plan\nconst x = 1').match(DEVICES), 'and lets a comment give its reason')
})
