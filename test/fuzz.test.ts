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
import { Gen, MALFORMED_IDS, operationsOf, seed, type Schema } from './contract.js'
import { isLenientDateTime } from '../src/db/date-time-format.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 12)
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined
const ODD_CONTENT_TYPES = ['text/plain', 'application/xml', 'application/json\tx', ' application/json', 'application/json ;',
  'application/jsonp', 'multipart/form-data', 'application/x-www-form-urlencoded; charset=utf-16', '']

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

/**
 * How a generated query value travels: an array as the document's form style without explode
 * says (`sort=-title,created_at`), objects as JSON text, the rest as String().
 */
function queryText (value: unknown): string {
  if (Array.isArray(value) && value.every(v => typeof v === 'string')) return value.join(',')
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

    // one answer for the whole sweep: the operations whose generated requests broke the contract
    const failures: string[] = []
    const operations = operationsOf(doc, version)
    for (const operation of operations) {
      const { method, path, op } = operation
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
      try {
        await fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: true })
      } catch (err) {
        failures.push(`${method} ${path}: ${(err as Error).message}`)
      }
    }
    t.same(failures, [], `${RUNS} generated requests to each of the ${operations.length} operations answered within the contract`)
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
    // a comma-separated array parameter (style form, explode false) is read back into its items
    const commaSeparated = new Set(params.filter(p => p.in === 'query' && p.explode === false && p.schema?.type === 'array').map(p => p.name))
    const query = Object.fromEntries(Object.entries(c.query).map(([k, v]) => [k, commaSeparated.has(k) ? queryText(v).split(',') : queryText(v)]))
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
