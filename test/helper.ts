import { execFile } from 'node:child_process'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type FastifyServerOptions, type LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { pino } from 'pino'
import type { Test } from 'tap'
import app, { type AppOptions } from '../src/app.js'
import { loadConfig, type Config } from '../plugins/config.js'
import { queryChannel, type QueryMessage } from '../plugins/db.js'
import { createDb } from '../src/db/dialect.js'
import { sql } from '../src/db/kysely.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { serverOptions } from '../src/options.js'
import { LOG_DIR, LOG_LEVEL, logFile, observeIssued, TEST_SECRET } from './log-capture.js'

export { TEST_SECRET }

/** Which database this run uses: SQLite unless ROJA_TEST_DIALECT=postgres (npm test runs both). */
export const dialect = process.env.ROJA_TEST_DIALECT === 'postgres' ? 'postgres' : 'sqlite'
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export function testConfig (env: Record<string, string> = {}, databaseUrl?: string): Config {
  return loadConfig({
    ENVIRONMENT: 'test',
    LOG_LEVEL: 'silent',
    JWT_SECRET: TEST_SECRET,
    DATA_DIR: `/tmp/roja-test-${randomBytes(6).toString('hex')}`,
    DATABASE_URL: databaseUrl ?? (dialect === 'postgres' ? PG_URL : 'sqlite::memory:'),
    RATE_LIMIT_MAX: '100000',
    AUTH_RATE_LIMIT_MAX: '100000',
    MAIL_RATE_LIMIT_MAX: '100000',
    // the cheapest scrypt where ENVIRONMENT=test allows it: a hash at the default is a quarter second of CPU
    PASSWORD_HASH_COST: env.ENVIRONMENT === undefined || env.ENVIRONMENT === 'test' ? '10' : '15',
    // Tests judge behaviour, not load: building apps blocks the loop and would read as overload.
    // The load-shedding tests turn it back on.
    LOAD_SHEDDING: 'false',
    ...env
  })
}

/** Where build() opens a test's database: a URL, on PostgreSQL the schema, for an in-memory SQLite the bytes to start from. */
export interface TestDatabase { url: string, schema?: string, image?: Buffer }

/**
 * A fresh database for one test: an in-memory SQLite, or a PostgreSQL schema of its own
 * that is dropped at teardown. Empty: the first app built on it migrates it.
 */
export async function freshDatabase (t: Test, { persistent = false } = {}): Promise<TestDatabase> {
  // `persistent`: a SQLite file that outlives one app, so a second app can open the same data.
  if (dialect === 'sqlite') return { url: persistent ? `sqlite:/tmp/roja-test-${randomBytes(6).toString('hex')}/roja.sqlite` : 'sqlite::memory:' }
  const schema = schemaOfTest(t)
  await onPg(`create schema ${schema}`)
  return { url: PG_URL, schema }
}

/** A new schema's name, the schema dropped at teardown. */
function schemaOfTest (t: Test): string {
  const schema = `t_${randomBytes(8).toString('hex')}`
  // one transaction: the lock is released when the schema is gone
  t.teardown(() => onPg(`select pg_advisory_xact_lock(${SCHEMA_LOCK}); drop schema if exists ${schema} cascade`))
  return schema
}

/**
 * Runs statements (no parameters, one transaction) on this process's own connections for making
 * and dropping schemas. Kept open, their catalogue caches stay warm: a new connection's first
 * schema cost the server half as much again. Idle, they do not keep the process alive.
 */
async function onPg (text: string): Promise<void> {
  if (adminPool === undefined) {
    adminPool = new pg.Pool({ connectionString: PG_URL, max: 2, idleTimeoutMillis: 0, allowExitOnIdle: true })
    adminPool.on('error', () => {}) // an idle connection that loses the server is replaced on the next query
  }
  await adminPool.query(text)
}
let adminPool: pg.Pool | undefined

// Databases made by migratedDatabase: their apps find them up to date and run no Migrator, so
// build() takes no migration lock for them.
const upToDate = new WeakSet<TestDatabase>()

