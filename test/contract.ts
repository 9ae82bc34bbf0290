/**
 * Helpers that read the live OpenAPI document: the operations, value generators for their
 * schemas (fast-check), and seeding that makes ids exist. Shared by the fuzzer and the security matrix.
 */
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import type { TestUser } from './fixtures.js'

export type Schema = Record<string, any>
export interface Operation {
  version: string
  method: string
  path: string
  op: Schema
}
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const
export const MEDIA_BASE = 'http://127.0.0.1:3000'
export const MALFORMED_IDS = [
  'not-a-uuid',
  '../../etc/passwd',
  '..%2F..%2Fetc%2Fpasswd',
  "' OR 1=1 --",
  ';drop table post',
  '0',
  '-1',
  'a'.repeat(201),
  '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b1',
  '7f1d3c1e8b1a4c399a0e2f1c7e5d9b10',
  '%00',
  '\u0000',
  '😀',
  'null',
  '{}'
]
export const NASTY_STRINGS = [
  "' OR 1=1 --",
  ';drop table post',
  '\u0000',
  '😀👍🏽',
  'ß\u0301\u202e',
  '%s%n',
  '<script>',
  '../',
  'x'.repeat(70000),
  '  ',
  '\\',
  '"'
]

/** Every operation of a document; multipart-only operations are left out (they need streamed bodies). */
export function operationsOf (doc: Schema, version: string): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries<Schema>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method]
      if (!op) continue
      // multipart uploads need a streamed body; their own tests cover them
      if (op.requestBody && !op.requestBody.content?.['application/json']) continue
      out.push({ version, method: method.toUpperCase(), path, op })
    }
  }
  return out
}

/** Generators of values valid for a JSON schema (the subset TypeBox emits). */
export class Gen {
  constructor (private readonly components: Record<string, Schema>) {}

  resolve (s: Schema): Schema {
    while (s?.$ref) s = this.components[String(s.$ref).split('/').pop()!]
    return s ?? {}
  }

  valid (raw: Schema, simple = false): fc.Arbitrary<unknown> {
    const s = this.resolve(raw)
    if (s.const !== undefined) return fc.constant(s.const)
    if (s.enum) return fc.constantFrom(...s.enum)
    const variants = s.anyOf ?? s.oneOf
    if (variants) return fc.oneof(...variants.map((v: Schema) => this.valid(v, simple)))
    if (s.allOf) return this.valid(Object.assign({}, ...s.allOf.map((v: Schema) => this.resolve(v))), simple)
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type ?? 'string']
    if (types.length > 1) return fc.oneof(...types.map(type => this.valid({ ...s, type }, simple)))
    switch (types[0]) {
      case 'null':
        return fc.constant(null)
      case 'boolean':
        return fc.boolean()
      case 'integer':
        return fc.integer({ min: lower(s, -1e6), max: upper(s, 1e6) })
      case 'number':
        return fc.double({ min: lower(s, -1e6), max: upper(s, 1e6), noNaN: true, noDefaultInfinity: true })
      case 'array': {
        const item = this.valid(s.items ?? {}, simple)
        const c = { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) }
        return s.uniqueItems ? fc.uniqueArray(item, { ...c, selector: v => JSON.stringify(v) }) : fc.array(item, c)
      }
      case 'object': {
        const props = Object.fromEntries(Object.entries<Schema>(s.properties ?? {}).map(([k, v]) => [k, this.valid(v, simple)]))
        return fc.record(props, { requiredKeys: (s.required ?? []).filter((k: string) => k in props) })
      }
      default:
        return this.string(s, simple)
    }
  }

  private string (s: Schema, simple: boolean): fc.Arbitrary<string> {
    const min = s.minLength ?? 0
    const max = Math.min(s.maxLength ?? 40, 40)
    switch (s.format) {
      case 'uuid':
        return fc.uuid({ version: 4 })
      case 'email':
        return fc.stringMatching(/^[a-z]{1,12}@example\.com$/)
      case 'uri':
      case 'url':
        return fc.stringMatching(/^https:\/\/example\.com\/[a-z]{0,10}$/)
      case 'media-url':
        return fc.uuid({ version: 4 }).map(id => `${MEDIA_BASE}/v1/media/${id}`)
      case 'date':
        return fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }).map(d => d.toISOString().slice(0, 10))
      case 'date-time':
      case 'lenient-date-time':
        return fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }).map(d => d.toISOString())
    }
    if (s.pattern) {
      return fc
        .stringMatching(new RegExp(s.pattern), { size: 'small' })
        .filter(v => [...v].length >= min && [...v].length <= (s.maxLength ?? Infinity))
    }
    if (simple) return fc.stringMatching(new RegExp(`^[a-z][a-z0-9]{${Math.max(0, min - 1)},${Math.max(min, Math.min(max, 12)) - 1}}$`))
    return fc
      .oneof(fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' }), fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }))
      .filter(v => [...v].length >= min && [...v].length <= (s.maxLength ?? Infinity))
  }

  /** A value that is (usually) wrong for the schema; the oracle decides whether it really is. */
  wrong (raw: Schema): fc.Arbitrary<unknown> {
    const s = this.resolve(raw)
    const picks: Array<fc.Arbitrary<unknown>> = [
      fc.constantFrom<unknown>(123, -1, 0, 1.5, true, false, null, {}, [], 'str', '', 1e308, -0, 2 ** 53, { $gt: '' }),
      fc.constantFrom(...NASTY_STRINGS),
      fc.string({ unit: 'grapheme', maxLength: 30 })
    ]
    if (s.maxLength !== undefined) picks.push(fc.constant('y'.repeat(s.maxLength + 1)))
    if (s.minLength !== undefined && s.minLength > 0) picks.push(fc.constant('z'.repeat(s.minLength - 1)))
    if (s.maximum !== undefined) picks.push(fc.constantFrom(s.maximum + 1, s.maximum + 0.5))
    if (s.minimum !== undefined) picks.push(fc.constantFrom(s.minimum - 1, s.minimum - 0.5))
    if (s.format === 'uuid') picks.push(fc.constantFrom(...MALFORMED_IDS))
    return fc.oneof(...picks)
  }
}

