import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Migrator, sql, type CompiledQuery } from '../src/db/kysely.js'
import t, { type Test } from 'tap'
import { createDb, isPostgres, PREPARED_STATEMENTS_MAX, type Db, type DbOptions, type Executor } from '../src/db/dialect.js'
import { cachedStatement, cachedStatementPerShape } from '../src/db/statement-cache.js'
import { compiledList, keysCap } from '../src/db/paging.js'
import { listPosts, listPostsAfter, VISIBLE_SORT_AT_SLACK_MS } from '../src/domain/posts.js'
import { seed } from '../scripts/seed.js'
import { migrateToLatest, migrations } from '../src/db/migrate.js'
import {
  formatDateTime,
  formatNullableDateTime,
  isLenientDateTime,
  isoFromUtcTimestampText,
  parseDateTimeInput,
  toDate
} from '../src/db/date-time-format.js'
import { clockIso, writeTimeIso } from '../src/db/clock.js'
import { createAjv } from '../src/options.js'
import { dialect, freshDatabase, testConfig, whileMigrating } from './helper.js'

/** A migrated database of this run's dialect, destroyed at teardown; `log` sees every query. */
async function openDb (t: Test, { migrate = true, log }: { migrate?: boolean; log?: DbOptions['log'] } = {}): Promise<Db> {
  const { url, schema } = await freshDatabase(t)
  const db = createDb(url, { schema, log })
  t.teardown(() => db.destroy())
  if (migrate) await whileMigrating(() => migrateToLatest(db))
  return db
}

/** A fresh database of this run's dialect migrated up to `name` and no further, and its migrator. */
async function migratedTo (t: Test, name: string): Promise<{ db: Db; migrator: Migrator; schema?: string }> {
  const { url, schema } = await freshDatabase(t)
  const db = createDb(url, { schema })
  t.teardown(() => db.destroy())
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  t.error((await whileMigrating(() => migrator.migrateTo(name))).error, `migrated to ${name}`)
  return { db, migrator, schema }
}

async function insertUser (db: Executor, id: string, flags: { is_active: boolean; is_creator: boolean }) {
  const now = writeTimeIso()
  await db
    .insertInto('user')
    .values({
      id,
      username: `u-${id}`,
      email: `${id}@example.com`,
      password_hash: 'x',
      ...flags,
      created_at: now,
      updated_at: now
    })
    .execute()
}

t.test(`migrations apply on ${dialect} and a second run applies nothing`, async t => {
  const db = await openDb(t, { migrate: false })
  t.equal(isPostgres(db), dialect === 'postgres', 'the dialect this run asked for')
  const first = await whileMigrating(() => migrateToLatest(db))
  t.same(first, Object.keys(migrations), 'every migration, in order')
  t.same(await whileMigrating(() => migrateToLatest(db)), [], 'idempotent')
  const tables = (await db.introspection.getTables()).map(t => t.name)
  for (const table of [
    'user',
    'profile',
    'post',
    'post_tag',
    'review',
    'comment',
    'alert',
    'outbox_message',
    'idempotency_key',
    'media',
    'shop',
    'product',
    'chapter',
    'lesson',
    'class',
    'student'
  ]) {
    t.ok(tables.includes(table), `table ${table}`)
  }
  for (const name of Object.keys(migrations)) t.match(name, /^\d{4}_\d{2}_\d{2}_\d{4}_[a-z0-9_]+$/, `${name} is a date_slug name`)
})

t.test('2026_11_23_0200_email_verified_at: existing accounts start unverified; down removes the column', async t => {
  const { db, migrator, schema } = await migratedTo(t, '2026_11_23_0100_token_generation')
  await insertUser(db, 'old', { is_active: true, is_creator: false })
  // PostgreSQL's introspection reads every schema, and other files' schemas have a migrated user table
  const userColumns = async () => (await db.introspection.getTables()).find(t => t.name === 'user' && t.schema === schema)!.columns.map(c => c.name)
  t.notOk((await userColumns()).includes('email_verified_at'), 'not there before')

  const up = await whileMigrating(() => migrator.migrateTo('2026_11_23_0200_email_verified_at'))
  t.error(up.error)
  t.same(
    up.results?.map(r => r.migrationName),
    ['2026_11_23_0200_email_verified_at']
  )
  const row = await db.selectFrom('user').select('email_verified_at').where('id', '=', 'old').executeTakeFirstOrThrow()
  t.equal(row.email_verified_at, null, 'an account from before is unverified')
  await db.updateTable('user').set({ email_verified_at: '2026-11-23T12:00:00.000Z' }).where('id', '=', 'old').execute()
  const set = await db.selectFrom('user').select('email_verified_at').where('id', '=', 'old').executeTakeFirstOrThrow()
  t.equal(formatDateTime(set.email_verified_at!), '2026-11-23T12:00:00+0000', 'a date-time on both dialects')

  const down = await whileMigrating(() => migrator.migrateDown())
  t.error(down.error)
  t.notOk((await userColumns()).includes('email_verified_at'), 'down drops it')
  t.ok(await db.selectFrom('user').select('id').where('id', '=', 'old').executeTakeFirst(), 'and keeps the account')
})

