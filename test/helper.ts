import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type FastifyServerOptions, type LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { pino } from 'pino'
import type { Test } from 'tap'
import app, { type AppOptions } from '../src/app.js'
import { loadConfig, type Config } from '../plugins/config.js'
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

/**
 * A fresh database for one test: an in-memory SQLite, or a PostgreSQL schema of its own
 * that is dropped at teardown. Returns what `build` needs to open it.
 */
export async function freshDatabase (t: Test, { persistent = false } = {}): Promise<{ url: string, schema?: string }> {
  // `persistent`: a SQLite file that outlives one app, so a second app can open the same data.
  if (dialect === 'sqlite') return { url: persistent ? `sqlite:/tmp/roja-test-${randomBytes(6).toString('hex')}/roja.sqlite` : 'sqlite::memory:' }
  const schema = `t_${randomBytes(8).toString('hex')}`
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  await client.query(`create schema ${schema}`)
  await client.end()
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: PG_URL })
    await c.connect()
    await c.query('select pg_advisory_lock($1)', [SCHEMA_LOCK]) // released when this connection closes
    await c.query(`drop schema if exists ${schema} cascade`)
    await c.end()
  })
  return { url: PG_URL, schema }
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
  /** reuse a database made by freshDatabase (e.g. to restart the app on the same data) */
  database?: { url: string, schema?: string }
  /** outbox worker settings (it only runs in the background once the app listens) */
  outbox?: AppOptions['outbox']
  /** turn tracing on, spans to this exporter */
  tracing?: AppOptions['tracing']
}

/** Builds the real app on a fresh database, ready for `app.inject`; closed at teardown. */
export async function build (t: Test, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const database = opts.database ?? await freshDatabase(t)
  const config = testConfig({ ...opts.env, DATABASE_URL: database.url }, database.url)
  const server = testFastify(config, opts)
  await whileMigrating(async () => {
    await server.register(app, { config, dbSchema: database.schema, outbox: opts.outbox, tracing: opts.tracing })
    await server.ready()
  })
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
