import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { Ajv, type Options as AjvOptions } from 'ajv'
import formats from 'ajv-formats'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { Config } from '../plugins/config.js'
import { clientAborted, clientErrors, frameworkErrors, problemOf } from '../plugins/problems.js'
import { redactTokens, trustFunction } from '../plugins/security.js'
import { isCalendarDate, isLenientDateTime } from './db/date-time-format.js'

/**
 * The one options factory for production and tests: logging with redaction,
 * proxy trust, TLS, body limit and the validators with Roja's formats.
 */
export function serverOptions (
  config: Config,
  overrides: Partial<FastifyServerOptions> = {}
): FastifyServerOptions & { https?: { cert: Buffer; key: Buffer }; http?: object } {
  return {
    logger: {
      level: config.LOG_LEVEL,
      // What a request line needs, and nothing that costs a proxy-header parse per field (host, port);
      // a token sent in the query (refused, 400) never reaches a log.
      serializers: { req: (req: FastifyRequest) => ({ method: req.method, url: loggedUrl(req.url), remoteAddress: req.ip }) },
      // Explicit paths for the shapes that are logged (a headers object, @fastify/multipart's
      // `busboyOptions.headers`), as wildcards are dear. None under `req`: its serializer above is its
      // rule, and a path there would clone every request line. `npm test`'s log scan catches a missed shape.
      redact: {
        paths: [
          'headers.authorization',
          'headers.cookie',
          'busboyOptions.headers.authorization',
          'busboyOptions.headers.cookie',
          'password',
          'body.password',
          'current_password',
          'new_password',
          'body.current_password',
          'body.new_password',
          'err.password',
          'access_token',
          'body.access_token',
          'jwtSecret',
          'JWT_SECRET',
          'config.JWT_SECRET'
        ],
        censor: '[redacted]'
      },
      // pretty: for people at a terminal (npm run dev); pino-pretty runs in a worker thread.
      ...(config.LOG_FORMAT === 'pretty' ? { transport: { target: 'pino-pretty', options: PRETTY } } : {})
    },
    logController: new OneLinePerRequest(),
    trustProxy: Array.isArray(config.trustProxy) ? trustFunction(config.trustProxy) : config.trustProxy,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Slow clients: headers in HEADERS_TIMEOUT_MS, the whole request in REQUEST_TIMEOUT_MS, and
    // no connection silent for IDLE_TIMEOUT_MS (Node checks the first two on an interval).
    http: timeouts(config),
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    connectionTimeout: config.IDLE_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    // Start-up migrates the database, and an instance waits for another's migration under the
    // lock: how long that takes is the data's, not Fastify's default 10 s a plugin.
    pluginTimeout: config.STARTUP_TIMEOUT_MS,
    genReqId: () => randomUUID(),
    // While draining, a request already on an open connection is served (with Connection: close)
    // rather than refused with Fastify's bare, non-problem 503; new connections are refused.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: 200 },
    frameworkErrors: frameworkErrors(config.PROBLEM_BASE_URI),
    // The answer is built from the errors themselves (plugins/problems.ts), bounded; Fastify's own
    // message would join every one of them (a body of 90,000 unknown properties).
    schemaErrorFormatter: (errors, dataVar) => new Error(`${dataVar} failed validation (${errors.length} errors)`),
    clientErrorHandler: clientErrors(config.PROBLEM_BASE_URI),
    schemaController: {
      compilersFactory: {
        buildValidator: validatorFactory(config) as never,
        buildSerializer: (config.SCHEMA_COMPILE === 'lazy' ? lazySerializerFactory : SerializerSelector()) as never
      }
    },
    ...(config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { https: { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE), ...timeouts(config) } }
      : {}),
    ...overrides
  }
}

function timeouts (config: Config) {
  return {
    headersTimeout: config.HEADERS_TIMEOUT_MS,
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: Math.min(1000, Math.ceil(config.HEADERS_TIMEOUT_MS / 4))
  }
}

/** A request is one readable line: `GET /v1/posts → 200 request completed {"responseTime":…}`. */
const PRETTY = {
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,reqId,req,res',
  singleLine: true,
  messageFormat: '{if req.method}{req.method} {req.url} → {res.statusCode} {end}{msg}'
}

const MAX_LOGGED_URL = 2048

/** The URL as a log line holds it: tokens redacted, at most MAX_LOGGED_URL characters. */
function loggedUrl (url: string): string {
  const redacted = redactTokens(url)
  return redacted.length > MAX_LOGGED_URL ? `${redacted.slice(0, MAX_LOGGED_URL)}…` : redacted
}

// A balancer checks these every few hundred milliseconds: their lines would be most of the log.
const QUIET_ROUTES = new Set(['/health'])

/**
 * One log line per request at info (debug for QUIET_ROUTES), written when the answer has gone, with the
 * method, url, status and time together (Fastify writes two); the arrival is logged at debug, for a
 * request that never finishes.
 */
class OneLinePerRequest extends LogController {
  incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // An abandoned request was logged when its client left (plugins/problems.ts logClientAbort).
    if (clientAborted(request)) return
    // A problem answer adds its code to the same line (and a 5xx its error, at level error).
    const problem = problemOf(request)
    if (error || problem?.err) {
      reply.log.error(
        { req: request, res: reply, err: error ?? problem?.err, problem: problem?.code, responseTime: reply.elapsedTime },
        'request failed'
      )
      return
    }
    const quiet = QUIET_ROUTES.has(request.routeOptions.url ?? '')
    const line = problem
      ? { req: request, res: reply, problem: problem.code, detail: problem.detail, responseTime: reply.elapsedTime }
      : { req: request, res: reply, responseTime: reply.elapsedTime }
    if (quiet) reply.log.debug(line, 'request completed')
    else reply.log.info(line, 'request completed')
  }
}

