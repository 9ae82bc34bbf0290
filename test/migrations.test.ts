import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ROOT } from '../src/package-info.js'
import { createDb, type Db, type DbOptions } from '../src/db/dialect.js'
import { Migrator, sql } from '../src/db/kysely.js'
import { DatabaseAheadError, KIND_TABLE, MigrationError, migrateToLatest, migrations } from '../src/db/migrate.js'
import * as commentAuthorIndex from '../src/db/migrations/2026_11_29_0302_comment_author_index.js'
import { writeTimeIso } from '../src/db/clock.js'
import { getPost } from '../src/domain/posts.js'
import { dialect, freshDatabase, PG_URL, TEST_SECRET, whileMigrating } from './helper.js'
import pg from 'pg'

const DIR = join(ROOT, 'src/db/migrations')
const files = () => readdirSync(DIR).filter(f => f.endsWith('.ts')).sort()

// A migration is history: it stands alone, so an edit to live code or to another migration cannot
// change what it does on the next fresh database. Kysely is all it may name: types from `kysely`,
// values through src/db/kysely.ts (Kysely's one loader, re-exports and no code of its own).
const ALLOWED = new Set(['kysely', '../kysely.js'])

/** Every module a source text names: imports, re-exports (type-only too), `import('…')` and `require('…')`. */
function importsIn (text: string): string[] {
  const from = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/.source
  const bare = /(?:^|\n)\s*import\s+['"]([^'"]+)['"]/.source
  const call = /(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/.source
  return [...text.matchAll(new RegExp(`${from}|${bare}|${call}`, 'g'))]
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

// ---------------------------------------------------------------- a database ahead of the code

const NAMES = Object.keys(migrations).sort()

async function fresh (t: Test, log?: DbOptions['log']): Promise<{ db: Db, schema?: string }> {
  const { url, schema } = await freshDatabase(t)
  const db = createDb(url, { schema, log })
  t.teardown(() => db.destroy())
  return { db, schema }
}

/** What a newer release leaves behind: its migration in Kysely's table and its kind in ours. */
async function ranByNewerRelease (db: Db, name: string, kind?: 'expand' | 'contract') {
  await sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(db)
  if (kind) await sql`insert into ${sql.id(KIND_TABLE)} (name, kind) values (${name}, ${kind})`.execute(db)
}

t.test('a database ahead by expand-only migrations is served; one ahead by a contract migration is refused', async (t) => {
  const { db } = await fresh(t)
  t.same(await whileMigrating(() => migrateToLatest(db)), NAMES, 'a fresh database gets every migration')
  await ranByNewerRelease(db, '2099_01_01_0001_add_a_column', 'expand')
  await ranByNewerRelease(db, '2099_01_01_0002_add_an_index', 'expand')
  t.same(await whileMigrating(() => migrateToLatest(db)), [], 'expand-only: this release starts and applies nothing')

  await ranByNewerRelease(db, '2099_01_02_0001_drop_a_column', 'contract')
  const err = await whileMigrating(() => migrateToLatest(db)).catch(e => e)
  t.ok(err instanceof DatabaseAheadError && err instanceof MigrationError, 'refused as a failed migration (the server exits with its code)')
  t.match(err.message, /ahead of this release with migrations that are not expand-only: .*2099_01_02_0001_drop_a_column \(contract\)/)
  t.match(err.message, /start the release that migrated it/, 'and says what to do')
})

t.test('a database with migrations this release does not know and without some it needs is refused', async (t) => {
  const { db, schema } = await fresh(t)
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  t.error((await whileMigrating(() => migrator.migrateTo(NAMES.at(-2)!))).error)
  await ranByNewerRelease(db, '2099_01_01_0001_add_a_column', 'expand')
  const refused = new RegExp(`does not know \\(2099_01_01_0001_add_a_column \\(expand\\)\\) and lacks ${NAMES.at(-1)}`)
  await t.rejects(whileMigrating(() => migrateToLatest(db)), refused)
})

t.test('each migration from 2026_11_29_0300 on declares its kind and records it when it runs', async (t) => {
  const declared = NAMES.filter(name => name >= '2026_11_29_0300').map(name => ({ name, kind: migrations[name].kind }))
  t.ok(declared.length >= 3)
  for (const { name, kind } of declared) t.ok(kind === 'expand' || kind === 'contract', `${name}: ${kind}`)
  const { db } = await fresh(t)
  await whileMigrating(() => migrateToLatest(db))
  const rows = await sql<{ name: string, kind: string }>`select name, kind from ${sql.id(KIND_TABLE)} order by name`.execute(db)
  t.same(rows.rows, declared)
})

/** `src/server.ts` on `dataDir` until it listens (then stopped: exit 0) or exits by itself: its code and output. */
function serve (dataDir: string): Promise<{ code: number | null, out: string }> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env, ENVIRONMENT: 'test', JWT_SECRET: TEST_SECRET, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info'
    }
    delete env.DATABASE_URL // the SQLite file under DATA_DIR
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: ROOT, env })
    let out = ''
    const read = (c: Buffer) => {
      out += c
      if (out.includes('Server listening')) child.kill('SIGTERM')
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('close', code => resolve({ code, out }))
  })
}

