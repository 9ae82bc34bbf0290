/**
 * Contract fuzzing: walks every operation of the live OpenAPI documents (v1, v2) and sends
 * generated valid and invalid requests, with and without tokens. For each answer:
 * no 5xx; the status is declared for the operation; the body matches the declared schema;
 * input that the document's own schemas refuse is never accepted (2xx).
 *
 * Runs FUZZ_RUNS cases per operation (default small, so `npm test` stays quick; `npm run fuzz`
 * runs more). Not fuzzed here: POST /v1/media (multipart, covered by its own tests) and the
 * hidden docs routes (/docs, /openapi/*.json, /metrics), which are not in the document.
 */
import Ajv2020 from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import fc from 'fast-check'
import t from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { build, dialect } from './helper.js'
import { createCreator, createUser, type TestUser } from './fixtures.js'
import { createAjv } from '../src/options.js'
import { isLenientDateTime } from '../src/db/time.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 12)
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const
type Schema = Record<string, any>
interface Operation { version: string, method: string, path: string, op: Schema }

const MEDIA_BASE = 'http://127.0.0.1:3000'
const ODD_CONTENT_TYPES = ['text/plain', 'application/xml', 'application/json\tx', ' application/json', 'application/json ;',
  'application/jsonp', 'multipart/form-data', 'application/x-www-form-urlencoded; charset=utf-16', '']
const MALFORMED_IDS = ['not-a-uuid', '../../etc/passwd', '..%2F..%2Fetc%2Fpasswd', "' OR 1=1 --", ';drop table post', '0', '-1',
  'a'.repeat(201), '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b1', '7f1d3c1e8b1a4c399a0e2f1c7e5d9b10', '%00', '\u0000', '😀', 'null', '{}']
const NASTY_STRINGS = ["' OR 1=1 --", ';drop table post', '\u0000', '😀👍🏽', 'ß\u0301\u202e', '%s%n', '<script>', '../', 'x'.repeat(70000), '  ', '\\', '"']

function operationsOf (doc: Schema, version: string): Operation[] {
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
class Gen {
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
      case 'null': return fc.constant(null)
      case 'boolean': return fc.boolean()
      case 'integer': return fc.integer({ min: lower(s, -1e6), max: upper(s, 1e6) })
      case 'number': return fc.double({ min: lower(s, -1e6), max: upper(s, 1e6), noNaN: true, noDefaultInfinity: true })
      case 'array': {
        const item = this.valid(s.items ?? {}, simple)
        const c = { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) }
        return s.uniqueItems ? fc.uniqueArray(item, { ...c, selector: v => JSON.stringify(v) }) : fc.array(item, c)
      }
      case 'object': {
        const props = Object.fromEntries(Object.entries<Schema>(s.properties ?? {}).map(([k, v]) => [k, this.valid(v, simple)]))
        return fc.record(props, { requiredKeys: (s.required ?? []).filter((k: string) => k in props) })
      }
      default: return this.string(s, simple)
    }
  }

  private string (s: Schema, simple: boolean): fc.Arbitrary<string> {
    const min = s.minLength ?? 0
    const max = Math.min(s.maxLength ?? 40, 40)
    switch (s.format) {
      case 'uuid': return fc.uuid({ version: 4 })
      case 'email': return fc.stringMatching(/^[a-z]{1,12}@example\.com$/)
      case 'uri': case 'url': return fc.stringMatching(/^https:\/\/example\.com\/[a-z]{0,10}$/)
      case 'media-url': return fc.uuid({ version: 4 }).map(id => `${MEDIA_BASE}/v1/media/${id}`)
      case 'date': return fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }).map(d => d.toISOString().slice(0, 10))
      case 'date-time': case 'lenient-date-time':
        return fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }).map(d => d.toISOString())
    }
    if (s.pattern) {
      return fc.stringMatching(new RegExp(s.pattern), { size: 'small' })
        .filter(v => [...v].length >= min && [...v].length <= (s.maxLength ?? Infinity))
    }
    if (simple) return fc.stringMatching(new RegExp(`^[a-z][a-z0-9]{${Math.max(0, min - 1)},${Math.max(min, Math.min(max, 12)) - 1}}$`))
    return fc.oneof(
      fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' }),
      fc.string({ minLength: min, maxLength: max, unit: 'grapheme' })
    ).filter(v => [...v].length >= min && [...v].length <= (s.maxLength ?? Infinity))
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