/** An Ajv set up like every validator of Roja: custom formats included. */
export function createAjv (config: Pick<Config, 'allowedMediaHosts'> & Partial<Pick<Config, 'production'>>, options: AjvOptions = {}): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false, // unknown input is refused (422), never dropped
    useDefaults: true,
    strict: false,
    // Our schemas are constants, checked against the meta-schema by test/schemas.test.ts; checking
    // them at every start compiled the meta-schema in each instance. Why: docs/decisions/0011-schemas-compiled-on-first-use.md
    validateSchema: false,
    ...options
  })
  formats.default(ajv)
  const hosts = new Set(config.allowedMediaHosts)
  const schemes = config.production ? ['https:'] : ['https:', 'http:']
  ajv.addFormat('media-url', (value: string) => isMediaUrl(value, hosts, schemes))
  ajv.addFormat('lenient-date-time', isLenientDateTime)
  // The standard `date` without year 0000, which PostgreSQL refuses: the same answer on both databases.
  ajv.addFormat('date', isCalendarDate)
  return ajv
}

/**
 * The host rule, checked on the URL exactly as it will be stored: the value must already be in
 * its WHATWG normal form (`href`), so no other parser (curl, urlsplit, a browser) can read a
 * different host from it (`http://ok\\@evil/`, full-width digits, tabs). No credentials.
 */
export function isMediaUrl (value: string, hosts: ReadonlySet<string>, schemes: readonly string[]): boolean {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  return url.href === value && schemes.includes(url.protocol) && url.username === '' && url.password === '' && hosts.has(url.host)
}

/**
 * Bodies are validated as sent (no type coercion); path, query and headers arrive as text
 * and are coerced to the schema's types.
 */
function validatorFactory (config: Config) {
  // Fastify asks once per encapsulated context; ours all share the root's schemas, so one set of three Ajv
  // serves all: bodies' first issue, bodies' every issue, and the coercing one for path, query and headers.
  const byIds = new Map<string, { first: Ajv; strict: Ajv; coercing: Ajv }>()
  return (externalSchemas: Record<string, unknown> = {}) => {
    const ids = Object.keys(externalSchemas).sort().join('\n')
    let set = byIds.get(ids)
    if (!set) {
      set = {
        first: createAjv(config, { coerceTypes: false, allErrors: false }),
        strict: createAjv(config, { coerceTypes: false }),
        coercing: createAjv(config, { coerceTypes: 'array' })
      }
      for (const schema of Object.values(externalSchemas)) for (const ajv of Object.values(set)) ajv.addSchema(schema as object)
      byIds.set(ids, set)
    }
    const { first, strict, coercing } = set
    const compile = ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
      httpPart === 'body' ? firstIssueFirst(first.compile(schema), () => strict.compile(schema)) : coercing.compile(schema)
    return config.SCHEMA_COMPILE === 'lazy' ? lazy(compile) : compile
  }
}

type Validate = ((data: unknown, context?: any) => unknown) & { errors?: unknown; schemaEnv?: unknown }

/** A failing body of at most this many values is checked again for all its issues. */
const LISTED_VALUES = 2000

/**
 * A body is checked by a validator that stops at its first issue, so a valid one costs no more; a
 * failing one is checked again for every issue only when small, as listing them costs a step per
 * issue (90,000 unknown properties took 100 ms). A large one answers its first issue (`firstOnly`).
 */
function firstIssueFirst (first: Validate, every: () => Validate): Validate {
  let all: Validate | undefined
  const wrapper: Validate = (data, context) => {
    if (first(data, context) === true) return true
    if (valuesUpTo(data, LISTED_VALUES) > LISTED_VALUES) {
      wrapper.errors = Object.assign([...(first.errors as unknown[])], { firstOnly: true })
      return false
    }
    all ??= every()
    const result = all(data, context)
    wrapper.errors = all.errors
    return result
  }
  wrapper.schemaEnv = true
  return wrapper
}

/** How many values `data` holds, counted up to `limit` + 1. */
function valuesUpTo (data: unknown, limit: number): number {
  let count = 1
  const stack = [data]
  while (stack.length > 0) {
    const value = stack.pop()
    if (value === null || typeof value !== 'object') continue
    for (const key in value) {
      stack.push((value as Record<string, unknown>)[key])
      if (++count > limit) return count
    }
  }
  return count
}

/**
 * With SCHEMA_COMPILE=lazy each route's validator and serializer is compiled on first use, as
 * compiling them all is most of a start; `eager` compiles all at start (a test does, to prove they compile).
 * Why: docs/decisions/0011-schemas-compiled-on-first-use.md
 */
function lazy<R> (compile: (route: R) => Validate) {
  return (route: R): Validate => {
    let validate: Validate | undefined
    const wrapper: Validate = (data, context) => {
      validate ??= compile(route)
      const result = validate(data, context)
      wrapper.errors = validate.errors
      return result
    }
    // Fastify passes the parent object to Ajv functions (marked by schemaEnv), so root values can be coerced.
    wrapper.schemaEnv = true
    return wrapper
  }
}

function lazySerializerFactory (externalSchemas: unknown, options: unknown) {
  const build = SerializerSelector()(externalSchemas as never, options as never) as (route: unknown) => (data: unknown) => string
  return (route: unknown) => {
    let serialize: ((data: unknown) => string) | undefined
    return (data: unknown) => (serialize ??= build(route))(data)
  }
}
