import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import {
  CompiledQuery, type ConnectionProvider, type DatabaseConnection, DefaultConnectionProvider, DefaultQueryExecutor, type DialectAdapter,
  type Driver, Kysely, type KyselyProps, type Logger, PostgresAdapter, PostgresDialect, PostgresDriver, type QueryCompiler, type QueryResult,
  SqliteDialect, type SqliteDatabase, SqliteDriver, Transaction, TransactionBuilder
} from './kysely.js'
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
    const db = new Kysely<Database>({ dialect: new RojaPostgresDialect(pool), log: opts.log })
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
  return sqliteKysely(database, opts.log)
}

/**
 * Kysely on SQLite: its query builders, compiler and adapter, and Roja's driver and executor
 * (below), which run a query or a transaction's statement as better-sqlite3 runs it, at once.
 * Why: docs/decisions/0015-sqlite-statements-run-at-once.md
 */
function sqliteKysely (database: SQLite.Database, log: Logger | undefined): Db {
  const dialect = new SqliteDialect({ database: database as unknown as SqliteDatabase }) // its compiler, adapter and introspector
  const driver = new SqliteQueueDriver(new SqliteStatementConnection(database, log))
  const compiler = dialect.createQueryCompiler()
  const adapter = dialect.createAdapter()
  const executor = new SqliteExecutor(compiler, adapter, new DefaultConnectionProvider(driver), driver)
  const props = { config: { dialect }, dialect, driver, executor }
  return new SqliteKysely(props, (held) => new SqliteExecutor(compiler, adapter, held, held), driver)
}

/** Where a SQLite executor runs a statement: the queue (a query on its own) or a transaction's held connection. */
interface StatementRunner {
  run: <R>(query: CompiledQuery) => Promise<QueryResult<R>>
}

/**
 * Kysely's executor, but a statement goes straight to the connection; plugins (the Migrator's)
 * make a Kysely with Kysely's own executor and transactions.
 */
class SqliteExecutor extends DefaultQueryExecutor {
  constructor (compiler: QueryCompiler, adapter: DialectAdapter, provider: ConnectionProvider, private readonly runner: StatementRunner) {
    super(compiler, adapter, provider)
  }

  override async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    return this.runner.run(query)
  }
}

/** Kysely whose transactions hold the connection and run their statements on it at once (below). */
class SqliteKysely extends Kysely<Database> {
  constructor (
    private readonly props: KyselyProps,
    private readonly executorOn: (held: HeldConnection) => SqliteExecutor,
    private readonly driver: SqliteQueueDriver
  ) {
    super(props)
  }

  override transaction (): TransactionBuilder<Database> {
    return new SqliteTransactionBuilder(this.props, this.executorOn, this.driver)
  }
}

/**
 * Kysely's transaction: begin, the work, commit, or rollback when it throws; the connection is held
 * throughout, so other queries wait in the queue.
 */
class SqliteTransactionBuilder extends TransactionBuilder<Database> {
  constructor (
    private readonly props: KyselyProps,
    private readonly executorOn: (held: HeldConnection) => SqliteExecutor,
    private readonly driver: SqliteQueueDriver
  ) {
    super(props)
  }

  override async execute<T> (work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    const connection = await this.driver.acquireConnection()
    const held = new HeldConnection(connection)
    try {
      connection.execute(BEGIN)
      try {
        const result = await work(new Transaction<Database>({ ...this.props, executor: this.executorOn(held) }))
        connection.execute(COMMIT)
        return result
      } catch (err) {
        if (connection.inTransaction) connection.execute(ROLLBACK) // SQLite ends some failed transactions itself
        throw err
      }
    } finally {
      held.end()
      await this.driver.releaseConnection()
    }
  }
}

const BEGIN = CompiledQuery.raw('begin')
const COMMIT = CompiledQuery.raw('commit')
const ROLLBACK = CompiledQuery.raw('rollback')

/** A transaction's connection until it ends; used after, it throws, as Kysely's transactions do. */
class HeldConnection implements ConnectionProvider, StatementRunner {
  #open = true

  constructor (private readonly connection: SqliteStatementConnection) {}

  async provideConnection<T> (consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    this.#assertOpen()
    return consumer(this.connection)
  }

  async run<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    this.#assertOpen()
    return this.connection.execute<R>(query)
  }

  end (): void {
    this.#open = false
  }

  #assertOpen (): void {
    if (!this.#open) throw new Error('Transaction is already committed or rolled back')
  }
}

/**
 * Kysely's SQLite driver, but the one connection goes to its waiters in the order they came, each
 * woken once, where Kysely's lock wakes them all; a query on its own runs at once when it is free.
 * Why: docs/decisions/0003-sqlite-driver.md
 */
class SqliteQueueDriver extends SqliteDriver implements StatementRunner {
  readonly #waiting: Array<() => void> = []
  #held = false

  constructor (private readonly connection: SqliteStatementConnection) {
    super({ database: connection.database as unknown as SqliteDatabase })
  }

  override async init (): Promise<void> {}

  override async acquireConnection (): Promise<SqliteStatementConnection> {
    if (this.#held) await new Promise<void>(resolve => this.#waiting.push(resolve))
    this.#held = true
    return this.connection
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
    this.connection.close()
  }

  #hold (): SqliteStatementConnection {
    this.#held = true
    return this.connection
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
 * dialect-free. Each statement is timed and logged here (Kysely's `log`), as it runs.
 * Why: docs/decisions/0004-prepared-statements.md
 */
class SqliteStatementConnection implements DatabaseConnection {
  readonly #statements = new Map<string, SQLite.Statement>()

  constructor (readonly database: SQLite.Database, private readonly log: Logger | undefined) {}

  get inTransaction (): boolean {
    return this.database.inTransaction
  }

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
