import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import accept from '../plugins/accept.js'
import auth from '../plugins/auth.js'
import config, { type Config } from '../plugins/config.js'
import contentType from '../plugins/content-type.js'
import db from '../plugins/db.js'
import deprecation from '../plugins/deprecation.js'
import etag from '../plugins/etag.js'
import idempotency from '../plugins/idempotency.js'
import mediaStorage from '../plugins/media-storage.js'
import metrics from '../plugins/metrics.js'
import openapi from '../plugins/openapi.js'
import outbox, { type OutboxSettings } from '../plugins/outbox.js'
import owner from '../plugins/owner.js'
import type { TracingOptions } from '../plugins/tracing.js'
import problems from '../plugins/problems.js'
import rateLimit from '../plugins/rate-limit.js'
import security from '../plugins/security.js'
import underPressure from '../plugins/under-pressure.js'
import { components } from '../schemas/index.js'
import { createDb, poolOf, type Db } from './db/dialect.js'
import { migrateToLatest } from './db/migrate.js'
import { clockMs } from './db/clock.js'
import { verificationKey } from './domain/email-verification.js'
import { backoffMs, claimDue, markFailed, markSent, outboxBacklog, type OutboxMessage } from './domain/outbox.js'
import { findAccount, invalidToken, type Account } from './domain/users.js'
import { PACKAGE_VERSION } from './package-info.js'
import operations from './routes/operations.js'
import verifyEmailPage from './routes/verify-email.js'
import resetPasswordPage from './routes/reset-password.js'
import v1 from './routes/v1/index.js'
import v2 from './routes/v2/index.js'

// The plugins declare these types and the app names them, as @fastify/jwt's FastifyJWT is filled in.
declare module '../plugins/db.js' { interface DbTypes { db: Db } }
declare module '../plugins/auth.js' { interface AuthTypes { account: Account } }
declare module '../plugins/outbox.js' { interface OutboxTypes { message: OutboxMessage } }

export interface AppOptions {
  config: Config
  /** PostgreSQL schema to use (tests give each file its own) */
  dbSchema?: string
  /** in-memory SQLite: the bytes of the database to start from (tests start from one migrated copy) */
  dbImage?: Buffer
  /** the e-mail outbox worker's settings (tests turn the loop off and call runOnce) */
  outbox?: OutboxSettings
  /** turns tracing on without an OTLP endpoint (tests give an in-memory exporter) */
  tracing?: Omit<TracingOptions, 'version'>
}

/**
 * The whole app as one plugin: infrastructure first, then the route groups. Tests build exactly this.
 * The plugins get the app's parts through their options; none imports src/.
 */
const app: FastifyPluginAsync<AppOptions> = async (fastify, opts) => {
  await fastify.register(config, { config: opts.config })
  // First, so every later hook and route is traced. Off (no OTLP endpoint): not even loaded.
  if (opts.config.tracing || opts.tracing) await fastify.register(import('../plugins/tracing.js'), { ...opts.tracing, version: PACKAGE_VERSION })
  await fastify.register(problems)
  await fastify.register(accept)
  await fastify.register(contentType)
  await fastify.register(security)
  await fastify.register(rateLimit)
  await fastify.register(metrics, { poolOf }) // after the rate limiter, so /metrics gets its own limit
  await fastify.register(db, {
    connect: (log) => createDb(opts.config.databaseUrl, { schema: opts.dbSchema, image: opts.dbImage, poolSize: opts.config.DATABASE_POOL_SIZE, log }),
    migrate: migrateToLatest
  })
  await fastify.register(outbox, {
    ...opts.outbox,
    queue: { claimDue, markSent, markFailed, backlog: outboxBacklog },
    backoffMs,
    clockMs
  })
  await fastify.register(underPressure)
  await fastify.register(auth, { findAccount, invalidToken, verificationKey })
  await fastify.register(etag)
  await fastify.register(owner)
  await fastify.register(idempotency)
  await fastify.register(mediaStorage)
  await fastify.register(openapi, { version: PACKAGE_VERSION })
  await fastify.register(deprecation)
  for (const schema of components) fastify.addSchema(schema)

  await fastify.register(operations)
  await fastify.register(verifyEmailPage)
  await fastify.register(resetPasswordPage)
  await fastify.register(v1, { prefix: '/v1' })
  await fastify.register(v2, { prefix: '/v2' })
}

export default fp(app, { name: 'roja' })
