import { createHash, timingSafeEqual } from 'node:crypto'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { isIPv4 } from 'node:net'
import type {} from '@fastify/otel' // its route config `otel: false` (types only)
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import metricsModule from 'fastify-metrics'
import type { RootOperationNode } from 'kysely'
import type pg from 'pg'
import promClient from 'prom-client'
import { loadConfig, type Config } from './config.js'
import { queryChannel, type AppDb, type QueryMessage } from './db.js'
import { AppError } from '../schemas/problems.js'
import { canonicalIp } from './client-identity.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** this app's registry: add custom metrics here, never to prom-client's global one */
    metricsRegistry: promClient.Registry
    /** refusals an operator alerts on, counted where they happen (never per accepted request) */
    refusals: {
      /** `limit`: `global` (per client) or `route` (a route's own, e.g. the token endpoint's) */
      rateLimited: promClient.Counter<'limit'>
      /** `reason`: the under-pressure check that tripped (eventLoopDelay, heapUsedBytes, rssBytes, healthCheck …) */
      shed: promClient.Counter<'reason'>
    }
    /** requests whose password or mail limit was counted in this instance because Redis failed */
    rateLimitStoreFallbacks: promClient.Counter
  }
}

export interface MetricsOptions {
  /** the PostgreSQL pool behind a database, for the pool gauges (read at scrape time) */
  poolOf?: (db: AppDb) => pg.Pool | undefined
}

const QUERY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
const OPERATIONS: Partial<Record<RootOperationNode['kind'], string>> = {
  SelectQueryNode: 'select',
  InsertQueryNode: 'insert',
  UpdateQueryNode: 'update',
  DeleteQueryNode: 'delete'
}

/** select/insert/update/delete, from the query tree (raw SQL by its first word), else other. */
export function queryOperation (node: RootOperationNode, sql: string): string {
  const known = OPERATIONS[node.kind]
  if (known) return known
  const word = /^\s*(\w+)/.exec(sql)?.[1]?.toLowerCase()
  return word === 'select' || word === 'insert' || word === 'update' || word === 'delete' ? word : 'other'
}

/**
 * Prometheus metrics: request durations by route template, method and status; process, pool and
 * query metrics; refusals (rate limit, load shedding). Gauges are read at scrape time, never per
 * request. GET /metrics is guarded by METRICS_TOKEN and METRICS_ALLOW, and rate-limited.
 */
