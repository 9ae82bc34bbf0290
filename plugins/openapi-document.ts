import { sortFields } from './validation-messages.js'
import { MEDIA_BYTE_TYPES } from '../schemas/media.js'
import { problems, type ProblemCode } from '../schemas/problems.js'
import { exampleOf, examplesByStatus, problemExample } from '../schemas/examples.js'
import type { DeprecationConfig } from './deprecation.js'

type Doc = Record<string, any>

/** What the server does on a route beyond its schema, collected from the route table at start. */
export interface RouteFacts {
  /** ETag on 200, If-None-Match → 304 (GET), If-Match → 412 (PUT/PATCH/DELETE) */
  etag: boolean
  /** replays the first answer of a retried Idempotency-Key */
  idempotent: boolean
  /** a list with RFC 8288 paging links */
  paged: boolean
  /** counted by the per-client rate limit (X-RateLimit-* on its answers) */
  rateLimited: boolean
  deprecated?: DeprecationConfig
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']
const PROBLEM_TYPE = 'application/problem+json'
const JSON_TYPE = 'application/json'

/** Input date-times as Roja's validator takes them (its own format `lenient-date-time`), as a standard pattern. */
const LENIENT_DATE_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:?\\d{2})?$'

/** Response headers by the name they are sent under, declared once and referenced from each answer that carries them. */
const HEADERS: Record<string, Doc> = {
  ETag: {
    description: 'Strong validator of this representation: send it back as `If-None-Match` (304 while current) or `If-Match` (412 when stale).',
    required: true,
    schema: { type: 'string', pattern: '^"[^"]+"$' },
    example: '"2c8f5b7e4a1d9c3f6e0b8a7d5c4e3f2a"'
  },
  Location: {
    description: 'Path of the resource this request created.',
    required: true,
    schema: { type: 'string', pattern: '^/' },
    example: '/v1/posts/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
  },
  Link: {
    description: 'RFC 8288 links: `next`, `prev` and `first` pages of a list where they exist (other query parameters kept); ' +
      '`successor-version` on a deprecated route.',
    schema: { type: 'string' },
    example: '</v1/posts?limit=10&offset=20>; rel="next", </v1/posts?limit=10&offset=0>; rel="prev", </v1/posts?limit=10&offset=0>; rel="first"'
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again.',
    required: true,
    schema: { type: 'string', pattern: '^\\d+$' },
    example: '5'
  },
  Deprecation: {
    description: 'RFC 9745: this route is deprecated (`@<unix time>` since when, or `true`).',
    required: true,
    schema: { type: 'string' },
    example: '@1767225600'
  },
  Sunset: {
    description: 'RFC 8594: the HTTP-date after which this route stops answering.',
    required: true,
    schema: { type: 'string' },
    example: 'Wed, 01 Jul 2026 00:00:00 GMT'
  },
  'Idempotent-Replayed': {
    description: '`true` when this answer is the stored one of an earlier request with the same `Idempotency-Key` and body (nothing new was created).',
    schema: { type: 'string', enum: ['true'] },
    example: 'true'
  },
  'X-RateLimit-Limit': {
    description: 'Requests allowed per window for this client.',
    schema: { type: 'string', pattern: '^\\d+$' },
    example: '300'
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'string', pattern: '^\\d+$' },
    example: '297'
  },
  'X-RateLimit-Reset': {
    description: 'Seconds until the window starts again.',
    schema: { type: 'string', pattern: '^\\d+$' },
    example: '42'
  },
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: `Bearer`.',
    schema: { type: 'string' },
    example: 'Bearer'
  },
  'Content-Range': {
    description: 'The byte range sent and the size of the whole file; on a 416, `*` and the size.',
    required: true,
    schema: { type: 'string', pattern: '^bytes (\\d+-\\d+|\\*)/\\d+$' },
    example: 'bytes 0-99/2048'
  },
  'Accept-Ranges': {
    description: 'Byte ranges of the file can be asked for with `Range`.',
    schema: { type: 'string', enum: ['bytes'] },
    example: 'bytes'
  }
}
/** A header's component name: `Retry-After` is `RetryAfter`, `X-RateLimit-Limit` is `RateLimitLimit`. */
const componentName = (header: string) => header.replace(/^X-/, '').replaceAll('-', '')

const TAGS: Record<string, string> = {
  alerts: 'What happened on your posts (a review or a comment by someone else); each alert is also e-mailed to you.',
  auth: 'Bearer tokens for a username and password.',
  chapters: 'Chapters of a course and their lessons, in position order.',
  classes: 'Classes that creators run for a course, and their students.',
  comments: 'Comments on posts: anyone reads, any active user writes, authors change their own.',
  courses: 'Courses (posts of type COURSE), their chapters and lessons.',
  creators: 'Public pages of creators and their published posts.',
  media: 'Uploaded files: upload as multipart, download the bytes or the metadata.',
  operations: 'Health and version of the running server.',
  posts: 'Articles and courses: anyone reads published ones, creators write their own.',
  products: 'Products of a shop.',
  profiles: 'Sign-up, public profiles and the caller\'s own profile.',
  reviews: 'Reviews of posts: a rating from 1 to 5, one per user and post.',
  shops: 'Shops that creators open, and their products.',
  users: 'The caller\'s private views: their own posts and account e-mails, and verifying the e-mail address.'
}

