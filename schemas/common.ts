import { Type, type SchemaOptions, type Static, type TSchema, type TObject, type TProperties } from './typebox.js'

/** A reference to a named component schema that still carries its static type. */
export function ref<T extends TSchema> (schema: T) {
  if (!schema.$id) throw new Error('ref() needs a schema with an $id')
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id))
}

export const Uuid = Type.String({ format: 'uuid', description: 'UUIDv4', examples: ['7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'] })

/** Output date-time: UTC with a colon-less offset and no fraction. */
export const DATE_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\+0000$'
export const DateTime = Type.String({
  pattern: DATE_TIME_PATTERN,
  description: 'UTC date-time, %Y-%m-%dT%H:%M:%S%z',
  examples: ['2026-11-21T09:30:00+0000']
})

/** Input date-time: any RFC 3339 date-time; +hhmm offsets too; no zone means UTC. */
export const DateTimeInput = Type.String({
  format: 'lenient-date-time',
  description: 'RFC 3339 date-time; offsets Z, +hh:mm or +hhmm; no zone means UTC; the fraction is dropped; ' +
    'from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC',
  examples: ['2026-11-21T09:30:00Z']
})

export const DateOnly = Type.String({ format: 'date', description: 'calendar date, YYYY-MM-DD, from 0001-01-01 to 9999-12-31', examples: ['2026-12-01'] })

/** A URL that must point to one of ALLOWED_MEDIA_HOSTS (so a post or avatar never points to a host Roja does not trust). */
export const MediaUrl = Type.String({
  format: 'media-url',
  maxLength: 2048,
  description: 'URL on an allowed internal media host (ALLOWED_MEDIA_HOSTS)',
  examples: ['http://127.0.0.1:3000/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10']
})

/**
 * A value or null, as one JSON-Schema type list rather than an anyOf: a failing input reports
 * the one rule it broke, and fast-json-stringify writes it without running a validator per value.
 * Schemas without a single `type` (unions of literals) fall back to an anyOf.
 */
export function Nullable<T extends TSchema> (schema: T, options: SchemaOptions = {}) {
  const { type, enum: values, anyOf, ...rest } = { ...schema, ...options } as unknown as { type?: unknown, enum?: unknown[], anyOf?: TSchema[] }
  if (typeof type === 'string') {
    return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'], ...(values ? { enum: [...values, null] } : {}) })
  }
  if (anyOf && anyOf.every(s => (s as { const?: unknown }).const !== undefined)) {
    // a union of literals: one enum with null among its values
    return Type.Unsafe<Static<T> | null>({ ...rest, enum: [...anyOf.map(s => (s as unknown as { const: unknown }).const), null] })
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()], options))
}

/** An optional input that also takes null. */
export function OptionalOrNull<T extends TSchema> (schema: T) {
  return Type.Optional(Nullable(schema))
}

/** 304 on a GET whose If-None-Match names the current ETag. */
export const NotModified = Type.Null({ description: 'Not Modified: the If-None-Match ETag is current' })

/** The conditional-request headers of single-resource routes. */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'ETag the change is based on; a stale one is 412' }))
})

/** The header of creating POSTs: a retry with the same key and body answers as the first did. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'client-chosen key, 1..255 visible ASCII characters; kept 24 h' }))
})

/** 204 on a successful DELETE: no body. */
export const NoContent = Type.Null({ description: 'No Content: deleted' })

export const QueuedStatus = Type.Object({ status: Type.Literal('queued') }, {
  $id: 'Queued',
  title: 'Queued',
  additionalProperties: false
})

export const LIMIT_DEFAULT = 10
export const LIMIT_MAX = 100
/** The largest offset (and any other unbounded integer input): past 2^53 − 1 a JSON number is not exact, nor safe to hand to SQL. */
export const OFFSET_MAX = Number.MAX_SAFE_INTEGER

/** limit/offset paging, shared by every list. */
export const PageQuery = {
  limit: Type.Integer({ minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: 'page size' }),
  offset: Type.Integer({ minimum: 0, maximum: OFFSET_MAX, default: 0, description: 'number of items skipped' })
}

/**
 * The query of a list: limit, offset, sort over the named fields, plus the list's filters.
 * `sort` is `field,-other`; the pattern is built from the list's own sortable fields (the exported
 * documents read them back from it and describe sort as a comma-separated array of an enum).
 */
export function ListQuery<F extends TProperties> (sortable: readonly string[], filters: F, defaultSort?: string) {
  return Type.Object({
    ...PageQuery,
    sort: Type.Optional(Type.String({
      pattern: sortPattern(sortable),
      maxLength: sortable.reduce((n, f) => n + f.length + 2, 0),
      description: `comma-separated fields, a leading - sorts descending, each at most once; one of: ${sortable.join(', ')}` +
        (defaultSort ? `; default: ${defaultSort}` : ''),
      examples: [sortable.map((f, i) => (i === 0 ? `-${f}` : f)).slice(0, 2).join(',')]
    })),
    ...filters
  }, { additionalProperties: false })
}

/**
 * `field,-other` over the sortable fields, each at most once: so at most one term a field, and a
 * text no longer than all of them. The length is checked first, so a long value costs one look.
 */
function sortPattern (sortable: readonly string[]): string {
  const fields = sortable.map(escapeRegex).join('|')
  const longest = sortable.reduce((n, f) => n + f.length + 2, 0)
  const repeated = `(?!(?:[^,]*,)*-?(${fields}),(?:[^,]*,)*-?\\1(?:,|$))`
  return `^(?=.{1,${longest}}$)${repeated}-?(${fields})(,-?(${fields})){0,${sortable.length - 1}}$`
}

/** The list envelope `{<plural>: [...], total}`. */
export function ListOf<K extends string, T extends TSchema> (plural: K, item: T, title: string) {
  return Type.Object({
    [plural]: Type.Array(item),
    total: Type.Integer({ minimum: 0, description: 'number of items the filters match' })
  } as { [P in K]: ReturnType<typeof Type.Array<T>> } & { total: ReturnType<typeof Type.Integer> }, {
    $id: title,
    title,
    additionalProperties: false
  })
}

export function Params<P extends TProperties> (props: P): TObject<P> {
  return Type.Object(props, { additionalProperties: false })
}

function escapeRegex (s: string) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