t.test('2026_11_28_0001_post_schedule: posts already due on a later day are counted into their days; down drops the table', async t => {
  const { db, migrator, schema } = await migratedTo(t, '2026_11_27_0200_media_upload')
  await insertUser(db, 'c', { is_active: true, is_creator: true })
  const day = 86_400_000
  const today = Math.floor(Date.now() / day) * day
  const written = writeTimeIso()
  const post = (slug: string, type: 'ARTICLE' | 'COURSE', publishedAt: string | null) => ({
    id: `00000000-0000-4000-8000-${slug.padStart(12, '0')}`,
    creator_id: 'c',
    type,
    slug,
    title: slug,
    body: '',
    tags: '[]',
    media_url: null,
    published_at: publishedAt,
    created_at: written,
    updated_at: written,
    sort_at: written
  })
  await db
    .insertInto('post')
    .values([
      post('1', 'ARTICLE', written),
      post('2', 'ARTICLE', null),
      post('3', 'ARTICLE', new Date(today + day - 1).toISOString()),
      post('4', 'ARTICLE', new Date(today + day).toISOString()),
      post('5', 'COURSE', new Date(today + 3 * day + 5).toISOString()),
      post('6', 'ARTICLE', new Date(today + 3 * day).toISOString()),
      post('7', 'COURSE', '2099-01-01T00:00:00.000Z')
    ])
    .execute()

  t.error((await whileMigrating(() => migrator.migrateTo('2026_11_28_0001_post_schedule'))).error)
  const rows = (await db.selectFrom('post_schedule').select(['day', 'type', 'scheduled']).orderBy('day').orderBy('type').execute()).map(r => ({
    ...r,
    scheduled: Number(r.scheduled)
  }))
  const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  t.same(
    rows,
    [
      { day: dayOf(today + day), type: 'ARTICLE', scheduled: 1 },
      { day: dayOf(today + 3 * day), type: 'ARTICLE', scheduled: 1 },
      { day: dayOf(today + 3 * day), type: 'COURSE', scheduled: 1 },
      { day: '2099-01-01', type: 'COURSE', scheduled: 1 }
    ],
    'each post due after today, in its UTC day and type; none for today, a draft or a published post'
  )

  t.error((await whileMigrating(() => migrator.migrateDown())).error)
  const tables = (await db.introspection.getTables()).filter(table => table.schema === schema || !isPostgres(db)).map(table => table.name)
  t.notOk(tables.includes('post_schedule'), 'down drops it')
  await db
    .insertInto('post')
    .values(post('8', 'ARTICLE', '2099-01-01T00:00:00.000Z'))
    .execute()
  t.pass('and a post written after down needs no table of it')
})

t.test('a second process migrating the same database finds it up to date', async t => {
  // in-memory SQLite is one database per connection: use a file to share it
  const { url, schema } =
    dialect === 'sqlite'
      ? { url: `sqlite:${join(mkdtempSync(join(tmpdir(), 'roja-db-')), 'roja.sqlite')}`, schema: undefined }
      : await freshDatabase(t)
  if (dialect === 'sqlite') t.teardown(() => rmSync(url.slice('sqlite:'.length, -'/roja.sqlite'.length), { recursive: true, force: true }))
  const a = createDb(url, { schema })
  t.teardown(() => a.destroy())
  t.ok((await whileMigrating(() => migrateToLatest(a))).length > 0)
  const b = createDb(url, { schema })
  t.teardown(() => b.destroy())
  t.same(await whileMigrating(() => migrateToLatest(b)), [])
})

t.test('one migration behind, it is applied and recorded; up to date, a start reads the list and skips the Migrator', async t => {
  const { url, schema } = await freshDatabase(t)
  const queries: string[] = []
  const db = createDb(url, {
    schema,
    log: event => {
      queries.push(event.query.sql)
    }
  })
  t.teardown(() => db.destroy())
  const names = Object.keys(migrations)
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  t.error((await whileMigrating(() => migrator.migrateTo(names.at(-2)!))).error)

  queries.length = 0
  t.same(await whileMigrating(() => migrateToLatest(db)), [names.at(-1)], 'the missing one is applied')
  // through the Migrator, or (transaction = false) alone on the connection, recorded as the Migrator records
  t.ok(
    queries.some(q => q.includes('kysely_migration_lock') || /insert into .*kysely_migration/.test(q)),
    "and recorded in Kysely's table"
  )
  queries.length = 0
  t.same(await whileMigrating(() => migrateToLatest(db)), [], 'then nothing to do')
  t.notOk(
    queries.some(q => q.includes('kysely_migration_lock')),
    'and no Migrator'
  )
  t.ok(queries.length <= 2, `${queries.length} queries`)
})

// Several instances on one database is the PostgreSQL deployment (SQLite is one process's file).
if (dialect === 'postgres') {
  t.test('instances starting at once on a new database: each migration applied once, all of them up to date', async t => {
    const { url, schema } = await freshDatabase(t)
    const dbs = [1, 2, 3].map(() => createDb(url, { schema }))
    t.teardown(() => Promise.all(dbs.map(db => db.destroy())))
    const applied = await whileMigrating(() => Promise.all(dbs.map(db => migrateToLatest(db))))
    t.same(applied.flat().sort(), Object.keys(migrations), 'each once')
    t.same(await Promise.all(dbs.map(db => migrateToLatest(db))), [[], [], []], 'then up to date for every one')
  })

  t.test('2026_11_25_0001_post_counter_slot_sequence: new slots number on from the highest; down restores max(slot) + 1', async t => {
    const { db, migrator } = await migratedTo(t, '2026_11_23_0400_post_published_at_type')
    await db
      .insertInto('post_counter')
      .values([
        { type: 'ARTICLE', slot: 0, published: 2 },
        { type: 'COURSE', slot: 4, published: 1 }
      ])
      .execute()
    const addSource = async () =>
      (
        await sql<{
          prosrc: string
        }>`select prosrc from pg_proc where proname = 'post_counter_add' and pronamespace = current_schema()::regnamespace`.execute(db)
      ).rows[0].prosrc

    t.error((await whileMigrating(() => migrator.migrateTo('2026_11_25_0001_post_counter_slot_sequence'))).error)
    t.match(await addSource(), /nextval\('post_counter_slot_seq'\)/, 'a held slot is followed by one from the sequence')
    const next = await sql<{ slot: string }>`select nextval('post_counter_slot_seq') as slot`.execute(db)
    t.equal(Number(next.rows[0].slot), 5, 'the first new slot is past every existing one, of any type')

    t.error((await whileMigrating(() => migrator.migrateDown())).error)
    t.match(await addSource(), /coalesce\(max\(slot\), -1\) \+ 1/, 'down numbers new slots as before')
    const left = await sql<{ seq: string | null }>`select to_regclass('post_counter_slot_seq')::text as seq`.execute(db)
    t.equal(left.rows[0].seq, null, 'and drops the sequence')
  })
}

t.test('a database migrated by a newer release with a migration of no recorded kind fails the start', async t => {
  const db = await openDb(t)
  await sql`insert into kysely_migration (name, timestamp) values ('2099_01_01_0001_from_a_newer_release', ${new Date().toISOString()})`.execute(db)
  await t.rejects(
    whileMigrating(() => migrateToLatest(db)),
    /ahead of this release .*not expand-only: 2099_01_01_0001_from_a_newer_release \(unrecorded\)/
  )
})

