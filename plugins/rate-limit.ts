import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import { AppError } from './problems.js'

/**
 * RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per client IP, counted in memory or,
 * with REDIS_URL, in Redis so that every instance behind the balancer shares one count.
 * Routes tighten it with `config.rateLimit` (the token endpoint does).
 */
export default fp(async (fastify) => {
  const { config } = fastify
  let redis: Redis | undefined
  if (config.REDIS_URL) {
    redis = new Redis(config.REDIS_URL, { connectTimeout: 2000, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
    redis.on('error', (err) => fastify.log.warn({ err: err.message }, 'redis error'))
    fastify.addHook('onClose', async () => { await redis!.quit().catch(() => redis!.disconnect()) })
  }
  await fastify.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW,
    redis,
    nameSpace: 'roja-rl:',
    // A Redis outage must not take the API down with it.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => new AppError('RateLimited', `rate limit of ${context.max} requests exceeded, retry in ${context.after}`, {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) }
    })
  })
}, { name: 'rate-limit', dependencies: ['config', 'problems'] })
