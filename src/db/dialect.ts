import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import {
  Kysely, OperationNodeTransformer, type LogConfig, type Transaction, PostgresAdapter, PostgresDialect, SqliteDialect, type SqliteDatabase,
  type KyselyPlugin, type PluginTransformQueryArgs, type PrimitiveValueListNode, type PluginTransformResultArgs, type QueryResult,
  type RootOperationNode, type UnknownRow, type ValueNode
} from 'kysely'
import type { Database } from './schema.js'

// Each driver is loaded only for the dialect in use: an instance carries one of them, not both.
const require = createRequire(import.meta.url)
let pgDriver: typeof pg | undefined
function loadPg (): typeof pg {
  if (!pgDriver) {
    pgDriver = require('pg') as typeof pg
    // pg parses DATE into a local-midnight Date and bigint into a string; we want the text and a number.
    pgDriver.types.setTypeParser(1082, (v: string) => v)
    pgDriver.types.setTypeParser(20, (v: string) => Number(v))
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
    pool.on('connect', (client) => { client.on('error', () => {}) })
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
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingStatements(database) }), plugins: [new SqliteBooleans()], log: opts.log })
}

const STATEMENT_CACHE_SIZE = 500

/**
 * Kysely prepares every query anew; preparing was a sixth of the list route's CPU (bench/README.md).
 * Reusing the prepared statement of the same SQL text is safe: Kysely runs one query at a time
 * on the connection. Least recently used statements go first past STATEMENT_CACHE_SIZE.
 */
function cachingStatements (database: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>()
  return {
    close: () => { cache.clear(); database.close() },
    prepare: (text: string) => {
      let statement = cache.get(text)
      if (statement) cache.delete(text)
      else statement = database.prepare(text)
      cache.set(text, statement)
      if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>
    }
  }
}

export function isPostgres (db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

/** better-sqlite3 cannot bind booleans: write them as 0/1 so domain code stays dialect-free. */
class SqliteBooleans implements KyselyPlugin {
  readonly #transformer = new (class extends OperationNodeTransformer {
    protected override transformValue (node: ValueNode): ValueNode {
      const value = node.value
      return typeof value === 'boolean' ? { ...node, value: value ? 1 : 0 } : super.transformValue(node)
    }

    // Inserts of plain values carry them as one list, not as ValueNodes.
    protected override transformPrimitiveValueList (node: PrimitiveValueListNode): PrimitiveValueListNode {
      return { ...node, values: node.values.map(v => (typeof v === 'boolean' ? (v ? 1 : 0) : v)) }
    }
  })()

  transformQuery (args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node)
  }

  async transformResult (args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}
