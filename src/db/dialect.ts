import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import {
  type CompiledQuery, type DatabaseConnection, type Driver, Kysely, type LimitNode, type LogConfig, type QueryResult,
  type Transaction, PostgresAdapter, PostgresDialect, PostgresDriver, SqliteDialect, type SqliteDatabase, SqliteDriver, SqliteQueryCompiler
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
    const db = new Kysely<Database>({ dialect: new RojaPostgresDialect(pool), log: opts.log })
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
  return new Kysely<Database>({ dialect: new RojaSqliteDialect(database), log: opts.log })
}

/**
 * SQLite (3.53 here) reads a LIMIT that is a bare bound parameter while planning, and so marks
 * the statement to be prepared again whenever that parameter is bound: every run of every page.
 * `limit +?` is the same number to SQLite but an expression the planner leaves alone, so a
 * cached statement stays prepared (a list page's statement: about 70 against 52 µs, bench/history/README.md).
 */
class LimitAsExpression extends SqliteQueryCompiler {
  protected override visitLimit (node: LimitNode): void {
    this.append('limit +')
    this.visitNode(node.limit)
  }
}

/** Kysely's SQLite dialect with Roja's LIMIT (above) and its driver and connection (below). */
class RojaSqliteDialect extends SqliteDialect {
  constructor (private readonly database: SQLite.Database) {
    super({ database: database as unknown as SqliteDatabase }) // only createDriver below uses the database
  }

  override createDriver (): Driver {
    return new SqliteQueueDriver(this.database)
  }

  override createQueryCompiler (): SqliteQueryCompiler {
    return new LimitAsExpression()
  }
}

/**
 * Kysely's SQLite driver, but for how the one connection is handed on. better-sqlite3 has one
 * connection, so a query waits while another query or a transaction holds it. Kysely's own lock
 * wakes every waiter at each release (all await one promise; all but one then wait again): with
 * 50 requests waiting, 50 resumptions a query. Here the waiters queue and each is woken once, in
 * the order they came, and the holder hands the connection straight to the next, so none barges in.
 * Transactions and savepoints are Kysely's (they only run statements on the connection given).
 */
class SqliteQueueDriver extends SqliteDriver {
  readonly #connection: SqliteStatementConnection
  readonly #waiting: Array<() => void> = []
  #held = false

  constructor (database: SQLite.Database) {
    super({ database: database as unknown as SqliteDatabase })
    this.#connection = new SqliteStatementConnection(database)
  }

  override async init (): Promise<void> {}

  override async acquireConnection (): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>(resolve => this.#waiting.push(resolve))
    this.#held = true
    return this.#connection
  }

  override async releaseConnection (): Promise<void> {
    const next = this.#waiting.shift()
    if (next === undefined) this.#held = false
    else next() // still held: it passes to the next in line
  }

  override async destroy (): Promise<void> {
    this.#connection.close()
  }
}

/** The most statements a connection keeps prepared, on either database: shapes come from requests. */
export const PREPARED_STATEMENTS_MAX = 500

/**
 * The connection: prepared statements kept by SQL text. Kysely prepares every query anew, and
 * preparing was a sixth of the list route's CPU (bench/history/README.md); reusing them is safe, as one
 * query at a time runs on the connection. Least recently used statements go first past
 * PREPARED_STATEMENTS_MAX. better-sqlite3 cannot bind booleans: they are bound as 0/1 here, so domain
 * code stays dialect-free (a query-tree plugin did this before, at a cost on every query).
 */
class SqliteStatementConnection implements DatabaseConnection {
  readonly #statements = new Map<string, SQLite.Statement>()

  constructor (private readonly database: SQLite.Database) {}

