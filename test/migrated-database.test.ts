import t, { type Test } from 'tap'
import { createDb, type Db } from '../src/db/dialect.js'
import { sql } from '../src/db/kysely.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { build, dialect, freshDatabase, migratedDatabase, whileMigrating, type TestDatabase } from './helper.js'

// The tests build their apps on copies of one migrated database (test/helper.ts): a copy must be
// the database that migrating gives, to the last index, trigger and row.

async function open (t: Test, database: TestDatabase): Promise<Db> {
  const db = createDb(database.url, { schema: database.schema, image: database.image })
  t.teardown(() => db.destroy())
  return db
}

async function rows (db: Db, query: ReturnType<typeof sql.raw>): Promise<unknown[]> {
  return (await query.execute(db)).rows
}

/** Everything migrating made in a database: its objects' definitions and its rows (when each migration ran left out). */
async function contents (db: Db, schema?: string): Promise<Record<string, unknown>> {
  const tables = dialect === 'postgres'
    ? (await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema() order by 1`.execute(db)).rows
    : (await sql<{ name: string }>`select name from sqlite_master where type = 'table' order by 1`.execute(db)).rows
  const data: Record<string, unknown> = {}
  for (const { name } of tables) {
    const all = (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db)).rows
    data[name] = all.map(row => name === 'kysely_migration' ? row.name : row).map(row => JSON.stringify(row)).sort()
  }
  const definitions = dialect === 'postgres'
    ? {
        columns: await rows(db, sql.raw(`select table_name, column_name, data_type, is_nullable, column_default, ordinal_position
          from information_schema.columns where table_schema = current_schema() order by 1, 2`)),
        constraints: await rows(db, sql.raw(`select conrelid::regclass::text as on, conname, pg_get_constraintdef(oid) as def, convalidated
          from pg_constraint where connamespace = current_schema()::regnamespace order by 1, 2`)),
        indexes: await rows(db, sql.raw('select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema() order by 1, 2')),
        triggers: await rows(db, sql.raw(`select tgrelid::regclass::text as on, tgname, pg_get_triggerdef(t.oid) as def from pg_trigger t
          join pg_class c on c.oid = t.tgrelid where c.relnamespace = current_schema()::regnamespace and not tgisinternal order by 1, 2`)),
        functions: await rows(db, sql.raw(`select proname, pg_get_function_identity_arguments(oid) as args, pg_get_functiondef(oid) as def
          from pg_proc where pronamespace = current_schema()::regnamespace order by 1, 2`)),
        sequences: await rows(db, sql.raw(`select sequencename, start_value, min_value, max_value, increment_by, last_value
          from pg_sequences where schemaname = current_schema() order by 1`))
      }
    : { objects: await rows(db, sql.raw('select type, name, tbl_name, sql from sqlite_master order by 1, 2')) }
  const text = JSON.stringify({ definitions, data })
  return JSON.parse(schema === undefined ? text : text.replaceAll(schema, '<schema>')) as Record<string, unknown>
}

t.test(`a copy of the migrated database is what migrating a fresh one gives (${dialect})`, async t => {
  const first = await migratedDatabase(t) // on PostgreSQL the one migrated for real
  const copy = await migratedDatabase(t)
  t.not(copy.schema ?? copy.image, undefined, 'a copy (a schema of its own, or an image)')
  const fresh = await freshDatabase(t)
  const migrated = await open(t, fresh)
  t.ok((await whileMigrating(() => migrateToLatest(migrated))).length > 0, 'the fresh one migrates')
  const expected = await contents(migrated, fresh.schema)
  t.ok(Object.keys(expected.data as object).length > 10, 'tables to compare')
  t.same(await contents(await open(t, copy), copy.schema), expected, 'the copy')
  t.same(await contents(await open(t, first), first.schema), expected, 'the first, migrated in this process')
})

t.test('an app on a copy finds it up to date; on a fresh database it migrates', async t => {
  const logs: string[] = []
  await build(t, { logs, logLevel: 'info', database: await migratedDatabase(t) })
  await build(t, { logs, logLevel: 'info', database: await migratedDatabase(t) })
  t.equal(logs.filter(line => line.includes('migrations applied')).length, 0)
  await build(t, { logs, logLevel: 'info', database: await freshDatabase(t) })
  t.equal(logs.filter(line => line.includes('migrations applied')).length, 1)
})

t.test('a copy is a database of its own', async t => {
  const a = await open(t, await migratedDatabase(t))
  const b = await open(t, await migratedDatabase(t))
  const now = new Date().toISOString()
  const user = { id: 'u1', username: 'ada', email: 'ada@example.com', password_hash: 'x', is_active: true, is_creator: false }
  await a.insertInto('user').values({ ...user, created_at: now, updated_at: now }).execute()
  t.equal((await a.selectFrom('user').select('id').execute()).length, 1)
  t.equal((await b.selectFrom('user').select('id').execute()).length, 0, 'a write to one is not in another')
})