export const FRONT_PAGE = `The resource-oriented JSON API of Roja, a creator platform: people sign up, some become creators,
creators publish posts (articles and courses), run shops and classes, and everyone reads, reviews and comments.

## Getting a token

1. Sign up: \`POST /v1/profiles\` with \`username\`, \`email\`, \`password\` (12 characters or more) and \`first_name\`.
2. Ask for a token: \`POST /v1/auth/token\` with \`{"username": "…", "password": "…"}\` as JSON, or as the
   RFC 6749 form \`grant_type=password&username=…&password=…\`. The answer's \`access_token\` lasts \`expires_in\` seconds.
3. Send it on every call as \`Authorization: Bearer <access_token>\` (in Swagger UI: **Authorize**). Never put a token in the URL (400).

Public reads need no token; a read marked with an optional lock takes one to show the caller's own drafts.

## Becoming a creator

Writing posts, shops and classes needs a creator account. Becoming a creator (and banning) is an operator
action on the server, not an API call: ask the operator to run \`npm run cli -- creator grant <username>\`.
Your next request sees it; \`GET /v1/profiles/me\` then shows \`"is_creator": true\`.

## Conventions

- Bodies are \`application/json\`; every error is \`application/problem+json\` (RFC 9457) with a \`code\`, and
  validation errors list each failed rule in \`errors\`.
- An \`Accept\` header that allows no JSON is 406, except on media downloads, which also serve the file's own type.
- Lists take \`limit\` (1–100), \`offset\` and \`sort\` (\`field,-other\`), answer \`{"<items>": […], "total": n}\` and send \`Link\` headers.
- Single resources carry an \`ETag\`: \`If-None-Match\` gives 304, a stale \`If-Match\` on PUT/PATCH/DELETE gives 412.
- Creating POSTs take an \`Idempotency-Key\`: a retry with the same key and body answers as the first did.`

/**
 * Makes a document generated from the route schemas say all that the server does: problem media
 * types, response headers, conditional and idempotency parameters, optional-token security, sort
 * enums, examples, response descriptions, standard formats only, tag descriptions.
 */
export function describeDocument (doc: Doc, facts: Map<string, RouteFacts>): Doc {
  doc.info.description = FRONT_PAGE
  const usedHeaders = new Set<string>()
  for (const [path, item] of Object.entries<Doc>(doc.paths)) {
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (!HTTP_METHODS.includes(method)) continue
      const fact = facts.get(op.operationId) ?? { etag: false, idempotent: false, paged: false, rateLimited: true }
      describeOperation(path, method, op, fact, usedHeaders, doc.components.schemas ?? {})
    }
  }
  // A scheme no operation of this version uses is left out (v2 has only public reads).
  const schemes = new Set(Object.values<Doc>(doc.paths).flatMap(item => Object.values<Doc>(item))
    .flatMap(op => (op.security ?? []).flatMap((requirement: Doc) => Object.keys(requirement))))
  for (const name of Object.keys(doc.components.securitySchemes ?? {})) if (!schemes.has(name)) delete doc.components.securitySchemes[name]
  if (Object.keys(doc.components.securitySchemes ?? {}).length === 0) delete doc.components.securitySchemes
  doc.components.headers = Object.fromEntries([...usedHeaders].map(name => [componentName(name), HEADERS[name]]).sort(([a], [b]) => (a < b ? -1 : 1)))
  doc.tags = doc.tags.map((tag: Doc) => ({ ...tag, description: TAGS[tag.name] ?? tag.name }))
  standardFormats(doc)
  return doc
}