/** One generated request and whether the document's own schemas say it is invalid. */
interface Case {
  params: Record<string, string>
  query: Record<string, unknown>
  body?: unknown
  rawBody?: string
  contentType?: string
  auth: 'none' | 'creator' | 'user' | 'garbage'
  mutation: string
}

/** How a generated query value travels: objects and arrays as JSON text, the rest as String(). */
function queryText (value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)
}

function toQueryString (query: Record<string, unknown>): string {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    search.append(k, queryText(v))
  }
  const text = search.toString()
  return text ? `?${text}` : ''
}

for (const version of ['v1', 'v2'] as const) {
  t.test(`contract fuzzing of the ${version} document (${dialect})`, async (t) => {
    const app = await build(t)
    const doc = app.openapi(version)
    const gen = new Gen(doc.components?.schemas ?? {})
    const creator = await createCreator(app)
    const user = await createUser(app)
    const ids = await seed(app, doc, gen, creator, user)
    const oracle = requestOracle(app, doc)
    const responses = responseValidator(doc)

    for (const operation of operationsOf(doc, version)) {
      const { method, path, op } = operation
      t.test(`${method} ${path}`, async (t) => {
        const params: Schema[] = op.parameters ?? []
        const pathParams = params.filter(p => p.in === 'path')
        const queryParams = params.filter(p => p.in === 'query')
        const bodySchema = op.requestBody?.content?.['application/json']?.schema

        const validCase: fc.Arbitrary<Case> = fc.record({
          params: fc.record(Object.fromEntries(pathParams.map(p => [p.name,
            ids[p.name]?.length ? fc.oneof(fc.constantFrom(...ids[p.name]), gen.valid(p.schema)) : gen.valid(p.schema)]))),
          query: fc.record(Object.fromEntries(queryParams.map(p => [p.name, gen.valid(p.schema)])), { requiredKeys: [] }),
          body: bodySchema ? gen.valid(bodySchema) : fc.constant(undefined),
          auth: fc.constantFrom('none', 'creator', 'creator', 'user', 'garbage'),
          mutation: fc.constant('none')
        }) as fc.Arbitrary<Case>

        const invalidCase: fc.Arbitrary<Case> = validCase.chain((base) => {
          const mutations: Array<fc.Arbitrary<Case>> = [
            fc.record({ key: fc.constantFrom('zz_unknown', 'is_admin', '__proto__', 'constructor'), value: fc.string({ maxLength: 5 }) })
              .map(({ key, value }) => ({ ...base, query: { ...base.query, [key]: value }, mutation: `query +${key}` }))
          ]
          for (const p of pathParams) {
            mutations.push(fc.constantFrom(...MALFORMED_IDS).map(v => ({ ...base, params: { ...base.params, [p.name]: v }, mutation: `path ${p.name}` })))
          }
          for (const p of queryParams) {
            mutations.push(gen.wrong(p.schema).map(v => ({ ...base, query: { ...base.query, [p.name]: v }, mutation: `query ${p.name}` })))
          }
          if (bodySchema) {
            const s = gen.resolve(bodySchema)
            const props = Object.keys(s.properties ?? {})
            mutations.push(
              fc.constantFrom<unknown>(null, [], 'text', 42, true, {}).map(body => ({ ...base, body, mutation: 'body shape' })),
              fc.constantFrom('is_creator', 'is_active', 'creator_id', 'owner_id', 'id', 'created_at', 'unknown_field', '__proto__')
                .map(key => ({ ...base, body: withKey(base.body, key, true), mutation: `body +${key}` })),
              fc.constantFrom(...ODD_CONTENT_TYPES).map(contentType => ({ ...base, contentType, mutation: `content-type ${JSON.stringify(contentType)}` })),
              fc.constantFrom('{', '{"a":', '[1,]', 'nul', '\u0000', '{"title": "x"} trailing', '{"__proto__": {"x": 1}}'.repeat(2))
                .map(rawBody => ({ ...base, rawBody, mutation: 'malformed JSON' }))
            )
            for (const key of props) {
              mutations.push(gen.wrong(s.properties[key]).map(v => ({ ...base, body: withKey(base.body, key, v), mutation: `body ${key}` })))
            }
            for (const key of s.required ?? []) {
              mutations.push(fc.constant({ ...base, body: withoutKey(base.body, key), mutation: `body -${key}` }))
            }
          }
          return fc.oneof(...mutations)
        })

        const property = fc.asyncProperty(fc.oneof(validCase, invalidCase), async (c) => {
          const request = toRequest(method, path, c, { creator, user })
          const refused = c.mutation !== 'none' && (c.rawBody !== undefined || c.contentType !== undefined || !oracle(op, c))
          const res = await app.inject(request)
          const where = `${method} ${request.url} [${c.mutation}, auth ${c.auth}] → ${res.statusCode} ${res.body.slice(0, 300)}`
          if (res.statusCode >= 500) throw new Error(`5xx: ${where}`)
          const declared = op.responses?.[String(res.statusCode)] ?? op.responses?.[`${String(res.statusCode)[0]}XX`] ?? op.responses?.default
          if (!declared) throw new Error(`undeclared status: ${where}`)
          if (refused && res.statusCode < 300) throw new Error(`invalid input accepted: ${where}`)
          const schema = declared.content?.['application/json']?.schema ?? declared.content?.['application/problem+json']?.schema
          const type = String(res.headers['content-type'] ?? '')
          if (schema && /json/.test(type) && res.body.length > 0) {
            const problem = responses(schema, JSON.parse(res.body))
            if (problem) throw new Error(`body does not match the declared schema (${problem}): ${where}`)
          }
        })
        await fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: true })
        t.pass(`${RUNS} generated requests answered within the contract`)
      })
    }
  })
}

