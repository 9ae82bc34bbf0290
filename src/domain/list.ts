import { LIMIT_DEFAULT } from '../../schemas/common.js'
import type { Page, SortKey } from '../db/paging.js'

/** The list rules, written once: paging's two forms and their bounds, sorting by the list's own fields. */

/**
 * Parses `sort=field,-other` (already checked against the list's enum by its schema) into
 * columns through the list's own map, so only named columns can ever reach SQL.
 * `tiebreak` (usually the id) keeps pages stable when sort values repeat; `nullable` names the
 * mapped columns that may hold NULL (sorted last either way).
 */
export function parseSort (
  sort: string | undefined,
  columns: Record<string, string>,
  fallback: SortKey[],
  tiebreak = 'id',
  nullable: readonly string[] = []
): SortKey[] {
  const keys: SortKey[] = sort
    ? sort.split(',').map(part => {
      const desc = part.startsWith('-')
      const column = columns[desc ? part.slice(1) : part]
      if (!column) throw new Error(`unsortable field ${part}`) // unreachable: the schema's pattern names the fields
      return { column, direction: desc ? 'desc' : 'asc', ...(nullable.includes(column) ? { nullsLast: true } : {}) }
    })
    : [...fallback]
  const last = keys[keys.length - 1]
  if (!keys.some(k => k.column === tiebreak)) keys.push({ column: tiebreak, direction: last?.direction ?? 'desc' })
  return keys
}

export interface PagingQuery {
  limit?: number
  offset?: number
  page?: number
  count?: number
}

/**
 * The page a list that takes both paging forms stands for: `limit`/`offset` or `page`/`count`
 * (1-based page). The query's schema has already refused the two forms together.
 */
export function pageOrCount (query: PagingQuery): Page {
  if (query.page !== undefined || query.count !== undefined) {
    const count = query.count ?? LIMIT_DEFAULT
    return { limit: count, offset: ((query.page ?? 1) - 1) * count, style: 'page' }
  }
  return { limit: query.limit ?? LIMIT_DEFAULT, offset: query.offset ?? 0 }
}
