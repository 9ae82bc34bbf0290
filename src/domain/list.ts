import { LIMIT_DEFAULT } from '../../schemas/common.js'
import { AppError } from '../../schemas/problems.js'
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
 * A list that accepts both paging forms: `limit`/`offset` or `page`/`count`
 * (1-based page). Mixing them is a 422 that names the offending parameter.
 */
export function pageOrCount (query: PagingQuery): Page {
  const offsetForm = query.limit !== undefined || query.offset !== undefined
  const pageForm = query.page !== undefined || query.count !== undefined
  if (offsetForm && pageForm) {
    throw new AppError('ValidationFailed', 'page with limit/offset or with page/count, not both', {
      errors: [
        {
          in: 'query',
          field: query.page !== undefined ? '/page' : '/count',
          rule: 'pagingForm',
          message: 'cannot be combined with limit/offset: use one paging form'
        }
      ]
    })
  }
  if (pageForm) {
    const count = query.count ?? LIMIT_DEFAULT
    return { limit: count, offset: ((query.page ?? 1) - 1) * count, style: 'page' }
  }
  return { limit: query.limit ?? LIMIT_DEFAULT, offset: query.offset ?? 0 }
}