  async executeQuery<R> ({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.#prepared(sql)
    if (statement.reader) return { rows: statement.all(bindable(parameters)) as R[] }
    const { changes, lastInsertRowid } = statement.run(bindable(parameters))
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) }
  }

  async * streamQuery<R> ({ sql, parameters }: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const statement = this.#prepared(sql)
    if (!statement.reader) throw new Error('only a query that returns rows can be streamed')
    for (const row of statement.iterate(bindable(parameters))) yield { rows: [row as R] }
  }

  close (): void {
    this.#statements.clear()
    this.database.close()
  }

  #prepared (sql: string): SQLite.Statement {
    let statement = this.#statements.get(sql)
    if (statement) this.#statements.delete(sql)
    else statement = this.database.prepare(sql)
    this.#statements.set(sql, statement)
    if (this.#statements.size > PREPARED_STATEMENTS_MAX) this.#statements.delete(this.#statements.keys().next().value!)
    return statement
  }
}

/** Kysely's PostgreSQL dialect, with connections that prepare their statements (below). */
class RojaPostgresDialect extends PostgresDialect {
  constructor (private readonly pool: pg.Pool) {
    super({ pool })
  }

  override createDriver (): Driver {
    return new PreparingPostgresDriver(this.pool)
  }
}

/** Kysely's PostgreSQL driver (transactions, savepoints, the pool's end), handing out the connections below. */
class PreparingPostgresDriver extends PostgresDriver {
  readonly #connections = new WeakMap<pg.PoolClient, PreparingPostgresConnection>()
  readonly #names = new StatementNames()

  constructor (private readonly pool: pg.Pool) {
    super({ pool })
  }

  override async acquireConnection (): Promise<DatabaseConnection> {
    const client = await this.pool.connect()
    let connection = this.#connections.get(client)
    if (connection === undefined) this.#connections.set(client, connection = new PreparingPostgresConnection(client, this.#names))
    return connection
  }

  override async releaseConnection (connection: DatabaseConnection): Promise<void> {
    (connection as PreparingPostgresConnection).client.release()
  }
}

/**
 * A statement that takes values runs as a named prepared statement: PostgreSQL parses it once per
 * connection, and its own rule (plan_cache_mode auto) keeps a generic plan only where that plan
 * costs no more than the first five runs' plans for their values. A read by key does: a post read
 * cost PostgreSQL about 90 µs of CPU against 480 unprepared (bench/history/README.md). A list page,
 * whose LIMIT and OFFSET are values, stays planned for its values. One name per SQL text and
 * database; past PREPARED_STATEMENTS_MAX texts the rest run unprepared, so no connection holds
 * more than that many. Statements without values (begin, commit, DDL) run as before.
 */
class StatementNames {
  readonly #names = new Map<string, string>()

  of (sql: string, parameters: readonly unknown[]): string | undefined {
    if (parameters.length === 0) return undefined
    let name = this.#names.get(sql)
    if (name === undefined && this.#names.size < PREPARED_STATEMENTS_MAX) this.#names.set(sql, name = `roja_${this.#names.size}`)
    return name
  }
}

class PreparingPostgresConnection implements DatabaseConnection {
  constructor (readonly client: pg.PoolClient, private readonly names: StatementNames) {}

  async executeQuery<R> ({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    // pg's own errors keep the query's callers on their stack (test/db.test.ts), so they pass through as they are.
    const { command, rowCount, rows } = await this.client.query({ name: this.names.of(sql, parameters), text: sql, values: parameters as unknown[] })
    const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
    return { rows: (rows ?? []) as R[], numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined }
  }

  // Kysely's PostgreSQL connection streams only with a cursor module, which Roja does not configure.
  async * streamQuery<R> (): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming needs a cursor, which this dialect does not configure')
  }
}

function bindable (parameters: readonly unknown[]): unknown[] {
  return (parameters.some(v => typeof v === 'boolean') ? parameters.map(v => (typeof v === 'boolean' ? Number(v) : v)) : parameters) as unknown[]
}

/** A parsed timestamptz as ISO text; `infinity` and the like stay as PostgreSQL wrote them. */
function isoOf (date: Date, text: string): string {
  return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : text
}

export function isPostgres (db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}
