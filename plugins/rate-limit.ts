import rateLimit, { type FastifyRateLimitStore, type RateLimitOptions } from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'
import { clientKey } from './client-identity.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The key every per-client limit counts by (the rate limits, the password limit, the
     * connection cap): the client's address in one spelling, an IPv6 client by its network.
     */
    clientKey: (request: FastifyRequest) => string
    /**
     * onRequest hook for a route with its own `config.rateLimit`: that config replaces the
     * global per-client limit on the route, so this hook keeps the global one counting too.
     */
    clientRateLimit: (request: FastifyRequest) => Promise<void>
    /**
     * `config.rateLimit` of a route that checks a password: AUTH_RATE_LIMIT_MAX per
     * RATE_LIMIT_WINDOW per client and `subject` (the username), after validation so the
     * subject can come from the body. Never off: counted in this instance while Redis fails.
     */
    passwordRateLimit: (subject: (request: FastifyRequest) => string) => RateLimitOptions
    /**
     * preHandler of every route that checks a password (the token endpoint, and the account routes
     * that take the current password): one count per client and `subject` (the username) across
     * all of them, AUTH_RATE_LIMIT_MAX per RATE_LIMIT_WINDOW, so a password guessed through any of
     * them counts toward the sign-in limit of the others. Never off, like passwordRateLimit.
     */
    passwordAttempt: (subject: (request: FastifyRequest) => string) => (request: FastifyRequest) => Promise<void>
    /**
     * preHandler (after authenticate) of every route that sends mail: MAIL_RATE_LIMIT_MAX per
     * MAIL_RATE_LIMIT_WINDOW per user and per recipient address, so nobody can make Roja mail
     * an address over and over whatever IP they come from. Never off, like passwordRateLimit.
     */
    mailRateLimit: (request: FastifyRequest) => Promise<void>
    /**
     * preHandler of a public route that mails whoever its body names (a password reset):
     * MAIL_RATE_LIMIT_MAX per MAIL_RATE_LIMIT_WINDOW per client and per name, the same whether or
     * not an account has that name, so the route cannot flood a mailbox. Never off, like mailRateLimit.
     */
    namedRecipientRateLimit: (recipient: (request: FastifyRequest) => string) => (request: FastifyRequest) => Promise<void>
  }
}

function rateLimited (max: number, ttlMs: number, after: string): AppError {
  const seconds = Math.max(1, Math.ceil(ttlMs / 1000))
  return new AppError('RateLimited', `rate limit of ${max} requests exceeded, retry in ${after}`, {
    headers: { 'retry-after': String(seconds) }
  })
}

type Checked = { isAllowed: true } | { isAllowed: false; isExceeded: boolean; max: number; ttl: number; ttlInSeconds: number }

/** Keys of the limits that must hold through a Redis outage (passwords, mail) start with this. */
const KEEP = '!'

/**
 * RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per client (clientKey), counted in memory or,
 * with REDIS_URL, in Redis so that every instance behind the balancer shares one count.
 * Routes tighten it with `config.rateLimit` (the token endpoint does).
 */
