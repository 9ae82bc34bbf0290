import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { AppError } from '../schemas/problems.js'
import { assertCreator } from './auth.js'
import { assertIfMatch } from './etag.js'

/**
 * Who may act on a route, as the route declares it (`config.owner`): one rule, one hook, so a
 * reader finds who may do what in the route's declaration alone.
 */
export interface OwnerRule {
  /**
   * Whose the resource the route acts on (or under) is. The handler hands the resource as it is
   * now to `request.owned` (against the row the change writes: locked, or written only while unchanged).
   */
  of?: (resource: never) => string
  /** What If-Match is compared with, when the resource handed over is more than the item (a product with its shop). */
  item?: (resource: never) => unknown
  /** The path parameter that names the owner (`/users/{userId}/…`): checked before the handler runs (with `of`, both are). */
  param?: string
  /** The owner must still be a creator (adding or changing creator content; deleting needs ownership alone). */
  creator?: boolean
}

declare module 'fastify' {
  interface FastifyContextConfig {
    owner?: OwnerRule
  }
  interface FastifyRequest {
    /**
     * The route's owner rule applied to `resource` as it is now: 403 UserNotOwner for anyone but
     * its owner, 403 UserNotCreator when the rule asks for a creator, then on PUT, PATCH and DELETE
     * a stale If-Match is 412. Returns the resource.
     */
    owned: <T>(resource: T) => T
  }
}

const WRITES = new Set(['PUT', 'PATCH', 'DELETE'])

/** 403 UserNotOwner unless the caller is `ownerId`. */
export function assertOwner (callerId: string, ownerId: string): void {
  if (callerId !== ownerId) throw new AppError('UserNotOwner', 'this resource belongs to another user')
}

function check (request: FastifyRequest, reply: FastifyReply, rule: OwnerRule, resource: unknown): void {
  assertOwner(request.user.id, (rule.of as (resource: unknown) => string)(resource))
  if (rule.creator) assertCreator(request.user)
  if (WRITES.has(request.method)) assertIfMatch(request, reply, rule.item ? (rule.item as (resource: unknown) => unknown)(resource) : resource)
}

/**
 * Routes that declare `config.owner` get one preHandler, first of theirs (after validation, before
 * rate limits and idempotency keys): a `param` rule is checked there, an `of` rule is handed to
 * the handler as `request.owned`.
 */
export default fp(async (fastify) => {
  fastify.decorateRequest('owned', null as never)
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const rule = route.config?.owner
    if (!rule) return
    if (!rule.of && !rule.param) throw new Error(`${route.url}: config.owner names \`of\`, \`param\` or both`)
    const hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      if (rule.of) request.owned = (resource) => { check(request, reply, rule, resource); return resource }
      if (rule.param === undefined) return done()
      try {
        assertOwner(request.user.id, (request.params as Record<string, string>)[rule.param])
        if (rule.creator) assertCreator(request.user)
        done()
      } catch (err) {
        done(err as Error)
      }
    }
    route.preHandler = [hook, ...(route.preHandler === undefined ? [] : [route.preHandler].flat())] as never
  })
}, { name: 'owner', dependencies: ['auth', 'etag'] })
