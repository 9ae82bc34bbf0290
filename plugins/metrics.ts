import fp from 'fastify-plugin'
import metricsModule from 'fastify-metrics'
import promClient from 'prom-client'

declare module 'fastify' {
  interface FastifyInstance {
    /** this app's registry: add custom metrics here, never to prom-client's global one */
    metricsRegistry: promClient.Registry
  }
}

/**
 * Prometheus metrics: one request-duration histogram by route template, method and status
 * (so average time is sum/count), process and event-loop metrics. Unknown URLs share one label.
 */
export default fp(async (fastify) => {
  const registry = new promClient.Registry()
  fastify.decorate('metricsRegistry', registry)
  // fastify-metrics is CommonJS with an ES default export
  await fastify.register(metricsModule.default, {
    endpoint: {
      url: '/metrics',
      method: 'GET',
      logLevel: 'warn',
      // Scrapes must work when the server is overloaded, which is when they matter most.
      config: { pressure: false, rateLimit: false },
      schema: { hide: true },
      handler: async () => {}
    },
    defaultMetrics: { enabled: true, register: registry },
    // The request histogram is ours (below): fastify-metrics' own keeps two timers per request
    // in a WeakMap and hashes the labels on every observation, a tenth of a small request's cost.
    routeMetrics: { enabled: false }
  })

  const histogram = new promClient.Histogram({
    name: 'http_request_duration_seconds',
    help: 'request duration in seconds',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry]
  })
  // One child per method, route template and status: the labels are hashed once, not per request.
  // Bounded: routes are templates, and every unknown URL shares `__unknown__`.
  const series = new Map<string, promClient.Histogram.Internal<'method' | 'route' | 'status_code'>>()
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? '__unknown__'
    const key = `${request.method} ${reply.statusCode} ${route}`
    let child = series.get(key)
    if (child === undefined) {
      child = histogram.labels(request.method, route, String(reply.statusCode))
      series.set(key, child)
    }
    child.observe(reply.elapsedTime / 1000)
    done()
  })
}, { name: 'metrics' })