function lower (s: Schema, fallback: number) {
  if (s.minimum !== undefined) return s.minimum
  if (s.exclusiveMinimum !== undefined) return s.exclusiveMinimum + 1
  return fallback
}
function upper (s: Schema, fallback: number) {
  if (s.maximum !== undefined) return s.maximum
  if (s.exclusiveMaximum !== undefined) return s.exclusiveMaximum - 1
  return fallback
}

/**
 * Makes ids exist so that valid requests reach the handlers: every creating POST of the document
 * is called with generated valid bodies (parents first), and every list is read; the ids found
 * are keyed by the path parameter that names them (`/v1/posts` + `/{postId}` → postId).
 */
export async function seed (app: FastifyInstance, doc: Schema, gen: Gen, creator: TestUser, user: TestUser) {
  const ids: Record<string, string[]> = { profileId: [creator.id, user.id], userId: [creator.id, user.id] }
  const paths = Object.keys(doc.paths ?? {})
  const childParam = (path: string) =>
    paths
      .find(p => p.startsWith(`${path}/{`))
      ?.slice(path.length + 2)
      .split('}')[0]
  const remember = (param: string, item: { id?: string; type?: string }) => {
    if (!item?.id) return
    ;(ids[param] ??= []).push(item.id)
    // a course is a post of type COURSE
    if (param === 'postId' && item.type === 'COURSE') (ids.courseId ??= []).push(item.id)
  }
  const fill = (path: string) => {
    let ok = true
    const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const known = ids[name]
      if (!known?.length) {
        ok = false
        return 'x'
      }
      return known[0]
    })
    return ok ? url : undefined
  }
  const byDepth = [...paths].sort((a, b) => a.split('/').length - b.split('/').length)
  // two passes: children whose parents only exist after the first (lessons of chapters of courses)
  for (let pass = 0; pass < 2; pass++) {
    for (const who of [creator, user]) {
      for (const path of byDepth) {
        const op = doc.paths[path].post
        const param = childParam(path)
        const schema = op?.requestBody?.content?.['application/json']?.schema
        const url = fill(path)
        if (!op || !param || !schema || !url) continue
        const bodies = fc.sample(gen.valid(schema, true), { numRuns: 6, seed: 42 + pass })
        for (const body of bodies) {
          const res = await app.inject({ method: 'POST', url, headers: who.headers, payload: body as object })
          if (res.statusCode === 201) remember(param, JSON.parse(res.body))
        }
      }
    }
    for (const path of byDepth) {
      const param = childParam(path)
      const url = fill(path)
      if (!doc.paths[path].get || !param || !url) continue
      for (const who of [creator, user]) {
        const res = await app.inject({ method: 'GET', url, headers: who.headers })
        if (res.statusCode !== 200) continue
        for (const value of Object.values<unknown>(JSON.parse(res.body))) {
          if (Array.isArray(value)) for (const item of value) remember(param, item)
        }
      }
    }
  }
  for (const [k, v] of Object.entries(ids)) ids[k] = [...new Set(v)]
  return ids
}
