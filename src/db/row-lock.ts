import type { SelectQueryBuilder } from './kysely.js'
import { isPostgres, type Executor } from './dialect.js'

/**
 * Locks the rows `query` selects until the transaction ends, so a check made on them still holds
 * at the write. PostgreSQL only: SQLite runs one write transaction at a time.
 */
export async function lockForUpdate (trx: Executor, query: SelectQueryBuilder<any, any, unknown>): Promise<void> {
  if (isPostgres(trx)) await query.forUpdate().execute()
}

/** The row `query` selects, locked until the transaction ends on PostgreSQL (SQLite serialises writers); undefined when there is none. */
export async function lockedRow<O> (trx: Executor, query: SelectQueryBuilder<any, any, O>): Promise<O | undefined> {
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst()
}

/**
 * The rows `query` selects that no other transaction holds, locked until this one ends: workers
 * each claim their own (FOR UPDATE SKIP LOCKED). SQLite has no row locks; one process's
 * transactions are serialised, which is enough there.
 */
export function claimUnlocked<Q extends SelectQueryBuilder<any, any, any>> (trx: Executor, query: Q): Q {
  return isPostgres(trx) ? query.forUpdate().skipLocked() as Q : query
}
