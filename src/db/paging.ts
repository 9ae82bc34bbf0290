import { sql, type RawBuilder, type SelectQueryBuilder } from './kysely.js'
import { cachedStatementPerShape, type Values } from './statement-cache.js'
import { isPostgres, type Db, type Executor } from './dialect.js'
import type { Database } from './schema.js'

/**
 * How a list's page is read, in one room: sorting, page sizes written into statements, and reading
 * a deep page's keys first (with PostgreSQL's cap). The domain says what a list selects and filters;
 * this module decides how its pages are read, by dialect. Why: docs/decisions/0009-deep-pages-by-key.md
 */

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

/** Sort keys as the text of a shape key: every field, so two sorts never share one (cheaper than JSON on every page). */
function sortKeyOf (sort: SortKey[]): string {
  let key = ''
  for (const k of sort) key += `${k.column} ${k.direction}${k.nullsLast === true ? ' nulls last' : ''},`
  return key
}

function applySort<DB, TB extends keyof DB, O> (query: SelectQueryBuilder<DB, TB, O>, sort: SortKey[]): SelectQueryBuilder<DB, TB, O> {
  let q = query
  for (const key of sort) {
    // Only nullable columns say NULLS LAST: on NOT NULL columns it would keep PostgreSQL off the index.
    q = key.nullsLast
      ? q.orderBy(key.column as never, ob => (key.direction === 'desc' ? ob.desc() : ob.asc()).nullsLast())
      : q.orderBy(key.column as never, key.direction)
  }
  return q
}

/**
 * A page's size as a statement writes it: in the text, one statement per size (a cached shape's
 * key must name the size). PostgreSQL keeps a generic plan for the keys-first page, and SQLite would
 * prepare a page with a bound LIMIT again on every run. Why: docs/decisions/0009-deep-pages-by-key.md
 */
export function pageSize (limit: number): RawBuilder<number> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`a page size is a whole number of rows, not ${limit}`) // the schemas bound it
  return sql.lit(limit)
}

// any table set: the list's own select decides
type Filtered<V, O> = (db: Db, values: V) => SelectQueryBuilder<Database, any, O>

/**
 * A list whose filters need only its own table and whose rows join others: a deep page finds its
 * keys on the table alone, so the rows its offset skips are never joined, then reads those rows.
 * Why: docs/decisions/0009-deep-pages-by-key.md
 */
export interface KeysFirst<V> {
  /** the table's primary key, as the selects name it (`post.id`) */
  key: string
  /** the table alone, with the same filters as the list's select */
  keys: (db: Db, values: V) => SelectQueryBuilder<Database, any, unknown>
  /** the select of the rows shown, joins included, without filters: the page adds the keys and the sort */
  rows: (db: Db) => SelectQueryBuilder<Database, any, unknown>
  /** the values narrow the list to few rows (one creator's posts): its pages are cheaper read directly */
  narrow?: (values: V) => boolean
  /** the offset from which SQLite reads a page's keys first (KEYS_FIRST_FROM) */
  from?: number
}

// Where reading keys first starts to pay on SQLite (a shallow page reads its rows directly, for less);
// PostgreSQL reads every page's keys first, as it keeps one generic plan for that shape and plans the
// direct one anew on every run.
const KEYS_FIRST_FROM = 100

/** Whether a page that skips `skipped` rows reads its keys first (a keyset page skips none). */
export function readsKeysFirst (db: Executor, narrow: boolean, skipped: number, from = KEYS_FIRST_FROM): boolean {
  return !narrow && (isPostgres(db) || skipped >= from)
}

/**
 * The most rows a keys-first page reads: the next power of two at or past its end (at least 128),
 * written into the statement. PostgreSQL's generic plan assumes an offset of a tenth of the rows it
 * expects; capped, that is a tenth of the cap, so it keeps one plan for pages of a large table
 * rather than plan each. Why: docs/decisions/0009-deep-pages-by-key.md
 */
export function keysCap (page: Page): number {
  // at most 2^53 - 1, which no table reaches, so a page near OFFSET_MAX is still whole (and empty)
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(128, 2 ** Math.ceil(Math.log2(page.offset + page.limit))))
}

interface PageShape {
  sort: SortKey[]
  byKeys: boolean
  limit: number
  cap: number
}

/**
 * A keys-first page's keys, `page_key` (named apart from every column, so the rows' sort never
 * reads it): the page of the table alone, or with a cap, the page of its first `cap` rows.
 */
function pageKeys<V> (db: Db, keysFirst: KeysFirst<V>, values: V & { offset: number }, { sort, limit, cap }: Omit<PageShape, 'byKeys'>) {
  const keys = keysFirst.keys(db, values).clearSelect()
  if (cap === 0) {
    return applySort(keys.select(`${keysFirst.key} as page_key` as never), sort)
      .limit(pageSize(limit))
      .offset(values.offset)
  }
  const capped = applySort(keys.select([`${keysFirst.key} as page_key`, ...sort.map((k, i) => `${k.column} as sort_${i}`)] as never), sort).limit(
    pageSize(cap)
  )
  return applySort(
    db.selectFrom(capped.as('capped')).select('capped.page_key' as never),
    sort.map((k, i) => ({ ...k, column: `capped.sort_${i}` }))
  )
    .limit(pageSize(limit))
    .offset(values.offset)
}