// The rule is the same on both databases (checked above); the server's answer to it is checked once, on a SQLite file.
if (dialect === 'sqlite') {
  t.test('the server serves a database a newer release expanded, and exits 65 naming a contract migration it does not know', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'roja-ahead-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const db = createDb(`sqlite:${join(dataDir, 'roja.sqlite')}`)
    await migrateToLatest(db)
    await ranByNewerRelease(db, '2099_01_01_0001_add_a_column', 'expand')
    await db.destroy()
    const expanded = await serve(dataDir)
    t.equal(expanded.code, 0, 'it listened, then stopped on SIGTERM')
    t.match(expanded.out, /Server listening/)

    const again = createDb(`sqlite:${join(dataDir, 'roja.sqlite')}`)
    await ranByNewerRelease(again, '2099_01_02_0001_drop_a_column', 'contract')
    await again.destroy()
    const contracted = await serve(dataDir)
    t.equal(contracted.code, 65)
    const fatal = /"level":60.*ahead of this release with migrations that are not expand-only: .*2099_01_02_0001_drop_a_column \(contract\)/
    t.match(contracted.out, fatal, 'one fatal line names it')
  })
}

// ---------------------------------------------------------------- the schema change of 2026_11_29_03

async function withPosts (db: Db, bodies: string[]) {
  const now = writeTimeIso()
  await db.insertInto('user').values({
    id: 'c', username: 'c', email: 'c@example.com', password_hash: 'x', is_active: true, is_creator: true, created_at: now, updated_at: now
  }).execute()
  await db.insertInto('profile').values({
    id: 'c',
    first_name: 'C',
    last_name: null,
    age: null,
    favorite_band: null,
    website: null,
    avatar_url: null,
    created_at: now,
    updated_at: now
  }).execute()
  for (let i = 0; i < bodies.length; i += 400) {
    await db.insertInto('post').values(bodies.slice(i, i + 400).map((body, k) => ({
      id: `00000000-0000-4000-8000-${String(i + k).padStart(12, '0')}`,
      creator_id: 'c',
      type: 'ARTICLE' as const,
      slug: `p${i + k}`,
      title: 'p',
      body,
      tags: '[]',
      media_url: null,
      published_at: now,
      created_at: now,
      updated_at: now,
      sort_at: now
    }))).execute()
  }
}

