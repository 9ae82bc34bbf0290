import { DATE_TIME_PATTERN } from '../../schemas/common.js'
import { problems } from '../../schemas/problems.js'

/**
 * The API conventions (docs/api.md) as pure rules over the live route table and the
 * database's tables. Each rule returns findings; an empty list means the convention holds.
 */

export interface RouteInfo {
  method: string
  url: string
  schema?: Record<string, any>
  config?: Record<string, any>
}

export interface TableInfo {
  name: string
  columns: Array<{ name: string; dataType: string }>
}

export interface Finding {
  rule: string
  where: string
  message: string
}

/** Named component schemas by $id, to follow `$ref`s. */
export type SchemaMap = Record<string, any>

/** The declared exceptions: every path that breaks a path rule on purpose is named here with its reason. */
export const DECLARED = {
  /** action routes: a verb as the last segment after an identifier */
  actions: ['resend', 'email', 'verification-emails'] as string[],
  /** whole paths (after the version) allowed as they are */
  paths: {
    '/auth/token': 'the RFC 6749 token endpoint (an action route)',
    '/email-verifications': 'a plural noun; its first word is "email" the noun, not the action verb',
    '/courses/{courseId}/chapters/{chapterId}/lessons': 'the one three-level path (lessons)',
    '/profiles/me/password': "the caller's password, one per account: a singular sub-resource replaced by PUT (DESIGN.md §7)",
    '/profiles/me/email-changes': 'a plural noun; its first word is "email" the noun (changes of address), as /email-verifications',
    '/password-resets/confirmations': 'confirmations of password resets, found by the token in their body, never by a URL (DESIGN.md §7)'
  } as Record<string, string>,
  /** the collections whose identifier is named after another resource */
  paramAliases: { creators: 'profileId' } as Record<string, string>,
  /** `me` stands for the caller's id wherever an identifier goes */
  aliases: ['me'] as string[],
  /**
   * Collections whose items lack some of GET, PUT, PATCH and DELETE on purpose (path after the
   * version → the methods left out and why); every other collection with a POST has all four.
   */
  collections: {
    '/auth/token': { without: ['GET', 'PUT', 'PATCH', 'DELETE'], reason: 'the RFC 6749 token endpoint: it issues a token, not a resource' },
    '/email-verifications': {
      without: ['GET', 'PUT', 'PATCH', 'DELETE'],
      reason: 'confirms an address with a mailed token; nothing is made to read or change'
    },
    '/media': { without: ['PUT', 'PATCH'], reason: 'the bytes of a medium never change: upload a new file, then delete the old one' },
    '/password-resets': {
      without: ['GET', 'PUT', 'PATCH', 'DELETE'],
      reason: 'asks for a mailed link (202 whatever the address): nothing is made that a client may read'
    },
    '/password-resets/confirmations': {
      without: ['GET', 'PUT', 'PATCH', 'DELETE'],
      reason: 'spends a mailed token on a new password, as /email-verifications does: nothing to read or change'
    },
    '/profiles/me/email-changes': {
      without: ['GET', 'PUT', 'PATCH', 'DELETE'],
      reason: 'asks for a link to the new address (202); the change takes effect when the link is opened'
    }
  } as Record<string, { without: string[]; reason: string }>
}

// verify-email, reset-password: the HTML pages mailed links open, outside the JSON API
const OPERATIONAL = /^\/(health|version|metrics|docs|openapi|verify-email|reset-password)(\/|$|\.)/
const VERSIONED = /^\/v\d+(\/|$)/
const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/
const CAMEL_ID = /^[a-z][a-zA-Z0-9]*Id$/
const TOKEN_LIKE = /(^|_)(access_?)?(token|jwt|secret|password|api_?key|apikey|auth|authorization|bearer|session)s?($|_)/i
const UNCOUNTABLE = new Set(['media', 'data', 'metadata', 'news', 'series'])
const VERBS = new Set([
  'get',
  'list',
  'create',
  'update',
  'delete',
  'remove',
  'add',
  'set',
  'fetch',
  'find',
  'search',
  'send',
  'resend',
  'publish',
  'unpublish',
  'upload',
  'download',
  'login',
  'logout',
  'signin',
  'signup',
  'register',
  'activate',
  'deactivate',
  'ban',
  'unban',
  'grant',
  'revoke',
  'approve',
  'reject',
  'cancel',
  'reset',
  'verify',
  'edit',
  'save',
  'submit',
  'email',
  'token'
])
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