/** SQLite plans every statement once, whatever its values: the cap would only cost it (5 % on deep pages at 1 M posts). */
function pageShape (sort: SortKey[], page: Page, byKeys: boolean, postgres: boolean): PageShape {
  return { sort, byKeys, limit: page.limit, cap: byKeys && postgres ? keysCap(page) : 0 }
}

export interface CompiledList<V extends Values, O> {
  /**
   * The page (sorted, limited) and the `total` of every row the filters match, run together.
   * `total`: a cheaper exact way to the same number (a maintained counter), used instead of count(*).
   */
  page: (db: Executor, values: V, sort: SortKey[], page: Page, total?: () => Promise<number>) => Promise<{ rows: O[]; total: number }>
  /** count(*) of the rows the filters match */
  count: (db: Executor, values: V) => Promise<number>
}

/**
 * A list, written once: `filtered` gives its select with the filters the defined values call for
 * (no order, no paging, no GROUP BY: the count would count groups). Page and count are cached per
 * shape (cachedStatementPerShape), so the values reach `filtered` as placeholders.
 */
export function compiledList<V extends Values, O> (filtered: Filtered<V, O>, keysFirst?: KeysFirst<V>): CompiledList<V, O> {
  const pageOf = cachedStatementPerShape(
    (db, { sort, byKeys, limit, cap }: PageShape, values: V & { offset: number }) => {
      if (!keysFirst || !byKeys) return applySort(filtered(db, values), sort).limit(pageSize(limit)).offset(values.offset)
      const keys = pageKeys(db, keysFirst, values, { sort, limit, cap })
      return applySort(
        keysFirst.rows(db).innerJoin(keys.as('page'), join => join.onRef('page.page_key' as never, '=', keysFirst.key as never)),
        sort
      ) as unknown as SelectQueryBuilder<Database, any, O>
    },
    ({ sort, byKeys, limit, cap }) => `${byKeys ? `keys${cap}:` : ''}${limit}:${sortKeyOf(sort)}`
  )
  const countOf = cachedStatementPerShape((db, _: undefined, values: V) =>
    (keysFirst ? keysFirst.keys(db, values) : filtered(db, values)).clearSelect().select(sql<number | string>`count(*)`.as('total'))
  )
  const count = async (db: Executor, values: V) => Number((await countOf(db, undefined, values))[0]?.total ?? 0)
  return {
    count,
    page: async (db, values, sort, page, total) => {
      const postgres = isPostgres(db)
      const byKeys = keysFirst !== undefined && readsKeysFirst(db, keysFirst.narrow?.(values) ?? false, page.offset, keysFirst.from)
      const [rows, counted] = await Promise.all([
        // Object.assign, not a spread that gains keys (V8's slow path). Why: docs/decisions/0005-statement-shapes.md
        pageOf(db, pageShape(sort, page, byKeys, postgres), Object.assign({}, values, { offset: page.offset })) as Promise<O[]>,
        total ? total() : count(db, values)
      ])
      return { rows, total: counted }
    }
  }
}

/**
 * A keyset list (v2's pages): `positioned` gives the select of the rows after a position, filtered,
 * without order or limit. A page reads its keys on the table alone first, then its rows, where
 * readsKeysFirst says so (always on PostgreSQL, for its generic plan).
 */
export function keysetList<V extends Values, O> (spec: {
  /** the table's primary key, as the selects name it (`post.id`) */
  key: string
  /** the rows shown after the position, joins included */
  positioned: (db: Db, values: V) => SelectQueryBuilder<Database, any, O>
  /** the table alone after the position, with the same filters */
  keys: (db: Db, values: V) => SelectQueryBuilder<Database, any, unknown>
  /** the select of the rows shown, joins included, without filters */
  rows: (db: Db) => SelectQueryBuilder<Database, any, unknown>
  order: SortKey[]
  narrow?: (values: V) => boolean
}) {
  const pageOf = cachedStatementPerShape(
    (db, { limit, byKeys }: { limit: number; byKeys: boolean }, values: V) => {
      if (!byKeys) return applySort(spec.positioned(db, values), spec.order).limit(pageSize(limit))
      const keys = applySort(spec.keys(db, values).select(`${spec.key} as page_key` as never), spec.order).limit(pageSize(limit))
      return applySort(
        spec.rows(db).innerJoin(keys.as('page'), join => join.onRef('page.page_key' as never, '=', spec.key as never)),
        spec.order
      ) as unknown as SelectQueryBuilder<Database, any, O>
    },
    ({ limit, byKeys }) => `${byKeys ? 'keys:' : ''}${limit}`
  )
  return {
    /** `limit` rows after the position the values name */
    page: (db: Executor, values: V, limit: number) =>
      pageOf(db, { limit, byKeys: readsKeysFirst(db, spec.narrow?.(values) ?? false, 0) }, values) as Promise<O[]>
  }
}
