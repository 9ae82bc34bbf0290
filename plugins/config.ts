import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { BlockList, isIP } from 'node:net'
import { resolve } from 'node:path'
import { Type, type Static } from '../schemas/typebox.js'
import { Ajv } from 'ajv'
import envSchema from 'env-schema'
import fp from 'fastify-plugin'
import { ipv6Groups, mask } from './client-identity.js'

/** scrypt N = 2^15, the OWASP minimum: the default, and the least any environment but test takes. */
const PRODUCTION_HASH_COST = 15

/** Every setting Roja reads, with its default. The Config type derives from it. */
export const EnvSchema = Type.Object({
  ENVIRONMENT: Type.Union([Type.Literal('local'), Type.Literal('staging'), Type.Literal('production'), Type.Literal('test')], { default: 'local' }),
  HOST: Type.String({ format: 'host', default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_URL: Type.Optional(Type.String({ format: 'url', pattern: '^(sqlite:|postgres(ql)?://)' })),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  ACCESS_TOKEN_TTL: Type.Integer({ minimum: 1, maximum: 86400, default: 3600 }),
  JWT_ISSUER: Type.String({ minLength: 1, default: 'roja' }),
  JWT_AUDIENCE: Type.String({ minLength: 1, default: 'roja-api' }),
  ALLOWED_CORS_ORIGINS: Type.String({ format: 'origin-list', default: '' }),
  MEDIA_PUBLIC_URL: Type.Optional(Type.String({ format: 'http-url' })),
  ALLOWED_MEDIA_HOSTS: Type.Optional(Type.String({ format: 'host-list' })),
  MAX_UPLOAD_BYTES: Type.Integer({ minimum: 1, default: 1073741824 }),
  MEDIA_QUOTA_BYTES: Type.Integer({ minimum: 0, default: 5368709120 }),
  MEDIA_QUOTA_FILES: Type.Integer({ minimum: 1, default: 10000 }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1048576 }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 300 }),
  RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 minute' }),
  AUTH_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  // Every limit counts an IPv6 client by its network of this many bits (plugins/client-identity.ts).
  RATE_LIMIT_IPV6_PREFIX: Type.Integer({ minimum: 32, maximum: 128, default: 64 }),
  // scrypt's N = 2^this for new passwords; below the default with ENVIRONMENT=test only
  PASSWORD_HASH_COST: Type.Integer({ minimum: 10, maximum: 17, default: PRODUCTION_HASH_COST }),
  MAIL_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  MAIL_RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 hour' }),
  REDIS_URL: Type.Optional(Type.String({ format: 'url', pattern: '^rediss?://' })),
  SMTP_URL: Type.Optional(Type.String({ format: 'url', pattern: '^smtps?://' })),
  MAIL_FROM: Type.String({ default: 'Roja <no-reply@roja.localhost>' }),
  // E-mail verification: the front-end page a link opens (it posts the token), and how long a link works.
  EMAIL_VERIFY_URL: Type.Optional(Type.String({ format: 'http-url' })),
  EMAIL_VERIFY_TTL: Type.Integer({ minimum: 60, maximum: 604800, default: 86400 }),
  // Password reset: the front-end page a reset link opens (it posts the token and the new password).
  PASSWORD_RESET_URL: Type.Optional(Type.String({ format: 'http-url' })),
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
  // `pretty`: coloured, one readable line per entry (pino-pretty, a dev dependency); `json` for machines.
  LOG_FORMAT: Type.Union([Type.Literal('json'), Type.Literal('pretty')], { default: 'json' }),
  PROBLEM_BASE_URI: Type.String({ format: 'uri', default: 'https://roja.dev/problems' }),
  GIT_COMMIT: Type.Optional(Type.String({ minLength: 1 })),
  SCHEMA_COMPILE: Type.Union([Type.Literal('lazy'), Type.Literal('eager')], { default: 'lazy' }),
  // Start-up: each plugin's own, migrations included (src/options.ts, pluginTimeout).
  STARTUP_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 300000 }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 100, default: 10000 }),
  // Behind a balancer: on SIGTERM, /health fails this long, still serving, before the listener closes.
  SHUTDOWN_DRAIN_MS: Type.Integer({ minimum: 0, default: 0 }),
  // Load shedding (plugins/under-pressure.ts): over these, requests get 503 + Retry-After.
  LOAD_SHEDDING: Type.Boolean({ default: true }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 1, default: 1000 }),
  MAX_HEAP_BYTES: Type.Optional(Type.Integer({ minimum: 1 })),
  MAX_RSS_BYTES: Type.Optional(Type.Integer({ minimum: 1 })),
  // GET /metrics (plugins/metrics.ts): who may scrape, how often, and what it shows.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  METRICS_ALLOW: Type.Optional(Type.String({ minLength: 1 })),
  METRICS_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 60 }),
  METRICS_CACHE_MS: Type.Integer({ minimum: 0, default: 1000 }),
  METRICS_RUNTIME_INFO: Type.Boolean({ default: false }),
  // Production without METRICS_TOKEN or METRICS_ALLOW keeps /metrics closed unless this opens it.
  METRICS_PUBLIC: Type.Boolean({ default: false }),
  // Tracing (plugins/tracing.ts), on when an OTLP endpoint is set; the SDK reads the other OTEL_* itself.
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Union([Type.Literal('http/protobuf'), Type.Literal('http/json')], { default: 'http/protobuf' }),
  OTEL_SERVICE_NAME: Type.String({ minLength: 1, default: 'roja' })
})
export type Env = Static<typeof EnvSchema>

