import fp from 'fastify-plugin'
import promClient from 'prom-client'
import type { FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify'

export interface DeprecationConfig {
  /** YYYY-MM-DD: the day the route stops answering (the `Sunset` header, RFC 8594) */
  sunset: string
  /** where clients should go instead (`Link: <…>; rel="successor-version"`) */
  successor: string
  /** YYYY-MM-DD: when it was deprecated; sends RFC 9745 `Deprecation: @<unix>`, else `Deprecation: true` */
  since?: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the route is deprecated: headers on every answer, counted in /metrics, flagged in OpenAPI */
    deprecated?: DeprecationConfig
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/

function day (value: string, what: string, url: string): Date {
  const date = new Date(`${value}T00:00:00Z`)
  if (!DAY.test(value) || Number.isNaN(date.getTime())) throw new Error(`deprecated.${what} of ${url} must be YYYY-MM-DD, not ${value}`)
  return date
}

/**
 * Deprecated routes: a route marks itself with `config: { deprecated: { sunset, successor } }`.
 * Its OpenAPI operation gets `deprecated: true`; every answer (errors too) carries `Deprecation`,
 * `Sunset` and a successor `Link`; calls are counted by route and method.
 */
export default fp(async (fastify) => {
  const calls = new promClient.Counter({
    name: 'roja_deprecated_route_calls_total',
    help: 'Calls to deprecated routes, by route template and method',
    labelNames: ['route', 'method'] as const,
    registers: [fastify.metricsRegistry]
  })

  fastify.addHook('onRoute', (route) => {
    const deprecated = route.config?.deprecated
    if (!deprecated) return
    // Checked at start, so a typo fails the boot instead of sending a bad header.
    const sunset = day(deprecated.sunset, 'sunset', route.url).toUTCString()
    const since = deprecated.since === undefined ? 'true' : `@${day(deprecated.since, 'since', route.url).getTime() / 1000}`
    const link = `<${deprecated.successor}>; rel="successor-version"`
    route.schema = { ...route.schema, deprecated: true }

    const count: onRequestHookHandler = async (request: FastifyRequest) => {
      calls.inc({ route: request.routeOptions.url ?? route.url, method: request.method })
    }
    const headers: onSendHookHandler = async (_request: FastifyRequest, reply: FastifyReply, payload) => {
      const existing = reply.getHeader('link')
      reply.header('deprecation', since)
      reply.header('sunset', sunset)
      // List routes send their own paging Link: keep it and add ours.
      reply.header('link', existing ? `${String(existing)}, ${link}` : link)
      return payload
    }
    route.onRequest = [...[route.onRequest ?? []].flat(), count]
    route.onSend = [...[route.onSend ?? []].flat(), headers]
  })
}, { name: 'deprecation', dependencies: ['metrics'] })
