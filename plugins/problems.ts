import { STATUS_CODES } from 'node:http'
import fp from 'fastify-plugin'
import FindMyWay from 'find-my-way'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, RouteOptions } from 'fastify'
import type { HTTPMethod } from 'find-my-way'
import { errorResponses, problems, type ProblemCode, type Problem, type ValidationIssue } from '../schemas/problems.js'
import { AppError } from '../schemas/problems.js'
import { validationMessage } from './validation-messages.js'

const LOCATION: Record<string, ValidationIssue['in']> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }
const METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
// Errors of the database driver that mean "the database is not there", not "our bug".
const UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY'])
// pg's errors for a connection the server dropped mid-request (a restart) carry no code, only these messages.
const UNAVAILABLE_MESSAGE = /^(Connection terminated|Client has encountered a connection error)/

declare module 'fastify' {
  interface FastifyReply {
    problem: (error: AppError) => FastifyReply
  }
}

export default fp(async (fastify) => {
  const base = fastify.config.PROBLEM_BASE_URI.replace(/\/+$/, '')
  // A method-blind copy of the route table, to tell 404 from 405 and fill `Allow`: built at the
  // first unmatched request, when every route is known, so the start does not pay for it.
  const routes: Array<[HTTPMethod, string]> = []
  let built: ReturnType<typeof FindMyWay> | undefined
  const paths = () => {
    if (!built) {
      built = FindMyWay({ ignoreDuplicateSlashes: false })
      for (const [method, url] of routes) if (!built.find(method, url)) built.on(method, url, () => {})
    }
    return built
  }
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat() as HTTPMethod[]) routes.push([method, route.url])
    declareTransportErrors(route)
  })

  function render (reply: FastifyReply, error: AppError) {
    const body = problemBody(base, error, reply.request.url)
    // Refused before its body was read (404, 405, 401, 403, 413, 415): close rather than drain it.
    if (!reply.request.raw.complete && hasBody(reply.request.headers)) reply.header('connection', 'close')
    if (error.headers) reply.headers(error.headers)
    return reply.code(error.status).type('application/problem+json').send(body)
  }

  fastify.decorateReply('problem', function (this: FastifyReply, error: AppError) {
    return render(this, error)
  })

  fastify.setErrorHandler(function (err: FastifyError, request, reply) {
    const error = toAppError(err)
    // Logged by the one request line (src/options.ts), not a line of its own.
    answered.set(request, error.status >= 500 ? { code: error.code, err } : { code: error.code, detail: error.message })
    return render(reply, error)
  })

  function notFound (request: FastifyRequest, reply: FastifyReply) {
    const path = request.url.split('?')[0]
    const table = paths()
    const allow = METHODS.filter(m => table.find(m, path))
    const shown = boundedPath(path)
    // OPTIONS alone is the CORS preflight catch-all (`OPTIONS *`): it matches every path, so it proves no route.
    if (allow.some(m => m !== 'OPTIONS')) {
      return render(reply, new AppError('MethodNotAllowed', `${request.method} is not allowed on ${shown}`, { headers: { allow: allow.join(', ') } }))
    }
    return render(reply, new AppError('NotFound', `no route ${request.method} ${shown}`))
  }

  // Answered at onRequest, before any body is read, after the client's rate limit has counted it
  // (the rate-limit plugin comes later and decorates clientRateLimit).
  fastify.setNotFoundHandler({
    onRequest: async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      if (this.hasDecorator('clientRateLimit')) await this.clientRateLimit(request)
      return notFound(request, reply)
    }
  } as object, notFound)
}, { name: 'problems', dependencies: ['config'] })

const answered = new WeakMap<FastifyRequest, { code: string, detail?: string, err?: Error }>()
const abandoned = new WeakSet<FastifyRequest>()

/**
 * Logs, once and at info, a request whose client closed the connection before the answer:
 * nothing failed on our side, so no stack and no error level. Its request line is not written.
 */
export function logClientAbort (request: FastifyRequest): void {
  if (abandoned.has(request)) return
  abandoned.add(request)
  request.log.info({ req: request }, 'request aborted by the client')
}

/** Was the request logged as abandoned by its client (so its request line is not written again)? */
export function clientAborted (request: FastifyRequest): boolean {
  return abandoned.has(request)
}

/** The problem a request was answered with through the error handler, for its log line. */
export function problemOf (request: FastifyRequest) {
  return answered.get(request)
}

/**
 * The answers the infrastructure can give on any route (token in the URL, body parsing and
 * content type, rate limit, load shedding and database outage), added to each documented
 * route's responses so that the OpenAPI document never hides a status the server sends.
 * A route that declares no query gets an empty strict one, so unknown parameters are 422.
 */
