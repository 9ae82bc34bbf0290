import { getHeapStatistics } from 'node:v8'
import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false`: this route answers even under pressure (it reports the trouble itself, like /health) */
    pressure?: boolean
  }
}

/** Seconds a shed client is told to wait. */
export const RETRY_AFTER_SECONDS = 5
// A whole sample with no tick counts as infinite delay: one second keeps a single GC pause from shedding.
const SAMPLE_MS = 1000
const HEALTH_CHECK_MS = 1000

/**
 * Load shedding (@fastify/under-pressure): when the event loop lags, the heap or RSS passes its
 * ceiling, or the database stops answering, requests are refused at once with 503
 * ServiceUnavailable + Retry-After, so an overloaded server stays responsive and its memory
 * bounded instead of queueing work it cannot finish.
 */
export default fp(async (fastify) => {
  const { config } = fastify
  // Off (LOAD_SHEDDING=false, the test config) means no hook at all, not a hook that never fires.
  if (!config.LOAD_SHEDDING) return
  const refusals = fastify.hasDecorator('refusals') ? fastify.refusals : undefined
  // Default heap ceiling: 90 % of V8's own limit, so we shed before the process dies of OOM.
  const maxHeapUsedBytes = config.MAX_HEAP_BYTES ?? Math.floor(getHeapStatistics().heap_size_limit * 0.9)
  const shed = new AppError('ServiceUnavailable', 'the server is under too much load, try again later', {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) }
  })
  const unavailable = new AppError('ServiceUnavailable', 'a backing service is unavailable, try again later', {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) }
  })

  let lastWarning = 0
  let readyAt = Infinity
  let healthy = true
  fastify.addHook('onReady', async () => { readyAt = Date.now() })
  await fastify.register(underPressure, {
    maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes,
    maxRssBytes: config.MAX_RSS_BYTES ?? 0, // 0: no RSS ceiling
    sampleInterval: SAMPLE_MS,
    healthCheck: async () => (healthy = await fastify.dbHealthy()),
    healthCheckInterval: HEALTH_CHECK_MS,
    pressureHandler: async (request: FastifyRequest, _reply, type, value) => {
      if (request.routeOptions.config?.pressure === false) return
      // An infinite delay (no tick in a sample) or one sampled during the boot is not load: judge
      // the signals under-pressure would check after this one.
      if (type === underPressure.TYPE_EVENT_LOOP_DELAY && (!Number.isFinite(value) || Date.now() - readyAt < 2 * SAMPLE_MS)) {
        const usage = fastify.memoryUsage()
        if (!healthy) type = underPressure.TYPE_HEALTH_CHECK
        else if (usage.heapUsed <= maxHeapUsedBytes && (!config.MAX_RSS_BYTES || usage.rssBytes <= config.MAX_RSS_BYTES)) return
      }
      // one line per few seconds, not one per refused request
      if (Date.now() - lastWarning > 5000) {
        lastWarning = Date.now()
        request.log.warn({ type, value }, 'shedding load: answering 503')
      }
      refusals?.shed.inc({ reason: type })
      throw type === underPressure.TYPE_HEALTH_CHECK ? unavailable : shed
    }
  })
}, { name: 'under-pressure', dependencies: ['config', 'problems', 'db'] })
