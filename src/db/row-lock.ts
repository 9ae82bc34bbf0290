import type { SelectQueryBuilder } from './kysely.js'
import { isPostgres, type Executor } from './dialect.js'

/**
 * Locks the rows `query` selects until the transaction ends, so a check made on them still holds
 * at the write. PostgreSQL only: SQLite runs one write transaction at a time.
 */
export async function lockForUpdate (trx: Executor, query: SelectQueryBuilder<any, any, unknown>): Promise<void> {
  if (isPostgres(trx)) await query.forUpdate().execute()
}
