import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import {
  type CompiledQuery, type DatabaseConnection, type Kysely, type Logger, PostgresAdapter, PostgresDialect, PostgresDriver, type QueryResult,
  SqliteDialect, type SqliteDatabase, SqliteDriver, type Transaction
} from './kysely.js'
import { ROLLBACK, statementKysely, type StatementConnection, type StatementDriver } from './statement-executor.js'
import type { Database } from './schema.js'
import { isoFromUtcTimestampText } from './date-time-format.js'

// Each driver is loaded only for the dialect in use: an instance carries one of them, not both.
const require = createRequire(import.meta.url)
let pgDriver: typeof pg | undefined
function loadPg (): typeof pg {
  if (!pgDriver) {
    pgDriver = require('pg') as typeof pg
    // pg parses DATE into a local-midnight Date and bigint into a string; we want the text and a number.
    pgDriver.types.setTypeParser(1082, (v: string) => v)
    pgDriver.types.setTypeParser(20, (v: string) => Number(v))
    // timestamptz as the ISO text SQLite gives back, so the domain sees one form: cut from the text
    // in a UTC session (set below), through pg's own parser in any other zone.
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
  log?: Logger
  /** SQLite in memory: start from a copy of this database file's bytes (tests copy one migrated database) */
  image?: Buffer
}

const pools = new WeakMap<Db, pg.Pool>()

/** The PostgreSQL pool behind a database (undefined on SQLite): its counts are metrics. */
export function poolOf (db: Db): pg.Pool | undefined {
  return pools.get(db)
}

/**
 * Kysely on the database at `url`, over Roja's drivers (below), whose statements go straight to a
 * connection (src/db/statement-executor.ts).
 */
export function createDb (url: string, opts: DbOptions = {}): Db {
  if (url.startsWith('postgres')) {
    const pool = new (loadPg().Pool)({
      connectionString: url,
      max: opts.poolSize ?? 10,
      options: opts.schema ? `-c search_path=${opts.schema}` : undefined
    })
    // A client that loses its server emits 'error', which unheard would kill the process; its query
    // still fails (503) and the pool replaces it. Each session runs in UTC for the parser above.
    pool.on('error', () => {})
    pool.on('connect', (client) => {
      client.on('error', () => {})
      client.query('set time zone \'UTC\'').catch(() => {})
    })
    const db = statementKysely(new PostgresDialect({ pool }), new PreparingPostgresDriver(pool, opts.log))
    pools.set(db, pool)
    return db
  }
  const file = url.slice('sqlite:'.length)
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
  const Driver = require('better-sqlite3') as typeof SQLite
  const database = new Driver(file === ':memory:' && opts.image ? opts.image : file)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('foreign_keys = ON')
  database.pragma('busy_timeout = 5000')
  return statementKysely(new SqliteDialect({ database: database as unknown as SqliteDatabase }), new SqliteQueueDriver(database, opts.log))
}

/**
 * Kysely's SQLite driver, but the one connection goes to its waiters in the order they came, each
 * woken once, where Kysely's lock wakes them all; a statement on its own runs at once when it is free.
 * Why: docs/decisions/0003-sqlite-driver.md
 */
class SqliteQueueDriver extends SqliteDriver implements StatementDriver {
  readonly #waiting: Array<() => void> = []
  readonly #connection: SqliteStatementConnection
  #held = false

  constructor (database: SQLite.Database, log: Logger | undefined) {
    super({ database: database as unknown as SqliteDatabase })
    this.#connection = new SqliteStatementConnection(database, log)
  }

  override async init (): Promise<void> {}

  override async acquireConnection (): Promise<SqliteStatementConnection> {
    if (this.#held) await new Promise<void>(resolve => this.#waiting.push(resolve))
    this.#held = true
    return this.#connection
  }

  override async releaseConnection (): Promise<void> {
    this.#release()
  }

  async run<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    const connection = this.#held ? await this.acquireConnection() : this.#hold()
    try {
      return connection.execute<R>(query)
    } finally {
      this.#release()
    }
  }

  override async destroy (): Promise<void> {
    this.#connection.close()
  }

  #hold (): SqliteStatementConnection {
    this.#held = true
    return this.#connection
  }

  #release (): void {
    const next = this.#waiting.shift()
    if (next === undefined) this.#held = false
    else next() // still held: it passes to the next in line
  }
}

