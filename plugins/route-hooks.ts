import type { RouteOptions } from 'fastify'

type RouteHookName = 'preValidation' | 'preHandler' | 'preSerialization' | 'onSend'

/**
 * Adds a hook to one route, after the route's own (call it from an onRoute hook): a plugin whose
 * work only some routes need (ETags, idempotency) attaches it to those alone.
 * Why: docs/decisions/0008-per-route-hooks.md
 */
export function addRouteHook (route: RouteOptions, name: RouteHookName, hook: unknown): void {
  const current = route[name] as unknown
  route[name] = [...(current === undefined ? [] : [current].flat()), hook] as never
}