export class ConfigError extends Error {}

/**
 * Reads and validates the environment (and `.env` when asked), then derives the values
 * that default from others. Bad values throw one ConfigError that names every bad variable.
 */
export function loadConfig (env: Record<string, string | undefined> = process.env, { dotenv = false } = {}) {
  const issues: string[] = []
  let raw: Env | undefined
  try {
    // `env: false`: the given env is the one source (plus .env), so tests never pick up the shell's variables.
    raw = envSchema<Env>({ schema: EnvSchema, data: env, env: false, dotenv, ajv: envValidator() })
  } catch (err) {
    issues.push(...describeEnvError(err as Error & { errors?: EnvIssue[] }, env))
  }
  // The rules across variables read the values as text, so they are checked even when the schema failed.
  issues.push(...crossChecks(raw ?? env))
  if (issues.length > 0 || !raw) throw new ConfigError(`invalid configuration: ${issues.join('; ')}`)
  const production = raw.ENVIRONMENT === 'production'
  const trustProxy = parseTrustProxy(raw.TRUST_PROXY, production)
  const dataDir = resolve(raw.DATA_DIR)
  // Production is served over HTTPS only, so its media are too (the media-url rule wants https there).
  const mediaPublicUrl = (raw.MEDIA_PUBLIC_URL ?? `${production ? 'https' : 'http'}://${raw.HOST}:${raw.PORT}`).replace(/\/+$/, '')
  const emailVerifyUrl = raw.EMAIL_VERIFY_URL ?? `${production ? 'https' : 'http'}://${raw.HOST}:${raw.PORT}/verify-email`
  const passwordResetUrl = raw.PASSWORD_RESET_URL ?? `${production ? 'https' : 'http'}://${raw.HOST}:${raw.PORT}/reset-password`
  const corsOrigins = list(raw.ALLOWED_CORS_ORIGINS).map(o => o === '*' ? o : new URL(o).origin)
  return {
    ...raw,
    production,
    dataDir,
    databaseUrl: raw.DATABASE_URL ?? `sqlite:${resolve(dataDir, 'roja.sqlite')}`,
    // A random key keeps local runs safe without setup; tokens die with the process.
    jwtSecret: raw.JWT_SECRET ?? randomBytes(48).toString('base64url'),
    jwtSecretGenerated: !raw.JWT_SECRET,
    mediaPublicUrl,
    emailVerifyUrl,
    passwordResetUrl,
    allowedMediaHosts: raw.ALLOWED_MEDIA_HOSTS ? list(raw.ALLOWED_MEDIA_HOSTS).map(h => h.toLowerCase()) : [new URL(mediaPublicUrl).host.toLowerCase()],
    corsOrigins,
    docsEnabled: raw.ENVIRONMENT === 'local' || raw.ENVIRONMENT === 'staging',
    trustProxy,
    metricsAllow: raw.METRICS_ALLOW ? parseAddresses('METRICS_ALLOW', raw.METRICS_ALLOW) : undefined,
    tracing: Boolean(raw.OTEL_EXPORTER_OTLP_ENDPOINT ?? raw.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  }
}
export type Config = ReturnType<typeof loadConfig>

function crossChecks (env: Record<string, unknown>): string[] {
  const issues: string[] = []
  const production = env.ENVIRONMENT === 'production'
  const secret = String(env.JWT_SECRET ?? '')
  // its length is the schema's (minLength), reported once with the schema's other issues
  if (production && secret === '') issues.push('JWT_SECRET is required when ENVIRONMENT=production (at least 32 characters)')
  if (production && !env.TLS_CERT_FILE && !env.TRUST_PROXY) issues.push('production needs TLS_CERT_FILE/TLS_KEY_FILE or TRUST_PROXY (HTTPS only)')
  if (env.ENVIRONMENT !== 'test' && Number(env.PASSWORD_HASH_COST ?? PRODUCTION_HASH_COST) < PRODUCTION_HASH_COST) {
    issues.push(`PASSWORD_HASH_COST below ${PRODUCTION_HASH_COST} is for ENVIRONMENT=test only (scrypt N=2^${PRODUCTION_HASH_COST} is the OWASP minimum)`)
  }
  if (Boolean(env.TLS_CERT_FILE) !== Boolean(env.TLS_KEY_FILE)) issues.push('TLS_CERT_FILE and TLS_KEY_FILE go together')
  if (Number(env.SHUTDOWN_DRAIN_MS) >= Number(env.SHUTDOWN_GRACE_MS)) issues.push('SHUTDOWN_DRAIN_MS must be shorter than SHUTDOWN_GRACE_MS')
  if (Number(env.HEADERS_TIMEOUT_MS) > Number(env.REQUEST_TIMEOUT_MS)) issues.push('HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS')
  if (production && env.MEDIA_PUBLIC_URL !== undefined && !String(env.MEDIA_PUBLIC_URL).startsWith('https://')) {
    issues.push('MEDIA_PUBLIC_URL must be https:// in production (media URLs are accepted over https only)')
  }
  if (production && env.EMAIL_VERIFY_URL !== undefined && !String(env.EMAIL_VERIFY_URL).startsWith('https://')) {
    issues.push('EMAIL_VERIFY_URL must be https:// in production (the link carries a token)')
  }
  if (production && env.PASSWORD_RESET_URL !== undefined && !String(env.PASSWORD_RESET_URL).startsWith('https://')) {
    issues.push('PASSWORD_RESET_URL must be https:// in production (the link carries a token)')
  }
  if (env.LOG_FORMAT === 'pretty' && !resolvable('pino-pretty')) {
    issues.push('LOG_FORMAT=pretty needs pino-pretty, a dev dependency ' +
    '(npm ci without --omit=dev)')
  }
  return issues
}

function resolvable (name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name)
    return true
  } catch {
    return false
  }
}

