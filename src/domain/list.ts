import { sql, type SelectQueryBuilder } from 'kysely'
import { LIMIT_DEFAULT } from '../../schemas/common.js'
import { AppError } from './errors.js'

/** The list rules, written once: paging (both forms and their bounds), sorting, the envelope's total. */

export interface Page {
  limit: number
  offset: number
  /** the paging form the client used: links repeat it (`page`/`count` is the alternative form) */
  style?: 'offset' | 'page'
}

export interface SortKey {
  column: string
  direction: 'asc' | 'desc'
  /** a nullable column: nulls go last in both directions, the same on SQLite and PostgreSQL */
  nullsLast?: boolean
}

/**
 * Parses `sort=field,-other` (already checked against the list's enum by its schema) into
 * columns through the list's own map, so only named columns can ever reach SQL.
 * `tiebreak` (usually the id) keeps pages stable when sort values repeat; `nullable` names the
 * mapped columns that may hold NULL (sorted last either way).
 */
export function parseSort (sort: string | undefined, columns: Record<string, string>, fallback: SortKey[], tiebreak = 'id', nullable: readonly string[] = []): SortKey[] {
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

/** Applies sort keys, limit and offset to a select. */
export function applyPage<DB, TB extends keyof DB, O> (query: SelectQueryBuilder<DB, TB, O>, sort: SortKey[], page: Page): SelectQueryBuilder<DB, TB, O> {
  let q = query
  for (const key of sort) {
    // Only nullable columns say NULLS LAST: on NOT NULL columns it would keep PostgreSQL off the index.
    q = key.nullsLast
      ? q.orderBy(key.column as never, ob => (key.direction === 'desc' ? ob.desc() : ob.asc()).nullsLast())
      : q.orderBy(key.column as never, key.direction)
  }
  return q.limit(page.limit).offset(page.offset)
}

/**
 * Runs one list: the page (sorted, limited) and the `total` of every row the query's filters
 * match. Give it the filtered select without order or paging; no GROUP BY (the count would count groups).
 * `total`: a cheaper exact way to the same number (a maintained counter), used instead of count(*).
 */
export async function fetchPage<DB, TB extends keyof DB, O> (query: SelectQueryBuilder<DB, TB, O>, sort: SortKey[], page: Page, total?: () => Promise<number>): Promise<{ rows: O[], total: number }> {
  const counted = async () => {
    const count = await (query.clearSelect() as unknown as SelectQueryBuilder<DB, TB, object>)
      .select(sql<number | string>`count(*)`.as('total')).executeTakeFirst()
    return Number((count as { total?: number | string } | undefined)?.total ?? 0)
  }
  const [rows, counts] = await Promise.all([applyPage(query, sort, page).execute(), (total ?? counted)()])
  return { rows, total: counts }
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
      errors: [{
        in: 'query',
        field: query.page !== undefined ? '/page' : '/count',
        rule: 'pagingForm',
        message: 'cannot be combined with limit/offset: use one paging form'
      }]
    })
  }
  if (pageForm) {
    const count = query.count ?? LIMIT_DEFAULT
    return { limit: count, offset: ((query.page ?? 1) - 1) * count, style: 'page' }
  }
  return { limit: query.limit ?? LIMIT_DEFAULT, offset: query.offset ?? 0 }
}
