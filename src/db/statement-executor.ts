import {
  CompiledQuery, type ConnectionProvider, type DatabaseConnection, DefaultConnectionProvider, DefaultQueryExecutor, type Dialect,
  type DialectAdapter, type Driver, Kysely, type KyselyProps, type QueryCompiler, type QueryResult, Transaction, TransactionBuilder
} from './kysely.js'
import type { Database } from './schema.js'

/**
 * Kysely's query builders, compiler and adapter over Roja's drivers, whose statements go straight
 * to a connection: on their own, or on the connection a transaction holds. Kysely passes each
 * statement through its connection providers, an open-transaction check, a logging wrapper and
 * its plugins' transform, about ten promises. Why: docs/decisions/0015-statements-run-at-once.md
 */

/** A connection that runs a statement and times and logs it as it runs (Kysely's `log`). */
export interface StatementConnection extends DatabaseConnection {
  execute: <R>(query: CompiledQuery) => QueryResult<R> | Promise<QueryResult<R>>
  /** ends a failed transaction, whatever state the failure left it in */
  rollback: () => void | Promise<void>
}

/** Kysely's driver, whose connections run statements, and which runs one on a connection of its own. */
export interface StatementDriver extends Driver, StatementRunner {
  acquireConnection: () => Promise<StatementConnection>
  releaseConnection: (connection: StatementConnection) => Promise<void>
}

interface StatementRunner {
  run: <R>(query: CompiledQuery) => Promise<QueryResult<R>>
}

/** Kysely on a dialect's compiler and adapter and one of Roja's drivers. */
export function statementKysely (dialect: Dialect, driver: StatementDriver): Kysely<Database> {
  const executor = new StatementExecutor(dialect.createQueryCompiler(), dialect.createAdapter(), new DefaultConnectionProvider(driver), driver)
  return new StatementKysely({ config: { dialect }, dialect, driver, executor })
}

/** Kysely's props, with Roja's executor and driver. */
interface StatementProps extends KyselyProps {
  readonly driver: StatementDriver
  readonly executor: StatementExecutor
}

/** Kysely's executor, but a statement goes straight to its runner. A Kysely with plugins (the Migrator's) gets Kysely's own. */
class StatementExecutor extends DefaultQueryExecutor {
  constructor (
    private readonly compiler: QueryCompiler,
    adapter: DialectAdapter,
    provider: ConnectionProvider,
    private readonly runner: StatementRunner
  ) {
    super(compiler, adapter, provider)
  }

  override async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    return await this.runner.run(query) // awaited: a database error keeps the query's callers on its stack
  }

  /** This executor for a transaction: its statements on the connection the transaction holds. */
  heldBy (held: HeldConnection): StatementExecutor {
    return new StatementExecutor(this.compiler, this.adapter, held, held)
  }
}

/** Kysely whose transactions hold a connection and run their statements on it (below). */
class StatementKysely extends Kysely<Database> {
  constructor (private readonly props: StatementProps) {
    super(props)
  }

  override transaction (): TransactionBuilder<Database> {
    return new StatementTransactionBuilder(this.props)
  }
}

/** Kysely's transaction: begin, the work, commit, or rollback when it throws; the connection is held throughout. */
class StatementTransactionBuilder extends TransactionBuilder<Database> {
  constructor (private readonly props: StatementProps) {
    super(props)
  }

  override async execute<T> (work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    const { driver, executor } = this.props
    const connection = await driver.acquireConnection()
    const held = new HeldConnection(connection)
    try {
      await connection.execute(BEGIN)
      try {
        const result = await work(new Transaction<Database>({ ...this.props, executor: executor.heldBy(held) }))
        await connection.execute(COMMIT)
        return result
      } catch (err) {
        await connection.rollback()
        throw err
      }
    } finally {
      held.end()
      await driver.releaseConnection(connection)
    }
  }
}

const BEGIN = CompiledQuery.raw('begin')
const COMMIT = CompiledQuery.raw('commit')
export const ROLLBACK = CompiledQuery.raw('rollback')

/** A transaction's connection until it ends; used after, it throws, as Kysely's transactions do. */
class HeldConnection implements ConnectionProvider, StatementRunner {
  #open = true

  constructor (private readonly connection: StatementConnection) {}

  async provideConnection<T> (consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    this.#assertOpen()
    return await consumer(this.connection)
  }

  async run<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    this.#assertOpen()
    return await this.connection.execute<R>(query)
  }

  end (): void {
    this.#open = false
  }

  #assertOpen (): void {
    if (!this.#open) throw new Error('Transaction is already committed or rolled back')
  }
}
