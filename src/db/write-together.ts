import { isPostgres, type Executor } from './dialect.js'

/**
 * A write of several rows, all or nothing, and its read-back. On PostgreSQL `statement`: one
 * statement of data-modifying CTEs, atomic by itself, one round trip. On SQLite, which has no
 * data-modifying CTEs and, in process, no round trips to save: `steps`, in one transaction.
 * Why: docs/decisions/0013-post-create-in-one-statement.md
 */
export async function writeTogether<T> (
  db: Executor,
  statement: (db: Executor) => Promise<T>,
  steps: (trx: Executor) => Promise<T>
): Promise<T> {
  return isPostgres(db) ? statement(db) : db.transaction().execute(steps)
}
