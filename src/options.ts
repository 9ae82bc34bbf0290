import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { Ajv, type Options as AjvOptions } from 'ajv'
import formats from 'ajv-formats'
import type { FastifyServerOptions } from 'fastify'
import type { Config } from '../plugins/config.js'
import { frameworkErrors } from '../plugins/problems.js'
import { isLenientDateTime } from './db/time.js'

/**
 * The one options factory for production and tests (STYLE 2): logging with redaction,
 * proxy trust, TLS, body limit and the validators with Roja's formats.
 */
export function serverOptions (config: Config, overrides: Partial<FastifyServerOptions> = {}): FastifyServerOptions & { https?: { cert: Buffer, key: Buffer } } {
  return {
    logger: {
      level: config.LOG_LEVEL,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization',
          'password', '*.password', 'access_token', '*.access_token', 'jwtSecret', '*.jwtSecret', 'JWT_SECRET', '*.JWT_SECRET'],
        censor: '[redacted]'
      }
    },
    trustProxy: config.trustProxy as FastifyServerOptions['trustProxy'],
    bodyLimit: config.BODY_LIMIT_BYTES,
    genReqId: () => randomUUID(),
    // While draining, a request already on an open connection is served (with Connection: close)
    // rather than refused with Fastify's bare, non-problem 503; new connections are refused.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: 200 },
    frameworkErrors: frameworkErrors(config.PROBLEM_BASE_URI),
    schemaController: { compilersFactory: { buildValidator: validatorFactory(config) as never } },
    ...(config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { https: { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE) } }
      : {}),
    ...overrides
  }
}

/** An Ajv set up like every validator of Roja: custom formats included. */
export function createAjv (config: Pick<Config, 'allowedMediaHosts'>, options: AjvOptions = {}): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false, // unknown input is refused (422), never dropped
    useDefaults: true,
    strict: false,
    ...options
  })
  formats.default(ajv)
  const hosts = new Set(config.allowedMediaHosts)
  ajv.addFormat('media-url', (value: string) => {
    try {
      const url = new URL(value)
      return (url.protocol === 'https:' || url.protocol === 'http:') && hosts.has(url.host.toLowerCase())
    } catch {
      return false
    }
  })
  ajv.addFormat('lenient-date-time', isLenientDateTime)
  return ajv
}

/**
 * Bodies are validated as sent (no type coercion); path, query and headers arrive as text
 * and are coerced to the schema's types.
 */
function validatorFactory (config: Config) {
  return (externalSchemas: Record<string, unknown> = {}) => {
    const strict = createAjv(config, { coerceTypes: false })
    const coercing = createAjv(config, { coerceTypes: 'array' })
    for (const schema of Object.values(externalSchemas)) {
      strict.addSchema(schema as object)
      coercing.addSchema(schema as object)
    }
    return ({ schema, httpPart }: { schema: object, httpPart?: string }) =>
      (httpPart === 'body' ? strict : coercing).compile(schema)
  }
}