function withKey (body: unknown, key: string, value: unknown): unknown {
  const base = body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body } : {}
  // defineProperty so that "__proto__" becomes a real own key of the JSON
  Object.defineProperty(base, key, { value, enumerable: true, configurable: true, writable: true })
  return base
}
function withoutKey (body: unknown, key: string): unknown {
  const copy = { ...(body as Record<string, unknown>) }
  delete copy[key]
  return copy
}

function toRequest (method: string, path: string, c: Case, users: { creator: TestUser, user: TestUser }): InjectOptions {
  const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(String(c.params[name])))
  const headers: Record<string, string> = {}
  if (c.auth === 'creator') Object.assign(headers, users.creator.headers)
  if (c.auth === 'user') Object.assign(headers, users.user.headers)
  if (c.auth === 'garbage') headers.authorization = 'Bearer eyJhbGciOiJub25lIn0.eyJpZCI6IngifQ.'
  const request: InjectOptions = { method: method as InjectOptions['method'], url: url + toQueryString(c.query), headers }
  if (c.rawBody !== undefined) {
    headers['content-type'] = 'application/json'
    request.payload = c.rawBody
  } else if (c.body !== undefined) {
    headers['content-type'] = c.contentType ?? 'application/json'
    request.payload = JSON.stringify(c.body)
  }
  return request
}

