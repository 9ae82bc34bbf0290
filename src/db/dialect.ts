import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import {
  Kysely, type LimitNode, type LogConfig, type Transaction, PostgresAdapter, PostgresDialect, SqliteDialect,
  type SqliteDatabase, SqliteQueryCompiler
} from './kysely.js'
import type { Database } from './schema.js'
import { isoFromUtcTimestampText } from './time.js'

// Each driver is loaded only for the dialect in use: an instance carries one of them, not both.
const require = createRequire(import.meta.url)
let pgDriver: typeof pg | undefined
function loadPg (): typeof pg {
  if (!pgDriver) {
    pgDriver = require('pg') as typeof pg
    // pg parses DATE into a local-midnight Date and bigint into a string; we want the text and a number.
    pgDriver.types.setTypeParser(1082, (v: string) => v)
    pgDriver.types.setTypeParser(20, (v: string) => Number(v))
    // timestamptz as the ISO text SQLite gives back, so both dialects hand the domain one form: in a UTC
    // session (set below) it is cut from the text, not parsed into a Date and formatted back (30 of
    // each on a list page). Another zone still reads right, through pg's own parser.
    const parseDate = pgDriver.types.getTypeParser(1184) as (v: string) => Date
    pgDriver.types.setTypeParser(1184, (v: string) => isoFromUtcTimestampText(v) ?? isoOf(parseDate(v), v))
  }
  return pgDriver
}

export type Db = Kysely<Database>
/** The database or an open transaction: what a query function takes, so the caller owns the transaction. */
export type Executor = Kysely<Database> | Transaction<Database>

export interface DbOptions {
  /** PostgreSQL schema to work in (tests isolate each file in its own). */
  schema?: string
  poolSize?: number
  /** Kysely's query log: called after every query with its duration (metrics and tracing listen) */
  log?: LogConfig
}

const pools = new WeakMap<Db, pg.Pool>()

/** The PostgreSQL pool behind a database (undefined on SQLite): its counts are metrics. */
export function poolOf (db: Db): pg.Pool | undefined {
  return pools.get(db)
}

export function createDb (url: string, opts: DbOptions = {}): Db {
  if (url.startsWith('postgres')) {
    const pool = new (loadPg().Pool)({
      connectionString: url,
      max: opts.poolSize ?? 10,
      options: opts.schema ? `-c search_path=${opts.schema}` : undefined
    })
    // An idle client that loses its server must not crash the process; the next query reconnects.
    pool.on('error', () => {})
    // A checked-out client whose server goes away emits 'error' too; unheard, that kills the process.
    // Its query still fails (→ 503) and pg-pool discards the broken client on release.
    // The session in UTC: timestamptz then comes back as text the parser above only cuts. Queued
    // before any query of the client's; if it fails, the parser's fallback still reads other zones.
    pool.on('connect', (client) => {
      client.on('error', () => {})
      client.query('set time zone \'UTC\'').catch(() => {})
    })
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: opts.log })
    pools.set(db, pool)
    return db
  }
  const file = url.slice('sqlite:'.length)
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const Driver = require('better-sqlite3') as typeof SQLite
  const database = new Driver(file)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('foreign_keys = ON')
  database.pragma('busy_timeout = 5000')
  return new Kysely<Database>({ dialect: new SqliteLimitDialect({ database: cachingStatements(database) }), log: opts.log })
}

/**
 * SQLite (3.53 here) reads a LIMIT that is a bare bound parameter while planning, and so marks
 * the statement to be prepared again whenever that parameter is bound: every run of every page.
 * `limit +?` is the same number to SQLite but an expression the planner leaves alone, so a
 * cached statement stays prepared (a list page's statement: about 70 against 52 µs, bench/README.md).
 */
class LimitAsExpression extends SqliteQueryCompiler {
  protected override visitLimit (node: LimitNode): void {
    this.append('limit +')
    this.visitNode(node.limit)
  }
}

class SqliteLimitDialect extends SqliteDialect {
  override createQueryCompiler (): SqliteQueryCompiler {
    return new LimitAsExpression()
  }
}

const STATEMENT_CACHE_SIZE = 500

/**
 * Kysely prepares every query anew; preparing was a sixth of the list route's CPU (bench/README.md).
 * Reusing the prepared statement of the same SQL text is safe: Kysely runs one query at a time
 * on the connection. Least recently used statements go first past STATEMENT_CACHE_SIZE.
 * better-sqlite3 cannot bind booleans: they are bound as 0/1 here, so domain code stays
 * dialect-free (a query-tree plugin did this before, at a cost on every query).
 */
function cachingStatements (database: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, ReturnType<SqliteDatabase['prepare']>>()
  return {
    close: () => { cache.clear(); database.close() },
    prepare: (text: string) => {
      let statement = cache.get(text)
      if (statement) cache.delete(text)
      else statement = bindingBooleans(database.prepare(text))
      cache.set(text, statement)
      if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
      return statement
    }
  }
}

function bindingBooleans (statement: SQLite.Statement): ReturnType<SqliteDatabase['prepare']> {
  const bind = (params: readonly unknown[]) =>
    params.some(v => typeof v === 'boolean') ? params.map(v => (typeof v === 'boolean' ? Number(v) : v)) : params
  return {
    reader: statement.reader,
    all: (params: readonly unknown[]) => statement.all(bind(params) as unknown[]),
    run: (params: readonly unknown[]) => statement.run(bind(params) as unknown[]),
    iterate: (params: readonly unknown[]) => statement.iterate(bind(params) as unknown[])
  } as unknown as ReturnType<SqliteDatabase['prepare']>
}

/** A parsed timestamptz as ISO text; `infinity` and the like stay as PostgreSQL wrote them. */
function isoOf (date: Date, text: string): string {
  return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : text
}

export function isPostgres (db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}
