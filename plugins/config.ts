import { randomBytes } from 'node:crypto'
import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import envSchema from 'env-schema'
import fp from 'fastify-plugin'

/** Every setting Roja reads, with its default (DESIGN §5). The Config type derives from it. */
export const EnvSchema = Type.Object({
  ENVIRONMENT: Type.Union([Type.Literal('local'), Type.Literal('staging'), Type.Literal('production'), Type.Literal('test')], { default: 'local' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^(sqlite:|postgres(ql)?://)' })),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  ACCESS_TOKEN_TTL: Type.Integer({ minimum: 1, maximum: 86400, default: 3600 }),
  JWT_ISSUER: Type.String({ minLength: 1, default: 'roja' }),
  JWT_AUDIENCE: Type.String({ minLength: 1, default: 'roja-api' }),
  ALLOWED_CORS_ORIGINS: Type.String({ default: '' }),
  MEDIA_PUBLIC_URL: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  ALLOWED_MEDIA_HOSTS: Type.Optional(Type.String()),
  MAX_UPLOAD_BYTES: Type.Integer({ minimum: 1, default: 1073741824 }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1048576 }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 300 }),
  RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 minute' }),
  AUTH_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  MAIL_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  MAIL_RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 hour' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ default: 'Roja <no-reply@roja.localhost>' }),
  TLS_CERT_FILE: Type.Optional(Type.String({ minLength: 1 })),
  TLS_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  // Slow clients (src/options.ts): each limit cuts a connection a hostile client keeps open.
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10000 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 300000 }),
  IDLE_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 30000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 72000 }),
  MAX_CONNECTIONS_PER_IP: Type.Integer({ minimum: 1, default: 128 }),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map(l => Type.Literal(l)), { default: 'info' }),
  PROBLEM_BASE_URI: Type.String({ format: 'uri', default: 'https://roja.dev/problems' }),
  GIT_COMMIT: Type.Optional(Type.String({ minLength: 1 })),
  SCHEMA_COMPILE: Type.Union([Type.Literal('lazy'), Type.Literal('eager')], { default: 'lazy' }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 100, default: 10000 }),
  // Load shedding (plugins/under-pressure.ts): over these, requests get 503 + Retry-After.
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 1, default: 1000 }),
  MAX_HEAP_BYTES: Type.Optional(Type.Integer({ minimum: 1 })),
  MAX_RSS_BYTES: Type.Optional(Type.Integer({ minimum: 1 }))
})
export type Env = Static<typeof EnvSchema>

export class ConfigError extends Error {}

/**
 * Reads and validates the environment (and `.env` when asked), then derives the values
 * that default from others. A bad value throws a ConfigError naming the variable.
 */