function describeOperation (path: string, method: string, op: Doc, fact: RouteFacts, usedHeaders: Set<string>, components: Doc) {
  // Public operations say so: no security at all is not the same as "not documented".
  op.security ??= []
  op.parameters ??= []
  const has = (name: string) => op.parameters.some((p: Doc) => p.in === 'header' && p.name.toLowerCase() === name)
  if (op.responses['304'] && !has('if-none-match')) {
    op.parameters.push({
      name: 'if-none-match',
      in: 'header',
      required: false,
      description: 'An ETag from an earlier answer: while the resource still has it, the answer is 304 with no body.',
      schema: { type: 'string' }
    })
  }
  for (const parameter of op.parameters) {
    if (parameter.in === 'query' && parameter.name === 'sort') sortParameter(parameter)
  }
  if (op.parameters.length === 0) delete op.parameters

  if (op.requestBody) {
    for (const [type, media] of Object.entries<Doc>(op.requestBody.content)) {
      // a form is an object of its parts (the runtime schema leaves the type out: the stream is never parsed into a body)
      if (type === 'multipart/form-data') media.schema.type ??= 'object'
      media.example ??= exampleOf(media.schema, components)
      if (media.example === undefined) delete media.example
    }
  }

  for (const [status, response] of Object.entries<Doc>(op.responses)) {
    const headers: string[] = []
    const problem = isProblem(response)
    if (problem) {
      response.content = { [PROBLEM_TYPE]: { schema: response.content[JSON_TYPE].schema, examples: problemExamples(response.description, path) } }
      response.description = problemDescription(response.description)
      if (status === '429' || status === '503') headers.push('Retry-After')
      if (status === '401') headers.push('WWW-Authenticate')
    } else {
      if (response.description === 'Default Response') response.description = successDescription(status, response)
      concreteByteTypes(response)
      for (const [type, media] of Object.entries<Doc>(response.content ?? {})) {
        const name = String(media.schema?.$ref ?? '').split('/').pop() ?? ''
        if (type === JSON_TYPE) media.example ??= examplesByStatus[name]?.[status] ?? exampleOf(media.schema, components)
      }
    }
    // an operation that serves bytes in ranges (a 206) says so on each answer about the file
    const ranged = Boolean(op.responses['206'])
    if (ranged && ['200', '206', '304', '416'].includes(status)) headers.push('Accept-Ranges')
    if (status === '206' || (ranged && status === '416')) headers.push('Content-Range')
    if (fact.etag && (status === '200' || status === '206' || status === '304' || (ranged && status === '416'))) headers.push('ETag')
    if (status === '201') headers.push('Location')
    if (status === '201' && fact.idempotent) headers.push('Idempotent-Replayed')
    if ((fact.paged && status === '200') || fact.deprecated) headers.push('Link')
    if (fact.deprecated) headers.push('Deprecation', 'Sunset')
    if (fact.rateLimited) headers.push('X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset')
    for (const name of headers) {
      usedHeaders.add(name)
      response.headers ??= {}
      response.headers[name] ??= { $ref: `#/components/headers/${componentName(name)}` }
    }
  }
}

/** Bytes served as the file's own type: one entry per type the server can send (never a wildcard). */
function concreteByteTypes (response: Doc) {
  const content: Doc | undefined = response.content
  const bytes = Object.entries<Doc>(content ?? {}).find(([, media]) => media.schema?.format === 'binary')
  if (!content || !bytes) return
  for (const [type, media] of Object.entries<Doc>(content)) if (media.schema?.format === 'binary') delete content[type]
  for (const type of MEDIA_BYTE_TYPES) content[type] = { schema: bytes[1].schema }
}

function isProblem (response: Doc): boolean {
  return response.content?.[JSON_TYPE]?.schema?.$ref === '#/components/schemas/Problem'
}

function codesOf (description: string): ProblemCode[] {
  return description.split(' | ').filter((c): c is ProblemCode => c in problems)
}

function problemDescription (description: string): string {
  const codes = codesOf(description)
  return codes.map(code => `\`${code}\`: ${problems[code].title}`).join('; ') || description
}

function problemExamples (description: string, path: string): Doc {
  return Object.fromEntries(codesOf(description).map(code => [code, { summary: problems[code].title, value: problemExample(code, path) }]))
}

const STATUS_TEXT: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 206: 'Partial Content', 304: 'Not Modified' }

function successDescription (status: string, response: Doc): string {
  const schema = response.content?.[JSON_TYPE]?.schema
  const name = typeof schema?.$ref === 'string' ? schema.$ref.split('/').pop() : undefined
  const text = STATUS_TEXT[status] ?? status
  if (status === '201') return `${text}: the new ${name ?? 'resource'}, at the path in \`Location\``
  return name ? `${text}: ${name}` : text
}

/** `sort=field,-other` as OpenAPI says it: a comma-separated array (form, not exploded) of an enum. */
function sortParameter (parameter: Doc) {
  const fields = sortFields(String(parameter.schema?.pattern ?? ''))
  if (!fields) return
  parameter.style = 'form'
  parameter.explode = false
  parameter.schema = {
    type: 'array',
    items: { type: 'string', enum: fields.flatMap(f => [f, `-${f}`]) },
    minItems: 1,
    maxItems: fields.length,
    description: 'each field at most once'
  }
  parameter.example = [`-${fields[0]}`]
}

/**
 * Roja's own formats stay in its validator: the document names only standard ones. `media-url`
 * is a URL (the allowed hosts are in the description); `lenient-date-time` becomes its pattern.
 */
function standardFormats (node: unknown): void {
  if (Array.isArray(node)) { node.forEach(standardFormats); return }
  if (node === null || typeof node !== 'object') return
  const schema = node as Doc
  if (schema.format === 'media-url') schema.format = 'uri'
  if (schema.format === 'lenient-date-time') {
    delete schema.format
    schema.pattern = LENIENT_DATE_TIME_PATTERN
  }
  for (const value of Object.values(schema)) standardFormats(value)
}