/** Does the document's own request schema accept this case? (Same formats as the server.) */
function requestOracle (app: FastifyInstance, doc: Schema) {
  const components = doc.components?.schemas ?? {}
  const strict = createAjv(app.config, { coerceTypes: false, useDefaults: false })
  const coercing = createAjv(app.config, { coerceTypes: 'array', useDefaults: false })
  for (const ajv of [strict, coercing]) ajv.addSchema({ $id: 'doc', components: { schemas: components } })
  const cache = new Map<string, (data: unknown) => boolean>()
  const compile = (ajv: typeof strict, key: string, schema: Schema) => {
    let fn = cache.get(key)
    if (!fn) {
      const v = ajv.compile(rebase(schema))
      fn = (data) => v(structuredClone(data)) as boolean
      cache.set(key, fn)
    }
    return fn
  }
  return (op: Schema, c: Case): boolean => {
    const params: Schema[] = op.parameters ?? []
    const part = (where: string) => ({
      type: 'object',
      properties: Object.fromEntries(params.filter(p => p.in === where).map(p => [p.name, p.schema])),
      // a parameter with a default is optional whatever the document says
      required: params.filter(p => p.in === where && p.required && p.schema?.default === undefined).map(p => p.name),
      additionalProperties: false
    })
    if (!compile(coercing, `${op.operationId} path`, part('path'))(c.params)) return false
    const query = Object.fromEntries(Object.entries(c.query).map(([k, v]) => [k, queryText(v)]))
    if (!compile(coercing, `${op.operationId} query`, part('query'))(query)) return false
    const body = op.requestBody?.content?.['application/json']?.schema
    if (body && c.body !== undefined && !compile(strict, `${op.operationId} body`, body)(JSON.parse(JSON.stringify(c.body)))) return false
    return true
  }
}

/** Validates response bodies against the document with Ajv 2020 (the document is OpenAPI 3.1). */
function responseValidator (doc: Schema) {
  const ajv = new Ajv2020.default({ strict: false, allErrors: false, validateFormats: true })
  formats.default(ajv)
  ajv.addFormat('media-url', true) // the host rule is for input; output URLs are the server's own
  ajv.addFormat('lenient-date-time', isLenientDateTime)
  ajv.addSchema({ $id: 'doc', components: { schemas: doc.components?.schemas ?? {} } })
  const cache = new Map<Schema, ReturnType<typeof ajv.compile>>()
  return (schema: Schema, body: unknown): string | undefined => {
    let validate = cache.get(schema)
    if (!validate) { validate = ajv.compile(rebase(schema)); cache.set(schema, validate) }
    return validate(body) ? undefined : ajv.errorsText(validate.errors)
  }
}

/** Points the document's local `#/components/...` references at the schema registered as `doc`. */
function rebase (schema: Schema): Schema {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'))
}

/**
 * Makes ids exist so that valid requests reach the handlers: every creating POST of the document
 * is called with generated valid bodies (parents first), and every list is read; the ids found
 * are keyed by the path parameter that names them (`/v1/posts` + `/{postId}` → postId).
 */
async function seed (app: FastifyInstance, doc: Schema, gen: Gen, creator: TestUser, user: TestUser) {
  const ids: Record<string, string[]> = { profileId: [creator.id, user.id], userId: [creator.id, user.id] }
  const paths = Object.keys(doc.paths ?? {})
  const childParam = (path: string) => {
    const child = paths.find(p => p.startsWith(`${path}/{`) && p.slice(path.length + 2).indexOf('/') === -1)
    return child?.slice(path.length + 2, -1)
  }
  const fill = (path: string) => {
    let ok = true
    const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const known = ids[name]
      if (!known?.length) { ok = false; return 'x' }
      return known[0]
    })
    return ok ? url : undefined
  }
  const byDepth = [...paths].sort((a, b) => a.split('/').length - b.split('/').length)
  for (const who of [creator, user]) {
    for (const path of byDepth) {
      const op = doc.paths[path].post
      const param = childParam(path)
      const schema = op?.requestBody?.content?.['application/json']?.schema
      const url = fill(path)
      if (!op || !param || !schema || !url) continue
      const bodies = fc.sample(gen.valid(schema, true), { numRuns: 6, seed: 42 })
      for (const body of bodies) {
        const res = await app.inject({ method: 'POST', url, headers: who.headers, payload: body as object })
        if (res.statusCode === 201) (ids[param] ??= []).push(JSON.parse(res.body).id)
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
        if (Array.isArray(value)) for (const item of value) if (item?.id) (ids[param] ??= []).push(item.id)
      }
    }
  }
  return ids
}