export default fp(
  async fastify => {
    const { config } = fastify
    // The metrics plugin comes later (its /metrics has a limit of its own): looked up when used.
    const refused = (limit: 'global' | 'route' | 'mail') => {
      if (fastify.hasDecorator('refusals')) fastify.refusals.rateLimited.inc({ limit })
    }
    const keyOf = (request: FastifyRequest) => clientKey(request.ip, config.RATE_LIMIT_IPV6_PREFIX)
    fastify.decorate('clientKey', keyOf)

    let store: (new (settings: object) => FastifyRateLimitStore) | undefined
    if (config.REDIS_URL) {
      // loaded only when used: an instance without Redis does not carry the client
      const { Redis } = await import('ioredis')
      const redis = new Redis(config.REDIS_URL, {
        connectTimeout: 2000,
        commandTimeout: 1000,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        lazyConnect: false
      })
      const health = new StoreHealth(fastify.log, () => {
        if (fastify.hasDecorator('rateLimitStoreFallbacks')) fastify.rateLimitStoreFallbacks.inc()
      })
      redis.on('error', (err: Error) => health.down(err))
      redis.on('ready', () => health.up())
      fastify.addHook('onClose', async () => {
        await redis.quit().catch(() => redis.disconnect())
      })
      // Without the offline queue, commands sent before the connection is up fail: wait for it, so
      // the first requests are counted in Redis too. A Redis that is down only logs.
      await new Promise<void>(resolve => {
        if (redis.status === 'ready') return resolve()
        const timer = setTimeout(resolve, 2500)
        redis.once('ready', () => {
          clearTimeout(timer)
          resolve()
        })
      })
      store = sharedStore(redis, health)
    }

    await fastify.register(rateLimit, {
      global: true,
      max: config.RATE_LIMIT_MAX,
      timeWindow: config.RATE_LIMIT_WINDOW,
      keyGenerator: keyOf,
      store,
      // A Redis outage must not take the API down with it: the general limit is skipped, while the
      // password and mail limits (KEEP) count in this instance instead.
      skipOnError: true,
      // Called for each refused request; a route with its own `config.rateLimit` counts as "route".
      onExceeded: request => {
        refused(request.routeOptions.config?.rateLimit ? 'route' : 'global')
      },
      errorResponseBuilder: (_request, context) => rateLimited(context.max, context.ttl, context.after)
    })

    const perClient = fastify.createRateLimit()
    function check (result: Checked, limit: 'global' | 'route' | 'mail'): void {
      if (!result.isAllowed && result.isExceeded) {
        refused(limit)
        throw rateLimited(result.max, result.ttl, `${result.ttlInSeconds} seconds`)
      }
    }
    fastify.decorate('clientRateLimit', async (request: FastifyRequest) => check(await perClient(request), 'global'))

    fastify.decorate('passwordRateLimit', (subject: (request: FastifyRequest) => string): RateLimitOptions => ({
      max: config.AUTH_RATE_LIMIT_MAX,
      timeWindow: config.RATE_LIMIT_WINDOW,
      hook: 'preHandler',
      keyGenerator: request => `${KEEP}login:${keyOf(request)}|${subject(request)}`
    }))

    // One limiter for every password route, so they share its counts (in memory and in Redis alike).
    const subjects = new WeakMap<FastifyRequest, string>()
    const attempts = fastify.createRateLimit({
      max: config.AUTH_RATE_LIMIT_MAX,
      timeWindow: config.RATE_LIMIT_WINDOW,
      keyGenerator: request => `${KEEP}password:${keyOf(request)}|${subjects.get(request) ?? ''}`
    })
    fastify.decorate('passwordAttempt', (subject: (request: FastifyRequest) => string) => async (request: FastifyRequest) => {
      subjects.set(request, subject(request))
      check(await attempts(request), 'route')
    })

    const mail = { max: config.MAIL_RATE_LIMIT_MAX, timeWindow: config.MAIL_RATE_LIMIT_WINDOW }
    const perUser = fastify.createRateLimit({ ...mail, keyGenerator: request => `${KEEP}mail-user:${request.user.id}` })
    const perRecipient = fastify.createRateLimit({ ...mail, keyGenerator: request => `${KEEP}mail-to:${request.user.email.toLowerCase()}` })
    fastify.decorate('mailRateLimit', async (request: FastifyRequest) => {
      check(await perUser(request), 'mail')
      check(await perRecipient(request), 'mail')
    })
    const perMailingClient = fastify.createRateLimit({ ...mail, keyGenerator: request => `${KEEP}mail-client:${keyOf(request)}` })
    fastify.decorate('namedRecipientRateLimit', (recipient: (request: FastifyRequest) => string) => {
      const perName = fastify.createRateLimit({ ...mail, keyGenerator: request => `${KEEP}mail-named:${recipient(request)}` })
      return async (request: FastifyRequest) => {
        check(await perMailingClient(request), 'mail')
        check(await perName(request), 'mail')
      }
    })
  },
  { name: 'rate-limit', dependencies: ['config', 'problems'] }
)

