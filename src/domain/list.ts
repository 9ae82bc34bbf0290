import type { FastifyReply, FastifyRequest } from 'fastify'
import { sql, type SelectQueryBuilder } from 'kysely'

/** The list conventions of DESIGN §1, written once: paging, sorting, the envelope's total, Link. */

export interface Page {
  limit: number
  offset: number
  /** the paging form the client used: links repeat it (`page`/`count` is the spec's alternative form) */
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

/**
 * Sets the RFC 8288 `Link` header with `next`/`prev` (and `first`) where they exist, keeping
 * the request's other query parameters as they were.
 */
export function setPageLinks (request: FastifyRequest, reply: FastifyReply, page: Page, total: number): void {
  const [path, search = ''] = request.url.split('?')
  const links: string[] = []
  const at = (offset: number, rel: string) => {
    const params = new URLSearchParams(search)
    if (page.style === 'page') {
      // ceil: a prev link from beyond the end lands on the last page, not between pages
      params.set('page', String(Math.ceil(offset / page.limit) + 1))
      params.set('count', String(page.limit))
    } else {
      params.set('limit', String(page.limit))
      params.set('offset', String(offset))
    }
    links.push(`<${path}?${params.toString()}>; rel="${rel}"`)
  }
  if (page.offset + page.limit < total) at(page.offset + page.limit, 'next')
  if (page.offset > 0) at(Math.max(0, Math.min(page.offset - page.limit, total - page.limit > 0 ? total - page.limit : 0)), 'prev')
  if (page.offset > 0) at(0, 'first')
  if (links.length > 0) reply.header('link', links.join(', '))
}

/** The list envelope `{<plural>: items, total}` with its Link header set. */
export function listReply<K extends string, T> (request: FastifyRequest, reply: FastifyReply, plural: K, items: T[], total: number, page: Page) {
  setPageLinks(request, reply, page, total)
  return { [plural]: items, total } as { [P in K]: T[] } & { total: number }
}