/**
 * Formats that check what a value is, not only how it starts: each returns the first bad item
 * (undefined when all are good), so the message can name it.
 */
const FORMATS: Record<string, { bad: (value: string) => string | undefined, want: string }> = {
  url: { bad: v => URL.canParse(v) ? undefined : v, want: 'a URL' },
  'http-url': { bad: v => isHttpUrl(v) ? undefined : v, want: 'an http:// or https:// URL' },
  host: { bad: v => isHost(v) ? undefined : v, want: 'a host name or IP address' },
  'host-list': { bad: v => list(v).find(h => !isHostPort(h)), want: 'a comma list of hosts (host or host:port, e.g. media.example.com)' },
  'origin-list': {
    bad: v => list(v).find(o => o !== '*' && !isOrigin(o)),
    want: 'a comma list of origins (scheme://host[:port] with no path, e.g. https://app.example.com) or *'
  }
}

/** `URL.parse` arrived in Node 22. */
function parseUrl (value: string): URL | null {
  try {
    return new URL(value)
  } catch {
    return null
  }
}

function isHttpUrl (value: string): boolean {
  const url = parseUrl(value)
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
}

function isOrigin (value: string): boolean {
  return isHttpUrl(value) && new URL(value).origin === value.toLowerCase()
}

function isHost (value: string): boolean {
  return isIP(value) !== 0 || /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(value)
}

function isHostPort (value: string): boolean {
  const url = parseUrl(`http://${value}`)
  return url !== null && url.host === value.toLowerCase() && url.pathname === '/' && url.username === '' && value !== ''
}

let envAjv: Ajv | undefined
/**
 * env-schema's own Ajv options with our formats, one instance for every load. The schema is a
 * constant that test/schemas.test.ts checks against the meta-schema, so no start checks it again.
 */
function envValidator (): Ajv {
  if (envAjv) return envAjv
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: true,
    useDefaults: true,
    coerceTypes: true,
    allowUnionTypes: true,
    addUsedSchema: false,
    validateSchema: false,
    keywords: [envSchema.keywords.separator]
  })
  ajv.addFormat('uri', /^[a-z][a-z0-9+.-]*:[^\s]*$/i)
  for (const [name, format] of Object.entries(FORMATS)) ajv.addFormat(name, (value: string) => format.bad(value) === undefined)
  envAjv = ajv
  return ajv
}