/** The most statements a connection keeps prepared, on either database: shapes come from requests. */
export const PREPARED_STATEMENTS_MAX = 500

/**
 * The connection, keeping prepared statements by SQL text (least recently used go first), safe as
 * one query runs at a time; booleans bound as 0/1, as better-sqlite3 needs, so domain code stays
 * dialect-free. Why: docs/decisions/0004-prepared-statements.md
 */
class SqliteStatementConnection implements StatementConnection {
  readonly #statements = new Map<string, SQLite.Statement>()

  constructor (private readonly database: SQLite.Database, private readonly log: Logger | undefined) {}

  async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    return this.execute(query)
  }

  execute<R> (query: CompiledQuery): QueryResult<R> {
    const start = performance.now()
    try {
      const result = this.#run<R>(query)
      if (this.log) void this.log({ level: 'query', query, queryDurationMillis: performance.now() - start })
      return result
    } catch (error) {
      if (this.log) void this.log({ level: 'error', error, query, queryDurationMillis: performance.now() - start })
      throw error
    }
  }

  rollback (): void {
    if (this.database.inTransaction) this.execute(ROLLBACK) // SQLite ends some failed transactions itself
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

  #run<R> ({ sql, parameters }: CompiledQuery): QueryResult<R> {
    const statement = this.#prepared(sql)
    if (statement.reader) return { rows: statement.all(bindable(parameters)) as R[] }
    const { changes, lastInsertRowid } = statement.run(bindable(parameters))
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) }
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

/** Kysely's PostgreSQL driver (savepoints, the pool's end), handing out the connections below. */
class PreparingPostgresDriver extends PostgresDriver implements StatementDriver {
  readonly #connections = new WeakMap<pg.PoolClient, PreparingPostgresConnection>()
  readonly #names = new StatementNames()
  #ended: Promise<void> | undefined

  constructor (private readonly pool: pg.Pool, private readonly log: Logger | undefined) {
    super({ pool })
  }

  override async init (): Promise<void> {}

  override async acquireConnection (): Promise<PreparingPostgresConnection> {
    const client = await this.pool.connect()
    let connection = this.#connections.get(client)
    if (connection === undefined) this.#connections.set(client, connection = new PreparingPostgresConnection(client, this.#names, this.log))
    return connection
  }

  override async releaseConnection (connection: DatabaseConnection): Promise<void> {
    (connection as PreparingPostgresConnection).client.release()
  }

  async run<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    const connection = await this.acquireConnection()
    try {
      return await connection.execute<R>(query)
    } finally {
      await this.releaseConnection(connection)
    }
  }

  // Once, however often it is asked (pg refuses a second end).
  override async destroy (): Promise<void> {
    this.#ended ??= this.pool.end()
    await this.#ended
  }
}

/**
 * A statement that takes values runs prepared, one name per SQL text; past PREPARED_STATEMENTS_MAX
 * texts, and without values (begin, commit), statements run unprepared.
 * Why: docs/decisions/0004-prepared-statements.md
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

class PreparingPostgresConnection implements StatementConnection {
  constructor (readonly client: pg.PoolClient, private readonly names: StatementNames, private readonly log: Logger | undefined) {}

  async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    return await this.execute(query)
  }

  async execute<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    const start = performance.now()
    try {
      // pg's own errors keep the query's callers on their stack (test/db.test.ts), so they pass through as they are.
      const { sql, parameters } = query
      const { command, rowCount, rows } = await this.client.query({ name: this.names.of(sql, parameters), text: sql, values: parameters as unknown[] })
      if (this.log) void this.log({ level: 'query', query, queryDurationMillis: performance.now() - start })
      const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
      return { rows: (rows ?? []) as R[], numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined }
    } catch (error) {
      if (this.log) void this.log({ level: 'error', error, query, queryDurationMillis: performance.now() - start })
      throw error
    }
  }

  async rollback (): Promise<void> {
    // A connection that failed mid-transaction may refuse this too: the work's error is the one to tell.
    await this.execute(ROLLBACK).catch(() => {})
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