export function loadConfig (env: Record<string, string | undefined> = process.env, { dotenv = false } = {}) {
  let raw: Env
  try {
    // `env: false`: the given env is the one source (plus .env), so tests never pick up the shell's variables.
    raw = envSchema<Env>({ schema: EnvSchema, data: env, env: false, dotenv, ajv: { customOptions: (ajv) => ajv.addFormat('uri', /^[a-z][a-z0-9+.-]*:[^\s]*$/i) } })
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${describeEnvError(err as Error & { errors?: EnvIssue[] })}`)
  }
  const production = raw.ENVIRONMENT === 'production'
  if (production && !raw.JWT_SECRET) {
    throw new ConfigError('invalid configuration: JWT_SECRET is required when ENVIRONMENT=production (at least 32 bytes)')
  }
  const trustProxy = parseTrustProxy(raw.TRUST_PROXY, production)
  if (production && !raw.TLS_CERT_FILE && !raw.TRUST_PROXY) {
    throw new ConfigError('invalid configuration: production needs TLS_CERT_FILE/TLS_KEY_FILE or TRUST_PROXY (HTTPS only)')
  }
  if (Boolean(raw.TLS_CERT_FILE) !== Boolean(raw.TLS_KEY_FILE)) {
    throw new ConfigError('invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE go together')
  }
  if (Buffer.byteLength(raw.JWT_SECRET ?? '') > 0 && Buffer.byteLength(raw.JWT_SECRET!) < 32) {
    throw new ConfigError('invalid configuration: JWT_SECRET must be at least 32 bytes')
  }
  if (raw.HEADERS_TIMEOUT_MS > raw.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS')
  }
  const dataDir = resolve(raw.DATA_DIR)
  // Production is served over HTTPS only, so its media are too (the media-url rule wants https there).
  const mediaPublicUrl = (raw.MEDIA_PUBLIC_URL ?? `${production ? 'https' : 'http'}://${raw.HOST}:${raw.PORT}`).replace(/\/+$/, '')
  if (production && !mediaPublicUrl.startsWith('https://')) {
    throw new ConfigError('invalid configuration: MEDIA_PUBLIC_URL must be https:// in production (media URLs are accepted over https only)')
  }
  const corsOrigins = list(raw.ALLOWED_CORS_ORIGINS)
  return {
    ...raw,
    production,
    dataDir,
    databaseUrl: raw.DATABASE_URL ?? `sqlite:${resolve(dataDir, 'roja.sqlite')}`,
    // A random key keeps local runs safe without setup; tokens die with the process.
    jwtSecret: raw.JWT_SECRET ?? randomBytes(48).toString('base64url'),
    jwtSecretGenerated: !raw.JWT_SECRET,
    mediaPublicUrl,
    allowedMediaHosts: raw.ALLOWED_MEDIA_HOSTS ? list(raw.ALLOWED_MEDIA_HOSTS).map(h => h.toLowerCase()) : [new URL(mediaPublicUrl).host.toLowerCase()],
    corsOrigins,
    docsEnabled: raw.ENVIRONMENT === 'local' || raw.ENVIRONMENT === 'staging',
    trustProxy
  }
}
export type Config = ReturnType<typeof loadConfig>

interface EnvIssue { keyword: string, instancePath: string, message?: string }

/** One line per bad variable; a choice names its allowed values instead of Ajv's anyOf noise. */
function describeEnvError (err: Error & { errors?: EnvIssue[] }): string {
  if (!err.errors) return err.message
  const lines = new Map<string, string>()
  for (const e of err.errors) {
    const name = e.instancePath.replace(/^\//, '')
    const choices = (EnvSchema.properties as Record<string, { anyOf?: Array<{ const?: unknown }> }>)[name]?.anyOf
    if (choices) lines.set(name, `${name} must be one of ${choices.map(c => String(c.const)).join(', ')}`)
    else if (!lines.has(name)) lines.set(name, `${name} ${e.message ?? 'is invalid'}`)
  }
  return [...lines.values()].join('; ')
}

function list (value: string): string[] {
  return value.split(',').map(s => s.trim()).filter(Boolean)
}

// proxy-addr's names for the private ranges, accepted beside addresses and CIDRs.
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY names the proxies whose X-Forwarded-For/-Proto are believed: addresses, CIDRs or
 * proxy-addr's range names. `true` would believe any client's headers (its own rate-limit key),
 * so production refuses it; a hop count is refused everywhere, as Fastify 5 trusts no peer for it.
 */
function parseTrustProxy (value: string | undefined, production: boolean): boolean | string[] | undefined {
  if (value === undefined || value === 'false') return undefined
  if (value === 'true') {
    if (production) throw new ConfigError('invalid configuration: TRUST_PROXY=true lets any client choose its own address (and its rate limits) by sending X-Forwarded-For; in production name the proxies\' addresses or CIDRs, e.g. TRUST_PROXY=10.0.0.5,10.1.0.0/16')
    return true
  }
  if (/^\d+$/.test(value)) {
    throw new ConfigError(`invalid configuration: TRUST_PROXY=${value}: a hop count trusts any peer that sends enough X-Forwarded-For entries (Fastify ignores it); name the proxies' addresses or CIDRs instead`)
  }
  const entries = list(value)
  const bad = entries.filter(e => !PROXY_RANGES.has(e) && !isAddressOrCidr(e))
  if (bad.length > 0 || entries.length === 0) {
    throw new ConfigError(`invalid configuration: TRUST_PROXY must be a comma list of proxy addresses, CIDRs or loopback/linklocal/uniquelocal; not ${bad.join(', ') || 'empty'}`)
  }
  return entries
}

function isAddressOrCidr (entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export default fp<{ config: Config }>(async (fastify, opts) => {
  fastify.decorate('config', opts.config)
}, { name: 'config' })