export default fp<MetricsOptions>(
  async (fastify, opts) => {
    // Defaults when built without the config plugin (a plugin tested alone).
    const config: MetricsConfig = fastify.hasDecorator('config') ? fastify.config : loadConfig({})
    const registry = new promClient.Registry()
    fastify.decorate('metricsRegistry', registry)
    // fastify-metrics is CommonJS with an ES default export
    await fastify.register(metricsModule.default, {
      endpoint: null, // ours below: protected, rate-bounded, and rendered from this registry alone
      defaultMetrics: { enabled: true, register: registry },
      // the request histogram is below: it leaves out /health
      routeMetrics: { enabled: false }
    })

    // Request and query durations. Bounded: routes are templates, and every unknown URL shares `__unknown__`.
    const requests = new promClient.Histogram({
      name: 'http_request_duration_seconds',
      help: 'request duration in seconds',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry]
    })
    fastify.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? '__unknown__'
      // A balancer's health checks would be most of the requests, and dilute the 5xx share.
      if (route === '/health') return done()
      requests.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000)
      done()
    })
    // The exact Node.js version tells an attacker which CVEs apply: shown only when asked for.
    if (!config.METRICS_RUNTIME_INFO) registry.removeSingleMetric('nodejs_version_info')

    fastify.decorate('refusals', {
      rateLimited: new promClient.Counter({
        name: 'roja_rate_limit_refusals_total',
        help: 'requests refused with 429 by a rate limit; ' + 'limit="global" (per client) or "route" (a route\'s own)',
        labelNames: ['limit'],
        registers: [registry]
      }),
      shed: new promClient.Counter({
        name: 'roja_load_shed_refusals_total',
        help: 'requests refused with 503 by load shedding, by the ' + 'check that tripped',
        labelNames: ['reason'],
        registers: [registry]
      })
    })
    fastify.decorate(
      'rateLimitStoreFallbacks',
      new promClient.Counter({
        name: 'roja_rate_limit_store_fallbacks_total',
        help: 'requests whose password or mail limit was counted in this instance because the shared store (Redis) failed',
        registers: [registry]
      })
    )

    const queryDuration = new promClient.Histogram({
      name: 'roja_db_query_duration_seconds',
      help: 'database query duration by operation ' + '(select, insert, update, delete, other)',
      labelNames: ['operation'],
      buckets: QUERY_BUCKETS,
      registers: [registry]
    })
    const queryErrors = new promClient.Counter({
      name: 'roja_db_query_errors_total',
      help: 'database queries that failed, by operation',
      labelNames: ['operation'],
      registers: [registry]
    })
    const onQuery = (message: unknown) => {
      const { db, event } = message as QueryMessage
      if (db !== fastify.db) return
      const operation = queryOperation(event.query.query, event.query.sql)
      queryDuration.observe({ operation }, event.queryDurationMillis / 1000)
      if (event.level === 'error') queryErrors.inc({ operation })
    }
    subscribe(queryChannel.name, onQuery)
    fastify.addHook('onClose', async () => {
      unsubscribe(queryChannel.name, onQuery)
    })

    const { poolOf } = opts
    if (poolOf && config.databaseUrl.startsWith('postgres')) {
      const pool = () => (fastify.hasDecorator('db') ? poolOf(fastify.db) : undefined)
      new promClient.Gauge({
        name: 'roja_db_pool_connections',
        help: 'PostgreSQL pool connections by state: in_use (checked out) or idle',
        labelNames: ['state'],
        registers: [registry],
        collect () {
          const p = pool()
          if (!p) return
          this.set({ state: 'in_use' }, p.totalCount - p.idleCount)
          this.set({ state: 'idle' }, p.idleCount)
        }
      })
      new promClient.Gauge({
        name: 'roja_db_pool_waiting',
        help: 'queries waiting for a free PostgreSQL connection',
        registers: [registry],
        collect () {
          this.set(pool()?.waitingCount ?? 0)
        }
      })
      new promClient.Gauge({
        name: 'roja_db_pool_max',
        help: 'size limit of the PostgreSQL pool',
        registers: [registry],
        collect () {
          this.set(pool()?.options.max ?? 0)
        }
      })
    }

    // Served from this registry alone, protected, rate-bounded (when the rate limiter is there,
    // which it is in the app) and never shed: scrapes matter most when the server is overloaded.
    const render = sharedRendering(registry, config.METRICS_CACHE_MS)
    const guarded = Boolean(config.METRICS_TOKEN ?? config.metricsAllow)
    if (config.production && !guarded) {
      if (config.METRICS_PUBLIC) {
        fastify.log.warn('METRICS_PUBLIC=true: GET /metrics is open to anyone in production; set METRICS_TOKEN or METRICS_ALLOW')
      } else {
        fastify.log.warn('GET /metrics is closed (404): production needs METRICS_TOKEN or METRICS_ALLOW to serve it (or METRICS_PUBLIC=true)')
      }
    }
    fastify.get(
      '/metrics',
      {
        logLevel: 'warn',
        config: { pressure: false, otel: false, rateLimit: { max: config.METRICS_RATE_LIMIT_MAX, timeWindow: 60_000 } },
        schema: { hide: true },
        onRequest: scrapeGuard(config)
      },
      async (_request, reply) => {
        reply.type(registry.contentType)
        return await render()
      }
    )
  },
  { name: 'metrics' }
)

type MetricsConfig = Pick<
  Config,
  | 'METRICS_RUNTIME_INFO'
  | 'METRICS_CACHE_MS'
  | 'METRICS_RATE_LIMIT_MAX'
  | 'METRICS_TOKEN'
  | 'METRICS_PUBLIC'
  | 'metricsAllow'
  | 'databaseUrl'
  | 'production'
>

/** One rendering serves every scrape for `cacheMs`, so many scrapers cost what one does. */
function sharedRendering (registry: promClient.Registry, cacheMs: number): () => Promise<string> {
  let rendered: { at: number; text: Promise<string> } | undefined
  return () => {
    const now = Date.now()
    if (!rendered || now - rendered.at >= cacheMs) {
      const text = registry.metrics()
      rendered = { at: now, text }
      text.catch(() => {
        rendered = undefined
      }) // a failed rendering is not kept
    }
    return rendered.text
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Refuses an address off METRICS_ALLOW (404: nothing here for it) and a missing or wrong METRICS_TOKEN
 * (401). In production with neither, everyone is refused (404) unless METRICS_PUBLIC opens it.
 */
function scrapeGuard (config: MetricsConfig) {
  const { metricsAllow: allow, METRICS_TOKEN: token } = config
  const expected = token ? digest(token) : undefined
  const closed = config.production && !allow && !expected && !config.METRICS_PUBLIC
  return async (request: FastifyRequest) => {
    if (closed) throw new AppError('NotFound', `no route ${request.method} ${request.url.split('?')[0]}`)
    if (allow) {
      // A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d
      const ip = canonicalIp(request.ip) ?? request.ip
      if (!allow.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6')) throw new AppError('NotFound', `no route ${request.method} ${request.url.split('?')[0]}`)
    }
    if (expected) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1]
      // Comparing digests keeps the time independent of where the strings differ, and of their lengths.
      if (!given || !timingSafeEqual(digest(given), expected)) {
        throw new AppError('NotAuthenticated', 'GET /metrics needs the metrics bearer token', {
          headers: { 'www-authenticate': 'Bearer realm="metrics"' }
        })
      }
    }
  }
}