function declareTransportErrors (route: RouteOptions) {
  const response = route.schema?.response as Record<string, unknown> | undefined
  if (!response) return
  const methods = [route.method].flat()
  const takesBody = methods.some(m => m !== 'GET' && m !== 'HEAD')
  const codes: ProblemCode[] = ['TokenInQuery', 'ServiceUnavailable']
  // plugins/accept.ts: an Accept that allows no JSON (media negotiates and declares its own 406)
  if (!route.config?.negotiatesAccept) codes.push('NotAcceptable')
  if (route.schema && !route.schema.querystring && !route.schema.hide) {
    // An unknown query parameter is 422 on every route, not only on those with filters.
    route.schema = { ...route.schema, querystring: { type: 'object', properties: {}, additionalProperties: false } }
    codes.push('ValidationFailed')
  }
  if (takesBody) codes.push('MalformedBody', 'PayloadTooLarge', 'UnsupportedMediaType')
  if (route.config?.rateLimit !== false) codes.push('RateLimited')
  const added: Record<string, unknown> = {}
  for (const [status, schema] of Object.entries(errorResponses(...codes))) {
    if (response[status] === undefined && response[`${status[0]}XX`] === undefined) added[status] = schema
  }
  if (Object.keys(added).length > 0) route.schema = { ...route.schema, response: { ...response, ...added } }
}

export function toAppError (err: FastifyError & { validationContext?: string, errno?: number }): AppError {
  if (err instanceof AppError) return err
  if (err.validation) return validationFailed(LOCATION[err.validationContext ?? 'body'] ?? 'body', err.validation as unknown as AjvIssue[])
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return new AppError('UnsupportedMediaType', 'this route takes application/json')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return new AppError('MalformedBody', 'the body is empty but the content type is application/json')
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return new AppError('MalformedBody', 'the body is not valid JSON')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('PayloadTooLarge', 'the request body is over its size limit')
  }
  // PostgreSQL data exceptions (class 22: out of range, bad text representation, too long) come
  // from a value the schema let through but the column cannot hold: the client's input, not a crash.
  if (typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code) && 'severity' in err) {
    return new AppError('ValidationFailed', 'a value is outside what the server can store')
  }
  if ((err.code && UNAVAILABLE.has(String(err.code))) || (!err.code && UNAVAILABLE_MESSAGE.test(err.message))) {
    return new AppError('ServiceUnavailable', 'a backing service is unavailable, try again later', { headers: { 'retry-after': '5' } })
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return new AppError('MalformedBody', 'the body is not valid JSON')
  const status = err.statusCode ?? 500
  if (status === 429) return new AppError('RateLimited', err.message)
  if (status === 503) return new AppError('ServiceUnavailable', 'the server is busy, try again later', { headers: { 'retry-after': '5' } })
  if (status >= 400 && status < 500) {
    const code = (Object.keys(problems) as ProblemCode[]).find(c => problems[c].status === status) ?? 'MalformedBody'
    return new AppError(code, err.message)
  }
  // 5xx: say nothing of the internals
  return new AppError('InternalError', 'the server failed to answer this request')
}

interface AjvIssue { keyword: string, instancePath: string, schemaPath?: string, message?: string, params: Record<string, unknown> }

/** What a validation answer lists at most: a body of 90,000 unknown properties gets 20 issues, not 90,000. */
export const MAX_ISSUES = 20
const MAX_FIELD = 200
const MAX_DETAIL = 1000
// issues kept past MAX_ISSUES, so that an anyOf after them can still fold its branches in
const FOLD_MARGIN = 32

/**
 * 422 ValidationFailed from the validator's errors, bounded whatever the input: at most MAX_ISSUES
 * issues, each field name cut to MAX_FIELD characters, a detail of at most MAX_DETAIL that says
 * how many more there were. A choice (anyOf of consts, a nullable enum) is one issue naming the values.
 */
function validationFailed (where: ValidationIssue['in'], raw: readonly AjvIssue[]): AppError {
  const kept: Array<{ error: AjvIssue, choices?: unknown[] }> = []
  let read = 0
  for (; read < raw.length && kept.length < MAX_ISSUES + FOLD_MARGIN; read++) {
    const error = raw[read]
    const branches = error.keyword === 'anyOf' || error.keyword === 'oneOf' ? branchesOf(kept, error) : 0
    const choices = branches > 0 ? choicesOf(kept.slice(kept.length - branches).map(k => k.error)) : undefined
    if (choices) kept.length -= branches
    kept.push({ error, choices })
  }
  const errors = kept.slice(0, MAX_ISSUES).map(({ error, choices }) => issue(where, error, choices))
  const total = kept.length + (raw.length - read)
  let detail = ''
  let listed = 0
  for (const e of errors) {
    const part = `${e.field || where}: ${e.message}`
    if (listed > 0 && detail.length + part.length + 2 > MAX_DETAIL) break
    detail += `${listed > 0 ? '; ' : ''}${part}`
    listed++
  }
  if (detail.length > MAX_DETAIL) detail = `${detail.slice(0, MAX_DETAIL - 1)}…`
  if (total > listed) detail += `; and ${total - listed} more`
  if ((raw as { firstOnly?: boolean }).firstOnly) detail += ' (a body this large is checked up to its first issue)'
  return new AppError('ValidationFailed', detail, { errors })
}