/**
 * A fresh database with every migration applied, for a test of anything but migrating. The app
 * built on it still checks at start that it is up to date. Each process (or run: IMAGE_DIR)
 * migrates one for real and the others copy it: SQLite its bytes, PostgreSQL its pg_dump replayed
 * into a schema of their own. Migrating was about a third of a build's CPU, and on PostgreSQL most
 * of the server's; a copy runs no Migrator, which reads the catalogue of every schema (SCHEMA_LOCK).
 * test/migrated-database.test.ts holds a copy to what migrating gives.
 */
export async function migratedDatabase (t: Test, { persistent = false } = {}): Promise<TestDatabase> {
  if (dialect === 'postgres') {
    const database = await migratedSchema(t)
    upToDate.add(database)
    return database
  }
  const saved = sqliteImage === undefined ? savedImage('sqlite.image') : undefined
  sqliteImage ??= saved ? Promise.resolve(saved) : migratedSqlite().then(image => { saveImage('sqlite.image', image); return image })
  const image = await sqliteImage
  const database = await freshDatabase(t, { persistent })
  if (persistent) {
    const file = database.url.slice('sqlite:'.length)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, image)
  } else {
    database.image = image
  }
  upToDate.add(database)
  return database
}

let sqliteImage: Promise<Buffer> | undefined

