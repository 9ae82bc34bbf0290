import { sql, type Expression, type RawBuilder, type SelectQueryBuilder, type SqlBool } from './kysely.js'
import { isPostgres, type Executor } from './dialect.js'
import { lockForUpdate } from './row-lock.js'

/**
 * A change of one row that reads it, checks it (owner, If-Match, a PATCH's merge) and writes it,
 * with nothing written to the row in between.
 *
 * PostgreSQL, no transaction: `read` takes the row with its version (`rowVersion`), `statement`
 * writes it in one statement only where it still has that version (`sameVersion`) and answers
 * undefined where it had changed. A change that lost that race is done again under the row's lock
 * (`lock`), against the row as it is then, so its checks always judge the row it writes and a
 * refusal still writes nothing. SQLite, in process, runs `read` and `steps` in one transaction.
 * A change one statement cannot make safely (a move that shifts the row's siblings) is made by
 * `steps` under the lock (`needsLock`).
 * Why: docs/decisions/0014-updates-without-a-transaction.md
 */
export interface RowChange<R, T> {
  /**
   * selects the row's key, to lock it when the first attempt lost a race; or several queries,
   * locked in order (a parent row whose lock writers of the row's siblings take, then the row)
   */
  lock: (db: Executor) => SelectQueryBuilder<any, any, unknown> | Array<SelectQueryBuilder<any, any, unknown>>
  /** the row as it is now, checked; throws the refusal (not found, not the owner, stale If-Match, broken rules) */
  read: (db: Executor) => Promise<R>
  /** PostgreSQL: the write and its read-back in one statement, where the row has `read`'s version; undefined where not */
  statement: (db: Executor, read: R) => Promise<T | undefined>
  /** SQLite: the write and its read-back, in the transaction that read; on PostgreSQL too, under the lock, where `needsLock` */
  steps: (trx: Executor, read: R) => Promise<T>
  /** the change `read` worked out needs more than one statement, each judging rows others may be changing: made under the lock */
  needsLock?: (read: R) => boolean
}

export async function changeRow<R, T> (db: Executor, change: RowChange<R, T>): Promise<T> {
  if (!isPostgres(db)) return db.transaction().execute(async trx => change.steps(trx, await change.read(trx)))
  const first = await change.read(db)
  const written = change.needsLock?.(first) ? undefined : await change.statement(db, first)
  if (written !== undefined) return written
  return db.transaction().execute(async trx => {
    for (const query of [change.lock(trx)].flat()) await lockForUpdate(trx, query)
    const read = await change.read(trx)
    if (change.needsLock?.(read)) return change.steps(trx, read)
    const again = await change.statement(trx, read)
    if (again === undefined) throw new Error('a locked row changed under its lock')
    return again
  })
}

/**
 * The version of `table`'s row as read, for `sameVersion`: PostgreSQL's xmin, which every write
 * of the row changes (a row lock does not). Null on SQLite, where the transaction keeps the row.
 */
export function rowVersion (db: Executor, table: string): RawBuilder<string | null> {
  return isPostgres(db) ? sql<string>`${sql.ref(`${table}.xmin`)}::text` : sql<null>`null`
}

/** The row of `table` still has the version `rowVersion` read. PostgreSQL only. */
export function sameVersion (table: string, version: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(`${table}.xmin`)} = ${version}::xid`
}