export function isPlural (word: string): boolean {
  const last = word.split(/[-_]/).pop() ?? word
  return UNCOUNTABLE.has(last) || (/s$/.test(last) && !/(ss|us|is)$/.test(last))
}

export function singular (word: string): string {
  if (UNCOUNTABLE.has(word)) return word
  if (/(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2)
  if (/ies$/.test(word)) return word.slice(0, -3) + 'y'
  return word.replace(/s$/, '')
}

const camel = (kebab: string) => kebab.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
const snake = (kebab: string) => kebab.replace(/-/g, '_')

/** `/v1/posts/:postId` → `/v1/posts/{postId}`, without a trailing slash. */
export function normalisePath (url: string): string {
  const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
  return path.length > 1 ? path.replace(/\/+$/, '') : path
}

/** Operational routes (and the CORS preflight catch-all `OPTIONS *`) are exempt from the resource rules. */
export const isOperational = (path: string) => path === '*' || (!VERSIONED.test(path) && OPERATIONAL.test(path))
const isParam = (segment: string) => /^\{.+\}$/.test(segment)
const paramName = (segment: string) => segment.slice(1, -1)
const where = (r: RouteInfo) => `${r.method} ${normalisePath(r.url)}`

/** The path after its version prefix, split into segments. */
function resourceSegments (path: string): string[] {
  return path.replace(VERSIONED, '/').split('/').filter(Boolean)
}

function declaredPath (path: string): boolean {
  return '/' + resourceSegments(path).join('/') in DECLARED.paths
}

/** Resource routes: versioned ones. Operational routes are exempt from the resource rules. */
function resourceRoutes (routes: RouteInfo[]): RouteInfo[] {
  return routes.filter(r => !isOperational(normalisePath(r.url)))
}

// ---------------------------------------------------------------------------------------------
// Paths

/** Plural nouns, kebab-case, a collection then an identifier, at most two levels, verbs only on declared actions. */
export function checkPaths (routes: RouteInfo[]): Finding[] {
  const findings: Finding[] = []
  for (const route of resourceRoutes(routes)) {
    const path = normalisePath(route.url)
    const add = (rule: string, message: string) => findings.push({ rule, where: where(route), message })
    if (!VERSIONED.test(path)) {
      add('path-versioned', 'resource routes live under a version prefix (/v1, /v2)')
      continue
    }
    const segments = resourceSegments(path)
    if (segments.length === 0) {
      add('path-collection', 'a version prefix alone is not a resource')
      continue
    }
    const declared = declaredPath(path)
    let collections = 0
    segments.forEach((segment, i) => {
      const last = i === segments.length - 1
      if (i % 2 === 0) {
        // collection position (or, last and after an identifier, a declared action)
        if (isParam(segment)) {
          add('path-collection-then-id', `"${segment}" stands where a collection belongs`)
          return
        }
        if (!KEBAB.test(segment)) add('path-kebab-case', `"${segment}" is not kebab-case`)
        const action = last && i > 0 && DECLARED.actions.includes(segment)
        if (action || declared) return
        if (VERBS.has(segment.split('-')[0])) { add('path-verb', `"${segment}" is a verb; only declared action routes (${DECLARED.actions.join(', ')}) may end in one`) } else if (!isPlural(segment)) add('path-plural', `"${segment}" is not a plural noun`)
        collections++
      } else {
        // identifier position
        if (isParam(segment) || DECLARED.aliases.includes(segment) || declared) return
        add('path-collection-then-id', `"${segment}" follows the collection "${segments[i - 1]}" where an identifier belongs`)
      }
    })
    if (collections > 2 && !declared) add('path-nesting', `${collections} levels of collections; at most two (only declared paths may nest deeper)`)
  }
  return findings
}

/** A path parameter has one name everywhere: `<singular collection>Id` (or its declared alias), camelCase. */
export function checkPathParams (routes: RouteInfo[]): Finding[] {
  const findings: Finding[] = []
  const names = new Map<string, Set<string>>() // collection → the parameter names that follow it
  for (const route of resourceRoutes(routes)) {
    const segments = resourceSegments(normalisePath(route.url))
    segments.forEach((segment, i) => {
      if (!isParam(segment)) return
      const name = paramName(segment)
      const collection = segments[i - 1]
      const add = (message: string) => findings.push({ rule: 'param-name', where: where(route), message })
      if (!CAMEL_ID.test(name)) add(`{${name}} is not a camelCase identifier ending in Id`)
      if (collection === undefined || isParam(collection)) return
      const expected = DECLARED.paramAliases[collection] ?? camel(singular(collection)) + 'Id'
      if (name !== expected) add(`{${name}} after /${collection} must be {${expected}}, its one name everywhere`)
      names.set(collection, (names.get(collection) ?? new Set()).add(name))
    })
  }
  for (const [collection, set] of names) {
    if (set.size > 1) {
      findings.push({
        rule: 'param-name',
        where: `/${collection}/{…}`,
        message: `one parameter has several names: ${[...set].map(n => `{${n}}`).join(', ')}`
      })
    }
  }
  return findings
}

const ITEM_METHODS = ['GET', 'PUT', 'PATCH', 'DELETE']

/**
 * The whole pattern: a collection that takes POST has GET, PUT, PATCH and DELETE on its items, at
 * `<collection>/{id}` (or `/me`), or at the top-level `/<collection>/{id}` (chapters, lessons),
 * unless `exceptions` names the methods it leaves out with the reason.
 */
export function checkCollections (routes: RouteInfo[], exceptions = DECLARED.collections): Finding[] {
  const findings: Finding[] = []
  const resource = resourceRoutes(routes).map(r => ({ method: r.method, path: normalisePath(r.url) }))
  for (const { method, path } of resource) {
    const segments = resourceSegments(path)
    const last = segments.at(-1)
    if (method !== 'POST' || last === undefined || isParam(last) || DECLARED.aliases.includes(last)) continue
    if (segments.length > 1 && DECLARED.actions.includes(last)) continue
    const version = path.slice(0, path.length - segments.join('/').length - 1)
    const items = [path, `${version}/${last}`]
    const methods = new Set(resource.filter(r => items.some(item => isItemOf(item, r.path))).map(r => r.method))
    const without = exceptions['/' + segments.join('/')]?.without ?? []
    const missing = ITEM_METHODS.filter(m => !methods.has(m) && !without.includes(m))
    if (missing.length > 0) {
      findings.push({
        rule: 'collection-pattern',
        where: `POST ${path}`,
        message: `its items lack ${missing.join(', ')}; add them, or declare the exception with its reason (DECLARED.collections)`
      })
    }
  }
  return findings
}

/** `/v1/posts/{postId}` and `/v1/profiles/me` are items of `/v1/posts` and `/v1/profiles`. */
function isItemOf (collection: string, path: string): boolean {
  if (!path.startsWith(collection + '/')) return false
  const rest = path.slice(collection.length + 1)
  return !rest.includes('/') && (isParam(rest) || DECLARED.aliases.includes(rest))
}

// ---------------------------------------------------------------------------------------------
// Schemas

/** Follows a `$ref` (by $id, `Name#`, or `#/components/schemas/Name`) to its schema. */
export function resolve (schema: any, schemas: SchemaMap): any {
  let s = schema
  for (let hops = 0; s && typeof s === 'object' && typeof s.$ref === 'string' && hops < 20; hops++) {
    const id = s.$ref.replace(/^#\/components\/schemas\//, '').replace(/#.*$/, '')
    if (!(id in schemas)) return s
    s = schemas[id]
  }
  return s
}

/** The schema of a response entry: plain, or `{content: {type: {schema}}}`. */
function responseSchema (entry: any): any {
  if (entry && typeof entry === 'object' && entry.content && typeof entry.content === 'object') {
    const content = entry.content['application/json'] ?? Object.values(entry.content)[0]
    return (content as any)?.schema
  }
  return entry
}

function isProblemRef (entry: any, schemas: SchemaMap): boolean {
  const s = responseSchema(entry)
  if (s?.$ref && /(^|\/)Problem#?$/.test(s.$ref)) return true
  return resolve(s, schemas)?.$id === 'Problem'
}

const CATALOGUE_STATUSES = new Set<number>(Object.values(problems).map(p => p.status))

/** Every route: request and response schemas (catalogue errors included), an operationId, tags, a summary and a description. */
export function checkRouteSchemas (routes: RouteInfo[], schemas: SchemaMap): Finding[] {
  const findings: Finding[] = []
  const operationIds = new Map<string, string>()
  for (const route of routes) {
    const path = normalisePath(route.url)
    const schema = route.schema ?? {}
    const add = (rule: string, message: string) => findings.push({ rule, where: where(route), message })
    if (isOperational(path) && schema.hide) continue
    if (schema.hide) {
      add('schema-documented', 'a resource route must not hide itself from the contract')
      continue
    }

    if (typeof schema.operationId !== 'string' || !/^[a-z][a-zA-Z0-9]*$/.test(schema.operationId)) { add('schema-operation-id', 'needs a camelCase operationId') } else if (operationIds.has(schema.operationId)) { add('schema-operation-id', `operationId ${schema.operationId} is also used by ${operationIds.get(schema.operationId)}`) } else operationIds.set(schema.operationId, where(route))
    if (!Array.isArray(schema.tags) || schema.tags.length === 0) add('schema-tags', 'needs tags')
    if (typeof schema.summary !== 'string' || schema.summary === '') add('schema-summary', 'needs a summary')
    if (typeof schema.description !== 'string' || schema.description === '') add('schema-description', 'needs a description (schemas/descriptions.ts)')

    const params = resourceSegments(path).filter(isParam).map(paramName)
    const declaredParams = Object.keys(resolve(schema.params, schemas)?.properties ?? {})
    for (const p of params) if (!declaredParams.includes(p)) add('schema-request', `path parameter {${p}} has no params schema`)
    const multipart = [route.config?.contentTypes ?? []].flat().some((t: string) => t.startsWith('multipart/'))
    const action = DECLARED.actions.includes(resourceSegments(path).at(-1) ?? '')
    if (BODY_METHODS.has(route.method) && !schema.body && !multipart && !action) add('schema-request', 'needs a body schema')
    for (const part of ['body', 'querystring', 'params'] as const) {
      const s = resolve(schema[part], schemas)
      if (s?.type === 'object' && s.additionalProperties !== false) add('schema-request', `${part} schema must set additionalProperties: false`)
    }

    const response: Record<string, unknown> = schema.response ?? {}
    const statuses = Object.keys(response)
    if (!statuses.some(s => /^2/.test(s))) add('schema-response', 'needs a 2xx response schema')
    if (isOperational(path)) continue // /health answers 503 with its own shape
    for (const status of statuses.filter(s => /^[45]/.test(s))) {
      if (!isProblemRef(response[status], schemas)) add('schema-errors', `${status} response is not the catalogue Problem`)
      else if (!CATALOGUE_STATUSES.has(Number(status))) add('schema-errors', `${status} is no status of the error catalogue`)
      const codes = String((response[status] as any)?.description ?? '')
        .split(' | ')
        .filter(Boolean)
      for (const code of codes) {
        const entry = (problems as Record<string, { status: number }>)[code]
        if (entry && entry.status !== Number(status)) add('schema-errors', `${code} is a ${entry.status}, declared under ${status}`)
      }
    }
    const hasInput = params.length > 0 || schema.querystring || schema.body || schema.headers
    if (hasInput && !('422' in response)) add('schema-errors', 'takes input but declares no 422 (ValidationFailed)')
    if (Array.isArray(schema.security) && schema.security.length > 0) {
      if (!('401' in response)) add('schema-errors', 'is authenticated but declares no 401 (NotAuthenticated)')
      if (!('403' in response)) add('schema-errors', 'is authenticated but declares no 403 (UserIsBanned)')
    }
  }
  return findings
}

/** A GET on a collection is a list: limit and offset (or the v2 cursor) with bounds, and a named array plus total. */
export function checkLists (routes: RouteInfo[], schemas: SchemaMap): Finding[] {
  const findings: Finding[] = []
  for (const route of resourceRoutes(routes)) {
    const segments = resourceSegments(normalisePath(route.url))
    const last = segments.at(-1)
    if (route.method !== 'GET' || !last || isParam(last) || DECLARED.aliases.includes(last) || segments.length % 2 === 0) continue
    const add = (message: string) => findings.push({ rule: 'list', where: where(route), message })
    const query = resolve(route.schema?.querystring, schemas)?.properties ?? {}
    const limit = resolve(query.limit, schemas)
    if (limit?.type !== 'integer' || !(limit.minimum >= 1) || typeof limit.maximum !== 'number') { add('needs an integer limit with minimum 1 and a maximum') }
    const offset = resolve(query.offset, schemas)
    const cursor = resolve(query.cursor, schemas)
    if (cursor?.type === 'string') {
      /* a keyset list (v2): the cursor replaces offset */
    } else if (offset?.type !== 'integer' || offset.minimum !== 0) add('needs an integer offset with minimum 0')
    const ok = resolve(responseSchema(route.schema?.response?.['200']), schemas)
    const plural = snake(last)
    const items = resolve(ok?.properties?.[plural], schemas)
    if (items?.type !== 'array') add(`answers without a "${plural}" array`)
    if (resolve(ok?.properties?.total, schemas)?.type !== 'integer') add('answers without an integer total')
  }
  return findings
}

type Part = 'input' | 'output'

/** Calls `visit(name, schema, part)` for every property of every body, query and response schema. */
function eachProperty (
  routes: RouteInfo[],
  schemas: SchemaMap,
  visit: (route: RouteInfo, name: string, schema: any, part: Part, path: string) => void
): void {
  for (const route of routes) {
    const schema = route.schema ?? {}
    if (schema.hide) continue
    const parts: Array<[any, Part, string]> = [
      [schema.body, 'input', 'body'],
      [schema.querystring, 'input', 'query']
    ]
    for (const [status, entry] of Object.entries(schema.response ?? {})) parts.push([responseSchema(entry), 'output', `response ${status}`])
    for (const [root, part, label] of parts) {
      const seen = new Set<any>()
      const walk = (node: any, at: string): void => {
        const s = resolve(node, schemas)
        if (!s || typeof s !== 'object' || seen.has(s)) return
        seen.add(s)
        for (const [name, prop] of Object.entries<any>(s.properties ?? {})) {
          visit(route, name, resolve(prop, schemas), part, `${label} ${at}/${name}`)
          walk(prop, `${at}/${name}`)
        }
        for (const key of ['anyOf', 'oneOf', 'allOf'] as const) for (const branch of s[key] ?? []) walk(branch, at)
        if (s.items) walk(s.items, `${at}/*`)
        if (s.additionalProperties && typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${at}/*`)
      }
      walk(root, '')
    }
  }
}

/** JSON property names are snake_case; `*_at` properties use the shared DateTime (inputs: DateTimeInput). */
export function checkProperties (routes: RouteInfo[], schemas: SchemaMap): Finding[] {
  const findings: Finding[] = []
  const keys = new Set<string>()
  eachProperty(routes, schemas, (route, name, schema, part, at) => {
    const add = (rule: string, message: string) => {
      const key = `${rule} ${where(route)} ${at}`
      if (!keys.has(key)) {
        keys.add(key)
        findings.push({ rule, where: where(route), message })
      }
    }
    if (!SNAKE.test(name)) add('property-snake-case', `${at}: "${name}" is not snake_case`)
    if (/_at$/.test(name) && !isDateTime(schema, part, schemas)) {
      add('property-date-time', `${at}: a *_at property must use the shared DateTime schema${part === 'input' ? ' (or DateTimeInput)' : ''}`)
    }
    if (/_date$/.test(name) && !hasBranch(schema, schemas, s => s.format === 'date')) { add('property-date', `${at}: a *_date property must use the shared DateOnly schema`) }
  })
  return findings
}

function hasBranch (schema: any, schemas: SchemaMap, test: (s: any) => boolean): boolean {
  const s = resolve(schema, schemas)
  if (!s || typeof s !== 'object') return false
  if (test(s)) return true
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some((b: any) => hasBranch(b, schemas, test))
}

function isDateTime (schema: any, part: Part, schemas: SchemaMap): boolean {
  return hasBranch(schema, schemas, s => s.pattern === DATE_TIME_PATTERN || (part === 'input' && s.format === 'lenient-date-time'))
}

/**
 * No query parameter is named like a credential: tokens travel in the Authorization header only.
 * The one exception is a page a mailed link opens (`config.linkToken`), whose link is the token.
 */
export function checkQueryNames (routes: RouteInfo[], schemas: SchemaMap): Finding[] {
  const findings: Finding[] = []
  for (const route of routes) {
    for (const name of Object.keys(resolve(route.schema?.querystring, schemas)?.properties ?? {})) {
      if (TOKEN_LIKE.test(name) && !(route.config?.linkToken === true && name === 'token')) { findings.push({ rule: 'query-no-token', where: where(route), message: `query parameter "${name}" is named like a credential` }) } else if (!SNAKE.test(name)) { findings.push({ rule: 'query-snake-case', where: where(route), message: `query parameter "${name}" is not snake_case` }) }
    }
  }
  return findings
}

// ---------------------------------------------------------------------------------------------
// Tables

const TIMESTAMP_TYPE = /timestamp|datetime/i
const DATE_TYPE = /^date$/i
const TEXT_TYPE = /^(text|varchar|character varying)$/i

/** Tables singular snake_case; date-times end `_at`, dates `_date` (and the other way round). */
export function checkTables (tables: TableInfo[]): Finding[] {
  const findings: Finding[] = []
  for (const table of tables) {
    const add = (rule: string, message: string, column?: string) =>
      findings.push({ rule, where: `table ${table.name}${column ? `.${column}` : ''}`, message })
    if (!SNAKE.test(table.name)) add('table-snake-case', `"${table.name}" is not snake_case`)
    else if (isPlural(table.name) && !UNCOUNTABLE.has(table.name.split('_').pop()!)) { add('table-singular', `"${table.name}" is plural; tables are singular`) }
    for (const column of table.columns) {
      const { name, dataType } = column
      if (!SNAKE.test(name)) add('column-snake-case', `"${name}" is not snake_case`, name)
      if (TIMESTAMP_TYPE.test(dataType) && !name.endsWith('_at')) add('column-at', `a date-time column (${dataType}) must end in _at`, name)
      if (DATE_TYPE.test(dataType) && !name.endsWith('_date')) add('column-date', 'a date column must end in _date', name)
      // SQLite keeps both as ISO text, so text is accepted there.
      if (name.endsWith('_at') && !TIMESTAMP_TYPE.test(dataType) && !TEXT_TYPE.test(dataType)) { add('column-at', `an _at column must hold date-times, not ${dataType}`, name) }
      if (name.endsWith('_date') && !DATE_TYPE.test(dataType) && !TEXT_TYPE.test(dataType)) { add('column-date', `a _date column must hold dates, not ${dataType}`, name) }
    }
  }
  return findings
}

// ---------------------------------------------------------------------------------------------

/** Every rule over one app's routes and tables. */
export function checkAll (input: { routes: RouteInfo[]; schemas: SchemaMap; tables: TableInfo[] }): Finding[] {
  const { routes, schemas, tables } = input
  return [
    ...checkPaths(routes),
    ...checkPathParams(routes),
    ...checkCollections(routes),
    ...checkRouteSchemas(routes, schemas),
    ...checkLists(routes, schemas),
    ...checkProperties(routes, schemas),
    ...checkQueryNames(routes, schemas),
    ...checkTables(tables)
  ]
}

/** The findings as a readable list, grouped by rule. */
export function formatFindings (findings: Finding[]): string {
  if (findings.length === 0) return 'conventions: no findings'
  const lines = [`conventions: ${findings.length} finding${findings.length === 1 ? '' : 's'}`]
  for (const f of [...findings].sort((a, b) => a.rule.localeCompare(b.rule) || a.where.localeCompare(b.where))) {
    lines.push(`  [${f.rule}] ${f.where}: ${f.message}`)
  }
  return lines.join('\n')
}