/** The bytes of an in-memory SQLite that the app's own migrations brought up to date. */
async function migratedSqlite (): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'roja-test-image-'))
  const db = createDb('sqlite::memory:')
  try {
    await migrateToLatest(db)
    await sql`vacuum into ${join(dir, 'image.sqlite')}`.execute(db)
    return readFileSync(join(dir, 'image.sqlite'))
  } finally {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * ROJA_TEST_IMAGE_DIR (npm test sets it, a folder of its own for each run): the processes of a run
 * share their migrated databases' images there, so most of them migrate nothing. Without it each
 * process makes its own.
 */
const IMAGE_DIR = process.env.ROJA_TEST_IMAGE_DIR

function savedImage (name: string): Buffer | undefined {
  if (!IMAGE_DIR) return undefined
  try {
    return readFileSync(join(IMAGE_DIR, name))
  } catch {
    return undefined
  }
}

/** Saves an image for the run's other processes, by rename: whole or not at all. */
function saveImage (name: string, data: Buffer | string): void {
  if (!IMAGE_DIR) return
  const part = join(IMAGE_DIR, `${name}.${process.pid}`)
  writeFileSync(part, data)
  renameSync(part, join(IMAGE_DIR, name))
}

/** The first migrated schema of this process (or run) as pg_dump writes it, its name to be replaced; null without pg_dump. */
let pgImage: Promise<PgImage> | undefined
type PgImage = { schema: string, text: string } | null

async function migratedSchema (t: Test): Promise<TestDatabase> {
  const saved = pgImage === undefined ? savedImage('postgres.json') : undefined
  if (saved) pgImage = Promise.resolve(JSON.parse(String(saved)) as PgImage)
  if (pgImage === undefined) {
    const database = await freshDatabase(t)
    pgImage = migrateAndDump(database.schema!).then(image => { saveImage('postgres.json', JSON.stringify(image)); return image })
    await pgImage
    return database
  }
  const image = await pgImage
  if (image === null) {
    const database = await freshDatabase(t)
    await migrate(database)
    return database
  }
  const schema = schemaOfTest(t)
  await onPg(image.text.replaceAll(image.schema, schema)) // one statement list, one transaction
  return { url: PG_URL, schema }
}

async function migrate (database: TestDatabase): Promise<void> {
  const db = createDb(database.url, { schema: database.schema, poolSize: 1 })
  try {
    await whileMigrating(() => migrateToLatest(db))
  } finally {
    await db.destroy()
  }
}

async function migrateAndDump (schema: string): Promise<PgImage> {
  await migrate({ url: PG_URL, schema })
  // --inserts: the rows the migrations wrote (their own records, counters) as INSERTs, not COPY
  const args = ['--no-owner', '--no-privileges', '--inserts', `--schema=${schema}`, PG_URL]
  const dump = await whileMigrating(() => new Promise<string | undefined>((resolve) => {
    execFile('pg_dump', args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => resolve(err ? undefined : stdout))
  }))
  if (dump === undefined) return null // no pg_dump (or not one for this server): each schema migrates
  // psql's own commands (\restrict in recent releases) are not SQL
  return { schema, text: dump.split('\n').filter(line => !line.startsWith('\\')).join('\n') }
}

// Kysely's migrator reads every table of the database (pg_get_serial_sequence on each) to find its
// own, and fails with `schema "t_…" does not exist` when another test file drops its schema meanwhile:
// migrations hold this advisory lock shared, a schema drop exclusively.
const SCHEMA_LOCK = 7_406_271

/** Runs work that migrates a database (building an app does) so that no schema is dropped meanwhile. */
export async function whileMigrating<T> (work: () => PromiseLike<T>): Promise<T> {
  if (dialect !== 'postgres') return work()
  const c = new pg.Client({ connectionString: PG_URL })
  await c.connect()
  try {
    await c.query('select pg_advisory_lock_shared($1)', [SCHEMA_LOCK])
    return await work()
  } finally {
    await c.end()
  }
}

export interface BuildOptions {
  env?: Record<string, string>
  /** collect every log line (as text) here */
  logs?: string[]
  /** the level of those logs (trace unless given) */
  logLevel?: string
  /** reuse a database made by freshDatabase or migratedDatabase (e.g. to restart the app on the same data) */
  database?: TestDatabase
  /** outbox worker settings (it only runs in the background once the app listens) */
  outbox?: AppOptions['outbox']
  /** turn tracing on, spans to this exporter */
  tracing?: AppOptions['tracing']
}

/** Builds the real app on a fresh database, ready for `app.inject`; closed at teardown. */
export async function build (t: Test, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const database = opts.database ?? await migratedDatabase(t)
  const config = testConfig({ ...opts.env, DATABASE_URL: database.url }, database.url)
  const server = testFastify(config, opts)
  const start = async () => {
    await server.register(app, { config, dbSchema: database.schema, dbImage: database.image, outbox: opts.outbox, tracing: opts.tracing })
    await server.ready()
  }
  await (upToDate.has(database) ? start() : whileMigrating(start))
  t.teardown(() => server.close())
  return server
}

/**
 * Fastify with the production options (the app's logger settings: redaction, serializers), its
 * log lines going to the suite's log file when npm test keeps one, and to `logs` when given; what
 * it issues is recorded for the log scan (test/log-capture.ts).
 */
export function testFastify (config: Config, opts: Pick<BuildOptions, 'logs' | 'logLevel'> = {}): FastifyInstance {
  const streams: pino.StreamEntry[] = []
  if (LOG_DIR) streams.push({ level: LOG_LEVEL as pino.Level, stream: logFile() })
  if (opts.logs) {
    const logs = opts.logs
    streams.push({ level: (opts.logLevel ?? 'trace') as pino.Level, stream: new Writable({ write (chunk, _enc, cb) { logs.push(String(chunk)); cb() } }) })
  }
  const overrides: Partial<FastifyServerOptions> = streams.length === 0
    ? {}
    : {
        logger: {
          ...(serverOptions(config).logger as object),
          // the lowest level of the two; each stream keeps only its own level and above
          level: streams.map(s => s.level!).sort((a, b) => pino.levels.values[a] - pino.levels.values[b])[0],
          stream: streams.length === 1 ? streams[0].stream : pino.multistream(streams)
        }
      }
  const server = Fastify(serverOptions(config, overrides))
  observeIssued(server)
  return server
}

export function json<T = any> (res: LightMyRequestResponse): T {
  return JSON.parse(res.body) as T
}

/** The SQL of every statement `app` runs from now until the test ends, in order (the query channel of plugins/db.ts). */
export function recordStatements (t: Test, app: FastifyInstance): string[] {
  const statements: string[] = []
  const listener = (message: unknown) => {
    const { db, event } = message as QueryMessage
    if (db === app.db) statements.push(event.query.sql)
  }
  subscribe(queryChannel.name, listener)
  t.teardown(() => unsubscribe(queryChannel.name, listener))
  return statements
}