interface EnvIssue { keyword: string, instancePath: string, message?: string, params?: { format?: string, limit?: number } }

/** One line per bad variable; a choice names its allowed values, a format what it expects and the bad item. */
function describeEnvError (err: Error & { errors?: EnvIssue[] }, env: Record<string, string | undefined>): string[] {
  if (!err.errors) return [err.message]
  const lines = new Map<string, string>()
  for (const e of err.errors) {
    const name = e.instancePath.replace(/^\//, '')
    const choices = (EnvSchema.properties as Record<string, { anyOf?: Array<{ const?: unknown }> }>)[name]?.anyOf
    const format = e.keyword === 'format' ? FORMATS[e.params?.format ?? ''] : undefined
    if (choices) lines.set(name, `${name} must be one of ${choices.map(c => String(c.const)).join(', ')}`)
    else if (format) lines.set(name, `${name} must be ${format.want}: ${JSON.stringify(format.bad(env[name] ?? '') ?? env[name])} is not`)
    else if (e.keyword === 'minLength') lines.set(name, `${name} must be at least ${e.params?.limit} characters`)
    else if (e.keyword === 'maxLength') lines.set(name, `${name} must be at most ${e.params?.limit} characters`)
    else if (!lines.has(name)) lines.set(name, `${name} ${e.message ?? 'is invalid'}`)
  }
  return [...lines.values()]
}

function list (value: string): string[] {
  return value.split(',').map(s => s.trim()).filter(Boolean)
}

/** A comma list of addresses and CIDR ranges (IPv4 or IPv6) as a BlockList to check against. */
function parseAddresses (name: string, value: string): BlockList {
  const addresses = new BlockList()
  for (const entry of list(value)) {
    if (!isAddressOrCidr(entry)) throw new ConfigError(`invalid configuration: ${name} entry "${entry}" is not an IP address or CIDR range`)
    const [address, prefix] = entry.split('/')
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    if (prefix === undefined) addresses.addAddress(address, type)
    else addresses.addSubnet(address, Number(prefix), type)
  }
  return addresses
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
    if (production) {
      throw new ConfigError('invalid configuration: TRUST_PROXY=true lets any client choose its own address (and its rate ' +
      'limits) by sending X-Forwarded-For; in production name the proxies\' addresses or CIDRs, e.g. TRUST_PROXY=10.0.0.5,10.1.0.0/16')
    }
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
  const broad = production ? entries.filter(e => !PROXY_RANGES.has(e) && trustsTooMany(e)) : []
  if (broad.length > 0) {
    throw new ConfigError(`invalid configuration: TRUST_PROXY=${broad.join(',')} trusts (nearly) every address, as TRUST_PROXY=true does; in production name the proxies, in ranges no wider than /8 for IPv4 and /32 for IPv6`)
  }
  return entries
}

const MAPPED = [0, 0, 0, 0, 0, 0xffff, 0, 0] // ::ffff:0:0/96, IPv4 as IPv6
const UNIQUE_LOCAL = [0xfc00, 0, 0, 0, 0, 0, 0, 0] // fc00::/7
const LINK_LOCAL = [0xfe80, 0, 0, 0, 0, 0, 0, 0] // fe80::/10
const same = (a: readonly number[], b: readonly number[]) => a.every((g, i) => g === b[i])
const within = (groups: number[], prefix: number, net: readonly number[], bits: number) => prefix >= bits && same(mask(groups, bits), net)

/**
 * A CIDR wider than any proxy fleet: an IPv4 range wider than /8 (`0.0.0.0/0`, `0.0.0.0/1`), an IPv6
 * one wider than /32 outside the private ranges (`::/0`), or one holding IPv4 through the mapped range
 * (`::ffff:0:0/96`), which a dual-stack socket reports every IPv4 peer in.
 */
function trustsTooMany (entry: string): boolean {
  const [address, text] = entry.split('/')
  if (text === undefined) return false
  const prefix = Number(text)
  const groups = ipv6Groups(address)
  if (groups === undefined) return prefix < 8
  // holds all of the mapped range, or a part of it wider than an IPv4 /8
  if (prefix <= 96 ? same(mask(groups, prefix), mask(MAPPED, prefix)) : within(groups, prefix, MAPPED, 96)) return prefix < 96 + 8
  return prefix < 32 && !within(groups, prefix, UNIQUE_LOCAL, 7) && !within(groups, prefix, LINK_LOCAL, 10)
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