/** Whether Redis answers, logged once per outage (not per request), with a count of fallbacks. */
class StoreHealth {
  private failing = false

  constructor (
    private readonly log: FastifyBaseLogger,
    readonly fellBack: () => void
  ) {}

  down (err: Error): void {
    if (this.failing) return
    this.failing = true
    this.log.warn(
      { err: { message: err.message } },
      'rate-limit store (Redis) unavailable: the password and mail limits count in this ' + 'instance, the general limit is skipped, until it is back'
    )
  }

  up (): void {
    if (!this.failing) return
    this.failing = false
    this.log.info('rate-limit store (Redis) is back: limits are shared again')
  }
}

// INCR with the window set on the first hit (and on a key that lost its expiry): the count and its ms to live.
const INCREMENT = `
local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if current == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`

type Incremented = (error: Error | null, result?: { current: number; ttl: number }) => void
type RedisWithIncrement = Redis & {
  rojaRateLimit: (key: string, windowMs: number, done: (err: Error | null, result: [number, number]) => void) => void
}

/**
 * The Redis store, with a fallback: when Redis fails, a key that must hold (KEEP) is counted in
 * this instance's memory (per instance, so never off), any other fails and its limit is skipped.
 */
function sharedStore (client: Redis, health: StoreHealth): new (settings: object) => FastifyRateLimitStore {
  client.defineCommand('rojaRateLimit', { numberOfKeys: 1, lua: INCREMENT })
  const redis = client as RedisWithIncrement

  class SharedStore implements FastifyRateLimitStore {
    private readonly local = new LocalCounts()

    // @fastify/rate-limit passes its settings first; a child passes its prefix.
    constructor (
      _settings?: unknown,
      private readonly prefix = 'roja-rl:'
    ) {}

    incr (key: string, done: Incremented, timeWindow: number): void {
      const failed = (err: Error) => {
        health.down(err)
        if (!key.startsWith(KEEP)) return done(err)
        health.fellBack()
        done(null, this.local.incr(key, timeWindow))
      }
      // Not connected: fail at once rather than wait for a command that cannot be sent.
      if (redis.status !== 'ready') return failed(new Error(`redis is ${redis.status}`))
      redis.rojaRateLimit(this.prefix + key, timeWindow, (err, result) => {
        if (err) return failed(err)
        health.up()
        done(null, { current: result[0], ttl: result[1] })
      })
    }

    child (settings: object): FastifyRateLimitStore {
      // A route's own limit counts apart from the global one; createRateLimit's keys name themselves.
      const info = (settings as { routeInfo?: { method?: unknown; url?: unknown } }).routeInfo ?? {}
      return new SharedStore(undefined, info.url === undefined ? this.prefix : `${this.prefix}${String(info.method)}${String(info.url)}-`)
    }
  }
  return SharedStore
}

/**
 * Fixed-window counts in memory, bounded. When full, expired windows go first, then the oldest:
 * the bound is large, so a client cannot cheaply push its own count out.
 */
class LocalCounts {
  private readonly counts = new Map<string, { current: number; resetAt: number }>()

  incr (key: string, windowMs: number): { current: number; ttl: number } {
    const now = Date.now()
    let entry = this.counts.get(key)
    if (entry === undefined || entry.resetAt <= now) {
      this.counts.delete(key)
      if (this.counts.size >= LOCAL_KEYS) this.makeRoom(now)
      entry = { current: 0, resetAt: now + windowMs }
      this.counts.set(key, entry)
    }
    entry.current++
    return { current: entry.current, ttl: entry.resetAt - now }
  }

  private sweptAt = 0

  private makeRoom (now: number): void {
    // A sweep walks every key: at most one a second, so a flood of new keys costs no more.
    if (now - this.sweptAt >= 1000) {
      this.sweptAt = now
      for (const [key, entry] of this.counts) if (entry.resetAt <= now) this.counts.delete(key)
    }
    if (this.counts.size >= LOCAL_KEYS) this.counts.delete(this.counts.keys().next().value!)
  }
}

const LOCAL_KEYS = 100_000