/** How many of the last kept errors are branches of this anyOf/oneOf (same value, under its schema path). */
function branchesOf (kept: ReadonlyArray<{ error: AjvIssue }>, error: AjvIssue): number {
  const under = `${error.schemaPath ?? '?'}/`
  let n = 0
  while (n < kept.length) {
    const prior = kept[kept.length - 1 - n].error
    if (prior.instancePath !== error.instancePath || !prior.schemaPath?.startsWith(under)) break
    n++
  }
  return n
}

/** The values branches allow when each is a const, an enum or null; else undefined. */
function choicesOf (branches: readonly AjvIssue[]): unknown[] | undefined {
  const values: unknown[] = []
  for (const b of branches) {
    if (b.keyword === 'const') values.push(b.params.allowedValue)
    else if (b.keyword === 'enum') values.push(...(b.params.allowedValues as unknown[]))
    else if (b.keyword === 'type' && b.params.type === 'null') values.push(null)
    else return undefined
  }
  return values
}

const EXCLUDED = /^#\/dependencies\/([^/]+)\/properties\/[^/]+\/not$/

function issue (where: ValidationIssue['in'], v: AjvIssue, choices?: unknown[]): ValidationIssue {
  let field = v.instancePath
  if (v.keyword === 'required') field += `/${String(v.params.missingProperty)}`
  if (v.keyword === 'additionalProperties') field += `/${String(v.params.additionalProperty)}`
  if (field.length > MAX_FIELD) field = `${field.slice(0, MAX_FIELD - 1)}…`
  // a property its sibling rules out (the schema's `dependencies`: `limit` excludes `page`)
  const excludedBy = EXCLUDED.exec(v.schemaPath ?? '')?.[1]
  if (excludedBy) return { in: where, field, rule: 'dependencies', message: `cannot be combined with ${excludedBy}` }
  const message = choices ? validationMessage({ keyword: 'enum', params: { allowedValues: choices } }) : validationMessage(v)
  return { in: where, field, rule: v.keyword, message }
}

/** The RFC 9457 body of a catalogue error. */
export function problemBody (baseUri: string, error: AppError, url: string): Problem {
  return {
    type: `${baseUri.replace(/\/+$/, '')}/${kebab(error.code)}`,
    title: problems[error.code].title,
    status: error.status,
    detail: error.message,
    instance: boundedPath(url),
    code: error.code,
    ...(error.errors ? { errors: error.errors } : {})
  }
}

/**
 * Errors the router raises before any route or hook runs (Fastify `frameworkErrors`): a path
 * parameter over maxParamLength (else a bare 414) or one that is not valid percent-encoding.
 * Both are malformed path parameters: 422 like any other.
 */
export function frameworkErrors (baseUri: string) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const rule = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'maxLength' : 'format'
    const error = new AppError('ValidationFailed', rule === 'maxLength' ? 'a path parameter is too long' : 'a path parameter is not valid percent-encoding', {
      errors: [{ in: 'path', field: '', rule, message: rule === 'maxLength' ? 'is too long' : 'is not valid percent-encoding' }]
    })
    return reply.code(error.status).type('application/problem+json').send(problemBody(baseUri, error, request.url))
  }
}

/**
 * Requests Node refuses before Fastify sees them (Fastify `clientErrorHandler`): a request line or
 * headers that do not parse (400), headers over the size limit (431), a request too slow (408).
 * Answered as problem+json like every other error, then the connection is closed.
 */
export function clientErrors (baseUri: string): NonNullable<FastifyServerOptions['clientErrorHandler']> {
  return function (this: FastifyInstance, err, socket) {
    // A reset connection has no one to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    // The client closed its side mid-request (an aborted upload): no one to answer, and the
    // request in progress ends through its own stream error.
    if (err.code === 'HPE_INVALID_EOF_STATE') { socket.destroy(); return }
    const error = err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('HeadersTooLarge', 'the request headers are over the size limit')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('RequestTimeout', 'the request did not arrive in time')
        : new AppError('MalformedRequest', 'the request is not well-formed HTTP')
    this.log.debug({ err: { code: err.code, message: err.message }, problem: error.code }, 'client error')
    if (!socket.writable) { socket.destroy(); return }
    const body = JSON.stringify(problemBody(baseUri, error, requestPath(err.rawPacket as unknown)))
    socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy())
  }
}

/** The path of the request line when there is one to read, for `instance`; else `/`. */
function requestPath (raw: unknown): string {
  const line = Buffer.isBuffer(raw) ? raw.subarray(0, 2048).toString('latin1').split('\r\n', 1)[0] : ''
  const target = /^[A-Z]+ (\/[\x21-\x7e]*) HTTP\/\d\.\d$/.exec(line)?.[1]
  return target ?? '/'
}

/** At most this much of a request's path is echoed in an answer. */
const MAX_ECHOED_PATH = 256

/** The path of a URL, cut to MAX_ECHOED_PATH characters: an answer never repeats a long request. */
export function boundedPath (url: string): string {
  const query = url.indexOf('?')
  const path = query === -1 ? url : url.slice(0, query)
  return path.length > MAX_ECHOED_PATH ? `${path.slice(0, MAX_ECHOED_PATH)}…` : path
}

/** Does the request announce a body (a length other than 0, or chunks)? */
export function hasBody (headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

function kebab (code: string) {
  return code.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()
}
