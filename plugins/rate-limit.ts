import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * onRequest hook for a route with its own `config.rateLimit`: that config replaces the
     * global per-client limit on the route, so this hook keeps the global one counting too.
     */
    clientRateLimit: (request: FastifyRequest) => Promise<void>
    /**
     * preHandler (after authenticate) of every route that sends mail: MAIL_RATE_LIMIT_MAX per
     * MAIL_RATE_LIMIT_WINDOW per user and per recipient address, so nobody can make Roja mail
     * an address over and over whatever IP they come from.
     */
    mailRateLimit: (request: FastifyRequest) => Promise<void>
  }
}

function rateLimited (max: number, ttlMs: number, after: string): AppError {
  const seconds = Math.max(1, Math.ceil(ttlMs / 1000))
  return new AppError('RateLimited', `rate limit of ${max} requests exceeded, retry in ${after}`, {
    headers: { 'retry-after': String(seconds) }
  })
}

type Checked = { isAllowed: true } | { isAllowed: false, isExceeded: boolean, max: number, ttl: number, ttlInSeconds: number }

/**
 * RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per client IP, counted in memory or,
 * with REDIS_URL, in Redis so that every instance behind the balancer shares one count.
 * Routes tighten it with `config.rateLimit` (the token endpoint does).
 */
export default fp(async (fastify) => {
  const { config } = fastify
  // The metrics plugin comes later (its /metrics has a limit of its own): looked up at refusal time.
  const refused = (limit: 'global' | 'route' | 'mail') => { if (fastify.hasDecorator('refusals')) fastify.refusals.rateLimited.inc({ limit }) }
  let redis: Redis | undefined
  if (config.REDIS_URL) {
    // loaded only when used: an instance without Redis does not carry the client
    const { Redis } = await import('ioredis')
    redis = new Redis(config.REDIS_URL, { connectTimeout: 2000, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
    redis.on('error', (err) => fastify.log.warn({ err: err.message }, 'redis error'))
    fastify.addHook('onClose', async () => { await redis!.quit().catch(() => redis!.disconnect()) })
    // Without the offline queue, commands sent before the connection is up fail (and are skipped):
    // wait for it, so the first requests are counted too. A Redis that is down only logs.
    await new Promise<void>((resolve) => {
      if (redis!.status === 'ready') return resolve()
      const timer = setTimeout(() => { fastify.log.warn('redis not ready, rate limits are skipped until it is'); resolve() }, 2500)
      redis!.once('ready', () => { clearTimeout(timer); resolve() })
    })
  }
  await fastify.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW,
    redis,
    nameSpace: 'roja-rl:',
    // A Redis outage must not take the API down with it.
    skipOnError: true,
    // Called for each refused request; a route with its own `config.rateLimit` counts as "route".
    onExceeded: (request) => { refused(request.routeOptions.config?.rateLimit ? 'route' : 'global') },
    errorResponseBuilder: (_request, context) => rateLimited(context.max, context.ttl, context.after)
  })

  const perClient = fastify.createRateLimit()
  function check (result: Checked, limit: 'global' | 'mail'): void {
    if (!result.isAllowed && result.isExceeded) {
      refused(limit)
      throw rateLimited(result.max, result.ttl, `${result.ttlInSeconds} seconds`)
    }
  }
  fastify.decorate('clientRateLimit', async (request: FastifyRequest) => check(await perClient(request), 'global'))

  const mail = { max: config.MAIL_RATE_LIMIT_MAX, timeWindow: config.MAIL_RATE_LIMIT_WINDOW }
  const perUser = fastify.createRateLimit({ ...mail, keyGenerator: (request) => `mail-user:${request.user.id}` })
  const perRecipient = fastify.createRateLimit({ ...mail, keyGenerator: (request) => `mail-to:${request.user.email.toLowerCase()}` })
  fastify.decorate('mailRateLimit', async (request: FastifyRequest) => {
    check(await perUser(request), 'mail')
    check(await perRecipient(request), 'mail')
  })
}, { name: 'rate-limit', dependencies: ['config', 'problems'] })
