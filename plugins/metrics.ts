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
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      registeredRoutesOnly: false,
      invalidRouteGroup: '__unknown__',
      overrides: {
        histogram: { registers: [registry], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
        // fastify-metrics builds the summary even when disabled: registered nowhere, it never shows
        summary: { registers: [] }
      }
    }
  })
}, { name: 'metrics' })