t.test('2026_11_29_0301 counts the words of earlier posts in batches; a null the previous release leaves is counted on read', async (t) => {
  const updates: string[] = []
  const { db, schema } = await fresh(t, (e) => { if (/^update post set word_count/.test(e.query.sql)) updates.push(e.query.sql) })
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  t.error((await whileMigrating(() => migrator.migrateTo('2026_11_29_0300_migration_kind'))).error)
  const bodies = Array.from({ length: 1201 }, (_, i) => i % 3 === 0 ? '' : i % 3 === 1 ? ' one  two\nthree ' : 'Ünïcode words,  here')
  await withPosts(db, bodies)

  t.same(await whileMigrating(() => migrateToLatest(db)), ['2026_11_29_0301_post_word_count', '2026_11_29_0302_comment_author_index'])
  t.equal(updates.length, 3, '1201 posts in three batches of at most 500')
  const counts = await db.selectFrom('post').select(['id', 'word_count']).orderBy('id').execute()
  t.same(counts.map(r => r.word_count), bodies.map((_, i) => [0, 3, 3][i % 3]), 'each post its own count')

  // a post the previous release writes during the upgrade has no count: the new release counts it on read
  await db.updateTable('post').set({ word_count: null }).where('id', '=', counts[1].id).execute()
  t.equal((await getPost(db, counts[1].id, undefined)).word_count, 3)
})

if (dialect === 'postgres') {
  t.test('2026_11_29_0302 builds its index CONCURRENTLY on a table with rows, and rebuilds one a stopped build left invalid', async (t) => {
    const statements: string[] = []
    const { db, schema } = await fresh(t, (e) => { statements.push(e.query.sql) })
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
    t.error((await whileMigrating(() => migrator.migrateTo('2026_11_29_0301_post_word_count'))).error)
    await withPosts(db, ['a b', 'c'])
    const now = writeTimeIso()
    const post = '00000000-0000-4000-8000-000000000000'
    await db.insertInto('comment').values({ id: 'k', post_id: post, author_id: 'c', text: 'k', created_at: now, updated_at: now }).execute()
    const valid = async () => (await sql<{ valid: boolean }>`select i.indisvalid as valid
      from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname = 'comment_author_idx' and c.relnamespace = current_schema()::regnamespace`.execute(db)).rows.map(r => r.valid)

    // run alone, outside the migration lock: CONCURRENTLY waits for every open transaction, the tests' locks included
    statements.length = 0
    await commentAuthorIndex.up(db)
    t.ok(statements.some(q => q.startsWith('create index concurrently')), 'built concurrently')
    t.same(await valid(), [true])

    await sql`update pg_index set indisvalid = false where indexrelid = ${`${schema}.comment_author_idx`}::regclass`.execute(db)
    t.same(await valid(), [false], 'as a build stopped midway leaves it')
    await commentAuthorIndex.up(db)
    t.same(await valid(), [true], 'dropped and built again')
  })
}

if (dialect === 'postgres') {
  t.test('two processes migrating a new database at once both succeed, and each migration runs once', async (t) => {
    const name = `roja_migrate_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    t.teardown(async () => {
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    })
    const url = PG_URL.replace(/\/[^/]*$/, `/${name}`)
    const migrate = () => new Promise<{ code: number | null, out: string }>((resolve) => {
      const env = { ...process.env, DATABASE_URL: url, ENVIRONMENT: 'test' }
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], { cwd: ROOT, env })
      let out = ''
      child.stdout.on('data', (c) => { out += c })
      child.stderr.on('data', (c) => { out += c })
      child.once('close', code => resolve({ code, out }))
    })
    const runs = await Promise.all([migrate(), migrate()])
    if (!t.same(runs.map(r => r.code), [0, 0], 'both exit 0')) t.comment(runs.map(r => r.out.trim()).join('\n'))
    const applied = runs.flatMap(r => /^applied: (.*)$/m.exec(r.out)?.[1].split(', ') ?? [])
    t.same(applied.sort(), NAMES, 'between them, each migration applied once')
    t.ok(runs.some(r => /database is up to date/.test(r.out)), 'the other found them applied')
    const db = createDb(url)
    t.teardown(() => db.destroy())
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(db)
    t.equal(rows[0].n, NAMES.length)
  })
}