t.test('SQLite files run in WAL mode with foreign keys on', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'roja-db-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const db = createDb(`sqlite:${join(dir, 'nested', 'roja.sqlite')}`)
  t.teardown(() => db.destroy())
  const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)
  t.equal(mode.rows[0].journal_mode, 'wal')
  const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)
  t.equal(fk.rows[0].foreign_keys, 1)
})

t.test('booleans written as JS booleans round-trip and filter on both dialects', async t => {
  const db = await openDb(t)
  await insertUser(db, 'a', { is_active: true, is_creator: false })
  await insertUser(db, 'b', { is_active: false, is_creator: true })
  const rows = await db.selectFrom('user').select(['id', 'is_active', 'is_creator']).orderBy('id').execute()
  t.same(
    rows.map(r => [r.id, Boolean(r.is_active), Boolean(r.is_creator)]),
    [
      ['a', true, false],
      ['b', false, true]
    ]
  )
  const active = await db.selectFrom('user').select('id').where('is_active', '=', true).execute()
  t.same(
    active.map(r => r.id),
    ['a'],
    'a boolean in a where clause'
  )
  await db.updateTable('user').set({ is_creator: true }).where('id', '=', 'a').execute()
  const creators = await db.selectFrom('user').select('id').where('is_creator', '=', true).orderBy('id').execute()
  t.same(
    creators.map(r => r.id),
    ['a', 'b'],
    'a boolean in an update'
  )
})

t.test('timestamps written as ISO text read back to the output format on both dialects', async t => {
  const db = await openDb(t)
  await insertUser(db, 'a', { is_active: true, is_creator: false })
  await db.updateTable('user').set({ created_at: '2026-03-01T10:20:30.456Z' }).where('id', '=', 'a').execute()
  const row = await db.selectFrom('user').select('created_at').where('id', '=', 'a').executeTakeFirstOrThrow()
  t.equal(row.created_at, '2026-03-01T10:20:30.456Z', 'the ISO text written, on both dialects')
  t.equal(formatDateTime(row.created_at), '2026-03-01T10:20:30+0000')
})

