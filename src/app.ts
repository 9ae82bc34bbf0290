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
import outbox, { type OutboxOptions } from '../plugins/outbox.js'
import type { TracingOptions } from '../plugins/tracing.js'
import problems from '../plugins/problems.js'
import rateLimit from '../plugins/rate-limit.js'
import security from '../plugins/security.js'
import underPressure from '../plugins/under-pressure.js'
import { components } from '../schemas/index.js'
import operations from './routes/operations.js'
import v1 from './routes/v1/index.js'
import v2 from './routes/v2/index.js'

export interface AppOptions {
  config: Config
  /** PostgreSQL schema to use (tests give each file its own) */
  dbSchema?: string
  /** the e-mail outbox worker's settings (tests turn the loop off and call runOnce) */
  outbox?: OutboxOptions
  /** turns tracing on without an OTLP endpoint (tests give an in-memory exporter) */
  tracing?: TracingOptions
}

/** The whole app as one plugin: infrastructure first, then the route groups. Tests build exactly this. */
const app: FastifyPluginAsync<AppOptions> = async (fastify, opts) => {
  await fastify.register(config, { config: opts.config })
  // First, so every later hook and route is traced. Off (no OTLP endpoint): not even loaded.
  if (opts.config.tracing || opts.tracing) await fastify.register(import('../plugins/tracing.js'), opts.tracing ?? {})
  await fastify.register(problems)
  await fastify.register(accept)
  await fastify.register(contentType)
  await fastify.register(security)
  await fastify.register(rateLimit)
  await fastify.register(metrics) // after the rate limiter, so /metrics gets its own limit
  await fastify.register(db, { url: opts.config.databaseUrl, schema: opts.dbSchema, poolSize: opts.config.DATABASE_POOL_SIZE })
  await fastify.register(outbox, opts.outbox ?? {})
  await fastify.register(underPressure)
  await fastify.register(auth)
  await fastify.register(etag)
  await fastify.register(idempotency)
  await fastify.register(mediaStorage)
  await fastify.register(openapi)
  await fastify.register(deprecation)
  for (const schema of components) fastify.addSchema(schema)

  await fastify.register(operations)
  await fastify.register(v1, { prefix: '/v1' })
  await fastify.register(v2, { prefix: '/v2' })
}

export default fp(app, { name: 'roja' })