if (dialect === 'sqlite') {
  // The one connection is handed from holder to waiter: a query that came later must never run
  // inside another's transaction, and a failed query must still hand it on.
  t.test('SQLite: queries wait out a transaction on the one connection, then run in the order they came', async t => {
    const db = await openDb(t)
    await insertUser(db, 'a', { is_active: true, is_creator: false })
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('user')
            .select(eb => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n
      )
    const finished: string[] = []
    const waiters: Array<Promise<number>> = []
    await t.rejects(
      db.transaction().execute(async trx => {
        await insertUser(trx, 'tx', { is_active: true, is_creator: false })
        for (const name of ['first', 'second', 'third']) {
          waiters.push(
            count().then(n => {
              finished.push(name)
              return n
            })
          )
        }
        await new Promise(resolve => setTimeout(resolve, 20)) // the transaction holds on while they wait
        t.same(finished, [], 'no query ran while the transaction held the connection')
        t.equal(
          Number(
            (
              await trx
                .selectFrom('user')
                .select(eb => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n
          ),
          2,
          'the transaction sees its own row'
        )
        throw new Error('roll back')
      }),
      /roll back/
    )
    t.same(await Promise.all(waiters), [1, 1, 1], "each saw the rolled-back state, not the transaction's row")
    t.same(finished, ['first', 'second', 'third'], 'in the order they came')
    const failing = db
      .selectFrom('no_such_table' as 'user')
      .selectAll()
      .execute()
    const after = count()
    await t.rejects(failing, /no such table/)
    t.equal(await after, 1, 'a failed query hands the connection on')
    const { numUpdatedRows } = await db.updateTable('user').set({ is_creator: true }).where('id', '=', 'a').executeTakeFirstOrThrow()
    t.equal(numUpdatedRows, 1n, 'a write reports the rows it changed')
    const streamed: string[] = []
    for await (const row of db.selectFrom('user').select('id').stream()) streamed.push(row.id)
    t.same(streamed, ['a'], 'a select streams')
  })
}

t.test('a transaction logs each statement from begin to commit, rolls back what fails, and cannot be used once ended', async t => {
  const logged: string[] = []
  const db = await openDb(t, { log: event => { if (event.queryDurationMillis >= 0) logged.push(`${event.level} ${event.query.sql.split(' ')[0]}`) } })
  logged.length = 0
  let kept: Executor | undefined
  const ids = await db.transaction().execute(async trx => {
    kept = trx
    await insertUser(trx, 'a', { is_active: true, is_creator: false })
    // two queries at once in one transaction: each runs whole, in turn
    return Promise.all([trx.selectFrom('user').select('id').execute(), trx.selectFrom('user').select('id').execute()])
  })
  t.same(ids, [[{ id: 'a' }], [{ id: 'a' }]], 'both queries saw the insert')
  t.same(logged, ['query begin', 'query insert', 'query select', 'query select', 'query commit'], 'every statement logged, in order')
  await t.rejects(kept!.selectFrom('user').selectAll().execute(), /already committed or rolled back/, 'a committed transaction refuses a query')

  logged.length = 0
  await t.rejects(db.transaction().execute(async trx => {
    await insertUser(trx, 'b', { is_active: true, is_creator: false })
    await insertUser(trx, 'a', { is_active: true, is_creator: false }) // the same id: a constraint fails
  }), /UNIQUE constraint failed|duplicate key value/)
  t.same(logged, ['query begin', 'query insert', 'error insert', 'query rollback'], 'the failing statement logged as an error, then rolled back')
  const rows = await db.selectFrom('user').select('id').orderBy('id').execute()
  t.same(rows, [{ id: 'a' }], 'nothing of the failed transaction stayed, and the connection was handed on')
})

t.test('a database destroyed twice closes once; a query after fails', async t => {
  const { url, schema } = await freshDatabase(t)
  const db = createDb(url, { schema })
  await db.selectNoFrom(eb => eb.lit(1).as('one')).execute()
  await db.destroy()
  await t.resolves(db.destroy(), 'the second destroy is quiet')
  await t.rejects(db.selectNoFrom(eb => eb.lit(1).as('one')).execute(), 'a query on a destroyed database fails')
})

if (dialect === 'postgres') {
  t.test('PostgreSQL: a statement that takes values is prepared once per connection; without values, or past the cap, it is not', async t => {
    const { url, schema } = await freshDatabase(t)
    const db = createDb(url, { schema, poolSize: 1 }) // one connection: pg_prepared_statements is per session
    t.teardown(() => db.destroy())
    const prepared = async () =>
      (
        await sql<{ statement: string; runs: number }>`select statement, generic_plans + custom_plans as runs
      from pg_prepared_statements order by prepare_time`.execute(db)
      ).rows.map(r => ({ statement: r.statement, runs: Number(r.runs) }))
    const plus = (text: string, n: number) => sql<{ n: number }>`select ${n}::int + ${sql.raw(text)} as n`.execute(db)

    t.same((await plus('1', 41)).rows, [{ n: 42 }])
    t.same((await plus('1', 1)).rows, [{ n: 2 }])
    t.same(await prepared(), [{ statement: 'select $1::int + 1 as n', runs: 2 }], 'one statement, run twice by its name')
    t.same((await sql<{ n: number }>`select 1 + 1 as n`.execute(db)).rows, [{ n: 2 }])
    t.equal((await prepared()).length, 1, 'a statement without values is not prepared')

    // Up to the cap each new text is prepared; the next one runs unprepared, and right.
    for (let i = 2; i <= PREPARED_STATEMENTS_MAX; i++) await plus(String(i), 0)
    t.equal((await prepared()).length, PREPARED_STATEMENTS_MAX, `the ${PREPARED_STATEMENTS_MAX}th text is prepared`)
    t.same((await plus(String(PREPARED_STATEMENTS_MAX + 1), 1)).rows, [{ n: PREPARED_STATEMENTS_MAX + 2 }], 'the next text still runs')
    t.equal((await prepared()).length, PREPARED_STATEMENTS_MAX, 'unprepared: the connection holds no more than the cap')
    t.same((await plus('1', 7)).rows, [{ n: 8 }], 'a prepared text still runs by its name past the cap')
    t.equal((await prepared())[0].runs, 3)
  })

  t.test("PostgreSQL: a failed statement throws PostgreSQL's error as it came, with the query's callers on its stack", async t => {
    const db = await openDb(t, { migrate: false })
    async function theCallerOfTheQuery () {
      await sql`select ${1}::int from no_such_table`.execute(db)
    }
    const err = await theCallerOfTheQuery().then(
      () => undefined,
      (e: Error & { code?: string }) => e
    )
    t.equal(err?.code, '42P01', 'undefined_table')
    t.match(err?.stack, /theCallerOfTheQuery/, 'the stack names where the query came from')
  })

  t.test('PostgreSQL: sessions run in UTC; timestamptz reads as ISO text from any zone, microseconds truncated', async t => {
    const db = await openDb(t)
    const zone = await sql<{ zone: string }>`select current_setting('TimeZone') as zone`.execute(db)
    t.equal(zone.rows[0].zone, 'UTC', 'each new connection is set to UTC')
    await insertUser(db, 'a', { is_active: true, is_creator: false })
    await sql`update "user" set created_at = '2026-03-01 10:20:30.456789+00', updated_at = '0001-01-01 00:00:00+00' where id = 'a'`.execute(db)
    const read = () => db.selectFrom('user').select(['created_at', 'updated_at']).where('id', '=', 'a').executeTakeFirstOrThrow()
    t.same(await read(), { created_at: '2026-03-01T10:20:30.456Z', updated_at: '0001-01-01T00:00:00.000Z' }, 'cut from the UTC text')
    // Another zone (a pooler that dropped the SET, a server's own setting): pg's own parser reads it.
    const other = await db.transaction().execute(async trx => {
      await sql`set local time zone 'Asia/Kolkata'`.execute(trx)
      return trx.selectFrom('user').select(['created_at', 'updated_at']).where('id', '=', 'a').executeTakeFirstOrThrow()
    })
    t.same(other, { created_at: '2026-03-01T10:20:30.456Z', updated_at: '0001-01-01T00:00:00.000Z' }, 'the same instant from +05:30 text')
  })
}

t.test('isoFromUtcTimestampText: a UTC timestamptz text cut to ISO text; other forms left to a parser', async t => {
  t.equal(isoFromUtcTimestampText('2026-11-25 18:22:35.221456+00'), '2026-11-25T18:22:35.221Z', 'microseconds truncated')
  t.equal(isoFromUtcTimestampText('2026-11-25 18:22:35.999999+00'), '2026-11-25T18:22:35.999Z', 'truncated, not rounded')
  t.equal(isoFromUtcTimestampText('2026-11-25 18:22:35.221+00'), '2026-11-25T18:22:35.221Z')
  t.equal(isoFromUtcTimestampText('2026-11-25 18:22:35.2+00'), '2026-11-25T18:22:35.200Z', 'a short fraction is padded')
  t.equal(isoFromUtcTimestampText('2026-11-25 18:22:35+00'), '2026-11-25T18:22:35.000Z', 'no fraction')
  t.equal(isoFromUtcTimestampText('0001-01-01 00:00:00+00'), '0001-01-01T00:00:00.000Z')
  for (const other of [
    '2026-11-25 19:22:35.221+01',
    '2026-11-25 23:52:35.221+05:30',
    '2026-11-25 18:22:35-00:30',
    '0044-03-15 12:00:00+00 BC',
    '12026-11-25 18:22:35+00',
    'infinity',
    '2026-11-25T18:22:35.221Z',
    '2026-11-25 18:22+00'
  ]) {
    t.equal(isoFromUtcTimestampText(other), undefined, other)
  }
})

t.test('formatDateTime: UTC, colon-less offset, no fraction', async t => {
  t.equal(formatDateTime(new Date(Date.UTC(2026, 10, 21, 9, 30, 5, 999))), '2026-11-21T09:30:05+0000')
  t.equal(formatDateTime('2026-11-21T09:30:05.999Z'), '2026-11-21T09:30:05+0000', 'the fraction is dropped, not rounded')
  t.equal(formatDateTime('2026-11-21T01:30:00+02:00'), '2026-11-20T23:30:00+0000', 'other zones become UTC')
  t.equal(formatDateTime('2026-11-21T01:30:00+0200'), '2026-11-20T23:30:00+0000', 'as long as the stored UTC form, but another zone: parsed')
  t.equal(formatNullableDateTime(null), null)
  t.equal(formatNullableDateTime('2026-01-01T00:00:00Z'), '2026-01-01T00:00:00+0000')
  t.match(formatDateTime(writeTimeIso()), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)
  t.equal(toDate('2026-01-01T00:00:00.000Z').getTime(), Date.UTC(2026, 0, 1))
})

t.test('parseDateTimeInput: any RFC 3339 zone, no zone means UTC, the fraction is dropped', async t => {
  const cases: Array<[string, string]> = [
    ['2026-03-01T10:00:00Z', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00z', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01t10:00:00Z', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01 10:00:00Z', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00+00:00', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00-00:00', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00+05:30', '2026-03-01T04:30:00.000Z'],
    ['2026-03-01T10:00:00+0530', '2026-03-01T04:30:00.000Z'],
    ['2026-03-01T10:00:00-08:00', '2026-03-01T18:00:00.000Z'],
    ['2026-03-01T00:30:00+01:00', '2026-02-28T23:30:00.000Z'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01T00:30:00.000Z'],
    ['2026-03-01T10:00:00.999Z', '2026-03-01T10:00:00.000Z'],
    ['2026-03-01T10:00:00.123456789+02:00', '2026-03-01T08:00:00.000Z'],
    ['2026-03-01T10:00:00.5', '2026-03-01T10:00:00.000Z'],
    ['2028-02-29T12:00:00Z', '2028-02-29T12:00:00.000Z']
  ]
  for (const [input, expected] of cases) {
    t.ok(isLenientDateTime(input), `${input} is accepted`)
    t.equal(parseDateTimeInput(input), expected, input)
  }
  t.equal(formatDateTime(parseDateTimeInput('2026-03-01T10:00:00.999+0530')), '2026-03-01T04:30:00+0000', 'input to output')
})

t.test('isLenientDateTime refuses what is not a real date-time', async t => {
  const refused = [
    '',
    '2026-03-01',
    '10:00:00',
    '2026-03-01T10:00Z',
    '2026-03-01T10:00:00+05',
    '2026-03-01T10:00:00+5:30',
    '2026-03-01T10:00:00 Z',
    ' 2026-03-01T10:00:00Z',
    '2026-03-01T10:00:00Z ',
    '2026-3-1T10:00:00Z',
    '20260301T100000Z',
    '2026-02-29T10:00:00Z',
    '2026-02-30T10:00:00Z',
    '2026-04-31T10:00:00Z',
    '2026-00-10T10:00:00Z',
    '2026-13-01T10:00:00Z',
    '2026-03-00T10:00:00Z',
    '2026-03-32T10:00:00Z',
    '2026-03-01T24:00:00Z',
    '2026-03-01T10:60:00Z',
    '2026-03-01T10:00:61Z',
    '2026-03-01T10:00:00+24:00',
    '2026-03-01T10:00:00+05:60',
    '2026-03-01T10:00:00.Z',
    'tomorrow',
    '1772359200'
  ]
  for (const value of refused) {
    t.notOk(isLenientDateTime(value), JSON.stringify(value))
    t.throws(() => parseDateTimeInput(value), `${JSON.stringify(value)} does not parse either`)
  }
  t.ok(isLenientDateTime('2026-03-01T23:59:59+23:59'), 'the upper bounds themselves are fine')
  t.ok(isLenientDateTime('2026-12-31T10:00:00Z'))
  t.ok(isLenientDateTime('2026-06-30T10:00:00Z'))
})

t.test('the lenient-date-time format validates like isLenientDateTime', async t => {
  const ajv = createAjv({ allowedMediaHosts: [] })
  const validate = ajv.compile({ type: 'string', format: 'lenient-date-time' })
  t.ok(validate('2026-03-01T10:00:00+0530'))
  t.ok(validate('2026-03-01T10:00:00'))
  t.notOk(validate('2026-02-30T10:00:00Z'))
  t.notOk(validate('2026-03-01'))
})

t.test('cachedStatement answers as the query builder does, for each value, in and out of a transaction', async t => {
  const db = await openDb(t)
  await insertUser(db, 'a1', { is_active: true, is_creator: true })
  await insertUser(db, 'a2', { is_active: true, is_creator: false })
  await insertUser(db, 'a3', { is_active: false, is_creator: true })
  // a constant value (a boolean, bound as 0/1 on SQLite) between the placeholders keeps its place
  const build = (d: Db, active: string, id: string) =>
    d.selectFrom('user').select(['id', 'is_creator']).where('is_active', '=', true).where('username', '!=', active).where('id', '=', id)
  const byId = cachedStatement(build)
  for (const id of ['a1', 'a2', 'a3', 'missing', 'a1']) {
    t.same(await byId(db, 'u-none', id), await build(db, 'u-none', id).execute(), `id ${id}`)
  }
  t.same(await byId(db, 'u-a1', 'a1'), [], 'the first placeholder is bound too')
  await db.transaction().execute(async trx => {
    await trx.updateTable('user').set({ is_creator: false }).where('id', '=', 'a1').execute()
    t.same(
      (await byId(trx, 'u-none', 'a1')).map(r => Boolean(r.is_creator)),
      [false],
      "sees the transaction's own write"
    )
  })
})

t.test('cachedStatement refuses a query that does not use a placeholder as a value', async t => {
  const db = await openDb(t)
  const lower = cachedStatement((d: Db, name: string) => d.selectFrom('user').select('id').where('username', 'like', `${name}%`))
  await t.rejects(lower(db, 'X'), /placeholder .* is not a value of the query/)
})

t.test('cachedStatementPerShape: one compiled query per shape, each answering as the builder does', async t => {
  const db = await openDb(t)
  for (const [id, flags] of [
    ['b1', { is_active: true, is_creator: true }],
    ['b2', { is_active: true, is_creator: false }],
    ['b3', { is_active: false, is_creator: true }]
  ] as const) {
    await insertUser(db, id, flags)
  }
  type V = { creator?: boolean; ids?: string[]; after?: string; limit: number }
  const build = (d: Db, order: 'asc' | 'desc', v: V) => {
    let q = d.selectFrom('user').select(['id'])
    if (v.creator !== undefined) q = q.where('is_creator', '=', v.creator)
    if (v.ids !== undefined) q = q.where('id', 'in', v.ids)
    if (v.after !== undefined) q = q.where('id', order === 'asc' ? '>' : '<', v.after)
    return q.orderBy('id', order).limit(v.limit)
  }
  const compiled = cachedStatementPerShape(build)
  const cases: Array<['asc' | 'desc', V]> = [
    ['asc', { limit: 10 }],
    ['desc', { limit: 10 }],
    ['asc', { limit: 1 }],
    ['asc', { creator: true, limit: 10 }],
    ['asc', { creator: false, limit: 10 }],
    ['asc', { ids: ['b1'], limit: 10 }],
    ['asc', { ids: ['b2', 'b3'], limit: 10 }],
    ['asc', { ids: ['b3', 'x', 'b1'], limit: 10 }],
    ['asc', { ids: ['b1', 'b2', 'b3'], creator: true, after: 'b1', limit: 10 }],
    ['desc', { after: 'b3', limit: 10 }],
    ['asc', { creator: undefined, ids: undefined, limit: 2 }]
  ]
  // twice: the second pass runs every shape from its compiled entry
  for (const pass of [1, 2]) {
    for (const [order, v] of cases) { t.same(await compiled(db, order, v), await build(db, order, v).execute(), `pass ${pass}: ${order} ${JSON.stringify(v)}`) }
  }
})

t.test('cachedStatementPerShape refuses a value used for structure or transformed', async t => {
  const db = await openDb(t)
  const transformed = cachedStatementPerShape((d: Db, _: undefined, v: { name: string }) =>
    d.selectFrom('user').select('id').where('username', '=', v.name.toLowerCase())
  )
  await t.rejects(transformed(db, undefined, { name: 'X' }), /placeholder .*name is not a value of the query/)
  const structural = cachedStatementPerShape((d: Db, _: undefined, v: { column: string }) => d.selectFrom('user').select(v.column as 'id'))
  await t.rejects(structural(db, undefined, { column: 'id' }), /placeholder .*column is not a value of the query/)
})

t.test('compiledList: page and total as the builder gives them, for each filter shape and sort, plain and keyed', async t => {
  const db = await openDb(t)
  for (let i = 0; i < 7; i++) await insertUser(db, `c${i}`, { is_active: i % 2 === 0, is_creator: i % 3 === 0 })
  const filtered = (d: Db, v: { active?: boolean; from?: string }) => {
    let q = d.selectFrom('user').select(['id', 'username'])
    if (v.active !== undefined) q = q.where('is_active', '=', v.active)
    if (v.from !== undefined) q = q.where('id', '>=', v.from)
    return q
  }
  const list = compiledList(filtered)
  // keyed: a deep page (here: any offset) finds its keys on the table alone, then reads those rows
  const keyed = compiledList(filtered, { key: 'user.id', keys: filtered, rows: (d: Db) => d.selectFrom('user').select(['id', 'username']), from: 1 })
  for (const v of [{}, { active: true }, { active: false }, { from: 'c3' }, { active: true, from: 'c2' }]) {
    for (const sort of [
      [{ column: 'id', direction: 'asc' as const }],
      [
        { column: 'username', direction: 'desc' as const },
        { column: 'id', direction: 'desc' as const }
      ]
    ]) {
      for (const page of [
        { limit: 2, offset: 0 },
        { limit: 2, offset: 3 },
        { limit: 10, offset: 0 },
        { limit: 1, offset: 9 }
      ]) {
        let q = filtered(db, v)
        for (const key of sort) q = q.orderBy(key.column as 'id', key.direction)
        const rows = await q.limit(page.limit).offset(page.offset).execute()
        const all = await filtered(db, v).execute()
        t.same(
          await list.page(db, v, sort, page),
          { rows, total: all.length },
          `${JSON.stringify(v)} ${sort.map(k => k.column).join()} ${page.limit}@${page.offset}`
        )
        t.same(
          await keyed.page(db, v, sort, page),
          { rows, total: all.length },
          `keyed: ${JSON.stringify(v)} ${sort.map(k => k.column).join()} ${page.limit}@${page.offset}`
        )
      }
    }
  }
  t.same(
    await list.page(db, {}, [{ column: 'id', direction: 'asc' }], { limit: 1, offset: 0 }, async () => 42),
    { rows: [{ id: 'c0', username: 'u-c0' }], total: 42 },
    'a given total replaces the count'
  )
  // sorts that differ only in nulls last are two shapes: each page runs its own query, in either order
  // (the direction in which the dialect puts NULLs first unless told: ascending on SQLite, descending on PostgreSQL)
  await db.updateTable('user').set({ email_verified_at: writeTimeIso() }).where('id', '!=', 'c0').execute()
  const direction = dialect === 'postgres' ? ('desc' as const) : ('asc' as const)
  const verified = (nullsLast: boolean) => [
    { column: 'email_verified_at', direction, ...(nullsLast ? { nullsLast } : {}) },
    { column: 'id', direction: 'asc' as const }
  ]
  for (const first of [true, false]) {
    const sorted = compiledList(filtered)
    for (const nullsLast of [first, !first]) {
      t.equal(
        (await sorted.page(db, {}, verified(nullsLast), { limit: 7, offset: 0 })).rows[nullsLast ? 6 : 0].id,
        'c0',
        `nulls ${nullsLast ? 'last' : 'first'}, ${nullsLast === first ? 'first' : 'second'} shape run`
      )
    }
  }
  t.equal(await list.count(db, { active: true }), 4)
})

t.test('the date format takes years 0001 to 9999 and real days only', async t => {
  const validate = createAjv({ allowedMediaHosts: [] }).compile({ type: 'string', format: 'date' })
  for (const ok of ['0001-01-01', '0004-02-29', '0099-12-31', '0100-01-01', '1999-12-31', '2000-02-29', '9999-12-31']) t.ok(validate(ok), ok)
  for (const bad of [
    '0000-01-01',
    '0000-12-31',
    '0100-02-29',
    '1900-02-29',
    '2026-02-30',
    '2026-13-01',
    '2026-00-10',
    '10000-01-01',
    '2026-1-01',
    '2026-12-01T00:00:00Z'
  ]) { t.notOk(validate(bad), bad) }
})

t.test('post lists: a deep page (read by keys) is the page a direct read gives, in each sort', async t => {
  const db = await openDb(t)
  await seed(db, { posts: 260, quiet: true, hashCost: testConfig().PASSWORD_HASH_COST })
  const now = clockIso()
  for (const [sort, order] of [
    [
      undefined,
      [
        ['sort_at', 'desc'],
        ['id', 'desc']
      ]
    ],
    [
      'title',
      [
        ['title', 'asc'],
        ['id', 'asc']
      ]
    ],
    [
      '-created_at',
      [
        ['created_at', 'desc'],
        ['id', 'desc']
      ]
    ],
    [
      '-published_at',
      [
        ['published_at', 'desc'],
        ['id', 'desc']
      ]
    ]
  ] as const) {
    // about the keys-first threshold (100) and each end of a reach (keysCap: 128, 256)
    for (const offset of [0, 99, 100, 101, 118, 119, 180, 236]) {
      let q = db.selectFrom('post').select('id').where('published_at', '<=', now)
      for (const [column, direction] of order) q = q.orderBy(column, direction)
      const expected = (await q.limit(10).offset(offset).execute()).map(r => r.id)
      const { posts } = await listPosts(db, { limit: 10, offset, ...(sort ? { sort } : {}) })
      t.same(
        posts.map(p => p.id),
        expected,
        `sort ${sort ?? 'default'}, offset ${offset}`
      )
    }
  }
})

t.test("keysCap: the next power of two at or past a page's end, at least 128, at most 2^53 - 1", async t => {
  t.equal(keysCap({ offset: 0, limit: 1 }), 128, 'the first page')
  t.equal(keysCap({ offset: 118, limit: 10 }), 128, 'a page ending on 128')
  t.equal(keysCap({ offset: 119, limit: 10 }), 256, 'one row past it')
  t.equal(keysCap({ offset: 156, limit: 100 }), 256, 'the largest size, ending on 256')
  t.equal(keysCap({ offset: 999_990, limit: 10 }), 2 ** 20, 'deep: a million')
  t.equal(keysCap({ offset: Number.MAX_SAFE_INTEGER, limit: 10 }), Number.MAX_SAFE_INTEGER, 'OFFSET_MAX: no further than a safe integer')
})

t.test('a list page writes its size into the statement and binds its offset: one statement per size', async t => {
  const captured: CompiledQuery[] = []
  const db = await openDb(t, {
    log: event => {
      captured.push(event.query)
    }
  })
  await seed(db, { posts: 200, quiet: true, hashCost: testConfig().PASSWORD_HASH_COST })
  const pageStatement = async (limit: number, offset: number) => {
    captured.length = 0
    const { posts } = await listPosts(db, { limit, offset })
    return { count: posts.length, query: captured.find(q => /order by "post"."sort_at" desc/.test(q.sql))! }
  }
  for (const offset of [0, 150]) {
    const seven = await pageStatement(7, offset)
    t.match(seven.query.sql, /limit 7 offset (\?|\$\d+)/, `offset ${offset}: the size in the text, the offset bound`)
    t.ok(seven.query.parameters.includes(offset) && !seven.query.parameters.includes(7), `offset ${offset}: the offset is a value, the size is not`)
    t.equal(seven.count, 7, `offset ${offset}: seven posts`)
    t.equal((await pageStatement(7, offset + 1)).query.sql, seven.query.sql, `offset ${offset}: the next offset runs the same statement`)
    t.not((await pageStatement(8, offset)).query.sql, seven.query.sql, `offset ${offset}: another size is another statement`)
  }
  t.equal((await pageStatement(1, 0)).count, 1, 'the smallest size')
  t.equal((await pageStatement(100, 0)).count, 100, 'the largest size')
  const published = Number(
    (
      await db
        .selectFrom('post')
        .select(eb => eb.fn.countAll().as('n'))
        .where('published_at', '<=', clockIso())
        .executeTakeFirstOrThrow()
    ).n
  )
  t.equal((await pageStatement(100, published - 3)).count, 3, 'the last page holds what is left')
  t.equal((await pageStatement(10, published)).count, 0, 'past the end: no posts')
})

if (dialect === 'postgres') {
  // Why: docs/decisions/0009-deep-pages-by-key.md
  /** A seeded database on one connection (pg_prepared_statements is per session). */
  async function oneSession (t: Test, posts: number): Promise<Db> {
    const { url, schema } = await freshDatabase(t)
    const db = createDb(url, { schema, poolSize: 1 })
    t.teardown(() => db.destroy())
    await whileMigrating(() => migrateToLatest(db))
    await seed(db, { posts, quiet: true, hashCost: testConfig().PASSWORD_HASH_COST })
    return db
  }
  const plansOf = async (db: Db, like: string) =>
    (
      await sql<{ generic_plans: string; custom_plans: string }>`select generic_plans, custom_plans
    from pg_prepared_statements where statement like ${like}`.execute(db)
    ).rows
  const pagePlans = (db: Db) => plansOf(db, '%"page"%')

  t.test("PostgreSQL: the public list's page runs on one generic plan, planned once for every offset", async t => {
    const db = await oneSession(t, 200)
    for (let page = 0; page < 10; page++) t.equal((await listPosts(db, { limit: 10, offset: page * 10 })).posts.length, 10, `page ${page + 1}`)
    const rows = await pagePlans(db)
    t.equal(rows.length, 1, 'one statement for ten offsets')
    t.ok(Number(rows[0]?.generic_plans) >= 1, `runs on the generic plan (generic ${rows[0]?.generic_plans}, custom ${rows[0]?.custom_plans})`)
    t.ok(Number(rows[0]?.custom_plans) <= 5, 'planned anew at most for the five runs PostgreSQL compares it with')
  })

  t.test("PostgreSQL: on a large table too, each page size and reach runs on one generic plan, and so do v2's pages", async t => {
    const db = await oneSession(t, 10)
    // Enough rows that a generic plan guessing an offset of a tenth of them looks dearer than planning each page.
    await sql`insert into post (id, creator_id, type, slug, title, body, published_at, created_at, updated_at, sort_at)
      select md5(i::text)::uuid::text, c.id, 'ARTICLE', 'bulk-' || i, 'Bulk', '', t, t, t, t
      from (select id from "user" where is_creator limit 1) c,
        generate_series(1, 50000) i, lateral (select now() - i * interval '1 minute' as t) ts`.execute(db)
    await sql`analyze post`.execute(db)
    const offsets = Array.from({ length: 10 }, (_, i) => 130 + i * 11) // one reach: 130..229 plus the page, under 256
    for (const offset of offsets) t.equal((await listPosts(db, { limit: 10, offset })).posts.length, 10, `offset ${offset}`)
    const v1 = await pagePlans(db)
    t.equal(v1.length, 1, 'v1: one statement for ten offsets within one reach')
    t.ok(Number(v1[0]?.generic_plans) >= 1, `v1: runs on the generic plan (generic ${v1[0]?.generic_plans}, custom ${v1[0]?.custom_plans})`)

    // v2: the first page ten times, then ten pages on from it, each after the last one's position
    for (let i = 0; i < 10; i++) t.equal((await listPostsAfter(db, { limit: 10 })).posts.length, 10, `v2 first page, run ${i + 1}`)
    let after = (await listPostsAfter(db, { limit: 10 })).next
    for (let i = 0; i < 10; i++) after = (await listPostsAfter(db, { limit: 10 }, after)).next
    t.ok(after, 'ten pages on, there are more')
    const v2 = await plansOf(db, '%"post"."sort_at" from%') // v2's pages select sort_at, their next position
    t.equal(v2.length, 2, 'v2: one statement for the first page, one for pages after a position')
    for (const [i, r] of v2.entries()) { t.ok(Number(r.generic_plans) >= 1, `v2 statement ${i + 1}: runs on the generic plan (generic ${r.generic_plans}, custom ${r.custom_plans})`) }
  })
}

/** The plan of a captured statement, as text; PostgreSQL without sequential scans (a table this small would use one). */
async function planOf (db: Db, query: CompiledQuery): Promise<string> {
  return db.transaction().execute(async trx => {
    if (isPostgres(db)) await sql`set local enable_seqscan = off`.execute(trx)
    const { rows } = await trx.executeQuery({ ...query, sql: `${isPostgres(db) ? 'explain' : 'explain query plan'} ${query.sql}` })
    return (rows as Array<Record<string, unknown>>).map(r => String(r.detail ?? r['QUERY PLAN'])).join('\n')
  })
}

t.test('public post lists read post_sort_at_idx from now plus the slack down, and keep a post another clock wrote up to that far ahead', async t => {
  const captured: CompiledQuery[] = []
  const db = await openDb(t, {
    log: event => {
      captured.push(event.query)
    }
  })
  await seed(db, { posts: 60, quiet: true, hashCost: testConfig().PASSWORD_HASH_COST })
  const [post] = (await listPosts(db, { limit: 1, offset: 10 })).posts
  const ahead = (ms: number) =>
    db
      .updateTable('post')
      .set({ sort_at: new Date(Date.now() + ms).toISOString() })
      .where('id', '=', post.id)
      .execute()

  // another instance's clock a minute short of a day ahead when it last wrote the post
  await ahead(VISIBLE_SORT_AT_SLACK_MS - 60_000)
  captured.length = 0
  const page = await listPosts(db, { limit: 10, offset: 0 })
  t.equal(page.posts[0].id, post.id, 'v1: listed, first (its sort_at is the latest)')
  t.equal((await listPostsAfter(db, { limit: 10 })).posts[0].id, post.id, 'v2: listed, first')
  const statement = captured.find(q => /order by "post"."sort_at" desc/.test(q.sql))!
  t.match(statement.sql, /"post"."sort_at" <= /, 'the page bounds sort_at')
  const visibleUntil = statement.parameters.map(p => Date.parse(String(p))).find(ms => ms > Date.now() + 60_000)
  t.ok(visibleUntil !== undefined && Math.abs(visibleUntil - (Date.now() + VISIBLE_SORT_AT_SLACK_MS)) < 60_000, 'by now plus the slack')
  const plan = await planOf(db, statement)
  t.match(
    plan,
    isPostgres(db) ? /Index Cond: \(+sort_at <= / : /post_sort_at_idx \(sort_at<\?\)/,
    'the index is entered at the bound, ' + 'not walked from its head'
  )

  const first = await listPostsAfter(db, { limit: 5 })
  captured.length = 0
  await listPostsAfter(db, { limit: 5 }, first.next)
  const after = captured.find(q => /order by "post"."sort_at" desc/.test(q.sql))!
  t.match(
    await planOf(db, after),
    isPostgres(db) ? /Index Cond: \(+ROW\(sort_at, id\) < / : /post_sort_at_idx \(\(sort_at,id\)<\(\?,\?\)\)/,
    'v2 after a position: the index is entered at the position, not at the visibleUntil bound'
  )

  // the stated limit: a clock more than the slack ahead hides the post from the public lists until then
  await ahead(VISIBLE_SORT_AT_SLACK_MS + 60_000)
  t.notOk(
    (await listPosts(db, { limit: 100, offset: 0 })).posts.some(p => p.id === post.id),
    'beyond the slack: not in the public list'
  )
  const own = await listPosts(db, { limit: 100, offset: 0 }, { creatorId: post.creator.id, unpublished: true })
  t.ok(
    own.posts.some(p => p.id === post.id),
    "its creator's own list (drafts and scheduled too) is not bounded"
  )

  captured.length = 0
  await listPosts(db, { limit: 10, offset: 0, type: 'COURSE' })
  const count = captured.find(q => /sum\(published\)/.test(q.sql))!
  t.match(
    await planOf(db, count),
    isPostgres(db) ? /Index Only Scan using post_published_at_idx/ : /COVERING INDEX post_published_at_idx/,
    'a typed total counts its scheduled posts in post_published_at_idx alone'
  )
})
